// Checked MPI collectives. Errors are returned (MPI_ERRORS_RETURN) so a failure becomes an
// hpdl::Error naming the call instead of OpenMPI's default abort without context.
#include "hpdl/comm/comm.hpp"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "hpdl/comm/start_bound.hpp"
#include "hpdl/comm/watchdog.hpp"
#include "hpdl/core/error.hpp"
#include "hpdl/core/half.hpp"

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

void Comm::leave_out(const std::vector<int>& ranks) {
  if (ranks.empty()) return;
  constexpr int kTag = 0x4c4f;  // "LO": the ranks that stay agree on a new communicator
  MPI_Group all = MPI_GROUP_NULL, kept = MPI_GROUP_NULL;
  HPDL_CHECK_MPI(MPI_Comm_group(comm_, &all));
  HPDL_CHECK_MPI(MPI_Group_excl(all, static_cast<int>(ranks.size()), ranks.data(), &kept));
  MPI_Comm next = MPI_COMM_NULL;
  HPDL_CHECK_MPI(MPI_Comm_create_group(comm_, kept, kTag, &next));
  MPI_Group_free(&kept);
  MPI_Group_free(&all);
  HPDL_REQUIRE(next != MPI_COMM_NULL, "this rank was left out of its own communicator");
  comm_ = next;
  HPDL_CHECK_MPI(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  HPDL_CHECK_MPI(MPI_Comm_rank(comm_, &rank_));
  HPDL_CHECK_MPI(MPI_Comm_size(comm_, &size_));
  lost_ranks_ = true;
}

namespace {
// MPI counts are int: every call moves at most this many elements at once.
constexpr int64_t kPiece = int64_t{1} << 30;

template <typename T>
MPI_Datatype mpi_type();
template <>
MPI_Datatype mpi_type<float>() {
  return MPI_FLOAT;
}
template <>
MPI_Datatype mpi_type<double>() {
  return MPI_DOUBLE;
}
template <>
MPI_Datatype mpi_type<int64_t>() {
  return MPI_INT64_T;
}
template <>
MPI_Datatype mpi_type<int>() {
  return MPI_INT;
}
template <>
MPI_Datatype mpi_type<char>() {
  return MPI_CHAR;
}

int piece(int64_t n, int64_t off) { return static_cast<int>(std::min(kPiece, n - off)); }
}  // namespace

MPI_Comm Comm::node_comm() const {
  MPI_Comm node = MPI_COMM_NULL;
  HPDL_CHECK_MPI(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node));
  return node;
}

std::pair<int, int> Comm::node_rank_and_size() const {
  MPI_Comm node = node_comm();
  int r = 0, n = 0;
  int rc = MPI_Comm_rank(node, &r);
  if (rc == MPI_SUCCESS) rc = MPI_Comm_size(node, &n);
  MPI_Comm_free(&node);
  HPDL_CHECK_MPI(rc);
  return {r, n};
}

void Comm::node_or(std::vector<uint8_t>& bytes) const {
  HPDL_REQUIRE(bytes.size() <= size_t(INT_MAX), "a node-wide or of more than INT_MAX bytes");
  MPI_Comm node = node_comm();
  MPI_Request request = MPI_REQUEST_NULL;
  const int rc = MPI_Iallreduce(MPI_IN_PLACE, bytes.data(), int(bytes.size()), MPI_BYTE, MPI_BOR,
                                node, &request);
  if (rc == MPI_SUCCESS) wait_all(1, &request);
  MPI_Comm_free(&node);
  HPDL_CHECK_MPI(rc);
}

void Comm::bound_waits_by(Watchdog* w) {
  watchdog_ = w;
  if (w) w->relay_failures(relay_);
}

void IdleWait::pause() {
  if (!p_.sleep) return;
  const double now = MPI_Wtime();
  if (t0_ < 0) t0_ = now;
  if (now - t0_ < p_.spin_s) return;
  const auto ns = static_cast<long>(pause_s_ * 1e9);
  const timespec t{ns / 1000000000, ns % 1000000000};
  nanosleep(&t, nullptr);
  pause_s_ = std::min(2 * pause_s_, p_.max_pause_s);
}

