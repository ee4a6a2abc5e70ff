// The host device: aligned host allocations, memcpy transfers, events that are complete
// as soon as they are recorded (CPU work has finished when its call returns).
#include "hpdl/core/device.hpp"

#include <cstdlib>
#include <cstring>
#include <new>
#include <utility>

namespace hpdl {
namespace {

class HostEvent final : public DeviceEvent {
 public:
  void record() override {}
  bool done() override { return true; }
  void wait() override {}
};

class HostDevice final : public Device {
 public:
  std::string name() const override { return "host"; }
  bool host_accessible() const override { return true; }
  void* allocate(size_t bytes) override {
    if (bytes == 0) return nullptr;
    const size_t rounded = (bytes + 63) / 64 * 64;  // aligned_alloc needs a multiple
    void* p = std::aligned_alloc(64, rounded);
    if (!p) throw std::bad_alloc();
    std::memset(p, 0, rounded);
    return p;
  }
  void release(void* p) override { std::free(p); }
  void zero(void* p, size_t bytes) override {
    if (bytes) std::memset(p, 0, bytes);
  }
  void copy_to_host(void* host_dst, const void* src, size_t bytes) override {
    if (bytes && host_dst != src) std::memcpy(host_dst, src, bytes);
  }
  void copy_from_host(void* dst, const void* host_src, size_t bytes) override {
    if (bytes && dst != host_src) std::memcpy(dst, host_src, bytes);
  }
  void download_after(DeviceEvent&, void* host_dst, const void* src, size_t bytes,
                      DeviceEvent& done) override {
    copy_to_host(host_dst, src, bytes);  // `after` is complete: CPU work ends with its call
    done.record();
  }
  std::unique_ptr<DeviceEvent> make_event() override { return std::make_unique<HostEvent>(); }
  void synchronize() override {}
  Timeline& timeline() override { return timeline_; }

 private:
  HostTimeline timeline_;
};

// The CPU backends' recording: the work itself, called again.
class CallAgain final : public Recording {
 public:
  explicit CallAgain(std::function<void()> work) : work_(std::move(work)) {}
  void run() override { work_(); }

 private:
  std::function<void()> work_;
};

}  // namespace

void* Device::allocate_host(size_t bytes) { return host_device().allocate(bytes); }

void Device::release_host(void* p) { host_device().release(p); }

std::unique_ptr<Recording> Device::record(std::function<void()> work) {
  return std::make_unique<CallAgain>(std::move(work));
}

Device& host_device() {
  static HostDevice device;
  return device;
}

}  // namespace hpdl
