// The hpdl subcommands behind main()'s argument parsing. Each returns the process exit code.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "hpdl/net/calibration.hpp"

namespace hpdl {

struct TrainArgs {
  std::string config;
  std::vector<std::string> sets;  // --set key=value
  bool overwrite = false;
  bool resume = false;      // continue from the run directory's checkpoint.h5, if any
  std::string resume_from;  // continue from this checkpoint file
  std::string command_line;
};

// The exit code of a run that a stop signal ended after writing its checkpoint: "not
// finished, resume me" (EX_TEMPFAIL). The sbatch scripts requeue on it.
constexpr int kExitCheckpointed = 75;

struct TimeArgs {
  std::string config;
  std::vector<std::string> sets;
  int64_t iterations = 20, warmup = 2;
  bool synthetic = false;
  bool overhead = false;  // alternate recorded and unrecorded iterations, compare
  std::string command_line;
  bool ceilings = true;  // measure the GEMM peak and memory bandwidth, print efficiency
  std::string csv;       // and write the efficiency rows there (empty: not written)
  std::string out;       // a run directory for the timings and report.html ("": none)
};

struct EvalArgs {
  std::string model;  // model.h5 or a checkpoint (the config that built it travels inside)
  std::string data;   // HDF5 file in hpdl's schema
  std::string group = "/";
  int64_t batch = 0;  // samples per rank per forward pass; 0 = the run's train.batch
};

struct CalibrateArgs {
  std::string out = "network.json";
  CalibrateOptions options;
  double watchdog_s = 120;  // bound on every wait for another rank
  bool strict = false;      // exit 3 when a slow pair or host is flagged
  bool compute = true;      // measure each rank's GEMM peak and memory bandwidth
};

struct ReportArgs {
  std::vector<std::string> runs;  // one run directory, or two to compare
  std::string study;              // a sweep directory instead
  std::string out;                // "" = RUN/report.html (B/compare.html, SWEEP/report.html)
};

struct PredictArgs {
  std::string run_dir, network;
  std::string batch_profile;  // "" = none: a second profile at another batch (batch_split.hpp)
  std::vector<int> ranks = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024};
  int ranks_per_host = 1;
  double cores_per_host = 0;  // 0: no core sharing assumed
  std::string out;            // "" = RUN_DIR/predict
  bool recommend = false;     // rank the training modes and host counts (predict/recommend.hpp)
};

// A stop signal that arrives while the program's shared libraries start (the CUDA libraries'
// constructors take 0.1 s, longer on a loaded node) is recorded rather than fatal: main's
// .preinit_array calls catch_stop_signals_early() before any library's constructor runs.
// Every command but train then gives the signals their default action back (one that
// arrived meanwhile acts at once); train acts on it at its first step (exit 75).
void catch_stop_signals_early();
void release_early_stop_signals();

// Run under MPI (mpirun/srun or a singleton); initialise and finalise MPI themselves.
int cmd_train(const TrainArgs& args, int* argc, char*** argv);
int cmd_eval(const EvalArgs& args, int* argc, char*** argv);
int cmd_calibrate(const CalibrateArgs& args, int* argc, char*** argv);
int cmd_convert_mnist(const std::string& images, const std::string& labels, const std::string& out,
                      const std::string& class_names);
int cmd_convert_uci_har(const std::string& dir, const std::string& out);
// One process, no MPI: per-layer forward/backward times of a config's model.
int cmd_time(const TimeArgs& args);
// network: a network.json with compute ceilings (empty: no efficiency table).
int cmd_trace_summary(const std::string& run_dir, const std::string& network = "");
// Two profiled runs' layers side by side, with ratios and a noise estimate.
int cmd_compare(const std::string& a_dir, const std::string& b_dir);
// The HTML report of a run, two runs or a sweep (report/page.hpp); prints the page's path.
int cmd_report(const ReportArgs& args);
// Writes RUN_DIR's report to `out` ("" = RUN_DIR/report.html); returns its path. Throws Error.
std::string write_run_report(const std::string& run_dir, const std::string& out = "");
// No MPI: loads and checks a config, its model and data files, as train would.
// No MPI: step time, samples/s and efficiency at other rank counts (predict/predictor.hpp).
int cmd_predict(const PredictArgs& args);
int cmd_check(const std::string& config, const std::vector<std::string>& sets, int ranks = 0,
              const std::string& resume = "");

}  // namespace hpdl
