// The measurements of `hpdl calibrate` (see net/calibration.hpp): ping-pong per pair,
// allreduce per algorithm, rank count and size, RMA get/accumulate, reduction throughput,
// the CPU share of every rank.
// Every measurement is a loop over sizes growing by 8x (the iallreduce curve `hpdl predict`
// reads: 2x, and one just below each power of two); the first rank of the measuring group
// decides the repetitions of the next size from the last one's time (about target_s in all;
// that curve's at least ten of a CPU budget's run-and-pause cycles, and the median of three
// passes over its sizes) and stops before a size that would exceed budget_s.
#include <mpi.h>

#include <algorithm>
#include <cstring>

#include "cpu_share.hpp"
#include "hpdl/core/error.hpp"
#include "hpdl/core/sample_stats.hpp"
#include "hpdl/net/after_compute.hpp"
#include "hpdl/net/calibration.hpp"
#include "measure_loop.hpp"

namespace hpdl {
namespace {

// Repetitions for `bytes` given the previous size's time per operation (0 = none yet);
// 0 = skip (the size would take longer than the budget).
int64_t plan_reps(int64_t bytes, const Sample* prev, const CalibrateOptions& o) {
  if (!prev) return 3;
  const double est = prev->seconds * std::max(1.0, double(bytes) / double(prev->bytes));
  if (est > o.budget_s) return 0;
  return std::clamp<int64_t>(static_cast<int64_t>(o.target_s / std::max(est, 1e-7)), 1, 1000);
}

// MPI_T: the control variable `name`, or -1.
int find_cvar(const char* name) {
  int n = 0;
  if (MPI_T_cvar_get_num(&n) != MPI_SUCCESS) return -1;
  for (int i = 0; i < n; ++i) {
    char cname[256], desc[8];
    int name_len = sizeof cname, desc_len = sizeof desc, verbosity = 0, binding = 0, scope = 0;
    MPI_Datatype type;
    MPI_T_enum enumtype;
    if (MPI_T_cvar_get_info(i, cname, &name_len, &verbosity, &type, &enumtype, desc, &desc_len,
                            &binding, &scope) == MPI_SUCCESS &&
        std::strcmp(cname, name) == 0)
      return i;
  }
  return -1;
}

bool write_int_cvar(int index, int value) {
  MPI_T_cvar_handle handle;
  int count = 0;
  if (MPI_T_cvar_handle_alloc(index, nullptr, &handle, &count) != MPI_SUCCESS) return false;
  const bool ok = MPI_T_cvar_write(handle, &value) == MPI_SUCCESS;
  MPI_T_cvar_handle_free(&handle);
  return ok;
}

// OpenMPI 4's coll_tuned allreduce algorithms (coll_tuned_allreduce_algorithm).
const std::vector<std::pair<int, std::string>> kAllreduceAlgorithms = {
    {0, "default"}, {1, "basic_linear"},   {2, "nonoverlapping"}, {3, "recursive_doubling"},
    {4, "ring"},    {5, "segmented_ring"}, {6, "rabenseifner"}};

// `waits`: its wait_all completes the transfers the way training's waits idle (run.wait), on
// a host with a CPU budget without spinning the budget away (a calibration that spun there
// would time the throttling, not the link), and bounded by its watchdog.
PairResult ping_pong(MPI_Comm comm, int a, int b, const CalibrateOptions& o, const Comm& waits) {
  int me = 0;
  MPI_Comm_rank(comm, &me);
  PairResult r;
  r.a = a, r.b = b;
  if (me != a && me != b) return r;
  const int peer = me == a ? b : a;
  std::vector<char> buf(static_cast<size_t>(o.max_bytes));
  const Sample* prev = nullptr;
  for (int64_t bytes : sizes_up_to(8, o.max_bytes)) {
    // a decides the repetitions and tells b (0 = stop).
    int64_t reps = me == a ? plan_reps(bytes, prev, o) : 0;
    if (me == a)
      HPDL_CHECK_MPI(MPI_Send(&reps, 1, MPI_INT64_T, b, 1, comm));
    else
      HPDL_CHECK_MPI(MPI_Recv(&reps, 1, MPI_INT64_T, a, 1, comm, MPI_STATUS_IGNORE));
    if (reps == 0) break;
    const int n = static_cast<int>(bytes);
    double t0 = 0, c0 = 0;
    for (int64_t k = -1; k < reps; ++k) {  // k = -1: warm-up
      if (k == 0) t0 = MPI_Wtime(), c0 = thread_cpu_s();
      MPI_Request req;
      if (me == a) {
        HPDL_CHECK_MPI(MPI_Isend(buf.data(), n, MPI_BYTE, peer, 2, comm, &req));
        waits.wait_all(1, &req);
        HPDL_CHECK_MPI(MPI_Irecv(buf.data(), n, MPI_BYTE, peer, 2, comm, &req));
        waits.wait_all(1, &req);
      } else {
        HPDL_CHECK_MPI(MPI_Irecv(buf.data(), n, MPI_BYTE, peer, 2, comm, &req));
        waits.wait_all(1, &req);
        HPDL_CHECK_MPI(MPI_Isend(buf.data(), n, MPI_BYTE, peer, 2, comm, &req));
        waits.wait_all(1, &req);
      }
    }
    r.samples.push_back({bytes, (MPI_Wtime() - t0) / (2.0 * double(reps)), reps,
                         (thread_cpu_s() - c0) / (2.0 * double(reps))});
    prev = &r.samples.back();
  }
  return r;
}

// The slowest rank's time per allreduce of `bytes`, over `reps` repetitions after one
// warm-up. nonblocking: MPI_Iallreduce in place, completed by waits.wait_all, as the
// trainer's gradient buckets are (OpenMPI runs it through libnbc, which picks its algorithm
// by rank count, size and whether the buffer is in place; not coll_tuned's algorithms).
double time_allreduce(MPI_Comm comm, int64_t bytes, int64_t reps, bool nonblocking,
                      const Comm& waits, std::vector<float>& in, std::vector<float>& out) {
  const int n = static_cast<int>(bytes / 4);
  HPDL_CHECK_MPI(MPI_Allreduce(in.data(), out.data(), n, MPI_FLOAT, MPI_SUM, comm));  // warm-up
  HPDL_CHECK_MPI(MPI_Barrier(comm));
  const double t0 = MPI_Wtime();
  for (int64_t k = 0; k < reps; ++k) {
    if (!nonblocking) {
      HPDL_CHECK_MPI(MPI_Allreduce(in.data(), out.data(), n, MPI_FLOAT, MPI_SUM, comm));
      continue;
    }
    MPI_Request req;  // in place, as the trainer sums its gradient buckets
    HPDL_CHECK_MPI(MPI_Iallreduce(MPI_IN_PLACE, out.data(), n, MPI_FLOAT, MPI_SUM, comm, &req));
    waits.wait_all(1, &req);
  }
  double t = (MPI_Wtime() - t0) / double(reps), slowest = 0;
  HPDL_CHECK_MPI(MPI_Allreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm));
  return slowest;
}

// The allreduce curve over `sizes` (ascending, whole floats; the buffers take the last),
// each planned from the one before. With rounds > 1 every size is timed once per pass over
// all sizes and keeps the median of its passes (reps counts them all): passes a second or
// more apart do not share a slow spell of budgeted hosts, which one pass can read as a size
// taking twice its time (and longer than the next size up).
std::vector<Sample> allreduce_sweep(MPI_Comm comm, const CalibrateOptions& o, bool nonblocking,
                                    const Comm& waits, const std::vector<int64_t>& sizes,
                                    int rounds = 1) {
  int me = 0;
  MPI_Comm_rank(comm, &me);
  std::vector<float> in(static_cast<size_t>(sizes.back() / 4), 1.0f), out(in.size());
  std::vector<Sample> samples;
  std::vector<std::vector<double>> passes;
  const Sample* prev = nullptr;
  for (int64_t bytes : sizes) {
    int64_t reps = me == 0 ? plan_reps(bytes, prev, o) : 0;
    HPDL_CHECK_MPI(MPI_Bcast(&reps, 1, MPI_INT64_T, 0, comm));
    if (reps == 0) break;
    const double t = time_allreduce(comm, bytes, reps, nonblocking, waits, in, out);
    samples.push_back({bytes, t, reps});
    passes.push_back({t});
    prev = &samples.back();
  }
  for (int r = 1; r < rounds; ++r)
    for (size_t i = 0; i < samples.size(); ++i)
      passes[i].push_back(
          time_allreduce(comm, samples[i].bytes, samples[i].reps, nonblocking, waits, in, out));
  for (size_t i = 0; i < samples.size(); ++i) {
    samples[i].seconds = sample_stats::median(passes[i]);
    samples[i].reps *= rounds;
  }
  return samples;
}

RmaCurve rma_sweep(MPI_Comm comm, MPI_Win win, float* origin_buf, int origin, int target,
                   bool accumulate, const CalibrateOptions& o, int64_t max_bytes) {
  int me = 0;
  MPI_Comm_rank(comm, &me);
  RmaCurve c;
  c.op = accumulate ? "accumulate" : "get";
  c.origin = origin, c.target = target;
  if (me != origin) return c;
  const Sample* prev = nullptr;
  for (int64_t bytes : sizes_up_to(8, max_bytes)) {
    const int64_t reps = plan_reps(bytes, prev, o);
    if (reps == 0) break;
    const int n = static_cast<int>(bytes / 4);
    double t0 = 0;
    for (int64_t k = -1; k < reps; ++k) {
      if (k == 0) t0 = MPI_Wtime();
      HPDL_CHECK_MPI(MPI_Win_lock(MPI_LOCK_SHARED, target, 0, win));
      if (accumulate)
        HPDL_CHECK_MPI(
            MPI_Accumulate(origin_buf, n, MPI_FLOAT, target, 0, n, MPI_FLOAT, MPI_SUM, win));
      else
        HPDL_CHECK_MPI(MPI_Get(origin_buf, n, MPI_FLOAT, target, 0, n, MPI_FLOAT, win));
      HPDL_CHECK_MPI(MPI_Win_unlock(target, win));
    }
    c.samples.push_back({bytes, (MPI_Wtime() - t0) / double(reps), reps});
    prev = &c.samples.back();
  }
  c.fit = fit_link(c.samples);
  return c;
}

// Sends rank `from`'s samples to rank 0 (a no-op when from == 0).
void to_rank0(MPI_Comm comm, int from, std::vector<Sample>& samples) {
  int me = 0;
  MPI_Comm_rank(comm, &me);
  if (from == 0 || (me != from && me != 0)) return;
  std::vector<double> flat;
  if (me == from) {
    for (const Sample& s : samples)
      flat.insert(flat.end(), {double(s.bytes), s.seconds, double(s.reps), s.cpu_s});
    int64_t n = static_cast<int64_t>(flat.size());
    HPDL_CHECK_MPI(MPI_Send(&n, 1, MPI_INT64_T, 0, 3, comm));
    HPDL_CHECK_MPI(MPI_Send(flat.data(), static_cast<int>(n), MPI_DOUBLE, 0, 3, comm));
    return;
  }
  int64_t n = 0;
  HPDL_CHECK_MPI(MPI_Recv(&n, 1, MPI_INT64_T, from, 3, comm, MPI_STATUS_IGNORE));
  HPDL_REQUIRE(n >= 0 && n % 4 == 0 && n < 4 * 64, "calibrate: bad sample count from a rank");
  flat.resize(static_cast<size_t>(n));
  HPDL_CHECK_MPI(
      MPI_Recv(flat.data(), static_cast<int>(n), MPI_DOUBLE, from, 3, comm, MPI_STATUS_IGNORE));
  samples.clear();
  for (size_t i = 0; i < flat.size(); i += 4)
    samples.push_back({static_cast<int64_t>(flat[i]), flat[i + 1],
                       static_cast<int64_t>(flat[i + 2]), flat[i + 3]});
}

}  // namespace