void Comm::wait_all(int n, MPI_Request* requests) const {
  IdleWait idle(idle_);
  while (true) {
    int done = 0;
    HPDL_CHECK_MPI(MPI_Testall(n, requests, &done, MPI_STATUSES_IGNORE));
    if (done) return;
    if (watchdog_) watchdog_->poll();
    idle.pause();
  }
}

int Comm::wait_some(int n, MPI_Request* requests, int* indices) const {
  IdleWait idle(idle_);
  while (true) {
    int count = 0;
    HPDL_CHECK_MPI(MPI_Testsome(n, requests, &count, indices, MPI_STATUSES_IGNORE));
    if (count == MPI_UNDEFINED) return 0;
    if (count > 0) return count;
    if (watchdog_) watchdog_->poll();
    idle.pause();
  }
}

bool Comm::test_all(int n, MPI_Request* requests) const {
  int done = 0;
  HPDL_CHECK_MPI(MPI_Testall(n, requests, &done, MPI_STATUSES_IGNORE));
  return done != 0;
}

int Comm::test_some(int n, MPI_Request* requests, int* indices) const {
  int count = 0;
  HPDL_CHECK_MPI(MPI_Testsome(n, requests, &count, indices, MPI_STATUSES_IGNORE));
  return count == MPI_UNDEFINED ? 0 : count;
}

void Comm::release(MPI_Request& request) {
  if (request != MPI_REQUEST_NULL) MPI_Request_free(&request);
}

void Comm::start_allreduce_sum(float* data, int64_t n, MPI_Request* request) const {
  HPDL_REQUIRE(n <= INT_MAX, "one non-blocking allreduce of more than 2^31 floats");
  HPDL_CHECK_MPI(
      MPI_Iallreduce(MPI_IN_PLACE, data, static_cast<int>(n), MPI_FLOAT, MPI_SUM, comm_, request));
}

namespace {
// MPI has no 16-bit float type or sum: a user-defined, commutative sum over MPI_UINT16_T
// values, each pair added in f32 and rounded back (ties to even). Addition is commutative
// bit for bit, so every rank ends with the same sums.
template <HalfFormat F>
void sum_halves(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = to_half(F, from_half(F, a[i]) + from_half(F, b[i]));
}

MPI_Op half_sum(HalfFormat f) {
  static MPI_Op ops[2] = {MPI_OP_NULL, MPI_OP_NULL};  // created once, after MPI_Init
  MPI_Op& op = ops[f == HalfFormat::kBf16 ? 0 : 1];
  if (op == MPI_OP_NULL) {
    HPDL_CHECK_MPI(MPI_Op_create(
        f == HalfFormat::kBf16 ? &sum_halves<HalfFormat::kBf16> : &sum_halves<HalfFormat::kFp16>, 1,
        &op));
  }
  return op;
}
}  // namespace

void Comm::start_allreduce_sum(uint16_t* data, int64_t n, HalfFormat format,
                               MPI_Request* request) const {
  HPDL_REQUIRE(n <= INT_MAX, "one non-blocking allreduce of more than 2^31 values");
  HPDL_CHECK_MPI(MPI_Iallreduce(MPI_IN_PLACE, data, static_cast<int>(n), MPI_UINT16_T,
                                half_sum(format), comm_, request));
}

void Comm::start_allreduce_or(const int* send, int* recv, MPI_Request* request) const {
  HPDL_CHECK_MPI(MPI_Iallreduce(send, recv, 1, MPI_INT, MPI_BOR, comm_, request));
}

