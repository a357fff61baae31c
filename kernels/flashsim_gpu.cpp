// flashsim-gpu: runs the tile-scale schedules on the GPU and compares the HBM traffic measured by
// the hardware counters with the bytes the tile machine counts.
//
//   flashsim-gpu list
//   flashsim-gpu compare [--schedules LIST] [--sizes LIST] [--dtype LIST] [--causal no|yes|both]
//                        [--repeats N] [--measurements N] [--no-profile] [--no-check] [--writes one-range|split] [--seed N]
//                        [--csv FILE] [--json FILE]
//   flashsim-gpu predict --from CSV --l2 SIZE [--sms S] [--l2-partitions P]
//   flashsim-gpu l2probe [--patterns reread,rmw,copy] [--fractions LIST] [--passes N] [--csv FILE]
//   flashsim-gpu ring [--gpus P] [--n N] [--heads H] [--d 64|128] [--dtype bf16|fp16] [--causal]
//                     [--split contiguous|zigzag] [--transport auto|nccl|copy] [--nccl-ctas C]
//                     [--backward] [--method ring|allgather] [--streams 1|2]  (kernels/ring.h)
#include <CLI/CLI.hpp>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <deque>
#include <fstream>
#include <future>
#include <iostream>
#include <optional>
#include <thread>
#include <vector>

#include "kernels/l2_probe.h"
#include "kernels/profiler.h"
#include "kernels/report.h"
#include "kernels/ring.h"
#include "kernels/runner.h"
#include "kernels/spec.h"
#include "sim/cli.h"
#include "sim/cli_values.h"
#include "sim/csv_text.h"
#include "sim/l2.h"
#include "sim/main_guard.h"

using namespace flashsim::gpu;

namespace {

void progress(std::size_t done, std::size_t total, const std::string& what) {
  if (total < 2) return;
  const bool tty = isatty(fileno(stderr));
  const int width = 30;
  const int fill = static_cast<int>(width * done / total);
  std::string bar(fill, '#');
  bar += std::string(width - fill, '.');
  if (tty)
    std::fprintf(stderr, "\r[%s] %zu/%zu %-40s", bar.c_str(), done, total, what.c_str());
  else
    std::fprintf(stderr, "[%s] %zu/%zu %s\n", bar.c_str(), done, total, what.c_str());
  if (tty && done == total) std::fprintf(stderr, "\n");
  std::fflush(stderr);
}

bool write_to(const std::string& path, const std::function<void(std::ostream&)>& f) {
  if (path == "-") {
    f(std::cout);
    return true;
  }
  std::ofstream out(path);
  if (!out) {
    std::fprintf(stderr, "flashsim-gpu: cannot write %s\n", path.c_str());
    return false;
  }
  f(out);
  return true;
}

}  // namespace

// A CSV's header, read from an open file; `column` names the file when a column is missing.
struct CsvReader {
  std::ifstream in;
  std::string path;
  std::vector<std::string> head;
  explicit CsvReader(const std::string& p) : in(p), path(p) {
    if (!in) throw std::invalid_argument("cannot open '" + path + "'");
    std::string line;
    std::getline(in, line);
    head = flashsim::sim::csv_split(line);
  }
  std::size_t column(const char* name) const { return flashsim::sim::csv_column(head, name, path); }
  // A column that older files lack.
  std::optional<std::size_t> optional_column(const char* name) const {
    const auto at = std::find(head.begin(), head.end(), name);
    return at == head.end() ? std::nullopt : std::optional<std::size_t>(static_cast<std::size_t>(at - head.begin()));
  }
};

// A compare CSV's row to predict again: its measured bytes, occupancy and time, and how it was measured.
struct PredictJob {
  int line;
  std::vector<std::string> f;
  Spec spec;
  Bytes meas;
  int occ;
  std::uint64_t dirty;
  bool one_range;
  double time_ms;
};

// The columns of a compare CSV that `predict` prints back.
struct PredictColumns {
  std::size_t schedule, size, dtype;
};

// Every row of a compare CSV, read and checked before any prediction runs, so that bad input stops
// early. Rows without a measurement or an occupancy are skipped: nothing to compare.
static std::vector<PredictJob> read_predict_jobs(const std::string& path, std::optional<std::uint64_t> dirty_at_start,
                                                 PredictColumns* cols) {
  CsvReader csv(path);
  const auto& head = csv.head;
  auto col = [&](const char* name) { return csv.column(name); };
  const std::size_t c_s = col("schedule"), c_size = col("size"), c_dt = col("dtype"), c_r = col("hbm_read"),
                    c_w = col("hbm_written"), c_occ = col("blocks_per_sm");
  *cols = PredictColumns{c_s, c_size, c_dt};
  const auto c_dirty = csv.optional_column("dirty_at_start");
  // How the row's writes were measured (Row::writes_one_range); CSVs from before the column: split.
  const auto c_method = csv.optional_column("writes_measured");
  // The attention rows' tiling (Spec::br, bc, paired_tiles); CSVs from before the column: told by
  // the occupancy (apply_attn_tiles_before_column). An empty field is read the same way.
  const auto c_tiles = csv.optional_column("attn_tiles");
  // The measured time, for the time model's pred ms beside it.
  const auto c_time = csv.optional_column("time_ms");
  auto bad = [&](int n, const std::string& why) { return std::invalid_argument(path + ":" + std::to_string(n) + ": " + why); };
  std::vector<PredictJob> jobs;
  std::string line;
  for (int n = 2; std::getline(csv.in, line); ++n) {
    auto f = flashsim::sim::csv_split(line);
    if (f.size() < head.size()) throw bad(n, "too few fields");
    Spec s;
    try {
      s = spec_from_row(f[c_s], f[c_size], f[c_dt]);
    } catch (const std::invalid_argument& e) {
      throw bad(n, e.what());
    }
    Bytes meas;
    int occ = 0;
    try {
      meas = Bytes{std::stoull(f[c_r]), std::stoull(f[c_w])};
      occ = std::stoi(f[c_occ]);
    } catch (const std::exception&) {
      continue;
    }
    try {
      if (c_tiles && !f[*c_tiles].empty()) apply_attn_tiles_label(s, f[*c_tiles]);
      else apply_attn_tiles_before_column(s, occ);
    } catch (const std::invalid_argument& e) {
      throw bad(n, e.what());
    }
    std::uint64_t dirty = dirty_at_start.value_or(0);
    if (!dirty_at_start && c_dirty) {
      try {
        dirty = static_cast<std::uint64_t>(std::stod(f[*c_dirty]));
      } catch (const std::exception&) {
        throw bad(n, "dirty_at_start is not a number");
      }
    }
    bool one_range = false;
    if (c_method) {
      const std::string& m = f[*c_method];
      if (m != "one-range" && m != "split") throw bad(n, "writes_measured is '" + m + "', not one-range or split");
      one_range = m == "one-range";
    }
    double time_ms = 0;
    if (c_time && !f[*c_time].empty()) {
      try {
        time_ms = std::stod(f[*c_time]);
      } catch (const std::exception&) {
        throw bad(n, "time_ms is not a number");
      }
    }
    jobs.push_back(PredictJob{n, std::move(f), s, meas, occ, dirty, one_range, time_ms});
  }
  return jobs;
}

