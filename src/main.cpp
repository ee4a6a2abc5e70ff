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

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  for (int i = 0; i < argc; ++i) train.command_line += (i ? " " : "") + std::string(argv[i]);

  if (*train_cmd) return hpdl::cmd_train(train, &argc, &argv);
  if (*mnist) return hpdl::cmd_convert_mnist(images, labels, out, classes);
  if (*har) return hpdl::cmd_convert_uci_har(dir, out);
  return 1;
}
