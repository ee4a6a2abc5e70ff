// The accuracy-risk grades of --recommend's candidates (see the header).
#include "hpdl/predict/accuracy_risk.hpp"

#include <algorithm>
#include <cstdio>

#include "hpdl/predict/recommend.hpp"

namespace hpdl {
namespace {

// A share of an epoch for the reason, "<before>3.4 % of an epoch<after>", or, where the
// run did not record its training split, nothing.
std::string share_text(double f, const char* before, const char* after) {
  if (f < 0) return "";
  char buf[96];
  std::snprintf(buf, sizeof buf, "%s%.3g %% of an epoch%s", before, 100 * f, after);
  return buf;
}

Risk by_share(double f, double low, double medium) {
  if (f < 0) return Risk::kMedium;  // the epoch's length is unknown
  return f <= low ? Risk::kLow : f <= medium ? Risk::kMedium : Risk::kHigh;
}

}  // namespace

const char* risk_name(Risk r) {
  switch (r) {
    case Risk::kNone:
      return "none";
    case Risk::kLow:
      return "low";
    case Risk::kMedium:
      return "medium";
    case Risk::kHigh:
      return "high";
  }
  return "?";
}

std::string AccuracyRisk::text() const { return std::string(risk_name(level)) + ": " + why; }

AccuracyRisk accuracy_risk(const StepProfile& p, int ranks) {
  // The steps of one epoch at the run's batch (-1: unknown).
  const double epoch_steps =
      p.train_samples > 0 ? double(p.train_samples) / double(p.global_batch) : -1;
  AccuracyRisk r;
  if (!p.async()) {
    const double f = epoch_steps > 0 ? double(p.sync_every) / epoch_steps : -1;
    const bool nesterov = p.outer == OuterStep::kNesterov;
    if (p.sync_every > 1) {
      r.level = nesterov ? by_share(f, 0.05, 0.5) : by_share(f, 0.01, 0.5);
      r.why = "each rank takes " + std::to_string(p.sync_every) + " steps alone" +
              share_text(f, " (", ")") + " between averages" +
              (nesterov ? ", outer Nesterov step" : "");
    } else {
      r.level = Risk::kNone, r.why = "the reference";
    }
    if (p.wire_bytes < 4) {
      r.level = std::max(r.level, Risk::kLow);
      r.why = r.level == Risk::kLow && p.sync_every == 1
                  ? "16-bit gradients with error feedback"
                  : r.why + "; 16-bit changes with error feedback";
    }
    return r;
  }
  const int workers = std::max(1, ranks - p.servers);
  const int stale = workers - 1;
  const Risk staleness = stale <= 3 ? Risk::kLow : stale <= 15 ? Risk::kMedium : Risk::kHigh;
  if (p.n_push > 1) {
    const double f = epoch_steps > 0 ? double(p.n_push) * workers / epoch_steps : -1;
    r.level = std::max(staleness, by_share(f, 0.02, 0.1));
    r.why = "each worker takes " + std::to_string(p.n_push) + " steps alone while the " +
            std::to_string(stale) + " others push theirs" +
            share_text(f, " (the server moves ", " meanwhile)");
  } else {
    r.level = staleness;
    r.why = "stale gradients (about " + std::to_string(stale) + " updates per push)" +
            (p.mode == DistMode::kDcAsgd ? ", delay-compensated" : "");
  }
  if (p.optimizer && *p.optimizer != OptimizerKind::kSgd) {
    r.level = Risk::kHigh;
    r.why += std::string("; the run trains with ") + word(*p.optimizer) +
             ", the servers apply plain SGD (the launch line sets " + kSgdRateSet +
             ": check it for this model)";
  }
  return r;
}

}  // namespace hpdl
