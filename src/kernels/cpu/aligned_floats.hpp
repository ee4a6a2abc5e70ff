// A kernel's private float scratch (oneDNN scratchpads, reorder targets, pooling workspaces):
// a std::vector whose memory comes from the host device (core/device.hpp), 64-byte aligned
// like every device buffer: a cache line, one AVX-512 register. std::vector's own allocator
// aligns to 16 bytes only, and oneDNN's kernels on such memory ran LeNet's conv2 12 % slower
// (docs/results.md). Private to kernels/.
#pragma once
#include <cstddef>
#include <vector>

#include "hpdl/core/device.hpp"

namespace hpdl {

template <typename T>
struct CacheLineAllocator {
  using value_type = T;
  CacheLineAllocator() = default;
  template <typename U>
  explicit CacheLineAllocator(const CacheLineAllocator<U>&) {}
  T* allocate(size_t n) { return static_cast<T*>(host_device().allocate(n * sizeof(T))); }
  void deallocate(T* p, size_t) { host_device().release(p); }
  bool operator==(const CacheLineAllocator&) const { return true; }
  bool operator!=(const CacheLineAllocator&) const { return false; }
};

using AlignedFloats = std::vector<float, CacheLineAllocator<float>>;

}  // namespace hpdl
