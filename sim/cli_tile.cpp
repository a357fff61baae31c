#include "sim/cli_tile.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <optional>
#include <sstream>

#include "isa/program.h"
#include "sim/cli.h"
#include "sim/csv_text.h"
#include "sim/l2.h"
#include "sim/launch.h"
#include "sim/split_tail.h"
#include "sim/tile/schedules.h"
#include "sim/traffic.h"

namespace flashsim::cli {

using namespace flashsim::traffic;

namespace {

struct AttentionArgs {
  std::string schedule = "fa2";
  std::int64_t n = 1024, n_kv = 0, d = 64, br = 64, bc = 64, heads = 1;
  int elem = 2, score = 4, stat = 4, accum = 4;
  bool causal = false, exp2 = false;
  std::uint64_t sram = 0;
  std::string output;
  bool arrays = true;
  bool heavy_first = false;
  bool paired_tiles = false;
  int split_tail_sms = 0;
  std::int64_t heads_per_group = 0;
};

struct MatmulArgs {
  std::string schedule = "inner";
  std::int64_t m = 512, n = 512, k = 512, bm = 64, bn = 64, bk = 64, k_chunk = 0, c_strip_rows = 0;
  int in = 2, out = 4;
  std::uint64_t sram = 0;
  std::string output;
};

struct SoftmaxArgs {
  std::string schedule = "online";
  std::int64_t rows = 64, cols = 8192, chunk = 1024;
  int elem = 2;
  std::uint64_t sram = 0;
  std::string output;
};

struct SweepArgs {
  std::int64_t n = 4096, d = 64, heads = 1;
  int elem = 2;
  bool causal = false;
  std::string vary = "sram";
  std::uint64_t m_min = 16 * 1024, m_max = 1024 * 1024;
  std::string svg;
  // --vary l2: the kernels' tiles, the GPU model, and measured compare CSVs (LABEL:L2:FILE)
  std::int64_t br = 64, bc = 64, sms = 132, blocks_per_sm = 0;
  std::string l2_min = "1MiB", l2_max = "256MiB";
  std::vector<std::string> measured;
};

// The GPU model of `flashsim traffic`: without --l2 the counts are the tile machine's requests.
struct GpuArgs {
  std::string l2;
  std::int64_t sms = 132, blocks_per_sm = 1;
  std::uint32_t line = 128, sector = 32, partitions = 1, ways = 0, dirty_ways = 0, dirty_group = 1, page_lines = 0, copy_rank = 0;
  bool json = false;

