// Run directory handling: the completed-run guard, atomic writes, log and metrics files.
#include "hpdl/run/run_dir.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "hpdl/core/atomic_file.hpp"
#include "hpdl/core/error.hpp"

namespace hpdl {
namespace fs = std::filesystem;

std::string resolve_run_name(const Config& cfg) {
  if (cfg.resolved.contains("run") && cfg.resolved["run"]["name"].value<std::string>()) {
    return cfg.run.name;
  }
  if (const char* job = std::getenv("SLURM_JOB_ID")) {
    std::string name = job;
    if (const char* task = std::getenv("SLURM_ARRAY_TASK_ID")) name += std::string("_") + task;
    return name;
  }
  return cfg.run.name;
}

static bool holds_completed_run(const fs::path& dir) {
  std::ifstream in(dir / "manifest.json");
  if (!in) return false;
  try {
    const auto j = nlohmann::json::parse(in);
    return j.value("status", "") == "complete";
  } catch (const std::exception&) {
    return false;
  }
}

RunDir::RunDir(const std::string& dir, bool overwrite, bool resume) : dir_(dir) {
  std::error_code ec;
  if (fs::exists(dir_) && holds_completed_run(dir_)) {
    if (!overwrite) {
      throw Error("output directory " + dir_ + " already holds a completed run" +
                  (resume ? ", nothing to resume" : "") +
                  " (use --overwrite or --set run.overwrite=true, or choose another run.name)");
    }
    fs::remove_all(dir_, ec);
    if (ec) throw Error("cannot remove old run " + dir_ + ": " + ec.message());
  }
  fs::create_directories(dir_, ec);
  if (ec) throw Error("cannot create output directory " + dir_ + ": " + ec.message());
  log_ = std::fopen(file("log.txt").c_str(), resume ? "a" : "w");
  metrics_ = std::fopen(file("metrics.csv").c_str(), "w");
  if (!log_ || !metrics_) throw Error("cannot write into output directory " + dir_);
}

RunDir::~RunDir() {
  if (log_) std::fclose(log_);
  if (metrics_) std::fclose(metrics_);
}

void RunDir::write_atomically(const std::string& name, const std::string& text) const {
  write_file_atomically(file(name), text);
}

void RunDir::log(const std::string& line) {
  std::fputs((line + "\n").c_str(), stdout);
  std::fflush(stdout);
  std::fputs((line + "\n").c_str(), log_);
  std::fflush(log_);
}

void RunDir::metrics_row(const std::string& header, const std::string& row) {
  if (std::ftell(metrics_) == 0) std::fputs((header + "\n").c_str(), metrics_);
  std::fputs((row + "\n").c_str(), metrics_);
  std::fflush(metrics_);
}

}  // namespace hpdl
