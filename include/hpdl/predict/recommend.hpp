// `hpdl predict --recommend`: which training mode, and on how many hosts, for this cluster.
// From one profiled synchronous run and the cluster's network.json, every candidate is
// costed with the same step models as `hpdl predict` (predictor.hpp) at every rank count
// asked for: synchronous SGD, its gradients in bf16, local SGD and DiLoCo every
// H in {4, 16, 64} steps (also with bf16 changes), and the parameter server (Downpour,
// DC-ASGD, and asynchronous DiLoCo pulling and pushing every 16 or 64 steps: one server, a
// worker per other rank with the run's batch as its own, the worker's compute scaled from
// the profile to that batch). Each has its accuracy risk (graded: accuracy_risk.hpp) and the
// exact --set options that select it, complete: a switch to the servers' plain SGD from
// another optimizer sets an SGD rate (kSgdRateSet). Ranked by accuracy risk (low at most,
// then medium, then high) and within that by samples per second (the time per epoch where
// the run recorded its training split's size): no time-to-accuracy model exists yet, so the
// same accuracy sooner is approximated by the fastest candidate that risks least.
#pragma once
#include <string>
#include <vector>

#include "hpdl/predict/accuracy_risk.hpp"
#include "hpdl/predict/predictor.hpp"

namespace hpdl {

// The SGD rate a switch from another optimizer sets: the rate hpdl's presets and its
// measured parameter-server runs of LeNet and the MLP train with (docs/results.md).
inline const char* const kSgdRateSet = "optimizer.lr=0.05";

struct Candidate {
  std::string name;               // e.g. "diloco H=16 bf16"
  std::vector<std::string> sets;  // --set options (key=value) that select it
  StepProfile profile;            // the profile as this candidate would run
};

// The candidates derived from a profiled synchronous run.
std::vector<Candidate> training_candidates(const StepProfile& measured);

struct Recommendation {
  const Candidate* candidate = nullptr;
  Prediction at;
  AccuracyRisk risk;   // at this rank count (predict/accuracy_risk.hpp)
  double epoch_s = 0;  // 0: the training split's size is unknown
};

// Every candidate at every rank count (the parameter server needs 2 or more; at 1 rank only
// plain sync, which every sync variant becomes there): the least accuracy risk first, then
// the fastest.
std::vector<Recommendation> recommend(const std::vector<Candidate>& candidates,
                                      const NetworkModel& net, const std::vector<int>& ranks,
                                      const PredictOptions& o);

// The table of the first `top`, and the commands that launch the best (of the least risk,
// the fewest ranks within 5 % of its fastest): sbatch, and mpirun with a hostfile; where a
// candidate of higher risk is more than 5 % faster, the fastest of those with its options.
// config: the config file the user trains with.
std::string recommendation_report(const StepProfile& measured,
                                  const std::vector<Recommendation>& ranked, size_t top,
                                  const std::string& config, int ranks_per_host);
std::string recommendation_csv(const std::vector<Recommendation>& ranked);

}  // namespace hpdl
