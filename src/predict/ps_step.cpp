// The parameter-server step model of `hpdl predict` (see predictor.hpp).
#include <algorithm>
#include <cmath>

#include "hpdl/predict/predictor.hpp"

namespace hpdl {

Prediction predict_ps_step(const StepProfile& p, const NetworkModel& net, int ranks,
                           const PredictOptions& o) {
  Prediction r;
  r.ranks = ranks;
  r.hosts = (ranks + o.ranks_per_host - 1) / o.ranks_per_host;
  r.workers = std::max(ranks - p.servers, 0);
  if (r.workers == 0) {
    r.bottleneck =
        "no worker: " + std::to_string(ranks) + " ranks, " + std::to_string(p.servers) + " servers";
    return r;
  }
  r.compute_s = p.worker_compute_s;
  const int on_host = std::min(ranks, o.ranks_per_host);
  if (o.cores_per_host > 0 && on_host * p.threads > o.cores_per_host) {
    r.oversubscribed = true;
    r.compute_s *= double(on_host * p.threads) / o.cores_per_host;
  }
  const double S = p.servers, W = r.workers, shard = double(p.param_bytes) / S;
  // A worker's own pulls and pushes: one RMA epoch per shard, per step amortised.
  const double per_shard = rma_op_s(net.get_samples, net, shard) / p.n_fetch +
                           rma_op_s(net.acc_samples, net, shard) / p.n_push;
  r.comm_s = S * per_shard;
  const double alone = r.compute_s + r.comm_s;
  // What the W workers ask of one server per worker step: its progress engine (one RMA
  // operation at a time), its link (each direction), its core.
  const double serve_s = W * per_shard;
  const double link_bw = r.hosts > 1 ? net.inter_bandwidth_Bps : net.intra_bandwidth_Bps;
  const double link_s = W * shard * std::max(1.0 / p.n_fetch, 1.0 / p.n_push) / link_bw;
  const double apply_s = W * shard / p.n_push / net.reduce_Bps;
  r.step_s = std::max({alone, serve_s, link_s, apply_s});
  r.exposed_s = r.step_s - r.compute_s;
  r.samples_per_s = W * p.global_batch / r.step_s;
  r.staleness = (W - 1) * (p.n_fetch + 1) / (2.0 * p.n_push);
  char words[256];
  if (r.step_s == serve_s && serve_s > alone)
    std::snprintf(words, sizeof words,
                  "server: %d workers' pulls and pushes served one at a time by each of %d servers",
                  r.workers, p.servers);
  else if (r.step_s == link_s && link_s > alone)
    std::snprintf(words, sizeof words,
                  "server link: %d workers move %.1f MiB per step through each of %d servers",
                  r.workers, W * shard * std::max(1.0 / p.n_fetch, 1.0 / p.n_push) / 1048576.0,
                  p.servers);
  else if (r.step_s == apply_s && apply_s > alone)
    std::snprintf(words, sizeof words, "server updates: %d workers' accumulates on %d server cores",
                  r.workers, p.servers);
  else if (r.comm_s > 0.5 * r.compute_s)
    std::snprintf(words, sizeof words, "pulls and pushes (%.0f%% of a worker's step)",
                  100 * r.comm_s / r.step_s);
  else
    std::snprintf(words, sizeof words, "worker compute (%.0f%% of the step)",
                  100 * r.compute_s / r.step_s);
  r.bottleneck = words;
  return r;
}

}  // namespace hpdl
