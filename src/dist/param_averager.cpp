#include "hpdl/dist/param_averager.hpp"

#include <algorithm>
#include <climits>

#include "hpdl/core/error.hpp"
#include "hpdl/dist/error_feedback.hpp"

namespace hpdl {

ParamAverager::ParamAverager(const Comm& comm, Device& device, std::span<float> params,
                             const LocalSgdSettings& settings, Watchdog& watchdog)
    : comm_(comm), s_(settings), watchdog_(watchdog) {
  HPDL_REQUIRE(s_.every >= 1 && s_.warmup_steps >= 0, "local SGD: bad interval settings");
  if (!on()) return;
  params_ = HostMirror(device, params);
  anchor_.assign(params.size(), 0.0f);
  change_.assign(params.size(), 0.0f);
  if (s_.nesterov) momentum_.assign(params.size(), 0.0f);
  if (s_.wire) {
    HPDL_REQUIRE(params.size() <= INT_MAX, "local SGD: a compressed average of over 2^31 values");
    residual_.assign(params.size(), 0.0f);
    wire_.resize(params.size());
  }
}

int64_t ParamAverager::interval_pos(int64_t g, int64_t epoch_first) const {
  return (g - std::max(epoch_first, s_.warmup_steps)) % s_.every;
}

void ParamAverager::anchor_here() {
  if (!on()) return;
  params_.download();
  std::copy(params_.host().begin(), params_.host().end(), anchor_.begin());
}

void ParamAverager::before_step(int64_t g, int64_t epoch_first) {
  if (local(g) && interval_pos(g, epoch_first) == 0) anchor_here();
}

bool ParamAverager::mid_interval(int64_t g, int64_t epoch_first) const {
  return local(g) && interval_pos(g, epoch_first) != s_.every - 1;
}

bool ParamAverager::ends_interval(int64_t g, int64_t epoch_first, bool last) const {
  return local(g) && (last || interval_pos(g, epoch_first) == s_.every - 1);
}

void ParamAverager::average(int64_t g) {
  WatchdogScope guard(watchdog_, "local SGD parameter average", g);
  params_.download();
  std::span<float> p = params_.host();
  for (size_t i = 0; i < p.size(); ++i) change_[i] = anchor_[i] - p[i];
  if (s_.wire) {
    encode_with_feedback(*s_.wire, change_, residual_, wire_);
    MPI_Request r;
    comm_.start_allreduce_sum(wire_.data(), static_cast<int64_t>(wire_.size()), *s_.wire, &r);
    comm_.wait_all(1, &r);
    decode(*s_.wire, wire_, change_);
  } else {
    comm_.allreduce_sum(change_.data(), static_cast<int64_t>(change_.size()));
  }
  const float inv = 1.0f / static_cast<float>(comm_.size());
  if (s_.nesterov) {
    const float lr = static_cast<float>(s_.outer_lr), mu = static_cast<float>(s_.outer_momentum);
    for (size_t i = 0; i < p.size(); ++i) {
      const float d = change_[i] * inv;
      momentum_[i] = mu * momentum_[i] + d;
      p[i] = anchor_[i] - lr * (d + mu * momentum_[i]);
    }
  } else {
    for (size_t i = 0; i < p.size(); ++i) p[i] = anchor_[i] - change_[i] * inv;
  }
  params_.upload();
  ++averages_;
}

}  // namespace hpdl
