// A zero-initialised float buffer in one device's memory (host_device() unless told
// otherwise): the storage for the flat parameter, gradient and optimizer-state vectors,
// activations and workspaces. 64-byte aligned. Moves, never copies. Its data() is device
// memory: only the backend's operations and the device's copies may touch it, unless the
// device is host-accessible (the CPU backends).
#pragma once
#include <cstdint>
#include <span>

#include "hpdl/core/device.hpp"

namespace hpdl {

class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(int64_t n, Device& device = host_device()) : device_(&device), size_(n) {
    if (n > 0) data_ = static_cast<float*>(device.allocate(bytes()));
  }
  Buffer(Buffer&& o) noexcept : device_(o.device_), data_(o.data_), size_(o.size_) {
    o.data_ = nullptr, o.size_ = 0;
  }
  Buffer& operator=(Buffer&& o) noexcept {
    if (this != &o) {
      release();
      device_ = o.device_, data_ = o.data_, size_ = o.size_;
      o.data_ = nullptr, o.size_ = 0;
    }
    return *this;
  }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { release(); }

  float* data() { return data_; }
  const float* data() const { return data_; }
  int64_t size() const { return size_; }
  std::span<float> span() { return {data_, static_cast<size_t>(size_)}; }
  std::span<const float> span() const { return {data_, static_cast<size_t>(size_)}; }
  Device& device() const { return *device_; }
  // Enqueued on the device's stream.
  void zero() { device_->zero(data_, bytes()); }

 private:
  size_t bytes() const { return static_cast<size_t>(size_) * sizeof(float); }
  void release() {
    if (data_) device_->release(data_);
    data_ = nullptr;
  }
  Device* device_ = &host_device();
  float* data_ = nullptr;
  int64_t size_ = 0;
};

}  // namespace hpdl
