#include "sim/traffic.h"

#include <map>

#include "sim/machine.h"
#include "sim/tile/schedules.h"

namespace flashsim::traffic {

namespace {
template <class F>
std::uint64_t sum(const std::vector<ArrayTraffic>& arrays, F field) {
  std::uint64_t n = 0;
  for (const auto& a : arrays) n += field(a);
  return n;
}
}  // namespace

std::uint64_t Traffic::bytes_read() const { return sum(arrays, [](const ArrayTraffic& a) { return a.bytes_read; }); }
std::uint64_t Traffic::bytes_written() const { return sum(arrays, [](const ArrayTraffic& a) { return a.bytes_written; }); }
std::uint64_t Traffic::hbm_bytes_read() const { return sum(arrays, [](const ArrayTraffic& a) { return a.hbm_bytes_read; }); }
std::uint64_t Traffic::hbm_bytes_written() const {
  return sum(arrays, [](const ArrayTraffic& a) { return a.hbm_bytes_written; });
}
std::uint64_t Traffic::l2_hits() const { return sum(arrays, [](const ArrayTraffic& a) { return a.l2_hits; }); }
std::uint64_t Traffic::l2_misses() const { return sum(arrays, [](const ArrayTraffic& a) { return a.l2_misses; }); }

const ArrayTraffic* Traffic::find(const std::string& name) const {
  for (const auto& a : arrays)
    if (a.name == name) return &a;
  return nullptr;
}

namespace {

// "Q_h3" -> ("Q", 3); "Q" -> ("Q", 0): head copies share one allocation.
std::pair<std::string, std::int64_t> split_head(const std::string& name) {
  auto cut = name.rfind("_h");
  if (cut != std::string::npos && cut + 2 < name.size() &&
      name.find_first_not_of("0123456789", cut + 2) == std::string::npos)
    return {name.substr(0, cut), std::stoll(name.substr(cut + 2))};
  return {name, 0};
}

// Runs a generated schedule on sim::Machine without values or undo log and sums bytes per
// array. The schedule arrives in pieces cut where no register is live (tile::ChunkSink), each
// run on a fresh machine: same counts as one run of the whole trace, without holding a trace
// of millions of instructions in memory. Head copies (NAME_hH) are folded into NAME, and every
// count is multiplied by `multiplier`. With a GPU model, every DRAM access is also recorded in
// its thread block for the L2 replay.
class Counter {
 public:
  explicit Counter(const sim::GpuModel* gpu) : gpu_(gpu && gpu->l2.capacity_bytes > 0 ? gpu : nullptr) {
    if (gpu) sim::validate(*gpu);
  }
  bool modelling() const { return gpu_ != nullptr; }

  tile::ChunkSink sink() {
    return [this](const std::vector<isa::ArrayDecl>& arrays, const isa::MachineConfig& config,
                  isa::Code& code,
                  const std::vector<tile::BlockStart>& blocks) { run(arrays, config, code, blocks); };
  }

  Traffic result(std::uint64_t multiplier) const { return result(multiplier, gpu_); }
  // The recorded accesses replayed through another GPU model (same schedule, same occupancy or not).
  Traffic result(std::uint64_t multiplier, const sim::GpuModel* gpu) const {
    Traffic t;
    t.instructions = instructions_ * multiplier;
    for (std::size_t id = 0; id < names_.size(); ++id) {
      ArrayTraffic& a = folded(t, stream_[id]);
      a.bytes_read += read_[id] * multiplier;
      a.bytes_written += written_[id] * multiplier;
    }
    if (!gpu_ || !gpu || gpu->l2.capacity_bytes == 0) {
      for (auto& a : t.arrays) {
        a.hbm_bytes_read = a.bytes_read;
        a.hbm_bytes_written = a.bytes_written;
      }
      return t;
    }
    t.l2 = true;
    t.blocks = recorder_.blocks();
    sim::validate(*gpu);
    std::uint64_t foreign = 0;
    const auto counts = recorder_.simulate(*gpu, allocations_.size(), &foreign);
    for (std::size_t k = 0; k < counts.size(); ++k) {
      ArrayTraffic& a = folded(t, static_cast<std::uint32_t>(k));
      a.hbm_bytes_read += counts[k].hbm_read * multiplier;
      a.hbm_bytes_written += counts[k].hbm_written * multiplier;
      a.l2_hits += counts[k].hits * multiplier;
      a.l2_misses += counts[k].misses * multiplier;
    }
    if (gpu->dirty_at_start_bytes) {  // not the schedule's bytes, but HBM writes the GPU's range shows
      ArrayTraffic a{kDirtyAtStartArray};
      a.hbm_bytes_written = foreign;
      t.arrays.push_back(a);
    }
    return t;
  }

