// The L2 model (sim/l2.h) and the launch model (sim/launch.h) on cases small enough to count by
// hand: every expected number below is derived in the comment next to it, not taken from the code.
#include <catch2/catch.hpp>

#include <algorithm>
#include <bit>
#include <stdexcept>
#include <vector>

#include "sim/l2.h"
#include "sim/launch.h"
#include "sim/traffic.h"

using namespace flashsim;
using sim::L2Cache;
using sim::L2Config;

namespace {

constexpr std::uint64_t KiB = 1024, MiB = 1024 * 1024;

L2Config l2_of(std::uint64_t capacity) {
  L2Config c;
  c.capacity_bytes = capacity;  // 128-byte lines, 32-byte sectors (the defaults)
  return c;
}

sim::GpuModel gpu_of(std::uint64_t capacity, std::int64_t sms, std::int64_t blocks_per_sm = 1) {
  sim::GpuModel g;
  g.l2 = l2_of(capacity);
  g.sms = sms;
  g.blocks_per_sm = blocks_per_sm;
  return g;
}

// One contiguous run of `bytes` at `addr`, as a single-row tile access.
sim::BlockAccess run_of(std::uint64_t addr, std::uint32_t bytes, bool write = false) {
  return sim::BlockAccess{addr, bytes, 1, bytes, 0, write};
}

// Every array's requested and HBM bytes of two counts are equal.
void require_same(const traffic::Traffic& a, const traffic::Traffic& b) {
  REQUIRE(a.arrays.size() == b.arrays.size());
  for (std::size_t k = 0; k < a.arrays.size(); ++k) {
    INFO("array " << a.arrays[k].name);
    REQUIRE(a.arrays[k].name == b.arrays[k].name);
    REQUIRE(a.arrays[k].bytes_read == b.arrays[k].bytes_read);
    REQUIRE(a.arrays[k].bytes_written == b.arrays[k].bytes_written);
    REQUIRE(a.arrays[k].hbm_bytes_read == b.arrays[k].hbm_bytes_read);
    REQUIRE(a.arrays[k].hbm_bytes_written == b.arrays[k].hbm_bytes_written);
  }
}

// No L2 (or an empty one): HBM sees exactly what was requested.
void require_hbm_is_requested(const traffic::Traffic& t) {
  REQUIRE(!t.l2);
  REQUIRE(t.l2_hits() == 0);
  for (const auto& a : t.arrays) {
    INFO("array " << a.name);
    REQUIRE(a.hbm_bytes_read == a.bytes_read);
    REQUIRE(a.hbm_bytes_written == a.bytes_written);
  }
}

}  // namespace

TEST_CASE("l2: a stream larger than the cache misses every line", "[l2]") {
  // 4 MiB cycled twice through 1 MiB of LRU: each line is evicted 8192 lines before its reuse.
  // 2 passes * 4 MiB / 32 B = 262144 sector misses, no hit, 8 MiB from HBM.
  L2Cache c(l2_of(1 * MiB), 1);
  for (int pass = 0; pass < 2; ++pass)
    for (std::uint64_t a = 0; a < 4 * MiB; a += 4 * KiB) c.read(a, 4 * KiB, 0);
  REQUIRE(c.counts()[0].hbm_read == 8 * MiB);
  REQUIRE(c.counts()[0].hits == 0);
  REQUIRE(c.counts()[0].misses == 262144);
  REQUIRE(c.counts()[0].hbm_written == 0);
}

TEST_CASE("l2: a re-read within capacity hits", "[l2]") {
  // 256 KiB = 8192 sectors: the first pass misses all of them, the second hits all of them.
  L2Cache c(l2_of(1 * MiB), 1);
  c.read(0, 256 * KiB, 0);
  REQUIRE(c.counts()[0].misses == 8192);
  REQUIRE(c.counts()[0].hits == 0);
  c.read(0, 256 * KiB, 0);
  REQUIRE(c.counts()[0].misses == 8192);
  REQUIRE(c.counts()[0].hits == 8192);
  REQUIRE(c.counts()[0].hbm_read == 256 * KiB);
  REQUIRE(c.resident_bytes() == 256 * KiB);
}

