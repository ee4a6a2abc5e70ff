// `hpdl time CONFIG`, after Caffe's `time`: one process runs `warmup` untimed iterations,
// then `iterations` timed ones (forward, loss, backward, update) on the first batch of the
// training data or on synthetic data, and prints each layer's forward and backward time
// and the totals. Timing uses the same profiler as traced training runs. Then, unless
// --no-ceilings, it measures this machine's GEMM peak and memory bandwidth through the same
// backend and prints each pass's efficiency against them (run/efficiency_table.hpp). With
// --out DIR it writes them as a run directory of one rank, with its report page.
#include <omp.h>

#include <cstdio>
#include <map>
#include <optional>

#include "hpdl/builder/builder.hpp"
#include "hpdl/core/atomic_file.hpp"
#include "hpdl/core/error.hpp"
#include "hpdl/core/output_file.hpp"
#include "hpdl/core/rng.hpp"
#include "hpdl/data/dataset.hpp"
#include "hpdl/data/h5_util.hpp"
#include "hpdl/kernels/kernels.hpp"
#include "hpdl/nn/loss.hpp"
#include "hpdl/optim/optimizer.hpp"
#include "hpdl/plan/execution_plan.hpp"
#include "hpdl/profile/profiler.hpp"
#include "hpdl/profile/trace_writer.hpp"
#include "hpdl/run/commands.hpp"
#include "hpdl/run/efficiency_table.hpp"
#include "hpdl/run/manifest.hpp"
#include "hpdl/train/passes.hpp"
#include "hpdl/version.hpp"

