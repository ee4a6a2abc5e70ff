// The one wrapper around an MPI communicator that the rest of hpdl uses. Every call is
// checked; collectives used for errors let all ranks stop together with one message.
// Trainers take a Comm, so tests can run the same trainer on MPI_COMM_SELF and WORLD.
// Every wait polls (MPI_Test) and, when a watchdog bounds this communicator, lets it end a
// wait that outlasts its limit, naming the late ranks. Counts over INT_MAX go in pieces of
// 2^30 elements, one rule for every call.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "hpdl/core/error.hpp"

namespace hpdl {

class FailureRelay;
class Watchdog;
enum class HalfFormat;

// How a wait idles between its tests. Spinning (MPI_Test back to back) answers soonest and
// keeps a core busy; OpenMPI has no progress thread, so a collective advances only inside
// those tests. Sleeping, after `spin_s` of spinning, pauses between tests (from 20 us,
// doubling to `max_pause_s`): the waiting rank leaves its CPU to others, which on a host
// with a CPU quota means the quota is not spent on waiting, at the cost of answering up to
// one pause late.
struct IdlePolicy {
  bool sleep = false;
  double spin_s = 100e-6, max_pause_s = 500e-6;
};

// One wait under a policy: pause() after each test that found the wait unfinished.
class IdleWait {
 public:
  explicit IdleWait(const IdlePolicy& p) : p_(p) {}
  void pause();

 private:
  const IdlePolicy& p_;
  double t0_ = -1, pause_s_ = 20e-6;
};

class Comm {
 public:
  explicit Comm(MPI_Comm comm);

  int rank() const { return rank_; }
  int size() const { return size_; }
  MPI_Comm raw() const { return comm_; }
  // Collective: this rank's index among the ranks of this communicator that share its
  // node (MPI_Comm_split_type, shared memory): one GPU per rank picks GPU node_rank().
  int node_rank() const { return node_rank_and_size().first; }
  // Collective: how many ranks of this communicator share this rank's node.
  int node_size() const { return node_rank_and_size().second; }
  // Collective among the ranks that share this rank's node (bounded like every wait): each
  // byte replaced by the bitwise or of it over those ranks.
  void node_or(std::vector<uint8_t>& bytes) const;

  // The job's agreed ending when one rank fails alone (set by run_under_mpi; may be null).
  void relay_failures_through(FailureRelay* relay) { relay_ = relay; }
  FailureRelay* failure_relay() const { return relay_; }
  // Bounds this communicator's waits by w (Watchdog::poll), which also polls this
  // communicator's failure relay (every wait then ends when another rank failed alone);
  // nullptr: unbounded.
  void bound_waits_by(Watchdog* w);
  // How this communicator's waits idle (default: spinning).
  void idle_by(const IdlePolicy& p) { idle_ = p; }
  const IdlePolicy& idle_policy() const { return idle_; }
  // Completes the requests (MPI_REQUEST_NULL allowed), polling.
  void wait_all(int n, MPI_Request* requests) const;
  // Completes some of the requests: returns how many (their indices into `indices`, which
  // holds n), or 0 when none is active.
  int wait_some(int n, MPI_Request* requests, int* indices) const;
  // Without waiting (drives progress): whether all completed; how many completed (their
  // indices into `indices`, which holds n).
  bool test_all(int n, MPI_Request* requests) const;
  int test_some(int n, MPI_Request* requests, int* indices) const;
  // Lets a request complete on its own (an error path that will not wait for it).
  static void release(MPI_Request& request);

  // Started here, completed by a wait or test: in-place sum of n <= INT_MAX floats; the
  // bitwise or of one int.
  void start_allreduce_sum(float* data, int64_t n, MPI_Request* request) const;
  // The same over n 16-bit floats of `format` (core/half.hpp): each partial sum is taken in
  // f32 and rounded back to 16 bits.
  void start_allreduce_sum(uint16_t* data, int64_t n, HalfFormat format,
                           MPI_Request* request) const;
  void start_allreduce_or(const int* send, int* recv, MPI_Request* request) const;

