#include "kernels/spec.h"

#include "kernels/fp8_ref.h"
#include "kernels/launch_order.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cmath>
#include <sstream>
#include <stdexcept>

#ifdef FLASHSIM_HAVE_SIM
#include "sim/gpu_time.h"
#include "sim/traffic.h"
#endif

namespace flashsim::gpu {

namespace {

const std::vector<ScheduleInfo> kSchedules = {
    {Schedule::MatmulInner, Op::Matmul, "matmul-inner", "matmul.cu", 1,
     "output-stationary: C tile in registers, A and B panels streamed over k"},
    {Schedule::MatmulOuter, Op::Matmul, "matmul-outer", "matmul.cu", 2,
     "outer product: one launch per k-step, C tiles read from and written back to HBM"},
    {Schedule::SoftmaxThree, Op::Softmax, "softmax-3pass", "softmax.cu", 1,
     "three passes over the row: max, sum of exp, normalize"},
    {Schedule::SoftmaxOnline, Op::Softmax, "softmax-online", "softmax.cu", 2,
     "online (max, sum) pass, then normalize: two passes"},
    {Schedule::AttnNaive, Op::AttnFwd, "attn-naive", "attention_forward.cu", 1,
     "three kernels: S = QK^T and P = softmax(S) in HBM, O = PV"},
    {Schedule::AttnFA1, Op::AttnFwd, "attn-fa1", "attention_forward.cu", 2,
     "FlashAttention-1 order: KV-block outer loop, O/m/l re-read and re-written per KV block"},
    {Schedule::AttnFA2, Op::AttnFwd, "attn-fa2", "attention_forward.cu", 3,
     "FlashAttention-2 order: Q-block outer loop, O and logsumexp written once"},
    {Schedule::BwdTwoPass, Op::AttnBwd, "bwd-twopass", "attention_backward.cu", 1,
     "D = rowsum(dO*O), then a dQ kernel and a dK/dV kernel, each recomputing P"},
    {Schedule::BwdAtomic, Op::AttnBwd, "bwd-atomic", "attention_backward.cu", 2,
     "D, then one dK/dV kernel per KV block with atomic fp32 dQ accumulation"},
    {Schedule::SoftmaxFast, Op::Softmax, "softmax-fast", "softmax.cu", 3,
     "online softmax (two passes) with 16-byte loads, 16384-column chunks"},
    {Schedule::AttnFA2Mma, Op::AttnFwd, "attn-fa2-mma", "attention_forward.cu", 6,
     "FlashAttention-2 order on Hopper tensor cores (wgmma, TMA): d 64 v5, 64-row Q tiles; d 128 v6, warp-specialized, 128-row Q tiles"},
    {Schedule::BwdMma, Op::AttnBwd, "bwd-mma", "attention_backward.cu", 7,
     "FlashAttention-2 backward on Hopper tensor cores (wgmma, TMA), warp-specialized: dK/dV per 128-key tile, fp32 dQ added by bulk reductions; d 128 v7, the consumers take turns at dQ"},
    {Schedule::AttnFP8, Op::AttnFwd, "attn-fp8", "attention_fp8.cu", 1,
     "FlashAttention-2 order on Hopper FP8 tensor cores: e4m3 Q, K, V^T (quantized in setup, not timed), O bf16; d 128, 128x128 tiles, persistent, causal tiles paired"},
};

std::string trim(const std::string& s) {
  auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  auto e = s.find_last_not_of(" \t");
  return s.substr(b, e - b + 1);
}

// The items of a list (`sep` ','), or the dimensions of a size ('x'), trimmed. An item with
// nothing in it (`small,,large`, `small,`, `4x x64`) is refused, not dropped: a blank value is bad
// input (issue 35). An empty or blank `s` gives no items, which the callers refuse by name.
std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  if (trim(s).empty()) return out;
  for (std::size_t pos = 0;;) {
    const std::size_t end = s.find(sep, pos);
    std::string cur = trim(s.substr(pos, end == std::string::npos ? std::string::npos : end - pos));
    if (cur.empty()) throw std::invalid_argument("an empty item in '" + s + "'");
    out.push_back(std::move(cur));
    if (end == std::string::npos) break;
    pos = end + 1;
  }
  return out;
}

std::vector<std::int64_t> parse_dims(const std::string& s, std::size_t want) {
  std::vector<std::int64_t> dims;
  for (const auto& p : split(s, 'x')) {
    std::size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(p, &used);
    } catch (const std::exception&) {
      throw std::invalid_argument("bad dimension '" + p + "' in '" + s + "'");
    }
    if (used != p.size() || v <= 0) throw std::invalid_argument("bad dimension '" + p + "' in '" + s + "'");
    dims.push_back(v);
  }
  if (dims.size() != want)
    throw std::invalid_argument("'" + s + "' needs " + std::to_string(want) + " dimensions");
  return dims;
}

std::uint64_t u(std::int64_t v) { return static_cast<std::uint64_t>(v); }

}  // namespace

const std::vector<ScheduleInfo>& all_schedules() { return kSchedules; }

const ScheduleInfo& info(Schedule s) {
  for (const auto& i : kSchedules)
    if (i.schedule == s) return i;
  throw std::logic_error("unknown schedule");
}

const char* op_name(Op op) {
  switch (op) {
    case Op::Matmul: return "matmul";
    case Op::Softmax: return "softmax";
    case Op::AttnFwd: return "attn-fwd";
    case Op::AttnBwd: return "attn-bwd";
  }
  return "?";
}

const char* dtype_name(Dtype d) {
  return d == Dtype::F32 ? "fp32" : d == Dtype::BF16 ? "bf16" : d == Dtype::F16 ? "fp16" : "fp8";
}
int dtype_bytes(Dtype d) { return d == Dtype::F32 ? 4 : d == Dtype::E4M3 ? 1 : 2; }

