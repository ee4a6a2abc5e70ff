// The per-step NaN/Inf guard, checked after the gradient is final and before it is
// applied, so a non-finite value never reaches the parameters or a checkpoint.
// Sync mode: every rank holds the same reduced gradient, so every rank reaches the same
// verdict with no extra communication; only a failing step gathers which ranks' losses were
// not finite, to name them. Parameter-server workers check their own gradient before it is
// applied locally or pushed.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "hpdl/comm/comm.hpp"
#include "hpdl/comm/watchdog.hpp"
#include "hpdl/nn/model.hpp"

namespace hpdl {

// Index of the first segment (model order) whose values hold a NaN or Inf; -1 if none.
int64_t first_nonfinite_segment(const std::vector<ParamSegment>& segments,
                                std::span<const float> values);

class FiniteGuard {
 public:
  // `skip`: train.nonfinite = "skip" (else "stop").
  FiniteGuard(bool skip, const Comm& comm, Watchdog& watchdog);

  // Sync mode, collective: grad_sq is the reduced gradient's sum of squares (the same on
  // every rank), local_loss this rank's loss sum. Returns true when the step may be applied;
  // false when it is skipped (policy skip; warning() then describes it). Policy stop throws
  // AgreedError naming the step, the first layer and the first rank whose loss was not finite.
  bool check_reduced(double grad_sq, double local_loss, const Model& model, int64_t step,
                     int64_t epoch);
  // Parameter-server worker: its own gradient, no communication. Policy stop throws Error
  // (this rank alone: the job is aborted with the message).
  bool check_local(double grad_sq, const Model& model, int64_t step, int64_t epoch);

  int64_t skipped() const { return skipped_; }
  const std::string& warning() const { return warning_; }

 private:
  std::string describe(const Model& model, int64_t step, int64_t epoch) const;

  bool skip_;
  const Comm& comm_;
  Watchdog& watchdog_;
  int64_t skipped_ = 0;
  std::string warning_;
};

}  // namespace hpdl
