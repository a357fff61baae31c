// An allocator for the big buffers of a trace (the code, the machine's decoded copy and undo log).
// Writing fresh memory costs a page fault per 4 KiB page, and on some virtual machines a fault
// costs tens of microseconds: 10 M instructions would spend seconds faulting. Buffers of 4 MiB and
// more are marked for transparent huge pages (2 MiB a fault) where the kernel offers them.
#pragma once

#include <cstddef>
#include <new>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace flashsim::isa {

template <class T>
struct HugePageAllocator {
  using value_type = T;
  HugePageAllocator() = default;
  template <class U>
  HugePageAllocator(const HugePageAllocator<U>&) noexcept {}

  T* allocate(std::size_t n) {
    const std::size_t bytes = n * sizeof(T);
    void* p = ::operator new(bytes);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    constexpr std::size_t kHuge = std::size_t{2} << 20;
    if (bytes >= 2 * kHuge) {
      // Only whole 2 MiB pages inside the block; advice is a hint, so a failure is ignored.
      auto begin = (reinterpret_cast<std::size_t>(p) + kHuge - 1) & ~(kHuge - 1);
      auto end = (reinterpret_cast<std::size_t>(p) + bytes) & ~(kHuge - 1);
      if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
    }
#endif
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t) noexcept { ::operator delete(p); }
  template <class U>
  bool operator==(const HugePageAllocator<U>&) const noexcept { return true; }
};

template <class T>
using BigVector = std::vector<T, HugePageAllocator<T>>;

}  // namespace flashsim::isa