std::optional<Dtype> parse_dtype(const std::string& s) {
  if (s == "fp32" || s == "f32" || s == "float") return Dtype::F32;
  if (s == "bf16") return Dtype::BF16;
  if (s == "fp16" || s == "f16" || s == "half") return Dtype::F16;
  if (s == "fp8" || s == "e4m3") return Dtype::E4M3;
  return std::nullopt;
}

std::optional<std::string> unsupported(Schedule s, Dtype dt, std::int64_t d) {
  const Op op = info(s).op;
  if (s == Schedule::AttnFP8) {
    if (dt != Dtype::E4M3) return std::string("attn-fp8 runs fp8 (e4m3) only");
    if (d != 128) return std::string("attn-fp8 is built for d = 128 only");
    return std::nullopt;
  }
  if (dt == Dtype::E4M3) return std::string(info(s).id) + " does not run in fp8 (attn-fp8 alone does)";
  if (s == Schedule::AttnFA2Mma || s == Schedule::BwdMma) {
    if (dt == Dtype::F32) return std::string(info(s).id) + " runs bf16 and fp16 only";
    if (d != 64 && d != 128) return std::string(info(s).id) + " is built for d = 64 and 128";
    return std::nullopt;
  }
  if (dt == Dtype::F16) return std::string(info(s).id) + " does not run in fp16";
  if (s == Schedule::SoftmaxFast && dt != Dtype::F32) return std::string("softmax-fast runs fp32 only");
  if ((op == Op::AttnFwd || op == Op::AttnBwd) && d != 64)
    return std::string(info(s).id) + " is built for d = 64 only";
  return std::nullopt;
}

std::vector<Schedule> parse_schedules(const std::string& list) {
  std::vector<bool> want(kSchedules.size(), false);
  auto names = split(list, ',');
  if (names.empty()) throw std::invalid_argument("empty schedule list");
  for (const auto& name : names) {
    bool found = false;
    for (std::size_t i = 0; i < kSchedules.size(); ++i) {
      const auto& s = kSchedules[i];
      // attn-fp8 only by name or `all`: attn-fwd / attention keep their bf16 / fp16 / fp32 members
      const bool by_op = s.schedule != Schedule::AttnFP8 &&
                         (name == op_name(s.op) || (name == "attention" && (s.op == Op::AttnFwd || s.op == Op::AttnBwd)));
      bool group = name == "all" || by_op;
      if (group || name == s.id) {
        want[i] = true;
        found = true;
      }
    }
    if (!found) throw std::invalid_argument("unknown schedule '" + name + "'");
  }
  std::vector<Schedule> out;
  for (std::size_t i = 0; i < kSchedules.size(); ++i)
    if (want[i]) out.push_back(kSchedules[i].schedule);
  return out;
}

std::string Spec::size_label() const {
  std::ostringstream o;
  switch (op()) {
    case Op::Matmul: o << m << "x" << n << "x" << k; break;
    case Op::Softmax: o << rows << "x" << cols; break;
    case Op::AttnFwd:
    case Op::AttnBwd: o << bh << "x" << seq << "x" << d << (causal ? " causal" : ""); break;
  }
  return o.str();
}

void apply_kernel_tiles(Spec& s) {
  switch (s.schedule) {
    case Schedule::MatmulInner: s.bm = 64; s.bn = 64; s.bk = 16; break;
    case Schedule::MatmulOuter: s.bm = 256; s.bn = 256; s.bk = 4; break;
    case Schedule::SoftmaxThree:
    case Schedule::SoftmaxOnline: s.chunk = 4096; break;
    case Schedule::SoftmaxFast: s.chunk = 16384; break;
    case Schedule::AttnFA2Mma: {  // the launcher's own choice
      const auto t = attention_forward_fast_tiling(s.seq, s.d, s.causal);
      s.br = t.br;
      s.bc = t.bc;
      s.paired_tiles = t.paired;
      s.split_tail = t.persistent && !s.causal && fwd_split_enabled(s.seq, s.d);
      break;
    }
    case Schedule::BwdMma: s.br = s.d == 128 ? 64 : 128; s.bc = 128; break;  // Q tile, KV tile
    case Schedule::AttnFP8:  // fp8::attention_forward's launch
      s.br = 128;
      s.bc = 128;
      s.paired_tiles = s.causal;
      s.split_tail = !s.causal && fwd_split_enabled(s.seq, s.d);
      break;
    default: s.br = 64; s.bc = 64; break;
  }
}

std::string attn_tiles_label(const Spec& s) {
  if (s.op() != Op::AttnFwd && s.op() != Op::AttnBwd) return "";
  const bool longest_first = s.schedule == Schedule::BwdMma && s.causal && !s.shortest_first;
  return std::to_string(s.br) + "x" + std::to_string(s.bc) + (s.paired_tiles ? " paired" : "") +
         (s.split_tail ? " split" : "") + (longest_first ? " longest-first" : "");
}

namespace {
// Removes `word` (" paired", ...) from the end of `label`; whether it was there.
bool take_suffix(std::string& label, const std::string& word) {
  const bool there = label.size() > word.size() && label.compare(label.size() - word.size(), word.size(), word) == 0;
  if (there) label.resize(label.size() - word.size());
  return there;
}
}  // namespace

