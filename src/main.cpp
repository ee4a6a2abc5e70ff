// hpdl entry point: parses the command line and dispatches to a subcommand. Nothing else:
// one function per subcommand declares its arguments and options.
#include <CLI/CLI.hpp>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "hpdl/run/commands.hpp"
#include "hpdl/version.hpp"

namespace {

// The arguments of the subcommands that take loose values.
struct ConvertArgs {
  std::string images, labels, out, classes, dir;
};
struct CheckArgs {
  std::string config;
  std::vector<std::string> sets;
  int ranks = 0;
  std::string resume;
};
struct TraceArgs {
  std::string run_dir, network;  // trace summary
  std::string run_a, run_b;      // compare
};

CLI::App* add_train(CLI::App& app, hpdl::TrainArgs& a) {
  CLI::App* cmd = app.add_subcommand(
      "train", "Train a model described by a TOML config (run under mpirun/srun)");
  cmd->add_option("config", a.config, "TOML config file (see inputs/)")->required();
  cmd->add_option("--set", a.sets,
                  "Override a config key: --set optimizer.lr=0.01 (repeatable)")
      ->allow_extra_args(false);  // one key=value per --set, so the config path is never eaten
  cmd->add_flag("--overwrite", a.overwrite, "Replace a completed run in the same output directory");
  cmd->add_flag("--resume", a.resume,
                "Continue from the run directory's checkpoint.h5 if it has one "
                "(else start afresh)");
  cmd->add_option("--resume-from", a.resume_from,
                  "Continue from this checkpoint file (e.g. a checkpoint.prev.h5)");
  return cmd;
}

// Returns the two converters (mnist, uci-har).
std::pair<CLI::App*, CLI::App*> add_convert(CLI::App& app, ConvertArgs& a) {
  CLI::App* convert = app.add_subcommand("convert", "Convert a dataset to hpdl's HDF5 schema");
  convert->require_subcommand(1);
  CLI::App* mnist =
      convert->add_subcommand("mnist", "MNIST/Fashion-MNIST IDX files (.gz or plain) to HDF5");
  mnist->add_option("images", a.images, "IDX image file")->required();
  mnist->add_option("labels", a.labels, "IDX label file")->required();
  mnist->add_option("out", a.out, "Output HDF5 file")->required();
  mnist->add_option("--classes", a.classes, "Comma-separated class names stored with the labels");
  CLI::App* har =
      convert->add_subcommand("uci-har", "The original 'UCI HAR Dataset' folder to HDF5");
  har->add_option("dir", a.dir, "The 'UCI HAR Dataset' folder")->required();
  har->add_option("out", a.out, "Output HDF5 file")->required();
  return {mnist, har};
}

CLI::App* add_time(CLI::App& app, hpdl::TimeArgs& a) {
  CLI::App* cmd = app.add_subcommand(
      "time",
      "Per-layer forward/backward times of a config's model (one process, like Caffe's time)");
  cmd->add_option("config", a.config, "TOML config file")->required();
  cmd->add_option("--set", a.sets, "Override a config key (repeatable)")->allow_extra_args(false);
  cmd->add_option("--iterations,-n", a.iterations, "Timed iterations")->check(CLI::PositiveNumber);
  cmd->add_option("--warmup", a.warmup, "Untimed iterations first")->check(CLI::NonNegativeNumber);
  cmd->add_flag("--synthetic", a.synthetic, "Random input instead of the training data");
  cmd->add_flag("--overhead", a.overhead,
                "Alternate recorded and unrecorded iterations and compare their medians");
  cmd->add_flag("!--no-ceilings", a.ceilings,
                "Skip measuring the GEMM peak and memory bandwidth (the efficiency table)");
  cmd->add_option("--csv", a.csv, "Write the efficiency rows as CSV");
  cmd->add_option("--out,-o", a.out,
                  "Write the timings as a run directory (layers.csv, steps.csv, traces, "
                  "efficiency.csv) with its report.html (hpdl report)");
  return cmd;
}

CLI::App* add_check(CLI::App& app, CheckArgs& a) {
  CLI::App* cmd = app.add_subcommand(
      "check", "Check a config, its model and data files as train would, without training");
  cmd->add_option("config", a.config, "TOML config file")->required();
  cmd->add_option("--set", a.sets, "Override a config key (repeatable)")->allow_extra_args(false);
  cmd->add_option("-n,--ranks", a.ranks,
                  "The job's rank count (default: the fewest the mode runs on)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--resume", a.resume,
                  "A run directory (its checkpoint.h5) or a checkpoint file: whether this job "
                  "can resume it, and whether exactly");
  return cmd;
}

CLI::App* add_eval(CLI::App& app, hpdl::EvalArgs& a) {
  CLI::App* cmd = app.add_subcommand(
      "eval",
      "Evaluate a saved model or checkpoint on HDF5 data (run under mpirun/srun, or alone)");
  cmd->add_option("model", a.model, "model.h5 or checkpoint.h5 of a run")->required();
  cmd->add_option("data", a.data, "HDF5 file with x and y (hpdl's schema)")->required();
  cmd->add_option("--group", a.group, "Group holding x and y (default /)");
  cmd->add_option("--batch", a.batch, "Samples per forward pass (default: the run's batch)")
      ->check(CLI::PositiveNumber);
  return cmd;
}

CLI::App* add_calibrate(CLI::App& app, hpdl::CalibrateArgs& a) {
  CLI::App* cmd = app.add_subcommand(
      "calibrate",
      "Measure the network of an allocation (point to point per host pair, allreduce per "
      "algorithm, RMA, reduction), each rank's GEMM peak and memory bandwidth, and flag slow "
      "hosts (run under mpirun/srun)");
  cmd->add_flag("!--no-compute", a.compute,
                "Skip measuring each rank's GEMM peak and memory bandwidth");
  cmd->add_option("--out", a.out, "Where to write the measurements (default network.json)");
  cmd->add_option("--max-bytes", a.options.max_bytes, "Largest message (default 64 MiB)")
      ->check(CLI::Range(int64_t{8}, int64_t{1} << 30));
  cmd->add_option("--budget-s", a.options.budget_s,
                  "Skip a size that would take longer than this (default 1 s)")
      ->check(CLI::Range(0.001, 600.0));
  cmd->add_option("--watchdog-s", a.watchdog_s,
                  "Bound on any wait for another rank (default 120 s)")
      ->check(CLI::Range(1.0, 86400.0));
  cmd->add_flag("--strict", a.strict, "Exit 3 when a slow pair or host is flagged");
  return cmd;
}

CLI::App* add_predict(CLI::App& app, hpdl::PredictArgs& a) {
  CLI::App* cmd = app.add_subcommand(
      "predict",
      "Predict step time and scaling at other rank counts from a profiled run and network.json");
  cmd->add_option("run_dir", a.run_dir, "A run directory of a profiled sync run")->required();
  cmd->add_option("--network", a.network, "network.json from hpdl calibrate")->required();
  cmd->add_option("--ranks", a.ranks, "Rank counts, e.g. 1,2,4,8 (default 1..1024)")
      ->delimiter(',');
  cmd->add_option("--ranks-per-host", a.ranks_per_host, "Ranks sharing a host (default 1)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--cores-per-host", a.cores_per_host,
                  "Cores of a host; ranks x threads beyond it share cores (default: the "
                  "calibrated CPU per host when under a core per rank, else none shared)")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--batch-profile", a.batch_profile,
                  "A profile of the same model at another train.batch, on the same CPU: a "
                  "rank's share of the batch then costs each layer's per-call time as measured");
  cmd->add_option("--out", a.out, "Output directory (default RUN_DIR/predict)");
  cmd->add_flag("--recommend", a.recommend,
                "Rank sync, bf16, local SGD, DiLoCo and parameter-server candidates at each "
                "rank count; print the best with their --set options and launch lines");
  return cmd;
}

