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
#include <functional>
#include <memory>
#include <string>

#include "hpdl/core/timeline.hpp"

namespace hpdl {

// The GPU a rank runs on: the ranks of a node take its devices in turn by their index
// among the node's ranks (node_rank modulo node_devices; node_devices > 0).
inline int choose_device(int node_rank, int node_devices) { return node_rank % node_devices; }

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

// Device work recorded once and run again: each run() enqueues what the recorded work
// enqueued, on the same buffers. A GPU keeps it as a CUDA graph (its many small kernels then
// reach the GPU in one launch); the CPU backends keep the work and call it again.
class Recording {
 public:
  virtual ~Recording() = default;
  virtual void run() = 0;
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

  // Host memory for transfers, bytes long and zeroed: page-locked on a GPU (so its copies
  // run asynchronously and at full speed), plain aligned memory elsewhere.
  virtual void* allocate_host(size_t bytes);
  virtual void release_host(void* p);
  // Enqueued: once `after` (an event of this device, recorded) has completed, host_dst = src
  // on the device's copy stream, and `done` (an event of this device) is recorded behind the
  // copy, so the host may read host_dst once `done` completes. Work enqueued on the stream
  // meanwhile keeps running (a GPU copies on its own engine). host_dst: from allocate_host.
  virtual void download_after(DeviceEvent& after, void* host_dst, const void* src, size_t bytes,
                              DeviceEvent& done) = 0;

  virtual std::unique_ptr<DeviceEvent> make_event() = 0;
  // Blocks the host until everything enqueued so far has finished.
  virtual void synchronize() = 0;
  // The clock that times the device's work (the profiler's per-layer intervals).
  virtual Timeline& timeline() = 0;
  // `work` may only enqueue operations of this device on buffers that outlive the recording
  // (no host reads, waits or allocations); it is not run now. Default: keeps and calls it.
  virtual std::unique_ptr<Recording> record(std::function<void()> work);
  // Names the work enqueued between push and pop for external profilers (NVTX ranges that
  // Nsight Systems shows on a GPU; nothing on the CPU backends). name must outlive the range.
  virtual void range_push(const char* /*name*/) {}
  virtual void range_pop() {}
};

// A named range of device work for the scope's lifetime (Device::range_push/pop).
class DeviceRange {
 public:
  DeviceRange(Device& device, const char* name) : device_(device) { device_.range_push(name); }
  ~DeviceRange() { device_.range_pop(); }
  DeviceRange(const DeviceRange&) = delete;
  DeviceRange& operator=(const DeviceRange&) = delete;

 private:
  Device& device_;
};

// Host memory, work finished on return, the host's steady clock: the device of the CPU
// backends and of buffers that never leave the host. One per process; stateless.
Device& host_device();

}  // namespace hpdl
