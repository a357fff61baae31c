#include "sim/trace_export.h"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <ostream>
#include <string>
#include <tuple>
#include <vector>

#include "sim/json_text.h"
#include "sim/report.h"
#include "sim/timeline.h"

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

// The time model's lanes as tracks: tid 1, 2, ... in lane order, one per row of each lane.
class TimedPerfettoWriter {
 public:
  TimedPerfettoWriter(std::ostream& os, const std::string& name, const TimingResult& r)
      : os_(os), timeline_(build_timeline(r)) {
    os_ << "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"flashsim\",\"time_unit\":\"1 cycle = 1 us\","
           "\"time_model\":true,\"cycles\":"
        << number(timeline_.cycles) << ",\"bound\":" << json_string(timeline_.bound) << "},\"traceEvents\":[\n";
    os_ << "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"args\":{\"name\":" << json_string("flashsim " + name)
        << "}}";
    int tid = 1;
    for (const TimelineLane& lane : timeline_.lanes) {
      first_tid_.push_back(tid);
      for (std::uint32_t row = 0; row < lane.rows; ++row, ++tid) {
        std::string track = lane.kind == TimelineLane::Kind::Unit ? lane.name + " unit" : "stream " + lane.name;
        if (row > 0) track += " " + std::to_string(row + 1);
        os_ << ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":1,\"tid\":" << tid
            << ",\"args\":{\"name\":" << json_string(track) << "}}";
        os_ << ",\n{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":1,\"tid\":" << tid
            << ",\"args\":{\"sort_index\":" << tid << "}}";
      }
    }
  }
  // Machine step `pc` (0-based), its instruction and the DRAM bytes it moved.
  void step(std::uint64_t pc, const std::string& mnemonic, std::uint32_t line, const std::string& text,
            std::uint64_t read, std::uint64_t written) {
    if (pc >= timeline_.places.size()) return;
    const Timeline::Place& p = timeline_.places[pc];
    const TimelineLane& unit = timeline_.lanes[p.unit_lane];
    const TimelineLane& stream = timeline_.lanes[p.stream_lane];
    const TimelineBar& ub = unit.bars[p.unit_bar];
    const TimelineBar& sb = stream.bars[p.stream_bar];
    for (auto [lane, bar, tid0] : {std::tuple{&unit, &ub, first_tid_[p.unit_lane]}, std::tuple{&stream, &sb, first_tid_[p.stream_lane]}}) {
      os_ << ",\n{\"name\":" << json_string(mnemonic + (bar->critical ? " (critical)" : ""))
          << ",\"cat\":" << json_string(lane->kind == TimelineLane::Kind::Unit ? "unit" : "stream")
          << ",\"ph\":\"X\",\"pid\":1,\"tid\":" << tid0 + static_cast<int>(bar->row) << ",\"ts\":" << number(bar->x0)
          << ",\"dur\":" << number(bar->x1 - bar->x0) << ",\"args\":{\"step\":" << pc + 1 << ",\"line\":" << line
          << ",\"instruction\":" << json_string(text) << ",\"unit\":" << json_string(unit.name)
          << ",\"stream\":" << json_string(stream.name) << ",\"critical\":" << (bar->critical ? "true" : "false") << "}}";
    }
    if (read || written) dram_.push_back({ub.x1, read, written});
  }
  // The DRAM counter, in the order the copies end, then the closing brackets.
  void close() {
    std::stable_sort(dram_.begin(), dram_.end(), [](const Dram& a, const Dram& b) { return a.at < b.at; });
    std::uint64_t read = 0, written = 0;
    os_ << ",\n{\"name\":\"DRAM bytes\",\"ph\":\"C\",\"pid\":1,\"ts\":0,\"args\":{\"read\":0,\"written\":0}}";
    for (const Dram& d : dram_) {
      read += d.read, written += d.written;
      os_ << ",\n{\"name\":\"DRAM bytes\",\"ph\":\"C\",\"pid\":1,\"ts\":" << number(d.at) << ",\"args\":{\"read\":" << read
          << ",\"written\":" << written << "}}";
    }
    os_ << "\n]}\n";
  }

 private:
  // Cycles with three decimals at most, trailing zeros dropped ("12", "12.5").
  static std::string number(double v) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.3f", v);
    std::string s = buf;
    while (!s.empty() && s.back() == '0') s.pop_back();
    if (!s.empty() && s.back() == '.') s.pop_back();
    return s;
  }
  struct Dram {
    double at;
    std::uint64_t read, written;
  };
  std::ostream& os_;
  Timeline timeline_;
  std::vector<int> first_tid_;
  std::vector<Dram> dram_;
};

}  // namespace

const char* trace_csv_header() {
  return "step,line,instruction,cycle,bytes_read,bytes_written,registers_written";
}

void export_trace(Machine& m, const TraceExport& out) {
  m.reset();
  if (out.csv) *out.csv << trace_csv_header() << "\n";
  std::optional<PerfettoWriter> json;
  std::optional<TimedPerfettoWriter> timed;
  if (out.perfetto && out.timing && !out.timing->steps.empty()) timed.emplace(*out.perfetto, m.program().name, *out.timing);
  else if (out.perfetto) json.emplace(*out.perfetto, m.program().name);
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
      if (timed)
        timed->step(step - 1, std::string(isa::info(in.op).mnemonic), line, text, c.bytes_read - read0,
                    c.bytes_written - written0);
    }
  } catch (...) {
    if (json) json->close();
    if (timed) timed->close();
    throw;
  }
  if (json) json->close();
  if (timed) timed->close();
}

}  // namespace flashsim::sim
