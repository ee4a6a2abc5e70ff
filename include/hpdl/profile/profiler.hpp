// The per-rank profiler: timestamps of named intervals (a layer's forward, a bucket's
// allreduce, a pull) go into a buffer allocated once, on the schedule of the framework
// profilers (skip, then cycles of warm-up and active steps, repeated). Nothing in a step
// allocates or does I/O; the trace is written after training (trace_writer.hpp). When
// profiling is off the trainer holds no profiler and each probe is one null test.
//
// Tracks: kCompute holds the rank's main thread, whose intervals never overlap, so the
// part of a step they cover is the "attributed" time; kComm holds communication that runs
// in the background (an allreduce bucket from issue to completion).
//
// Layers are timed on the backend's Timeline (DeviceScope): marks taken around each
// layer's forward and backward are resolved to times once per step, in end_step(), with no
// wait per layer. On a CPU backend a mark is the host clock, so both kinds of interval
// read the same clock.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "hpdl/config/settings.hpp"
#include "hpdl/core/timeline.hpp"

namespace hpdl {

enum class Track : int32_t { kCompute = 0, kComm = 1 };

struct TraceEvent {
  int64_t t0_ns, t1_ns;  // steady clock of this rank
  int64_t step;
  int32_t name;  // index into Profiler::names()
  int32_t track;
};

class Profiler {
 public:
  // steps_bound: the most steps training can run (sizes the buffer with events_per_step).
  Profiler(const ProfileConfig& cfg, int64_t steps_bound, int64_t events_per_step);

  static int64_t now() { return HostTimeline::now(); }

  // The backend whose work DeviceScope times (null: the host clock). Set-up only.
  void set_timeline(Timeline* t) { timeline_ = t ? t : &host_; }
  int64_t mark() { return timeline_->mark(); }
  // An interval between two marks of the timeline; its times are known after end_step().
  void add_marks(int32_t name, int64_t m0, int64_t m1) {
    if (!on_) return;
    if (events_.size() == events_.capacity()) {
      ++dropped_;
      return;
    }
    marked_.push_back(events_.size());
    events_.push_back({m0, m1, step_, name, static_cast<int32_t>(Track::kCompute)});
  }

  // Set-up only: the id of an interval name, with its category ("forward", "allreduce").
  int32_t name(const std::string& text, const std::string& category);

  // Starts step `step`; recording is on if the schedule makes it an active step.
  void begin_step(int64_t step);
  // Records the step's wall interval. Every step's wall time is also kept (two clock
  // reads), so recorded and unrecorded steps of one run can be compared: the overhead.
  void end_step();
  bool on() const { return on_; }
  void add(int32_t name, int64_t t0, int64_t t1, Track track = Track::kCompute) {
    if (!on_) return;
    if (events_.size() == events_.capacity()) {
      ++dropped_;
      return;
    }
    events_.push_back({t0, t1, step_, name, static_cast<int32_t>(track)});
  }

  bool schedule_active(int64_t step) const;
  const std::vector<TraceEvent>& events() const { return events_; }
  const std::vector<std::string>& names() const { return names_; }
  const std::vector<std::string>& categories() const { return categories_; }
  int64_t dropped() const { return dropped_; }
  // Wall time (ns) of every step since construction; negative for unrecorded steps.
  const std::vector<int64_t>& step_walls() const { return walls_; }
  int32_t step_name() const { return kStep; }

 private:
  static constexpr int32_t kStep = 0;
  ProfileConfig cfg_;
  std::vector<std::string> names_, categories_;
  std::vector<TraceEvent> events_;
  std::vector<int64_t> walls_;
  bool on_ = false;
  int64_t step_ = 0, step_t0_ = 0, dropped_ = 0;
  HostTimeline host_;
  Timeline* timeline_ = &host_;
  std::vector<size_t> marked_;  // this step's events still holding marks
  std::vector<int64_t> marks_;  // scratch for resolving them
};

// Records the backend's work between construction and destruction (two timeline marks)
// under `name` when p is non-null and recording: layers' forward and backward, the loss,
// the update.
class DeviceScope {
 public:
  DeviceScope(Profiler* p, int32_t name)
      : p_(p && p->on() ? p : nullptr), name_(name), m0_(p_ ? p_->mark() : 0) {}
  ~DeviceScope() {
    if (p_) p_->add_marks(name_, m0_, p_->mark());
  }
  DeviceScope(const DeviceScope&) = delete;
  DeviceScope& operator=(const DeviceScope&) = delete;

 private:
  Profiler* p_;
  int32_t name_;
  int64_t m0_;
};

// Records [construction, destruction) under `name` when p is non-null and recording.
class ProfileScope {
 public:
  ProfileScope(Profiler* p, int32_t name, Track track = Track::kCompute)
      : p_(p && p->on() ? p : nullptr), name_(name), track_(track), t0_(p_ ? Profiler::now() : 0) {}
  ~ProfileScope() {
    if (p_) p_->add(name_, t0_, Profiler::now(), track_);
  }
  ProfileScope(const ProfileScope&) = delete;
  ProfileScope& operator=(const ProfileScope&) = delete;

 private:
  Profiler* p_;
  int32_t name_;
  Track track_;
  int64_t t0_;
};

}  // namespace hpdl
