// `hpdl train`: set-up in stages that every rank passes or fails together (Comm::agree),
// then the trainer, then the outputs. A failure after set-up on one rank ends the job through
// the failure relay: one line, the run directory marked failed, exit 1 on every rank.
#include <omp.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <optional>

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
#include "hpdl/run/train_setup.hpp"
#include "hpdl/run/wait_policy.hpp"
#include "hpdl/train/async_trainer.hpp"
#include "hpdl/train/checkpoint.hpp"
#include "hpdl/train/checkpointer.hpp"
#include "hpdl/train/ps_checkpoint.hpp"
#include "hpdl/train/trainer.hpp"

namespace hpdl {
namespace {

// How long rank 0 may take to write the JSON and CSV of B bytes of gathered events: B at
// 0.1 MB/s, about a hundredth of the rate measured on a Zen 5 (23 MB of events, 160 MiB of
// JSON in 2.2 s), so a slow host is not ended for it and a stuck one still is.
double trace_writing_bound_s(int64_t bytes) { return static_cast<double>(bytes) / 1e5; }

// Training and its outputs; `report` is rank 0's (null elsewhere). Returns the exit code.
// page_dir: set on rank 0 of a profiled run that completed, whose report page is then due.
int run_training(TrainSetup& s, Comm& comm, Watchdog& watchdog, RunReport* report,
                 std::string& page_dir) {
  if (report && s.from) {
    std::optional<WorkerRedistribution> r;
    const int workers = comm.size() - static_cast<int>(s.cfg.distributed.servers);
    // A damaged worker list is refused by the trainer on every rank, not here on rank 0.
    if (s.cfg.distributed.async() && !positions_carry_over(*s.from, comm.size())) {
      try {
        r = redistribution(*s.from, workers, s.data.train->size(), s.cfg.train.batch);
      } catch (const std::exception&) {
      }
    }
    report->resumed(*s.from, s.resumed_from, s.fallback_reason, r ? &*r : nullptr);
  }
  // Stop signals are caught from the start (a batch system may send its warning early);
  // with on_signal off they get their default action back and end the job.
  if (!s.cfg.checkpoint.on_signal) release_stop_signals();
  Checkpointer checkpointer(s.cfg.checkpoint, comm, watchdog, s.checkpoint_path,
                            checkpoint_identity(s.cfg, *s.model, comm.size()));

  Progress progress(report && s.cfg.train.progress);
  TrainHooks hooks;
  if (report) {
    hooks.on_step = [&](int64_t e, int64_t st, int64_t n, double loss, double sps) {
      progress.update(e, st, n, loss, sps);
    };
    hooks.on_epoch = [&](const EpochStats& st) {
      progress.clear();
      report->epoch(st);
    };
    hooks.on_server_progress = [&](const ServerProgress& p) {
      progress.update_server(p.epoch, p.pushes, p.pushes_per_epoch, p.staleness_mean,
                             p.samples_per_s);
    };
    hooks.on_server_epoch = [&](const ServerProgress& p) {
      progress.clear();
      report->server_epoch(p);
    };
    hooks.on_warning = [&](const std::string& text) {
      progress.clear();
      report->warning(text);
    };
    checkpointer.on_written = [&](int64_t step, double write_s, uint64_t bytes) {
      progress.clear();
      report->checkpoint(step, write_s, bytes);
    };
  }
  // Profiling (off by default): a buffer sized for every step the schedule records.
  std::unique_ptr<Profiler> prof;
  if (s.cfg.profile.enabled) {
    const int64_t rows = s.data.train->size();
    const int64_t per_epoch = rows / std::min(s.cfg.train.batch, rows) + 1;
    int64_t bound = s.cfg.train.epochs * per_epoch;
    if (s.cfg.train.max_steps > 0) bound = std::min(bound, s.cfg.train.max_steps);
    prof = std::make_unique<Profiler>(s.cfg.profile, bound,
                                      4 * static_cast<int64_t>(s.model->num_layers()) + 32);
  }
  // Both trainers leave the final parameters in the model on every rank.
  auto finish = [&](const std::vector<EpochStats>& history, const FinalModel& final_model,
                    const ConfusionMatrix& confusion, int64_t steps) {
    // The model first: nothing the profiler does afterwards can lose it.
    if (report) report->save_model(*s.model);
    if (prof) {
      GatheredTraces traces;
      {
        WatchdogScope guard(watchdog, "trace gather", steps);
        traces = gather_traces(comm, *prof);
      }
      // Rank 0 writes them (work, not a wait: nothing of its own is armed); the others wait
      // for it with a bound that grows with what it writes, so no correct run with a long
      // trace is ended as a hang.
      if (report)
        report->profile(s.cfg.profile, write_traces(traces, s.out->path(), report->manifest(),
                                                    s.model->work_by_layer()));
      watchdog.set_limit(s.cfg.run.watchdog_s + trace_writing_bound_s(traces.bytes));
      {
        WatchdogScope guard(watchdog, "rank 0 writing the traces", steps);
        comm.barrier();
      }
      watchdog.set_limit(s.cfg.run.watchdog_s);
    }
    // Peak memory before the ceilings: their bandwidth test's arrays are not training's.
    std::vector<double> rss;
    {
      WatchdogScope guard(watchdog, "peak memory gather", steps);
      rss = peak_rss_mib(comm);
    }
    if (prof && s.cfg.profile.ceilings) {
      WatchdogScope guard(watchdog, "compute ceilings", steps);
      const RankCeilings ceilings = measure_rank_ceilings(comm, s.model->kernels());
      if (report) report->efficiency(ceilings);
    }
    if (report) report->checkpoints(checkpointer);
    if (report)
      report->finish(*s.model, final_model, confusion, steps, s.data.test.get(), history, rss);
  };
  if (report) report->training_starts();
  const Splits splits = s.data.view();
  std::unique_ptr<Trainer> trainer;
  AsyncTrainer* ps = nullptr;  // the parameter server's, for its per-worker report
  if (s.cfg.distributed.async()) {
    // The shards start from the model's parameters: the checkpoint's, when resuming.
    if (s.from) s.model->params_from_host(s.from->params);
    auto t = std::make_unique<AsyncTrainer>(s.cfg, comm, *s.model, splits, watchdog, prof.get());
    ps = t.get();
    trainer = std::move(t);
  } else {
    trainer = std::make_unique<SyncTrainer>(s.cfg, comm, *s.model, splits, watchdog, prof.get());
  }
  const std::vector<EpochStats> history = trainer->run(hooks, &checkpointer, s.from.get());
  if (trainer->stopped_by()) {
    if (report) report->stopped(trainer->stopped_by(), trainer->steps(), checkpointer);
    return kExitCheckpointed;
  }
  if (ps) {
    std::vector<WorkerReport> workers;
    {
      WatchdogScope guard(watchdog, "worker report gather", ps->steps());
      workers = gather_worker_reports(comm, ps->worker_report());
    }
    if (report)
      report->parameter_server(s.cfg, workers, ps->pushes_at_first_done(), ps->workers_left());
  }
  finish(history, trainer->final_model(), trainer->last_confusion(), trainer->steps());
  if (report && prof) page_dir = s.out->path();
  return 0;
}

int train_bounded(const TrainArgs& args, Comm& comm, Watchdog& watchdog, std::string& page_dir) {
  TrainSetup s = set_up(args, comm, watchdog);
  nlohmann::json manifest;
  {
    WatchdogScope guard(watchdog, "manifest host gather", 0);
    manifest = make_manifest(comm, s.cfg, args.command_line, s.model->device().name());
    manifest["plan"] = nlohmann::json::parse(plan_of(*s.model, s.cfg.run).serialise());
    manifest["wait"] = s.wait.why;
  }
  std::unique_ptr<RunReport> report;
  if (comm.rank() == 0) {
    report = std::make_unique<RunReport>(*s.out, std::move(manifest), s.cfg, *s.model,
                                         s.data.view(), comm.size(), s.local_batch);
  }
  // A wait that outlasts run.watchdog_s on rank 0, or an error on one rank alone, ends the
  // process: rank 0's manifest and log say so first.
  FailureRelay* relay = comm.failure_relay();
  if (report) {
    auto failed = [&report](const std::string& error) { report->failed(error); };
    watchdog.on_expire(failed);
    if (relay) relay->on_failure(failed);
  }
  struct Unhook {
    Watchdog& w;
    FailureRelay* relay;
    ~Unhook() {
      w.on_expire(nullptr);
      if (relay) relay->on_failure(nullptr);
    }
  } unhook{watchdog, relay};
  try {
    return run_training(s, comm, watchdog, report.get(), page_dir);
  } catch (const AgreedError& e) {
    if (report) report->failed(e.what());
    throw;
  } catch (const LeftJob&) {
    throw;  // the others go on without this rank: nothing to tell them
  } catch (const std::exception& e) {
    // This rank alone: rank 0 writes the error into the run directory and ends the job.
    if (relay) relay->fail(e.what(), s.cfg.run.watchdog_s);
    if (report) report->failed(e.what());
    throw;
  }
}

int train(const TrainArgs& args, Comm& comm, std::string& page_dir) {
  // Where every rank is: a wait that outlasts the watchdog names the ranks that did not
  // arrive. Freed only after a run every rank finished (freeing waits for all ranks).
  ProgressBoard board(comm.raw());
  // Bounds every wait on other ranks; the default limit holds until the config is read.
  Watchdog watchdog(RunConfig{}.watchdog_s, comm.rank());
  watchdog.attach(&board);
  comm.bound_waits_by(&watchdog);
  const int rc = train_bounded(args, comm, watchdog, page_dir);
  {
    // A rank that finished waits here, polling, for one that may still fail (rank 0 writing
    // model.h5): the job then ends the agreed way rather than in the board's MPI_Win_free.
    WatchdogScope guard(watchdog, "end of run", 0);
    comm.barrier();
  }
  comm.bound_waits_by(nullptr);
  watchdog.attach(nullptr);
  // Freeing the board waits for every rank of the job, a dropped one too.
  if (comm.lost_ranks()) return rc;
  WatchdogScope guard(watchdog, "progress board free", 0);
  board.close();
  return rc;
}

}  // namespace

void catch_stop_signals_early() { catch_stop_signals(); }
void release_early_stop_signals() { release_stop_signals(); }

int cmd_train(const TrainArgs& args, int* argc, char*** argv) {
  catch_stop_signals();
  // A profiled run's report page is written by rank 0 once MPI has ended: it reads every
  // rank's traces (seconds for a large run), and no other rank waits on it.
  std::string page_dir;
  const int rc = run_under_mpi(argc, argv, [&](Comm& comm) { return train(args, comm, page_dir); });
  if (rc == 0 && !page_dir.empty()) write_page_of_run(page_dir);
  return rc;
}

}  // namespace hpdl
