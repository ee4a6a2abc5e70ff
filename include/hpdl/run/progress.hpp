// The live progress line within an epoch, shown only when stdout is a terminal (rank 0),
// redrawn at most five times a second so it costs nothing measurable.
#pragma once
#include <chrono>
#include <cstdint>

namespace hpdl {

class Progress {
 public:
  explicit Progress(bool enabled);
  void update(int64_t epoch, int64_t step, int64_t steps, double mean_loss, double samples_per_s);
  // Parameter-server modes (server 0): pushes of the epoch instead of steps.
  void update_server(int64_t epoch, int64_t pushes, int64_t pushes_per_epoch, double staleness,
                     double samples_per_s);
  void clear();  // erase the live line before a plain line is printed

 private:
  // Draws "epoch E [bar] done/total  DETAIL" (throttled; the last of an epoch always drawn).
  void show(int64_t epoch, int64_t done, int64_t total, const char* detail);

  bool enabled_;
  bool shown_ = false;
  std::chrono::steady_clock::time_point last_{};
};

}  // namespace hpdl