// Each row of a compare CSV predicted again, with the occupancy it recorded, next to its measured
// bytes; the last line counts the rows within 10 % (reads and writes of at least 1 MiB).
// `dirty_at_start`: the profiler's dirty lines at a range's start, for CSVs from before compare
// recorded them in a dirty_at_start column (their text output says "write-back baseline").
// The rows' time is predicted on `preset` with the bytes predicted here.
static int predict_main(const std::string& path, std::uint64_t l2_bytes, int sms, int partitions, std::uint32_t ways,
                        std::uint32_t dirty_ways, std::optional<std::uint64_t> dirty_at_start, std::uint32_t page_lines,
                        std::uint32_t copy_rank, std::uint32_t dirty_group, const std::string& preset) {
  PredictColumns c{};
  const std::vector<PredictJob> jobs = read_predict_jobs(path, dirty_at_start, &c);
  // The rows' models run on worker threads (each builds its own machine); rows print in order.
  struct Result {
    std::optional<Bytes> p;
    std::string why;
    std::optional<TimePrediction> t;
  };
  auto predict_job = [&](const PredictJob& j) {
    Result r;
    r.p = predicted(j.spec, l2_bytes, sms, j.occ, nullptr, &r.why, partitions, ways, dirty_ways, j.dirty, page_lines,
                    copy_rank, !j.one_range, dirty_group);
    if (r.p) r.t = predict_run_time(j.spec, preset, static_cast<double>(r.p->total()));
    return r;
  };
  const std::size_t workers = std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, 16);
  // Declared after `jobs`, so destroyed first: each future waits for its thread, also on a throw.
  std::deque<std::future<Result>> pending;
  std::size_t next = 0;
  // The time columns only when the CSV has times (a compare run's); then after the byte columns'
  // marker, padded, so that the columns stay aligned.
  bool any_time = false;
  for (const PredictJob& j : jobs) any_time = any_time || j.time_ms > 0;
  if (any_time)
    std::printf("%-15s %-22s %-5s %21s %21s %13s %-8s %9s %9s %9s\n", "schedule", "size", "dtype", "HBM R/W MiB",
                "pred R/W MiB", "meas/pred R/W", "", "time ms", "pred ms", "meas/pred");
  else
    std::printf("%-15s %-22s %-5s %21s %21s %13s\n", "schedule", "size", "dtype", "HBM R/W MiB", "pred R/W MiB",
                "meas/pred R/W");
  int rows = 0, within = 0;
  std::vector<TimeCheck> times;
  for (const PredictJob& j : jobs) {
    while (next < jobs.size() && pending.size() < workers)
      pending.push_back(std::async(std::launch::async, predict_job, std::cref(jobs[next++])));
    const Result r = pending.front().get();
    pending.pop_front();
    if (!r.p) throw std::invalid_argument(path + ":" + std::to_string(j.line) + ": " + r.why);
    const bool ok = prediction_within_bound(j.meas, *r.p);
    ++rows;
    within += ok ? 1 : 0;
    const auto& f = j.f;
    const std::optional<double> pred_ms = r.t ? std::optional<double>(r.t->ms) : std::nullopt;
    const double tr = time_ratio(j.time_ms, pred_ms);
    char tcols[96] = "";
    if (any_time)
      std::snprintf(tcols, sizeof tcols, "%-*s %9s %9s %9s", ok ? 9 : 1, "",
                    fmt_or_dash(j.time_ms > 0 ? std::optional<double>(j.time_ms) : std::nullopt, 3).c_str(),
                    fmt_or_dash(pred_ms, 3).c_str(), fmt_or_dash(tr, 2).c_str());
    std::printf("%-15s %-22s %-5s %21s %21s %13s%s%s\n", f[c.schedule].c_str(), f[c.size].c_str(), f[c.dtype].c_str(),
                fmt_rw(j.meas).c_str(), fmt_rw(*r.p).c_str(), fmt_ratio_rw(j.meas, *r.p).c_str(), ok ? "" : "  > 10 %", tcols);
    times.push_back(TimeCheck{f[c.schedule] + " " + f[c.size] + " " + f[c.dtype], time_bound_row(j.spec), j.time_ms, pred_ms});
    std::fflush(stdout);
  }
  std::printf("%d of %d rows within 10 %% (L2 %llu B, %d SMs, %d partition%s, %s, dirty limit %u over %u set%s, page lines %u, "
              "copy rank %u)\n",
              within, rows, static_cast<unsigned long long>(l2_bytes), sms, partitions, partitions == 1 ? "" : "s",
              ways ? (std::to_string(ways) + " ways").c_str() : "fully associative", dirty_ways, dirty_group,
              dirty_group == 1 ? "" : "s", page_lines, copy_rank);
  const std::string tline = time_summary(times);
  if (!tline.empty()) std::printf("%s (preset %s)\n", tline.c_str(), preset.c_str());
  return 0;
}