void apply_attn_tiles_label(Spec& s, const std::string& label) {
  if (s.op() != Op::AttnFwd && s.op() != Op::AttnBwd) {
    if (!label.empty()) throw std::invalid_argument("attn_tiles '" + label + "' on a row that is not attention");
    return;
  }
  std::string dims = label;
  const bool longest_first = take_suffix(dims, " longest-first");
  const bool split = take_suffix(dims, " split");
  const bool paired = take_suffix(dims, " paired");
  std::vector<std::int64_t> tiles;
  try {
    tiles = parse_dims(dims, 2);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument("attn_tiles '" + label +
                                "' is not BRxBC (optionally followed by ' paired', ' split', ' longest-first'): " + e.what());
  }
  if (paired && !s.causal) throw std::invalid_argument("attn_tiles '" + label + "': tile pairs on a row without the causal mask");
  if (split && (s.causal || s.op() != Op::AttnFwd))
    throw std::invalid_argument("attn_tiles '" + label + "': the split tail is the full-mask forward's");
  if (longest_first && (!s.causal || s.schedule != Schedule::BwdMma))
    throw std::invalid_argument("attn_tiles '" + label + "': the longest-first order is the causal bwd-mma's");
  s.br = tiles[0];
  s.bc = tiles[1];
  s.paired_tiles = paired;
  s.split_tail = split;
  s.shortest_first = s.schedule == Schedule::BwdMma && s.causal && !longest_first;
}

void apply_attn_tiles_before_column(Spec& s, int blocks_per_sm) {
  if (s.schedule == Schedule::AttnFA2Mma && s.d == 64 && blocks_per_sm != 1) {
    s.br = 64;
    s.bc = 128;
    s.paired_tiles = false;
  }
  // the runs before the column ran whole tiles and the causal backward shortest first
  s.split_tail = false;
  s.shortest_first = s.schedule == Schedule::BwdMma && s.causal;
}

SizeSet parse_sizes(const std::string& list) {
  SizeSet out;
  auto entries = split(list, ',');
  if (entries.empty()) throw std::invalid_argument("empty size list");
  for (const auto& e : entries) {
    if (e == "tiny") {
      out.matmul.push_back({100, 72, 40});
      out.softmax.push_back({3, 10000});
      out.attn_fwd.push_back({2, 100, 64});
      out.attn_bwd.push_back({2, 100, 64});
    } else if (e == "small") {
      out.matmul.push_back({1024, 1024, 1024});
      out.softmax.push_back({64, 65536});
      out.attn_fwd.push_back({4, 1024, 64});
      out.attn_bwd.push_back({4, 1024, 64});
    } else if (e == "large") {
      out.matmul.push_back({8192, 8192, 256});
      out.softmax.push_back({256, 524288});
      out.attn_fwd.push_back({8, 4096, 64});
      out.attn_fwd.push_back({2048, 1024, 64});
      out.attn_bwd.push_back({128, 2048, 64});
    } else {
      auto colon = e.find(':');
      if (colon == std::string::npos)
        throw std::invalid_argument("size '" + e + "' is neither a preset (tiny, small, large) nor op:dims");
      std::string op = e.substr(0, colon), dims = e.substr(colon + 1);
      if (op == "matmul") out.matmul.push_back(parse_dims(dims, 3));
      else if (op == "softmax") out.softmax.push_back(parse_dims(dims, 2));
      else if (op == "attn-fwd") out.attn_fwd.push_back(parse_dims(dims, 3));
      else if (op == "attn-bwd") out.attn_bwd.push_back(parse_dims(dims, 3));
      else if (op == "attn") {
        auto v = parse_dims(dims, 3);
        out.attn_fwd.push_back(v);
        out.attn_bwd.push_back(v);
      } else
        throw std::invalid_argument("unknown op '" + op + "' in size '" + e + "'");
    }
  }
  for (const auto& v : out.attn_fwd)
    if (v[2] != 64 && v[2] != 128) throw std::invalid_argument("attention kernels are built for d = 64 (and 128: attn-fa2-mma, attn-fp8, bwd-mma)");
  for (const auto& v : out.attn_bwd)
    if (v[2] != 64 && v[2] != 128) throw std::invalid_argument("attention kernels are built for d = 64 (and 128: bwd-mma)");
  return out;
}

std::vector<Spec> expand(const std::vector<Schedule>& schedules, const SizeSet& sizes,
                         const std::vector<Dtype>& dtypes, const std::vector<bool>& causal_modes) {
  std::vector<Spec> out;
  for (Schedule sch : schedules) {
    Op op = info(sch).op;
    std::vector<Dtype> dts = dtypes;
    if (sch != Schedule::AttnFP8 && std::find(dts.begin(), dts.end(), Dtype::E4M3) != dts.end())
      throw std::invalid_argument(std::string("dtype fp8 is attn-fp8's alone; ") + info(sch).id +
                                  " does not run in fp8 (name --schedules attn-fp8 for it)");
    if (dts.empty()) {
      if (sch == Schedule::AttnFP8) dts = {Dtype::E4M3};
      else if (op == Op::Matmul) dts = {Dtype::F32, Dtype::BF16};
      else if (op == Op::Softmax) dts = {Dtype::F32};
      else dts = {Dtype::BF16};
    }
    const auto& list = op == Op::Matmul    ? sizes.matmul
                       : op == Op::Softmax ? sizes.softmax
                       : op == Op::AttnFwd ? sizes.attn_fwd
                                           : sizes.attn_bwd;
    for (const auto& dims : list)
      for (Dtype dt : dts) {
        std::vector<bool> cm = (op == Op::AttnFwd || op == Op::AttnBwd) ? causal_modes : std::vector<bool>{false};
        for (bool c : cm) {
          Spec s;
          s.schedule = sch;
          s.dtype = dt;
          if (op == Op::Matmul) { s.m = dims[0]; s.n = dims[1]; s.k = dims[2]; }
          else if (op == Op::Softmax) { s.rows = dims[0]; s.cols = dims[1]; }
          else { s.bh = dims[0]; s.seq = dims[1]; s.d = dims[2]; s.causal = c; }
          if (unsupported(sch, dt, s.d)) continue;  // e.g. d = 128 or fp16 on the SIMT versions
          apply_kernel_tiles(s);
          out.push_back(s);
        }
      }
  }
  return out;
}

