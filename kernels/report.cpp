#include "kernels/report.h"

#include <cmath>
#include <cstdio>
#include <iomanip>
#include <sstream>

#include "sim/json_text.h"

namespace flashsim::gpu {

namespace {

std::string fmt(double v, int prec) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", prec, v);
  return buf;
}

std::string fmt_sci(double v) {
  if (!(v == v)) return "nan";
  if (std::isinf(v)) return "inf";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.1e", v);
  return buf;
}

bool ratio_ok(double r) { return r == r && !std::isinf(r); }

double ratio(std::optional<Bytes> a, std::optional<Bytes> b) {
  if (!a || !b || b->total() == 0) return NAN;
  return static_cast<double>(a->total()) / static_cast<double>(b->total());
}

std::string fmt_ratio(double r) { return r == r ? fmt(r, 3) : "-"; }

std::string u64(std::optional<Bytes> b, bool read) {
  if (!b) return "";
  return std::to_string(read ? b->read : b->written);
}

// "softmax-3pass 64x65536 fp32": how the lines under the table name a run.
std::string run_label(const Row& r) {
  return std::string(info(r.spec.schedule).id) + " " + r.spec.size_label() + " " + dtype_name(r.spec.dtype);
}
}  // namespace

std::string fmt_or_dash(std::optional<double> v, int prec) { return v && *v == *v ? fmt(*v, prec) : "-"; }

std::string fmt_mib(double bytes) { return fmt(bytes / (1024.0 * 1024.0), 1); }

std::string fmt_rw(std::optional<Bytes> b) {
  if (!b) return "-";
  return fmt_mib(static_cast<double>(b->read)) + "/" + fmt_mib(static_cast<double>(b->written));
}


double Row::gbps() const {
  if (time_ms <= 0) return 0;
  double bytes = measured ? static_cast<double>(measured->total()) : static_cast<double>(compulsory.total());
  return bytes / (time_ms * 1e-3) / 1e9;
}

double Row::tflops() const {
  if (time_ms <= 0) return 0;
  return flops(spec) / (time_ms * 1e-3) / 1e12;
}

bool Row::streams_beyond(double l2_bytes) const {
  auto arrays = model_traffic(spec);
  bool any = false;
  for (const auto& a : arrays)
    if (a.streamed) {
      if (static_cast<double>(a.size) < 2.0 * l2_bytes) return false;
      any = true;
    }
  return any;
}

std::string fmt_ratio_rw(std::optional<Bytes> measured, std::optional<Bytes> predicted) {
  if (!measured || !predicted) return "-";
  auto one = [](std::uint64_t m, std::uint64_t p) {
    if (p == 0) return std::string(m == 0 ? "1.00" : "inf");
    return fmt(static_cast<double>(m) / static_cast<double>(p), 2);
  };
  return one(measured->read, predicted->read) + "/" + one(measured->written, predicted->written);
}