// One probe row: HBM MiB per pass beyond the compulsory (the first pass's read and, for rmw, one
// write-back of each line), measured and predicted; returns |meas - pred| summed over R and W.
static double print_probe_row(ProbePattern pat, std::uint64_t bytes, std::uint64_t l2_bytes, int passes, double mr,
                              double mw, const ProbeTraffic& pred) {
  const bool writes = pat != ProbePattern::Reread;  // its buffer (rmw) or a second one (copy)
  const double w = static_cast<double>(bytes), mib = 1048576.0, per = (passes > 1 ? passes - 1 : 1) * mib;
  auto extra = [&](double x) { return std::max(0.0, x - w) / per; };
  const double r_meas = extra(mr), r_pred = extra(static_cast<double>(pred.read));
  const double w_meas = writes ? extra(mw) : mw / per,
               w_pred = writes ? extra(static_cast<double>(pred.written)) : pred.written / per;
  std::printf("%-7s %9.1f %6.2f %12.2f %12.2f %12.2f %12.2f\n", probe_name(pat), w / mib, w / static_cast<double>(l2_bytes),
              r_meas, r_pred, w_meas, w_pred);
  std::fflush(stdout);
  return std::fabs(r_meas - r_pred) + std::fabs(w_meas - w_pred);
}

static void print_probe_header() {
  std::printf("HBM MiB per pass beyond the first pass's compulsory W (0 = the L2 kept everything)\n");
  std::printf("%-7s %9s %6s %12s %12s %12s %12s\n", "pattern", "W MiB", "xL2", "meas R", "pred R", "meas W", "pred W");
}

// A probe CSV (l2probe --csv) predicted again on the CPU with other L2 settings, and the summed
// error: how the model's sets and dirty limit were chosen (kernels/RESULTS.md).
static int probe_replay_main(const std::string& path, int sms, int blocks_per_sm, int partitions, std::uint32_t ways,
                             std::uint32_t dirty_ways, std::uint64_t dirty_at_start, std::uint32_t page_lines,
                             std::uint32_t copy_rank, std::uint32_t dirty_group) {
  CsvReader csv(path);
  std::ifstream& in = csv.in;
  const auto& head = csv.head;
  auto col = [&](const char* name) { return csv.column(name); };
  std::string line;
  const std::size_t c_p = col("pattern"), c_b = col("bytes"), c_l2 = col("l2_bytes"), c_n = col("passes"),
                    c_r = col("hbm_read"), c_w = col("hbm_written");
  print_probe_header();
  double error = 0;
  for (int n = 2; std::getline(in, line); ++n) {
    const auto f = flashsim::sim::csv_split(line);
    const std::string where = path + ":" + std::to_string(n);
    if (f.size() < head.size()) throw std::invalid_argument(where + ": too few fields");
    ProbePattern pattern;
    if (!parse_probe_pattern(f[c_p], &pattern)) throw std::invalid_argument(where + ": pattern '" + f[c_p] + "'");
    ProbeCase c;
    std::uint64_t l2 = 0;
    double mr = 0, mw = 0;
    try {
      c = ProbeCase{pattern, std::stoull(f[c_b]), std::stoi(f[c_n])};
      l2 = std::stoull(f[c_l2]);
      mr = std::stod(f[c_r]);
      mw = std::stod(f[c_w]);
    } catch (const std::exception&) {
      throw std::invalid_argument(where + ": a number does not parse");
    }
    const ProbeTraffic pred =
        probe_predicted(c, l2, sms, blocks_per_sm, partitions, ways, dirty_ways, dirty_at_start, page_lines, copy_rank,
                        dirty_group);
    error += print_probe_row(c.pattern, c.bytes, l2, c.passes, mr, mw, pred);
  }
  std::printf("summed |meas - pred|: %.1f MiB per pass (%d partition(s), %u ways, dirty limit %u over %u set(s), %llu B dirty "
              "at start, page lines %u, copy rank %u)\n",
              error, partitions, ways, dirty_ways, dirty_group, static_cast<unsigned long long>(dirty_at_start), page_lines,
              copy_rank);
  return 0;
}

