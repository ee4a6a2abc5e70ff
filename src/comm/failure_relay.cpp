// FailureRelay (see the header). Three small messages on the relay's own communicator: a
// failing rank's error to rank 0, rank 0's "the job ends" to every rank, and each rank's
// acknowledgement, after which rank 0 exits too. Every call here is best effort: its
// errors are ignored (MPI_ERRORS_RETURN), the bounds end every loop, and the process exits
// without MPI_Finalize, whose collective teardown a failed peer would never join.
#include "hpdl/comm/failure_relay.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "hpdl/comm/comm.hpp"
#include "hpdl/core/error.hpp"
#include "hpdl/core/timeline.hpp"

namespace hpdl {
namespace {

constexpr int kFailTag = 1;  // a failing rank's error line, to rank 0
constexpr int kEndTag = 2;   // rank 0 to every rank: the job ends
constexpr int kAckTag = 3;   // every rank to rank 0: ending
constexpr int kMaxLine = 4000;
// How long rank 0 waits for the ranks' acknowledgements before it exits: the ranks in a
// polled wait answer within milliseconds; one that cannot poll is ended by the launcher.
constexpr double kAckBound_s = 3.0;
// Once every rank acknowledged, rank 0 waits this long before it exits, so that their own
// exit 1 reaches the launcher first: mpirun kills the ranks still running once one exits
// non-zero, and a rank that was about to exit by itself would be reported as killed.
constexpr double kExitGrace_s = 0.25;
// The least a failing rank waits for rank 0, whatever run.watchdog_s says.
constexpr double kMinFailBound_s = 5.0;

void pause_briefly() { std::this_thread::sleep_for(std::chrono::microseconds(200)); }

[[noreturn]] void exit_now() {
  std::fflush(stdout);
  std::fflush(stderr);
  std::_Exit(1);
}

}  // namespace

FailureRelay::FailureRelay(MPI_Comm world) {
  if (MPI_Comm_dup(world, &comm_) != MPI_SUCCESS) throw Error("MPI_Comm_dup failed");
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

FailureRelay::~FailureRelay() {
  if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
}

void FailureRelay::poll() {
  if (size_ == 1 || ending_) return;
  int flag = 0;
  MPI_Status st;
  if (rank_ != 0) {
    if (MPI_Iprobe(0, kEndTag, comm_, &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS && flag) leave();
    return;
  }
  if (MPI_Iprobe(MPI_ANY_SOURCE, kFailTag, comm_, &flag, &st) != MPI_SUCCESS || !flag) return;
  int n = 0;
  MPI_Get_count(&st, MPI_CHAR, &n);
  std::string line(static_cast<size_t>(std::clamp(n, 0, kMaxLine)), '\0');
  MPI_Recv(line.data(), static_cast<int>(line.size()), MPI_CHAR, st.MPI_SOURCE, kFailTag, comm_,
           MPI_STATUS_IGNORE);
  end_job(line);
}

void FailureRelay::fail(const std::string& error, double bound_s) {
  std::string line = error;
  if (size_ > 1 && error.rfind("rank ", 0) != 0)
    line = "rank " + std::to_string(rank_) + ": " + error;
  if (line.size() > static_cast<size_t>(kMaxLine)) line.resize(kMaxLine);
  if (rank_ == 0 || size_ == 1) end_job(line);
  MPI_Request sent = MPI_REQUEST_NULL;
  MPI_Isend(line.data(), static_cast<int>(line.size()), MPI_CHAR, 0, kFailTag, comm_, &sent);
  const double bound = std::max(bound_s, kMinFailBound_s);
  const double deadline = steady_seconds() + bound;
  while (steady_seconds() < deadline) {
    int flag = 0;
    if (MPI_Iprobe(0, kEndTag, comm_, &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS && flag) leave();
    if (sent != MPI_REQUEST_NULL) MPI_Test(&sent, &flag, MPI_STATUS_IGNORE);
    pause_briefly();
  }
  // Rank 0 did not take the error: stopped, gone, or still busy. This rank ends the job.
  std::fprintf(stderr, "hpdl: error: %s (rank 0 did not answer within %.0f s: job aborted)\n",
               line.c_str(), bound);
  std::fflush(stderr);
  MpiSession::abort(1);
}

void FailureRelay::end_job(const std::string& line) {
  ending_ = true;
  std::fprintf(stderr, "hpdl: error: %s\n", line.c_str());
  std::fflush(stderr);
  if (hook_) try {
      hook_(line);
    } catch (...) {  // the line above is what counts; the files are a courtesy
    }
  std::fflush(stdout);
  char end = 1;
  std::vector<MPI_Request> told(static_cast<size_t>(size_), MPI_REQUEST_NULL);
  for (int r = 1; r < size_; ++r) MPI_Isend(&end, 1, MPI_CHAR, r, kEndTag, comm_, &told[r]);
  int acks = 0;
  const double deadline = steady_seconds() + kAckBound_s;
  while (acks < size_ - 1 && steady_seconds() < deadline) {
    int flag = 0;
    MPI_Status st;
    if (MPI_Iprobe(MPI_ANY_SOURCE, kAckTag, comm_, &flag, &st) == MPI_SUCCESS && flag) {
      char ack = 0;
      MPI_Recv(&ack, 1, MPI_CHAR, st.MPI_SOURCE, kAckTag, comm_, MPI_STATUS_IGNORE);
      ++acks;
      continue;
    }
    MPI_Testall(size_, told.data(), &flag, MPI_STATUSES_IGNORE);
    pause_briefly();
  }
  if (acks == size_ - 1) std::this_thread::sleep_for(std::chrono::duration<double>(kExitGrace_s));
  exit_now();
}

void FailureRelay::leave() {
  char end = 0;
  MPI_Recv(&end, 1, MPI_CHAR, 0, kEndTag, comm_, MPI_STATUS_IGNORE);
  MPI_Send(&end, 1, MPI_CHAR, 0, kAckTag, comm_);  // one byte: sent eagerly
  exit_now();
}

}  // namespace hpdl
