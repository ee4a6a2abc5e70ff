// Run-directory reporting (rank 0). Formatting lives here so the train command reads as a
// sequence of stages.
#include "hpdl/run/report.hpp"

#include <omp.h>
#include <sys/resource.h>

#include <cstdio>
#include <sstream>

#include "hpdl/data/h5_util.hpp"
#include "hpdl/run/manifest.hpp"
#include "hpdl/version.hpp"

namespace hpdl {
namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

constexpr const char* kMetricsHeader =
    "epoch,steps,train_loss,test_loss,test_accuracy,test_f1,samples_per_s,epoch_s,elapsed_s";

}  // namespace

void save_model(const std::string& path, Model& model) {
  h5_write_atomically(path, [&](hid_t f) {
    h5_write(f, "params", model.params().data(), {hsize_t(model.num_params())});
    H5Id g = h5_create_group(f, "tensors");
    for (const auto& s : model.segments())
      h5_write(g.get(), s.name, model.params().data() + s.offset, {hsize_t(s.size)});
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
                     const H5Split& train, const H5Split* test, int ranks, int64_t local_batch)
    : dir_(dir), manifest_(std::move(manifest)) {
  manifest_["run_dir"] = dir_.path();
  manifest_["parameters"] = model.num_params();
  dir_.write_atomically("config.toml", to_toml(cfg.resolved));
  dir_.write_atomically("manifest.json", manifest_.dump(2) + "\n");
  dir_.log(std::string("hpdl ") + kVersion + " (" + kGitHash + ") | " + std::to_string(ranks) +
           " ranks x " + std::to_string(omp_get_max_threads()) + " threads | backend " +
           model.kernels_name() + " | " + std::to_string(model.num_params()) + " parameters");
  dir_.log("train: " + std::to_string(train.size()) + " samples " + Shape{cfg.model.input}.str() +
           " from " + train.where() +
           (test ? " | test: " + std::to_string(test->size()) + " from " + test->where() : ""));
  dir_.log("batch " + std::to_string(cfg.train.batch) + " (" + std::to_string(local_batch) +
           " on rank 0) | optimizer " + cfg.optimizer.name + " lr " + fmt("%g", cfg.optimizer.lr) +
           " | " + std::to_string(cfg.train.epochs) + " epochs");
  dir_.log("epoch  train_loss  test_loss  test_acc  test_f1  samples/s  epoch_s  elapsed_s");
}

void RunReport::epoch(const EpochStats& st) {
  char line[256];
  std::snprintf(line, sizeof line, "%5lld  %10.4f  %9.4f  %8.4f  %7.4f  %9.1f  %7.2f  %9.2f",
                (long long)st.epoch, st.train_loss, st.test_loss, st.test_accuracy, st.test_f1,
                st.samples_per_s, st.epoch_s, st.elapsed_s);
  dir_.log(line);
  std::ostringstream row;
  row << st.epoch << "," << st.steps << "," << st.train_loss << "," << st.test_loss << ","
      << st.test_accuracy << "," << st.test_f1 << "," << st.samples_per_s << "," << st.epoch_s
      << "," << st.elapsed_s;
  dir_.metrics_row(kMetricsHeader, row.str());
}

void RunReport::finish(Model& model, const SyncTrainer& trainer, const H5Split* test,
                       const std::vector<EpochStats>& history,
                       const std::vector<double>& peak_rss_mib) {
  save_model(dir_.file("model.h5"), model);
  if (test) {
    const auto names = test->class_names();
    dir_.write_atomically("confusion.csv", trainer.last_confusion().csv(names));
    dir_.log("confusion matrix on " + test->where() + ":\n" +
             trainer.last_confusion().table(names));
  }
  std::string rss = "peak RSS per rank (MiB):";
  for (double m : peak_rss_mib) rss += " " + fmt("%.0f", m);
  dir_.log(rss);

  const EpochStats& last = history.back();
  const std::string result = test ? "test accuracy " + fmt("%.4f", last.test_accuracy) +
                                        ", weighted F1 " + fmt("%.4f", last.test_f1)
                                  : "train loss " + fmt("%.4f", last.train_loss) + " (no test set)";
  dir_.log("final: " + result + " after " + std::to_string(last.epoch) + " epochs (" +
           std::to_string(trainer.global_step()) + " steps) in " + fmt("%.1f", last.elapsed_s) +
           " s");
  dir_.log("outputs: " + dir_.path() + "/ (config.toml manifest.json metrics.csv log.txt model.h5" +
           (test ? " confusion.csv)" : ")"));

  manifest_["peak_rss_mib"] = peak_rss_mib;
  manifest_["final"] = {{"test_accuracy", last.test_accuracy}, {"test_f1", last.test_f1},
                        {"train_loss", last.train_loss},       {"epochs", last.epoch},
                        {"steps", trainer.global_step()},      {"elapsed_s", last.elapsed_s}};
  manifest_["finished"] = utc_now();
  manifest_["status"] = "complete";  // the last write: only now is the run complete
  dir_.write_atomically("manifest.json", manifest_.dump(2) + "\n");
}

}  // namespace hpdl