void print_table(std::ostream& out, const std::vector<Row>& rows, double l2_bytes) {
  struct Col {
    const char* head;
    int width;
    bool left;
  };
  const std::vector<Col> cols = {
      {"schedule", 15, true},  {"size", 20, true},        {"dtype", 5, true},
      {"counted R/W MiB", 21, false}, {"min R/W MiB", 19, false}, {"HBM R/W MiB", 19, false},
      {"meas/cnt", 8, false},  {"meas/exp", 8, false},   {"pred R/W MiB", 19, false},
      {"meas/pred R/W", 13, false}, {"L2 R/W MiB", 19, false},
      {"time ms", 9, false},   {"pred ms", 9, false},    {"meas/pred", 9, false}, {"GB/s", 7, false},       {"TFLOP/s", 7, false},
      {"rel err", 7, false},   {"check", 5, true}};
  auto emit = [&](const std::vector<std::string>& cells) {
    std::ostringstream line;
    for (std::size_t i = 0; i < cols.size(); ++i) {
      if (i) line << ' ';
      if (cols[i].left) line << std::left; else line << std::right;
      line << std::setw(cols[i].width) << cells[i];
    }
    std::string s = line.str();
    while (!s.empty() && s.back() == ' ') s.pop_back();
    out << s << '\n';
  };
  std::vector<std::string> head;
  for (const auto& c : cols) head.push_back(c.head);
  emit(head);
  for (const auto& r : rows) {
    std::string check = !r.validated ? "-" : r.ok() ? "ok" : "FAIL";
    double me = ratio(r.measured, r.expected);
    if (r.measured && r.streams_beyond(l2_bytes) && !(std::fabs(me - 1.0) <= 0.02)) check += "!";
    emit({info(r.spec.schedule).id, r.spec.size_label(), dtype_name(r.spec.dtype), fmt_rw(r.counted),
          fmt_rw(r.compulsory), fmt_rw(r.measured), fmt_ratio(ratio(r.measured, r.counted)), fmt_ratio(me),
          fmt_rw(r.predicted), fmt_ratio_rw(r.measured, r.predicted), fmt_rw(r.l2), fmt(r.time_ms, 3),
          r.pred_ms ? fmt(*r.pred_ms, 3) : "-", fmt_or_dash(time_ratio(r.time_ms, r.pred_ms), 2), fmt(r.gbps(), 0), r.tflops() > 0 ? fmt(r.tflops(), 2) : "-",
          r.validated ? fmt_sci(r.rel_err) : "-", check});
  }
  // With several measurements a run, the spread behind each median: it says which meas/pred
  // figures could move between calls.
  for (const auto& r : rows) {
    if (r.measurements < 2 || !r.measured_min || !r.measured_max) continue;
    out << "  " << run_label(r) << ": "
        << r.measurements << " measurements, HBM read " << fmt(r.measured_min->read / 1048576.0, 2) << '-'
        << fmt(r.measured_max->read / 1048576.0, 2) << " MiB, written " << fmt(r.measured_min->written / 1048576.0, 2)
        << '-' << fmt(r.measured_max->written / 1048576.0, 2) << " MiB\n";
  }
}

bool prediction_within_bound(const Bytes& measured, const Bytes& predicted) {
  auto close = [](std::uint64_t m, std::uint64_t p) {
    return m < (std::uint64_t{1} << 20) ||
           (p > 0 && std::fabs(static_cast<double>(m) / static_cast<double>(p) - 1.0) <= 0.10);
  };
  return close(measured.read, predicted.read) && close(measured.written, predicted.written);
}

std::string prediction_summary(const std::vector<Row>& rows) {
  int runs = 0, within = 0;
  std::vector<std::string> outside;
  for (const auto& r : rows) {
    if (!r.measured || !r.predicted) continue;
    ++runs;
    if (prediction_within_bound(*r.measured, *r.predicted)) {
      ++within;
      continue;
    }
    outside.push_back(run_label(r) + " (" + fmt_ratio_rw(r.measured, r.predicted) + ")");
  }
  if (runs == 0) return "";
  std::ostringstream o;
  o << "meas/pred within 10 % (reads and writes; figures under 1 MiB count as within): " << within << " of " << runs
    << " run(s)";
  if (!outside.empty()) {
    o << "; outside:";
    for (std::size_t k = 0; k < outside.size(); ++k) o << (k ? ", " : " ") << outside[k];
  }
  return o.str();
}

void predict_row_time(Row& row, const std::string& preset) {
  std::string why;
  std::optional<double> hbm;
  if (row.predicted) hbm = static_cast<double>(row.predicted->total());
  const auto t = predict_run_time(row.spec, preset, hbm, &why);
  if (!t) {
    row.note += "; no time prediction: " + why;
    return;
  }
  row.pred_ms = t->ms;
  row.pred_bound = t->bound;
}

double time_ratio(double meas_ms, std::optional<double> pred_ms) {
  if (!pred_ms || !(*pred_ms > 0) || !(meas_ms > 0)) return NAN;
  return meas_ms / *pred_ms;
}

double cycle_ratio(double meas_ms, double meas_mhz, std::optional<double> pred_ms, double preset_ghz) {
  if (!(meas_mhz > 0) || !(preset_ghz > 0)) return NAN;
  return time_ratio(meas_ms, pred_ms) * meas_mhz / (preset_ghz * 1e3);
}

bool time_within_bound(double meas_ms, double pred_ms) {
  const double r = time_ratio(meas_ms, pred_ms);
  return r == r && std::fabs(r - 1.0) <= 0.15;
}

