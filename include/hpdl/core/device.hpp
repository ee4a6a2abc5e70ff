// A backend's device: the memory space its buffers live in, the stream its operations are
// enqueued on, events on that stream, and copies between the device and the host.
//
// The stream contract: an operation has been enqueued when its call returns, and its
// results are visible only after an event recorded behind it has completed, or after
// synchronize(). On the CPU backends every operation has run when it returns, events are
// always complete and copies are plain memcpy; a CUDA device enqueues on a stream. Code
// above the backend never dereferences device memory: it reads and writes through
// HostMirror (host_mirror.hpp) or copy_to_host / copy_from_host.
#pragma once
#include <cstddef>
#include <memory>
#include <string>

#include "hpdl/core/timeline.hpp"

namespace hpdl {

// A point in the device's stream. Created once (set-up), recorded again every step.
class DeviceEvent {
 public:
  virtual ~DeviceEvent() = default;
  // Marks the point the stream has reached: everything enqueued before this call.
  virtual void record() = 0;
  // True once all work before the last record() has finished (never blocks).
  virtual bool done() = 0;
  // Blocks the host until done().
  virtual void wait() = 0;
};

class Device {
 public:
  virtual ~Device() = default;
  virtual std::string name() const = 0;
  // True when the host may read and write this device's memory directly (host memory):
  // host mirrors are then the buffers themselves and transfers cost nothing.
  virtual bool host_accessible() const = 0;

  // bytes of device memory, 64-byte aligned, zeroed; throws std::bad_alloc when it cannot.
  virtual void* allocate(size_t bytes) = 0;
  virtual void release(void* p) = 0;
  // Enqueued: p[0..bytes) = 0.
  virtual void zero(void* p, size_t bytes) = 0;
  // Waits for the stream, then host_dst = src (device memory): the host reads it next.
  virtual void copy_to_host(void* host_dst, const void* src, size_t bytes) = 0;
  // dst (device memory) = host_src; the host may reuse host_src when this returns.
  virtual void copy_from_host(void* dst, const void* host_src, size_t bytes) = 0;

  virtual std::unique_ptr<DeviceEvent> make_event() = 0;
  // Blocks the host until everything enqueued so far has finished.
  virtual void synchronize() = 0;
  // The clock that times the device's work (the profiler's per-layer intervals).
  virtual Timeline& timeline() = 0;
};

// Host memory, work finished on return, the host's steady clock: the device of the CPU
// backends and of buffers that never leave the host. One per process; stateless.
Device& host_device();

}  // namespace hpdl
