// GPU tests: every schedule validates against the CPU reference at small sizes (N not a multiple of
// the tile, partial k-tiles and chunks), both dtypes, both masks. They skip with a message on
// machines without a CUDA device. Nothing touches the GPU before a test case runs.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#include <cstdint>
#include <cstdio>
#include <vector>

#include "kernels/launch_order.h"
#include "kernels/runner.h"

using namespace flashsim::gpu;

namespace {

bool have_gpu() {
  auto d = device_info();
  if (!d.have_device) {
    WARN("no CUDA device (" << d.why << "): skipping GPU test");
    std::fprintf(stderr, "no CUDA device (%s): skipping GPU test\n", d.why.c_str());
  }
  return d.have_device;
}

// Runs each spec once, unprofiled, and checks it against the CPU reference.
void check_against_reference(const std::vector<Spec>& specs, std::uint64_t seed) {
  RunOptions opt;
  opt.profile = false;
  opt.warmup = 0;
  opt.repeats = 1;
  Runner runner(opt);
  for (const auto& s : specs) {
    Row r = runner.run(s, seed++);
    INFO(info(s.schedule).id << " " << s.size_label() << " " << dtype_name(s.dtype) << ": rel err " << r.rel_err
                             << " tol " << r.tol << " (" << r.note << ")");
    CHECK(r.validated);
    CHECK(r.ok());
  }
}

}  // namespace

TEST_CASE("every schedule matches the CPU reference at small sizes", "[kernels][gpu]") {
  if (!have_gpu()) return;
  auto sizes = parse_sizes("tiny,matmul:65x130x7,softmax:2x4096,attn:1x64x64,attn:3x1x64,attn:1x129x64");
  check_against_reference(expand(parse_schedules("all"), sizes, {Dtype::F32, Dtype::BF16}, {false, true}), 12345);
}

TEST_CASE("the fast versions match the CPU reference in fp16 and at d = 128", "[kernels][gpu]") {
  if (!have_gpu()) return;
  auto sizes = parse_sizes("attn:2x100x128,attn:1x1x128,attn:3x200x64,softmax:3x50000,softmax:2x16387");
  auto specs = expand(parse_schedules("softmax-fast,attn-fa2-mma,bwd-mma"), sizes,
                      {Dtype::F32, Dtype::BF16, Dtype::F16}, {false, true});
  REQUIRE(specs.size() == 2 + 2 * 3 * 2 * 2);  // softmax fp32; attention x {bf16, fp16} x 3 sizes x masks
  check_against_reference(specs, 777);
}

TEST_CASE("the fast forward's persistent d = 64 path (192-row tiles) matches the CPU reference", "[kernels][gpu]") {
  if (!have_gpu()) return;
  // N past the launcher's thresholds (full from 2048, causal from 8192) and no multiple of 192
  REQUIRE(attention_forward_fast_tiling(2100, 64, false).br == 192);
  REQUIRE(attention_forward_fast_tiling(8300, 64, true).paired);
  auto specs = expand({Schedule::AttnFA2Mma}, parse_sizes("attn:3x2100x64,attn:1x8300x64"), {Dtype::BF16, Dtype::F16},
                      {false, true});
  REQUIRE(specs.size() == 8);
  check_against_reference(specs, 4242);
}

TEST_CASE("an output that was never written fails the check", "[kernels][gpu]") {
  if (!have_gpu()) return;
  auto specs = expand({Schedule::SoftmaxOnline, Schedule::AttnFA2}, parse_sizes("tiny"), {Dtype::F32}, {false});
  for (const auto& s : specs) {
    auto w = make_workload(s);
    w->setup(7);
    w->poison_outputs();  // and do not run
    std::string note;
    CHECK_FALSE(within_tolerance(w->check(&note), tolerance(s)));
  }
}
