// The host side of a span of device memory, for whatever must touch it on the host: MPI
// (gradient buckets, parameter-server pulls and pushes), the batch the data reader writes,
// checkpoints and model files. Where the device is host-accessible (the CPU backends) the
// mirror is the span itself and download/upload do nothing, so the CPU path copies
// nothing; on another device it is a host copy (the device's transfer memory: page-locked on
// a GPU) and they transfer.
#pragma once
#include <cstdint>
#include <memory>
#include <span>

#include "hpdl/core/device.hpp"

namespace hpdl {
namespace detail {
// Frees a HostMirror's copy with the device that allocated it.
struct ReleaseHost {
  Device* device = nullptr;
  void operator()(float* p) const { device->release_host(p); }
};
}  // namespace detail

class HostMirror {
 public:
  HostMirror() = default;
  HostMirror(Device& device, std::span<float> device_span)
      : device_(&device), device_span_(device_span) {
    if (device.host_accessible()) {
      host_ = device_span;
    } else if (!device_span.empty()) {
      copy_.reset(static_cast<float*>(device.allocate_host(device_span.size_bytes())));
      copy_.get_deleter().device = &device;
      host_ = {copy_.get(), device_span.size()};
    }
  }
  HostMirror(const HostMirror&) = delete;
  HostMirror& operator=(const HostMirror&) = delete;
  HostMirror(HostMirror&&) = default;  // host_ stays valid: the copy does not move
  HostMirror& operator=(HostMirror&&) = default;
  // Host memory; holds the device's values after download(), is the device's after upload().
  std::span<float> host() { return host_; }
  float* data() { return host_.data(); }
  const float* data() const { return host_.data(); }
  int64_t size() const { return static_cast<int64_t>(host_.size()); }
  // host()[offset, offset + n) = the device's values (waits for the work before it).
  void download(int64_t offset, int64_t n) {
    if (!copy_ || n == 0) return;
    device_->copy_to_host(host_.data() + offset, device_span_.data() + offset, bytes(n));
  }
  void download() { download(0, size()); }
  // The same, enqueued after `after` on the device's copy stream; host()[offset, +n) holds
  // the values once `done` completes (at once where the mirror is the span itself).
  void download_after(DeviceEvent& after, int64_t offset, int64_t n, DeviceEvent& done) {
    if (!copy_ || n == 0) return done.record();
    device_->download_after(after, host_.data() + offset, device_span_.data() + offset, bytes(n),
                            done);
  }
  // The device's [offset, offset + n) = host()'s.
  void upload(int64_t offset, int64_t n) {
    if (!copy_ || n == 0) return;
    device_->copy_from_host(device_span_.data() + offset, host_.data() + offset, bytes(n));
  }
  void upload() { upload(0, size()); }

 private:
  static size_t bytes(int64_t n) { return static_cast<size_t>(n) * sizeof(float); }
  Device* device_ = nullptr;
  std::span<float> device_span_;
  std::unique_ptr<float, detail::ReleaseHost> copy_;  // the device's allocate_host; null when the
                                                      // device is host-accessible
  std::span<float> host_;
};

}  // namespace hpdl
