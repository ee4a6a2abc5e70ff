// Checked MPI collectives. Errors are returned (MPI_ERRORS_RETURN) so a failure becomes an
// hpdl::Error naming the call instead of OpenMPI's default abort without context.
#include "hpdl/dist/comm.hpp"

#include <algorithm>
#include <climits>

#include "hpdl/core/error.hpp"

namespace hpdl {

std::string mpi_error_string(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(text, len);
}

Comm::Comm(MPI_Comm comm) : comm_(comm) {
  HPDL_CHECK_MPI(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  HPDL_CHECK_MPI(MPI_Comm_rank(comm_, &rank_));
  HPDL_CHECK_MPI(MPI_Comm_size(comm_, &size_));
}

// MPI counts are int; split large buffers so a >2^31 element model still reduces.
template <typename T>
static void allreduce_chunked(T* data, int64_t n, MPI_Datatype type, MPI_Comm comm) {
  constexpr int64_t kChunk = INT_MAX / 2;
  for (int64_t off = 0; off < n; off += kChunk) {
    const int count = static_cast<int>(std::min(kChunk, n - off));
    HPDL_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, data + off, count, type, MPI_SUM, comm));
  }
}

void Comm::allreduce_sum(float* data, int64_t n) const {
  allreduce_chunked(data, n, MPI_FLOAT, comm_);
}
void Comm::allreduce_sum(double* data, int64_t n) const {
  allreduce_chunked(data, n, MPI_DOUBLE, comm_);
}
void Comm::allreduce_sum(int64_t* data, int64_t n) const {
  allreduce_chunked(data, n, MPI_INT64_T, comm_);
}

double Comm::allreduce_max(double v) const {
  HPDL_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_MAX, comm_));
  return v;
}

void Comm::agree(const std::string& local_error) const {
  int first_bad = local_error.empty() ? INT_MAX : rank_;
  HPDL_CHECK_MPI(MPI_Allreduce(MPI_IN_PLACE, &first_bad, 1, MPI_INT, MPI_MIN, comm_));
  if (first_bad == INT_MAX) return;
  int len = first_bad == rank_ ? static_cast<int>(local_error.size()) : 0;
  HPDL_CHECK_MPI(MPI_Bcast(&len, 1, MPI_INT, first_bad, comm_));
  std::string msg = first_bad == rank_ ? local_error : std::string(len, ' ');
  HPDL_CHECK_MPI(MPI_Bcast(msg.data(), len, MPI_CHAR, first_bad, comm_));
  throw AgreedError(msg);
}

std::vector<std::string> Comm::allgather(const std::string& s) const {
  int len = static_cast<int>(s.size());
  std::vector<int> lens(size_), offs(size_);
  HPDL_CHECK_MPI(MPI_Allgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, comm_));
  int total = 0;
  for (int r = 0; r < size_; ++r) offs[r] = total, total += lens[r];
  std::string all(total, ' ');
  HPDL_CHECK_MPI(MPI_Allgatherv(s.data(), len, MPI_CHAR, all.data(), lens.data(), offs.data(),
                                MPI_CHAR, comm_));
  std::vector<std::string> out(size_);
  for (int r = 0; r < size_; ++r) out[r] = all.substr(offs[r], lens[r]);
  return out;
}

void Comm::broadcast(std::string& s, int root) const {
  int64_t len = static_cast<int64_t>(s.size());
  HPDL_CHECK_MPI(MPI_Bcast(&len, 1, MPI_INT64_T, root, comm_));
  if (rank_ != root) s.assign(static_cast<size_t>(len), ' ');
  // Counts over INT_MAX go in pieces.
  constexpr int64_t kPiece = int64_t{1} << 30;
  for (int64_t off = 0; off < len; off += kPiece) {
    const int n = static_cast<int>(std::min(kPiece, len - off));
    HPDL_CHECK_MPI(MPI_Bcast(s.data() + off, n, MPI_CHAR, root, comm_));
  }
}

void Comm::barrier() const { HPDL_CHECK_MPI(MPI_Barrier(comm_)); }

}  // namespace hpdl