namespace hpdl {
namespace {

// Fills the model's input and the labels: the first batch of the training split, or
// uniform noise and cycling labels.
void fill_batch(const Config& cfg, bool synthetic, Model& model, std::vector<int32_t>& labels) {
  const int64_t B = model.batch();
  if (synthetic) {
    Rng rng(cfg.train.seed, 99);
    const int64_t n = model.input_shape().numel();
    for (int64_t i = 0; i < n; ++i) model.input_host()[i] = rng.uniform();
    for (int64_t i = 0; i < B; ++i) labels[i] = static_cast<int32_t>(i % cfg.model.classes);
    model.upload_input();
    return;
  }
  h5_quiet();
  H5Split split(cfg.data.train_file, cfg.data.train_group);
  HPDL_REQUIRE(split.sample_shape() == cfg.model.input,
               split.where() + "x has samples of shape " + Shape{split.sample_shape()}.str() +
                   " but model.input = " + Shape{cfg.model.input}.str() + " (or use --synthetic)");
  HPDL_REQUIRE(split.size() >= B, split.where() + " holds fewer samples than train.batch");
  if (cfg.data.normalize) split.normalize_channels();
  split.read_range(0, B, model.input_host(), labels.data());
  model.upload_input();
}

// Runs `total` iterations (forward, loss, backward, update) on the batch, recorded by prof.
void run_iterations(const Config& cfg, Model& model, const std::vector<int32_t>& labels,
                    Profiler& prof, const StepNames& names, int64_t total) {
  SoftmaxCrossEntropy loss(model.kernels(), model.batch(), cfg.model.classes);
  auto optimizer = make_optimizer(model.ops(), model.device(), cfg.optimizer, model.num_params());
  std::vector<int64_t> rows(cfg.train.batch);  // sample ids (dropout masks depend on them)
  for (int64_t i = 0; i < cfg.train.batch; ++i) rows[i] = i;
  for (int64_t s = 0; s < total; ++s) {
    prof.begin_step(s);
    const Pass pass{true, cfg.train.seed, s, rows.data(), {}};
    forward_backward(model, loss, labels.data(), pass, 1.0f / float(model.batch()), {}, &prof,
                     &names);
    {
      DeviceScope timed(&prof, names.update);
      optimizer->update(model.params(), model.grads());
    }
    prof.end_step();
  }
}

struct LayerTable {
  std::vector<PassTiming> passes;  // each layer's forward and backward: mean time and work
  Stats wall;                      // of the timed iterations (ms)
};

// Prints the per-layer table (statistics over the timed iterations) and the totals.
LayerTable print_layer_table(const TimeArgs& args, const Config& cfg, Model& model,
                             const Profiler& prof, const StepNames& names) {
  std::map<int32_t, std::map<int64_t, double>> per_name;  // interval -> step -> ms
  std::vector<double> wall;
  for (const TraceEvent& e : prof.events()) {
    const double ms = (e.t1_ns - e.t0_ns) / 1e6;
    if (e.name == prof.step_name())
      wall.push_back(ms);
    else
      per_name[e.name][e.step] += ms;
  }
  auto stats = [&](int32_t id) {
    std::vector<double> v;
    for (const auto& [step, ms] : per_name[id]) v.push_back(ms);
    return stats_of(v);
  };
  std::printf(
      "hpdl time: %s | batch %lld | backend %s (GEMM: %s, %s) | %lld warm-up + %lld timed "
      "iterations%s\n",
      args.config.c_str(), (long long)cfg.train.batch, model.kernels_name().c_str(),
      gemm_library(cfg.run.backend, cfg.run.kernels).c_str(), word(cfg.run.precision),
      (long long)args.warmup, (long long)args.iterations,
      args.synthetic ? " | synthetic data" : "");
  std::printf("%-16s %-10s %12s %10s %12s %10s %9s\n", "layer", "kind", "forward ms", "p95",
              "backward ms", "p95", "bwd/fwd");
  double fwd_total = 0, bwd_total = 0;
  const auto& n = prof.names();
  const auto& c = prof.categories();
  std::map<std::string, int32_t> backward_id;
  for (size_t id = 0; id < n.size(); ++id)
    if (c[id] == "backward") backward_id[n[id]] = int32_t(id);
  LayerTable t;
  size_t layer = 0;
  for (size_t id = 0; id < n.size(); ++id) {
    if (c[id] != "forward") continue;
    const Stats f = stats(int32_t(id)), b = stats(backward_id.at(n[id]));
    fwd_total += f.mean, bwd_total += b.mean;
    const LayerWork work = model.layer_work(layer);
    t.passes.push_back({n[id], "forward", f.mean / 1e3, work.forward});
    t.passes.push_back({n[id], "backward", b.mean / 1e3, work.backward});
    std::printf("%-16s %-10s %12.3f %10.3f %12.3f %10.3f %9.2f\n", n[id].c_str(),
                model.layer(layer++).kind().c_str(), f.mean, f.p95, b.mean, b.p95,
                f.mean > 0 ? b.mean / f.mean : 0.0);
  }
  t.wall = stats_of(wall);
  const Stats l = stats(names.loss), u = stats(names.update);
  const Stats& w = t.wall;
  std::printf("%-27s %12.3f %10s %12.3f\n", "sum of layers", fwd_total, "", bwd_total);
  std::printf("%s", plan_of(model, cfg.run).table().c_str());
  if (model.one_thread())
    std::printf(
        "%-16s chose one thread: the step's %.1f MFLOP is below %.0f (split over "
        "threads, each pass would first read what another core wrote)\n",
        "all kernels", model.step_flop() / 1e6, Model::kOneThreadBelowFlop / 1e6);
  std::printf(
      "loss %.3f ms, update %.3f ms; iteration %.3f ms (p50 %.3f, p95 %.3f); "
      "layers + loss + update = %.2f%% of the iteration\n",
      l.mean, u.mean, w.mean, w.p50, w.p95,
      w.mean > 0 ? 100 * (fwd_total + bwd_total + l.mean + u.mean) / w.mean : 0.0);
  return t;
}

// --out DIR: the timings as a run directory of one rank (what a profiled train run writes
// of them) and its report page.
void write_time_run(const TimeArgs& args, const Config& cfg, Model& model, const Profiler& prof,
                    const LayerTable& table, const Ceilings* ceilings) {
  make_output_dir(args.out);
  nlohmann::json manifest = {{"kind", "time"},
                             {"hpdl_version", kVersion},
                             {"git_hash", kGitHash},
                             {"command", args.command_line},
                             {"config", args.config},
                             {"ranks", 1},
                             {"threads_per_rank", omp_get_max_threads()},
                             {"backend", cfg.run.backend},
                             {"gemm", gemm_library(cfg.run.backend, cfg.run.kernels)},
                             {"precision", cfg.run.precision},
                             {"mode", args.synthetic ? "hpdl time, synthetic data" : "hpdl time"},
                             {"machine", machine_json(model.device().name())},
                             {"plan", nlohmann::json::parse(plan_of(model, cfg.run).serialise())},
                             {"started", utc_now()}};
  write_traces(local_traces(prof), args.out, manifest, model.work_by_layer());
  if (ceilings) write_efficiency_csv(table.passes, *ceilings, args.out + "/efficiency.csv");
  write_file_atomically(args.out + "/config.toml", to_toml(cfg.resolved));
  manifest["finished"] = utc_now();
  manifest["status"] = "complete";
  write_file_atomically(args.out + "/manifest.json", manifest.dump(2) + "\n");
  std::printf("run directory %s: report %s\n", args.out.c_str(),
              write_run_report(args.out).c_str());
}

// --overhead: the median recorded against the median unrecorded iteration.
void print_overhead(const Profiler& prof, int64_t warmup) {
  std::vector<double> on, off;
  const auto& walls = prof.step_walls();
  for (size_t k = static_cast<size_t>(warmup); k < walls.size(); ++k)
    (walls[k] >= 0 ? on : off).push_back(std::abs(walls[k]) / 1e6);
  const double a = stats_of(on).p50, b = stats_of(off).p50;
  std::printf(
      "overhead: median iteration %.3f ms recorded vs %.3f ms unrecorded (%+.2f%%), "
      "%zu + %zu alternating iterations\n",
      a, b, b > 0 ? 100 * (a / b - 1) : 0.0, on.size(), off.size());
}

}  // namespace

int cmd_time(const TimeArgs& args) {
  try {
    HPDL_REQUIRE(args.csv.empty() || args.ceilings, "--csv needs the ceilings: drop --no-ceilings");
    const Config cfg = load_config(args.config, args.sets);
    HPDL_REQUIRE(args.synthetic || !cfg.data.train_file.empty(),
                 "config " + args.config + " has no data.train_file: use --synthetic");
    auto model = build_model(cfg.model, cfg.train.batch, cfg.run);
    model->init_params(cfg.train.seed);
    std::vector<int32_t> labels(cfg.train.batch);
    fill_batch(cfg, args.synthetic, *model, labels);

    // With --overhead, timed iterations alternate recorded and unrecorded, so both kinds
    // run side by side (twice as many iterations).
    ProfileConfig pc;
    pc.enabled = true, pc.skip = args.warmup;
    pc.warmup = args.overhead ? 1 : 0, pc.active = args.overhead ? 1 : args.iterations;
    pc.repeat = args.overhead ? args.iterations : 1;
    const int64_t total = args.warmup + (args.overhead ? 2 : 1) * args.iterations;
    Profiler prof(pc, total, 4 * int64_t(model->num_layers()) + 32);
    model->set_profiler(&prof);
    const StepNames names(&prof);
    run_iterations(cfg, *model, labels, prof, names, total);

    const LayerTable table = print_layer_table(args, cfg, *model, prof, names);
    if (args.overhead) print_overhead(prof, args.warmup);
    std::optional<Ceilings> ceilings;
    if (args.ceilings) {
      std::fflush(stdout);
      ceilings = measure_ceilings(model->kernels());
      print_efficiency(table.passes, *ceilings, table.wall.mean / 1e3, stdout);
      if (!args.csv.empty()) {
        write_efficiency_csv(table.passes, *ceilings, args.csv);
        std::printf("efficiency rows written to %s\n", args.csv.c_str());
      }
    }
    if (!args.out.empty())
      write_time_run(args, cfg, *model, prof, table, ceilings ? &*ceilings : nullptr);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hpdl: error: %s\n", e.what());
    return 1;
  }
}

}  // namespace hpdl
