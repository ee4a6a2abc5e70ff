// Run-directory reporting (rank 0). Formatting lives here so the train command reads as a
// sequence of stages.
#include "hpdl/run/report.hpp"

#include <omp.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <sstream>

#include "hpdl/core/stop_signal.hpp"
#include "hpdl/data/h5_util.hpp"
#include "hpdl/dist/param_shards.hpp"
#include "hpdl/run/commands.hpp"
#include "hpdl/run/efficiency_table.hpp"
#include "hpdl/run/manifest.hpp"
#include "hpdl/version.hpp"

namespace hpdl {
namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

// The synchronous variant in words: local SGD, its outer step, compression.
std::string sync_variant(const DistributedConfig& d) {
  std::string out;
  if (d.sync_every > 1) {
    out = " | local SGD: average every " + std::to_string(d.sync_every) + " steps" +
          (d.local_warmup_steps ? " after " + std::to_string(d.local_warmup_steps) + " sync steps"
                                : "") +
          (d.outer == OuterStep::kNesterov ? ", Nesterov outer step lr " + fmt("%g", d.outer_lr) +
                                                 " momentum " + fmt("%g", d.outer_momentum)
                                           : "");
  }
  if (d.compression != Compression::kNone)
    out += " | " + (d.sync_every > 1 ? std::string("changes") : std::string("gradients")) + " in " +
           word(d.compression) + " with error feedback";
  return out;
}
}  // namespace

void save_model(const std::string& path, Model& model, const std::string& config_toml) {
  const std::vector<float> params = model.params_to_host();
  h5_write_atomically(path, [&](hid_t f) {
    h5_write_attr(f, "config", config_toml);
    h5_write(f, "params", params.data(), {hsize_t(model.num_params())});
    H5Id g = h5_create_group(f, "tensors");
    for (const auto& s : model.segments())
      h5_write(g.get(), s.name, params.data() + s.offset, {hsize_t(s.size)});
  });
}

std::vector<double> peak_rss_mib(const Comm& comm) {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::vector<double> out;
  for (const auto& kib : comm.allgather(std::to_string(usage.ru_maxrss)))
    out.push_back(std::stod(kib) / 1024);
  return out;
}

RunReport::RunReport(RunDir& dir, nlohmann::json manifest, const Config& cfg, const Model& model,
                     const Splits& splits, int ranks, int64_t local_batch)
    : dir_(dir),
      manifest_(std::move(manifest)),
      config_toml_(to_toml(cfg.resolved)),
      train_(cfg.train) {
  const H5Split& train = *splits.train;
  const H5Split* test = splits.test;
  const H5Split* validation = splits.validation;
  manifest_["run_dir"] = dir_.path();
  manifest_["parameters"] = model.num_params();
  manifest_["train_samples"] = train.size();
  manifest_["model_bytes_per_rank"] = model.estimated_bytes();
  dir_.write_atomically("config.toml", config_toml_);
  dir_.write_atomically("manifest.json", manifest_.dump(2) + "\n");
  dir_.log(std::string("hpdl ") + kVersion + " (" + kGitHash + ") | " + std::to_string(ranks) +
           " ranks x " + std::to_string(omp_get_max_threads()) + " threads | backend " +
           model.kernels_name() +
           (cfg.run.precision == Precision::kF32
                ? ""
                : " (" + std::string(word(cfg.run.precision)) + ")") +
           " | " + std::to_string(model.num_params()) + " parameters");
  dir_.log("train: " + std::to_string(train.size()) + " samples " + Shape{cfg.model.input}.str() +
           " from " + train.where() +
           (validation
                ? " | validation: " + std::to_string(validation->size()) + " from " +
                      validation->where() + (cfg.data.validation_fraction > 0 ? " (held out)" : "")
                : "") +
           (test ? " | test: " + std::to_string(test->size()) + " from " + test->where() : ""));
  const auto& d = cfg.distributed;
  const std::string batch =
      d.async() ? " per worker | " + std::string(word(d.mode)) + ": " + std::to_string(d.servers) +
                      " server(s), " + std::to_string(ranks - d.servers) + " workers"
                : " (" + std::to_string(local_batch) + " on rank 0)" + sync_variant(d);
  dir_.log(
      "batch " + std::to_string(cfg.train.batch) + batch + " | optimizer " +
      word(cfg.optimizer.name) + " lr " + fmt("%g", cfg.optimizer.lr) +
      (cfg.optimizer.schedule != Schedule::kConstant
           ? " " + std::string(word(cfg.optimizer.schedule))
           : "") +
      (cfg.optimizer.warmup_steps ? " warm-up " + std::to_string(cfg.optimizer.warmup_steps) : "") +
      " | " + std::to_string(cfg.train.epochs) + " epochs | model buffers ~" +
      fmt("%.1f", model.estimated_bytes() / 1048576.0) + " MiB per rank");
  dir_.log(validation ? "epoch  train_loss   val_loss   val_acc   val_f1         lr  samples/s  "
                        "epoch_s  elapsed_s"
                      : "epoch  train_loss  test_loss  test_acc  test_f1         lr  samples/s  "
                        "epoch_s  elapsed_s");
}

