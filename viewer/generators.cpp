// Generated schedules the viewer offers by name, from the simulator's generators
// (sim/schedules for the scalar machine, sim/tile for the tile machine). Each entry lists its
// parameters with defaults small enough to step through by hand.
#include <stdexcept>

#include "isa/assembler.h"
#include "sim/schedules/attention_scalar.h"
#include "sim/schedules/matmul.h"
#include "sim/schedules/softmax.h"
#include "sim/tile/schedules.h"
#include "viewer/catalog.h"

namespace flashsim::viewer {

namespace {

using Params = std::map<std::string, std::int64_t>;
namespace sched = sim::schedules;

std::int64_t get(const Params& p, const std::string& name, std::int64_t fallback) {
  auto it = p.find(name);
  return it == p.end() ? fallback : it->second;
}

int small_int(const Params& p, const std::string& name, std::int64_t fallback) {
  std::int64_t v = get(p, name, fallback);
  if (v < 1 || v > 1'000'000) throw std::invalid_argument(name + " must be between 1 and 1000000");
  return static_cast<int>(v);
}

CatalogEntry entry(std::string name, std::string description, std::vector<ParamDecl> params,
                   std::function<isa::Program(const Params&)> gen) {
  CatalogEntry e;
  e.name = std::move(name);
  e.description = std::move(description);
  e.params = std::move(params);
  e.group = "Generated schedules";
  std::string label = e.name;
  e.generate = [gen = std::move(gen), label](const Params& p) {
    isa::Program prog = gen(p);
    prog.name = label;
    return prog;
  };
  return e;
}

isa::Program scalar_matmul(const Params& p, sched::MatmulSchedule s) {
  sched::MatmulGenOptions o;
  o.m = small_int(p, "m", 2);
  o.k = small_int(p, "k", 2);
  o.n = small_int(p, "n", 2);
  o.regs = small_int(p, "regs", s == sched::MatmulSchedule::Inner ? 3 : 6);
  o.schedule = s;
  return sched::generate_matmul(o).program;
}

isa::Program scalar_attention(const Params& p, sched::LoopOrder order) {
  sched::AttentionParams a;
  a.n = small_int(p, "n", 4);
  a.d = small_int(p, "d", 2);
  a.order = order;
  sched::validate(a);
  return isa::assemble(sched::attention_scalar_source(a), "attention");
}

isa::Program tile_attention(const Params& p, traffic::AttentionForward s) {
  traffic::AttentionParams a;
  a.n = small_int(p, "n", 256);
  a.d = small_int(p, "d", 64);
  a.br = small_int(p, "br", 64);
  a.bc = small_int(p, "bc", 64);
  a.causal = get(p, "causal", 0) != 0;
  a.sram_bytes = static_cast<std::uint64_t>(small_int(p, "sram_kib", 192)) * 1024;
  tile::validate(a);
  return tile::attention_forward_program(a, s);
}

isa::Program tile_matmul(const Params& p, traffic::MatmulSchedule s) {
  traffic::MatmulParams m;
  m.m = m.n = m.k = small_int(p, "n", 256);
  m.bm = m.bn = m.bk = small_int(p, "b", 64);
  tile::validate(m);
  return tile::matmul_program(m, s);
}

isa::Program tile_softmax(const Params& p, traffic::SoftmaxSchedule s) {
  traffic::SoftmaxParams x;
  x.rows = small_int(p, "rows", 4);
  x.cols = small_int(p, "cols", 4096);
  x.chunk = small_int(p, "chunk", 1024);
  tile::validate(x);
  return tile::softmax_program(x, s);
}

}  // namespace

std::vector<CatalogEntry> generated_schedules() {
  using MS = sched::MatmulSchedule;
  using TF = traffic::AttentionForward;
  std::vector<CatalogEntry> out;
  out.push_back(entry("matmul-inner", "C = A x B, one output at a time (scalar machine)",
                      {{"m", 2}, {"k", 2}, {"n", 2}, {"regs", 3}}, [](const Params& p) { return scalar_matmul(p, MS::Inner); }));
  out.push_back(entry("matmul-outer", "C = A x B as a sum of outer products (scalar machine)",
                      {{"m", 2}, {"k", 2}, {"n", 2}, {"regs", 6}}, [](const Params& p) { return scalar_matmul(p, MS::Outer); }));
  out.push_back(entry("softmax-3pass", "safe softmax: max pass, sum pass, normalise pass", {{"n", 8}}, [](const Params& p) {
    return isa::assemble(sched::softmax_three_pass_source(small_int(p, "n", 8)), "softmax-3pass");
  }));
  out.push_back(entry("softmax-online", "online softmax: running max and rescaled sum, then normalise", {{"n", 8}},
                      [](const Params& p) {
                        return isa::assemble(sched::online_softmax_source(small_int(p, "n", 8)), "softmax-online");
                      }));
  out.push_back(entry("attention-inner", "scalar attention, loop over queries outermost", {{"n", 4}, {"d", 2}},
                      [](const Params& p) { return scalar_attention(p, sched::LoopOrder::InnerProduct); }));
  out.push_back(entry("attention-outer", "scalar attention, loop over keys/values outermost", {{"n", 4}, {"d", 2}},
                      [](const Params& p) { return scalar_attention(p, sched::LoopOrder::OuterProduct); }));
  for (auto [name, s, what] : {std::tuple{"tile-attention-naive", TF::Naive, "S and P written to DRAM"},
                               std::tuple{"tile-attention-fa1", TF::FA1, "FlashAttention-1: K/V blocks outermost"},
                               std::tuple{"tile-attention-fa2", TF::FA2, "FlashAttention-2: Q blocks outermost"}})
    out.push_back(entry(name, std::string("tile attention forward, ") + what,
                        {{"n", 256}, {"d", 64}, {"br", 64}, {"bc", 64}, {"causal", 0}, {"sram_kib", 192}},
                        [s = s](const Params& p) { return tile_attention(p, s); }));
  out.push_back(entry("tile-matmul-inner", "tiled matmul, C tile resident", {{"n", 256}, {"b", 64}},
                      [](const Params& p) { return tile_matmul(p, traffic::MatmulSchedule::Inner); }));
  out.push_back(entry("tile-matmul-outer", "tiled matmul, k outermost (outer products of tiles)", {{"n", 256}, {"b", 64}},
                      [](const Params& p) { return tile_matmul(p, traffic::MatmulSchedule::Outer); }));
  out.push_back(entry("tile-softmax-3pass", "row softmax over long rows in chunks, 3 passes",
                      {{"rows", 4}, {"cols", 4096}, {"chunk", 1024}},
                      [](const Params& p) { return tile_softmax(p, traffic::SoftmaxSchedule::ThreePass); }));
  out.push_back(entry("tile-softmax-online", "row softmax over long rows in chunks, online (2 passes)",
                      {{"rows", 4}, {"cols", 4096}, {"chunk", 1024}},
                      [](const Params& p) { return tile_softmax(p, traffic::SoftmaxSchedule::Online); }));
  return out;
}

}  // namespace flashsim::viewer