void check_named_schedules(const std::string& list, const SizeSet& sizes, const std::vector<Dtype>& dtypes) {
  for (const auto& name : split(list, ',')) {
    if (name != info(Schedule::AttnFP8).id) continue;
    if (!dtypes.empty() && std::find(dtypes.begin(), dtypes.end(), Dtype::E4M3) == dtypes.end())
      throw std::invalid_argument("attn-fp8 runs fp8 (e4m3) only: add fp8 to --dtype or leave --dtype out");
    for (const auto& v : sizes.attn_fwd)
      if (v[2] != 128)
        throw std::invalid_argument("attn-fp8 is built for d = 128 only, not d = " + std::to_string(v[2]) + " (size attn-fwd:" +
                                    std::to_string(v[0]) + "x" + std::to_string(v[1]) + "x" + std::to_string(v[2]) + ")");
  }
}

std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return (a + b - 1) / b; }

int rotation_sets(std::size_t input_bytes, std::size_t l2_bytes) {
  if (input_bytes == 0) return 1;
  if (input_bytes >= 2 * l2_bytes) return 1;
  const std::size_t want = (3 * l2_bytes + input_bytes - 1) / input_bytes + 1;
  return static_cast<int>(std::min<std::size_t>(8, std::max<std::size_t>(2, want)));
}


double visible_pairs(std::int64_t n, bool causal) {
  double dn = static_cast<double>(n);
  return causal ? dn * (dn + 1) / 2 : dn * dn;
}

Bytes compulsory(const Spec& s) {
  const std::uint64_t e = dtype_bytes(s.dtype);
  Bytes b;
  switch (s.op()) {
    case Op::Matmul:
      b.read = (u(s.m) * u(s.k) + u(s.k) * u(s.n)) * e;
      b.written = u(s.m) * u(s.n) * 4;  // C is fp32
      break;
    case Op::Softmax:
      b.read = u(s.rows) * u(s.cols) * e;
      b.written = b.read;
      break;
    case Op::AttnFwd: {
      std::uint64_t t = u(s.bh) * u(s.seq) * u(s.d) * e;
      b.read = 3 * t;  // Q, K, V
      b.written = t;   // O
      if (s.schedule == Schedule::AttnFP8) {  // V^T's padding keys are read too; O is bf16
        b.read = 2 * t + u(s.bh) * u(s.d) * u(fp8::padded_keys(static_cast<int>(s.seq)));
        b.written = 2 * t;
      }
      break;
    }
    case Op::AttnBwd: {
      std::uint64_t t = u(s.bh) * u(s.seq) * u(s.d) * e;
      b.read = 5 * t + u(s.bh) * u(s.seq) * 4;  // Q, K, V, O, dO, logsumexp
      b.written = 3 * t;                          // dQ, dK, dV
      break;
    }
  }
  return b;
}

namespace {

// Tile-pair bookkeeping for attention with br x bc tiles (br == bc is not assumed).
struct AttnTiles {
  std::int64_t n, br, bc, tr, tc;
  bool causal;
  std::int64_t rows(std::int64_t i) const { return std::min(br, n - i * br); }
  std::int64_t cols(std::int64_t j) const { return std::min(bc, n - j * bc); }
  // tile j of keys has at least one key that some query of tile i may see
  bool visible(std::int64_t i, std::int64_t j) const {
    return !causal || j * bc <= i * br + rows(i) - 1;
  }
};

}  // namespace