TEST_CASE("l2: LRU evicts the least recently used line", "[l2]") {
  // 4 lines. A B C D fill it (16 sector misses); re-reading A hits (4 hits) and makes B the
  // oldest; E evicts B (4 misses). Then A hits again (8 hits) and B misses (24 misses) again.
  L2Cache c(l2_of(4 * 128), 1);
  const std::uint64_t A = 0, B = 128, C = 256, D = 384, E = 512;
  for (auto line : {A, B, C, D, A, E}) c.read(line, 128, 0);
  REQUIRE(c.counts()[0].misses == 20);
  REQUIRE(c.counts()[0].hits == 4);
  c.read(A, 128, 0);
  REQUIRE(c.counts()[0].hits == 8);
  REQUIRE(c.counts()[0].misses == 20);
  c.read(B, 128, 0);
  REQUIRE(c.counts()[0].hits == 8);
  REQUIRE(c.counts()[0].misses == 24);
  REQUIRE(c.counts()[0].hbm_read == 6 * 128);  // A B C D E B
  REQUIRE(c.resident_bytes() == 4 * 128);
}

TEST_CASE("l2: a dirty line is written back exactly once", "[l2]") {
  SECTION("by flush; a second flush writes nothing") {
    // Write-allocate without fetch: no HBM read; 4 dirty sectors = 128 bytes at the first flush.
    L2Cache c(l2_of(1 * MiB), 1);
    c.write(0, 128, 0);
    REQUIRE(c.counts()[0].hbm_read == 0);
    REQUIRE(c.counts()[0].hbm_written == 0);
    REQUIRE(c.dirty_sectors() == 4);
    c.flush();
    REQUIRE(c.counts()[0].hbm_written == 128);
    REQUIRE(c.dirty_sectors() == 0);
    c.flush();
    REQUIRE(c.counts()[0].hbm_written == 128);
    c.read(0, 128, 0);  // the flushed line stays, clean and valid
    REQUIRE(c.counts()[0].hits == 4);
    REQUIRE(c.counts()[0].hbm_read == 0);
  }
  SECTION("by eviction, charged to the writer; not again at flush") {
    // One line of capacity: stream 1 reading line 1 evicts stream 0's dirty line 0.
    L2Cache c(l2_of(128), 2);
    c.write(0, 128, 0);
    c.read(128, 128, 1);
    REQUIRE(c.counts()[0].hbm_written == 128);
    REQUIRE(c.counts()[1].hbm_written == 0);
    REQUIRE(c.counts()[1].hbm_read == 128);
    c.flush();
    REQUIRE(c.counts()[0].hbm_written == 128);
    REQUIRE(c.counts()[1].hbm_written == 0);
  }
  SECTION("partial writes write back whole sectors only") {
    // 4 bytes at 40 lie in sector 1 (32..63): 32 bytes. 8 bytes at 60 span sectors 1 and 2, and
    // sector 1 is already dirty: one more sector, 64 bytes in all.
    L2Cache c(l2_of(1 * MiB), 1);
    c.write(40, 4, 0);
    REQUIRE(c.dirty_sectors() == 1);
    c.write(60, 8, 0);
    REQUIRE(c.dirty_sectors() == 2);
    c.flush();
    REQUIRE(c.counts()[0].hbm_written == 64);
  }
  SECTION("a 4-byte write alone costs one sector") {
    L2Cache c(l2_of(1 * MiB), 1);
    c.write(4, 4, 0);
    c.flush();
    REQUIRE(c.counts()[0].hbm_written == 32);
  }
}

TEST_CASE("l2: capacity 0 gives the counts without a model", "[l2]") {
  const sim::GpuModel empty = gpu_of(0, 132);
  SECTION("attention forward FA2") {
    traffic::AttentionParams p;
    p.batch_heads = 2;
    p.n = 256;
    p.d = 64;
    const auto none = traffic::count_attention_forward(p, traffic::AttentionForward::FA2, nullptr);
    const auto zero = traffic::count_attention_forward(p, traffic::AttentionForward::FA2, &empty);
    require_hbm_is_requested(none);
    require_hbm_is_requested(zero);
    require_same(none, zero);
    // Q 256*64*2 = 32 KiB per head, read once: 64 KiB for two heads (a sanity anchor).
    REQUIRE(none.find("Q")->bytes_read == 64 * KiB);
  }
  SECTION("matmul") {
    traffic::MatmulParams p;
    p.m = p.n = p.k = 128;
    const auto none = traffic::count_matmul(p, traffic::MatmulSchedule::Inner, nullptr);
    const auto zero = traffic::count_matmul(p, traffic::MatmulSchedule::Inner, &empty);
    require_hbm_is_requested(none);
    require_hbm_is_requested(zero);
    require_same(none, zero);
  }
  SECTION("softmax") {
    traffic::SoftmaxParams p;
    p.rows = 64;
    p.cols = 4096;
    const auto none = traffic::count_softmax(p, traffic::SoftmaxSchedule::ThreePass, nullptr);
    const auto zero = traffic::count_softmax(p, traffic::SoftmaxSchedule::ThreePass, &empty);
    require_hbm_is_requested(none);
    require_hbm_is_requested(zero);
    require_same(none, zero);
  }
}