 private:
  struct Allocation {
    std::string name;
    std::uint64_t base;
  };

  ArrayTraffic& folded(Traffic& t, std::uint32_t stream) const {
    const std::string& name = allocations_[stream].name;
    for (auto& a : t.arrays)
      if (a.name == name) return a;
    t.arrays.push_back(ArrayTraffic{name});
    return t.arrays.back();
  }

  void declare(const isa::ArrayDecl& d) {
    auto [base_name, head] = split_head(d.name);
    std::uint32_t stream = 0;
    while (stream < allocations_.size() && allocations_[stream].name != base_name) ++stream;
    if (stream == allocations_.size()) {
      // Allocations far apart, as cudaMalloc's are: no two arrays share a line.
      allocations_.push_back(Allocation{base_name, (static_cast<std::uint64_t>(stream) + 1) << 44});
    }
    const auto elem = static_cast<std::uint64_t>(d.elem_bytes);
    const auto bytes = static_cast<std::uint64_t>(d.rows) * static_cast<std::uint64_t>(d.cols) * elem;
    names_.push_back(d.name);
    stream_.push_back(stream);
    base_.push_back(allocations_[stream].base + static_cast<std::uint64_t>(head) * bytes);
    row_bytes_.push_back(static_cast<std::uint64_t>(d.cols) * elem);
    elem_.push_back(elem);
    read_.push_back(0);
    written_.push_back(0);
    if (gpu_ && d.fill) {  // a memset writes the accumulator before the first launch
      recorder_.begin_block(0, names_.size());
      const std::uint64_t run = bytes % 4096 == 0 ? 4096 : bytes;  // contiguous runs: one range
      if (run > 0xffffffffu) throw std::invalid_argument("array " + d.name + " is too large for the L2 model");
      recorder_.add(sim::BlockAccess{base_.back(), run, static_cast<std::uint32_t>(bytes / run),
                                     static_cast<std::uint32_t>(run), stream, true});
    }
  }

  void run(const std::vector<isa::ArrayDecl>& arrays, const isa::MachineConfig& config,
           isa::Code& code, const std::vector<tile::BlockStart>& blocks) {
    for (std::size_t id = names_.size(); id < arrays.size(); ++id) declare(arrays[id]);
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
    std::size_t next_block = 0;
    auto start_blocks_up_to = [&](std::uint64_t pc) {
      for (; next_block < blocks.size() && blocks[next_block].pc <= pc; ++next_block)
        recorder_.begin_block(blocks[next_block].launch + 1, blocks[next_block].order);  // launch 0: memsets
    };
    if (gpu_) {
      o.on_dram_access = [&](std::uint64_t pc, const sim::DramAccess& a) {
        start_blocks_up_to(pc);
        const std::uint64_t elem = elem_[a.array];
        recorder_.add(sim::BlockAccess{
            base_[a.array] + (static_cast<std::uint64_t>(a.row0) * row_bytes_[a.array] + static_cast<std::uint64_t>(a.col0) * elem),
            row_bytes_[a.array], static_cast<std::uint32_t>(a.rows), static_cast<std::uint32_t>(a.cols * elem),
            stream_[a.array], a.write});
        if (recorder_.accesses() > kMaxAccesses)
          throw std::invalid_argument("the schedule makes more than " + std::to_string(kMaxAccesses) +
                                      " tile accesses: too many for the L2 model (use fewer heads or larger tiles)");
      };
    }
    sim::Machine m(std::move(prog), o);
    m.run();
    if (gpu_) start_blocks_up_to(~std::uint64_t{0});
    instructions_ += m.counters().instructions;
    for (std::uint32_t id = 0; id < arrays.size(); ++id) {
      read_[id] += m.array(id).bytes_read;
      written_[id] += m.array(id).bytes_written;
    }
  }

