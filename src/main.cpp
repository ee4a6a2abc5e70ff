// hpdl entry point: parses the command line and dispatches to a subcommand. Nothing else.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "hpdl/run/commands.hpp"
#include "hpdl/version.hpp"

int main(int argc, char** argv) {
  CLI::App app{"hpdl: distributed deep-learning training with per-layer profiling"};
  app.require_subcommand(1);
  app.set_version_flag("--version",
                       std::string("hpdl ") + hpdl::kVersion + " (" + hpdl::kGitHash + ")");

  hpdl::TrainArgs train;
  CLI::App* train_cmd = app.add_subcommand(
      "train", "Train a model described by a TOML config (run under mpirun/srun)");
  train_cmd->add_option("config", train.config, "TOML config file (see inputs/)")->required();
  train_cmd
      ->add_option("--set", train.sets,
                   "Override a config key: --set optimizer.lr=0.01 (repeatable)")
      ->allow_extra_args(false);  // one key=value per --set, so the config path is never eaten
  train_cmd->add_flag("--overwrite", train.overwrite,
                      "Replace a completed run in the same output directory");
  train_cmd->add_flag("--resume", train.resume,
                      "Continue from the run directory's checkpoint.h5 if it has one "
                      "(else start afresh)");
  train_cmd->add_option("--resume-from", train.resume_from,
                        "Continue from this checkpoint file (e.g. a checkpoint.prev.h5)");

  CLI::App* convert = app.add_subcommand("convert", "Convert a dataset to hpdl's HDF5 schema");
  convert->require_subcommand(1);
  std::string images, labels, out, classes, dir;
  CLI::App* mnist =
      convert->add_subcommand("mnist", "MNIST/Fashion-MNIST IDX files (.gz or plain) to HDF5");
  mnist->add_option("images", images, "IDX image file")->required();
  mnist->add_option("labels", labels, "IDX label file")->required();
  mnist->add_option("out", out, "Output HDF5 file")->required();
  mnist->add_option("--classes", classes, "Comma-separated class names stored with the labels");
  CLI::App* har =
      convert->add_subcommand("uci-har", "The original 'UCI HAR Dataset' folder to HDF5");
  har->add_option("dir", dir, "The 'UCI HAR Dataset' folder")->required();
  har->add_option("out", out, "Output HDF5 file")->required();

  hpdl::TimeArgs time;
  CLI::App* time_cmd = app.add_subcommand(
      "time",
      "Per-layer forward/backward times of a config's model (one process, like Caffe's time)");
  time_cmd->add_option("config", time.config, "TOML config file")->required();
  time_cmd->add_option("--set", time.sets, "Override a config key (repeatable)")
      ->allow_extra_args(false);
  time_cmd->add_option("--iterations,-n", time.iterations, "Timed iterations")
      ->check(CLI::PositiveNumber);
  time_cmd->add_option("--warmup", time.warmup, "Untimed iterations first")
      ->check(CLI::NonNegativeNumber);
  time_cmd->add_flag("--synthetic", time.synthetic, "Random input instead of the training data");
  time_cmd->add_flag("--overhead", time.overhead,
                     "Alternate recorded and unrecorded iterations and compare their medians");
  time_cmd->add_flag("!--no-ceilings", time.ceilings,
                     "Skip measuring the GEMM peak and memory bandwidth (the efficiency table)");
  time_cmd->add_option("--csv", time.csv,
                       "Write the efficiency rows as CSV (profiling/plot_roofline.py draws it)");

  std::string check_config;
  std::vector<std::string> check_sets;
  CLI::App* check_cmd = app.add_subcommand(
      "check", "Check a config, its model and data files as train would, without training");
  check_cmd->add_option("config", check_config, "TOML config file")->required();
  check_cmd->add_option("--set", check_sets, "Override a config key (repeatable)")
      ->allow_extra_args(false);
  int check_ranks = 0;
  check_cmd
      ->add_option("-n,--ranks", check_ranks,
                   "The job's rank count (default: the fewest the mode runs on)")
      ->check(CLI::PositiveNumber);

  hpdl::EvalArgs eval;
  CLI::App* eval_cmd = app.add_subcommand(
      "eval",
      "Evaluate a saved model or checkpoint on HDF5 data (run under mpirun/srun, or alone)");
  eval_cmd->add_option("model", eval.model, "model.h5 or checkpoint.h5 of a run")->required();
  eval_cmd->add_option("data", eval.data, "HDF5 file with x and y (hpdl's schema)")->required();
  eval_cmd->add_option("--group", eval.group, "Group holding x and y (default /)");
  eval_cmd->add_option("--batch", eval.batch, "Samples per forward pass (default: the run's batch)")
      ->check(CLI::PositiveNumber);

  hpdl::CalibrateArgs calib;
  CLI::App* calib_cmd = app.add_subcommand(
      "calibrate",
      "Measure the network of an allocation (point to point per host pair, allreduce per "
      "algorithm, RMA, reduction), each rank's GEMM peak and memory bandwidth, and flag slow "
      "hosts (run under mpirun/srun)");
  calib_cmd->add_flag("!--no-compute", calib.compute,
                      "Skip measuring each rank's GEMM peak and memory bandwidth");
  calib_cmd->add_option("--out", calib.out,
                        "Where to write the measurements (default network.json)");
  calib_cmd->add_option("--max-bytes", calib.options.max_bytes, "Largest message (default 64 MiB)")
      ->check(CLI::Range(int64_t{8}, int64_t{1} << 30));
  calib_cmd
      ->add_option("--budget-s", calib.options.budget_s,
                   "Skip a size that would take longer than this (default 1 s)")
      ->check(CLI::Range(0.001, 600.0));
  calib_cmd
      ->add_option("--watchdog-s", calib.watchdog_s,
                   "Bound on any wait for another rank (default 120 s)")
      ->check(CLI::Range(1.0, 86400.0));
  calib_cmd->add_flag("--strict", calib.strict, "Exit 3 when a slow pair or host is flagged");

  hpdl::PredictArgs pred;
  CLI::App* pred_cmd = app.add_subcommand(
      "predict",
      "Predict step time and scaling at other rank counts from a profiled run and network.json");
  pred_cmd->add_option("run_dir", pred.run_dir, "A run directory of a profiled sync run")
      ->required();
  pred_cmd->add_option("--network", pred.network, "network.json from hpdl calibrate")->required();
  pred_cmd->add_option("--ranks", pred.ranks, "Rank counts, e.g. 1,2,4,8 (default 1..1024)")
      ->delimiter(',');
  pred_cmd->add_option("--ranks-per-host", pred.ranks_per_host, "Ranks sharing a host (default 1)")
      ->check(CLI::PositiveNumber);
  pred_cmd
      ->add_option("--cores-per-host", pred.cores_per_host,
                   "Cores of a host; ranks x threads beyond it share cores (default: the "
                   "calibrated CPU per host when under a core per rank, else none shared)")
      ->check(CLI::NonNegativeNumber);
  pred_cmd->add_option("--out", pred.out, "Output directory (default RUN_DIR/predict)");
  pred_cmd->add_flag("--recommend", pred.recommend,
                     "Rank sync, bf16, local SGD, DiLoCo and parameter-server candidates at each "
                     "rank count; print the best with their --set options and launch lines");

  CLI::App* trace = app.add_subcommand("trace", "Inspect the traces of a profiled run");
  trace->require_subcommand(1);
  std::string run_dir;
  CLI::App* summary = trace->add_subcommand(
      "summary", "Per-layer forward/backward table and per-step accounting of RUN_DIR");
  summary->add_option("run_dir", run_dir, "Run directory (outputs/<run>)")->required();
  std::string summary_network;
  summary->add_option("--network", summary_network,
                      "network.json of hpdl calibrate: each pass's efficiency against its "
                      "measured GEMM peak and memory bandwidth");
  std::string compare_a, compare_b;
  CLI::App* compare = app.add_subcommand(
      "compare", "Two profiled runs' per-layer forward/backward times side by side (B / A, noise)");
  compare->add_option("run_a", compare_a, "Run directory A (the baseline)")->required();
  compare->add_option("run_b", compare_b, "Run directory B")->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  for (int i = 0; i < argc; ++i) train.command_line += (i ? " " : "") + std::string(argv[i]);

  if (*train_cmd) return hpdl::cmd_train(train, &argc, &argv);
  if (*mnist) return hpdl::cmd_convert_mnist(images, labels, out, classes);
  if (*har) return hpdl::cmd_convert_uci_har(dir, out);
  if (*time_cmd) return hpdl::cmd_time(time);
  if (*summary) return hpdl::cmd_trace_summary(run_dir, summary_network);
  if (*compare) return hpdl::cmd_compare(compare_a, compare_b);
  if (*check_cmd) return hpdl::cmd_check(check_config, check_sets, check_ranks);
  if (*eval_cmd) return hpdl::cmd_eval(eval, &argc, &argv);
  if (*calib_cmd) return hpdl::cmd_calibrate(calib, &argc, &argv);
  if (*pred_cmd) return hpdl::cmd_predict(pred);
  return 1;
}