// The L2 probes (kernels/l2_probe.h) on this GPU against the L2 model with the same grid: one row
// per pattern and buffer size, measured and predicted HBM bytes per pass.
static int probe_main(const std::string& patterns, const std::string& fractions, int passes, const std::string& csv) {
  std::vector<ProbePattern> pats;
  for (const auto& p : flashsim::sim::csv_split(patterns)) {
    ProbePattern pat;
    if (!parse_probe_pattern(p, &pat)) throw std::invalid_argument("--patterns: '" + p + "' is not reread, rmw or copy");
    pats.push_back(pat);
  }
  probe_sizes(fractions, 1 << 20);  // bad input is refused before looking for a GPU
  const DeviceInfo dev = device_info();
  if (!dev.have_device) {
    std::fprintf(stderr, "flashsim-gpu l2probe: no CUDA device: %s\n", dev.why.c_str());
    return 2;  // as compare: nothing was run
  }
  const auto sizes = probe_sizes(fractions, dev.l2_bytes);
  CUDA_CHECK(cudaSetDevice(0));
  HbmProfiler prof;
  std::string why;
  if (!prof.init(&why)) {
    std::fprintf(stderr, "flashsim-gpu l2probe: HBM counters unavailable: %s\n", why.c_str());
    return 1;
  }
  L2Flusher flusher(dev.l2_bytes);
  const int occ = probe_blocks_per_sm();
  const int grid = dev.sms * occ;
  // The write-back of a range with nothing dirty (a flush after a flush): subtracted, as compare does.
  const double baseline = measure_writeback(prof, flusher, "write-back baseline", [] {}, 0.0, &why).value_or(0.0);
  std::uint64_t max_bytes = 0;
  for (auto b : sizes) max_bytes = std::max(max_bytes, b);
  if (std::find(pats.begin(), pats.end(), ProbePattern::Copy) != pats.end()) max_bytes *= 2;  // its X and Y
  DevBuf buf(max_bytes), sink(sizeof(float));
  CUDA_CHECK(cudaMemset(buf.get(), 0, max_bytes));
  std::printf("%s: L2 %.1f MiB, %d SMs, %d blocks/SM of 256 threads, %d passes; model: %d partition(s), %u ways, "
              "dirty limit %u over %u set(s)\n",
              dev.name.c_str(), dev.l2_bytes / 1048576.0, dev.sms, occ, passes, dev.l2_partitions, dev.l2_ways,
              dev.l2_dirty_ways, dev.l2_dirty_group);
  print_probe_header();
  std::string rows = "pattern,bytes,l2_bytes,passes,hbm_read,hbm_written,writeback,pred_read,pred_written\n";
  for (auto pat : pats)
    for (auto bytes : sizes) {
      ProbeCase c{pat, bytes, passes};
      const bool writes = pat != ProbePattern::Reread;
      // After a flush the range runs every pass; a second, unmeasured run of the same passes, then
      // the write-back range catches the dirty lines the passes left in L2.
      auto m = prof.measure(std::string("probe ") + probe_name(pat), [&] { flusher.flush(); }, [&] {
        for (int p = 0; p < passes; ++p) probe_pass(pat, buf.get(), bytes, grid, sink.as<float>());
      }, &why);
      if (!m) throw std::runtime_error("probe not measured: " + why);
      double wb = 0;
      if (writes) {
        auto w = measure_writeback(prof, flusher, "probe write-back", [&] {
          for (int p = 0; p < passes; ++p) probe_pass(pat, buf.get(), bytes, grid, sink.as<float>());
        }, baseline, &why);
        if (!w) throw std::runtime_error("probe write-back not measured: " + why);
        wb = *w;
      }
      const ProbeTraffic pred =
          probe_predicted(c, dev.l2_bytes, dev.sms, occ, dev.l2_partitions, dev.l2_ways, dev.l2_dirty_ways,
                          static_cast<std::uint64_t>(baseline), dev.l2_page_lines, dev.l2_copy_rank, dev.l2_dirty_group);
      const double mr = m->dram_read_bytes, mw = m->dram_write_bytes + wb;
      print_probe_row(pat, bytes, dev.l2_bytes, passes, mr, mw, pred);
      char line[256];
      std::snprintf(line, sizeof line, "%s,%llu,%llu,%d,%.0f,%.0f,%.0f,%llu,%llu\n", probe_name(pat),
                    static_cast<unsigned long long>(bytes), static_cast<unsigned long long>(dev.l2_bytes), passes, mr,
                    mw, wb, static_cast<unsigned long long>(pred.read), static_cast<unsigned long long>(pred.written));
      rows += line;
    }
  if (!csv.empty() && !write_to(csv, [&](std::ostream& o) { o << rows; })) return 1;
  return 0;
}