template <typename T>
static void allreduce_pieces(const Comm& c, T* data, int64_t n, MPI_Op op) {
  for (int64_t off = 0; off < n; off += kPiece) {
    MPI_Request r;
    HPDL_CHECK_MPI(
        MPI_Iallreduce(MPI_IN_PLACE, data + off, piece(n, off), mpi_type<T>(), op, c.raw(), &r));
    c.wait_all(1, &r);
  }
}

void Comm::allreduce_sum(float* data, int64_t n) const {
  allreduce_pieces(*this, data, n, MPI_SUM);
}
void Comm::allreduce_sum(double* data, int64_t n) const {
  allreduce_pieces(*this, data, n, MPI_SUM);
}
void Comm::allreduce_sum(int64_t* data, int64_t n) const {
  allreduce_pieces(*this, data, n, MPI_SUM);
}

double Comm::allreduce_max(double v) const {
  allreduce_pieces(*this, &v, 1, MPI_MAX);
  return v;
}

void Comm::agree(const std::string& local_error) const {
  int first_bad = local_error.empty() ? INT_MAX : rank_;
  allreduce_pieces(*this, &first_bad, 1, MPI_MIN);
  if (first_bad == INT_MAX) return;
  std::string msg = first_bad == rank_ ? local_error : std::string();
  broadcast(msg, first_bad);
  throw AgreedError(msg);
}

std::vector<std::string> Comm::allgather(const std::string& s) const {
  int len = static_cast<int>(s.size());
  std::vector<int> lens(size_), offs(size_);
  MPI_Request r;
  HPDL_CHECK_MPI(MPI_Iallgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, comm_, &r));
  wait(r);
  int total = 0;
  for (int k = 0; k < size_; ++k) offs[k] = total, total += lens[k];
  std::string all(total, ' ');
  HPDL_CHECK_MPI(MPI_Iallgatherv(s.data(), len, MPI_CHAR, all.data(), lens.data(), offs.data(),
                                 MPI_CHAR, comm_, &r));
  wait(r);
  std::vector<std::string> out(size_);
  for (int k = 0; k < size_; ++k) out[k] = all.substr(offs[k], lens[k]);
  return out;
}

std::vector<std::string> Comm::gather(const std::string& s, int root) const {
  int len = static_cast<int>(s.size());
  std::vector<int> lens(size_), offs(size_);
  MPI_Request r;
  HPDL_CHECK_MPI(MPI_Igather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, root, comm_, &r));
  wait(r);
  int total = 0;
  for (int k = 0; k < size_; ++k) offs[k] = total, total += lens[k];
  std::string all(rank_ == root ? total : 0, ' ');
  HPDL_CHECK_MPI(MPI_Igatherv(s.data(), len, MPI_CHAR, all.data(), lens.data(), offs.data(),
                              MPI_CHAR, root, comm_, &r));
  wait(r);
  std::vector<std::string> out;
  if (rank_ == root)
    for (int k = 0; k < size_; ++k) out.push_back(all.substr(offs[k], lens[k]));
  return out;
}

template <typename T>
void Comm::broadcast_values(T* data, int64_t n, int root) const {
  for (int64_t off = 0; off < n; off += kPiece) {
    MPI_Request r;
    HPDL_CHECK_MPI(MPI_Ibcast(data + off, piece(n, off), mpi_type<T>(), root, comm_, &r));
    wait(r);
  }
}

void Comm::broadcast(std::string& s, int root) const {
  int64_t len = static_cast<int64_t>(s.size());
  broadcast_values(&len, 1, root);
  if (rank_ != root) s.assign(static_cast<size_t>(len), ' ');
  broadcast_values(s.data(), len, root);
}
void Comm::broadcast(float* d, int64_t n, int root) const { broadcast_values(d, n, root); }
void Comm::broadcast(double* d, int64_t n, int root) const { broadcast_values(d, n, root); }
void Comm::broadcast(int64_t* d, int64_t n, int root) const { broadcast_values(d, n, root); }
void Comm::broadcast(int* d, int64_t n, int root) const { broadcast_values(d, n, root); }

