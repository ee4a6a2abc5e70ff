// A device for tests of the asynchrony contract without a GPU: its memory is host memory
// the code under test must not touch directly (host_accessible() is false, so every host
// view is a copy), and each event completes only after `lag` queries, like a stream that
// is still busy. It counts transfers and how often an unfinished event was waited on.
#pragma once
#include <cstring>

#include "hpdl/core/device.hpp"

namespace hpdl {

class StagedDevice final : public Device {
 public:
  explicit StagedDevice(int lag) : lag_(lag) {}
  std::string name() const override { return "staged (test)"; }
  bool host_accessible() const override { return false; }
  void* allocate(size_t bytes) override { return host_device().allocate(bytes); }
  void release(void* p) override { host_device().release(p); }
  void zero(void* p, size_t bytes) override { host_device().zero(p, bytes); }
  void copy_to_host(void* dst, const void* src, size_t bytes) override {
    ++downloads, std::memcpy(dst, src, bytes);
  }
  void copy_from_host(void* dst, const void* src, size_t bytes) override {
    ++uploads, std::memcpy(dst, src, bytes);
  }
  std::unique_ptr<DeviceEvent> make_event() override { return std::make_unique<Event>(*this); }
  void synchronize() override {}
  Timeline& timeline() override { return host_device().timeline(); }

  int downloads = 0, uploads = 0, waits = 0, records = 0;

 private:
  class Event final : public DeviceEvent {
   public:
    explicit Event(StagedDevice& d) : d_(d) {}
    void record() override { ++d_.records, left_ = d_.lag_; }
    bool done() override { return left_ == 0 || --left_ == 0; }
    void wait() override {
      if (left_ > 0) ++d_.waits;
      left_ = 0;
    }

   private:
    StagedDevice& d_;
    int left_ = 0;
  };
  int lag_;
};

}  // namespace hpdl
