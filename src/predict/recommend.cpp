#include "hpdl/predict/recommend.hpp"

#include <algorithm>
#include <cstdio>

#include "hpdl/core/error.hpp"
#include "hpdl/predict/accuracy_risk.hpp"
#include "hpdl/predict/batch_split.hpp"

namespace hpdl {
namespace {

Candidate sync_variant(const StepProfile& m, int64_t h, bool nesterov, bool bf16) {
  Candidate c;
  c.profile = m;
  c.profile.sync_every = h;
  c.profile.wire_bytes = bf16 ? 2 : 4;
  c.profile.outer = nesterov ? OuterStep::kNesterov : OuterStep::kAverage;
  c.name = h == 1 ? "sync" : (nesterov ? "diloco H=" : "local SGD H=") + std::to_string(h);
  if (bf16) c.name += " bf16";
  c.sets.push_back("distributed.sync_every=" + std::to_string(h));
  c.sets.push_back(std::string("distributed.compression=\"") + (bf16 ? "bf16" : "none") + "\"");
  if (h > 1) c.sets.push_back(std::string("distributed.outer=\"") + word(c.profile.outer) + "\"");
  return c;
}

// mode downpour or dcasgd; h > 1: asynchronous DiLoCo (downpour, pulling and pushing
// every h steps, the server's outer Nesterov step).
Candidate ps_variant(const StepProfile& m, DistMode mode, int h = 1) {
  Candidate c;
  c.name = h > 1 ? "async diloco H=" + std::to_string(h) : word(mode);
  c.profile = m;
  StepProfile& p = c.profile;
  p.mode = mode, p.servers = 1, p.n_fetch = p.n_push = h, p.sync_every = 1, p.wire_bytes = 4;
  p.outer = h > 1 ? OuterStep::kNesterov : OuterStep::kAverage;
  // A worker trains on the run's whole batch: the profiled batch-proportional parts scaled
  // from the rank's local batch to it (their per-call parts as measured, batch_split.hpp).
  const StepProfile w = at_batch(m, double(m.global_batch));
  double forward = 0, backward = 0;
  for (size_t i = 0; i < w.layers.size(); ++i)
    forward += w.forward_s[i], backward += w.backward_s[i];
  p.worker_compute_s = w.data_s + forward + w.loss_s + backward + w.update_s + w.other_s;
  p.local_batch = m.global_batch;
  c.sets = {"distributed.mode=\"" + std::string(word(mode)) + "\"", "distributed.servers=1",
            "optimizer.name=\"sgd\"", "optimizer.momentum=0"};
  // The servers apply plain SGD: a run with another optimizer gets an SGD rate with the
  // switch, so the printed line trains as launched (its rate is no SGD rate).
  if (m.optimizer && *m.optimizer != OptimizerKind::kSgd) c.sets.push_back(kSgdRateSet);
  if (h > 1)
    c.sets.insert(c.sets.end(),
                  {"distributed.n_fetch=" + std::to_string(h),
                   "distributed.n_push=" + std::to_string(h), "distributed.outer=\"nesterov\""});
  return c;
}

std::string joined_sets(const Candidate& c) {
  std::string out;
  for (const auto& s : c.sets) out += " --set '" + s + "'";
  return out;
}

// 0: accuracy risk low at most; 1: medium; 2: high.
int risk_tier(const Recommendation& r) {
  return r.risk.level <= Risk::kLow ? 0 : r.risk.level == Risk::kMedium ? 1 : 2;
}

}  // namespace

std::vector<Candidate> training_candidates(const StepProfile& measured) {
  HPDL_REQUIRE(!measured.async(), measured.name + " is a " + word(measured.mode) +
                                      " run: --recommend starts from a profiled synchronous run");
  std::vector<Candidate> out;
  out.push_back(sync_variant(measured, 1, false, false));
  out.push_back(sync_variant(measured, 1, false, true));
  for (int64_t h : {4, 16, 64}) {
    out.push_back(sync_variant(measured, h, false, false));
    out.push_back(sync_variant(measured, h, true, false));
    out.push_back(sync_variant(measured, h, true, true));
  }
  out.push_back(ps_variant(measured, DistMode::kDownpour));
  out.push_back(ps_variant(measured, DistMode::kDcAsgd));
  for (int h : {16, 64}) out.push_back(ps_variant(measured, DistMode::kDownpour, h));
  return out;
}

std::vector<Recommendation> recommend(const std::vector<Candidate>& candidates,
                                      const NetworkModel& net, const std::vector<int>& ranks,
                                      const PredictOptions& o) {
  std::vector<Recommendation> out;
  for (const Candidate& c : candidates) {
    for (int r : ranks) {
      if (c.profile.async() && r < 2) continue;
      if (r == 1 && c.name != "sync") continue;  // one rank: every sync variant is plain SGD
      Recommendation rec;
      rec.candidate = &c;
      rec.at = predict_with_band(c.profile, net, r, o);
      rec.risk = accuracy_risk(c.profile, r);
      if (rec.at.samples_per_s <= 0) continue;
      if (c.profile.train_samples > 0) rec.epoch_s = c.profile.train_samples / rec.at.samples_per_s;
      out.push_back(std::move(rec));
    }
  }
  // What a user wants first is the same accuracy sooner: the candidates whose accuracy risk
  // is low at most, fastest first, then the medium, then the high.
  std::stable_sort(out.begin(), out.end(), [](const Recommendation& a, const Recommendation& b) {
    if (risk_tier(a) != risk_tier(b)) return risk_tier(a) < risk_tier(b);
    return a.at.samples_per_s > b.at.samples_per_s;
  });
  return out;
}

std::string recommendation_report(const StepProfile& measured,
                                  const std::vector<Recommendation>& ranked, size_t top,
                                  const std::string& config, int ranks_per_host) {
  HPDL_REQUIRE(!ranked.empty(), "no candidate could be costed");
  const Recommendation* base = nullptr;  // sync on one rank, when it was asked for
  for (const auto& r : ranked)
    if (r.candidate->name == "sync" && r.at.ranks == 1) base = &r;
  char line[512];
  std::string out = "recommended for " + measured.name + " (batch " +
                    std::to_string(measured.global_batch) + "), best first:\n";
  out +=
      " rank  candidate            ranks hosts   samples/s    s/epoch  vs 1 rank  accuracy risk\n";
  for (size_t i = 0; i < std::min(top, ranked.size()); ++i) {
    const Recommendation& r = ranked[i];
    char epoch[32] = "-", speedup[32] = "-";
    if (r.epoch_s > 0) std::snprintf(epoch, sizeof epoch, "%.1f", r.epoch_s);
    if (base)
      std::snprintf(speedup, sizeof speedup, "%.2fx", r.at.samples_per_s / base->at.samples_per_s);
    std::snprintf(line, sizeof line, "%5zu  %-20s %5d %5d %11.1f %10s %9s  %s\n", i + 1,
                  r.candidate->name.c_str(), r.at.ranks, r.at.hosts, r.at.samples_per_s, epoch,
                  speedup, r.risk.text().c_str());
    out += line;
  }
  // The best: of the lowest accuracy risk there is, the fewest ranks within 5 % of the
  // fastest (then the simpler candidate).
  const Recommendation* pick = &ranked.front();
  for (const auto& r : ranked)
    if (risk_tier(r) == risk_tier(ranked.front()) &&
        r.at.samples_per_s >= 0.95 * ranked.front().at.samples_per_s && r.at.ranks < pick->at.ranks)
      pick = &r;
  const Recommendation& best = *pick;
  const std::string sets = joined_sets(*best.candidate);
  out += std::string("best (") +
         (risk_tier(best) == 0 ? "of those with a low accuracy risk, " : "") +
         "the fewest ranks within 5% of the fastest): " + best.candidate->name + " on " +
         std::to_string(best.at.ranks) + " ranks (" + std::to_string(best.at.hosts) +
         " hosts): " + best.at.bottleneck + "\n";
  if (best.candidate->profile.async()) {
    out += "  sbatch:  HPDL_PS_MODE=" + std::string(word(best.candidate->profile.mode)) +
           " HPDL_SERVERS=1 sbatch -N " + std::to_string(best.at.hosts) + " -n " +
           std::to_string(best.at.ranks) + " jobs/train_ps.sbatch " + config + sets + "\n";
  } else {
    out += "  sbatch:  sbatch -N " + std::to_string(best.at.hosts) +
           " --ntasks-per-node=" + std::to_string(std::min(ranks_per_host, best.at.ranks)) +
           " jobs/train.sbatch " + config + sets + "\n";
  }
  // A candidate whose range overlaps the best's: the forecast cannot tell them apart.
  for (const auto& r : ranked) {
    if (r.candidate == best.candidate || r.at.step_s_low <= 0) continue;
    const double b_lo = best.at.step_s_low, b_hi = best.at.step_s_high;
    if (r.at.step_s_low <= b_hi && b_lo <= r.at.step_s_high &&
        r.at.samples_per_s >= 0.9 * best.at.samples_per_s) {
      std::snprintf(line, sizeof line,
                    "either: %s on %d ranks is inside the forecast's range (step %.2f-%.2f ms "
                    "against the best's %.2f-%.2f ms); pick by accuracy risk (its: %s)\n",
                    r.candidate->name.c_str(), r.at.ranks, 1e3 * r.at.step_s_low,
                    1e3 * r.at.step_s_high, 1e3 * b_lo, 1e3 * b_hi, risk_name(r.risk.level));
      out += line;
      break;
    }
  }
  out += "  mpirun:  mpirun -np " + std::to_string(best.at.ranks) +
         " --hostfile hosts build/hpdl train " + config + sets + "\n";
  out += "           (hosts: one line per host, \"HOSTNAME slots=" +
         std::to_string(std::min(ranks_per_host, best.at.ranks)) + "\")\n";
  // Faster, at a higher accuracy risk: the fastest of all, where it beats the best by more
  // than 5 %.
  const Recommendation* fastest = &ranked.front();
  for (const auto& r : ranked)
    if (r.at.samples_per_s > fastest->at.samples_per_s) fastest = &r;
  if (fastest->at.samples_per_s > 1.05 * best.at.samples_per_s) {
    std::snprintf(line, sizeof line, "%.2fx the best's samples/s",
                  fastest->at.samples_per_s / best.at.samples_per_s);
    out += "faster, at a " + std::string(risk_name(fastest->risk.level)) +
           " accuracy risk: " + fastest->candidate->name + " on " +
           std::to_string(fastest->at.ranks) + " ranks (" + line + "; " + fastest->risk.why +
           "):" + joined_sets(*fastest->candidate) + "\n";
  }
  return out;
}

std::string recommendation_csv(const std::vector<Recommendation>& ranked) {
  std::string out =
      "candidate,ranks,hosts,step_ms,step_ms_low,step_ms_high,samples_per_s,epoch_s,"
      "exposed_comm_ms,sets,risk,risk_why\n";
  char line[512];
  for (const auto& r : ranked) {
    std::string sets;
    for (const auto& s : r.candidate->sets) sets += (sets.empty() ? "" : " ") + s;
    for (char& ch : sets)
      if (ch == '"') ch = '\'';
    std::snprintf(line, sizeof line, "%s,%d,%d,%.4f,%.4f,%.4f,%.2f,%.2f,%.4f,\"%s\",%s,\"%s\"\n",
                  r.candidate->name.c_str(), r.at.ranks, r.at.hosts, r.at.step_s * 1e3,
                  r.at.step_s_low * 1e3, r.at.step_s_high * 1e3, r.at.samples_per_s, r.epoch_s,
                  r.at.exposed_s * 1e3, sets.c_str(), risk_name(r.risk.level), r.risk.why.c_str());
    out += line;
  }
  return out;
}

}  // namespace hpdl