template <typename T>
void Comm::send_values(const T* data, int64_t n, int dest, int tag) const {
  for (int64_t off = 0; off < n; off += kPiece) {
    MPI_Request r;
    HPDL_CHECK_MPI(MPI_Isend(data + off, piece(n, off), mpi_type<T>(), dest, tag, comm_, &r));
    wait(r);
  }
}

template <typename T>
void Comm::recv_values(T* data, int64_t n, int source, int tag) const {
  for (int64_t off = 0; off < n; off += kPiece) {
    MPI_Request r;
    HPDL_CHECK_MPI(MPI_Irecv(data + off, piece(n, off), mpi_type<T>(), source, tag, comm_, &r));
    wait(r);
  }
}

void Comm::send(const float* d, int64_t n, int dest, int tag) const {
  send_values(d, n, dest, tag);
}
void Comm::send(const int64_t* d, int64_t n, int dest, int tag) const {
  send_values(d, n, dest, tag);
}
void Comm::send(const std::string& s, int dest, int tag) const {
  const int64_t len = static_cast<int64_t>(s.size());
  send_values(&len, 1, dest, tag);
  send_values(s.data(), len, dest, tag);
}
void Comm::recv(float* d, int64_t n, int source, int tag) const { recv_values(d, n, source, tag); }
void Comm::recv(int64_t* d, int64_t n, int source, int tag) const {
  recv_values(d, n, source, tag);
}
std::string Comm::recv_string(int source, int tag) const {
  int64_t len = 0;
  recv_values(&len, 1, source, tag);
  std::string s(static_cast<size_t>(len), ' ');
  recv_values(s.data(), len, source, tag);
  return s;
}

void Comm::barrier() const {
  MPI_Request r;
  HPDL_CHECK_MPI(MPI_Ibarrier(comm_, &r));
  wait(r);
}

MpiSession::MpiSession(int* argc, char*** argv) {
  // OpenMPI 4.1's one-sided component osc/rdma fails to create any window when ranks on
  // several hosts talk over TCP (ob1; open-mpi/ompi#9871, #11466): "MPI_ERR_WIN: invalid
  // window" on a Pi cluster's Ethernet. Without it OpenMPI takes osc/sm within a host and
  // osc/pt2pt (or ucx) across hosts. A choice of the user's (--mca osc, OMPI_MCA_osc) wins.
  setenv("OMPI_MCA_osc", "^rdma", 0);
  // OpenMPI 4.1's non-blocking allreduce (libnbc) takes a binomial tree (a reduce to one rank,
  // then a broadcast) for every in-place call and for fewer than 4 ranks, and the gradient
  // buckets are in place. Rabenseifner's reduce-scatter + allgather, measured on one host
  // (Xeon family 6 model 167, `mpirun -np 2`): 200 KB 53 -> 36 us, 16 KB 10.4 -> 9.5 us,
  // 2.6 KB 2.4 -> 2.4 us; with 4 ranks on 2 cores 200 KB 96 -> 78 us, 2.6 KB 8 -> 18 us.
  // Every rank still ends with the same sums. The user's choice wins, as above.
  setenv("OMPI_MCA_coll_libnbc_iallreduce_algorithm", "3", 0);
  int provided = 0;
  {
    const StartBound bound;  // MPI_Init waits for every rank, without a limit of its own
    if (MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
      throw Error("MPI_Init_thread failed");
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
}

MpiSession::~MpiSession() { finalize(); }

void MpiSession::finalize() {
  if (done_) return;
  done_ = true;
  MPI_Finalize();
}

void MpiSession::abort(int code) {
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);  // MPI_Abort does not return; should it, this rank still ends
}

std::string MpiSession::library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(text, &len);
  std::string v(text, strnlen(text, len));  // len may count the NUL
  if (const auto nl = v.find('\n'); nl != std::string::npos) v.resize(nl);
  while (!v.empty() && (v.back() == ',' || v.back() == ' ')) v.pop_back();
  return v;
}

}  // namespace hpdl