TEST_CASE("l2: resident blocks share what they read", "[l2]") {
  SECTION("two blocks reading the same 16 KiB tile at once read it from HBM once") {
    // 16 KiB = 512 sectors: block 0 misses them, block 1 (resident beside it) hits them.
    sim::LaunchRecorder r;
    for (std::uint64_t b = 0; b < 2; ++b) {
      r.begin_block(0, b);
      r.add(run_of(0, 16 * KiB));
    }
    const auto c = r.simulate(gpu_of(1 * MiB, 2), 1);
    REQUIRE(c[0].hbm_read == 16 * KiB);
    REQUIRE(c[0].misses == 512);
    REQUIRE(c[0].hits == 512);
  }
  SECTION("with a cache too small to keep a block's lines, only concurrency shares them") {
    // L2 of 2 lines; each block reads lines X, Y, Z (4 sectors each).
    // Sequential (1 SM): X Y Z | X Y Z, each line gone before its reuse: 6 misses, 768 bytes.
    // Together (2 SMs): rounds (X,X) (Y,Y) (Z,Z), the second read of each hits: 384 bytes.
    sim::LaunchRecorder r;
    for (std::uint64_t b = 0; b < 2; ++b) {
      r.begin_block(0, b);
      for (std::uint64_t line : {0, 1, 2}) r.add(run_of(line * 128, 128));
    }
    const auto seq = r.simulate(gpu_of(2 * 128, 1), 1);
    REQUIRE(seq[0].hbm_read == 6 * 128);
    REQUIRE(seq[0].hits == 0);
    const auto together = r.simulate(gpu_of(2 * 128, 2), 1);
    REQUIRE(together[0].hbm_read == 3 * 128);
    REQUIRE(together[0].hits == 12);
    // The same with 1 SM holding 2 blocks.
    const auto occupancy = r.simulate(gpu_of(2 * 128, 1, 2), 1);
    REQUIRE(occupancy[0].hbm_read == 3 * 128);
  }
  SECTION("capacity 0: the recorder replays the requested bytes") {
    sim::LaunchRecorder r;
    r.add(run_of(0, 100));
    r.add(run_of(0, 100, true));
    const auto c = r.simulate(gpu_of(0, 1), 1);
    REQUIRE(c[0].hbm_read == 100);
    REQUIRE(c[0].hbm_written == 100);
  }
}

TEST_CASE("l2: launches keep the L2 between them", "[l2]") {
  SECTION("a second launch re-reading the first's data hits") {
    sim::LaunchRecorder r;
    r.begin_block(1, 0);  // recorded first, runs second: launches run in ascending order
    r.add(run_of(0, 16 * KiB));
    r.begin_block(0, 0);
    r.add(run_of(0, 16 * KiB));
    const auto c = r.simulate(gpu_of(1 * MiB, 132), 1);
    REQUIRE(c[0].hbm_read == 16 * KiB);
    REQUIRE(c[0].hits == 512);
  }
  SECTION("a write in launch 0 read in launch 1: no read, one write-back at the end") {
    sim::LaunchRecorder r;
    r.begin_block(0, 0);
    r.add(run_of(0, 16 * KiB, true));
    r.begin_block(1, 0);
    r.add(run_of(0, 16 * KiB));
    const auto c = r.simulate(gpu_of(1 * MiB, 132), 1);
    REQUIRE(c[0].hbm_read == 0);
    REQUIRE(c[0].hbm_written == 16 * KiB);
    REQUIRE(c[0].hits == 512);
  }
}

