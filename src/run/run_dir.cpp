// Run directory handling: the completed-run guard, atomic writes, log and metrics files.
#include "hpdl/run/run_dir.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "hpdl/core/atomic_file.hpp"
#include "hpdl/core/environment.hpp"
#include "hpdl/core/error.hpp"
#include "hpdl/core/output_file.hpp"

namespace hpdl {
namespace fs = std::filesystem;

std::string resolve_run_name(const Config& cfg) {
  if (cfg.resolved.contains("run") && cfg.resolved["run"]["name"].value<std::string>()) {
    return cfg.run.name;
  }
  if (const auto job = environment_variable("SLURM_JOB_ID")) {
    std::string name = *job, source = "the run name from SLURM_JOB_ID";
    if (const auto task = environment_variable("SLURM_ARRAY_TASK_ID")) {
      name += "_" + *task;
      source += "_SLURM_ARRAY_TASK_ID";
    }
    check_run_name(name, source);
    return name;
  }
  return cfg.run.name;
}

// A manifest that cannot be read may belong to a completed run: it counts as one (only
// --overwrite replaces it).
static bool holds_completed_run(const fs::path& dir) {
  std::ifstream in(dir / "manifest.json");
  if (!in) return false;
  try {
    const auto j = nlohmann::json::parse(in);
    return !j.is_object() || j.value("status", "") == "complete";
  } catch (const std::exception&) {
    return true;
  }
}

constexpr const char* kLockName = ".lock";
constexpr const char* kReserveName = ".reserve";

// A run directory holds only regular files and folders: a link (log.txt -> another user's
// file, a trace/ pointing elsewhere, checkpoint.h5 -> a FIFO), a FIFO or a device there is
// refused before anything is read or written. Files opened later refuse links themselves
// (core/output_file.hpp), so a link planted after this check is refused too.
static void refuse_entries_in(const std::string& dir, int depth = 0) {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string path = entry.path().string();
    refuse_link(path);
    std::error_code kind;
    const fs::file_type type = entry.symlink_status(kind).type();
    if (type == fs::file_type::directory && depth == 0) refuse_entries_in(path, 1);
    // A FIFO as manifest.json would block the read of it before any watchdog runs.
    if (type != fs::file_type::directory && type != fs::file_type::regular)
      throw Error(path + " is not a regular file or folder; remove it");
  }
  if (ec) throw Error("cannot list output directory " + dir + ": " + ec.message());
}

RunDir::RunDir(const std::string& dir, bool overwrite, bool resume)
    : dir_(dir), overwrite_(overwrite), resume_(resume) {
  make_output_dir(dir_);
  refuse_entries_in(dir_);
  // One run per directory: the lock lives as long as this process (the kernel releases
  // it on any exit, so a killed run never leaves a stale lock).
  const std::string lock = file(kLockName);
  lock_fd_ = ::open(lock.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (lock_fd_ < 0) {
    refuse_link(lock);
    throw Error("cannot create " + lock + ": " + std::strerror(errno));
  }
  if (::flock(lock_fd_, LOCK_EX | LOCK_NB) != 0) {
    char pid[32] = {0};
    const ssize_t n = ::pread(lock_fd_, pid, sizeof pid - 1, 0);
    ::close(lock_fd_);
    lock_fd_ = -1;
    throw Error("output directory " + dir_ + " is in use by another hpdl run" +
                (n > 0 ? " (pid " + std::string(pid, static_cast<size_t>(n)) + ")" : "") +
                "; choose another run.name");
  }
  const std::string me = std::to_string(::getpid());
  if (::ftruncate(lock_fd_, 0) != 0 || ::pwrite(lock_fd_, me.data(), me.size(), 0) < 0) {
    throw Error("cannot write " + lock + ": " + std::strerror(errno));
  }
  if (holds_completed_run(dir_) && !overwrite) {
    throw Error("output directory " + dir_ + " already holds a completed run" +
                (resume ? ", nothing to resume" : "") +
                " (its manifest.json says so or cannot be read; use --overwrite or --set "
                "run.overwrite=true, or choose another run.name)");
  }
}

void RunDir::open() {
  std::error_code ec;
  if (overwrite_ && holds_completed_run(dir_)) {
    // Everything but the lock this run holds.
    for (const auto& entry : fs::directory_iterator(dir_, ec)) {
      if (entry.path().filename() == kLockName) continue;
      fs::remove_all(entry.path(), ec);
      if (ec)
        throw Error("cannot remove old run file " + entry.path().string() + ": " + ec.message());
    }
    if (ec) throw Error("cannot list old run " + dir_ + ": " + ec.message());
  }
  log_ = open_stream("log.txt", resume_ ? OutputMode::kAppend : OutputMode::kTruncate);
  metrics_ = open_stream("metrics.csv", OutputMode::kTruncate);
  // Written, not sparse: the blocks must be the file's to give back.
  const int fd = open_output(file(kReserveName), OutputMode::kFresh);
  try {
    write_all(fd, std::string(64 * 1024, '\0'), file(kReserveName));
  } catch (const Error&) {
    ::close(fd);
    ::unlink(file(kReserveName).c_str());
    throw;
  }
  ::close(fd);
  reserved_ = true;
}

void RunDir::free_reserve() {
  if (reserved_) ::unlink(file(kReserveName).c_str());
  reserved_ = false;
}

std::FILE* RunDir::open_stream(const std::string& name, OutputMode mode) const {
  const int fd = open_output(file(name), mode);
  std::FILE* f = ::fdopen(fd, mode == OutputMode::kAppend ? "a" : "w");
  if (!f) {
    ::close(fd);
    throw Error("cannot write " + file(name) + ": " + std::strerror(errno));
  }
  return f;
}

RunDir::~RunDir() {
  free_reserve();
  if (log_) std::fclose(log_);
  if (metrics_) std::fclose(metrics_);
  if (lock_fd_ >= 0) ::close(lock_fd_);
}

void RunDir::write_atomically(const std::string& name, const std::string& text) const {
  write_file_atomically(file(name), text);
}

void RunDir::put_lines(std::FILE* f, bool& cut, const std::string& text) {
  std::clearerr(f);
  std::fputs(((cut ? "\n" : "") + text).c_str(), f);
  cut = std::fflush(f) != 0 || std::ferror(f);
}

void RunDir::log(const std::string& line) {
  std::fputs((line + "\n").c_str(), stdout);
  std::fflush(stdout);
  put_lines(log_, log_cut_, line + "\n");
}

void RunDir::metrics_row(const std::string& header, const std::string& row) {
  put_lines(metrics_, metrics_cut_, (std::ftell(metrics_) == 0 ? header + "\n" : "") + row + "\n");
}

}  // namespace hpdl
