// libFuzzer target over the assembler and the machine: any input either assembles and runs,
// or raises one of the two documented errors. Anything else (a crash, a sanitizer report,
// another exception) is a bug.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "isa/assembler.h"
#include "sim/machine.h"
#include "sim/timing.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    flashsim::isa::AssembleOptions ao;
    ao.max_instructions = 20'000;  // keep each input fast
    ao.max_loop_iterations = 80'000;  // empty loop bodies emit nothing, so bound them separately
    auto prog = flashsim::isa::assemble(text, "fuzz", ao);
    flashsim::sim::MachineOptions mo;
    mo.max_dram_elements = 1 << 10;
    mo.symbolic = size % 2 == 0;
    flashsim::sim::Machine m(std::move(prog), mo);
    std::uint64_t budget = 5000;
    while (!m.done() && budget--) {
      m.step();
    }
    while (m.step_back()) {
    }
    // A trace with units is timed too: a deadlock is a TimingError, never a hang.
    if (m.program().timing.units && m.size() <= 2000) flashsim::sim::time_program(m.program());
  } catch (const flashsim::sim::TimingError&) {
  } catch (const flashsim::isa::AsmError&) {
  } catch (const flashsim::sim::MachineFault&) {
  }
  return 0;
}
