// `hpdl predict RUN_DIR --network network.json [--ranks 1,2,4,...] [--ranks-per-host R]
// [--cores-per-host C] [--batch-profile RUN2] [--out DIR] [--recommend]`: the step-time model of
// predict/predictor.hpp over rank counts; prints the table and writes prediction.csv,
// prediction.svg and predicted_trace.json (one step at the largest rank count, to open
// beside a measured trace). --recommend ranks the training modes instead
// (predict/recommend.hpp) and writes recommend.csv.
#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "hpdl/core/atomic_file.hpp"
#include "hpdl/core/error.hpp"
#include "hpdl/predict/batch_split.hpp"
#include "hpdl/predict/prediction_output.hpp"
#include "hpdl/predict/recommend.hpp"
#include "hpdl/run/commands.hpp"

namespace hpdl {

int cmd_predict(const PredictArgs& args) {
  try {
    if (args.ranks.empty()) throw Error("--ranks is empty");
    for (int r : args.ranks)
      if (r < 1) throw Error("--ranks: " + std::to_string(r) + " is not a rank count");
    StepProfile profile = read_profile(args.run_dir);
    if (!args.batch_profile.empty())
      split_per_call(profile, read_profile(args.batch_profile), args.batch_profile);
    const NetworkModel net = read_network(args.network);
    PredictOptions o;
    o.ranks_per_host = args.ranks_per_host;
    // Unless told, a host has the cores its ranks got when calibrated (a CPU budget, or a
    // machine shared by emulated hosts); whole machines are not counted as sharing.
    o.cores_per_host = args.cores_per_host;
    if (o.cores_per_host == 0 && net.cores_per_host > 0 &&
        net.cores_per_host < 0.95 * o.ranks_per_host)
      o.cores_per_host = net.cores_per_host;
    // Efficiency against one rank (sync), or against one worker's rate times the workers
    // (parameter server, whose servers do no training).
    const int base = profile.async() ? profile.servers + 1 : 1;
    const Prediction one = predict_step(profile, net, base, o);
    std::vector<Prediction> rows;
    for (int r : args.ranks) {
      if (r < base) continue;  // a parameter server needs a worker beside its servers
      Prediction p = predict_with_band(profile, net, r, o);
      p.efficiency = profile.async() ? p.samples_per_s / (p.workers * one.samples_per_s)
                                     : one.step_s / (r * p.step_s);
      rows.push_back(std::move(p));
    }
    if (rows.empty())
      throw Error("--ranks: a run with " + std::to_string(profile.servers) +
                  " server(s) needs at least " + std::to_string(base) + " ranks");
    const std::string scope = calibration_scope(
        net, *std::max_element(args.ranks.begin(), args.ranks.end()), o.ranks_per_host);
    if (!scope.empty()) std::printf("%s\n", scope.c_str());
    const std::string out = args.out.empty() ? args.run_dir + "/predict" : args.out;
    std::filesystem::create_directories(out);
    if (args.recommend) {
      const std::vector<Candidate> candidates = training_candidates(profile);
      const std::vector<Recommendation> ranked = recommend(candidates, net, args.ranks, o);
      write_file_atomically(out + "/recommend.csv", recommendation_csv(ranked));
      std::printf(
          "%s\nwritten: %s/recommend.csv (every candidate at every rank count)\n",
          recommendation_report(profile, ranked, 8, profile.config_file, o.ranks_per_host).c_str(),
          out.c_str());
      return 0;
    }
    write_file_atomically(out + "/prediction.csv", prediction_csv(rows));
    write_file_atomically(out + "/prediction.svg", prediction_svg(rows));
    write_file_atomically(out + "/predicted_trace.json",
                          predicted_trace(profile, rows.back()).dump() + "\n");
    if (o.cores_per_host > 0 && args.cores_per_host == 0)
      std::printf("cores per host: %.3f, as calibrated (--cores-per-host overrides)\n",
                  o.cores_per_host);
    std::printf("%s\nwritten: %s/ (prediction.csv prediction.svg predicted_trace.json)\n",
                prediction_table(profile, rows).c_str(), out.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hpdl: error: %s\n", e.what());
    return 1;
  }
}

}  // namespace hpdl
