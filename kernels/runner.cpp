#include "kernels/runner.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>

namespace flashsim::gpu {

namespace {
double median(std::vector<double> v) {  // v not empty
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
}  // namespace

Runner::Runner(const RunOptions& opt) : opt_(opt), dev_(device_info()) {
  if (!dev_.have_device) throw std::runtime_error("no CUDA device: " + dev_.why);
  CUDA_CHECK(cudaSetDevice(0));
  flusher_ = std::make_unique<L2Flusher>(dev_.l2_bytes);
  if (opt_.profile) {
    std::string why;
    if (prof_.init(&why)) {
      prof_status_ = "CUPTI range profiler (" + std::to_string(prof_.passes()) + " pass(es) per range)";
      // A flush after a flush: what the profiler's range shows when no kernel left anything dirty.
      // The median of three, as it moves by up to 1 MiB from one range to the next.
      std::vector<double> bases;
      for (int k = 0; k < 3; ++k)
        if (auto b = measure_writeback(prof_, *flusher_, "write-back baseline", [] {}, 0.0, &why)) bases.push_back(*b);
      std::sort(bases.begin(), bases.end());
      std::optional<double> base;
      if (!bases.empty()) base = bases[bases.size() / 2];
      if (base) {
        writeback_baseline_ = *base;
        char buf[96];
        std::snprintf(buf, sizeof buf, "; write-back baseline %.2f MiB (subtracted)", writeback_baseline_ / 1048576.0);
        prof_status_ += buf;
      }
    } else {
      prof_status_ = "HBM counters unavailable: " + why;
    }
  } else {
    prof_status_ = "profiling disabled (--no-profile)";
  }
}

Row Runner::run(const Spec& s, std::uint64_t seed) {
  Row row;
  row.spec = s;
  row.compulsory = compulsory(s);
  auto arrays = model_traffic(s);
  row.model = model_total(arrays);
  row.expected = expected_hbm(arrays);
  row.counted = counted(s);
  row.tol = tolerance(s);

  auto w = make_workload(s);
  w->setup(seed);
  // 1. validation run on poisoned outputs
  w->poison_outputs();
  reset_occupancy();
  w->run(0);
  CUDA_CHECK(cudaDeviceSynchronize());
  if (opt_.check) {
    row.rel_err = w->check(&row.note);
    row.validated = true;
  }
  // 2. timing: warm-up, then the median of `repeats` event-timed runs over rotating input copies
  w->make_sets(rotation_sets(w->input_bytes(), dev_.l2_bytes));
  for (int i = 0; i < opt_.warmup; ++i) w->run(i % w->sets());
  CUDA_CHECK(cudaDeviceSynchronize());
  const int reps = std::max(1, opt_.repeats);
  std::vector<cudaEvent_t> ev(2 * reps);
  for (auto& e : ev) CUDA_CHECK(cudaEventCreate(&e));
  for (int r = 0; r < reps; ++r) {
    CUDA_CHECK(cudaEventRecord(ev[2 * r]));
    w->run(r % w->sets());
    CUDA_CHECK(cudaEventRecord(ev[2 * r + 1]));
  }
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<float> times(reps);
  for (int r = 0; r < reps; ++r) CUDA_CHECK(cudaEventElapsedTime(&times[r], ev[2 * r], ev[2 * r + 1]));
  for (auto& e : ev) CUDA_CHECK(cudaEventDestroy(e));
  row.time_ms = median(std::vector<double>(times.begin(), times.end()));
  if (w->sets() > 1) row.note += "; timed over " + std::to_string(w->sets()) + " rotating input sets";
  w->make_sets(1);
  // 3. profiled ranges on set 0, each after an L2 flush (the flush is outside the range), then the
  //    write-back of its dirty lines; with several, the median of each figure
  if (prof_.ready()) {
    const std::string name = std::string(info(s.schedule).id) + " " + s.size_label();
    const int n = std::max(1, opt_.measurements);
    std::vector<double> reads, writes;
    for (int k = 0; k < n; ++k) {
      std::string why;
      auto m = prof_.measure(name, [&] { flusher_->flush(); }, [&] { w->run(0); }, &why);
      if (!m) {
        row.note += "; profiling failed: " + why;
        break;
      }
      std::optional<double> written;  // every byte the run wrote to HBM, during its range or after
      if (opt_.writes_one_range) {
        // The run and the flushes that push out what it left dirty, in one range, so that nothing
        // reaches HBM unseen between them; less the same range without the run (the baseline).
        auto whole = prof_.measure(name + " and its write-back", [&] { flusher_->flush(); },
                                   [&] {
                                     w->run(0);
                                     flusher_->flush();
                                     flusher_->flush();
                                   },
                                   &why);
        if (whole) written = std::max(m->dram_write_bytes, whole->dram_write_bytes - writeback_baseline_);
      } else {
        // The same run again, unmeasured, then the flush that evicts what it left dirty in L2: that
        // flush's HBM writes are the range's output still on its way to HBM when the range ended.
        auto wb = measure_writeback(prof_, *flusher_, "write-back after " + name, [&] { w->run(0); }, writeback_baseline_, &why);
        if (wb) written = m->dram_write_bytes + *wb;
      }
      if (!written) row.note += "; write-back not measured: " + why;
      reads.push_back(m->dram_read_bytes);
      writes.push_back(written.value_or(m->dram_write_bytes));
      if (k == 0) {  // the L2-side figures and the time: the first range's
        row.writes_one_range = opt_.writes_one_range;
        if (written) row.writeback_bytes = *written - m->dram_write_bytes;
        row.l2 = Bytes{static_cast<std::uint64_t>(m->l2_read_sectors * 32 + 0.5),
                       static_cast<std::uint64_t>(m->l2_write_sectors * 32 + 0.5)};
        row.l2_red_bytes = m->l2_red_sectors * 32;
        row.profiled_time_ms = m->gpu_time_ns * 1e-6;
      }
    }
    if (!reads.empty()) {
      auto to_bytes = [](double r, double wr) {
        return Bytes{static_cast<std::uint64_t>(r + 0.5), static_cast<std::uint64_t>(wr + 0.5)};
      };
      row.measured = to_bytes(median(reads), median(writes));
      if (n > 1) {
        row.measurements = static_cast<int>(reads.size());
        row.measured_min = to_bytes(*std::min_element(reads.begin(), reads.end()), *std::min_element(writes.begin(), writes.end()));
        row.measured_max = to_bytes(*std::max_element(reads.begin(), reads.end()), *std::max_element(writes.begin(), writes.end()));
      }
    }
  }
  CUDA_CHECK(cudaDeviceSynchronize());
  row.blocks_per_sm = recorded_occupancy();
  if (row.blocks_per_sm > 0) {
    row.dirty_at_start_bytes = prof_.ready() ? writeback_baseline_ : 0.0;
    if (opt_.predict) predict_row(row, dev_);
  }
  return row;
}

void predict_row(Row& row, const DeviceInfo& dev) {
  if (row.blocks_per_sm <= 0) return;
  std::string why;
  row.predicted = predicted(row.spec, dev.l2_bytes, dev.sms, row.blocks_per_sm, nullptr, &why, dev.l2_partitions,
                            dev.l2_ways, dev.l2_dirty_ways, static_cast<std::uint64_t>(row.dirty_at_start_bytes),
                            dev.l2_page_lines, dev.l2_copy_rank, !row.writes_one_range, dev.l2_dirty_group);
  if (!row.predicted) row.note += "; no prediction: " + why;
}

std::optional<double> measure_writeback(HbmProfiler& prof, L2Flusher& flusher, const std::string& name,
                                        const std::function<void()>& work, double baseline, std::string* why) {
  auto m = prof.measure(name,
                        [&] {
                          flusher.flush();
                          work();
                        },
                        [&] {
                          flusher.flush();
                          flusher.flush();
                        },
                        why);
  if (!m) return std::nullopt;
  return std::max(0.0, m->dram_write_bytes - baseline);
}

int dev_main(Op op, int argc, char** argv) {
  int version = 0;
  std::string sizes = "small";
  if (argc > 1) version = std::atoi(argv[1]);
  if (argc > 2) {
    sizes.clear();
    for (int i = 2; i < argc; ++i) sizes += (i > 2 ? "," : "") + std::string(argv[i]);
  }
  auto dev = device_info();
  if (!dev.have_device) {
    std::fprintf(stderr, "no CUDA device (%s)\n", dev.why.c_str());
    return 2;
  }
  try {
    std::vector<Schedule> scheds;
    for (const auto& i : all_schedules())
      if (i.op == op && (version == 0 || i.version == version)) scheds.push_back(i.schedule);
    if (scheds.empty()) {
      std::fprintf(stderr, "no version %d for %s\n", version, op_name(op));
      return 1;
    }
    RunOptions opt;
    opt.profile = false;
    Runner runner(opt);
    std::printf("device: %s, L2 %.0f MB\n", dev.name.c_str(), dev.l2_bytes / 1e6);
    const auto seed = static_cast<std::uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
    bool all_ok = true;
    int idx = 0;
    for (const auto& spec : expand(scheds, parse_sizes(sizes), {}, {false, true})) {
      Row r = runner.run(spec, seed + 7919ull * idx++);
      const auto& in = info(spec.schedule);
      std::printf("version %d (%s) %s %-20s | time %9.4f ms | %7.1f GB/s | %6.2f TFLOP/s | rel err %.1e (tol %.1e) %s\n",
                  in.version, in.id, dtype_name(spec.dtype), spec.size_label().c_str(), r.time_ms, r.gbps(),
                  r.tflops(), r.rel_err, r.tol, r.ok() ? "ok" : "FAIL");
      all_ok = all_ok && r.ok();
    }
    return all_ok ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}

}  // namespace flashsim::gpu