// `traffic`: per-array bytes of our kernels' model beside the tile machine's count (no GPU).
static int traffic_main(const std::string& t_sched, const std::string& t_sizes) {
  std::vector<Spec> t_specs;
  try {
    const SizeSet ss = parse_sizes(t_sizes);
    check_named_schedules(t_sched, ss, {});
    t_specs = expand(parse_schedules(t_sched), ss, {}, {false, true});
  } catch (const std::exception& e) {
    std::fprintf(stderr, "flashsim-gpu: %s\n", e.what());
    return flashsim::cli::kExitBadInput;
  }
  try {
    for (const auto& s : t_specs) {
      std::vector<CountedArray> got;
      std::string why;
      auto c = counted(s, &got, &why);
      std::printf("%s %s %s%s\n", info(s.schedule).id, s.size_label().c_str(), dtype_name(s.dtype),
                  c ? "" : (" (counted: " + why + ")").c_str());
      std::printf("  %-10s %14s %14s %14s %14s\n", "array", "model R", "model W", "counted R", "counted W");
      auto model = model_traffic(s);
      for (const auto& m : model) {
        const CountedArray* hit = nullptr;
        for (const auto& g : got)
          if (g.name == m.name) hit = &g;
        std::printf("  %-10s %14llu %14llu %14s %14s%s\n", m.name.c_str(), (unsigned long long)m.read,
                    (unsigned long long)m.written, hit ? std::to_string(hit->read).c_str() : "-",
                    hit ? std::to_string(hit->written).c_str() : "-",
                    hit && (hit->read != m.read || hit->written != m.written) ? "  differs" : "");
      }
      for (const auto& g : got) {
        bool known = false;
        for (const auto& m : model) known = known || m.name == g.name;
        if (!known)
          std::printf("  %-10s %14s %14s %14llu %14llu  (tile machine only)\n", g.name.c_str(), "-", "-",
                      (unsigned long long)g.read, (unsigned long long)g.written);
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "flashsim-gpu: %s\n", e.what());
    return 1;
  }
  return 0;
}

// The options of `compare`.
struct CompareArgs {
  std::string schedules = "all", sizes = "small,large", dtypes, causal = "both", csv, json, writes = "one-range", gpu_preset;
  int repeats = 10, measurements = 1;
  bool no_profile = false, no_check = false;
  std::uint64_t seed = 0;
};

// compare's specs from its options, all parsed before the GPU is touched; throws on bad input.
static std::vector<Spec> compare_specs(const CompareArgs& a) {
  std::vector<Dtype> dts;
  if (!a.dtypes.empty())  // a blank --dtype is refused by CLI11 (refuse_blank_values)
    for (const auto& cur : flashsim::sim::csv_split(a.dtypes)) {
      if (cur.find_first_not_of(" \t") == std::string::npos)
        throw std::invalid_argument("--dtype: an empty item in '" + a.dtypes + "'");
      auto d = parse_dtype(cur);
      if (!d) throw std::invalid_argument("unknown dtype '" + cur + "'");
      dts.push_back(*d);
    }
  std::vector<bool> cm = a.causal == "no"    ? std::vector<bool>{false}
                         : a.causal == "yes" ? std::vector<bool>{true}
                                             : std::vector<bool>{false, true};
  const SizeSet ss = parse_sizes(a.sizes);
  check_named_schedules(a.schedules, ss, dts);  // attn-fp8 named at d != 128 or without fp8: refused, not dropped
  return expand(parse_schedules(a.schedules), ss, dts, cm);
}

// Measures every spec on the GPU and predicts its bytes and time. The L2 model of a large size takes
// CPU seconds: it runs on worker threads while the GPU measures the next rows (each prediction owns
// its machine; rows are not moved meanwhile). Prints the run's header first.
static std::vector<Row> measure_and_predict(const std::vector<Spec>& specs, const CompareArgs& a, const DeviceInfo& dev,
                                            const PresetPick& preset, std::string* prof_status) {
  RunOptions opt;
  opt.repeats = a.repeats;
  opt.profile = !a.no_profile;
  opt.check = !a.no_check;
  opt.predict = false;  // below, on worker threads
  opt.writes_one_range = a.writes == "one-range";
  opt.measurements = a.measurements;
  Runner runner(opt);
  *prof_status = runner.profiler_status();
  std::uint64_t seed = a.seed;
  if (seed == 0) seed = static_cast<std::uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
  std::printf("device: %s, %d SMs, L2 %.1f MB (pred: %d partition(s), %u ways, dirty limit %u a set over %u set(s), page "
              "lines %u, copy rank %u)\n",
              dev.name.c_str(), dev.sms, dev.l2_bytes / 1e6, dev.l2_partitions, dev.l2_ways, dev.l2_dirty_ways,
              dev.l2_dirty_group, dev.l2_page_lines, dev.l2_copy_rank);
  std::printf("profiler: %s\n", prof_status->c_str());
  std::printf("counted: %s\n", have_counted() ? "tile machine (sim/traffic.h)" : "n/a (flashsim_sim not built)");
  std::printf("time model: preset %s (%s)%s%s\n", preset.name.c_str(), a.gpu_preset.empty() ? "from the device name" : "--gpu-preset",
              preset.note.empty() ? "" : "; ", preset.note.c_str());
  std::printf("seed: %llu\n\n", static_cast<unsigned long long>(seed));
  std::fflush(stdout);
  std::vector<Row> rows;
  rows.reserve(specs.size());
  const std::size_t workers = std::clamp<std::size_t>(std::thread::hardware_concurrency(), 2, 9) - 1;
  std::deque<std::future<void>> pending;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const auto& s = specs[i];
    progress(i, specs.size(), std::string(info(s.schedule).id) + " " + s.size_label() + " " + dtype_name(s.dtype));
    rows.push_back(runner.run(s, seed + 1000003ull * i));
    if (pending.size() >= workers) {
      pending.front().get();
      pending.pop_front();
    }
    pending.push_back(std::async(std::launch::async, [&rows, &dev, &preset, i] {
      predict_row(rows[i], dev);
      predict_row_time(rows[i], preset.name);  // with the predicted HBM bytes
    }));
  }
  progress(specs.size(), specs.size(), "predicting");
  while (!pending.empty()) {
    pending.front().get();
    pending.pop_front();
  }
  progress(specs.size(), specs.size(), "done");
  return rows;
}

// The table, its summaries and column legend, the failed checks, and the CSV / JSON files.
// Returns whether every check passed and every file was written.
static bool report_compare(const std::vector<Row>& rows, const CompareArgs& a, const DeviceInfo& dev,
                           const PresetPick& preset, const std::string& prof_status) {
  print_table(std::cout, rows, static_cast<double>(dev.l2_bytes));
  const std::string expl = l2_explanation(rows, static_cast<double>(dev.l2_bytes));
  if (!expl.empty()) std::cout << expl << '\n';
  const std::string bound = prediction_summary(rows);
  if (!bound.empty()) std::cout << bound << '\n';
  const std::string time_bound = time_prediction_summary(rows);
  if (!time_bound.empty()) std::cout << time_bound << '\n';
  std::cout << "columns: R/W in MiB; counted = tile machine, min = each input once + each output once, HBM = "
               "dram__bytes_{read,write}.sum (writes include the write-back of lines left dirty in L2, measured over "
               "the flush after the range), exp = each small array once + streamed arrays as counted, "
               "L2 = lts__t_sectors_srcunit_tex_op_{read,write}.sum x 32 B; '!' = streaming run off exp by > 2%; pred ms = "
               "the time model on the " << preset.name << " preset (fast kernels: timed traces, sim/gpu_time.h; SIMT "
               "kernels: per-unit throughput, predict_time_simt) with the pred bytes at the sustained HBM bandwidth\n";
  bool ok = true;
  for (const auto& r : rows) {
    if (!r.ok()) {
      ok = false;
      std::cout << "FAIL " << info(r.spec.schedule).id << " " << r.spec.size_label() << " "
                << dtype_name(r.spec.dtype) << ": rel err " << r.rel_err << " > " << r.tol << " (" << r.note << ")\n";
    }
  }
  std::string device = dev.name + ", L2 " + std::to_string(dev.l2_bytes) + " B";
  if (!a.csv.empty() && !write_to(a.csv, [&](std::ostream& o) { write_csv(o, rows); })) ok = false;
  if (!a.json.empty() && !write_to(a.json, [&](std::ostream& o) { write_json(o, rows, device, prof_status); })) ok = false;
  return ok;
}

