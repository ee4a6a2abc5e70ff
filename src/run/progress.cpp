// Terminal progress line ("\r" redraw).
#include "hpdl/run/progress.hpp"

#include <unistd.h>

#include <cstdio>

namespace hpdl {

Progress::Progress(bool enabled) : enabled_(enabled && isatty(STDOUT_FILENO)) {}

void Progress::update(int64_t epoch, int64_t step, int64_t steps, double mean_loss,
                      double samples_per_s) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (step + 1 < steps && now - last_ < std::chrono::milliseconds(200)) return;
  last_ = now;
  constexpr int kWidth = 30;
  const int filled = static_cast<int>(kWidth * (step + 1) / steps);
  char bar[kWidth + 1];
  for (int i = 0; i < kWidth; ++i) bar[i] = i < filled ? '=' : (i == filled ? '>' : ' ');
  bar[kWidth] = 0;
  std::printf("\r  epoch %lld [%s] %lld/%lld  loss %.4f  %.0f samples/s\x1b[K", (long long)epoch,
              bar, (long long)(step + 1), (long long)steps, mean_loss, samples_per_s);
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