std::string time_summary(const std::vector<TimeCheck>& rows) {
  int bounded = 0, bounded_in = 0, all = 0, all_in = 0;
  std::vector<std::string> outside;
  for (const auto& r : rows) {
    const double q = time_ratio(r.meas_ms, r.pred_ms);
    if (!(q == q)) continue;
    const bool in = time_within_bound(r.meas_ms, *r.pred_ms);
    ++all;
    all_in += in ? 1 : 0;
    if (!r.bound_row) continue;
    ++bounded;
    if (in) ++bounded_in;
    else outside.push_back(r.label + " (" + fmt(q, 2) + ")");
  }
  if (all == 0) return "";
  std::ostringstream o;
  o << "time meas/pred within 15 %: " << bounded_in << " of " << bounded
    << " attention/matmul row(s) at N >= 4096 (matmul: m and n >= 4096); all rows: " << all_in << " of " << all;
  if (!outside.empty()) {
    o << "; outside:";
    for (std::size_t k = 0; k < outside.size(); ++k) o << (k ? ", " : " ") << outside[k];
  }
  return o.str();
}

std::string time_prediction_summary(const std::vector<Row>& rows) {
  std::vector<TimeCheck> checks;
  for (const auto& r : rows) checks.push_back(TimeCheck{run_label(r), time_bound_row(r.spec), r.time_ms, r.pred_ms});
  return time_summary(checks);
}

std::string l2_explanation(const std::vector<Row>& rows, double l2_bytes) {
  std::vector<std::string> names;
  for (const auto& r : rows) {
    if (!r.measured) continue;
    const Bytes ref = r.counted ? *r.counted : r.model;
    if (static_cast<double>(r.measured->total()) < 0.98 * static_cast<double>(ref.total()))
      names.push_back(std::string(info(r.spec.schedule).id) + " " + r.spec.size_label());
  }
  if (names.empty()) return "";
  std::ostringstream o;
  o << "measured < " << (rows.front().counted ? "counted" : "modelled") << " for " << names.size()
    << " run(s) (e.g. " << names.front() << "): the tile machine sends every tile load to DRAM, but the GPU's "
    << fmt(l2_bytes / 1e6, 0)
    << " MB L2 served the re-reads (A/B and K/V panels shared by neighbouring blocks, and whole passes over data "
       "that fit in L2); meas/exp compares with each small array read once.";
  return o.str();
}

void write_csv(std::ostream& out, const std::vector<Row>& rows) {
  out << "schedule,file,version,size,dtype,causal,counted_read,counted_written,compulsory_read,compulsory_written,"
         "model_read,model_written,expected_read,expected_written,hbm_read,hbm_written,l2_read,l2_written,"
         "l2_red,hbm_writeback,time_ms,profiled_time_ms,gbps,tflops,rel_err,tolerance,ok,predicted_read,"
         "predicted_written,blocks_per_sm,dirty_at_start,writes_measured,attn_tiles,measurements,hbm_read_min,"
         "hbm_read_max,hbm_written_min,hbm_written_max,pred_ms,time_meas_over_pred,pred_bound\n";
  for (const auto& r : rows) {
    const auto& in = info(r.spec.schedule);
    out << in.id << ',' << in.file << ',' << in.version << ',' << '"' << r.spec.size_label() << '"' << ','
        << dtype_name(r.spec.dtype) << ',' << (r.spec.causal ? 1 : 0) << ',' << u64(r.counted, true) << ','
        << u64(r.counted, false) << ',' << r.compulsory.read << ',' << r.compulsory.written << ','
        << r.model.read << ',' << r.model.written << ',' << r.expected.read << ',' << r.expected.written << ','
        << u64(r.measured, true) << ',' << u64(r.measured, false) << ',' << u64(r.l2, true) << ','
        << u64(r.l2, false) << ',' << (r.l2_red_bytes ? fmt(*r.l2_red_bytes, 0) : "") << ','
        << (r.writeback_bytes ? fmt(*r.writeback_bytes, 0) : "") << ',' << fmt(r.time_ms, 5) << ',' << (r.profiled_time_ms ? fmt(*r.profiled_time_ms, 5) : "") << ','
        << fmt(r.gbps(), 2) << ',' << fmt(r.tflops(), 4) << ',' << (r.validated ? fmt_sci(r.rel_err) : "") << ','
        << r.tol << ',' << (r.ok() ? 1 : 0) << ',' << u64(r.predicted, true) << ',' << u64(r.predicted, false) << ','
        << r.blocks_per_sm << ',' << fmt(r.dirty_at_start_bytes, 0) << ','
        << (r.measured ? (r.writes_one_range ? "one-range" : "split") : "") << ',' << attn_tiles_label(r.spec) << ','
        << (r.measurements ? std::to_string(r.measurements) : "") << ',' << u64(r.measured_min, true) << ','
        << u64(r.measured_max, true) << ',' << u64(r.measured_min, false) << ',' << u64(r.measured_max, false) << ','
        << (r.pred_ms ? fmt(*r.pred_ms, 5) : "") << ',' << (ratio_ok(time_ratio(r.time_ms, r.pred_ms)) ? fmt(time_ratio(r.time_ms, r.pred_ms), 4) : "")
        << ',' << r.pred_bound << '\n';
  }
}