// `compare`: run the schedules at the sizes, measure, predict (bytes and time), print.
static int compare_main(const CompareArgs& a) {
  std::vector<Spec> specs;
  try {
    specs = compare_specs(a);
    if (!a.gpu_preset.empty()) gpu_preset_for("", a.gpu_preset);  // an unknown preset: bad input, before the GPU
  } catch (const std::exception& e) {
    std::fprintf(stderr, "flashsim-gpu: %s\n", e.what());
    return flashsim::cli::kExitBadInput;
  }
  if (specs.empty()) {
    std::fprintf(stderr, "flashsim-gpu: nothing to run (no size given for the chosen schedules, or none of them has a kernel for the chosen dtype and head dim)\n");
    return 1;
  }
  auto dev = device_info();
  if (!dev.have_device) {
    std::fprintf(stderr, "flashsim-gpu: no CUDA device (%s); nothing was run\n", dev.why.c_str());
    return 2;
  }
  const PresetPick preset = gpu_preset_for(dev.name, a.gpu_preset);
  std::vector<Row> rows;
  std::string prof_status;
  try {
    rows = measure_and_predict(specs, a, dev, preset, &prof_status);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "\nflashsim-gpu: %s\n", e.what());
    return 1;
  }
  return report_compare(rows, a, dev, preset, prof_status) ? 0 : 1;
}