TEST_CASE("l2: FA2 forward through a GPU model", "[l2]") {
  traffic::AttentionParams p;  // br = bc = 64, 2-byte elements, 4-byte logsumexp
  p.n = 1024;
  p.d = 64;
  SECTION("everything fits: compulsory traffic only") {
    // Per head Q, K, V, O are 1024*64*2 = 128 KiB and L is 1024*4 = 4 KiB; 4 heads = 2 MiB in
    // a 50 MiB L2: read Q+K+V = 3*4*128 KiB = 1.5 MiB, written O+L = 512 KiB + 16 KiB.
    p.batch_heads = 4;
    const auto g = gpu_of(50 * MiB, 132);
    const auto t = traffic::count_attention_forward(p, traffic::AttentionForward::FA2, &g);
    REQUIRE(t.l2);
    REQUIRE(t.hbm_bytes_read() == 1536 * KiB);
    REQUIRE(t.hbm_bytes_written() == 528 * KiB);
    for (const char* name : {"Q", "K", "V"}) REQUIRE(t.find(name)->hbm_bytes_read == 512 * KiB);
    REQUIRE(t.find("O")->hbm_bytes_written == 512 * KiB);
    REQUIRE(t.find("L")->hbm_bytes_written == 16 * KiB);
    // K and V are requested by all 16 Q tiles: 15 of 16 of their reads hit.
    REQUIRE(t.find("K")->bytes_read == 16 * 512 * KiB);
  }
  SECTION("a tiny L2: every re-read misses") {
    // One head, 1 SM, 64 KiB of L2. Each block reads its Q tile (8 KiB) then K_j, V_j for j = 0..15:
    // a 256 KiB cycle through 64 KiB of LRU, so nothing survives to its reuse. Requested and HBM
    // read: Q 128 KiB + 16 * (K + V) 16 * 256 KiB = 4224 KiB, all sector-aligned (128-byte rows).
    // Written: O 128 KiB + L 4 KiB, each once (write-allocate, written back on eviction or flush).
    p.batch_heads = 1;
    const auto g = gpu_of(64 * KiB, 1);
    const auto t = traffic::count_attention_forward(p, traffic::AttentionForward::FA2, &g);
    REQUIRE(t.bytes_read() == 4224 * KiB);
    REQUIRE(t.hbm_bytes_read() == 4224 * KiB);
    REQUIRE(t.hbm_bytes_written() == 132 * KiB);
    REQUIRE(t.bytes_written() == 132 * KiB);
    REQUIRE(t.find("K")->l2_hits == 0);
    REQUIRE(t.find("V")->l2_hits == 0);
  }
}

TEST_CASE("l2: parse_size", "[l2]") {
  REQUIRE(sim::parse_size("50MiB") == 52428800);
  REQUIRE(sim::parse_size("60MB") == 60000000);
  REQUIRE(sim::parse_size("4096") == 4096);
  REQUIRE(sim::parse_size("1KiB") == 1024);
  REQUIRE(sim::parse_size("2GiB") == 2147483648ull);
  REQUIRE(sim::parse_size("7B") == 7);
  for (const char* bad : {"-1", "0x", "abc", "", "12QB", "99999999999999999999GiB", "17179869184GiB", "1 MiB"}) {
    INFO("text '" << bad << "'");
    REQUIRE_THROWS_AS(sim::parse_size(bad), std::invalid_argument);
  }
}

TEST_CASE("l2: validate rejects GPU models that cannot run", "[l2]") {
  REQUIRE_NOTHROW(sim::validate(gpu_of(50 * MiB, 132)));
  REQUIRE_NOTHROW(sim::validate(gpu_of(0, 1)));  // no L2 is a valid model
  sim::GpuModel g = gpu_of(50 * MiB, 0);
  REQUIRE_THROWS_AS(sim::validate(g), std::invalid_argument);
  g = gpu_of(50 * MiB, 132, 0);
  REQUIRE_THROWS_AS(sim::validate(g), std::invalid_argument);
  g = gpu_of(50 * MiB, 132);
  g.l2.line_bytes = 100;  // not a power of two
  REQUIRE_THROWS_AS(sim::validate(g), std::invalid_argument);
  g = gpu_of(64, 132);  // less than one 128-byte line
  REQUIRE_THROWS_AS(sim::validate(g), std::invalid_argument);
  // The traffic counts validate the model too, before anything runs.
  traffic::MatmulParams p;
  p.m = p.n = p.k = 64;
  REQUIRE_THROWS_AS(traffic::count_matmul(p, traffic::MatmulSchedule::Inner, &g), std::invalid_argument);
}

namespace {
// The first line-aligned address from `from` whose home is slice `home`.
std::uint64_t line_homed(const sim::PartitionedL2& l2, std::uint32_t home, std::uint64_t from = 0) {
  for (std::uint64_t a = from;; a += 128)
    if (l2.home_of(a) == home) return a;
}
}  // namespace

