// The one wrapper around an MPI communicator that the rest of hpdl uses. Every call is
// checked; collectives used for errors let all ranks stop together with one message.
// Trainers take a Comm, so tests can run the same trainer on MPI_COMM_SELF and WORLD.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

namespace hpdl {

class Comm {
 public:
  explicit Comm(MPI_Comm comm);

  int rank() const { return rank_; }
  int size() const { return size_; }
  MPI_Comm raw() const { return comm_; }

  // In-place sum across ranks. Every rank calls it with the same n.
  void allreduce_sum(float* data, int64_t n) const;
  void allreduce_sum(double* data, int64_t n) const;
  void allreduce_sum(int64_t* data, int64_t n) const;
  double allreduce_max(double v) const;

  // Collective: every rank passes its local error text ("" if fine). If any rank failed,
  // every rank throws AgreedError with the message of the lowest failing rank.
  void agree(const std::string& local_error) const;

  // Collective: every rank's string, in rank order, on every rank.
  std::vector<std::string> allgather(const std::string& s) const;
  // Collective: root's string, on every rank (s is replaced on the others).
  void broadcast(std::string& s, int root) const;

  void barrier() const;

 private:
  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 1;
};

// Text of an MPI error code.
std::string mpi_error_string(int code);

}  // namespace hpdl

#define HPDL_CHECK_MPI(call)                                                            \
  do {                                                                                  \
    const int hpdl_rc_ = (call);                                                        \
    if (hpdl_rc_ != MPI_SUCCESS)                                                        \
      ::hpdl::fail_call(__FILE__, __LINE__, #call, ::hpdl::mpi_error_string(hpdl_rc_)); \
  } while (0)