namespace {

// The options of `flashsim-gpu predict` and `l2probe --from` (the L2 model's settings; Hopper's by default).
struct PredictArgs {
  std::string from, l2, dirty_start, preset;
  int sms = 132, partitions = 2;
  std::uint32_t ways = kHopperL2Ways, dirty = kHopperL2DirtyWays, group = kHopperL2DirtyGroup;
  std::uint32_t page = 0, rank = 0;  // the onset probes' choice, 16384 / 21, is not the default (RESULTS.md)
};

struct ProbeArgs {
  std::string patterns = "reread,rmw", fractions = "0.25,0.4,0.5,0.6,0.7,0.8,0.9,1.0,1.1,1.25,1.5,2.0", csv;
  int passes = 5;
  std::string from, dirty_start = "0";  // --from: no GPU, the CSV predicted again
  int sms = 132, blocks_per_sm = 8, partitions = 2;
  std::uint32_t ways = kHopperL2Ways, dirty = kHopperL2DirtyWays, group = kHopperL2DirtyGroup;
  std::uint32_t page = 0, rank = 0;
};

CLI::App* add_compare_command(CLI::App& app, CompareArgs& ca) {
  auto* cmp = app.add_subcommand("compare", "run schedules at sizes; print counted vs measured bytes");
  cmp->add_option("--schedules,-s", ca.schedules,
                  "comma list of schedules or groups (matmul, softmax, attn-fwd, attn-bwd, attention, all); attn-fp8 (FP8 forward, "
                  "d 128) is in no group but all: name it")
      ->capture_default_str();
  cmp->add_option("--sizes", ca.sizes,
                  "comma list of presets (tiny, small = inside L2, large = far beyond L2) or op:dims, e.g. "
                  "matmul:4096x4096x512, softmax:256x524288, attn-fwd:8x4096x64, attn-bwd:.., attn:..")
      ->capture_default_str();
  cmp->add_option("--dtype", ca.dtypes, "comma list of fp32, bf16, fp16, fp8 (fp16: attn-fa2-mma and bwd-mma only; fp8: attn-fp8 only; "
                  "default: matmul both, softmax fp32, attention bf16, attn-fp8 fp8)");
  cmp->add_option("--causal", ca.causal, "attention masks: no, yes or both")
      ->check(CLI::IsMember({"no", "yes", "both"}))
      ->capture_default_str();
  cmp->add_option("--repeats", ca.repeats, "timed repeats per run (median reported)")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  cmp->add_option("--measurements", ca.measurements,
                  "profiled measurements per run, each after its own L2 flush; the median is reported, the "
                  "smallest and largest in the CSV and JSON")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
  cmp->add_flag("--no-profile", ca.no_profile, "skip the CUPTI range profiler (times only)");
  cmp->add_option("--writes", ca.writes,
                  "how HBM writes are measured: one-range (the run and the L2 flushes after it in one range, less "
                  "the same range without the run) or split (the run's range plus a rerun's write-back, measured "
                  "apart: 2 MiB off either way; the method before 2026-11-25)")
      ->check(CLI::IsMember({"one-range", "split"}))
      ->capture_default_str();
  cmp->add_flag("--no-check", ca.no_check, "skip the CPU reference check");
  cmp->add_option("--seed", ca.seed, "random seed (default: from the clock, fresh each run)");
  cmp->add_option("--csv", ca.csv, "also write CSV to FILE ('-' for stdout)");
  cmp->add_option("--json", ca.json, "also write JSON to FILE ('-' for stdout)");
  cmp->add_option("--gpu-preset", ca.gpu_preset,
                  "the time model's GPU preset for the pred ms column (h100, h200; default: from the device name)");
  return cmp;
}

CLI::App* add_predict_command(CLI::App& app, PredictArgs& a) {
  auto* pred = app.add_subcommand(
      "predict", "re-predict the HBM bytes of a compare CSV's rows with the L2 model on the CPU (no GPU), against their measurement");
  pred->add_option("--from", a.from, "a flashsim-gpu compare CSV")->required();
  pred->add_option("--l2", a.l2, "the GPU's L2 size (e.g. 50MiB; H100 50 MiB, H200 60 MiB)")->required();
  pred->add_option("--sms", a.sms, "the GPU's SMs")->check(CLI::Range(1, 100000))->capture_default_str();
  pred->add_option("--l2-partitions", a.partitions, "L2 slices of the model (Hopper: 2)")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  pred->add_option("--dirty-at-start", a.dirty_start,
                   "dirty bytes in the L2 at each range's start (default: the CSV's dirty_at_start column, else 0), "
                   "e.g. 3MiB: the write-back baseline a compare run printed");
  pred->add_option("--l2-ways", a.ways, "lines per set (0: fully associative; Hopper: 32)")->capture_default_str();
  pred->add_option("--l2-dirty-ways", a.dirty,
                   "dirty lines a set keeps before writing its oldest back (0: no limit; Hopper: 16)")
      ->capture_default_str();
  pred->add_option("--l2-dirty-group", a.group,
                   "sets that share one dirty-line limit of this many times --l2-dirty-ways (Hopper: 4)")
      ->check(CLI::Range(1u, 1u << 20))
      ->capture_default_str();
  pred->add_option("--l2-page-lines", a.page, "lines of a page spread evenly over the sets (0: every line at random)")
      ->capture_default_str();
  pred->add_option("--gpu-preset", a.preset,
                   "the time model's preset for the pred ms column (h100, h200; default: h200 when --l2 is 60 MiB or more, else h100)");
  pred->add_option("--l2-copy-rank", a.rank,
                   "a far partition's copy enters its set this many lines above the LRU one (0: most recent)")
      ->capture_default_str();
  return pred;
}

CLI::App* add_probe_command(CLI::App& app, ProbeArgs& a) {
  auto* probe = app.add_subcommand(
      "l2probe", "sweep two access patterns (reread, read-modify-write) over buffer sizes around the L2: measured HBM bytes against the L2 model's");
  probe->add_option("--patterns", a.patterns, "comma list of reread, rmw, copy")->capture_default_str();
  probe->add_option("--fractions", a.fractions, "buffer sizes as fractions of the L2")->capture_default_str();
  probe->add_option("--passes", a.passes, "launches over the buffer in the measured range")
      ->check(CLI::Range(2, 100))
      ->capture_default_str();
  probe->add_option("--csv", a.csv, "also write CSV to FILE ('-' for stdout)");
  probe->add_option("--from", a.from, "no GPU: predict a probe CSV again with the settings below, and sum the error");
  probe->add_option("--sms", a.sms, "with --from: SMs")->check(CLI::Range(1, 100000))->capture_default_str();
  probe->add_option("--blocks-per-sm", a.blocks_per_sm, "with --from: the probe kernels' occupancy")
      ->check(CLI::Range(1, 1024))
      ->capture_default_str();
  probe->add_option("--l2-partitions", a.partitions, "with --from: L2 slices")->check(CLI::Range(1, 64))->capture_default_str();
  probe->add_option("--l2-ways", a.ways, "with --from: lines per set (0: fully associative)")->capture_default_str();
  probe->add_option("--l2-dirty-ways", a.dirty, "with --from: dirty lines a set keeps (0: no limit)")->capture_default_str();
  probe->add_option("--l2-dirty-group", a.group, "with --from: sets sharing one dirty-line limit")
      ->check(CLI::Range(1u, 1u << 20))
      ->capture_default_str();
  probe->add_option("--dirty-at-start", a.dirty_start, "with --from: dirty bytes in the L2 when each range starts")
      ->capture_default_str();
  probe->add_option("--l2-page-lines", a.page, "with --from: lines of a page spread evenly over the sets (0: at random)")
      ->capture_default_str();
  probe->add_option("--l2-copy-rank", a.rank, "with --from: far copies' entry rank above the LRU end (0: most recent)")
      ->capture_default_str();
  return probe;
}

CLI::App* add_ring_command(CLI::App& app, RingOptions& ring_opt) {
  auto* ring = app.add_subcommand(
      "ring", "ring attention (forward, or --backward) over --gpus P GPUs (NCCL) on the fast Hopper kernels, or the "
              "all-gather alternative: validate, counted vs posted vs NVLink bytes, overlap, scaling");
  // d, dtype, split and transport are checked by ring_main (a clear message and exit 2), not by CLI11
  ring->add_option("--gpus", ring_opt.gpus, "GPUs in the ring")->capture_default_str();
  ring->add_option("--n", ring_opt.n, "total sequence length (a multiple of --gpus, of 2 x --gpus with --split zigzag)")
      ->capture_default_str();
  ring->add_option("--heads", ring_opt.heads, "batch * heads")->capture_default_str();
  ring->add_option("--d", ring_opt.d, "head dimension: 64 or 128")->capture_default_str();
  ring->add_option("--dtype", ring_opt.dtype, "bf16 or fp16")->capture_default_str();
  ring->add_flag("--causal", ring_opt.causal, "causal mask");
  ring->add_option("--split", ring_opt.split,
                   "contiguous (GPU p: rows p n/P ..) or zigzag (2P chunks, GPU p: chunks p and 2P-1-p)")
      ->capture_default_str();
  ring->add_option("--transport", ring_opt.transport,
                   "auto (copy where the GPUs reach their ring neighbours by peer access, else nccl), nccl "
                   "(ncclSend/ncclRecv) or copy (cudaMemcpyPeerAsync: the copy engines, no SMs)")
      ->capture_default_str();
  ring->add_flag("--backward", ring_opt.backward,
                 "also the backward (dQ at home, dK/dV travel with their K/V block), validated and timed instead of the forward");
  ring->add_option("--method", ring_opt.method,
                   "ring (K/V pass around the ring, overlapped) or allgather (NCCL all-gather of K/V, then local "
                   "pairs; backward: reduce-scatter of dK/dV)")
      ->capture_default_str();
  ring->add_option("--streams", ring_opt.streams,
                   "compute streams per GPU: 2 (steps alternate, so a step's last wave overlaps the next step) or 1")
      ->capture_default_str();
  ring->add_option("--launch", ring_opt.launch,
                   "step (each step's pairs in one launch of the fast kernel: the zig-zag forward, with one merge, "
                   "and the backward under either split, its statistics prepared once) or pair (a launch per pair)")
      ->capture_default_str();
  ring->add_option("--nccl-ctas", ring_opt.nccl_ctas, "cap NCCL's CTAs (ncclConfig_t::maxCTAs); 0: NCCL's default")
      ->capture_default_str();
  ring->add_option("--repeats", ring_opt.repeats, "timed batches (median)")->check(CLI::Range(1, 1000))->capture_default_str();
  ring->add_option("--settle-ms", ring_opt.settle_ms,
                   "before each timed batch, run that mode untimed this long (ms) so that every GPU's clock "
                   "settles at the mode's power; 0: no settling")
      ->capture_default_str();
  ring->add_option("--baseline", ring_opt.baseline,
                   "where the one-GPU baseline runs: all (every GPU runs it at once, GPU 0's time counted, so that "
                   "every GPU enters the next batch with the same power history) or gpu0 (alone, the others idle)")
      ->capture_default_str();
  ring->add_option("--sm-clock", ring_opt.sm_clock_us,
                   "diagnosis: after every step and one-GPU run, one SM counts its clock over this many us of the "
                   "global timer; every timed batch prints each GPU's clock (SMCLOCK lines); 0: off")
      ->capture_default_str();
  ring->add_option("--seed", ring_opt.seed, "random seed")->capture_default_str();
  return ring;
}

int run_ring(const RingOptions& opt) {
#ifdef FLASHSIM_HAVE_NCCL
  return ring_main(opt);
#else
  (void)opt;
  std::fprintf(stderr, "flashsim-gpu ring: built without NCCL (libnccl not found in the CUDA toolkit)\n");
  return 2;
#endif
}

int run_probe(const ProbeArgs& a) {
  if (a.from.empty()) return probe_main(a.patterns, a.fractions, a.passes, a.csv);
  return probe_replay_main(a.from, a.sms, a.blocks_per_sm, a.partitions, a.ways, a.dirty,
                           flashsim::sim::parse_size(a.dirty_start), a.page, a.rank, a.group);
}

int run_predict(const PredictArgs& a) {
  const std::uint64_t l2 = flashsim::sim::parse_size(a.l2);
  const std::string preset = a.preset.empty() ? (l2 >= (60ull << 20) ? "h200" : "h100")
                                              : gpu_preset_for("", a.preset).name;  // throws on an unknown one
  return predict_main(a.from, l2, a.sms, a.partitions, a.ways, a.dirty,
                      a.dirty_start.empty() ? std::nullopt
                                            : std::optional<std::uint64_t>(flashsim::sim::parse_size(a.dirty_start)),
                      a.page, a.rank, a.group, preset);
}

int run_list() {
  for (const auto& s : all_schedules()) std::printf("%-15s %-22s v%d  %s\n", s.id, s.file, s.version, s.summary);
  std::printf("\nsize presets: tiny (sanitizer), small (inside L2), large (far beyond L2); or op:dims\n");
  std::printf("counted bytes: %s\n", have_counted() ? "tile machine linked (sim/traffic.h)" : "flashsim_sim not built");
  return 0;
}

}  // namespace

