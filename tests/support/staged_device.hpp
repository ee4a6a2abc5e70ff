// A device for tests of the asynchrony contract without a GPU: its memory is host memory
// the code under test must not touch directly (host_accessible() is false, so every host
// view is a copy), and each event completes only after `lag` queries, like a stream that
// is still busy (an asynchronous download lands only then). It counts transfers and how
// often an unfinished event was waited on.
#pragma once
#include <cstring>
#include <functional>

#include "hpdl/core/device.hpp"
#include "hpdl/kernels/kernels.hpp"

namespace hpdl {

class StagedDevice final : public Device {
 public:
  explicit StagedDevice(int lag) : lag_(lag) {}
  std::string name() const override { return "staged (test)"; }
  bool host_accessible() const override { return false; }
  void* allocate(size_t bytes) override {
    allocated += bytes;
    return host_device().allocate(bytes);
  }
  void release(void* p) override { host_device().release(p); }
  void zero(void* p, size_t bytes) override { host_device().zero(p, bytes); }
  void copy_to_host(void* dst, const void* src, size_t bytes) override {
    ++downloads, std::memcpy(dst, src, bytes);
  }
  void copy_from_host(void* dst, const void* src, size_t bytes) override {
    ++uploads, std::memcpy(dst, src, bytes);
  }
  // The copy lands only when `done` completes (after `lag` queries or a wait): a reader
  // that does not wait for `done` sees stale host memory.
  void download_after(DeviceEvent&, void* dst, const void* src, size_t bytes,
                      DeviceEvent& done) override {
    ++downloads;
    auto& event = static_cast<Event&>(done);
    event.record();
    event.on_done = [dst, src, bytes] { std::memcpy(dst, src, bytes); };
  }
  std::unique_ptr<DeviceEvent> make_event() override { return std::make_unique<Event>(*this); }
  void synchronize() override {}
  Timeline& timeline() override { return host_device().timeline(); }

  int downloads = 0, uploads = 0, waits = 0, records = 0;
  size_t allocated = 0;  // bytes, over all allocations

 private:
  class Event final : public DeviceEvent {
   public:
    explicit Event(StagedDevice& d) : d_(d) {}
    void record() override { ++d_.records, left_ = d_.lag_, on_done = nullptr; }
    bool done() override {
      if (left_ > 0 && --left_ == 0) complete();
      return left_ == 0;
    }
    void wait() override {
      if (left_ > 0) ++d_.waits, left_ = 0, complete();
    }
    std::function<void()> on_done;  // what completes with the event (a copy)

   private:
    void complete() {
      if (on_done) on_done(), on_done = nullptr;
    }
    StagedDevice& d_;
    int left_ = 0;
  };
  int lag_;
};

// The reference kernels with their buffers on a StagedDevice: a whole model whose memory
// the host may only reach through the device's copies, as on a GPU, but computed by the
// reference loops, so its results must equal the plain reference backend's bit for bit.
class StagedKernels final : public KernelFactory {
 public:
  explicit StagedKernels(int lag) : device_(lag) {}
  std::string name() const override { return "reference on a staged device (test)"; }
  std::unique_ptr<DenseKernel> dense(const DenseDims& d) override { return ref_->dense(d); }
  std::unique_ptr<ConvKernel> conv(const ConvDims& d) override { return ref_->conv(d); }
  std::unique_ptr<MaxPoolKernel> max_pool(const PoolDims& d) override { return ref_->max_pool(d); }
  std::unique_ptr<ActivationKernel> activation(Activation a, int64_t n) override {
    return ref_->activation(a, n);
  }
  std::unique_ptr<SoftmaxXentKernel> softmax_xent(int64_t batch, int64_t classes) override {
    return ref_->softmax_xent(batch, classes);
  }
  std::unique_ptr<DropoutKernel> dropout(const DropoutDims& d) override { return ref_->dropout(d); }
  std::unique_ptr<LstmCellKernel> lstm_cell(const LstmCellDims& d) override {
    return ref_->lstm_cell(d);
  }
  std::unique_ptr<ScalarNormKernel> scalar_norm(const ScalarNormDims& d) override {
    return ref_->scalar_norm(d);
  }
  std::unique_ptr<BatchNormKernel> batch_norm(const BatchNormDims& d) override {
    return ref_->batch_norm(d);
  }
  VectorOps& ops() override { return ref_->ops(); }
  Device& device() override { return device_; }
  StagedDevice& staged() { return device_; }

 private:
  std::unique_ptr<KernelFactory> ref_ = make_reference_kernels();
  StagedDevice device_;
};

}  // namespace hpdl
