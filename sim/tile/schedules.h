// Generators of tile-scale schedules ("element is tile"): each returns a straight-line trace for
// the tile machine, for any sizes, tile shapes and element sizes. The same traces are run with
// values (tests, `flashsim run`) and in count-only mode (sim/traffic.h).
//
// Attention conventions (shared by the generators, the tests and the lessons):
//  * the softmax scale 1/sqrt(d) is folded into Q, so S = Q K^T; it changes no byte count;
//  * queries and keys may differ in length (n, n_kv); under `causal` the diagonal is aligned to
//    the bottom-right, so query r sees key c iff c <= r + (n_kv - n). When n > n_kv the first
//    n - n_kv rows see no key at all: their output is 0 and their logsumexp is -inf;
//  * the base-2 variant uses EXP2D/LOG2 and expects Q pre-scaled by log2(e); its logsumexp is in
//    base 2 (the Triton kernels' convention);
//  * batch*heads > 1 gives each head its own arrays, named NAME_hH.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "isa/program.h"
#include "sim/traffic.h"

namespace flashsim::tile {

// Tiled matmul. Inner: C tile resident, A and B tiles streamed (3 tiles of SRAM).
// Outer: k outermost in passes of k_chunk k-tiles; each pass keeps k_chunk tiles of A resident
// and re-reads / re-writes every C tile. k_chunk = 1 is the pure outer product, k_chunk = Tk
// keeps C resident for the whole k loop; the values in between are the spectrum.
isa::Program matmul_program(const traffic::MatmulParams& p, traffic::MatmulSchedule s);

// Row softmax over rows longer than the SRAM: 3 passes (max, sum, write) or online 2 passes.
isa::Program softmax_program(const traffic::SoftmaxParams& p, traffic::SoftmaxSchedule s);

isa::Program attention_forward_program(const traffic::AttentionParams& p, traffic::AttentionForward s);
isa::Program attention_backward_program(const traffic::AttentionParams& p, traffic::AttentionBackward s);

// Where a thread block of the GPU kernels that run the schedule begins: the index of its first
// instruction in the piece, the launch (kernel) it belongs to, launches numbered in the order
// they run, and its position in that launch's block order. Every generator states the grid and
// block order of the kernels in kernels/ that run it:
//  * matmul inner: one launch, a block per C tile (i, j), order i*Tn + j (blockIdx.x = j);
//    outer: a launch per pass of k_chunk k-tiles, the same blocks and order in each;
//  * softmax three-pass / online: a launch per pass (max, sum, normalize / stats, normalize), a
//    block per (row, chunk), order row*chunks + chunk;
//  * attention forward FA2: one launch, a block per (head, Q tile), order head*Tr + i, or
//    head*Tr + (Tr-1-i) with heavy_first under causal; FA1: a launch per K/V tile j, a block per
//    (head, Q tile); naive: scores, row statistics, normalization and P V as four launches, a block
//    per (head, Q tile) in each;
//  * attention backward: D = rowsum(dO * O) as launch 0, a block per (head, Q tile); two-pass:
//    the dQ launch (a block per (head, Q tile)) before the dK/dV launch (per (head, K/V tile));
//    atomic-dq: the dK/dV launch with dQ accumulated, in order head*Tc + j, or with
//    heads_per_group the fast kernel's order (groups of heads, K/V tile outer inside a group,
//    the longest K/V tile first under causal, or the latest with kv_shortest_first), then the conversion launch; the row-wise ones: a block per
//    (head, Q tile), then the conversions.
struct BlockStart {
  std::size_t pc = 0;
  std::uint64_t launch = 0, order = 0;
};

// Streaming form for counting: the same schedules, handed over in pieces of at least
// `min_chunk` instructions, cut only where no register value is live (the start of an outer
// loop iteration), so each piece runs on a fresh machine with the same result. `arrays` holds
// every array declared so far; `config` is the finished program's machine configuration;
// `blocks` lists the thread blocks that begin in this piece.
using ChunkSink = std::function<void(const std::vector<isa::ArrayDecl>& arrays, const isa::MachineConfig& config,
                                     isa::Code& code, const std::vector<BlockStart>& blocks)>;
void stream_matmul(const traffic::MatmulParams& p, traffic::MatmulSchedule s, std::size_t min_chunk, const ChunkSink& sink);
void stream_softmax(const traffic::SoftmaxParams& p, traffic::SoftmaxSchedule s, std::size_t min_chunk, const ChunkSink& sink);
void stream_attention_forward(const traffic::AttentionParams& p, traffic::AttentionForward s, std::size_t min_chunk,
                              const ChunkSink& sink);
void stream_attention_backward(const traffic::AttentionParams& p, traffic::AttentionBackward s, std::size_t min_chunk,
                               const ChunkSink& sink);

// Tile (i, j) of the score matrix has at least one visible entry, or is the forced first block
// of a query block that sees no key at all (the schedules visit key block 0 so that such rows
// still get their 0 output and -inf logsumexp).
bool attention_tile_visited(const traffic::AttentionParams& p, std::int64_t i, std::int64_t j);
// Some entry of tile (i, j) is hidden (padding key or causal), so the schedule emits a MASK.
bool attention_tile_needs_mask(const traffic::AttentionParams& p, std::int64_t i, std::int64_t j);

std::int64_t kv_length(const traffic::AttentionParams& p);  // n_kv, or n when n_kv is 0

// Array name for head h of batch*heads: "Q" when there is one head, else "Q_h3".
std::string head_array(const std::string& base, std::int64_t h, std::int64_t heads);

// Throws std::invalid_argument with a clear message for sizes that make no sense.
void validate(const traffic::AttentionParams& p);
void validate(const traffic::MatmulParams& p);
void validate(const traffic::SoftmaxParams& p);

std::string to_string(traffic::AttentionForward s);
std::string to_string(traffic::AttentionBackward s);
std::string to_string(traffic::MatmulSchedule s);
std::string to_string(traffic::SoftmaxSchedule s);

}  // namespace flashsim::tile