// Returns `trace summary` and `compare`.
std::pair<CLI::App*, CLI::App*> add_trace(CLI::App& app, TraceArgs& a) {
  CLI::App* trace = app.add_subcommand("trace", "Inspect the traces of a profiled run");
  trace->require_subcommand(1);
  CLI::App* summary = trace->add_subcommand(
      "summary", "Per-layer forward/backward table and per-step accounting of RUN_DIR");
  summary->add_option("run_dir", a.run_dir, "Run directory (outputs/<run>)")->required();
  summary->add_option("--network", a.network,
                      "network.json of hpdl calibrate: each pass's efficiency against its "
                      "measured GEMM peak and memory bandwidth");
  CLI::App* compare = app.add_subcommand(
      "compare", "Two profiled runs' per-layer forward/backward times side by side (B / A, noise)");
  compare->add_option("run_a", a.run_a, "Run directory A (the baseline)")->required();
  compare->add_option("run_b", a.run_b, "Run directory B")->required();
  return {summary, compare};
}

CLI::App* add_report(CLI::App& app, hpdl::ReportArgs& a) {
  CLI::App* cmd = app.add_subcommand(
      "report",
      "One self-contained HTML page of a run (RUN_DIR/report.html), of two runs compared, or "
      "of a sweep (--study)");
  cmd->add_option("runs", a.runs, "A run directory, or two (A, the baseline, then B)")
      ->expected(0, 2);
  cmd->add_option("--study", a.study, "A sweep directory (task0/, task1/, ...) instead");
  cmd->add_option("--out,-o", a.out,
                  "Where to write the page (default RUN_DIR/report.html, B/compare.html, "
                  "SWEEP_DIR/report.html)");
  return cmd;
}

}  // namespace