TEST_CASE("l2: two partitions keep a copy of far data near its reader", "[l2]") {
  // 2 slices of 2 lines each (512 bytes in all).
  sim::PartitionedL2 l2(l2_of(512), 2, 1);
  const std::uint64_t a = line_homed(l2, 0);
  // Slice 0's SM reads its own line: one miss per sector, 128 bytes of HBM.
  l2.access_rows(a, 128, 1, 128, 0, false, 0);
  CHECK(l2.counts()[0].hbm_read == 128);
  // Slice 1's SM reads it: a miss in its copy, a hit at home: no HBM.
  l2.access_rows(a, 128, 1, 128, 0, false, 1);
  CHECK(l2.counts()[0].hbm_read == 128);
  CHECK(l2.counts()[0].hits == 4);
  // Again: the near copy hits.
  l2.access_rows(a, 128, 1, 128, 0, false, 1);
  CHECK(l2.counts()[0].hits == 8);
  CHECK(l2.counts()[0].misses == 4);
}

TEST_CASE("l2: copies take room, so shared data fits in half the L2", "[l2]") {
  // Four lines, two homed in each slice, read in turn by SMs of both slices. One shared cache of
  // 512 bytes (4 lines) holds them all: 4 misses, then hits. Partitioned, each slice holds its 2
  // home lines plus copies of the other 2 for its own SMs: 4 lines a slice, twice its room, so
  // LRU evicts before reuse and the home lines go back to HBM.
  sim::PartitionedL2 one(l2_of(512), 1, 1), two(l2_of(512), 2, 1);
  std::vector<std::uint64_t> lines = {line_homed(two, 0), line_homed(two, 1)};
  lines.push_back(line_homed(two, 0, lines[0] + 128));
  lines.push_back(line_homed(two, 1, lines[1] + 128));
  for (int round = 0; round < 3; ++round)
    for (std::uint32_t sm = 0; sm < 2; ++sm)
      for (auto a : lines) {
        one.access_rows(a, 128, 1, 128, 0, false, sm);
        two.access_rows(a, 128, 1, 128, 0, false, sm);
      }
  CHECK(one.counts()[0].hbm_read == 4 * 128);
  CHECK(two.counts()[0].hbm_read > 4 * 128);
  // Writes go to the home slice only, and come back once.
  sim::PartitionedL2 w(l2_of(512), 2, 1);
  w.access_rows(lines[1], 128, 1, 128, 0, true, 0);
  w.flush();
  CHECK(w.counts()[0].hbm_written == 128);
  CHECK(w.counts()[0].hbm_read == 0);
}

TEST_CASE("l2: sets of ways; a direct-mapped set holds one line", "[l2]") {
  // 8 lines in sets of 1 way: two lines that hash onto the same set evict each other, although
  // the cache has room for 8; fully associative, the same two lines both stay.
  L2Config c = l2_of(8 * 128);
  c.ways = 1;
  L2Cache direct(c, 1);
  REQUIRE(direct.sets() == 8);
  std::uint64_t a = 0, b = 128;
  while (direct.set_of(b) != direct.set_of(a)) b += 128;
  for (int k = 0; k < 3; ++k) {
    direct.read(a, 128, 0);
    direct.read(b, 128, 0);
  }
  CHECK(direct.counts()[0].hits == 0);  // 6 reads of 4 sectors, every one a miss
  CHECK(direct.counts()[0].hbm_read == 6 * 128);
  L2Cache full(l2_of(8 * 128), 1);
  for (int k = 0; k < 3; ++k) {
    full.read(a, 128, 0);
    full.read(b, 128, 0);
  }
  CHECK(full.counts()[0].hbm_read == 2 * 128);  // two misses, then hits
  // Ways equal to the lines is one set: the fully associative cache.
  c.ways = 8;
  CHECK(L2Cache(c, 1).sets() == 1);
  c.ways = 9;  // more ways than lines
  CHECK_THROWS_AS(L2Cache(c, 1), std::invalid_argument);
}

TEST_CASE("l2: a set over its dirty limit writes its oldest dirty line back and keeps it", "[l2]") {
  L2Config c = l2_of(8 * 128);  // fully associative, 8 lines
  c.dirty_ways = 2;
  L2Cache l2(c, 1);
  l2.write(0, 128, 0);    // A dirty
  l2.write(128, 128, 0);  // B dirty: 2, the limit
  CHECK(l2.counts()[0].hbm_written == 0);
  l2.write(256, 128, 0);  // C dirty: 3 > 2, so A (the oldest dirty) goes out early
  CHECK(l2.counts()[0].hbm_written == 128);
  CHECK(l2.dirty_sectors() == 2 * 4);
  l2.read(0, 128, 0);  // A stayed, clean: a hit, no HBM read
  CHECK(l2.counts()[0].hbm_read == 0);
  CHECK(l2.counts()[0].hits == 4);
  l2.write(128, 128, 0);  // B again: already dirty, nothing changes
  CHECK(l2.counts()[0].hbm_written == 128);
  l2.flush();  // B and C
  CHECK(l2.counts()[0].hbm_written == 3 * 128);
  c.dirty_ways = 9;
  CHECK_THROWS_AS(L2Cache(c, 1), std::invalid_argument);
}

