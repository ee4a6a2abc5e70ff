// The CUDA device: device memory (cudaMalloc), one stream on which every operation of the
// backend is enqueued in call order, a second stream for downloads that overlap it (the
// gradient buckets), events, host copies, and a timeline of CUDA events resolved after the
// step (a layer's time is its work on the GPU, not its launch).
// Private to the CUDA backend.
#pragma once
#include <cuda_runtime.h>

#include <cstdlib>
#include <string>

#include "hpdl/core/device.hpp"

namespace hpdl::cuda {

// Usable CUDA devices; 0 with the runtime's reason in *why (no driver, no GPU).
int device_count(std::string* why);

class CudaDevice final : public Device {
 public:
  // Makes GPU `ordinal` current for this process and creates its stream and timeline.
  // graphs false (run.kernels.cuda_graphs, a measurement switch): record() calls the work
  // again instead of replaying a graph.
  CudaDevice(int ordinal, bool graphs);
  ~CudaDevice() override;
  CudaDevice(const CudaDevice&) = delete;
  CudaDevice& operator=(const CudaDevice&) = delete;

  // "cuda:0 NVIDIA H100 80GB HBM3 (sm_90, 132 SMs, driver 12.4, runtime 13.0)"
  std::string name() const override { return name_; }
  bool host_accessible() const override { return false; }
  void* allocate(size_t bytes) override;
  void release(void* p) override;
  void zero(void* p, size_t bytes) override;
  void copy_to_host(void* host_dst, const void* src, size_t bytes) override;
  void copy_from_host(void* dst, const void* host_src, size_t bytes) override;
  // Page-locked (cudaMallocHost): copies from and to it are asynchronous.
  void* allocate_host(size_t bytes) override;
  void release_host(void* p) override;
  // On the copy stream, after `after`; both events must come from this device's make_event.
  void download_after(DeviceEvent& after, void* host_dst, const void* src, size_t bytes,
                      DeviceEvent& done) override;
  std::unique_ptr<DeviceEvent> make_event() override;
  void synchronize() override;
  Timeline& timeline() override { return *timeline_; }
  // A CUDA graph captured from the stream; without graphs, the work called again instead.
  std::unique_ptr<Recording> record(std::function<void()> work) override;
  // NVTX ranges (Nsight Systems shows them on the timeline, named after the layers).
  void range_push(const char* name) override;
  void range_pop() override;

  cudaStream_t stream() const { return stream_; }
  int ordinal() const { return ordinal_; }

 private:
  int ordinal_;
  std::string name_;
  cudaStream_t stream_ = nullptr;
  cudaStream_t copy_stream_ = nullptr;  // downloads that overlap the compute stream
  std::unique_ptr<Timeline> timeline_;
  bool graphs_ = true;  // record() captures CUDA graphs
};

// T[n] in a device's memory, or in its transfer memory on the host (page-locked on a GPU),
// released with the object: the CUDA backend's workspaces and host staging.
enum class Memory { kDevice, kHost };
template <typename T>
class Array {
 public:
  Array(Device& device, int64_t n, Memory where = Memory::kDevice)
      : device_(device), where_(where), data_(static_cast<T*>(allocate(device, n, where))) {}
  ~Array() { where_ == Memory::kDevice ? device_.release(data_) : device_.release_host(data_); }
  Array(const Array&) = delete;
  Array& operator=(const Array&) = delete;
  T* get() const { return data_; }

 private:
  static void* allocate(Device& d, int64_t n, Memory where) {
    const size_t bytes = static_cast<size_t>(n) * sizeof(T);
    return where == Memory::kDevice ? d.allocate(bytes) : d.allocate_host(bytes);
  }
  Device& device_;
  Memory where_;
  T* data_;
};

// Small per-step host data (labels, sample ids: a few hundred bytes) on its way to the
// device through pinned memory, so the copy is asynchronous and the host never waits for
// the stream to drain. Owns both sides; capacity fixed at construction.
class PinnedUpload {
 public:
  PinnedUpload(CudaDevice& device, size_t capacity_bytes);
  ~PinnedUpload();
  PinnedUpload(const PinnedUpload&) = delete;
  PinnedUpload& operator=(const PinnedUpload&) = delete;
  // Waits until the previous upload has left the pinned buffer, copies src there, enqueues
  // the copy and returns the device copy (valid for work enqueued after this call).
  const void* upload(const void* host_src, size_t bytes);

 private:
  CudaDevice& device_;
  size_t capacity_;
  Array<unsigned char> pinned_, on_device_;
  cudaEvent_t copied_ = nullptr;
};

}  // namespace hpdl::cuda
