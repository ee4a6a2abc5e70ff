// The CUDA device (see cuda_device.hpp). Every call is checked; memory comes from
// cudaMalloc (256-byte aligned, more than the 64 the Device contract promises).
#include <nvtx3/nvToolsExt.h>

#include <cstring>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include "cuda_check.hpp"
#include "cuda_device.hpp"
#include "hpdl/core/timeline.hpp"

namespace hpdl::cuda {
namespace {

class CudaEvent final : public DeviceEvent {
 public:
  explicit CudaEvent(cudaStream_t stream) : stream_(stream) {
    HPDL_CUDA_CHECK(cudaEventCreateWithFlags(&event_, cudaEventDisableTiming));
  }
  ~CudaEvent() override { cudaEventDestroy(event_); }
  void record() override { record_on(stream_); }
  void record_on(cudaStream_t stream) { HPDL_CUDA_CHECK(cudaEventRecord(event_, stream)); }
  cudaEvent_t get() const { return event_; }
  bool done() override {
    const cudaError_t rc = cudaEventQuery(event_);
    if (rc == cudaErrorNotReady) return false;
    HPDL_CUDA_CHECK(rc);
    return true;
  }
  void wait() override { HPDL_CUDA_CHECK(cudaEventSynchronize(event_)); }

 private:
  cudaStream_t stream_;
  cudaEvent_t event_ = nullptr;
};

// A mark is the index of a timing event recorded on the stream. resolve() (after the
// step) measures each against an anchor event whose host time is known: the anchor is
// recorded and waited for when the timeline starts and after every resolve, when the
// stream is idle, so its device time and the host clock read after it coincide.
class EventTimeline final : public Timeline {
 public:
  explicit EventTimeline(cudaStream_t stream) : stream_(stream) {
    HPDL_CUDA_CHECK(cudaEventCreate(&anchor_));
    set_anchor();
  }
  ~EventTimeline() override {
    for (cudaEvent_t e : events_) cudaEventDestroy(e);
    cudaEventDestroy(anchor_);
  }
  int64_t mark() override {
    // Events are created during the first (warm-up) step and reused from then on. Marks
    // that are never resolved (a step whose intervals the profiler dropped) must not grow
    // the pool without bound: past kMaxMarks it starts again from the first event.
    if (used_ == kMaxMarks) used_ = 0;
    if (used_ == events_.size()) {
      cudaEvent_t e;
      HPDL_CUDA_CHECK(cudaEventCreate(&e));
      events_.push_back(e);
    }
    HPDL_CUDA_CHECK(cudaEventRecord(events_[used_], stream_));
    return static_cast<int64_t>(used_++);
  }
  void resolve(int64_t* marks, int64_t n) override {
    if (used_ > 0) HPDL_CUDA_CHECK(cudaEventSynchronize(events_[used_ - 1]));
    for (int64_t i = 0; i < n; ++i) {
      float ms = 0;
      HPDL_CUDA_CHECK(cudaEventElapsedTime(&ms, anchor_, events_[marks[i]]));
      marks[i] = anchor_ns_ + static_cast<int64_t>(double(ms) * 1e6);
    }
    used_ = 0;
    set_anchor();
  }
  void finish() override { HPDL_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

 private:
  void set_anchor() {
    HPDL_CUDA_CHECK(cudaEventRecord(anchor_, stream_));
    HPDL_CUDA_CHECK(cudaEventSynchronize(anchor_));
    anchor_ns_ = HostTimeline::now();
  }
  static constexpr size_t kMaxMarks = size_t{1} << 16;
  cudaStream_t stream_;
  cudaEvent_t anchor_ = nullptr;
  int64_t anchor_ns_ = 0;
  std::vector<cudaEvent_t> events_;
  size_t used_ = 0;
};

// A captured CUDA graph, launched on the stream it was captured from.
class GraphRecording final : public Recording {
 public:
  GraphRecording(cudaGraphExec_t exec, cudaStream_t stream) : exec_(exec), stream_(stream) {}
  ~GraphRecording() override { cudaGraphExecDestroy(exec_); }
  GraphRecording(const GraphRecording&) = delete;
  GraphRecording& operator=(const GraphRecording&) = delete;
  void run() override { HPDL_CUDA_CHECK(cudaGraphLaunch(exec_, stream_)); }