TEST_CASE("l2: sets that share a dirty limit write back the group's oldest dirty line, from either set", "[l2]") {
  L2Config c = l2_of(8 * 128);  // 4 sets of 2 lines; sets 0 and 1 form one group
  c.ways = 2;
  c.dirty_ways = 1;
  c.dirty_group = 2;
  L2Cache probe(c, 1);
  REQUIRE(probe.sets() == 4);
  std::vector<std::uint64_t> in0, in1;  // line addresses the hash puts in set 0 and in set 1
  for (std::uint64_t a = 0; in0.size() < 2 || in1.empty(); a += 128) {
    if (probe.set_of(a) == 0 && in0.size() < 2) in0.push_back(a);
    if (probe.set_of(a) == 1 && in1.empty()) in1.push_back(a);
  }
  for (std::uint32_t group : {1u, 2u}) {
    c.dirty_group = group;
    L2Cache l2(c, 1);
    l2.write(in0[0], 128, 0);  // A dirty in set 0
    l2.write(in0[1], 128, 0);  // B dirty in set 0: over a set's limit of 1, within the group's 2
    CHECK(l2.counts()[0].hbm_written == (group == 1 ? 128u : 0u));
    l2.write(in1[0], 128, 0);  // C dirty in set 1: the group holds 3 > 2, so A, its oldest, goes out
    CHECK(l2.counts()[0].hbm_written == 128);
    l2.read(in0[0], 128, 0);  // A stayed, clean
    CHECK(l2.counts()[0].hbm_read == 0);
    CHECK(l2.dirty_sectors() == 2 * 4);  // B and C
  }
  c.dirty_group = 0;
  CHECK_THROWS_AS(L2Cache(c, 1), std::invalid_argument);
}

TEST_CASE("l2: dirty lines at the start are the launch's HBM writes only when it evicts them", "[l2]") {
  // A 1 MiB LRU with 64 KiB of unrelated dirty lines in it: reading 512 KiB leaves room for both
  // (nothing written back); reading 2 MiB sweeps the whole cache and evicts all 64 KiB of them.
  sim::GpuModel g = gpu_of(1 * MiB, 4);
  g.dirty_at_start_bytes = 64 * KiB;
  for (auto [bytes, evicted] : {std::pair{512 * KiB, std::uint64_t{0}}, std::pair{2 * MiB, 64 * KiB}}) {
    sim::LaunchRecorder r;
    r.begin_block(0, 0);
    r.add(run_of(0, bytes));
    std::uint64_t written = 7;
    const auto c = r.simulate(g, 1, &written);
    REQUIRE(c.size() == 1);  // the unrelated lines have no stream of their own in the result
    CHECK(c[0].hbm_read == bytes);
    CHECK(c[0].hbm_written == 0);
    CHECK(written == evicted);
  }
}

TEST_CASE("l2: page-balanced sets hold a buffer of exactly the capacity; random ones do not", "[l2]") {
  // 64 lines in 16 sets of 4. A 64-line buffer read twice: with pages of 16 lines each spread over
  // the 16 sets (a rotation per page), every set gets exactly 4 lines, so the second pass hits
  // everywhere (64 lines = 8 KiB read from HBM once). Hashing each line at random puts 5 or more in
  // some set, whose lines then evict each other on the second pass.
  L2Config c = l2_of(64 * 128);
  c.ways = 4;
  c.page_lines = 16;
  L2Cache even(c, 1);
  for (int pass = 0; pass < 2; ++pass) even.read(0, 64 * 128, 0);
  CHECK(even.counts()[0].hbm_read == 64 * 128);
  c.page_lines = 0;
  L2Cache random(c, 1);
  for (int pass = 0; pass < 2; ++pass) random.read(0, 64 * 128, 0);
  CHECK(random.counts()[0].hbm_read > 64 * 128);
  // Two partitions: a page's lines take the slices in turn, half of a 16-line page in each.
  c.page_lines = 16;
  sim::PartitionedL2 two(c, 2, 1);
  int in_first = 0;
  for (std::uint64_t line = 0; line < 16; ++line) in_first += two.home_of(line * 128) == 0 ? 1 : 0;
  CHECK(in_first == 8);
}

