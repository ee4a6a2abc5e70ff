// `hpdl check CONFIG [--set ...]`: everything `hpdl train` would refuse before training,
// without MPI or a run directory: the config and overrides, the model, the data files
// with the same checks as training (prepare_split: sample shape, normalisation statistics;
// H5Split::validate over every row: labels and finite inputs). Sweep submission runs it on
// every grid line before queueing anything. --ranks N adds the checks that depend on the
// job's size (samples per rank, batch, parameter-server layout), by the code train runs.
// Last, the execution plan train would run (plan/execution_plan.hpp), where the backend runs,
// the run directory train would write, and with --resume whether this job of --ranks ranks
// can resume a checkpoint, and whether exactly.
#include <cstdio>
#include <filesystem>
#include <memory>

#include "hpdl/builder/builder.hpp"
#include "hpdl/config/config.hpp"
#include "hpdl/core/error.hpp"
#include "hpdl/data/dataset.hpp"
#include "hpdl/data/h5_util.hpp"
#include "hpdl/plan/execution_plan.hpp"
#include "hpdl/run/commands.hpp"
#include "hpdl/run/data_splits.hpp"
#include "hpdl/run/job_layout.hpp"
#include "hpdl/run/run_dir.hpp"
#include "hpdl/train/checkpoint.hpp"
#include "hpdl/train/ps_checkpoint.hpp"

namespace hpdl {

namespace {
// Whether a job of `ranks` ranks can resume the checkpoint at `path` (a run directory or a
// file), and whether exactly: one line, or the Error train would throw.
std::string resume_verdict(const Config& cfg, const Model* backend_model, const Model& model,
                           int ranks, std::string path) {
  if (std::filesystem::is_directory(path)) path += "/checkpoint.h5";
  const Checkpoint found = read_checkpoint(path);
  Checkpoint expected = checkpoint_identity(cfg, backend_model ? *backend_model : model, ranks);
  if (!backend_model) expected.plan.clear();  // made where the backend runs
  check_compatible(found, expected, path);
  const std::string head = "resume " + path + ": ";
  const int64_t shards = virtual_shards(found);
  if (found.ranks == ranks && (found.mode == "sync" || positions_carry_over(found, ranks)))
    return head + "exact (the " + std::to_string(ranks) + " ranks it was written by)";
  if (found.mode != "sync")
    return head + std::to_string(checkpoint_workers(found)) + " workers' checkpoint on " +
           std::to_string(ranks - found.servers) +
           ": the workers' positions are redistributed (each starts where the slowest stood; "
           "changes not yet pushed are dropped), not exact";
  if (shards > 0)
    return head + "exact on " + std::to_string(ranks) + " ranks (written by " +
           std::to_string(found.ranks) +
           "; distributed.virtual_shards = " + std::to_string(shards) + ")";
  return head + std::to_string(found.ranks) + " ranks' checkpoint on " + std::to_string(ranks) +
         ": within rounding of an uninterrupted run, not bit for bit (distributed.virtual_shards "
         "makes it exact)";
}
}  // namespace

int cmd_check(const std::string& config, const std::vector<std::string>& sets, int ranks,
              const std::string& resume) {
  try {
    h5_quiet();
    const Config cfg = load_config(config, sets);
    // Shapes on the reference backend, which runs everywhere: a GPU config is checked on a
    // login node without a GPU; whether its backend runs here is reported on its own line.
    const auto model = build_model(cfg.model, cfg.train.batch, Backend::kReference);
    const DataSplits splits = open_splits(cfg);
    // The job-size checks train makes on each rank, here for every rank of the job.
    if (ranks == 0) ranks = minimum_ranks(cfg);
    int64_t local_batch = 0;  // rank 0's (sync), every worker's (parameter server)
    for (int r = 0; r < ranks; ++r) {
      const int64_t b = check_job_layout(cfg, *splits.train, r, ranks);
      if (r == 0) local_batch = b;
      if (!cfg.distributed.async()) break;  // sync: the same on every rank
    }
    std::string data;
    for (const auto& [name, split] :
         {std::pair{"train", splits.train.get()}, std::pair{"validation", splits.validation.get()},
          std::pair{"test", splits.test.get()}}) {
      if (!split) continue;
      const std::string bad = split->validate(0, split->size(), cfg.model.classes);
      if (!bad.empty()) throw Error(bad);
      data += std::string(" | ") + name + " " + split->where() + ": " +
              std::to_string(split->size()) + " samples";
    }
    std::printf("ok: %s: %lld parameters, %s on %d rank(s)%s\n", config.c_str(),
                static_cast<long long>(model->num_params()), word(cfg.distributed.mode), ranks,
                data.c_str());
    const std::string why_not = backend_unavailable(cfg.run);
    std::printf(
        "backend %s (%s): %s\n", word(cfg.run.backend), word(cfg.run.precision),
        why_not.empty() ? "runs here" : ("not available on this machine: " + why_not).c_str());
    // The plan train would run, where its backend runs here: its kernels choose at bind from
    // the shapes at the local batch, so the model is built again on that backend.
    std::unique_ptr<Model> backend_model;
    if (why_not.empty()) backend_model = build_model(cfg.model, local_batch, cfg.run, 0);
    if (backend_model)
      std::printf("%s", plan_of(*backend_model, cfg.run).table().c_str());
    else
      std::printf("plan: made where the backend runs (hpdl time prints it there)\n");
    // Where train writes: launchers keep their own records beside the run's (pi_cluster.sh).
    std::printf("run directory: %s/%s\n", cfg.run.output_dir.c_str(),
                resolve_run_name(cfg).c_str());
    if (!resume.empty())
      std::printf("%s\n", resume_verdict(cfg, backend_model.get(), *model, ranks, resume).c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hpdl: error: %s\n", e.what());
    return 1;
  }
}

}  // namespace hpdl