void write_json(std::ostream& out, const std::vector<Row>& rows, const std::string& device,
                const std::string& profiler_status) {
  auto bytes = [](std::optional<Bytes> b) -> std::string {
    if (!b) return "null";
    return "{\"read\": " + std::to_string(b->read) + ", \"written\": " + std::to_string(b->written) + "}";
  };
  auto num = [](double v) -> std::string {
    if (!(v == v) || std::isinf(v)) return "null";
    std::ostringstream o;
    o << std::setprecision(10) << v;
    return o.str();
  };
  out << "{\n  \"device\": " << flashsim::sim::json_string(device) << ",\n  \"profiler\": " << flashsim::sim::json_string(profiler_status)
      << ",\n  \"runs\": [";
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& r = rows[i];
    const auto& in = info(r.spec.schedule);
    const std::string tiles = attn_tiles_label(r.spec);
    out << (i ? "," : "") << "\n    {\"schedule\": \"" << in.id << "\", \"file\": \"" << in.file
        << "\", \"version\": " << in.version << ", \"op\": \"" << op_name(in.op) << "\", \"size\": "
        << flashsim::sim::json_string(r.spec.size_label()) << ", \"dtype\": \"" << dtype_name(r.spec.dtype)
        << "\", \"causal\": " << (r.spec.causal ? "true" : "false") << ",\n     \"counted\": " << bytes(r.counted)
        << ", \"compulsory\": " << bytes(r.compulsory) << ", \"model\": " << bytes(r.model)
        << ", \"expected\": " << bytes(r.expected) << ", \"predicted\": " << bytes(r.predicted)
        << ", \"blocks_per_sm\": " << r.blocks_per_sm << ", \"dirty_at_start\": " << num(r.dirty_at_start_bytes)
        << ",\n     \"hbm\": " << bytes(r.measured)
        << ", \"l2\": " << bytes(r.l2) << ", \"l2_red\": " << (r.l2_red_bytes ? num(*r.l2_red_bytes) : "null")
        << ", \"hbm_writeback\": " << (r.writeback_bytes ? num(*r.writeback_bytes) : "null")
        << ", \"writes_measured\": " << (r.measured ? (r.writes_one_range ? "\"one-range\"" : "\"split\"") : "null")
        << ", \"attn_tiles\": " << (tiles.empty() ? "null" : flashsim::sim::json_string(tiles))
        << ", \"measurements\": " << r.measurements << ", \"hbm_min\": " << bytes(r.measured_min)
        << ", \"hbm_max\": " << bytes(r.measured_max)
        << ",\n     \"time_ms\": " << num(r.time_ms)
        << ", \"pred_ms\": " << (r.pred_ms ? num(*r.pred_ms) : "null")
        << ", \"time_meas_over_pred\": " << num(time_ratio(r.time_ms, r.pred_ms))
        << ", \"pred_bound\": " << (r.pred_bound.empty() ? "null" : flashsim::sim::json_string(r.pred_bound))
        << ", \"profiled_time_ms\": " << (r.profiled_time_ms ? num(*r.profiled_time_ms) : "null")
        << ", \"gbps\": " << num(r.gbps()) << ", \"tflops\": " << num(r.tflops())
        << ", \"rel_err\": " << (r.validated ? num(r.rel_err) : "null") << ", \"tolerance\": " << num(r.tol)
        << ", \"ok\": " << (r.ok() ? "true" : "false") << ", \"note\": " << flashsim::sim::json_string(r.note) << "}";
  }
  out << "\n  ]\n}\n";
}

}  // namespace flashsim::gpu
