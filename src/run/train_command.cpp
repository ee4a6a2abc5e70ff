// `hpdl train`: set-up in stages that every rank passes or fails together (Comm::agree),
// then the trainer, then the outputs. A failure after set-up on one rank aborts the job.
#include <mpi.h>
#include <omp.h>
#include <sys/resource.h>

#include <cstdio>
#include <memory>
#include <sstream>

#include "hpdl/core/error.hpp"
#include "hpdl/data/dataset.hpp"
#include "hpdl/data/h5_util.hpp"
#include "hpdl/data/sampler.hpp"
#include "hpdl/dist/comm.hpp"
#include "hpdl/dist/watchdog.hpp"
#include "hpdl/nn/builder.hpp"
#include "hpdl/run/commands.hpp"
#include "hpdl/run/manifest.hpp"
#include "hpdl/run/progress.hpp"
#include "hpdl/run/run_dir.hpp"
#include "hpdl/train/trainer.hpp"
#include "hpdl/version.hpp"

namespace hpdl {
namespace {

// Runs f on every rank; if it throws on any rank, all ranks throw the first rank's message.
template <typename F>
void on_all_ranks(const Comm& comm, F&& f) {
  std::string err;
  try {
    f();
  } catch (const std::exception& e) {
    err = e.what();
  }
  comm.agree(err);
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

void save_model(const std::string& path, Model& model) {
  h5_write_atomically(path, [&](hid_t f) {
    h5_write(f, "params", model.params().data(), {hsize_t(model.num_params())});
    H5Id g = h5_create_group(f, "tensors");
    for (const auto& s : model.segments())
      h5_write(g.get(), s.name, model.params().data() + s.offset, {hsize_t(s.size)});
  });
}

int train(const TrainArgs& args, const Comm& comm) {
  const bool root = comm.rank() == 0;
  Config cfg;
  on_all_ranks(comm, [&] {
    cfg = load_config(args.config, args.sets);
    if (args.overwrite) cfg.run.overwrite = true;
  });

  std::unique_ptr<RunDir> out;
  on_all_ranks(comm, [&] {
    if (root)
      out = std::make_unique<RunDir>(cfg.run.output_dir + "/" + resolve_run_name(cfg),
                                     cfg.run.overwrite);
  });

  std::unique_ptr<H5Split> train_data, test_data;
  int64_t local_batch = 0;
  on_all_ranks(comm, [&] {
    h5_quiet();
    train_data = std::make_unique<H5Split>(cfg.data.train_file, cfg.data.train_group);
    if (!cfg.data.test_file.empty())
      test_data = std::make_unique<H5Split>(cfg.data.test_file, cfg.data.test_group);
    for (H5Split* s : {train_data.get(), test_data.get()}) {
      if (s && s->sample_shape() != cfg.model.input) {
        Shape want{cfg.model.input}, got{s->sample_shape()};
        throw Error(s->where() + "x has samples of shape " + got.str() +
                    " but model.input = " + want.str());
      }
    }
    HPDL_REQUIRE(train_data->size() >= comm.size(),
                 "more ranks (" + std::to_string(comm.size()) + ") than training samples (" +
                     std::to_string(train_data->size()) + ") in " + train_data->where());
    local_batch =
        BatchPlan(train_data->size(), cfg.train.batch, comm.rank(), comm.size()).local_batch();
  });
  // Every rank checks its block of each split for bad labels and NaN/Inf.
  on_all_ranks(comm, [&] {
    for (H5Split* s : {train_data.get(), test_data.get()}) {
      if (!s) continue;
      int64_t b = 0, e = 0;
      block_range(s->size(), comm.rank(), comm.size(), &b, &e);
      const std::string bad = s->validate(b, e, cfg.model.classes);
      if (!bad.empty()) throw Error(bad);
    }
  });

  std::unique_ptr<Model> model;
  on_all_ranks(comm, [&] {
    model = build_model(cfg.model, local_batch, cfg.run.backend);
    model->init_params(cfg.train.seed);
  });

  nlohmann::json manifest = make_manifest(comm, cfg, args.command_line);
  if (root) {
    manifest["run_dir"] = out->path();
    manifest["parameters"] = model->num_params();
    out->write_atomically("config.toml", to_toml(cfg.resolved));
    out->write_atomically("manifest.json", manifest.dump(2) + "\n");
    out->log(std::string("hpdl ") + kVersion + " (" + kGitHash + ") | " +
             std::to_string(comm.size()) + " ranks x " + std::to_string(omp_get_max_threads()) +
             " threads | backend " + model->kernels_name() + " | " +
             std::to_string(model->num_params()) + " parameters");
    out->log("train: " + std::to_string(train_data->size()) + " samples " +
             Shape{cfg.model.input}.str() + " from " + train_data->where() +
             (test_data
                  ? " | test: " + std::to_string(test_data->size()) + " from " + test_data->where()
                  : ""));
    out->log("batch " + std::to_string(cfg.train.batch) + " (" + std::to_string(local_batch) +
             " on rank 0) | optimizer " + cfg.optimizer.name + " lr " +
             fmt("%g", cfg.optimizer.lr) + " | " + std::to_string(cfg.train.epochs) + " epochs");
    out->log("epoch  train_loss  test_loss  test_acc  test_f1  samples/s  epoch_s  elapsed_s");
  }

  Watchdog watchdog(cfg.run.watchdog_s, comm.rank());
  SyncTrainer trainer(cfg, comm, *model, *train_data, test_data.get(), watchdog);
  Progress progress(root && cfg.train.progress);
  TrainHooks hooks;
  if (root) {
    hooks.on_step = [&](int64_t e, int64_t s, int64_t n, double loss, double sps) {
      progress.update(e, s, n, loss, sps);
    };
    hooks.on_epoch = [&](const EpochStats& st) {
      progress.clear();
      char line[256];
      std::snprintf(line, sizeof line, "%5lld  %10.4f  %9.4f  %8.4f  %7.4f  %9.1f  %7.2f  %9.2f",
                    (long long)st.epoch, st.train_loss, st.test_loss, st.test_accuracy, st.test_f1,
                    st.samples_per_s, st.epoch_s, st.elapsed_s);
      out->log(line);
      std::ostringstream row;
      row << st.epoch << "," << st.steps << "," << st.train_loss << "," << st.test_loss << ","
          << st.test_accuracy << "," << st.test_f1 << "," << st.samples_per_s << "," << st.epoch_s
          << "," << st.elapsed_s;
      out->metrics_row(
          "epoch,steps,train_loss,test_loss,test_accuracy,test_f1,samples_per_s,epoch_s,elapsed_s",
          row.str());
    };
  }
  const std::vector<EpochStats> history = trainer.run(hooks);
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  const auto rss_kib = comm.allgather(std::to_string(usage.ru_maxrss));

  if (root) {
    save_model(out->file("model.h5"), *model);
    const auto names = test_data ? test_data->class_names() : std::vector<std::string>{};
    if (test_data) {
      out->write_atomically("confusion.csv", trainer.last_confusion().csv(names));
      out->log("confusion matrix on " + test_data->where() + ":\n" +
               trainer.last_confusion().table(names));
    }
    std::string rss = "peak RSS per rank (MiB):";
    nlohmann::json rss_json = nlohmann::json::array();
    for (const auto& r : rss_kib)
      rss += " " + fmt("%.0f", std::stod(r) / 1024), rss_json.push_back(std::stod(r) / 1024);
    out->log(rss);
    manifest["peak_rss_mib"] = rss_json;
    const EpochStats& last = history.back();
    const std::string result =
        test_data ? "test accuracy " + fmt("%.4f", last.test_accuracy) + ", weighted F1 " +
                        fmt("%.4f", last.test_f1)
                  : "train loss " + fmt("%.4f", last.train_loss) + " (no test set)";
    out->log("final: " + result + " after " + std::to_string(last.epoch) + " epochs (" +
             std::to_string(trainer.global_step()) + " steps) in " + fmt("%.1f", last.elapsed_s) +
             " s");
    out->log("outputs: " + out->path() +
             "/ (config.toml manifest.json metrics.csv log.txt model.h5" +
             (test_data ? " confusion.csv)" : ")"));
    manifest["status"] = "complete";
    manifest["finished"] = utc_now();
    manifest["final"] = {{"test_accuracy", last.test_accuracy},
                         {"test_f1", last.test_f1},
                         {"epochs", last.epoch},
                         {"steps", trainer.global_step()},
                         {"elapsed_s", last.elapsed_s}};
    out->write_atomically("manifest.json", manifest.dump(2) + "\n");
  }
  return 0;
}

}  // namespace

int cmd_train(const TrainArgs& args, int* argc, char*** argv) {
  int provided = 0;
  if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
    std::fprintf(stderr, "hpdl: error: MPI_Init_thread failed\n");
    return 1;
  }
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  set_error_rank(rank);
  int rc = 0;
  try {
    Comm comm(MPI_COMM_WORLD);
    rc = train(args, comm);
  } catch (const AgreedError& e) {
    // Every rank holds the same message: rank 0 prints it, all end together.
    if (rank == 0) std::fprintf(stderr, "hpdl: error: %s\n", e.what());
    MPI_Finalize();
    return 1;
  } catch (const std::exception& e) {
    // Only this rank failed: the others may be waiting in a collective, so end the job.
    std::fprintf(stderr, "hpdl: error: rank %d: %s\n", rank, e.what());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 1);
    return 1;
  }
  MPI_Finalize();
  return rc;
}

}  // namespace hpdl
