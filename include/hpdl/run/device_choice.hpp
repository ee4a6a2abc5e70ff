// Which device a rank of `train` or `eval` builds its model on: the one place that asks.
#pragma once
#include "hpdl/comm/comm.hpp"
#include "hpdl/comm/watchdog.hpp"
#include "hpdl/config/settings.hpp"

namespace hpdl {

// The rank's index among the ranks of its node when run.backend runs on a GPU (the CUDA
// backend then takes device choose_device(index, the node's GPUs)); 0 on the CPU. The GPU
// case is a blocking collective over all ranks (no MPI_Test to poll), bounded by the
// watchdog's thread: every rank calls it at the same point.
int node_device_rank(const RunConfig& run, const Comm& comm, Watchdog& watchdog);

}  // namespace hpdl
