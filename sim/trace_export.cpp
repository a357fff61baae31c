#include "sim/trace_export.h"

#include <optional>
#include <ostream>
#include <string>

#include "sim/json_text.h"
#include "sim/report.h"

namespace flashsim::sim {

namespace {

// A CSV field, quoted when it holds a comma, a quote or a line break (RFC 4180).
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n\r") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}


// The LOAD/STORE unit moves data between DRAM and the registers; everything else computes.
constexpr int kMemoryTrack = 1, kComputeTrack = 2;

int track_of(isa::Opcode op) {
  auto c = isa::info(op).op_class;
  return c == isa::OpClass::Load || c == isa::OpClass::Store ? kMemoryTrack : kComputeTrack;
}

// "R2=0.5 R3=4x4 tile": each register the instruction wrote, with what it now holds.
std::string registers_written(const Machine& m, const isa::Instruction& in) {
  const auto& info = isa::info(in.op);
  std::string out;
  for (int k = 0; k < info.operand_count; ++k)
    if (info.operands[k] == isa::OperandKind::DstReg) {
      const int r = in.reg(k);
      out += (out.empty() ? "" : " ") + ("R" + std::to_string(r)) + "=" + register_cell(m, r, false);
    }
  return out;
}

class PerfettoWriter {
 public:
  PerfettoWriter(std::ostream& os, const std::string& name) : os_(os) {
    os_ << "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"flashsim\",\"time_unit\":\"1 cycle = 1 us\"},"
           "\"traceEvents\":[\n";
    os_ << "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"args\":{\"name\":" << json_string("flashsim " + name)
        << "}}";
    thread_name(kMemoryTrack, "load/store unit");
    thread_name(kComputeTrack, "compute unit");
    counter(0, 0, 0);
  }
  void slice(const std::string& name, int track, std::uint64_t ts, std::uint64_t dur, std::uint64_t step,
             std::uint32_t line, const std::string& text) {
    os_ << ",\n{\"name\":" << json_string(name) << ",\"cat\":" << json_string(track == kMemoryTrack ? "memory" : "compute")
        << ",\"ph\":\"X\",\"pid\":1,\"tid\":" << track << ",\"ts\":" << ts << ",\"dur\":" << dur
        << ",\"args\":{\"step\":" << step << ",\"line\":" << line << ",\"instruction\":" << json_string(text) << "}}";
  }
  void counter(std::uint64_t ts, std::uint64_t read, std::uint64_t written) {
    os_ << ",\n{\"name\":\"DRAM bytes\",\"ph\":\"C\",\"pid\":1,\"ts\":" << ts << ",\"args\":{\"read\":" << read
        << ",\"written\":" << written << "}}";
  }
  void close() { os_ << "\n]}\n"; }

 private:
  void thread_name(int tid, const char* name) {
    os_ << ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":" << tid << ",\"args\":{\"name\":\"" << name
        << "\"}}";
  }
  std::ostream& os_;
};

}  // namespace

const char* trace_csv_header() {
  return "step,line,instruction,cycle,bytes_read,bytes_written,registers_written";
}

void export_trace(Machine& m, const TraceExport& out) {
  m.reset();
  if (out.csv) *out.csv << trace_csv_header() << "\n";
  std::optional<PerfettoWriter> json;
  if (out.perfetto) json.emplace(*out.perfetto, m.program().name);
  const isa::Program& p = m.program();
  try {
    while (!m.done()) {
      const isa::Instruction& in = p.code[m.pc()];
      const std::uint32_t line = p.loc(m.pc()).line;
      const std::uint64_t start = m.counters().cycles;
      const std::uint64_t read0 = m.counters().bytes_read, written0 = m.counters().bytes_written;
      m.step();
      const auto& c = m.counters();
      const std::uint64_t step = m.pc();
      const std::string text = isa::format_instruction(p, in);
      if (out.csv)
        *out.csv << step << "," << line << "," << csv_field(text) << "," << c.cycles << "," << c.bytes_read << ","
                 << c.bytes_written << "," << csv_field(registers_written(m, in)) << "\n";
      if (json) {
        json->slice(std::string(isa::info(in.op).mnemonic), track_of(in.op), start, c.cycles - start, step, line,
                    text);
        if (c.bytes_read != read0 || c.bytes_written != written0) json->counter(c.cycles, c.bytes_read, c.bytes_written);
      }
    }
  } catch (...) {
    if (json) json->close();
    throw;
  }
  if (json) json->close();
}

}  // namespace flashsim::sim