  std::optional<sim::GpuModel> model() const {
    if (l2.empty()) return std::nullopt;
    sim::GpuModel g;
    g.l2.capacity_bytes = sim::parse_size(l2);
    g.l2.line_bytes = line;
    g.l2.sector_bytes = sector;
    g.l2.ways = ways;
    g.l2.dirty_ways = dirty_ways;
    g.l2.dirty_group = dirty_group;
    g.l2.page_lines = page_lines;
    g.l2.copy_rank = copy_rank;
    g.sms = sms;
    g.blocks_per_sm = blocks_per_sm;
    g.l2_partitions = partitions;
    sim::validate(g);
    return g;
  }
  std::string describe() const {
    if (l2.empty()) return "no L2: HBM bytes = requested bytes";
    std::ostringstream os;
    os << "L2 " << l2 << " (" << line << " B lines, " << sector << " B sectors, LRU"
       << (ways ? " over sets of " + std::to_string(ways) + " ways" : std::string())
       << (dirty_ways ? ", at most " + std::to_string(dirty_ways) + " dirty lines a set" +
                            (dirty_group > 1 ? " over groups of " + std::to_string(dirty_group) + " sets" : std::string())
                      : std::string())
       << (page_lines ? ", sets even within pages of " + std::to_string(page_lines) + " lines" : std::string())
       << (copy_rank ? ", far copies entering " + std::to_string(copy_rank) + " lines above their set's LRU end" : std::string())
       << (partitions > 1 ? ", " + std::to_string(partitions) + " partitions" : std::string()) << "), " << sms << " SMs x "
       << blocks_per_sm << " resident blocks";
    return os.str();
  }
};

void add_gpu_options(CLI::App* c, GpuArgs& g) {
  c->add_option("--l2", g.l2, "Model an L2 of this size (e.g. 50MiB, 60MB) with concurrent blocks; default: none");
  c->add_option("--sms", g.sms, "SMs of the modelled GPU (with --l2)")->check(CLI::Range(std::int64_t{1}, std::int64_t{1000000}));
  c->add_option("--blocks-per-sm", g.blocks_per_sm, "Resident blocks per SM, the kernel's occupancy (with --l2)")
      ->check(CLI::Range(std::int64_t{1}, std::int64_t{1024}));
  c->add_option("--line", g.line, "L2 line bytes (with --l2)");
  c->add_option("--sector", g.sector, "L2 sector bytes (with --l2)");
  c->add_option("--l2-partitions", g.partitions,
                "L2 slices (with --l2): 1 is one shared cache; Hopper's 2 keep a copy of far data near its reader")
      ->check(CLI::Range(1, 64));
  c->add_option("--l2-ways", g.ways, "L2 lines per set, addresses hashed onto sets (with --l2; 0: fully associative)");
  c->add_option("--l2-dirty-ways", g.dirty_ways,
                "dirty lines a set holds before its oldest is written back early (with --l2; 0: no limit)");
  c->add_option("--l2-dirty-group", g.dirty_group,
                "sets that share one limit of this many times --l2-dirty-ways dirty lines (with --l2; 1: each set alone)")
      ->check(CLI::Range(1u, 1u << 20));
  c->add_option("--l2-page-lines", g.page_lines,
                "lines of a page spread evenly over the sets and partitions, pages at random (with --l2; 0: every line at random)");
  c->add_option("--l2-copy-rank", g.copy_rank,
                "a far partition's copy enters its set this many lines above the least recently used one (with --l2; 0: most recent)");
  c->add_flag("--json", g.json, "Print one JSON object instead of the table");
}

const std::vector<std::string> kForward = {"naive", "fa1", "fa2"};
const std::vector<std::string> kBackward = {"bwd-two-pass", "bwd-atomic-dq", "bwd-row-wise", "bwd-row-wise-no-d"};

AttentionParams attention_params(const AttentionArgs& a) {
  AttentionParams p;
  p.batch_heads = a.heads;
  p.n = a.n;
  p.n_kv = a.n_kv;
  p.d = a.d;
  p.br = a.br;
  p.bc = a.bc;
  p.elem_bytes = a.elem;
  p.score_bytes = a.score;
  p.stat_bytes = a.stat;
  p.accum_bytes = a.accum;
  p.causal = a.causal;
  p.base2 = a.exp2;
  p.sram_bytes = a.sram;
  return p;
}

AttentionForward forward_of(const std::string& s) {
  if (s == "naive") return AttentionForward::Naive;
  if (s == "fa1") return AttentionForward::FA1;
  return AttentionForward::FA2;
}
AttentionBackward backward_of(const std::string& s) {
  if (s == "bwd-two-pass") return AttentionBackward::TwoPass;
  if (s == "bwd-atomic-dq") return AttentionBackward::AtomicDQ;
  if (s == "bwd-row-wise") return AttentionBackward::RowWise;
  return AttentionBackward::RowWiseNoD;
}
bool is_forward(const std::string& s) { return std::find(kForward.begin(), kForward.end(), s) != kForward.end(); }

std::string human(std::uint64_t bytes) {
  std::ostringstream os;
  os << std::fixed << std::setprecision(2);
  if (bytes >= (1ull << 30)) os << static_cast<double>(bytes) / (1ull << 30) << " GiB";
  else if (bytes >= (1ull << 20)) os << static_cast<double>(bytes) / (1ull << 20) << " MiB";
  else if (bytes >= (1ull << 10)) os << static_cast<double>(bytes) / (1ull << 10) << " KiB";
  else os << bytes << " B";
  return os.str();
}

void write_trace(const isa::Program& p, const std::string& header, const std::string& output) {
  std::string text = "# " + header + "\n# generated by flashsim gen; run it with: flashsim run FILE --no-table\n" +
                     isa::disassemble(p);
  if (output.empty() || output == "-") {
    std::cout << text;
    return;
  }
  std::ofstream f(output);
  if (!f) throw std::invalid_argument("cannot write '" + output + "'");
  f << text;
  std::cerr << "wrote " << p.code.size() << " instructions to " << output << "\n";
}

std::string describe(const AttentionArgs& a) {
  std::ostringstream os;
  os << "attention N=" << a.n;
  if (a.n_kv) os << " N_kv=" << a.n_kv;
  os << " d=" << a.d << " Br=" << a.br << " Bc=" << a.bc << " batch*heads=" << a.heads << " elem=" << a.elem
     << "B stat=" << a.stat << "B score=" << a.score << "B accum=" << a.accum << "B" << (a.causal ? " causal" : "")
     << (a.exp2 ? " exp2" : "");
  return os.str();
}

int do_gen_attention(const AttentionArgs& a) {
  AttentionParams p = attention_params(a);
  isa::Program prog = is_forward(a.schedule) ? tile::attention_forward_program(p, forward_of(a.schedule))
                                             : tile::attention_backward_program(p, backward_of(a.schedule));
  write_trace(prog, describe(a) + ", schedule " + a.schedule, a.output);
  return kExitOk;
}

MatmulParams matmul_params(const MatmulArgs& a) {
  MatmulParams p;
  p.m = a.m;
  p.n = a.n;
  p.k = a.k;
  p.bm = a.bm;
  p.bn = a.bn;
  p.bk = a.bk;
  p.in_bytes = a.in;
  p.out_bytes = a.out;
  p.k_chunk = a.k_chunk;
  p.c_strip_rows = a.c_strip_rows;
  p.sram_bytes = a.sram;
  return p;
}
SoftmaxParams softmax_params(const SoftmaxArgs& a) {
  SoftmaxParams p;
  p.rows = a.rows;
  p.cols = a.cols;
  p.chunk = a.chunk;
  p.elem_bytes = a.elem;
  p.sram_bytes = a.sram;
  return p;
}
MatmulSchedule matmul_of(const std::string& s) { return s == "inner" ? MatmulSchedule::Inner : MatmulSchedule::Outer; }
SoftmaxSchedule softmax_of(const std::string& s) {
  return s == "three-pass" ? SoftmaxSchedule::ThreePass : SoftmaxSchedule::Online;
}

void print_traffic_l2(const std::string& schedule, const Traffic& t, double ms, bool arrays) {
  auto row = [](const std::string& name, std::uint64_t r, std::uint64_t w, std::uint64_t hr, std::uint64_t hw,
                std::uint64_t hits, std::uint64_t misses) {
    std::cout << std::left << std::setw(20) << name << std::right << std::setw(15) << r << std::setw(15) << w
              << std::setw(13) << hits << std::setw(13) << misses << std::setw(15) << hr << std::setw(15) << hw;
  };
  row(schedule, t.bytes_read(), t.bytes_written(), t.hbm_bytes_read(), t.hbm_bytes_written(), t.l2_hits(), t.l2_misses());
  std::cout << "  " << std::setw(11) << human(t.hbm_bytes_read() + t.hbm_bytes_written()) << std::setw(10) << std::fixed
            << std::setprecision(1) << ms << "\n";
  if (!arrays) return;
  for (const auto& a : t.arrays) {
    row("  " + a.name, a.bytes_read, a.bytes_written, a.hbm_bytes_read, a.hbm_bytes_written, a.l2_hits, a.l2_misses);
    std::cout << "\n";
  }
}

void print_traffic(const std::string& schedule, const Traffic& t, double ms, bool arrays) {
  if (t.l2) return print_traffic_l2(schedule, t, ms, arrays);
  std::cout << std::left << std::setw(20) << schedule << std::right << std::setw(16) << t.bytes_read() << std::setw(16)
            << t.bytes_written() << std::setw(16) << t.bytes_read() + t.bytes_written() << "  " << std::setw(11)
            << human(t.bytes_read() + t.bytes_written()) << std::setw(12) << t.instructions << std::setw(10)
            << std::fixed << std::setprecision(1) << ms << "\n";
  if (!arrays) return;
  for (const auto& a : t.arrays)
    std::cout << "  " << std::left << std::setw(18) << a.name << std::right << std::setw(16) << a.bytes_read
              << std::setw(16) << a.bytes_written << "\n";
}

void print_traffic_header(bool l2) {
  if (l2) {
    std::cout << std::left << std::setw(20) << "schedule" << std::right << std::setw(15) << "req read" << std::setw(15)
              << "req written" << std::setw(13) << "L2 hits" << std::setw(13) << "L2 misses" << std::setw(15) << "HBM read"
              << std::setw(15) << "HBM written" << "  " << std::setw(11) << "HBM total" << std::setw(10) << "ms" << "\n";
    return;
  }
  std::cout << std::left << std::setw(20) << "schedule" << std::right << std::setw(16) << "bytes read" << std::setw(16)
            << "bytes written" << std::setw(16) << "total" << "  " << std::setw(11) << "" << std::setw(12)
            << "instrs" << std::setw(10) << "ms" << "\n";
}

void json_counts(std::ostream& os, std::uint64_t r, std::uint64_t w, std::uint64_t hr, std::uint64_t hw,
                 std::uint64_t hits, std::uint64_t misses) {
  os << "{\"bytes_read\": " << r << ", \"bytes_written\": " << w << ", \"hbm_bytes_read\": " << hr
     << ", \"hbm_bytes_written\": " << hw << ", \"l2_hits\": " << hits << ", \"l2_misses\": " << misses << "}";
}

void json_traffic(std::ostream& os, const Traffic& t) {
  os << "{\"arrays\": {";
  for (std::size_t k = 0; k < t.arrays.size(); ++k) {
    const auto& a = t.arrays[k];
    os << (k ? ", " : "") << "\"" << a.name << "\": ";
    json_counts(os, a.bytes_read, a.bytes_written, a.hbm_bytes_read, a.hbm_bytes_written, a.l2_hits, a.l2_misses);
  }
  os << "}, \"total\": ";
  json_counts(os, t.bytes_read(), t.bytes_written(), t.hbm_bytes_read(), t.hbm_bytes_written(), t.l2_hits(), t.l2_misses());
  os << ", \"instructions\": " << t.instructions << ", \"blocks\": " << t.blocks << "}";
}

// {"gpu": {...} or null, "schedules": {name: traffic}}
void json_report(const GpuArgs& g, const std::vector<std::pair<std::string, Traffic>>& runs) {
  std::ostringstream os;
  os << "{\"gpu\": ";
  if (auto m = g.model())
    os << "{\"l2_bytes\": " << m->l2.capacity_bytes << ", \"line_bytes\": " << m->l2.line_bytes
       << ", \"sector_bytes\": " << m->l2.sector_bytes << ", \"sms\": " << m->sms << ", \"blocks_per_sm\": "
       << m->blocks_per_sm << "}";
  else
    os << "null";
  os << ", \"schedules\": {";
  for (std::size_t k = 0; k < runs.size(); ++k) {
    os << (k ? ", " : "") << "\"" << runs[k].first << "\": ";
    json_traffic(os, runs[k].second);
  }
  os << "}}\n";
  std::cout << os.str();
}

template <class F>
Traffic timed(F&& f, double& ms) {
  auto t0 = std::chrono::steady_clock::now();
  Traffic t = f();
  ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return t;
}

// Runs each schedule through `count` and prints the table (or, with --json, one object).
template <class Count>
int report_traffic(const GpuArgs& g, const std::string& heading, const std::vector<std::string>& list, bool arrays,
                   Count&& count) {
  const auto model = g.model();
  const sim::GpuModel* gpu = model ? &*model : nullptr;
  if (!g.json) {
    if (!heading.empty()) std::cout << heading << "\n";
    std::cout << "counted by running each schedule on the tile machine (count-only); " << g.describe() << "\n";
    if (gpu) std::cout << "req = bytes the LOADs and STOREs request; L2 hits and misses in " << gpu->l2.sector_bytes
                       << "-byte sectors; HBM = predicted DRAM bytes (dirty lines written back at the end)\n";
    std::cout << "\n";
    print_traffic_header(gpu != nullptr);
  }
  std::vector<std::pair<std::string, Traffic>> runs;
  for (const auto& s : list) {
    double ms = 0;
    Traffic t = timed([&] { return count(s, gpu); }, ms);
    if (g.json) runs.emplace_back(s, std::move(t));
    else print_traffic(s, t, ms, arrays);
  }
  if (g.json) json_report(g, runs);
  return kExitOk;
}

int do_traffic_attention(const AttentionArgs& a, const GpuArgs& g) {
  AttentionParams p = attention_params(a);
  p.heavy_first = a.heavy_first;
  p.paired_tiles = a.paired_tiles;
  p.split_tail_sms = a.split_tail_sms;
  p.heads_per_group = a.heads_per_group;
  std::vector<std::string> list;
  if (a.schedule == "all") list = kForward;
  else if (a.schedule == "all-bwd") list = kBackward;
  else list = {a.schedule};
  return report_traffic(g, describe(a), list, a.arrays, [&](const std::string& s, const sim::GpuModel* gpu) {
    return is_forward(s) ? count_attention_forward(p, forward_of(s), gpu) : count_attention_backward(p, backward_of(s), gpu);
  });
}

// Paper-style tile sizes for an SRAM of `m_bytes` (FlashAttention, Algorithm 1: Bc = M / (4d),
// Br = min(Bc, d), the register file counted in fp32). The big block belongs to the operand that
// stays resident across the inner loop: K/V for FA1 (Bc), Q for FA2 and naive (Br).
void tiles_for_sram(std::uint64_t m_bytes, std::int64_t d, std::int64_t n, std::int64_t& big, std::int64_t& small) {
  std::int64_t m_el = static_cast<std::int64_t>(m_bytes / 4);
  big = std::max<std::int64_t>(1, std::min<std::int64_t>(n, m_el / (4 * d)));
  small = std::min(big, d);
}

// The attention problem a sweep holds fixed (its tiles are what varies, or the kernels').
AttentionParams sweep_problem(const SweepArgs& a) {
  AttentionParams p;
  p.batch_heads = a.heads;
  p.n = a.n;
  p.d = a.d;
  p.elem_bytes = a.elem;
  p.causal = a.causal;
  return p;
}

// A measured point of `flashsim-gpu compare`: HBM bytes read + written on a GPU with that L2.
struct Measured {
  std::string label;
  std::uint64_t l2 = 0;
  std::map<std::string, std::pair<std::uint64_t, std::int64_t>> bytes;  // schedule -> (bytes, blocks per SM)
};

// LABEL:L2SIZE:FILE.csv -> the rows of naive, FA1 and FA2 at the sweep's size, dtype and mask.
Measured read_measured(const std::string& spec, const SweepArgs& a) {
  const auto c1 = spec.find(':'), c2 = c1 == std::string::npos ? c1 : spec.find(':', c1 + 1);
  if (c2 == std::string::npos) throw std::invalid_argument("--measured " + spec + ": expected LABEL:L2SIZE:FILE.csv");
  Measured m;
  m.label = spec.substr(0, c1);
  m.l2 = sim::parse_size(spec.substr(c1 + 1, c2 - c1 - 1));
  const std::string path = spec.substr(c2 + 1);
  std::ifstream in(path);
  if (!in) throw std::invalid_argument("--measured: cannot open '" + path + "'");
  std::string line;
  std::getline(in, line);
  const auto head = sim::csv_split(line);
  auto col = [&](const char* name) { return sim::csv_column(head, name, path); };
  const std::size_t c_sched = col("schedule"), c_size = col("size"), c_dtype = col("dtype"), c_read = col("hbm_read"),
                    c_written = col("hbm_written"), c_occ = col("blocks_per_sm");
  const std::string size = std::to_string(a.heads) + "x" + std::to_string(a.n) + "x" + std::to_string(a.d) +
                           (a.causal ? " causal" : "");
  const std::map<std::string, int> dtype_bytes = {{"fp32", 4}, {"bf16", 2}, {"fp16", 2}};
  const std::map<std::string, std::string> names = {{"attn-naive", "naive"}, {"attn-fa1", "FA1"}, {"attn-fa2", "FA2"}};
  for (std::size_t row = 2; std::getline(in, line); ++row) {
    const auto f = sim::csv_split(line);
    if (f.size() < head.size()) throw std::invalid_argument(path + ":" + std::to_string(row) + ": too few fields");
    auto name = names.find(f[c_sched]);
    auto bytes = dtype_bytes.find(f[c_dtype]);
    if (name == names.end() || f[c_size] != size || bytes == dtype_bytes.end() || bytes->second != a.elem) continue;
    try {
      m.bytes[name->second] = {std::stoull(f[c_read]) + std::stoull(f[c_written]), std::stoll(f[c_occ])};
    } catch (const std::exception&) {
      throw std::invalid_argument(path + ":" + std::to_string(row) + ": hbm_read, hbm_written or blocks_per_sm is not a number");
    }
  }
  if (m.bytes.empty())
    throw std::invalid_argument("--measured " + path + ": no attn-naive/fa1/fa2 row of size '" + size + "' with " +
                                std::to_string(a.elem) + "-byte elements");
  return m;
}

// HBM bytes of naive, FA1 and FA2 against the L2 size: the whole launch replayed through the GPU
// model at each size, with the measured points of real GPUs on the same axes.
int do_sweep_l2(const SweepArgs& a) {
  const std::uint64_t lo = sim::parse_size(a.l2_min), hi = sim::parse_size(a.l2_max);
  if (lo == 0 || hi < lo) throw std::invalid_argument("need 0 < --l2-min <= --l2-max");
  if (a.sms < 1) throw std::invalid_argument("--sms must be at least 1");
  std::vector<Measured> measured;
  for (const auto& m : a.measured) measured.push_back(read_measured(m, a));
  std::vector<std::uint64_t> xs;
  for (std::uint64_t x = lo; x <= hi; x *= 2) xs.push_back(x);
  for (const auto& m : measured) xs.push_back(m.l2);
  std::sort(xs.begin(), xs.end());
  xs.erase(std::unique(xs.begin(), xs.end()), xs.end());
  AttentionParams p = sweep_problem(a);
  p.br = a.br;
  p.bc = a.bc;
  tile::validate(p);
  const char* names[] = {"naive", "FA1", "FA2"};
  std::cout << "HBM bytes (read + written) of attention forward through an L2, " << a.heads << " heads x N=" << a.n
            << " x d=" << a.d << ", " << a.elem << "-byte elements" << (a.causal ? ", causal" : "") << ", tiles " << a.br
            << "x" << a.bc << ", " << a.sms << " SMs\n";
  std::int64_t occupancy[3];
  for (int s = 0; s < 3; ++s) {
    occupancy[s] = a.blocks_per_sm;
    for (const auto& m : measured)
      if (auto it = m.bytes.find(names[s]); it != m.bytes.end() && occupancy[s] == 0) occupancy[s] = it->second.second;
    if (occupancy[s] == 0) occupancy[s] = 1;
    std::cout << names[s] << ": " << occupancy[s] << " blocks per SM" << (a.blocks_per_sm ? "" : " (from the measured rows, else 1)")
              << "\n";
  }
  std::vector<Series> series = {{"naive", {}}, {"FA1", {}}, {"FA2", {}}};
  std::vector<std::vector<std::uint64_t>> v(3);
  for (int s = 0; s < 3; ++s) {
    std::vector<sim::GpuModel> models;
    for (auto x : xs) {
      sim::GpuModel g;
      g.l2.capacity_bytes = x;
      g.sms = a.sms;
      g.blocks_per_sm = occupancy[s];
      models.push_back(g);
    }
    const auto k = static_cast<std::size_t>(s);
    const auto traffic = count_attention_forward(p, forward_of(kForward[k]), models);
    for (std::size_t i = 0; i < xs.size(); ++i) {
      v[k].push_back(traffic[i].hbm_bytes_read() + traffic[i].hbm_bytes_written());
      series[k].points.emplace_back(static_cast<double>(xs[i]), static_cast<double>(v[k][i]));
    }
  }
  std::cout << "\n" << std::setw(12) << "L2" << std::setw(16) << "naive" << std::setw(16) << "FA1" << std::setw(16) << "FA2" << "\n";
  for (std::size_t i = 0; i < xs.size(); ++i)
    std::cout << std::setw(12) << human(xs[i]) << std::setw(16) << v[0][i] << std::setw(16) << v[1][i] << std::setw(16) << v[2][i]
              << "\n";
  for (std::size_t k = 0; k < measured.size(); ++k) {
    const auto& m = measured[k];
    const auto i = static_cast<std::size_t>(std::find(xs.begin(), xs.end(), m.l2) - xs.begin());
    std::cout << "\nmeasured on " << m.label << " (L2 " << human(m.l2) << "):";
    for (int s = 0; s < 3; ++s) {
      auto it = m.bytes.find(names[s]);
      if (it == m.bytes.end()) continue;
      const double ratio = static_cast<double>(it->second.first) / static_cast<double>(v[static_cast<std::size_t>(s)][i]);
      std::cout << "  " << names[s] << " " << it->second.first << " (measured/predicted " << std::fixed << std::setprecision(3)
                << ratio << std::defaultfloat << ")";
      Series pts{m.label + " " + names[s] + " measured", {{static_cast<double>(m.l2), static_cast<double>(it->second.first)}}};
      pts.markers_only = true;
      pts.color = s;
      pts.marker = k % 2 ? 'd' : 's';
      series.push_back(pts);
    }
    std::cout << "\n";
  }
  if (!a.svg.empty()) {
    std::ofstream f(a.svg);
    if (!f) throw std::invalid_argument("cannot write '" + a.svg + "'");
    std::ostringstream title;
    title << "Attention forward HBM bytes vs L2, " << a.heads << "x" << a.n << "x" << a.d << (a.causal ? " causal" : "");
    write_svg_chart(f, title.str(), "L2 size (bytes)", "HBM bytes read + written", series);
    std::cerr << "wrote " << a.svg << "\n";
  }
  return kExitOk;
}

int do_sweep(const SweepArgs& a) {
  if (a.vary == "l2") return do_sweep_l2(a);
  if (a.vary != "sram" && a.vary != "tiles") throw std::invalid_argument("--vary must be 'sram', 'tiles' or 'l2'");
  if (a.m_min == 0 || a.m_max < a.m_min) throw std::invalid_argument("need 0 < --m-min <= --m-max");
  AttentionParams base = sweep_problem(a);
  tile::validate(base);
  std::vector<Series> series = {{"naive", {}, false}, {"FA1", {}, false}, {"FA2", {}, false}};
  Series theory_fa{"N^2 d^2 / M (Theorem 2)", {}, true}, theory_naive{"N d + N^2 (standard)", {}, true};
  const double N = static_cast<double>(a.n), d = static_cast<double>(a.d), e = static_cast<double>(a.elem),
               H = static_cast<double>(a.heads);
  std::cout << "HBM bytes of attention forward, N=" << a.n << " d=" << a.d << " batch*heads=" << a.heads
            << " elem=" << a.elem << "B" << (a.causal ? " causal" : "") << "\n";
  std::cout << (a.vary == "sram" ? "SRAM M in bytes; tiles: big = M/(16d) rows (fp32), small = min(big, d); FA1 takes "
                                   "Bc = big, Br = small; naive and FA2 take Br = big, Bc = small"
                                 : "tile Br = Bc")
            << "\n\n";
  std::cout << std::setw(10) << (a.vary == "sram" ? "M" : "B") << std::setw(6) << "big" << std::setw(6) << "small"
            << std::setw(16) << "naive" << std::setw(16) << "FA1" << std::setw(16) << "FA2" << std::setw(16)
            << "N^2d^2/M" << std::setw(16) << "Nd+N^2" << "\n";
  std::vector<std::uint64_t> xs;
  if (a.vary == "sram")
    for (std::uint64_t m = a.m_min; m <= a.m_max; m *= 2) xs.push_back(m);
  else
    for (std::uint64_t b = 16; b <= static_cast<std::uint64_t>(std::min<std::int64_t>(a.n, 512)); b *= 2) xs.push_back(b);
  for (std::uint64_t x : xs) {
    AttentionParams p = base;
    std::uint64_t m_bytes;
    std::int64_t big, small;
    if (a.vary == "sram") {
      m_bytes = x;
      tiles_for_sram(x, a.d, a.n, big, small);
    } else {
      big = small = static_cast<std::int64_t>(x);
      m_bytes = static_cast<std::uint64_t>(4 * big * a.d * 4);  // the SRAM those tiles imply
    }
    std::uint64_t v[3];
    for (int s = 0; s < 3; ++s) {
      const bool fa1 = s == 1;
      p.br = fa1 ? small : big;
      p.bc = fa1 ? big : small;
      Traffic t = count_attention_forward(p, forward_of(kForward[static_cast<std::size_t>(s)]));
      v[s] = t.bytes_read() + t.bytes_written();
      series[static_cast<std::size_t>(s)].points.emplace_back(static_cast<double>(x), static_cast<double>(v[s]));
    }
    const double m_el = static_cast<double>(m_bytes) / 4.0;
    const double fa = H * e * N * N * d * d / m_el, naive = H * e * (N * d + N * N);
    theory_fa.points.emplace_back(static_cast<double>(x), fa);
    theory_naive.points.emplace_back(static_cast<double>(x), naive);
    std::cout << std::setw(10) << x << std::setw(6) << big << std::setw(6) << small << std::setw(16) << v[0]
              << std::setw(16) << v[1] << std::setw(16) << v[2] << std::setw(16) << static_cast<std::uint64_t>(fa)
              << std::setw(16) << static_cast<std::uint64_t>(naive) << "\n";
  }
  if (!a.svg.empty()) {
    series.push_back(theory_fa);
    series.push_back(theory_naive);
    std::ofstream f(a.svg);
    if (!f) throw std::invalid_argument("cannot write '" + a.svg + "'");
    std::ostringstream title;
    title << "Attention forward HBM traffic, N=" << a.n << ", d=" << a.d << (a.causal ? ", causal" : "");
    write_svg_chart(f, title.str(), a.vary == "sram" ? "SRAM size M (bytes)" : "tile size Br = Bc", "HBM bytes", series);
    std::cerr << "wrote " << a.svg << "\n";
  }
  return kExitOk;
}

void add_attention_options(CLI::App* c, AttentionArgs& a, bool for_traffic) {
  std::vector<std::string> names = kForward;
  names.insert(names.end(), kBackward.begin(), kBackward.end());
  if (for_traffic) {
    names.push_back("all");
    names.push_back("all-bwd");
  }
  c->add_option("--schedule", a.schedule, "Forward: naive, fa1, fa2; backward: bwd-two-pass, bwd-atomic-dq, "
                                          "bwd-row-wise, bwd-row-wise-no-d" +
                                              std::string(for_traffic ? "; all, all-bwd" : ""))
      ->check(CLI::IsMember(names));
  c->add_option("--n", a.n, "Sequence length N (queries)")->check(CLI::Range(1, 1 << 24));
  c->add_option("--n-kv", a.n_kv, "Key/value length (default N); causal aligns bottom-right")->check(CLI::Range(0, 1 << 24));
  c->add_option("--d", a.d, "Head dimension")->check(CLI::Range(1, 4096));
  c->add_option("--br", a.br, "Query rows per tile")->check(CLI::Range(1, 1 << 16));
  c->add_option("--bc", a.bc, "Key/value rows per tile")->check(CLI::Range(1, 1 << 16));
  c->add_option("--heads", a.heads, "batch * heads")->check(CLI::Range(1, 1 << 16));
  c->add_option("--elem", a.elem, "Bytes per Q/K/V/O element (2: bf16/fp16, 4: fp32)")->check(CLI::IsMember({1, 2, 4, 8}));
  c->add_option("--score-bytes", a.score, "Bytes per S/P element (naive)")->check(CLI::IsMember({1, 2, 4, 8}));
  c->add_option("--stat-bytes", a.stat, "Bytes per m, l, logsumexp, D element")->check(CLI::IsMember({1, 2, 4, 8}));
  c->add_option("--accum-bytes", a.accum, "Bytes per DRAM accumulator element (dQ/dK/dV acc)")->check(CLI::IsMember({1, 2, 4, 8}));
  c->add_flag("--causal", a.causal, "Causal mask; tiles entirely above the diagonal are skipped");
  c->add_flag("--exp2", a.exp2, "Base-2 exponent variant (EXP2D/LOG2; Q pre-scaled by log2 e)");
  c->add_option("--sram", a.sram, "SRAM bytes: the machine faults when its tiles hold more");
}

}  // namespace

void register_tile_commands(CLI::App& app, int& exit_code) {
  CLI::App* gen = nullptr;
  try {
    gen = app.get_subcommand("gen");
  } catch (const CLI::OptionNotFound&) {
    gen = app.add_subcommand("gen", "Generate traces for larger problems");
    gen->require_subcommand(1);
  }

  auto att = std::make_shared<AttentionArgs>();
  CLI::App* ga = gen->add_subcommand("attention", "Tile trace of attention: naive, FA1, FA2 forward or a backward pass");
  add_attention_options(ga, *att, false);
  ga->add_option("-o,--output", att->output, "Write the trace here (default: stdout)");
  ga->callback([att, &exit_code] { exit_code = guarded([&] { return do_gen_attention(*att); }); });

  auto mm = std::make_shared<MatmulArgs>();
  CLI::App* gm = gen->add_subcommand("tiled-matmul", "Tile trace of C = A x B: inner or outer product (k in passes)");
  auto matmul_opts = [](CLI::App* c, MatmulArgs& a) {
    c->add_option("--schedule", a.schedule, "inner or outer")->check(CLI::IsMember({"inner", "outer"}));
    c->add_option("--m", a.m, "Rows of A and C")->check(CLI::Range(1, 1 << 20));
    c->add_option("--n", a.n, "Columns of B and C")->check(CLI::Range(1, 1 << 20));
    c->add_option("--k", a.k, "Columns of A, rows of B")->check(CLI::Range(1, 1 << 20));
    c->add_option("--bm", a.bm, "Tile rows of A and C")->check(CLI::Range(1, 1 << 16));
    c->add_option("--bn", a.bn, "Tile columns of B and C")->check(CLI::Range(1, 1 << 16));
    c->add_option("--bk", a.bk, "Tile depth")->check(CLI::Range(1, 1 << 16));
    c->add_option("--k-chunk", a.k_chunk, "outer: k-tiles per pass (1 = pure outer product)")->check(CLI::Range(0, 1 << 20));
    c->add_option("--c-strip-rows", a.c_strip_rows,
                  "outer: stream each C block in strips of this many rows, read, updated and written in turn (divides --bm; 0: whole tiles)")
        ->check(CLI::Range(0, 1 << 20));
    c->add_option("--in-bytes", a.in, "Bytes per A/B element")->check(CLI::IsMember({1, 2, 4, 8}));
    c->add_option("--out-bytes", a.out, "Bytes per C element")->check(CLI::IsMember({1, 2, 4, 8}));
    c->add_option("--sram", a.sram, "SRAM bytes: the machine faults when its tiles hold more");
  };
  matmul_opts(gm, *mm);
  gm->add_option("-o,--output", mm->output, "Write the trace here (default: stdout)");
  gm->callback([mm, &exit_code] {
    exit_code = guarded([&] {
      MatmulParams p = matmul_params(*mm);
      write_trace(tile::matmul_program(p, matmul_of(mm->schedule)), "tiled matmul, schedule " + mm->schedule, mm->output);
      return kExitOk;
    });
  });

  auto sm = std::make_shared<SoftmaxArgs>();
  CLI::App* gs = gen->add_subcommand("tiled-softmax", "Tile trace of a row softmax over long rows: three-pass or online");
  auto softmax_opts = [](CLI::App* c, SoftmaxArgs& a) {
    c->add_option("--schedule", a.schedule, "three-pass or online")->check(CLI::IsMember({"three-pass", "online"}));
    c->add_option("--rows", a.rows, "Rows")->check(CLI::Range(1, 1 << 20));
    c->add_option("--cols", a.cols, "Columns (row length)")->check(CLI::Range(1, 1 << 24));
    c->add_option("--chunk", a.chunk, "Columns per tile (what fits in SRAM)")->check(CLI::Range(1, 1 << 20));
    c->add_option("--elem", a.elem, "Bytes per element")->check(CLI::IsMember({1, 2, 4, 8}));
    c->add_option("--sram", a.sram, "SRAM bytes: the machine faults when its tiles hold more");
  };
  softmax_opts(gs, *sm);
  gs->add_option("-o,--output", sm->output, "Write the trace here (default: stdout)");
  gs->callback([sm, &exit_code] {
    exit_code = guarded([&] {
      write_trace(tile::softmax_program(softmax_params(*sm), softmax_of(sm->schedule)),
                  "tiled softmax, schedule " + sm->schedule, sm->output);
      return kExitOk;
    });
  });

  CLI::App* tr = app.add_subcommand("traffic", "Counted HBM bytes of a tile schedule, per array, without values");
  tr->require_subcommand(1);
  auto tatt = std::make_shared<AttentionArgs>();
  CLI::App* ta = tr->add_subcommand("attention", "Attention forward/backward (--schedule all compares naive, FA1, FA2)");
  add_attention_options(ta, *tatt, true);
  ta->add_flag("!--no-arrays", tatt->arrays, "Totals only, no per-array rows");
  ta->add_flag("--heavy-first", tatt->heavy_first,
               "GPU block order (with --l2): causal blocks with the most tiles start first, as the fast kernels do");
  ta->add_flag("--paired-tiles", tatt->paired_tiles,
               "GPU block order of FA2 forward (with --l2): a block takes a head's Q tiles in pairs, heaviest with "
               "lightest, as the fast d = 128 kernel does");
  ta->add_option("--split-tail-sms", tatt->split_tail_sms,
                 "FA2 forward, full mask (with --l2 or without): the persistent launch's last round split along the keys "
                 "over this many SMs, partial O and logsumexp through a scratch array and a merge launch, as the d = 128 "
                 "launchers do from N = 8192 (sim/split_tail.h); 0: whole tiles")
      ->check(CLI::Range(0, sim::kMaxSplitBlocks));
  ta->add_option("--heads-per-group", tatt->heads_per_group,
                 "GPU block order of bwd-atomic-dq (with --l2): groups of heads, K/V tile outer, as bwd-mma does")
      ->check(CLI::Range(std::int64_t{0}, std::int64_t{1} << 16));
  auto tgpu = std::make_shared<GpuArgs>();
  add_gpu_options(ta, *tgpu);
  ta->callback([tatt, tgpu, &exit_code] { exit_code = guarded([&] { return do_traffic_attention(*tatt, *tgpu); }); });

  auto tmm = std::make_shared<MatmulArgs>();
  CLI::App* tm = tr->add_subcommand("matmul", "Tiled matmul");
  matmul_opts(tm, *tmm);
  auto mgpu = std::make_shared<GpuArgs>();
  add_gpu_options(tm, *mgpu);
  tm->callback([tmm, mgpu, &exit_code] {
    exit_code = guarded([&] {
      return report_traffic(*mgpu, "", {tmm->schedule}, true, [&](const std::string& s, const sim::GpuModel* gpu) {
        return count_matmul(matmul_params(*tmm), matmul_of(s), gpu);
      });
    });
  });
  auto tsm = std::make_shared<SoftmaxArgs>();
  CLI::App* ts = tr->add_subcommand("softmax", "Long-row softmax");
  softmax_opts(ts, *tsm);
  auto sgpu = std::make_shared<GpuArgs>();
  add_gpu_options(ts, *sgpu);
  ts->callback([tsm, sgpu, &exit_code] {
    exit_code = guarded([&] {
      return report_traffic(*sgpu, "", {tsm->schedule}, true, [&](const std::string& s, const sim::GpuModel* gpu) {
        return count_softmax(softmax_params(*tsm), softmax_of(s), gpu);
      });
    });
  });

  auto sw = std::make_shared<SweepArgs>();
  CLI::App* s = app.add_subcommand("sweep", "HBM bytes of naive, FA1 and FA2 against SRAM size or tile size, as a table and an SVG");
  s->add_option("--n", sw->n, "Sequence length N")->check(CLI::Range(1, 1 << 20));
  s->add_option("--d", sw->d, "Head dimension")->check(CLI::Range(1, 4096));
  s->add_option("--heads", sw->heads, "batch * heads")->check(CLI::Range(1, 1 << 16));
  s->add_option("--elem", sw->elem, "Bytes per Q/K/V/O element")->check(CLI::IsMember({1, 2, 4, 8}));
  s->add_flag("--causal", sw->causal, "Causal mask");
  s->add_option("--vary", sw->vary,
                "sram (tiles derived from M as in the paper), tiles (Br = Bc), or l2 (the GPU model's L2 size, with "
                "--br/--bc tiles and measured points)")
      ->check(CLI::IsMember({"sram", "tiles", "l2"}));
  s->add_option("--br", sw->br, "--vary l2: query rows per tile (the SIMT kernels': 64)")->check(CLI::Range(1, 1 << 16));
  s->add_option("--bc", sw->bc, "--vary l2: key/value rows per tile (64)")->check(CLI::Range(1, 1 << 16));
  s->add_option("--sms", sw->sms, "--vary l2: SMs (H100 and H200: 132)")->check(CLI::Range(1, 1 << 16));
  s->add_option("--blocks-per-sm", sw->blocks_per_sm,
                "--vary l2: resident blocks per SM (default: each kernel's occupancy from the measured rows, else 1)")
      ->check(CLI::Range(0, 1 << 10));
  s->add_option("--l2-min", sw->l2_min, "--vary l2: smallest L2 (doubling up to --l2-max)");
  s->add_option("--l2-max", sw->l2_max, "--vary l2: largest L2");
  s->add_option("--measured", sw->measured,
                "--vary l2: LABEL:L2SIZE:FILE.csv, a flashsim-gpu compare CSV whose attn-naive/fa1/fa2 rows at this size are "
                "plotted as measured points (repeatable)");
  s->add_option("--m-min", sw->m_min, "Smallest SRAM in bytes (doubling up to --m-max)");
  s->add_option("--m-max", sw->m_max, "Largest SRAM in bytes");
  s->add_option("--svg", sw->svg, "Write the plot here");
  s->callback([sw, &exit_code] { exit_code = guarded([&] { return do_sweep(*sw); }); });
}

void write_svg_chart(std::ostream& os, const std::string& title, const std::string& x_label, const std::string& y_label,
                     const std::vector<Series>& series) {
  const double W = 760, H = 500, L = 90, R = 230, T = 50, B = 60;
  double x0 = 1e300, x1 = -1e300, y0 = 1e300, y1 = -1e300;
  for (const auto& s : series)
    for (auto [x, y] : s.points) {
      if (x <= 0 || y <= 0) continue;
      x0 = std::min(x0, x);
      x1 = std::max(x1, x);
      y0 = std::min(y0, y);
      y1 = std::max(y1, y);
    }
  if (x0 > x1) x0 = 1, x1 = 10, y0 = 1, y1 = 10;
  if (x0 == x1) x1 = x0 * 2;
  double ly0 = std::floor(std::log10(y0)), ly1 = std::ceil(std::log10(y1));
  if (ly0 == ly1) ly1 += 1;
  auto px = [&](double x) { return L + (std::log2(x) - std::log2(x0)) / (std::log2(x1) - std::log2(x0)) * (W - L - R); };
  auto py = [&](double y) { return H - B - (std::log10(y) - ly0) / (ly1 - ly0) * (H - T - B); };
  const char* colors[] = {"#d62728", "#1f77b4", "#2ca02c", "#555555", "#9467bd", "#ff7f0e"};
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H << "\" viewBox=\"0 0 " << W
     << " " << H << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  os << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  os << "<text x=\"" << W / 2 - R / 2 << "\" y=\"25\" text-anchor=\"middle\" font-size=\"15\">" << title << "</text>\n";
  os << "<rect x=\"" << L << "\" y=\"" << T << "\" width=\"" << W - L - R << "\" height=\"" << H - T - B
     << "\" fill=\"none\" stroke=\"#333\"/>\n";
  for (double e = ly0; e <= ly1; e += 1) {
    double y = py(std::pow(10.0, e));
    os << "<line x1=\"" << L << "\" y1=\"" << y << "\" x2=\"" << W - R << "\" y2=\"" << y << "\" stroke=\"#ddd\"/>\n";
    os << "<text x=\"" << L - 6 << "\" y=\"" << y + 4 << "\" text-anchor=\"end\">1e" << static_cast<int>(e) << "</text>\n";
  }
  double last_label = -1e300;
  if (!series.empty())
    for (auto [x, y] : series.front().points) {
      (void)y;
      double X = px(x);
      if (X - last_label < 34) continue;  // too close to the label before: leave it out
      last_label = X;
      os << "<line x1=\"" << X << "\" y1=\"" << T << "\" x2=\"" << X << "\" y2=\"" << H - B << "\" stroke=\"#eee\"/>\n";
      std::ostringstream lab;
      if (x >= 1048576 && std::fmod(x, 1048576) == 0) lab << static_cast<long long>(x / 1048576) << "M";
      else if (x >= 1024 && std::fmod(x, 1024) == 0) lab << static_cast<long long>(x / 1024) << "K";
      else lab << static_cast<long long>(x);
      os << "<text x=\"" << X << "\" y=\"" << H - B + 16 << "\" text-anchor=\"middle\">" << lab.str() << "</text>\n";
    }
  os << "<text x=\"" << L + (W - L - R) / 2 << "\" y=\"" << H - 15 << "\" text-anchor=\"middle\">" << x_label << "</text>\n";
  os << "<text transform=\"translate(20," << T + (H - T - B) / 2 << ") rotate(-90)\" text-anchor=\"middle\">" << y_label
     << "</text>\n";
  for (std::size_t k = 0; k < series.size(); ++k) {
    const auto& s = series[k];
    const char* c = colors[static_cast<std::size_t>(s.color >= 0 ? s.color : static_cast<int>(k)) % 6];
    const double ly = T + 14 + 20 * static_cast<double>(k);
    auto marker = [&](double X, double Y) {
      if (s.marker == 'd')
        os << "<polygon points=\"" << X << "," << Y - 6 << " " << X + 6 << "," << Y << " " << X << "," << Y + 6 << " " << X - 6
           << "," << Y << "\" fill=\"none\" stroke=\"" << c << "\" stroke-width=\"2\"/>\n";
      else
        os << "<rect x=\"" << X - 5 << "\" y=\"" << Y - 5 << "\" width=\"10\" height=\"10\" fill=\"none\" stroke=\"" << c
           << "\" stroke-width=\"2\"/>\n";
    };
    if (s.markers_only) {
      for (auto [x, y] : s.points)
        if (x > 0 && y > 0) marker(px(x), py(y));
      marker(W - R + 30, ly - 4);
      os << "<text x=\"" << W - R + 52 << "\" y=\"" << ly << "\">" << s.name << "</text>\n";
      continue;
    }
    os << "<polyline fill=\"none\" stroke=\"" << c << "\" stroke-width=\"2\"" << (s.dashed ? " stroke-dasharray=\"6,4\"" : "")
       << " points=\"";
    for (auto [x, y] : s.points)
      if (x > 0 && y > 0) os << px(x) << "," << py(y) << " ";
    os << "\"/>\n";
    if (!s.dashed)
      for (auto [x, y] : s.points)
        if (x > 0 && y > 0) os << "<circle cx=\"" << px(x) << "\" cy=\"" << py(y) << "\" r=\"3\" fill=\"" << c << "\"/>\n";
    os << "<line x1=\"" << W - R + 15 << "\" y1=\"" << ly - 4 << "\" x2=\"" << W - R + 45 << "\" y2=\"" << ly - 4
       << "\" stroke=\"" << c << "\" stroke-width=\"2\"" << (s.dashed ? " stroke-dasharray=\"6,4\"" : "") << "/>\n";
    os << "<text x=\"" << W - R + 52 << "\" y=\"" << ly << "\">" << s.name << "</text>\n";
  }
  os << "</svg>\n";
}

}  // namespace flashsim::cli
