#include "kernels/nvlink_counters.h"

#include <dlfcn.h>

#include <climits>
#include <cstddef>

namespace flashsim::gpu {
namespace {

// NVML's ABI, as documented in nvml.h (written out here, not copied).
using NvmlReturn = int;  // nvmlReturn_t; 0 = NVML_SUCCESS
using NvmlDevice = void*;
union NvmlValue {
  double d;
  unsigned int ui;
  unsigned long ul;
  unsigned long long ull;
  long long sll;
  unsigned short us;
};
struct NvmlFieldValue {
  unsigned int field_id;
  unsigned int scope_id;
  long long timestamp;
  long long latency_usec;
  int value_type;  // nvmlValueType_t
  NvmlReturn ret;
  NvmlValue value;
};
static_assert(sizeof(NvmlFieldValue) == 40 && offsetof(NvmlFieldValue, value) == 32, "nvmlFieldValue_t layout");

constexpr unsigned kFieldTx = 138;  // NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, KiB
constexpr unsigned kFieldRx = 139;  // NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, KiB
constexpr int kLinks = 18;          // NVML_NVLINK_MAX_LINKS (Hopper: 18 links)

using InitFn = NvmlReturn (*)();
using ShutdownFn = NvmlReturn (*)();
using ByBusFn = NvmlReturn (*)(const char*, NvmlDevice*);
using ByIndexFn = NvmlReturn (*)(unsigned int, NvmlDevice*);
using FieldsFn = NvmlReturn (*)(NvmlDevice, int, NvmlFieldValue*);
using ErrFn = const char* (*)(NvmlReturn);

std::uint64_t as_u64(const NvmlFieldValue& f) {
  switch (f.value_type) {
    case 0: return static_cast<std::uint64_t>(f.value.d);
    case 1: return f.value.ui;
    case 2: return f.value.ul;
    case 3: return f.value.ull;
    case 4: return static_cast<std::uint64_t>(f.value.sll);
    case 5: return static_cast<std::uint64_t>(static_cast<int>(f.value.ui));
    case 6: return f.value.us;
    default: return f.value.ull;
  }
}

std::int64_t delta_kib(std::uint64_t a, std::uint64_t b) { return static_cast<std::int64_t>(b - a) * 1024; }

}  // namespace

NvlinkCounters::NvlinkCounters(const std::vector<std::string>& pci_bus_ids) {
  lib_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib_) {
    why_ = std::string("dlopen libnvidia-ml.so.1: ") + dlerror();
    return;
  }
  auto sym = [&](const char* name) { return dlsym(lib_, name); };
  auto init = reinterpret_cast<InitFn>(sym("nvmlInit_v2"));
  auto by_bus = reinterpret_cast<ByBusFn>(sym("nvmlDeviceGetHandleByPciBusId_v2"));
  auto by_index = reinterpret_cast<ByIndexFn>(sym("nvmlDeviceGetHandleByIndex_v2"));
  auto err = reinterpret_cast<ErrFn>(sym("nvmlErrorString"));
  get_fields_ = sym("nvmlDeviceGetFieldValues");
  shutdown_ = sym("nvmlShutdown");
  if (!init || !by_bus || !get_fields_ || !shutdown_) {
    why_ = "libnvidia-ml.so.1 lacks nvmlInit_v2, nvmlDeviceGetHandleByPciBusId_v2 or nvmlDeviceGetFieldValues";
    return;
  }
  if (NvmlReturn r = init(); r != 0) {
    why_ = std::string("nvmlInit_v2: ") + (err ? err(r) : std::to_string(r));
    shutdown_ = nullptr;
    return;
  }
  for (std::size_t i = 0; i < pci_bus_ids.size(); ++i) {
    NvmlDevice dev = nullptr;
    NvmlReturn r = by_bus(pci_bus_ids[i].c_str(), &dev);
    if (r != 0 && by_index) r = by_index(static_cast<unsigned>(i), &dev);  // same order on one host
    if (r != 0) {
      why_ = "no NVML device for " + pci_bus_ids[i] + ": " + (err ? err(r) : std::to_string(r));
      return;
    }
    devices_.push_back(dev);
  }
  // one trial read: a driver without the fields answers per field
  const auto s = read();
  for (const auto& x : s)
    if (!x.ok) {
      why_ = "NVML answered no NVLink throughput field for a device (no NVLink, or not exposed here)";
      return;
    }
  ok_ = true;
}

NvlinkCounters::~NvlinkCounters() {
  if (shutdown_) reinterpret_cast<ShutdownFn>(shutdown_)();
  if (lib_) dlclose(lib_);
}

std::vector<NvlinkSample> NvlinkCounters::read() const {
  std::vector<NvlinkSample> out(devices_.size());
  auto fields = reinterpret_cast<FieldsFn>(get_fields_);
  for (std::size_t i = 0; i < devices_.size(); ++i) {
    NvmlFieldValue v[2 * kLinks] = {};
    for (int l = 0; l < kLinks; ++l) {
      v[2 * l].field_id = kFieldTx;
      v[2 * l + 1].field_id = kFieldRx;
      v[2 * l].scope_id = v[2 * l + 1].scope_id = static_cast<unsigned>(l);
    }
    if (fields(devices_[i], 2 * kLinks, v) != 0) continue;
    NvlinkSample& s = out[i];
    s.per_link_equal = true;
    for (int l = 0; l < kLinks; ++l) {
      if (v[2 * l].ret != 0 || v[2 * l + 1].ret != 0) continue;
      const std::uint64_t tx = as_u64(v[2 * l]), rx = as_u64(v[2 * l + 1]);
      if (s.links_answered == 0) {
        s.tx_link0 = tx;
        s.rx_link0 = rx;
      } else if (tx != s.tx_link0 || rx != s.rx_link0) {
        s.per_link_equal = false;
      }
      s.tx_sum += tx;
      s.rx_sum += rx;
      ++s.links_answered;
    }
    s.ok = s.links_answered > 0;
  }
  return out;
}

std::int64_t nvlink_tx_bytes(const NvlinkSample& a, const NvlinkSample& b) {
  return (a.per_link_equal && b.per_link_equal) ? delta_kib(a.tx_link0, b.tx_link0) : delta_kib(a.tx_sum, b.tx_sum);
}

std::int64_t nvlink_rx_bytes(const NvlinkSample& a, const NvlinkSample& b) {
  return (a.per_link_equal && b.per_link_equal) ? delta_kib(a.rx_link0, b.rx_link0) : delta_kib(a.rx_sum, b.rx_sum);
}

}  // namespace flashsim::gpu