std::vector<ArrayModel> model_traffic(const Spec& s) {
  std::vector<ArrayModel> a;
  const std::uint64_t e = dtype_bytes(s.dtype);
  switch (s.op()) {
    case Op::Matmul: {
      const std::uint64_t tm = u(ceil_div(s.m, s.bm)), tn = u(ceil_div(s.n, s.bn));
      const std::uint64_t asz = u(s.m) * u(s.k) * e, bsz = u(s.k) * u(s.n) * e, csz = u(s.m) * u(s.n) * 4;
      a.push_back({"A", asz * tn, 0, asz, false});
      a.push_back({"B", bsz * tm, 0, bsz, false});
      if (s.schedule == Schedule::MatmulInner) {
        a.push_back({"C", 0, csz, csz, false});
      } else {
        const std::uint64_t steps = u(ceil_div(s.k, s.bk));
        a.push_back({"C", (steps - 1) * csz, steps * csz, csz, true});
      }
      break;
    }
    case Op::Softmax: {
      const std::uint64_t x = u(s.rows) * u(s.cols) * e;
      const std::uint64_t nc = u(ceil_div(s.cols, s.chunk));
      const std::uint64_t part = u(s.rows) * nc * 4;
      const bool three = s.schedule == Schedule::SoftmaxThree;
      a.push_back({"X", (three ? 3 : 2) * x, 0, x, true});
      a.push_back({"Y", 0, x, x, true});
      // per-chunk partial max / sum; every block of a row reads all of its row's partials
      a.push_back({"m_partial", (three ? 2 : 1) * part * nc, part, part, false});
      a.push_back({"l_partial", part * nc, part, part, false});
      break;
    }
    case Op::AttnFwd:
    case Op::AttnBwd: {
      AttnTiles t{s.seq, s.br, s.bc, ceil_div(s.seq, s.br), ceil_div(s.seq, s.bc), s.causal};
      const std::uint64_t bh = u(s.bh), n = u(s.seq), d = u(s.d);
      const std::uint64_t tensor = bh * n * d * e, stat = bh * n * 4;
      // sums over visible tile pairs, per head
      std::uint64_t q_rows_vis = 0, k_cols_vis = 0, q_rows_vis_after_first = 0;
      for (std::int64_t i = 0; i < t.tr; ++i)
        for (std::int64_t j = 0; j < t.tc; ++j)
          if (t.visible(i, j)) {
            q_rows_vis += u(t.rows(i));
            k_cols_vis += u(t.cols(j));
            if (j > 0) q_rows_vis_after_first += u(t.rows(i));
          }
      const std::uint64_t tr = u(t.tr);
      if (s.schedule == Schedule::AttnNaive) {
        const std::uint64_t sz = bh * n * n * 4;
        a.push_back({"Q", tensor, 0, tensor, false});
        a.push_back({"K", tensor * tr, 0, tensor, false});
        a.push_back({"V", tensor * tr, 0, tensor, false});
        a.push_back({"S", 2 * sz, sz, sz, true});  // two passes of the row softmax
        a.push_back({"P", sz, sz, sz, true});
        a.push_back({"O", 0, tensor, tensor, false});
        a.push_back({"L", stat, stat, stat, false});  // row logsumexp: written by pass 1, read by pass 2
      } else if (s.schedule == Schedule::AttnFA1) {
        a.push_back({"Q", bh * q_rows_vis * d * e, 0, tensor, true});
        a.push_back({"K", bh * k_cols_vis * d * e, 0, tensor, false});
        a.push_back({"V", bh * k_cols_vis * d * e, 0, tensor, false});
        a.push_back({"O", bh * q_rows_vis_after_first * d * e, bh * q_rows_vis * d * e, tensor, true});
        a.push_back({"m", bh * q_rows_vis_after_first * 4, bh * q_rows_vis * 4, stat, true});
        a.push_back({"l", bh * q_rows_vis_after_first * 4, bh * q_rows_vis * 4, stat, true});
      } else if (s.schedule == Schedule::AttnFP8) {
        // e4m3 Q, K, V^T (1 byte); V^T's rows hold padded_keys(n) keys, and the last key tile's
        // read takes the padding keys with it (TMA box of 128 keys); O bf16, lse fp32
        const std::int64_t nv = fp8::padded_keys(static_cast<int>(s.seq));
        std::uint64_t v_cols_vis = 0;
        for (std::int64_t i = 0; i < t.tr; ++i)
          for (std::int64_t j = 0; j < t.tc; ++j)
            if (t.visible(i, j)) v_cols_vis += u(std::min(s.bc, nv - j * s.bc));
        const std::uint64_t vsz = bh * d * u(nv);
        a.push_back({"Q", tensor, 0, tensor, false});
        a.push_back({"K", bh * k_cols_vis * d, 0, tensor, false});
        a.push_back({"V", bh * v_cols_vis * d, 0, vsz, false});
        a.push_back({"O", 0, 2 * tensor, 2 * tensor, false});
        a.push_back({"L", 0, stat, stat, false});
      } else if (s.schedule == Schedule::AttnFA2 || s.schedule == Schedule::AttnFA2Mma) {
        a.push_back({"Q", tensor, 0, tensor, false});
        a.push_back({"K", bh * k_cols_vis * d * e, 0, tensor, false});
        a.push_back({"V", bh * k_cols_vis * d * e, 0, tensor, false});
        a.push_back({"O", 0, tensor, tensor, false});
        a.push_back({"L", 0, stat, stat, false});  // logsumexp
      } else {
        // backward; every version starts with D = rowsum(dO * O); bwd-mma moves what bwd-atomic moves
        const bool two = s.schedule == Schedule::BwdTwoPass;
        const std::uint64_t qv = bh * q_rows_vis * d * e, kv = bh * k_cols_vis * d * e;
        const std::uint64_t statv = bh * q_rows_vis * 4;
        a.push_back({"O", tensor, 0, tensor, false});
        if (two) {
          // dQ kernel: Q, dO, lse, D once, K and V per visible pair
          // dK/dV kernel: K, V once, Q, dO, lse, D per visible pair
          a.push_back({"dO", tensor + tensor + qv, 0, tensor, false});
          a.push_back({"Q", tensor + qv, 0, tensor, false});
          a.push_back({"K", kv + tensor, 0, tensor, false});
          a.push_back({"V", kv + tensor, 0, tensor, false});
          a.push_back({"L", stat + statv, 0, stat, false});
          a.push_back({"D", stat + statv, stat, stat, false});
          a.push_back({"dQ", 0, tensor, tensor, false});
        } else {
          const std::uint64_t acc = bh * n * d * 4;
          a.push_back({"dO", tensor + qv, 0, tensor, false});
          a.push_back({"Q", qv, 0, tensor, false});
          a.push_back({"K", tensor, 0, tensor, false});
          a.push_back({"V", tensor, 0, tensor, false});
          a.push_back({"L", statv, 0, stat, false});
          a.push_back({"D", statv, stat, stat, false});
          // zeroed once, one fp32 atomic add per element per visible pair (read-modify-write in
          // L2), read once by the conversion kernel
          a.push_back({"dQacc", bh * q_rows_vis * d * 4 + acc, acc + bh * q_rows_vis * d * 4, acc, false});
          a.push_back({"dQ", 0, tensor, tensor, false});
        }
        a.push_back({"dK", 0, tensor, tensor, false});
        a.push_back({"dV", 0, tensor, tensor, false});
      }
      break;
    }
  }
  return a;
}

Bytes model_total(const std::vector<ArrayModel>& a) {
  Bytes b;
  for (const auto& x : a) {
    b.read += x.read;
    b.written += x.written;
  }
  return b;
}

Bytes expected_hbm(const std::vector<ArrayModel>& a) {
  Bytes b;
  for (const auto& x : a) {
    if (x.streamed) {
      b.read += x.read;
      b.written += x.written;
    } else {
      b.read += std::min(x.read, x.size);
      b.written += std::min(x.written, x.size);
    }
  }
  return b;
}

double flops(const Spec& s) {
  switch (s.op()) {
    case Op::Matmul: return 2.0 * s.m * s.n * s.k;
    case Op::Softmax: return 0.0;
    case Op::AttnFwd: return 4.0 * s.d * visible_pairs(s.seq, s.causal) * s.bh;
    case Op::AttnBwd: return 10.0 * s.d * visible_pairs(s.seq, s.causal) * s.bh;
  }
  return 0.0;
}

