// `hpdl train`'s set-up (train_setup.hpp).
#include "hpdl/run/train_setup.hpp"

#include <omp.h>

#include <cstdio>
#include <filesystem>
#include <memory>

#include "hpdl/builder/builder.hpp"
#include "hpdl/comm/comm.hpp"
#include "hpdl/comm/failure_relay.hpp"
#include "hpdl/comm/progress_board.hpp"
#include "hpdl/comm/watchdog.hpp"
#include "hpdl/core/error.hpp"
#include "hpdl/core/memory_check.hpp"
#include "hpdl/core/stop_signal.hpp"
#include "hpdl/data/dataset.hpp"
#include "hpdl/data/h5_util.hpp"
#include "hpdl/data/sampler.hpp"
#include "hpdl/plan/execution_plan.hpp"
#include "hpdl/profile/profiler.hpp"
#include "hpdl/profile/trace_writer.hpp"
#include "hpdl/run/commands.hpp"
#include "hpdl/run/data_splits.hpp"
#include "hpdl/run/device_choice.hpp"
#include "hpdl/run/job_layout.hpp"
#include "hpdl/run/manifest.hpp"
#include "hpdl/run/mpi_command.hpp"
#include "hpdl/run/progress.hpp"
#include "hpdl/run/rank_ceilings.hpp"
#include "hpdl/run/report.hpp"
#include "hpdl/run/run_dir.hpp"
#include "hpdl/run/same_job.hpp"
#include "hpdl/run/wait_policy.hpp"
#include "hpdl/train/async_trainer.hpp"
#include "hpdl/train/checkpoint.hpp"
#include "hpdl/train/checkpointer.hpp"
#include "hpdl/train/trainer.hpp"

