// A 64-byte aligned, zero-initialised float buffer: the storage for the flat parameter,
// gradient and optimizer-state vectors and for activations. Moves, never copies.
#pragma once
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <span>

namespace hpdl {

class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(int64_t n) : size_(n) {
    if (n == 0) return;
    const size_t bytes = ((static_cast<size_t>(n) * sizeof(float) + 63) / 64) * 64;
    data_.reset(static_cast<float*>(std::aligned_alloc(64, bytes)));
    if (!data_) throw std::bad_alloc();
    std::memset(data_.get(), 0, bytes);
  }
  float* data() { return data_.get(); }
  const float* data() const { return data_.get(); }
  int64_t size() const { return size_; }
  std::span<float> span() { return {data_.get(), static_cast<size_t>(size_)}; }
  std::span<const float> span() const { return {data_.get(), static_cast<size_t>(size_)}; }
  void zero() {
    if (size_) std::memset(data_.get(), 0, static_cast<size_t>(size_) * sizeof(float));
  }

 private:
  struct Free {
    void operator()(float* p) const { std::free(p); }
  };
  std::unique_ptr<float, Free> data_;
  int64_t size_ = 0;
};

}  // namespace hpdl
