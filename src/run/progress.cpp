// Terminal progress line ("\r" redraw).
#include "hpdl/run/progress.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>

namespace hpdl {
namespace {

// mpirun gives each rank a pseudo-terminal as stdout even when mpirun's own output goes
// to a pipe or file, so a rank's isatty() alone is not enough: follow the launcher's
// stdout (the parent's fd 1) when it can be seen.
bool stdout_is_terminal() {
  if (!isatty(STDOUT_FILENO)) return false;
  const std::string parent_out = "/proc/" + std::to_string(getppid()) + "/fd/1";
  char target[256];
  const ssize_t n = readlink(parent_out.c_str(), target, sizeof target - 1);
  if (n <= 0) return true;
  const std::string t(target, static_cast<size_t>(n));
  return t.rfind("/dev/pts/", 0) == 0 || t.rfind("/dev/tty", 0) == 0;
}

}  // namespace

Progress::Progress(bool enabled) : enabled_(enabled && stdout_is_terminal()) {}

void Progress::update(int64_t epoch, int64_t step, int64_t steps, double mean_loss,
                      double samples_per_s) {
  if (!enabled_) return;
  char detail[96];
  std::snprintf(detail, sizeof detail, "loss %.4f  %.0f samples/s", mean_loss, samples_per_s);
  show(epoch, step + 1, steps, detail);
}

void Progress::update_server(int64_t epoch, int64_t pushes, int64_t pushes_per_epoch,
                             double staleness, double samples_per_s) {
  if (!enabled_) return;
  char detail[128];
  std::snprintf(detail, sizeof detail, "pushes  staleness %.2f  ~%.0f samples/s", staleness,
                samples_per_s);
  show(epoch, pushes, pushes_per_epoch, detail);
}

void Progress::show(int64_t epoch, int64_t done, int64_t total, const char* detail) {
  const auto now = std::chrono::steady_clock::now();
  if (done < total && now - last_ < std::chrono::milliseconds(200)) return;
  last_ = now;
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(kWidth * std::min(done, total) / std::max<int64_t>(total, 1));
  char bar[kWidth + 1];
  for (int i = 0; i < kWidth; ++i) bar[i] = i < filled ? '=' : (i == filled ? '>' : ' ');
  bar[kWidth] = 0;
  std::printf("\r  epoch %lld [%s] %lld/%lld  %s\x1b[K", (long long)epoch, bar, (long long)done,
              (long long)total, detail);
  std::fflush(stdout);
  shown_ = true;
}

void Progress::clear() {
  if (!shown_) return;
  std::printf("\r\x1b[K");
  std::fflush(stdout);
  shown_ = false;
}

}  // namespace hpdl
