// What `hpdl report` reads and the page draws: one run directory, two runs compared, or a
// sweep of runs, each as one JSON document. Every reader takes what is there and lists
// what is not ("missing", one line each), so a run without traces still gets its page.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

namespace hpdl {

// A run directory of `hpdl train` or `hpdl time --out`: header (model, data, layout,
// backend, plan, version, machine), status, step time and its parts, per layer and pass
// (time, work, efficiency, roofline), per rank, the parameter server's workers, a sampled
// timeline and the training curves. Throws Error when `dir` is not a run directory.
nlohmann::json run_data(const std::string& dir);

// The timeline of a few steps of every rank (at most `max_spans` spans in all), and the
// allreduce buckets with the share of their time that overlapped the backward pass: from
// DIR/trace/rank*.json. Missing traces: an object without "ranks".
nlohmann::json timeline_data(const std::string& dir, size_t max_spans = 6000);

// A pass's change from A to B, as `hpdl compare` and the comparison page judge it: each
// side's noise is its own spread (p95 - p50) / p50; the ratio B / A counts as "faster" or
// "slower" only outside the two spreads combined (root of the sum of squares), else "same"
// ("-" when A took no time).
struct PassChange {
  double ratio = 0, noise = 0;
  const char* change = "-";
};
PassChange pass_change(double a_p50, double a_p95, double b_p50, double b_p95);

// Two runs and what differs between their configurations and machines.
nlohmann::json compare_data(const std::string& a_dir, const std::string& b_dir);

// A sweep directory (task0, task1, ...: run directories, jobs/sweep.sbatch): each task's
// configuration keys that differ across the sweep, its step time and per-layer times, and
// the per-layer speed-up where tasks differ only in threads per rank.
nlohmann::json study_data(const std::string& dir);

// The keys whose values differ between two config.toml texts, as "section.key" (the N-th
// entry of an array of tables as "array.N.key"), with both values ("" where unset).
nlohmann::json config_differences(const std::string& a_toml, const std::string& b_toml);

}  // namespace hpdl
