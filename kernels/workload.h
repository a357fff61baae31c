// The interface between the kernel files and the runner: one Workload per (schedule, size, dtype).
// A workload owns its device buffers, draws fresh random inputs, poisons its outputs (NaN), runs its
// kernels (asynchronously, on the default stream) and checks the result against the CPU reference.
// This header is plain C++ plus the CUDA runtime API.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/spec.h"

namespace flashsim::gpu {

[[noreturn]] void cuda_fail(cudaError_t e, const char* what, const char* file, int line);
#define CUDA_CHECK(x)                                                                   \
  do {                                                                                  \
    cudaError_t err_ = (x);                                                             \
    if (err_ != cudaSuccess) ::flashsim::gpu::cuda_fail(err_, #x, __FILE__, __LINE__);  \
  } while (0)
// After every launch: catches bad configurations at once (errors inside kernels surface at the
// next synchronising call, which is checked too).
#define CUDA_CHECK_LAUNCH() CUDA_CHECK(cudaGetLastError())

// An owning device allocation.
class DevBuf {
 public:
  DevBuf() = default;
  explicit DevBuf(std::size_t bytes);
  ~DevBuf();
  DevBuf(DevBuf&& o) noexcept;
  DevBuf& operator=(DevBuf&& o) noexcept;
  DevBuf(const DevBuf&) = delete;
  DevBuf& operator=(const DevBuf&) = delete;
  void* get() const { return p_; }
  template <class T> T* as() const { return static_cast<T*>(p_); }
  std::size_t bytes() const { return bytes_; }

 private:
  void* p_ = nullptr;
  std::size_t bytes_ = 0;
};

// The SMs' own clock: one warp counts clock64 over a window of %globaltimer, the clock the SMs ran
// at just then (nvidia-smi's samples, 20 ms apart at best, miss short dips). kernels/util.cu.
struct SmClockSample {
  unsigned long long t_ns, window_ns, clocks;
  unsigned smid;
  double mhz() const { return window_ns ? 1e3 * static_cast<double>(clocks) / static_cast<double>(window_ns) : 0; }
};
// Samples on the current device: sample() on a stream, mhz() reads back what came since reset().
class SmClockLog {
 public:
  explicit SmClockLog(unsigned capacity = 16384);
  void sample(unsigned window_us, cudaStream_t stream);
  void reset();                     // synchronous
  std::vector<double> mhz() const;  // synchronous; in the order taken
 private:
  DevBuf log_, count_;
  unsigned capacity_;
};

// Device helpers (kernels/util.cu).
void fill_uniform(void* p, std::size_t n, Dtype dt, std::uint64_t seed, float lo, float hi);
void poison(const DevBuf& b);  // every byte 0xff: NaN in fp32 and bf16
std::uint64_t count_nonfinite(const void* p, std::size_t n, Dtype dt);
// Copies n elements starting at element `offset` back to the host as floats.
std::vector<float> to_host(const void* p, std::size_t offset, std::size_t n, Dtype dt);

class L2Flusher {
 public:
  explicit L2Flusher(std::size_t l2_bytes);  // allocates 2x the L2
  void flush();                              // reads the whole buffer (leaves no dirty lines)
 private:
  DevBuf buf_;
  DevBuf sink_;
};

class Workload {
 public:
  explicit Workload(const Spec& s) : spec_(s) {}
  virtual ~Workload() = default;
  const Spec& spec() const { return spec_; }

  // Allocates everything and draws fresh random inputs from `seed`.
  virtual void setup(std::uint64_t seed) = 0;
  virtual void poison_outputs() = 0;
  // Launches the schedule on input set `set` (see make_sets); no synchronisation.
  virtual void run(int set) = 0;
  // Synchronises, scans every output element for NaN/inf, and compares against the CPU reference
  // (a subset of rows/heads at large sizes, described in *note). Returns the relative error.
  virtual double check(std::string* note) = 0;

  // Input rotation for timing: copies of every input so that repeated runs do not find their
  // inputs in L2. Set 0 is the original.
  void make_sets(int n);
  int sets() const { return static_cast<int>(sets_.size()); }
  std::size_t input_bytes() const;

 protected:
  // Registers an input buffer of set 0; returns its index.
  int add_input(std::size_t bytes);
  void* in(int set, int idx) const { return sets_.at(set).at(idx).get(); }
  Spec spec_;

 private:
  std::vector<std::vector<DevBuf>> sets_;
};

std::unique_ptr<Workload> make_matmul(const Spec& s);
std::unique_ptr<Workload> make_softmax(const Spec& s);
std::unique_ptr<Workload> make_attention_forward(const Spec& s);
std::unique_ptr<Workload> make_attention_backward(const Spec& s);
std::unique_ptr<Workload> make_attention_fp8(const Spec& s);  // attention_fp8.cu
std::unique_ptr<Workload> make_workload(const Spec& s);

// Hopper's L2 model as `flashsim-gpu l2probe` measured it on an H100 (kernels/RESULTS.md): sets of
// 32 lines, at most 16 dirty lines a set, that limit shared by groups of 4 sets. compare predicts
// with them on sm_90; predict and l2probe --from take them as their defaults.
inline constexpr unsigned kHopperL2Ways = 32, kHopperL2DirtyWays = 16, kHopperL2DirtyGroup = 4;

// Device description; `have_device` false (with the reason) when there is no usable CUDA device.
struct DeviceInfo {
  bool have_device = false;
  std::string why;
  std::string name;
  std::size_t l2_bytes = 0;
  int sms = 0;
  // L2 slices for the L2 model: Ampere and Hopper split the L2 in two partitions (their
  // whitepapers); the runtime does not report it.
  int l2_partitions = 1;
  // Sets, dirty-line limit and the sets sharing it, of the L2 model (sim/l2.h): Hopper's above;
  // 0 / 0 / 1 (fully associative, no limit) on GPUs nobody has probed.
  unsigned l2_ways = 0, l2_dirty_ways = 0, l2_dirty_group = 1;
  // Page-balanced sets and the far copies' rank (isa/program.h L2Geometry): 0 / 0 everywhere. The
  // onset probes favour 16384 / 21 on Hopper, but compare rows at unseen sizes did not (RESULTS.md).
  unsigned l2_page_lines = 0, l2_copy_rank = 0;
};
DeviceInfo device_info();

// Resident blocks per SM of the kernels a schedule launches (cudaOccupancyMaxActiveBlocksPerMultiprocessor),
// the smallest over its main kernels since the last reset: the L2 model's occupancy.
// Inline, so the standalone drivers that compile one kernel file alone have it too.
inline int& occupancy_slot() {
  static int blocks = 0;  // one host thread drives the runs
  return blocks;
}
inline void record_occupancy(const void* kernel, int threads, std::size_t dynamic_smem) {
  int blocks = 0;
  CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads, dynamic_smem));
  int& slot = occupancy_slot();
  if (blocks > 0 && (slot == 0 || blocks < slot)) slot = blocks;
}
inline void reset_occupancy() { occupancy_slot() = 0; }
inline int recorded_occupancy() { return occupancy_slot(); }  // 0 when nothing was recorded

}  // namespace flashsim::gpu