namespace hpdl {
namespace {

// Rank 0: the checkpoint to continue from, or null (--resume without any checkpoint starts
// afresh). --resume takes the run directory's checkpoint.h5, or its checkpoint.prev.h5 when
// checkpoint.h5 is missing or unreadable (setting *fallback_reason, which the log states;
// an unreadable one is moved aside to checkpoint.h5.damaged);
// --resume-from FILE takes FILE only, naming FILE's previous checkpoint if that one is intact.
std::unique_ptr<Checkpoint> find_checkpoint(const TrainArgs& args, const std::string& in_run_dir,
                                            std::string* path, std::string* fallback_reason) {
  namespace fs = std::filesystem;
  if (!args.resume_from.empty()) {
    *path = args.resume_from;
    try {
      return std::make_unique<Checkpoint>(read_checkpoint(*path));
    } catch (const Error& e) {
      const std::string prev = previous_checkpoint(*path);
      if (prev == *path || !fs::exists(prev)) throw;
      try {
        read_checkpoint(prev);
      } catch (const Error&) {
        throw e;
      }
      throw Error(std::string(e.what()) + "; the previous checkpoint " + prev +
                  " is intact: continue from it with --resume-from " + prev);
    }
  }
  *path = in_run_dir;
  const std::string prev = previous_checkpoint(in_run_dir);
  if (fs::exists(in_run_dir)) {
    try {
      return std::make_unique<Checkpoint>(read_checkpoint(in_run_dir));
    } catch (const Error& e) {
      if (!fs::exists(prev)) throw;
      *fallback_reason = e.what();
    }
  } else if (fs::exists(prev)) {
    *fallback_reason = "checkpoint " + in_run_dir + " is missing";
  } else {
    return nullptr;
  }
  *path = prev;
  std::unique_ptr<Checkpoint> c;
  try {
    c = std::make_unique<Checkpoint>(read_checkpoint(prev));
  } catch (const Error& e) {
    throw Error(*fallback_reason + "; the previous one cannot be used either: " + e.what());
  }
  // The unreadable checkpoint is moved aside (kept for inspection): the next checkpoint
  // write must not keep it as the previous one in place of the intact one resumed from.
  if (fs::exists(in_run_dir) || fs::is_symlink(in_run_dir)) {
    std::string aside = in_run_dir + ".damaged";
    for (int k = 2; fs::exists(aside) || fs::is_symlink(aside); ++k)
      aside = in_run_dir + ".damaged" + std::to_string(k);
    std::error_code ec;
    fs::rename(in_run_dir, aside, ec);
    if (ec)
      throw Error(*fallback_reason + "; it cannot be moved aside to " + aside + " (" +
                  ec.message() + "), so resuming from " + prev + " could lose it");
    *fallback_reason += " (moved aside to " + aside + ")";
  }
  return c;
}

}  // namespace

TrainSetup set_up(const TrainArgs& args, Comm& comm, Watchdog& watchdog) {
  TrainSetup s;
  Config& cfg = s.cfg;
  on_all_ranks(comm, watchdog, [&] {
    cfg = load_config(args.config, args.sets);
    if (args.overwrite) cfg.run.overwrite = true;
  });
  watchdog.set_limit(cfg.run.watchdog_s);
  s.wait = choose_wait(cfg.run.wait, comm, omp_get_max_threads());
  comm.idle_by(s.wait.policy);
  {
    // Before any collective whose sizes depend on the job.
    WatchdogScope guard(watchdog, "same-job agreement", 0);
    require_same_job(comm, "config",
                     to_toml(cfg.resolved) +
                         "\n[command]\noverwrite = " + std::to_string(args.overwrite) +
                         "\nresume = " + std::to_string(args.resume) + "\nresume_from = \"" +
                         args.resume_from + "\"\n");
  }
  on_all_ranks(comm, watchdog, [&] {
    if (comm.rank() == 0) {
      const bool resume = args.resume || !args.resume_from.empty();
      s.out = std::make_unique<RunDir>(cfg.run.output_dir + "/" + resolve_run_name(cfg),
                                       cfg.run.overwrite, resume);
      s.checkpoint_path = s.out->file("checkpoint.h5");
    }
  });
  on_all_ranks(comm, watchdog, [&] {
    h5_quiet();
    s.data = open_splits(cfg);
    s.local_batch = check_job_layout(cfg, *s.data.train, comm.rank(), comm.size());
  });
  // Every rank checks its block of each split for bad labels and NaN/Inf.
  on_all_ranks(comm, watchdog, [&] {
    for (H5Split* split : {s.data.train.get(), s.data.validation.get(), s.data.test.get()}) {
      if (!split) continue;
      int64_t b = 0, e = 0;
      block_range(split->size(), comm.rank(), comm.size(), &b, &e);
      const std::string bad = split->validate(b, e, cfg.model.classes);
      if (!bad.empty()) throw Error(bad);
    }
  });
  const int local_rank = node_device_rank(cfg.run, comm, watchdog);
  if (!cfg.run.on_gpu()) {
    // Every rank of a host holds its own model in the host's memory: the memory check
    // (build_model, before any allocation) counts them together.
    WatchdogScope guard(watchdog, "ranks on this host (memory check)", 0);
    set_ranks_sharing_memory(comm.node_size());
  }
  on_all_ranks(comm, watchdog, [&] {
    s.model = build_model(cfg.model, s.local_batch, cfg.run, local_rank);
    s.model->init_params(cfg.train.seed);
  });
  {
    // The same config can still meet different data (a path that differs between hosts).
    WatchdogScope guard(watchdog, "same-job agreement", 0);
    const DataSplits& d = s.data;
    std::string layout =
        "[layout]\ntrain_rows = " + std::to_string(d.train->size()) +
        "\nvalidation_rows = " + std::to_string(d.validation ? d.validation->size() : 0) +
        "\ntest_rows = " + std::to_string(d.test ? d.test->size() : 0) +
        "\nparameters = " + std::to_string(s.model->num_params()) + "\n";
    for (const auto& seg : s.model->segments())
      layout += seg.name + " = " + std::to_string(seg.size) + "\n";
    require_same_job(comm, "data and model layout", layout);
  }
  // Resuming: rank 0 reads and checks the checkpoint, every rank gets it.
  int64_t have = 0;
  on_all_ranks(comm, watchdog, [&] {
    if (comm.rank() == 0 && (args.resume || !args.resume_from.empty())) {
      s.from = find_checkpoint(args, s.checkpoint_path, &s.resumed_from, &s.fallback_reason);
      if (s.from)
        check_compatible(*s.from, checkpoint_identity(cfg, *s.model, comm.size()), s.resumed_from);
    }
    have = s.from ? 1 : 0;
    // Set-up passed on every rank: only now are the run directory's files written.
    if (s.out) s.out->open();
  });
  {
    WatchdogScope guard(watchdog, "checkpoint broadcast", 0);
    comm.broadcast(&have, 1, 0);
    if (have) {
      if (!s.from) s.from = std::make_unique<Checkpoint>();
      broadcast_checkpoint(comm, *s.from);
    }
  }
  return s;
}
}  // namespace hpdl