  static constexpr std::size_t kMaxAccesses = std::size_t{1} << 27;  // 4 GiB of records
  const sim::GpuModel* gpu_;
  sim::LaunchRecorder recorder_;
  std::vector<Allocation> allocations_;
  std::uint64_t instructions_ = 0;
  // Per array id of the generated program.
  std::vector<std::string> names_;
  std::vector<std::uint32_t> stream_;
  std::vector<std::uint64_t> base_, row_bytes_, elem_, read_, written_;
};

constexpr std::size_t kChunk = 1 << 13;  // ~1 MB of instructions: stays in cache

}  // namespace

Traffic count_matmul(const MatmulParams& p, MatmulSchedule s, const sim::GpuModel* gpu) {
  Counter c(gpu);
  tile::stream_matmul(p, s, kChunk, c.sink());
  return c.result(1);
}

Traffic count_softmax(const SoftmaxParams& p, SoftmaxSchedule s, const sim::GpuModel* gpu) {
  Counter c(gpu);
  tile::stream_softmax(p, s, kChunk, c.sink());
  return c.result(1);
}

// Heads never share data, so without an L2 every head moves the same bytes: one head is generated
// and run, and the result is multiplied by batch*heads (tests check this against running two
// heads). Through an L2 the heads compete for it, so all of them run; so do they under the split
// tail, whose last round falls on the last heads only.
std::vector<Traffic> count_attention_forward(const AttentionParams& p, AttentionForward s,
                                             const std::vector<sim::GpuModel>& gpus) {
  tile::validate(p);
  std::vector<Traffic> out;
  if (gpus.empty()) return out;
  // Record through a model with an L2 (the record does not depend on the model).
  const sim::GpuModel* recording = nullptr;
  for (const auto& g : gpus)
    if (g.l2.capacity_bytes > 0) recording = &g;
  Counter c(recording);
  AttentionParams one = p;
  const bool heads_alike = !c.modelling() && p.split_tail_sms == 0;
  if (heads_alike) one.batch_heads = 1;
  tile::stream_attention_forward(one, s, kChunk, c.sink());
  const std::uint64_t multiplier = heads_alike ? static_cast<std::uint64_t>(p.batch_heads) : 1;
  for (const auto& g : gpus) out.push_back(c.result(multiplier, &g));
  return out;
}

Traffic count_attention_forward(const AttentionParams& p, AttentionForward s, const sim::GpuModel* gpu) {
  sim::GpuModel none;
  none.l2.capacity_bytes = 0;  // requested bytes
  if (gpu) sim::validate(*gpu);
  return count_attention_forward(p, s, std::vector<sim::GpuModel>{gpu ? *gpu : none}).front();
}

Traffic count_attention_backward(const AttentionParams& p, AttentionBackward s, const sim::GpuModel* gpu) {
  tile::validate(p);
  Counter c(gpu);
  AttentionParams one = p;
  if (!c.modelling()) one.batch_heads = 1;
  tile::stream_attention_backward(one, s, kChunk, c.sink());
  return c.result(c.modelling() ? 1 : static_cast<std::uint64_t>(p.batch_heads));
}

}  // namespace flashsim::traffic