void RunReport::epoch(const EpochStats& st) {
  char line[256];
  const bool val = st.validated;
  std::snprintf(line, sizeof line, "%5lld  %10.4f  %9.4f  %8.4f  %7.4f  %9.3g  %9.1f  %7.2f  %9.2f",
                (long long)st.epoch, st.train_loss, val ? st.val_loss : st.test_loss,
                val ? st.val_accuracy : st.test_accuracy, val ? st.val_f1 : st.test_f1, st.lr,
                st.samples_per_s, st.epoch_s, st.elapsed_s);
  dir_.log(line);
  metrics_row(st);
}

void RunReport::server_epoch(const ServerProgress& p) {
  char line[256];
  std::snprintf(line, sizeof line,
                "epoch %lld trained in %.2f s: %.1f samples/s, %lld pushes, staleness mean %.2f "
                "(%.2f s elapsed; evaluated after training)",
                (long long)p.epoch, p.epoch_s, p.samples_per_s, (long long)p.pushes,
                p.staleness_mean, p.elapsed_s);
  dir_.log(line);
}

void RunReport::metrics_row(const EpochStats& st) {
  dir_.metrics_row(epoch_csv_header(), epoch_csv_row(st));
}

void RunReport::training_starts() {
  manifest_["train_start_unix"] =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

void RunReport::resumed(const Checkpoint& from, const std::string& path,
                        const std::string& fallback_reason,
                        const WorkerRedistribution* redistributed) {
  if (!fallback_reason.empty())
    dir_.log("warning: " + fallback_reason + ": resuming from the previous checkpoint " + path);
  dir_.log("resumed from " + path + ": epoch " + std::to_string(from.epoch) + ", " +
           std::to_string(from.epoch_step) + " of its steps done, global step " +
           std::to_string(from.global_step) + ", " + fmt("%.1f", from.elapsed_s) +
           " s trained before");
  const int64_t ranks = manifest_.value("ranks", int64_t{0});
  if (redistributed)
    dir_.log(describe(*redistributed));
  else if (from.ranks != ranks && virtual_shards(from) > 0)
    dir_.log("resuming " + std::to_string(from.ranks) + " ranks' checkpoint on " +
             std::to_string(ranks) + ": bit for bit (distributed.virtual_shards = " +
             std::to_string(virtual_shards(from)) + ": the same shards summed in the same order)");
  else if (from.ranks != ranks)
    dir_.log("resuming " + std::to_string(from.ranks) + " ranks' checkpoint on " +
             std::to_string(ranks) + ": the same global batch (" + std::to_string(from.batch) +
             ") and sample order; the sums are grouped for " + std::to_string(ranks) +
             " ranks, so training continues within rounding of an uninterrupted run, not bit "
             "for bit");
  for (const EpochStats& st : from.history) metrics_row(st);
  manifest_["resumed_from"] = {{"file", path},
                               {"epoch", from.epoch},
                               {"global_step", from.global_step},
                               {"ranks", from.ranks}};
  if (!fallback_reason.empty()) manifest_["resumed_from"]["fallback_because"] = fallback_reason;
  if (redistributed) {
    const WorkerRedistribution& r = *redistributed;
    manifest_["resumed_from"]["workers_redistributed"] = {{"from_workers", r.from_workers},
                                                          {"to_workers", r.to_workers},
                                                          {"epoch", r.epoch},
                                                          {"fraction", r.fraction},
                                                          {"dropped_steps", r.dropped_steps}};
  }
  dir_.write_atomically("manifest.json", manifest_.dump(2) + "\n");
}

void RunReport::checkpoint(int64_t global_step, double write_s, uint64_t bytes) {
  dir_.log("checkpoint: step " + std::to_string(global_step) + ", " +
           fmt("%.2f", bytes / 1048576.0) + " MiB written in " + fmt("%.3f", write_s) + " s");
}

void RunReport::checkpoints(const Checkpointer& ckpt) {
  manifest_["checkpoint"] = {{"file", ckpt.path()},
                             {"written", ckpt.written()},
                             {"last_write_s", ckpt.last_write_s()},
                             {"last_bytes", ckpt.last_bytes()}};
}

void RunReport::stopped(int signal, int64_t global_step, const Checkpointer& ckpt) {
  checkpoints(ckpt);
  const std::string by = signal_name(signal);
  dir_.log("stopped by " + by + " after step " + std::to_string(global_step) + ": checkpoint " +
           ckpt.path() + " written; continue with the same command and --resume");
  manifest_["status"] = "interrupted";
  manifest_["stopped_by"] = signal_name(signal);
  manifest_["stopped_at_step"] = global_step;
  dir_.write_atomically("manifest.json", manifest_.dump(2) + "\n");
}

void RunReport::warning(const std::string& text) {
  dir_.log("warning: " + text);
  manifest_["warnings"] = manifest_.value("warnings", 0) + 1;
}

void RunReport::failed(const std::string& error) {
  dir_.free_reserve();  // a full disk still takes the error line and the manifest
  dir_.log("error: " + error);
  manifest_["status"] = "failed";
  manifest_["error"] = error;
  dir_.write_atomically("manifest.json", manifest_.dump(2) + "\n");
}

void RunReport::parameter_server(const Config& cfg, const std::vector<WorkerReport>& workers,
                                 const std::vector<int64_t>& pushes_at_first_done,
                                 const std::vector<PsServer::Left>& left) {
  std::ostringstream csv, hist;
  csv << "rank,steps,pulls,pushes,pull_s,push_s,server_wait_s,max_push_s,work_s,rma_fraction,"
         "pull_ms,push_ms,staleness_mean,staleness_p95,pushes_at_first_done,left_s\n";
  const int64_t servers = cfg.distributed.servers;
  double max_push = 0;
  hist << "rank,staleness,pushes\n";
  std::vector<int64_t> all;  // the histogram over all workers
  for (const WorkerReport& r : workers) {
    const WorkerTotals& w = r.totals;
    const double pulls = std::max<double>(double(w.pulls), 1);
    const double n_push = std::max<double>(double(w.pushes), 1);
    csv << w.rank << "," << w.steps << "," << w.pulls << "," << w.pushes << "," << w.pull_s << ","
        << w.push_s << "," << w.server_wait_s << "," << w.max_push_s << "," << w.work_s << ","
        << w.rma_fraction << "," << 1e3 * w.pull_s / pulls << "," << 1e3 * w.push_s / n_push << ","
        << w.staleness_mean << "," << w.staleness_p95 << ",";
    const size_t k = static_cast<size_t>(w.rank - servers);  // the worker's index
    csv << (k < pushes_at_first_done.size() && pushes_at_first_done[k] >= 0
                ? std::to_string(pushes_at_first_done[k])
                : "")
        << ",\n";
    max_push = std::max(max_push, w.max_push_s);
    const std::vector<int64_t>& h = r.staleness_histogram;
    if (all.size() < h.size()) all.resize(h.size(), 0);
    for (size_t t = 0; t < h.size(); ++t) {
      if (h[t]) hist << w.rank << "," << t << "," << h[t] << "\n";
      all[t] += h[t];
    }
  }
  nlohmann::json gone = nlohmann::json::array();
  for (const PsServer::Left& l : left) {
    const int64_t rank = servers + l.worker;
    csv << rank << ",,," << l.pushes << std::string(12, ',') << l.t << "\n";  // pushes, left_s
    gone.push_back(
        {{"rank", rank}, {"left_s", l.t}, {"pushes", l.pushes}, {"silent_s", l.silent_s}});
  }
  const StalenessSummary stale = summarize_staleness(all);
  const double mean = stale.mean;
  const int64_t p95 = stale.p95;
  double rma = 0;
  for (const WorkerReport& r : workers) rma += r.totals.rma_fraction;
  rma /= std::max<size_t>(workers.size(), 1);
  dir_.write_atomically("ps_workers.csv", csv.str());
  dir_.write_atomically("staleness.csv", hist.str());
  const auto& d = cfg.distributed;
  dir_.log(word(d.mode) + std::string(": ") + std::to_string(d.servers) + " server(s), " +
           std::to_string(workers.size()) + " workers, n_fetch " + std::to_string(d.n_fetch) +
           ", n_push " + std::to_string(d.n_push) + " | staleness mean " + fmt("%.2f", mean) +
           ", p95 " + std::to_string(p95) + " | push+pull " + fmt("%.1f", 100 * rma) +
           "% of worker time (ps_workers.csv, staleness.csv)");
  // Fairness: how evenly the servers served the workers while all were still training.
  nlohmann::json fairness = {{"max_push_s", max_push}};
  std::vector<int64_t> at_first_done;  // of the workers that stayed
  for (int64_t p : pushes_at_first_done)
    if (p >= 0) at_first_done.push_back(p);
  if (!at_first_done.empty()) {
    const auto [lo, hi] = std::minmax_element(at_first_done.begin(), at_first_done.end());
    fairness["pushes_at_first_done_min"] = *lo;
    fairness["pushes_at_first_done_max"] = *hi;
    dir_.log("fairness: when the first worker finished, the others had pushed " +
             std::to_string(*lo) + " .. " + std::to_string(*hi) + " times; the longest push took " +
             fmt("%.3f", max_push) + " s");
  }
  manifest_["parameter_server"] = {
      {"mode", d.mode},       {"servers", d.servers},     {"workers", workers.size()},
      {"n_fetch", d.n_fetch}, {"n_push", d.n_push},       {"staleness_mean", mean},
      {"staleness_p95", p95}, {"rma_fraction_mean", rma}, {"per_worker", workers},
      {"fairness", fairness}, {"workers_left", gone}};
}

void RunReport::profile(const ProfileConfig& cfg, const TraceSummary& t) {
  dir_.log("profile: " + std::to_string(t.steps) + " rank-steps, " + std::to_string(t.events) +
           " events (" + std::to_string(t.dropped) + " dropped), attributed " +
           fmt("%.2f", 100 * t.attributed_mean) + "% of step time (worst step " +
           fmt("%.2f", 100 * t.attributed_min) + "%), traces " + fmt("%.1f", t.bytes / 1048576.0) +
           " MiB written in " + fmt("%.2f", t.write_s) +
           " s (trace/merged.json, trace/rank*.json, layers.csv, steps.csv)");
  if (t.unrecorded_step_us > 0)
    dir_.log("profile overhead: median step " + fmt("%.1f", t.recorded_step_us) +
             " us recorded vs " + fmt("%.1f", t.unrecorded_step_us) + " us unrecorded (" +
             fmt("%+.2f", 100 * t.overhead) + "%)");
  manifest_["profile"] = {{"skip", cfg.skip},
                          {"warmup", cfg.warmup},
                          {"active", cfg.active},
                          {"repeat", cfg.repeat},
                          {"rank_steps", t.steps},
                          {"events", t.events},
                          {"dropped", t.dropped},
                          {"bytes", t.bytes},
                          {"write_s", t.write_s},
                          {"attributed_mean", t.attributed_mean},
                          {"attributed_min", t.attributed_min},
                          {"recorded_step_us", t.recorded_step_us},
                          {"unrecorded_step_us", t.unrecorded_step_us},
                          {"overhead", t.overhead}};
}

void RunReport::efficiency(const RankCeilings& ceilings) {
  const Ceilings c = ceilings.median();
  const std::vector<PassTiming> passes = passes_of(CsvTable(dir_.file("layers.csv")));
  write_efficiency_csv(passes, c, dir_.file("efficiency.csv"));
  double flops = 0, seconds = 0;
  for (const PassTiming& t : passes) flops += t.work.flops, seconds += t.seconds;
  if (seconds > 0 && c.gemm_flops_per_s > 0)
    dir_.log("efficiency: the layers ran " + fmt("%.3f", flops / 1e9) + " GFLOP in " +
             fmt("%.2f", 1e3 * seconds) + " ms a step = " + fmt("%.1f", flops / seconds / 1e9) +
             " GFLOP/s, " + fmt("%.1f", 100 * flops / seconds / c.gemm_flops_per_s) +
             "% of the measured GEMM peak (" + fmt("%.1f", c.gemm_flops_per_s / 1e9) +
             " GFLOP/s, memory " + fmt("%.1f", c.memory_Bps / 1e9) +
             " GB/s; medians over the ranks); per layer: efficiency.csv");
  manifest_["ceilings"] = {{"gemm_flops_per_s", ceilings.gemm_flops_per_s},
                           {"memory_Bps", ceilings.memory_Bps}};
}

void RunReport::save_model(Model& model) {
  if (model_saved_) return;
  hpdl::save_model(dir_.file("model.h5"), model, config_toml_);
  model_saved_ = true;
}

void RunReport::finish(Model& model, const FinalModel& final_model,
                       const ConfusionMatrix& confusion, int64_t steps, const H5Split* test,
                       const std::vector<EpochStats>& history,
                       const std::vector<double>& peak_rss_mib) {
  save_model(model);
  const bool tested = test && final_model.tested;
  if (tested) {
    const auto names = test->class_names();
    dir_.write_atomically("confusion.csv", confusion.csv(names));
    dir_.write_atomically("scores.csv", confusion.scores_csv(names));
    dir_.log("confusion matrix on " + test->where() + ":\n" + confusion.table(names));
    dir_.log("per-class scores on " + test->where() + " (scores.csv):\n" +
             confusion.scores_table(names));
  }
  std::string rss = "peak RSS per rank (MiB):";
  for (double m : peak_rss_mib) rss.append(" ").append(fmt("%.0f", m));
  dir_.log(rss);

  const EpochStats& last = history.back();
  const std::string result = tested
                                 ? "test accuracy " + fmt("%.4f", final_model.test_accuracy) +
                                       ", weighted F1 " + fmt("%.4f", final_model.test_f1)
                                 : "train loss " + fmt("%.4f", last.train_loss) + " (no test set)";
  const std::string chosen = train_.keep == Keep::kBest
                                 ? " | model of epoch " + std::to_string(final_model.epoch) +
                                       " (best " + word(train_.keep_metric) + ")"
                                 : "";
  const std::string early = final_model.stopped_early
                                ? " (stopped early: no better " +
                                      std::string(word(train_.keep_metric)) + " in " +
                                      std::to_string(train_.patience) + " epochs)"
                                : "";
  dir_.log("final: " + result + chosen + " after " + std::to_string(last.epoch) + " epochs (" +
           std::to_string(steps) + " steps) in " + fmt("%.1f", last.elapsed_s) + " s" + early);
  dir_.log("outputs: " + dir_.path() + "/ (config.toml manifest.json metrics.csv log.txt model.h5" +
           (tested ? " confusion.csv scores.csv)" : ")"));

  manifest_["peak_rss_mib"] = peak_rss_mib;
  manifest_["final"] = {{"test_loss", final_model.test_loss},
                        {"test_accuracy", final_model.test_accuracy},
                        {"test_f1", final_model.test_f1},
                        {"train_loss", last.train_loss},
                        {"epochs", last.epoch},
                        {"model_epoch", final_model.epoch},
                        {"keep", train_.keep},
                        {"stopped_early", final_model.stopped_early},
                        {"steps", steps},
                        {"elapsed_s", last.elapsed_s}};
  if (tested) {
    nlohmann::json per_class = nlohmann::json::array();
    for (const ClassScores& c : confusion.per_class())
      per_class.push_back(
          {{"precision", c.precision}, {"recall", c.recall}, {"f1", c.f1}, {"support", c.support}});
    manifest_["final"]["per_class"] = per_class;
  }
  manifest_["finished"] = utc_now();
  manifest_["status"] = "complete";  // the last write: only now is the run complete
  dir_.write_atomically("manifest.json", manifest_.dump(2) + "\n");
}

void write_page_of_run(const std::string& run_dir) {
  std::string line;
  try {
    line = "report: " + write_run_report(run_dir) + " (open it in a browser)";
  } catch (const std::exception& e) {
    line = std::string("warning: the report page was not written: ") + e.what();
  }
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
  if (std::FILE* log = std::fopen((run_dir + "/log.txt").c_str(), "a")) {
    std::fprintf(log, "%s\n", line.c_str());
    std::fclose(log);
  }
}

}  // namespace hpdl