TEST_CASE("l2: a copy entering at a low rank is evicted before the lines above it", "[l2]") {
  // One set of 4 lines. A, B, C, D read (most recent first: D C B A). A copy of E with rank 1
  // evicts A and enters just above the least recently used line: D C E B. The next two misses
  // (F, G) evict B, then E: C stays. With rank 0 the copy enters as the most recent (E D C B) and
  // F, G evict B and C: E stays.
  for (std::uint32_t rank : {1u, 0u}) {
    L2Config c = l2_of(4 * 128);
    c.ways = 4;
    c.copy_rank = rank;
    L2Cache l2(c, 1);
    for (std::uint64_t line : {0, 1, 2, 3}) l2.access_line(line, 0xf, 0, false);
    l2.copy_line(4, 0xf, 0);
    l2.access_line(5, 0xf, 0, false);
    l2.access_line(6, 0xf, 0, false);
    INFO("rank " << rank);
    CHECK(l2.resident_sectors(4 * 128, 128) == (rank ? 0u : 4u));  // E
    CHECK(l2.resident_sectors(2 * 128, 128) == (rank ? 4u : 0u));  // C
  }
  L2Config bad = l2_of(4 * 128);
  bad.ways = 4;
  bad.copy_rank = 5;
  CHECK_THROWS_AS(L2Cache(bad, 1), std::invalid_argument);
}

TEST_CASE("l2: paired Q tiles, one block taking the heaviest causal tile and then the lightest", "[l2]") {
  // One head, n = 256, d = 64, 64 x 64 tiles, causal: Q tile i reads K_j, V_j for j <= i. Every
  // tile of Q, K, V, O is 64 rows x 128 bytes = 8 KiB (64 lines); L_i is 64 x 4 bytes (2 lines).
  traffic::AttentionParams p;
  p.n = 256;
  p.d = 64;
  p.causal = true;
  p.heavy_first = true;
  // One SM and an LRU of 33 KiB (four tiles and 8 lines), so blocks run one after the other.
  const auto g = gpu_of(33 * KiB, 1);
  const auto one_per_block = traffic::count_attention_forward(p, traffic::AttentionForward::FA2, &g);
  p.paired_tiles = true;
  const auto paired = traffic::count_attention_forward(p, traffic::AttentionForward::FA2, &g);
  // The order changes no request: K is requested 4 + 3 + 2 + 1 = 10 tiles = 80 KiB either way.
  for (const char* name : {"Q", "K", "V", "O", "L"}) {
    INFO(name);
    REQUIRE(paired.find(name)->bytes_read == one_per_block.find(name)->bytes_read);
    REQUIRE(paired.find(name)->bytes_written == one_per_block.find(name)->bytes_written);
  }
  REQUIRE(paired.find("K")->bytes_read == 80 * KiB);
  // Heaviest first, tiles 3, 2, 1, 0: between two reads of a K or V tile come at least
  // 5 tiles and 2 lines (tile 0's K_0: V_0, K_1, V_1, O_1, L_1, Q_0), more than the L2 holds.
  REQUIRE(one_per_block.find("K")->hbm_bytes_read == 80 * KiB);
  REQUIRE(one_per_block.find("V")->hbm_bytes_read == 80 * KiB);
  // Paired, tiles 3 then 0 in one block, 2 then 1 in the next: tile 2 re-reads K_0 with only V_0,
  // O_0, L_0 and Q_2 in between (3 tiles and 2 lines), and V_0 after O_0, L_0, Q_2 and K_0: both
  // hit. Every other re-read has 7 tiles or more in between. HBM: 80 - 8 KiB each.
  REQUIRE(paired.find("K")->hbm_bytes_read == 72 * KiB);
  REQUIRE(paired.find("V")->hbm_bytes_read == 72 * KiB);
  REQUIRE(paired.find("Q")->hbm_bytes_read == 32 * KiB);
}

