// Local SGD (Lin et al. 2020, "Don't use large mini-batches, use local SGD") and its DiLoCo
// outer step (Douillard et al. 2023): after `warmup_steps` ordinary synchronous steps
// (post-local SGD), each rank takes H = `every` optimizer steps on its own batches with no
// communication, then the ranks agree on one set of parameters. The ranks' changes since the
// interval began (anchor - params, the "outer gradient") are averaged with one allreduce,
// optionally in 16 bits with error feedback, and the outer step applies the mean change D:
//
//   average:  params = anchor - D                               (plain local SGD)
//   nesterov: m = mu m + D;  params = anchor - lr (D + mu m)     (DiLoCo: lr 0.7, mu 0.9)
//
// An interval also ends at the last step of an epoch and of the run, so evaluations,
// checkpoints between epochs and the final model see the one averaged model. The inner
// optimizer's state (Adam's moments, momentum) stays on each rank, as in DiLoCo. Every rank
// computes the outer step from the same allreduced values, so anchor, momentum and the
// averaged parameters are identical on every rank.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "hpdl/comm/comm.hpp"
#include "hpdl/comm/watchdog.hpp"
#include "hpdl/core/device.hpp"
#include "hpdl/core/half.hpp"
#include "hpdl/core/host_mirror.hpp"

namespace hpdl {

struct LocalSgdSettings {
  int64_t every = 1;         // H: local steps per interval (1: synchronous SGD, no averaging)
  int64_t warmup_steps = 0;  // global steps of synchronous SGD before the first local step
  bool nesterov = false;     // the outer step: DiLoCo's Nesterov momentum, else averaging
  double outer_lr = 0.7, outer_momentum = 0.9;
  std::optional<HalfFormat> wire;  // the changes travel in 16 bits (error feedback)
};

class ParamAverager {
 public:
  // params: the model's parameters on `device`.
  ParamAverager(const Comm& comm, Device& device, std::span<float> params,
                const LocalSgdSettings& settings, Watchdog& watchdog);
  ParamAverager(const ParamAverager&) = delete;
  ParamAverager& operator=(const ParamAverager&) = delete;

  bool on() const { return s_.every > 1; }
  // Whether global step g is a local step (no gradient allreduce).
  bool local(int64_t g) const { return on() && g >= s_.warmup_steps; }
  // Before step g of an epoch whose first global step is epoch_first: at an interval's
  // start, keeps the parameters as the anchor.
  void before_step(int64_t g, int64_t epoch_first);
  // Whether step g ends an interval: H local steps, or `last` (the epoch's or the run's
  // last step) after local steps.
  bool ends_interval(int64_t g, int64_t epoch_first, bool last) const;
  // Collective, after the step that ends an interval: averages the ranks' changes since
  // the anchor and applies the outer step.
  void average(int64_t g);
  // Whether step g (of the epoch starting at epoch_first) left the ranks' parameters
  // different: a local step that did not end its interval.
  bool mid_interval(int64_t g, int64_t epoch_first) const;

  // State, host memory, identical on every rank: the anchor (the parameters at the
  // interval's start) and the outer momentum (empty unless nesterov); this rank's error
  // feedback (empty without compression).
  std::span<float> anchor() { return anchor_; }
  std::span<float> momentum() { return momentum_; }
  std::span<float> feedback() { return residual_; }
  // The anchor from the current parameters (a resume that has no saved anchor).
  void anchor_here();
  int64_t averages() const { return averages_; }

 private:
  int64_t interval_pos(int64_t g, int64_t epoch_first) const;  // local steps before g in it

  const Comm& comm_;
  HostMirror params_;
  LocalSgdSettings s_;
  Watchdog& watchdog_;
  std::vector<float> anchor_, momentum_, change_, residual_;
  std::vector<uint16_t> wire_;
  int64_t averages_ = 0;
};

}  // namespace hpdl