// fp16 keeps 3 more mantissa bits than bf16.
// e4m3: attn-fp8's check gives fractions of its own allowances (tolerance 1), see tolerance().
double base_tolerance(Dtype d) {
  return d == Dtype::F32 ? 1e-4 : d == Dtype::BF16 ? 1e-2 : d == Dtype::F16 ? 5e-3 : 1.0;
}

double unit_roundoff(Dtype d) {
  const int p = d == Dtype::F32 ? 24 : d == Dtype::BF16 ? 8 : d == Dtype::F16 ? 11 : 4;  // significand bits, implicit one included
  return std::ldexp(1.0, -p);
}

// A value s * 2^e (s in [1, 2)) rounds to the nearest multiple of 2u * 2^e: an error uniform in
// +-u * 2^e, i.e. relative error uniform in +-u / s, variance u^2 / (3 s^2). Averaged over s
// uniform in [1, 2) (E[1/s^2] = 1/2): rms = u / sqrt(6).
double rounding_rms(Dtype d) { return unit_roundoff(d) / std::sqrt(6.0); }

// FA1 stores O normalized after each of its T KV blocks (Dao et al. 2022, Algorithm 1). The
// rounding error e_j of round trip j (rms rho |O_j|) is carried into the final O with the
// weight L_j / L_T of the keys seen so far. With near-uniform attention over zero-mean V (the
// workload's random inputs), L_j / L_T = j / T and |O_j| ~ sigma / sqrt(j Bc), so the
// independent errors add to rho^2 sigma^2 (T + 1) / (2 T Bc) against |O_T|^2 = sigma^2 / (T Bc):
// relative error rho sqrt((T + 1) / 2). T = 1 leaves the single output rounding of FA2.
double fa1_round_trip_error(Dtype d, std::int64_t kv_blocks) {
  return rounding_rms(d) * std::sqrt((static_cast<double>(std::max<std::int64_t>(kv_blocks, 1)) + 1.0) / 2.0);
}

double tolerance(const Spec& s) {
  if (s.schedule == Schedule::AttnFP8) return 1.0;  // the check returns the worst fraction of its allowances
  const double base = base_tolerance(s.dtype);
  if (s.schedule != Schedule::AttnFA1) return base;
  // only FA1 round-trips O through HBM. Twice the estimate: weights that pile up on early keys
  // carry each rounding with weight ~1 (rho sqrt(T), sqrt 2 more); independent of `base`'s sources.
  const double rt = 2.0 * fa1_round_trip_error(s.dtype, ceil_div(s.seq, s.bc));
  return std::sqrt(base * base + rt * rt);
}

bool within_tolerance(double rel_err, double tol) { return rel_err == rel_err && rel_err <= tol; }

bool have_counted() {
#ifdef FLASHSIM_HAVE_SIM
  return true;
#else
  return false;
#endif
}

#ifdef FLASHSIM_HAVE_SIM
namespace {

// attn-fp8's V^T holds padded_keys(n) keys a row and the last key tile's TMA box reads the padding
// keys; the tile machine's V has n. Requested bytes: the padding on every read of the last key
// tile (as model_traffic). Through the L2: once per head (it shares the last tile's lines, which
// the model keeps or refetches with that tile; the padding is under 32 keys of it).
void add_vt_padding(const Spec& s, bool through_l2, flashsim::traffic::Traffic& tr) {
  const std::uint64_t pad = u(fp8::padded_keys(static_cast<int>(s.seq)) - s.seq) * u(s.d);
  if (pad == 0) return;
  const std::int64_t last = ceil_div(s.seq, s.bc) - 1;
  AttnTiles t{s.seq, s.br, s.bc, ceil_div(s.seq, s.br), ceil_div(s.seq, s.bc), s.causal};
  std::uint64_t reads = 0;  // visible (Q tile, last key tile) pairs per head
  for (std::int64_t i = 0; i < t.tr; ++i)
    if (t.visible(i, last)) ++reads;
  for (auto& a : tr.arrays)
    if (a.name == "V") {
      a.bytes_read += u(s.bh) * reads * pad;
      a.hbm_bytes_read += u(s.bh) * (through_l2 ? 1 : reads) * pad;
    }
}

// The tile machine's count of the kernel's schedule, with the kernel's tiles, dtypes and block
// order; through `gpu`'s L2 when given. Fills `arrays` with requested or HBM bytes accordingly.
std::optional<Bytes> count_on_tile_machine(const Spec& s, const flashsim::sim::GpuModel* gpu,
                                           std::vector<CountedArray>* arrays, std::string* error) {
  namespace t = flashsim::traffic;
  try {
    t::Traffic tr;
    switch (s.op()) {
      case Op::Matmul: {
        t::MatmulParams p;
        p.m = s.m; p.n = s.n; p.k = s.k;
        p.bm = s.bm; p.bn = s.bn; p.bk = s.bk;
        p.in_bytes = dtype_bytes(s.dtype);
        p.out_bytes = 4;
        // The outer kernel's threads read, update and write C 8 rows at a time (its row loop).
        if (s.schedule == Schedule::MatmulOuter) p.c_strip_rows = 8;
        tr = t::count_matmul(p, s.schedule == Schedule::MatmulInner ? t::MatmulSchedule::Inner
                                                                    : t::MatmulSchedule::Outer, gpu);
        break;
      }
      case Op::Softmax: {
        t::SoftmaxParams p;
        p.rows = s.rows; p.cols = s.cols; p.chunk = s.chunk;
        p.elem_bytes = dtype_bytes(s.dtype);
        tr = t::count_softmax(p, s.schedule == Schedule::SoftmaxThree ? t::SoftmaxSchedule::ThreePass
                                                                      : t::SoftmaxSchedule::Online, gpu);
        break;
      }
      case Op::AttnFwd:
      case Op::AttnBwd: {
        t::AttentionParams p;
        p.batch_heads = s.bh; p.n = s.seq; p.d = s.d;
        p.br = s.br; p.bc = s.bc;
        p.elem_bytes = dtype_bytes(s.dtype);
        if (s.schedule == Schedule::AttnFP8) p.out_bytes = 2;  // e4m3 in, bf16 O out
        p.score_bytes = 4; p.stat_bytes = 4; p.accum_bytes = 4;
        p.causal = s.causal;
        // The fast kernels' block order: heaviest causal tiles first, bwd-mma's head groups.
        p.heavy_first = s.schedule == Schedule::AttnFA2Mma || s.schedule == Schedule::BwdMma || s.schedule == Schedule::AttnFP8;
        p.paired_tiles = s.paired_tiles;
        if (s.schedule == Schedule::BwdMma) p.heads_per_group = bwd_mma_heads_per_group(s.seq, s.d, dtype_bytes(s.dtype), s.bh);
        p.kv_shortest_first = s.shortest_first;
        // the split tail over the device's SMs (the counted column has no device: the GPU model's
        // default, the H100's and H200's SM count)
        if (s.split_tail) p.split_tail_sms = static_cast<int>(gpu ? gpu->sms : flashsim::sim::GpuModel{}.sms);
        if (s.op() == Op::AttnFwd)
          tr = t::count_attention_forward(p, s.schedule == Schedule::AttnNaive ? t::AttentionForward::Naive
                                             : s.schedule == Schedule::AttnFA1 ? t::AttentionForward::FA1
                                                                               : t::AttentionForward::FA2, gpu);
        else
          tr = t::count_attention_backward(p, s.schedule == Schedule::BwdTwoPass ? t::AttentionBackward::TwoPass
                                                                                 : t::AttentionBackward::AtomicDQ, gpu);
        if (s.schedule == Schedule::AttnFP8) add_vt_padding(s, gpu != nullptr, tr);
        break;
      }
    }
    if (arrays) {
      arrays->clear();
      for (const auto& x : tr.arrays)
        arrays->push_back(gpu ? CountedArray{x.name, x.hbm_bytes_read, x.hbm_bytes_written}
                              : CountedArray{x.name, x.bytes_read, x.bytes_written});
    }
    return gpu ? Bytes{tr.hbm_bytes_read(), tr.hbm_bytes_written()} : Bytes{tr.bytes_read(), tr.bytes_written()};
  } catch (const std::exception& ex) {
    if (error) *error = ex.what();
    return std::nullopt;
  }
}

}  // namespace
#endif