Calibration calibrate(const Comm& comm, const CalibrateOptions& o, Watchdog& watchdog) {
  const double t_start = MPI_Wtime();
  MPI_Comm world = comm.raw();
  const int me = comm.rank(), n = comm.size();
  Calibration c;
  {
    WatchdogScope guard(watchdog, "calibrate: host names", 0);
    c.hosts = map_hosts(comm);
  }
  // The share of a core each rank gets while all compute: every rank spins for 0.5 s (fifty
  // 10 ms quota periods, so a CPU budget shows as its average, not its bursts). First, so
  // that the curve `hpdl predict` reads can be measured over enough of a budget's cycles;
  // and again at the end, keeping the one whose shares sum to more (cpu_share.hpp).
  // A budgeted rank runs a slice and pauses (1/share - 1) slices: a window of a few cycles
  // holds one pause more or fewer by its phase, and two calibrations disagreed by a quarter.
  CpuShares cpu;
  {
    WatchdogScope guard(watchdog, "calibrate: CPU share", 0);
    cpu = measure_cpu_shares(world, 0.5);
  }
  const double cycle_s = cpu.cycle_s, slice_s = cpu.slice_max_s;  // 0: no rank paused
  // Local SGD's average comes after its interval's compute: where a rank's CPU pauses, the
  // curve of an allreduce after bursts of two slices of compute (what the average meets once
  // an interval holds a slice or more; after_compute.hpp).
  if (cycle_s > 0 && slice_s > 0) c.after_compute_cpu_s = 2 * slice_s;
  // Point to point: between every two hosts (their lowest ranks), and within the first
  // host that runs two ranks.
  std::vector<std::pair<int, int>> pairs;
  const auto& lead = c.hosts.leader;
  for (size_t i = 0; i < lead.size(); ++i)
    for (size_t j = i + 1; j < lead.size(); ++j) pairs.push_back({lead[i], lead[j]});
  for (size_t h = 0; h < lead.size(); ++h) {
    int second = -1;
    for (int r = 0; r < n && second < 0; ++r)
      if (r != lead[h] && c.hosts.host_index(r) == static_cast<int>(h)) second = r;
    if (second >= 0) {
      pairs.push_back({lead[h], second});
      break;
    }
  }
  for (const auto& [a, b] : pairs) {
    WatchdogScope guard(watchdog, "calibrate: ping-pong", a * n + b);
    PairResult r = ping_pong(world, a, b, o, comm);
    to_rank0(world, a, r.samples);
    quiet_barrier(world);
    r.same_host = c.hosts.host_of_rank[a] == c.hosts.host_of_rank[b];
    r.fit = fit_link(r.samples);
    c.pairs.push_back(std::move(r));
  }

  // Allreduce: on the first k ranks for k = 2, 4, 8, ... and all ranks; every algorithm.
  int provided = 0;
  const bool tool_interface = MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) == MPI_SUCCESS;
  const int algorithm_var = tool_interface ? find_cvar("coll_tuned_allreduce_algorithm") : -1;
  c.algorithms_forced = algorithm_var >= 0;
  const int64_t max_bytes = std::max<int64_t>(o.max_bytes / 4, 1) * 4;  // whole floats
  std::vector<int> counts;
  for (int k = 2; k < n; k *= 2) counts.push_back(k);
  if (n >= 2) counts.push_back(n);
  for (int k : counts) {
    MPI_Comm sub;
    HPDL_CHECK_MPI(MPI_Comm_split(world, me < k ? 0 : MPI_UNDEFINED, me, &sub));
    for (const auto& [id, name] : kAllreduceAlgorithms) {
      if (id != 0 && !c.algorithms_forced) continue;
      WatchdogScope guard(watchdog, "calibrate: allreduce", k * 100 + id);
      if (c.algorithms_forced) write_int_cvar(algorithm_var, id);
      AllreduceCurve curve{id, name, k, {}};
      if (sub != MPI_COMM_NULL) {
        MPI_Comm dup;  // a new communicator takes the forced algorithm
        HPDL_CHECK_MPI(MPI_Comm_dup(sub, &dup));
        curve.samples = allreduce_sweep(dup, o, false, comm, sizes_up_to(4, max_bytes));
        HPDL_CHECK_MPI(MPI_Comm_free(&dup));
      }
      quiet_barrier(world);
      c.allreduce.push_back(std::move(curve));
    }
    {
      // The curve `hpdl predict` costs gradient buckets with: sizes 2x apart (a bucket
      // interpolates between near neighbours) and one just below each power of two from
      // 1 KiB (sizes_below_powers), ten budget cycles a size, three passes.
      WatchdogScope guard(watchdog, "calibrate: iallreduce", k * 100 + 99);
      AllreduceCurve curve{-1, "iallreduce", k, {}};
      CalibrateOptions fine = o;
      fine.target_s = std::max(o.target_s, 10 * cycle_s);
      const auto sizes = sizes_below_powers(sizes_up_to(4, max_bytes, 2), 1024);
      if (sub != MPI_COMM_NULL) curve.samples = allreduce_sweep(sub, fine, true, comm, sizes, 3);
      quiet_barrier(world);
      c.allreduce.push_back(std::move(curve));
    }
    if (c.after_compute_cpu_s > 0) {
      WatchdogScope guard(watchdog, "calibrate: iallreduce after compute", k * 100 + 98);
      AllreduceCurve curve{-2, kAfterComputeCurve, k, {}};
      if (sub != MPI_COMM_NULL)
        curve.samples = allreduce_after_compute(sub, o, comm, c.after_compute_cpu_s);
      quiet_barrier(world);
      c.allreduce.push_back(std::move(curve));
    }
    if (sub != MPI_COMM_NULL) HPDL_CHECK_MPI(MPI_Comm_free(&sub));
  }
  if (c.algorithms_forced) write_int_cvar(algorithm_var, 0);
  if (tool_interface) MPI_T_finalize();

  // RMA: rank 0 exposes a window; the lowest rank of another host (else rank 1) reaches it.
  if (n >= 2) {
    const int origin = lead.size() > 1 ? lead[1] : 1;
    const int64_t rma_bytes = std::min<int64_t>(o.max_bytes, int64_t{16} << 20);
    float* base = nullptr;
    MPI_Win win;
    WatchdogScope guard(watchdog, "calibrate: RMA", 0);
    HPDL_CHECK_MPI(MPI_Win_allocate(me == 0 ? rma_bytes : 0, sizeof(float), MPI_INFO_NULL, world,
                                    &base, &win));
    std::vector<float> local(static_cast<size_t>(rma_bytes / 4), 0.0f);
    for (bool acc : {false, true}) {
      RmaCurve curve = rma_sweep(world, win, local.data(), origin, 0, acc, o, rma_bytes);
      to_rank0(world, origin, curve.samples);
      curve.fit = fit_link(curve.samples);
      quiet_barrier(world);
      c.rma.push_back(std::move(curve));
    }
    HPDL_CHECK_MPI(MPI_Win_free(&win));
  }

  // One core's reduction throughput (what a ring allreduce does between its transfers).
  {
    const int count = 1 << 22;  // 16 MiB of floats
    std::vector<float> in(count, 1.0f), inout(count, 0.0f);
    MPI_Reduce_local(in.data(), inout.data(), count, MPI_FLOAT, MPI_SUM);
    const int reps = 5;
    const double t0 = MPI_Wtime();
    for (int k = 0; k < reps; ++k)
      MPI_Reduce_local(in.data(), inout.data(), count, MPI_FLOAT, MPI_SUM);
    double rate = reps * double(count) * sizeof(float) / (MPI_Wtime() - t0);
    c.reduce_Bps.resize(n);
    WatchdogScope guard(watchdog, "calibrate: reduction gather", 0);
    HPDL_CHECK_MPI(MPI_Gather(&rate, 1, MPI_DOUBLE, c.reduce_Bps.data(), 1, MPI_DOUBLE, 0, world));
  }
  {
    WatchdogScope guard(watchdog, "calibrate: CPU share again", 0);
    const std::string moved = keep_larger_shares(cpu, measure_cpu_shares(world, 0.5));
    if (!moved.empty()) c.flags.push_back(moved);
  }
  c.cpu_share = std::move(cpu.share), c.cpu_slice_s = std::move(cpu.slice_s);
  flag_slow(c);
  c.seconds = MPI_Wtime() - t_start;
  return c;
}

}  // namespace hpdl