static int run_main(int argc, char** argv) {
  CLI::App app{"flashsim-gpu: run the flashsim schedules on a CUDA GPU and compare measured HBM traffic with "
               "the tile machine's count"};
  app.require_subcommand(1);

  auto* list = app.add_subcommand("list", "list the schedules and the size presets");
  auto* traffic = app.add_subcommand("traffic", "print per-array bytes: our kernels' model vs the tile machine (no GPU)");
  std::string t_sched = "all", t_sizes = "tiny";
  traffic->add_option("--schedules,-s", t_sched, "schedules or groups")->capture_default_str();
  traffic->add_option("--sizes", t_sizes, "sizes, as for compare")->capture_default_str();
  CompareArgs compare_args;
  add_compare_command(app, compare_args);
  PredictArgs predict_args;
  auto* pred = add_predict_command(app, predict_args);
  ProbeArgs probe_args;
  auto* probe = add_probe_command(app, probe_args);
  RingOptions ring_opt;
  auto* ring = add_ring_command(app, ring_opt);

  flashsim::cli::refuse_blank_values(app);  // after every option is registered
  if (const std::string why = flashsim::cli::unknown_command_error(app, argc, argv); !why.empty()) {
    std::fprintf(stderr, "flashsim-gpu: error: %s\n", why.c_str());
    return flashsim::cli::kExitBadInput;
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);  // prints the message, or the help
    return rc == 0 ? 0 : flashsim::cli::kExitBadInput;
  }
  if (ring->parsed()) return run_ring(ring_opt);
  if (probe->parsed()) return run_probe(probe_args);
  if (pred->parsed()) return run_predict(predict_args);
  if (list->parsed()) return run_list();
  if (traffic->parsed()) return traffic_main(t_sched, t_sizes);
  return compare_main(compare_args);
}

int main(int argc, char** argv) { return flashsim::guard_main("flashsim-gpu", [&] { return run_main(argc, argv); }); }