std::optional<Bytes> counted(const Spec& s, std::vector<CountedArray>* arrays, std::string* error) {
#ifdef FLASHSIM_HAVE_SIM
  return count_on_tile_machine(s, nullptr, arrays, error);
#else
  (void)s;
  (void)arrays;
  if (error) *error = "flashsim_sim (sim/traffic.cpp) is not built";
  return std::nullopt;
#endif
}

std::optional<Bytes> predicted(const Spec& s, std::uint64_t l2_bytes, int sms, int blocks_per_sm,
                               std::vector<CountedArray>* arrays, std::string* error, int l2_partitions,
                               std::uint32_t l2_ways, std::uint32_t l2_dirty_ways, std::uint64_t dirty_at_start,
                               std::uint32_t l2_page_lines, std::uint32_t l2_copy_rank, bool dirty_at_start_counted,
                               std::uint32_t l2_dirty_group) {
#ifdef FLASHSIM_HAVE_SIM
  flashsim::sim::GpuModel g;
  g.l2.capacity_bytes = l2_bytes;
  g.l2.ways = l2_ways;
  g.l2.dirty_ways = l2_dirty_ways;
  g.l2.dirty_group = l2_dirty_group;
  g.l2.page_lines = l2_page_lines;
  g.l2.copy_rank = l2_copy_rank;
  g.dirty_at_start_bytes = dirty_at_start;
  g.sms = sms;
  g.blocks_per_sm = blocks_per_sm;
  g.l2_partitions = static_cast<std::uint32_t>(std::max(1, l2_partitions));
  if (l2_bytes == 0 || sms < 1 || blocks_per_sm < 1) {
    if (error) *error = "the GPU model needs an L2 size, SMs and an occupancy";
    return std::nullopt;
  }
  std::vector<CountedArray> own;
  auto total = count_on_tile_machine(s, &g, arrays ? arrays : &own, error);
  if (total && !dirty_at_start_counted) {
    auto& list = arrays ? *arrays : own;
    const auto foreign = std::find_if(list.begin(), list.end(),
                                      [](const CountedArray& a) { return a.name == flashsim::traffic::kDirtyAtStartArray; });
    if (foreign != list.end()) {
      total->written -= foreign->written;
      list.erase(foreign);
    }
  }
  return total;
#else
  (void)s, (void)l2_bytes, (void)sms, (void)blocks_per_sm, (void)arrays, (void)l2_partitions, (void)l2_ways, (void)l2_dirty_ways, (void)dirty_at_start, (void)l2_page_lines, (void)l2_copy_rank, (void)dirty_at_start_counted, (void)l2_dirty_group;
  if (error) *error = "flashsim_sim (sim/traffic.cpp) is not built";
  return std::nullopt;
#endif
}

PresetPick gpu_preset_for(const std::string& device_name, const std::string& override_name) {
  if (!override_name.empty()) {
#ifdef FLASHSIM_HAVE_SIM
    const auto* p = flashsim::isa::find_gpu_preset(override_name);
    if (!p) throw std::invalid_argument("--gpu-preset '" + override_name + "' is not one of " + flashsim::isa::gpu_preset_names());
    return {std::string(p->name), ""};
#else
    if (override_name != "h100" && override_name != "h200")
      throw std::invalid_argument("--gpu-preset '" + override_name + "' is not one of h100, h200");
    return {override_name, ""};
#endif
  }
  std::string up = device_name;
  for (char& c : up) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (up.find("H200") != std::string::npos) return {"h200", ""};
  if (up.find("H100") != std::string::npos) return {"h100", ""};
  return {"h100", "device '" + device_name + "' is neither an H100 nor an H200: times predicted on the h100 preset"};
}

