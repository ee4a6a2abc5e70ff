// A kernel's private float scratch (oneDNN scratchpads, reorder targets, pooling workspaces),
// 64-byte aligned like the device's buffers (core/device.cpp): a cache line, one AVX-512
// register. std::vector's allocator aligns to 16 bytes only, and oneDNN's kernels on such
// memory ran LeNet's conv2 12 % slower (docs/results.md). Private to kernels/.
#pragma once
#include <cstddef>
#include <cstdlib>
#include <new>
#include <vector>

namespace hpdl {

template <typename T>
struct CacheLineAllocator {
  using value_type = T;
  CacheLineAllocator() = default;
  template <typename U>
  explicit CacheLineAllocator(const CacheLineAllocator<U>&) {}
  T* allocate(size_t n) {
    void* p = std::aligned_alloc(64, (n * sizeof(T) + 63) / 64 * 64);  // a multiple of 64
    if (!p) throw std::bad_alloc();
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t) { std::free(p); }
  bool operator==(const CacheLineAllocator&) const { return true; }
  bool operator!=(const CacheLineAllocator&) const { return false; }
};

using AlignedFloats = std::vector<float, CacheLineAllocator<float>>;

}  // namespace hpdl
