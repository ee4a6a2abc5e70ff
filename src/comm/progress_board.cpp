// Per-rank progress records in one RMA window; see progress_board.hpp for the protocol.
#include "hpdl/comm/progress_board.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "hpdl/comm/comm.hpp"
#include "hpdl/core/error.hpp"
#include "hpdl/core/timeline.hpp"

namespace hpdl {
namespace {
std::string op_text(const ProgressBoard::Record& r) {
  return std::string(r.op, strnlen(r.op, sizeof(r.op)));
}

std::string seconds(double s) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f", s);
  return text;
}

std::string where(const ProgressBoard::Record& r) {
  if (r.op[0] == '\0') return "it has not reached its first wait";
  if (r.waiting) return "it waits in " + op_text(r) + " at step " + std::to_string(r.step);
  return "last finished: " + op_text(r) + " at step " + std::to_string(r.step);
}
}  // namespace

ProgressBoard::ProgressBoard(MPI_Comm comm) : comm_(comm) {
  HPDL_CHECK_MPI(MPI_Comm_rank(comm_, &rank_));
  HPDL_CHECK_MPI(MPI_Comm_size(comm_, &size_));
  void* base = nullptr;
  HPDL_CHECK_MPI(MPI_Win_allocate(sizeof(Record), 1, MPI_INFO_NULL, comm_, &base, &win_));
  HPDL_CHECK_MPI(MPI_Win_set_errhandler(win_, MPI_ERRORS_RETURN));
  mine_ = new (base) Record{};
  HPDL_CHECK_MPI(MPI_Win_lock_all(MPI_MODE_NOCHECK, win_));
}

void ProgressBoard::close() {
  if (win_ == MPI_WIN_NULL) return;
  MPI_Win win = win_;
  win_ = MPI_WIN_NULL;
  mine_ = nullptr;
  HPDL_CHECK_MPI(MPI_Win_unlock_all(win));
  HPDL_CHECK_MPI(MPI_Win_free(&win));
}

// Freeing is collective and would wait for every rank: a board that was not closed (an
// error unwinds) is left to MPI_Finalize or the job's abort.
ProgressBoard::~ProgressBoard() = default;

void ProgressBoard::publish(const char* op, int64_t step, bool waiting) {
  if (!mine_) return;
  // Plain stores: a remote read may see a half-written record, which only blurs a message.
  mine_->waiting = 0;
  std::strncpy(mine_->op, op, sizeof(mine_->op) - 1);
  mine_->step = step;
  mine_->waiting = waiting ? 1 : 0;
}

void ProgressBoard::beat() {
  if (mine_) __atomic_fetch_add(&mine_->heartbeat, 1, __ATOMIC_RELAXED);
}

std::vector<bool> ProgressBoard::read_all(std::vector<Record>& out, double bound_s) {
  out.assign(size_, Record{});
  std::vector<bool> answered(size_);
  std::vector<MPI_Request> reqs(size_, MPI_REQUEST_NULL);
  for (int r = 0; r < size_; ++r) {
    answered[r] = r == rank_;
    if (r == rank_) continue;
    if (MPI_Rget(&out[r], sizeof(Record), MPI_BYTE, r, 0, sizeof(Record), MPI_BYTE, win_,
                 &reqs[r]) != MPI_SUCCESS)
      reqs[r] = MPI_REQUEST_NULL;  // counts as no answer
  }
  const double deadline = steady_seconds() + bound_s;
  int pending = size_ - 1;
  while (pending > 0 && steady_seconds() < deadline) {
    pending = 0;
    for (int r = 0; r < size_; ++r) {
      if (r == rank_ || answered[r] || reqs[r] == MPI_REQUEST_NULL) continue;
      int done = 0;
      if (MPI_Test(&reqs[r], &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
        reqs[r] = MPI_REQUEST_NULL;
        continue;
      }
      if (done) {
        answered[r] = true;
        out[r].op[sizeof(out[r].op) - 1] = '\0';
      } else {
        ++pending;
      }
    }
  }
  // Requests still pending are left to the process's end: this rank is about to exit.
  return answered;
}

ProgressBoard::Verdict ProgressBoard::name_late(const char* op, int64_t step, double read_bound_s) {
  if (win_ == MPI_WIN_NULL || size_ < 2) return {};
  std::vector<Record> first, second;
  const std::vector<bool> ok1 = read_all(first, read_bound_s);
  // Long enough for two heartbeats of a running rank (the watchdog beats every 0.5 s).
  const double gap_s = 1.2;
  std::this_thread::sleep_for(std::chrono::duration<double>(gap_s));
  const std::vector<bool> ok2 = read_all(second, read_bound_s);

  // Culprits: ranks that are stopped, or run but are in no wait. A rank waiting elsewhere
  // (another operation or step) is blocked too, by a culprit; it is named only when there
  // is no culprit, as that means the ranks wait in different places.
  Verdict v;
  std::vector<std::string> culprits, elsewhere;
  for (int r = 0; r < size_; ++r) {
    if (r == rank_) continue;
    const std::string who = "rank " + std::to_string(r);
    if (!ok1[r] || !ok2[r]) {
      culprits.push_back(who + " does not answer (its record could not be read within " +
                         seconds(read_bound_s) + " s: stopped, hung, or busy outside MPI)");
    } else if (first[r].heartbeat == second[r].heartbeat) {
      culprits.push_back(who + " is stopped or hung (no heartbeat for " + seconds(gap_s) + " s; " +
                         where(second[r]) + ")");
    } else if (!second[r].waiting) {
      culprits.push_back(who + " is running but has not arrived (" + where(second[r]) + ")");
    } else {
      if (r < rank_) v.reporter = false;  // a lower waiting rank reports
      if (second[r].step != step || op_text(second[r]) != op)
        elsewhere.push_back(who + " waits in " + op_text(second[r]) + " at step " +
                            std::to_string(second[r].step));
    }
  }
  const std::vector<std::string>& named = culprits.empty() ? elsewhere : culprits;
  if (named.empty()) {
    v.text = "every other rank waits in it too; MPI did not complete it";
    return v;
  }
  for (size_t i = 0; i < named.size(); ++i) v.text += (i ? "; " : "") + named[i];
  if (culprits.empty()) v.text = "no rank is stopped, but they wait in different places: " + v.text;
  return v;
}

}  // namespace hpdl