bool time_bound_row(const Spec& s) {
  switch (s.op()) {
    case Op::AttnFwd:
    case Op::AttnBwd: return s.seq >= 4096;
    case Op::Matmul: return s.m >= 4096 && s.n >= 4096;
    case Op::Softmax: return false;
  }
  return false;
}

std::optional<TimePrediction> predict_run_time(const Spec& s, const std::string& preset, std::optional<double> hbm_bytes,
                                               std::string* why) {
#ifdef FLASHSIM_HAVE_SIM
  namespace fs = flashsim::sim;
  const auto* gpu = flashsim::isa::find_gpu_preset(preset);
  if (!gpu) {
    if (why) *why = "unknown GPU preset '" + preset + "'";
    return std::nullopt;
  }
  try {
    fs::LaunchPrediction lp;
    TimePrediction out;
    const int e = dtype_bytes(s.dtype);
    if (s.schedule == Schedule::AttnFA2Mma || s.schedule == Schedule::BwdMma || s.schedule == Schedule::SoftmaxFast ||
        s.schedule == Schedule::AttnFP8) {
      fs::TimeQuery q;
      q.elem_bytes = e;
      if (s.schedule == Schedule::SoftmaxFast) {
        q.op = fs::TimedOp::Softmax;
        q.m = s.rows;
        q.n = s.cols;
      } else {
        q.op = s.schedule == Schedule::BwdMma ? fs::TimedOp::AttnBwd : fs::TimedOp::AttnFwd;
        q.n = s.seq;
        q.d = s.d;
        q.heads = s.bh;
        q.causal = s.causal;
        if (s.schedule == Schedule::AttnFP8) {
          q.fp8 = true;  // flashsim time attention --dtype fp8: e4m3 products, O bf16
          q.version = 6;
          q.split_tail = s.split_tail;
        } else if (s.schedule == Schedule::AttnFA2Mma) {
          q.version = s.br == 64 ? 5 : 6;
          if (q.version == 6) q.split_tail = s.split_tail;
        } else if (const char* v = std::getenv("FLASHSIM_BWD_VERSION")) {
          const int ver = std::atoi(v);
          if (ver >= 5 && ver <= 7) q.version = ver;
        }
        if (s.schedule == Schedule::BwdMma) q.shortest_first = s.shortest_first;
      }
      if (hbm_bytes) {
        double main = *hbm_bytes;
        if (s.schedule == Schedule::BwdMma) {
          // D = rowsum(dO * O) before and the fp32 dQ to dQ after: predict_time adds them itself
          const double h = static_cast<double>(s.bh), n = static_cast<double>(s.seq), d = static_cast<double>(s.d);
          main -= h * (2 * n * d * e + 4 * n) + h * (4 * n * d + n * d * e);
        }
        q.hbm_bytes = std::max(main, 0.0);
      }
      lp = fs::predict_time(q, *gpu);
      out.model = "trace";
    } else {
      fs::SimtQuery q;
      q.elem_bytes = e;
      q.hbm_bytes = hbm_bytes;
      switch (s.schedule) {
        case Schedule::MatmulInner: q.kernel = fs::SimtKernel::MatmulInner; break;
        case Schedule::MatmulOuter: q.kernel = fs::SimtKernel::MatmulOuter; break;
        case Schedule::SoftmaxThree: q.kernel = fs::SimtKernel::SoftmaxThreePass; break;
        case Schedule::SoftmaxOnline: q.kernel = fs::SimtKernel::SoftmaxOnline; break;
        case Schedule::AttnNaive: q.kernel = fs::SimtKernel::AttnNaive; break;
        case Schedule::AttnFA1: q.kernel = fs::SimtKernel::AttnFA1; break;
        case Schedule::AttnFA2: q.kernel = fs::SimtKernel::AttnFA2; break;
        case Schedule::BwdTwoPass: q.kernel = fs::SimtKernel::BwdTwoPass; break;
        case Schedule::BwdAtomic: q.kernel = fs::SimtKernel::BwdAtomic; break;
        default: break;
      }
      if (s.op() == Op::Matmul) {
        q.m = s.m, q.n = s.n, q.k = s.k;
      } else if (s.op() == Op::Softmax) {
        q.m = s.rows, q.n = s.cols;
      } else {
        q.n = s.seq, q.d = s.d, q.heads = s.bh, q.causal = s.causal;
      }
      lp = fs::predict_time_simt(q, *gpu);
      out.model = "simt";
    }
    out.ms = lp.predicted_ms;
    out.bound = lp.bound;
    return out;
  } catch (const std::exception& ex) {
    if (why) *why = ex.what();
    return std::nullopt;
  }
#else
  (void)s, (void)preset, (void)hbm_bytes;
  if (why) *why = "flashsim_sim (sim/gpu_time.cpp) is not built";
  return std::nullopt;
#endif
}

Spec spec_from_row(const std::string& schedule, const std::string& size, const std::string& dtype) {
  const auto schedules = parse_schedules(schedule);
  if (schedules.size() != 1) throw std::invalid_argument("'" + schedule + "' is not one schedule");
  const auto dt = parse_dtype(dtype);
  if (!dt) throw std::invalid_argument("unknown dtype '" + dtype + "'");
  std::string dims = size;
  const bool causal = dims.size() > 7 && dims.compare(dims.size() - 7, 7, " causal") == 0;
  if (causal) dims.resize(dims.size() - 7);
  const auto specs = expand(schedules, parse_sizes(std::string(op_name(info(schedules[0]).op)) + ":" + dims), {*dt}, {causal});
  if (specs.size() != 1) throw std::invalid_argument("size '" + size + "' does not fit " + schedule);
  return specs[0];
}

}  // namespace flashsim::gpu
