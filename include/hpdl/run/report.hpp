// What rank 0 writes into the run directory around training: the header lines, one log
// line and one metrics.csv row per epoch, and at the end the model, the confusion matrix,
// peak memory per rank and the manifest marked "complete" (written last).
#pragma once
#include <nlohmann/json.hpp>
#include <vector>

#include "hpdl/config/config.hpp"
#include "hpdl/data/dataset.hpp"
#include "hpdl/nn/model.hpp"
#include "hpdl/profile/trace_writer.hpp"
#include "hpdl/run/rank_ceilings.hpp"
#include "hpdl/run/run_dir.hpp"
#include "hpdl/train/checkpointer.hpp"
#include "hpdl/train/model_selection.hpp"
#include "hpdl/train/ps_checkpoint.hpp"
#include "hpdl/train/ps_server.hpp"
#include "hpdl/train/trainer.hpp"
#include "hpdl/train/worker_report.hpp"

namespace hpdl {

class RunReport {
 public:
  // Writes config.toml and the manifest with "status": "running", and logs the header.
  RunReport(RunDir& dir, nlohmann::json manifest, const Config& cfg, const Model& model,
            const Splits& splits, int ranks, int64_t local_batch);

  // Wall-clock time (Unix seconds) at which the first training step starts, for the
  // manifest: queue and start-up latency = this minus the submission time.
  void training_starts();
  void epoch(const EpochStats& st);
  // Parameter-server modes: server 0's line when the workers have trained another epoch.
  void server_epoch(const ServerProgress& p);
  // Continuing an interrupted run: logs where it resumes and rewrites metrics.csv with the
  // checkpoint's epochs (rows written after that checkpoint are recomputed).
  // `fallback_reason`: why the newest checkpoint was passed over for `path` ("" if it was not).
  // redistributed: a parameter server's checkpoint on another worker count, how the rule
  // placed the workers (logged, and kept in the manifest's resumed_from).
  void resumed(const Checkpoint& from, const std::string& path, const std::string& fallback_reason,
               const WorkerRedistribution* redistributed = nullptr);
  // One log line per checkpoint written.
  void checkpoint(int64_t global_step, double write_s, uint64_t bytes);
  // The checkpoint settings and counts, into the manifest.
  void checkpoints(const Checkpointer& ckpt);
  // A stop signal ended the run after its checkpoint: manifest "status": "interrupted".
  void stopped(int signal, int64_t global_step, const Checkpointer& ckpt);
  // A line "warning: TEXT" in the log; the manifest counts them ("warnings").
  void warning(const std::string& text);
  // The run ended with an error: the log gets it, the manifest says "status": "failed".
  void failed(const std::string& error);
  // Parameter-server modes: one report per worker (AsyncTrainer::worker_report) and every
  // worker's pushes when the first one finished (the fairness figure; empty: not seen);
  // writes ps_workers.csv and staleness.csv, logs a summary and adds it to the manifest;
  // the workers the servers dropped get a row with their left_s and pushes only.
  void parameter_server(const Config& cfg, const std::vector<WorkerReport>& workers,
                        const std::vector<int64_t>& pushes_at_first_done,
                        const std::vector<PsServer::Left>& left = {});
  // Logs what the trace writer wrote and adds it to the manifest.
  void profile(const ProfileConfig& cfg, const TraceSummary& t);
  // Each layer's efficiency against the ranks' median ceilings: efficiency.csv beside
  // layers.csv, one log line for the whole iteration, the ceilings in the manifest.
  void efficiency(const RankCeilings& ceilings);
  const nlohmann::json& manifest() const { return manifest_; }
  // model.h5 from the model's final parameters, before anything else after training (the
  // profile, the ceilings) can fail; finish() writes it if this was not called.
  void save_model(Model& model);
  // final_model: the model the run ends with (train.keep) and its test result; confusion:
  // of that evaluation; steps: optimizer updates; peak_rss_mib: per rank.
  void finish(Model& model, const FinalModel& final_model, const ConfusionMatrix& confusion,
              int64_t steps, const H5Split* test, const std::vector<EpochStats>& history,
              const std::vector<double>& peak_rss_mib);

 private:
  void metrics_row(const EpochStats& st);

  RunDir& dir_;
  nlohmann::json manifest_;
  std::string config_toml_;  // the resolved config, saved with the model
  TrainConfig train_;
  bool model_saved_ = false;
};

// Collective: every rank's peak resident memory in MiB, in rank order.
std::vector<double> peak_rss_mib(const Comm& comm);

// save_model: /params (flat), /tensors/<layer>.<w|b> and the resolved config (attribute
// "config", TOML) that built the model, written atomically; `hpdl eval` reads it back.
void save_model(const std::string& path, Model& model, const std::string& config_toml);

// A profiled run's report.html (`hpdl report`), written after the run: the line naming it
// goes to stdout and is appended to log.txt, the run's last. A page that cannot be written
// is a warning there: the run itself is complete.
void write_page_of_run(const std::string& run_dir);

}  // namespace hpdl
