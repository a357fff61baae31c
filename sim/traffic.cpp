#include "sim/traffic.h"

#include <map>

#include "sim/machine.h"
#include "sim/tile/schedules.h"

namespace flashsim::traffic {

std::uint64_t Traffic::bytes_read() const {
  std::uint64_t n = 0;
  for (const auto& a : arrays) n += a.bytes_read;
  return n;
}

std::uint64_t Traffic::bytes_written() const {
  std::uint64_t n = 0;
  for (const auto& a : arrays) n += a.bytes_written;
  return n;
}

const ArrayTraffic* Traffic::find(const std::string& name) const {
  for (const auto& a : arrays)
    if (a.name == name) return &a;
  return nullptr;
}

namespace {

// Runs a generated schedule on sim::Machine without values or undo log and sums bytes per
// array. The schedule arrives in pieces cut where no register is live (tile::ChunkSink), each
// run on a fresh machine: same counts as one run of the whole trace, without holding a trace
// of millions of instructions in memory. Head copies (NAME_hH) are folded into NAME, and every
// count is multiplied by `multiplier`.
class Counter {
 public:
  tile::ChunkSink sink() {
    return [this](const std::vector<isa::ArrayDecl>& arrays, const isa::MachineConfig& config,
                  std::vector<isa::Instruction>& code) { run(arrays, config, code); };
  }

  Traffic result(std::uint64_t multiplier) const {
    Traffic t;
    t.instructions = instructions_ * multiplier;
    std::map<std::string, std::size_t> index;
    for (std::size_t id = 0; id < names_.size(); ++id) {
      std::string name = names_[id];
      auto cut = name.rfind("_h");
      if (cut != std::string::npos && cut + 2 < name.size() &&
          name.find_first_not_of("0123456789", cut + 2) == std::string::npos)
        name.resize(cut);
      auto [it, fresh] = index.emplace(name, t.arrays.size());
      if (fresh) t.arrays.push_back(ArrayTraffic{name, 0, 0});
      ArrayTraffic& a = t.arrays[it->second];
      a.bytes_read += read_[id] * multiplier;
      a.bytes_written += written_[id] * multiplier;
    }
    return t;
  }

 private:
  void run(const std::vector<isa::ArrayDecl>& arrays, const isa::MachineConfig& config,
           std::vector<isa::Instruction>& code) {
    isa::Program prog;
    prog.name = "<counted schedule>";
    prog.arrays = arrays;
    prog.config = config;
    prog.highest_reg = config.regs.value_or(1) - 1;
    prog.code.swap(code);
    code.reserve(prog.code.capacity());  // the builder's next piece reuses freed memory
    sim::MachineOptions o;
    o.compute_values = false;
    o.history = false;
    sim::Machine m(std::move(prog), o);
    m.run();
    instructions_ += m.counters().instructions;
    if (names_.size() < arrays.size()) {
      for (std::size_t id = names_.size(); id < arrays.size(); ++id) names_.push_back(arrays[id].name);
      read_.resize(arrays.size(), 0);
      written_.resize(arrays.size(), 0);
    }
    for (std::uint32_t id = 0; id < arrays.size(); ++id) {
      read_[id] += m.array(id).bytes_read;
      written_[id] += m.array(id).bytes_written;
    }
  }

  std::uint64_t instructions_ = 0;
  std::vector<std::string> names_;
  std::vector<std::uint64_t> read_, written_;
};

constexpr std::size_t kChunk = 1 << 13;  // ~1 MB of instructions: stays in cache

}  // namespace

Traffic count_matmul(const MatmulParams& p, MatmulSchedule s) {
  Counter c;
  tile::stream_matmul(p, s, kChunk, c.sink());
  return c.result(1);
}

Traffic count_softmax(const SoftmaxParams& p, SoftmaxSchedule s) {
  Counter c;
  tile::stream_softmax(p, s, kChunk, c.sink());
  return c.result(1);
}

// Heads never share data, so every head moves the same bytes: one head is generated and run,
// and the result is multiplied by batch*heads (tests check this against running two heads).
Traffic count_attention_forward(const AttentionParams& p, AttentionForward s) {
  tile::validate(p);
  AttentionParams one = p;
  one.batch_heads = 1;
  Counter c;
  tile::stream_attention_forward(one, s, kChunk, c.sink());
  return c.result(static_cast<std::uint64_t>(p.batch_heads));
}

Traffic count_attention_backward(const AttentionParams& p, AttentionBackward s) {
  tile::validate(p);
  AttentionParams one = p;
  one.batch_heads = 1;
  Counter c;
  tile::stream_attention_backward(one, s, kChunk, c.sink());
  return c.result(static_cast<std::uint64_t>(p.batch_heads));
}

}  // namespace flashsim::traffic
