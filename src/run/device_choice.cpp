#include "hpdl/run/device_choice.hpp"

namespace hpdl {

int node_device_rank(const RunConfig& run, const Comm& comm, Watchdog& watchdog) {
  if (!run.on_gpu()) return 0;
  WatchdogScope guard(watchdog, "node-local rank (GPU choice)", 0);
  return comm.node_rank();
}

}  // namespace hpdl