  // In-place sum across ranks. Every rank calls it with the same n.
  void allreduce_sum(float* data, int64_t n) const;
  void allreduce_sum(double* data, int64_t n) const;
  void allreduce_sum(int64_t* data, int64_t n) const;
  double allreduce_max(double v) const;
  // Collective: the sum of `shards` vectors of n floats, held shards / size() per rank in
  // rank order (this rank's in `mine`, one after another), each element summed over shards
  // 0, 1, ..., shards - 1 in that order: the same bits for every rank count that divides
  // `shards`. Every rank gets it in `sum`. (Rank q sums the q-th slice of the elements, then
  // every rank gathers the slices: one all-to-all and one all-gather.)
  void ordered_sum(const float* mine, int64_t n, int shards, float* sum) const;

  // Collective: every rank passes its local error text ("" if fine). If any rank failed,
  // every rank throws AgreedError with the message of the lowest failing rank.
  void agree(const std::string& local_error) const;

  // Collective: every rank's string, in rank order, on every rank.
  std::vector<std::string> allgather(const std::string& s) const;
  // Collective: root's string, on every rank (s is replaced on the others).
  void broadcast(std::string& s, int root) const;
  // Collective: root's n values, on every rank.
  void broadcast(float* data, int64_t n, int root) const;
  void broadcast(double* data, int64_t n, int root) const;
  void broadcast(int64_t* data, int64_t n, int root) const;
  void broadcast(int* data, int64_t n, int root) const;
  // Collective: every rank's string, in rank order, on root (empty elsewhere).
  std::vector<std::string> gather(const std::string& s, int root) const;

  // Point to point, tags chosen by the caller.
  void send(const float* data, int64_t n, int dest, int tag) const;
  void send(const int64_t* data, int64_t n, int dest, int tag) const;
  void send(const std::string& s, int dest, int tag) const;
  void recv(float* data, int64_t n, int source, int tag) const;
  void recv(int64_t* data, int64_t n, int source, int tag) const;
  std::string recv_string(int source, int tag) const;

  void barrier() const;

  // Collective over the ranks that stay (MPI_Comm_create_group): from now on this
  // communicator leaves out `ranks` (numbered as they are now; they may be dead). The rest
  // keep their order, renumbered from 0. The old communicator is not freed: that would wait
  // for the ranks left out.
  void leave_out(const std::vector<int>& ranks);
  // Whether leave_out() ever left a rank out: MPI's collective teardown (window frees,
  // MPI_Finalize) would then wait for it, so the process ends without it.
  bool lost_ranks() const { return lost_ranks_; }

 private:
  std::pair<int, int> node_rank_and_size() const;
  // Collective: the ranks of this communicator that share this rank's node (the caller frees it).
  MPI_Comm node_comm() const;
  template <typename T>
  void broadcast_values(T* data, int64_t n, int root) const;
  template <typename T>
  void send_values(const T* data, int64_t n, int dest, int tag) const;
  template <typename T>
  void recv_values(T* data, int64_t n, int source, int tag) const;
  void wait(MPI_Request& r) const { wait_all(1, &r); }

  MPI_Comm comm_;
  Watchdog* watchdog_ = nullptr;
  FailureRelay* relay_ = nullptr;
  IdlePolicy idle_;
  int rank_ = 0;
  int size_ = 1;
  bool lost_ranks_ = false;
};

// Text of an MPI error code.
std::string mpi_error_string(int code);

// MPI in this process, from MPI_Init_thread (FUNNELED: only the main thread calls MPI) to
// finalize(), or abort() of the whole job when one rank cannot go on alone.
class MpiSession {
 public:
  MpiSession(int* argc, char*** argv);  // throws Error if MPI cannot start
  ~MpiSession();                        // finalizes if finalize() was not called
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  int world_rank() const { return rank_; }
  void finalize();
  // The job lost ranks (Comm::lost_ranks): MPI_Finalize would wait for them, so this process
  // ends without it (mpirun --enable-recovery lets the others run on and exit 0).
  void end_without_finalize() { done_ = true; }
  [[noreturn]] static void abort(int code);
  // The MPI library's name and version, first line.
  static std::string library_version();

 private:
  int rank_ = 0;
  bool done_ = false;
};

}  // namespace hpdl

#define HPDL_CHECK_MPI(call)                                                           \
  do {                                                                                 \
    const int hpdl_rc_ = (call);                                                       \
    if (hpdl_rc_ != MPI_SUCCESS)                                                       \
      ::hpdl::fail_call(::hpdl::call_name(#call), ::hpdl::mpi_error_string(hpdl_rc_)); \
  } while (0)
