// The host side of a span of device memory, for whatever must touch it on the host: MPI
// (gradient buckets, parameter-server pulls and pushes), the batch the data reader writes,
// checkpoints and model files. Where the device is host-accessible (the CPU backends) the
// mirror is the span itself and download/upload do nothing, so the CPU path copies
// nothing; on another device it is a host copy and they transfer.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "hpdl/core/device.hpp"

namespace hpdl {

class HostMirror {
 public:
  HostMirror() = default;
  HostMirror(Device& device, std::span<float> device_span)
      : device_(&device), device_span_(device_span) {
    if (device.host_accessible()) {
      host_ = device_span;
    } else {
      copy_.resize(device_span.size());
      host_ = copy_;
    }
  }
  HostMirror(const HostMirror&) = delete;
  HostMirror& operator=(const HostMirror&) = delete;
  HostMirror(HostMirror&&) = default;  // host_ stays valid: a moved vector keeps its storage
  HostMirror& operator=(HostMirror&&) = default;
  // Host memory; holds the device's values after download(), is the device's after upload().
  std::span<float> host() { return host_; }
  float* data() { return host_.data(); }
  const float* data() const { return host_.data(); }
  int64_t size() const { return static_cast<int64_t>(host_.size()); }
  // host()[offset, offset + n) = the device's values (waits for the work before it).
  void download(int64_t offset, int64_t n) {
    if (copy_.empty() || n == 0) return;
    device_->copy_to_host(host_.data() + offset, device_span_.data() + offset,
                          static_cast<size_t>(n) * sizeof(float));
  }
  void download() { download(0, size()); }
  // The device's [offset, offset + n) = host()'s.
  void upload(int64_t offset, int64_t n) {
    if (copy_.empty() || n == 0) return;
    device_->copy_from_host(device_span_.data() + offset, host_.data() + offset,
                            static_cast<size_t>(n) * sizeof(float));
  }
  void upload() { upload(0, size()); }

 private:
  Device* device_ = nullptr;
  std::span<float> device_span_;
  std::vector<float> copy_;  // empty when the device is host-accessible
  std::span<float> host_;
};

}  // namespace hpdl
