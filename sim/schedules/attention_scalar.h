// Generator for scalar-machine attention O = softmax(q K^T) V (lessons 8 and 9), with the
// 1/sqrt(d) scale folded into q. Arrays: q[nq][d], K[n][d], V[n][d] in; o[nq][d] out, and the
// per-query running statistics m[nq] (max) and l[nq] (denominator).
//
// Both loop orders use the online-softmax update, so no score or probability ever reaches
// DRAM. Each query's state (m, l, o) starts from its DRAM contents (-inf, 0, 0): loading it
// is the "initialise once per query" of the lesson's table.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "isa/program.h"

namespace flashsim::sim::schedules {

enum class LoopOrder {
  InnerProduct,  // outer loop over queries: q and the state stay in registers, K/V re-loaded
  OuterProduct,  // outer loop over keys/values: K_j, V_j stay in registers, states re-loaded
};

struct AttentionParams {
  std::int64_t n = 4;       // keys/values
  std::int64_t d = 2;       // head dimension
  std::int64_t queries = -1;  // -1: same as n
  LoopOrder order = LoopOrder::InnerProduct;
  // Outer-product order only: queries 0..slots-1 keep their state in registers across all
  // keys/values (loaded and stored once). 0 is pure outer product; slots = queries moves the
  // output traffic all the way to the inner-product figure.
  std::int64_t slots = 0;

  std::int64_t nq() const { return queries < 0 ? n : queries; }
};

// Throws std::invalid_argument for n, d or queries < 1, or slots outside 0..queries
// (slots must be 0 for the inner-product order).
void validate(const AttentionParams& p);

// Assembly text with .param n, d, nq, s and .for loops.
std::string attention_scalar_source(const AttentionParams& p);
// Register count of the generated trace: 2d + 5 (inner) or 3d + 5 + slots (d + 2) (outer).
std::int64_t attention_scalar_registers(const AttentionParams& p);

// Counted traffic of the generated trace. A "row" is d elements (one q, K, V or o vector);
// m and l are single elements per query.
struct AttentionTraffic {
  std::uint64_t q_row_loads = 0;
  std::uint64_t k_row_loads = 0;
  std::uint64_t v_row_loads = 0;
  std::uint64_t o_row_loads = 0;
  std::uint64_t o_row_stores = 0;
  std::uint64_t stat_loads = 0;   // loads of m[i] (l[i] is the same count)
  std::uint64_t stat_stores = 0;  // stores of m[i] (l[i] is the same count)
  bool operator==(const AttentionTraffic&) const = default;
};
// Closed forms, with N = queries and n = keys:
//   inner: q N, K n N, V n N, o loads N, o stores N, stats N loads, 0 stores
//   outer: q N n, K n, V n, o loads = o stores = s + (N - s) n, stats loads s + (N - s) n,
//          stats stores (N - s)(n - 1) (the last visit writes the result, not the state)
AttentionTraffic attention_scalar_traffic(const AttentionParams& p);

// float64 reference: rows of q, K, V (row-major, d columns); returns o (nq x d, row-major).
std::vector<double> attention_reference(const std::vector<double>& q, const std::vector<double>& k,
                                        const std::vector<double>& v, std::int64_t d);

const char* loop_order_name(LoopOrder o);  // "inner" / "outer"

}  // namespace flashsim::sim::schedules

namespace flashsim::sim::schedules {

// Lesson 09's table: q, K, V and o row loads/stores of the inner-product order and of the
// outer-product order with 0, n/2 and n resident output slots, counted by running the
// generated traces (nq = n queries), next to the closed forms. Plain text.
std::string attention_traffic_table(std::int64_t n, std::int64_t d);

// Generators by name, for `flashsim gen` and the viewer: softmax-unsafe, softmax-3pass,
// softmax-online, softmax-online-ratio, variance-two-pass, variance-welford, variance-naive,
// attention-inner, attention-outer. Params: n, d, nq, slots (missing ones take defaults).
std::vector<std::string> scalar_schedule_names();
// Throws std::invalid_argument for an unknown name or bad sizes.
std::string scalar_schedule_source(const std::string& name, const std::map<std::string, std::int64_t>& params);

}  // namespace flashsim::sim::schedules
