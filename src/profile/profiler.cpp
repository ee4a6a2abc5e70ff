// The profiler's schedule and buffer sizing.
#include "hpdl/profile/profiler.hpp"

#include <algorithm>

namespace hpdl {

Profiler::Profiler(const ProfileConfig& cfg, int64_t steps_bound, int64_t events_per_step)
    : cfg_(cfg) {
  names_ = {"step"};
  categories_ = {"step"};
  int64_t active_steps = 0;
  for (int64_t s = 0; s < steps_bound; ++s) active_steps += schedule_active(s) ? 1 : 0;
  // Bounded at 64 Mi events (2 GiB); beyond that events are counted as dropped.
  events_.reserve(static_cast<size_t>(std::min<int64_t>(active_steps * events_per_step, 1 << 26)));
  walls_.reserve(static_cast<size_t>(std::min<int64_t>(steps_bound, 1 << 24)));
  marked_.reserve(static_cast<size_t>(events_per_step));
  marks_.reserve(static_cast<size_t>(2 * events_per_step));
}

int32_t Profiler::name(const std::string& text, const std::string& category) {
  names_.push_back(text);
  categories_.push_back(category);
  return static_cast<int32_t>(names_.size() - 1);
}

bool Profiler::schedule_active(int64_t step) const {
  if (!cfg_.enabled || step < cfg_.skip) return false;
  const int64_t cycle_len = cfg_.warmup + cfg_.active;
  const int64_t k = step - cfg_.skip;
  if (cfg_.repeat > 0 && k / cycle_len >= cfg_.repeat) return false;
  return k % cycle_len >= cfg_.warmup;
}

void Profiler::begin_step(int64_t step) {
  step_ = step;
  on_ = schedule_active(step);
  step_t0_ = now();
}

void Profiler::end_step() {
  // The step's device intervals: one resolve for all their marks (a GPU backend waits for
  // its stream here, once a step).
  if (!marked_.empty()) {
    marks_.clear();
    for (size_t i : marked_) marks_.push_back(events_[i].t0_ns), marks_.push_back(events_[i].t1_ns);
    timeline_->resolve(marks_.data(), static_cast<int64_t>(marks_.size()));
    for (size_t k = 0; k < marked_.size(); ++k)
      events_[marked_[k]].t0_ns = marks_[2 * k], events_[marked_[k]].t1_ns = marks_[2 * k + 1];
    marked_.clear();
  }
  // An unrecorded step waits for its work too: a GPU step otherwise ends when it is
  // launched, and its work is counted in the next (recorded) step.
  timeline_->finish();
  const int64_t t1 = now();
  if (on_) add(kStep, step_t0_, t1);
  if (walls_.size() < walls_.capacity()) walls_.push_back(on_ ? t1 - step_t0_ : step_t0_ - t1);
  on_ = false;
}

}  // namespace hpdl