namespace {

// A plain model of one set-associative (or, with one set, fully associative) LRU cache, written
// for this test only: each set an explicit list of lines, most recent first.
struct ReferenceL2 {
  struct Line {
    std::uint64_t line;
    std::uint32_t valid = 0, dirty = 0;
    std::uint64_t last_use = 0;
  };
  const L2Cache& shape;  // only for its set mapping
  std::uint32_t ways, dirty_ways, group;
  std::vector<std::vector<Line>> sets;
  sim::L2Counts counts;
  std::uint64_t clock = 0;
  ReferenceL2(const L2Cache& l2, std::uint32_t ways_, std::uint32_t dirty_ways_, std::uint32_t group_ = 1)
      : shape(l2), ways(ways_), dirty_ways(dirty_ways_), group(group_), sets(l2.sets()) {}
  static std::uint64_t sectors(std::uint32_t mask) { return static_cast<std::uint64_t>(std::popcount(mask)); }
  void access(std::uint64_t addr, std::uint32_t bytes, bool write) {
    for (std::uint64_t a = addr; a < addr + bytes; a = (a / 128 + 1) * 128) {
      const std::uint64_t end = std::min<std::uint64_t>(addr + bytes, (a / 128 + 1) * 128);
      std::uint32_t mask = 0;
      for (std::uint64_t s = a / 32; s <= (end - 1) / 32; ++s) mask |= 1u << (s % 4);
      auto& set = sets[shape.set_of(a)];
      auto it = std::find_if(set.begin(), set.end(), [&](const Line& l) { return l.line == a / 128; });
      Line line{a / 128};
      if (it != set.end()) {
        line = *it;
        set.erase(it);
      } else if (set.size() == ways) {
        counts.hbm_written += sectors(set.back().dirty) * 32;
        set.pop_back();
      }
      counts.hits += sectors(line.valid & mask);
      counts.misses += sectors(mask & ~line.valid);
      if (!write) counts.hbm_read += sectors(mask & ~line.valid) * 32;
      line.valid |= mask;
      const bool newly_dirty = write && line.dirty == 0;
      if (write) line.dirty |= mask;
      line.last_use = ++clock;
      set.insert(set.begin(), line);
      if (newly_dirty && dirty_ways) {  // every line of the set's group looked at, the oldest dirty one cleaned
        const std::size_t first = shape.set_of(a) / group * group, last = std::min(sets.size(), first + group);
        long dirty_lines = 0;
        Line* oldest = nullptr;
        for (std::size_t k = first; k < last; ++k)
          for (auto& l : sets[k])
            if (l.dirty) {
              ++dirty_lines;
              if (!oldest || l.last_use < oldest->last_use) oldest = &l;
            }
        if (dirty_lines > static_cast<long>(dirty_ways * (last - first))) {
          counts.hbm_written += sectors(oldest->dirty) * 32;
          oldest->dirty = 0;
        }
      }
    }
  }
  void flush() {
    for (auto& set : sets)
      for (auto& l : set) {
        counts.hbm_written += sectors(l.dirty) * 32;
        l.dirty = 0;
      }
  }
};

}  // namespace

TEST_CASE("l2: a random stream gives the counts of a plain LRU model, set-associative and fully associative", "[l2]") {
  // 64 lines; reads and writes of 1-200 bytes at random over 3x the capacity, some of them
  // crossing lines; the cache's counts must equal the plain model's after every access.
  for (std::uint32_t ways : {0u, 1u, 4u, 16u}) {
    for (std::uint32_t dirty_ways : {0u, 1u, 3u}) {
     for (std::uint32_t group : {1u, 2u, 3u}) {
      if (group > 1 && (ways < 4 || dirty_ways == 0)) continue;  // groups need sets and a limit
      L2Config c = l2_of(64 * 128);
      c.ways = ways;
      c.dirty_ways = ways == 1 ? 0 : dirty_ways;
      c.dirty_group = group;
      L2Cache l2(c, 1);
      ReferenceL2 ref(l2, ways ? ways : 64, c.dirty_ways, group);
      std::uint64_t state = 12345 + ways * 7 + dirty_ways + group * 1000;
      auto next = [&] {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        return state >> 33;
      };
      INFO("ways " << ways << ", dirty ways " << c.dirty_ways << ", dirty group " << group);
      for (int k = 0; k < 20000; ++k) {
        const std::uint64_t addr = next() % (3 * 64 * 128);
        const auto bytes = static_cast<std::uint32_t>(1 + next() % 200);
        const bool write = next() % 3 == 0;
        (write ? l2.write(addr, bytes, 0) : l2.read(addr, bytes, 0));
        ref.access(addr, bytes, write);
        REQUIRE(l2.counts()[0].hits == ref.counts.hits);
        REQUIRE(l2.counts()[0].misses == ref.counts.misses);
        REQUIRE(l2.counts()[0].hbm_read == ref.counts.hbm_read);
        REQUIRE(l2.counts()[0].hbm_written == ref.counts.hbm_written);
      }
      l2.flush();
      ref.flush();
      REQUIRE(l2.counts()[0].hbm_written == ref.counts.hbm_written);
      CHECK(l2.counts()[0].hits > 0);  // the stream re-uses lines, so the comparison means something
     }
    }
  }
}