 private:
  cudaGraphExec_t exec_;
  cudaStream_t stream_;
};

std::string describe(int ordinal) {
  cudaDeviceProp p{};
  HPDL_CUDA_CHECK(cudaGetDeviceProperties(&p, ordinal));
  int driver = 0, runtime = 0;
  HPDL_CUDA_CHECK(cudaDriverGetVersion(&driver));
  HPDL_CUDA_CHECK(cudaRuntimeGetVersion(&runtime));
  auto version = [](int v) {
    return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
  };
  return "cuda:" + std::to_string(ordinal) + " " + p.name + " (sm_" + std::to_string(p.major) +
         std::to_string(p.minor) + ", " + std::to_string(p.multiProcessorCount) + " SMs, driver " +
         version(driver) + ", runtime " + version(runtime) + ")";
}

}  // namespace

int device_count(std::string* why) {
  int n = 0;
  const cudaError_t rc = cudaGetDeviceCount(&n);
  if (rc != cudaSuccess) {
    cudaGetLastError();  // clear it: the next call must not report this one
    if (why) *why = cudaGetErrorString(rc);
    return 0;
  }
  if (n == 0 && why) *why = "the CUDA runtime sees no GPU";
  return n;
}

CudaDevice::CudaDevice(int ordinal, bool graphs) : ordinal_(ordinal), graphs_(graphs) {
  HPDL_CUDA_CHECK(cudaSetDevice(ordinal));
  name_ = describe(ordinal);
  HPDL_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  HPDL_CUDA_CHECK(cudaStreamCreateWithFlags(&copy_stream_, cudaStreamNonBlocking));
  timeline_ = std::make_unique<EventTimeline>(stream_);
}

std::unique_ptr<Recording> CudaDevice::record(std::function<void()> work) {
  if (!graphs_) return Device::record(std::move(work));
  // Only this thread's calls are captured (another thread's copies must not end the
  // capture); a failure inside the work ends it before the error goes on.
  HPDL_CUDA_CHECK(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal));
  cudaGraph_t graph = nullptr;
  try {
    work();
  } catch (...) {
    if (cudaStreamEndCapture(stream_, &graph) == cudaSuccess && graph) cudaGraphDestroy(graph);
    cudaGetLastError();
    throw;
  }
  HPDL_CUDA_CHECK(cudaStreamEndCapture(stream_, &graph));
  cudaGraphExec_t exec = nullptr;
  const cudaError_t rc = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  HPDL_CUDA_CHECK(rc);
  return std::make_unique<GraphRecording>(exec, stream_);
}

CudaDevice::~CudaDevice() {
  timeline_.reset();
  for (cudaStream_t s : {copy_stream_, stream_}) {
    cudaStreamSynchronize(s);
    cudaStreamDestroy(s);
  }
}

// A failed CUDA allocation is std::bad_alloc (the Device contract).
static void require_allocated(cudaError_t rc) {
  if (rc == cudaSuccess) return;
  cudaGetLastError();  // clear it: the next call must not report this one
  throw std::bad_alloc();
}

void* CudaDevice::allocate(size_t bytes) {
  if (bytes == 0) return nullptr;
  void* p = nullptr;
  require_allocated(cudaMalloc(&p, bytes));
  zero(p, bytes);
  return p;
}

// Called from destructors (Buffer, HostMirror): never throws; a failure here follows an
// earlier one that was already reported.
void CudaDevice::release(void* p) {
  // Work still enqueued may use p: cudaFree waits for the device, as the contract needs.
  if (p && cudaFree(p) != cudaSuccess) cudaGetLastError();
}

void CudaDevice::zero(void* p, size_t bytes) {
  if (bytes) HPDL_CUDA_CHECK(cudaMemsetAsync(p, 0, bytes, stream_));
}

void CudaDevice::copy_to_host(void* host_dst, const void* src, size_t bytes) {
  if (!bytes) return;
  HPDL_CUDA_CHECK(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, stream_));
  HPDL_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void CudaDevice::copy_from_host(void* dst, const void* host_src, size_t bytes) {
  if (!bytes) return;
  HPDL_CUDA_CHECK(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, stream_));
  // Pageable host memory may still be read after cudaMemcpyAsync returns: wait, so the
  // caller may reuse host_src at once (the contract).
  HPDL_CUDA_CHECK(cudaStreamSynchronize(stream_));
}

void* CudaDevice::allocate_host(size_t bytes) {
  if (bytes == 0) return nullptr;
  void* p = nullptr;
  require_allocated(cudaMallocHost(&p, bytes));
  std::memset(p, 0, bytes);
  return p;
}

void CudaDevice::release_host(void* p) {
  if (p && cudaFreeHost(p) != cudaSuccess) cudaGetLastError();  // as release(): no throw
}

void CudaDevice::download_after(DeviceEvent& after, void* host_dst, const void* src, size_t bytes,
                                DeviceEvent& done) {
  // Both events are this device's (the Device contract), so they are CudaEvents.
  HPDL_CUDA_CHECK(cudaStreamWaitEvent(copy_stream_, static_cast<CudaEvent&>(after).get(), 0));
  if (bytes)
    HPDL_CUDA_CHECK(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, copy_stream_));
  static_cast<CudaEvent&>(done).record_on(copy_stream_);
}

std::unique_ptr<DeviceEvent> CudaDevice::make_event() {
  return std::make_unique<CudaEvent>(stream_);
}

void CudaDevice::range_push(const char* name) { nvtxRangePushA(name); }
void CudaDevice::range_pop() { nvtxRangePop(); }

void CudaDevice::synchronize() { HPDL_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

PinnedUpload::PinnedUpload(CudaDevice& device, size_t capacity_bytes)
    : device_(device),
      capacity_(capacity_bytes),
      pinned_(device, static_cast<int64_t>(capacity_bytes), Memory::kHost),
      on_device_(device, static_cast<int64_t>(capacity_bytes)) {
  HPDL_CUDA_CHECK(cudaEventCreateWithFlags(&copied_, cudaEventDisableTiming));
  HPDL_CUDA_CHECK(cudaEventRecord(copied_, device.stream()));
}

PinnedUpload::~PinnedUpload() {
  cudaEventSynchronize(copied_);  // the last copy has left pinned_ before it is freed
  cudaEventDestroy(copied_);
}

const void* PinnedUpload::upload(const void* host_src, size_t bytes) {
  if (bytes > capacity_)
    fail_call("uploading the input to the GPU", std::to_string(bytes) + " bytes exceed the " +
                                                    std::to_string(capacity_) +
                                                    " set up for this kernel");
  HPDL_CUDA_CHECK(cudaEventSynchronize(copied_));  // the previous copy has left pinned_
  if (bytes == 0) return on_device_.get();
  std::memcpy(pinned_.get(), host_src, bytes);
  HPDL_CUDA_CHECK(cudaMemcpyAsync(on_device_.get(), pinned_.get(), bytes, cudaMemcpyHostToDevice,
                                  device_.stream()));
  HPDL_CUDA_CHECK(cudaEventRecord(copied_, device_.stream()));
  return on_device_.get();
}

}  // namespace hpdl::cuda