// Runs before any shared library's constructor (an executable's .preinit_array comes first;
// see catch_stop_signals_early in run/commands.hpp).
extern "C" void hpdl_catch_stop_signals_early() { hpdl::catch_stop_signals_early(); }
__attribute__((used, section(".preinit_array"))) static void (*const preinit_stop_signals)() =
    hpdl_catch_stop_signals_early;

int main(int argc, char** argv) {
  CLI::App app{"hpdl: distributed deep-learning training with per-layer profiling"};
  app.require_subcommand(1);
  app.set_version_flag("--version",
                       std::string("hpdl ") + hpdl::kVersion + " (" + hpdl::kGitHash + ")");
  hpdl::TrainArgs train;
  ConvertArgs convert;
  hpdl::TimeArgs time;
  CheckArgs check;
  hpdl::EvalArgs eval;
  hpdl::CalibrateArgs calib;
  hpdl::PredictArgs pred;
  TraceArgs trace;
  hpdl::ReportArgs report;
  CLI::App* train_cmd = add_train(app, train);
  const auto [mnist, har] = add_convert(app, convert);
  CLI::App* time_cmd = add_time(app, time);
  CLI::App* check_cmd = add_check(app, check);
  CLI::App* eval_cmd = add_eval(app, eval);
  CLI::App* calib_cmd = add_calibrate(app, calib);
  CLI::App* pred_cmd = add_predict(app, pred);
  const auto [summary, compare] = add_trace(app, trace);
  CLI::App* report_cmd = add_report(app, report);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    hpdl::release_early_stop_signals();
    return app.exit(e);
  }
  if (!*train_cmd) hpdl::release_early_stop_signals();
  for (int i = 0; i < argc; ++i) train.command_line += (i ? " " : "") + std::string(argv[i]);

  if (*train_cmd) return hpdl::cmd_train(train, &argc, &argv);
  if (*mnist)
    return hpdl::cmd_convert_mnist(convert.images, convert.labels, convert.out, convert.classes);
  if (*har) return hpdl::cmd_convert_uci_har(convert.dir, convert.out);
  time.command_line = train.command_line;
  if (*time_cmd) return hpdl::cmd_time(time);
  if (*summary) return hpdl::cmd_trace_summary(trace.run_dir, trace.network);
  if (*compare) return hpdl::cmd_compare(trace.run_a, trace.run_b);
  if (*report_cmd) return hpdl::cmd_report(report);
  if (*check_cmd) return hpdl::cmd_check(check.config, check.sets, check.ranks, check.resume);
  if (*eval_cmd) return hpdl::cmd_eval(eval, &argc, &argv);
  if (*calib_cmd) return hpdl::cmd_calibrate(calib, &argc, &argv);
  if (*pred_cmd) return hpdl::cmd_predict(pred);
  return 1;
}
