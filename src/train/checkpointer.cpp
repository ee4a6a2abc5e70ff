// The pipelined flag agreement and the timed write (see the header).
#include "hpdl/train/checkpointer.hpp"

#include <csignal>

#include "hpdl/core/error.hpp"
#include "hpdl/core/stop_signal.hpp"

namespace hpdl {

Checkpointer::Checkpointer(const CheckpointConfig& cfg, const Comm& comm, Watchdog& watchdog,
                           std::string path, Checkpoint identity)
    : cfg_(cfg),
      comm_(comm),
      watchdog_(watchdog),
      path_(std::move(path)),
      identity_(std::move(identity)),
      last_(std::chrono::steady_clock::now()) {}

Checkpointer::~Checkpointer() {
  // Only reached without finish() when an exception unwinds; the job is ending anyway.
  Comm::release(request_);
}

int Checkpointer::local_flags() {
  int flags = 0;
  if (cfg_.on_signal && hpdl::stop_signal() != 0)
    flags |= hpdl::stop_signal() == SIGUSR1 ? kUsr1 : kTerm;
  if (comm_.rank() == 0 && cfg_.every_s > 0) {
    const auto now = std::chrono::steady_clock::now();
    if (std::chrono::duration<double>(now - last_).count() >= cfg_.every_s) {
      flags |= kTimer;
      last_ = now;  // counted from the request, so one request gives one checkpoint
    }
  }
  return flags;
}

bool Checkpointer::due(int64_t global_step, bool agree) {
  int agreed = 0;
  if (comm_.size() == 1) {
    agreed = local_flags();
  } else if (agree) {
    if (request_ != MPI_REQUEST_NULL) {
      WatchdogScope guard(watchdog_, "checkpoint flag agreement", global_step);
      comm_.wait_all(1, &request_);
      agreed = recv_;
    }
    send_ = local_flags();
    comm_.start_allreduce_or(&send_, &recv_, &request_);
  }
  if (agreed & kTerm)
    stop_ = SIGTERM;
  else if (agreed & kUsr1)
    stop_ = SIGUSR1;
  const bool periodic = cfg_.every_steps > 0 && global_step % cfg_.every_steps == 0;
  return periodic || agreed != 0;
}

void Checkpointer::finish(int64_t global_step) {
  if (request_ == MPI_REQUEST_NULL) return;
  WatchdogScope guard(watchdog_, "checkpoint flag agreement", global_step);
  comm_.wait_all(1, &request_);
}

void Checkpointer::write(Checkpoint c) {
  if (comm_.rank() != 0) return;
  const auto t0 = std::chrono::steady_clock::now();
  c.model = identity_.model, c.mode = identity_.mode, c.optimizer = identity_.optimizer;
  c.ranks = identity_.ranks, c.servers = identity_.servers, c.batch = identity_.batch;
  c.seed = identity_.seed, c.config = identity_.config, c.plan = identity_.plan;
  if (identity_.extra.contains("virtual_shards"))
    c.extra["virtual_shards"] = identity_.extra["virtual_shards"];
  last_bytes_ = write_checkpoint(path_, c);
  last_write_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ++written_;
  if (on_written) on_written(c.global_step, last_write_s_, last_bytes_);
}

}  // namespace hpdl
