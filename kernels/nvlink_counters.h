// NVLink bytes per GPU from NVML's field values (NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX / _RX,
// cumulative KiB of data, no protocol overhead), read before and after a region. NVML is opened
// with dlopen("libnvidia-ml.so.1") so that the binary needs no NVML at link time and still runs
// where the driver has none; then `available()` is false and `why()` says what failed.
// The few NVML declarations needed are written out here (the toolkit on the build machine has no
// nvml.h); their layout is NVML's documented ABI (nvmlFieldValue_t: 40 bytes, value at offset 32).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace flashsim::gpu {

struct NvlinkSample {
  bool ok = false;
  // KiB since the driver loaded. `tx_link0`: the value NVML gives for scope (link) 0; `tx_sum`:
  // the sum over every link scope that answered (links 0..17). When NVML gives the GPU-wide total
  // for every scope, all links read the same and `per_link_equal` is true; then link 0 is the total.
  std::uint64_t tx_link0 = 0, rx_link0 = 0, tx_sum = 0, rx_sum = 0;
  int links_answered = 0;
  bool per_link_equal = false;
};

class NvlinkCounters {
 public:
  // pci_bus_ids: one per CUDA device of interest (cudaDeviceGetPCIBusId), in device order.
  explicit NvlinkCounters(const std::vector<std::string>& pci_bus_ids);
  ~NvlinkCounters();
  NvlinkCounters(const NvlinkCounters&) = delete;
  NvlinkCounters& operator=(const NvlinkCounters&) = delete;

  bool available() const { return ok_; }
  const std::string& why() const { return why_; }
  // One reading per device (ok = false for a device whose fields failed).
  std::vector<NvlinkSample> read() const;

 private:
  void* lib_ = nullptr;
  bool ok_ = false;
  std::string why_;
  std::vector<void*> devices_;  // nvmlDevice_t
  void* get_fields_ = nullptr;  // nvmlDeviceGetFieldValues
  void* shutdown_ = nullptr;
};

// Bytes between two readings of one device: the link-0 scope when every link reads the same
// (a GPU-wide counter), else the sum over links. KiB -> bytes.
std::int64_t nvlink_tx_bytes(const NvlinkSample& before, const NvlinkSample& after);
std::int64_t nvlink_rx_bytes(const NvlinkSample& before, const NvlinkSample& after);

}  // namespace flashsim::gpu
