// The cost of hpdl's parameter-server path against the raw one-sided operations it is
// built from, for the same bytes. Run with mpirun -np 2: rank 0 serves one shard (polling
// as a server does), rank 1 times, per parameter count,
//   raw   lock(shared) + MPI_Get            + unlock
//         lock(shared) + MPI_Get_accumulate(NO_OP) + unlock
//         lock(shared) + MPI_Accumulate(SUM) + unlock
//   hpdl  ParamShards::pull (request, wait for the server's copy, get) and push (put,
//         announce, wait until the server has applied it: an SGD step on the shard)
// and prints a table of medians (microseconds) and hpdl's push+pull over the raw pair.
// Usage: mpirun -np 2 hpdl_bench_rma [REPEATS] [PARAMS ...]
#include <mpi.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <vector>

#include "hpdl/comm/comm.hpp"
#include "hpdl/dist/param_shards.hpp"

using namespace hpdl;

namespace {

double median_us(int repeats, const std::function<void()>& op) {
  std::vector<double> t(repeats);
  for (int i = 0; i < 3; ++i) op();  // warm-up
  for (int i = 0; i < repeats; ++i) {
    const double t0 = MPI_Wtime();
    op();
    t[i] = (MPI_Wtime() - t0) * 1e6;
  }
  std::nth_element(t.begin(), t.begin() + repeats / 2, t.end());
  return t[repeats / 2];
}

void bench(const Comm& world, int64_t n, int repeats) {
  std::vector<float> initial(n, 0.5f), buf(n, 0.0f), update(n, 1e-6f);
  // A raw window of the same size, next to hpdl's shards.
  MPI_Win raw = MPI_WIN_NULL;
  float* base = nullptr;
  MPI_Win_allocate(world.rank() == 0 ? n * sizeof(float) : 0, sizeof(float), MPI_INFO_NULL,
                   world.raw(), &base, &raw);
  ParamShards shards(world, 1, initial);
  if (world.rank() == 0) {
    // A server: serves until the client has counted itself done.
    shards.open();
    const timespec pause{0, 50000};
    const ParamShards::Apply sgd = [](int, const float* g, float lr, float* w, const float*,
                                      int64_t k) {
      for (int64_t i = 0; i < k; ++i) w[i] -= lr * g[i];
    };
    while (shards.read(0, ParamShards::kWorkersDone) == 0)
      if (shards.serve(sgd) == 0) nanosleep(&pause, nullptr);
  } else {
    const int count = static_cast<int>(n);
    auto locked = [&](const std::function<void()>& op) {
      return [&, op] {
        MPI_Win_lock(MPI_LOCK_SHARED, 0, 0, raw);
        op();
        MPI_Win_unlock(0, raw);
      };
    };
    const double get = median_us(
        repeats,
        locked([&] { MPI_Get(buf.data(), count, MPI_FLOAT, 0, 0, count, MPI_FLOAT, raw); }));
    const double get_acc =
        median_us(repeats, locked([&] {
                    MPI_Get_accumulate(nullptr, 0, MPI_FLOAT, buf.data(), count, MPI_FLOAT, 0, 0,
                                       count, MPI_FLOAT, MPI_NO_OP, raw);
                  }));
    const double acc = median_us(repeats, locked([&] {
                                   MPI_Accumulate(update.data(), count, MPI_FLOAT, 0, 0, count,
                                                  MPI_FLOAT, MPI_SUM, raw);
                                 }));
    RmaStats st;
    std::vector<int64_t> versions(1);
    shards.open();
    const double pull = median_us(repeats, [&] { shards.pull(buf, versions, st); });
    const double push = median_us(repeats, [&] { shards.push(update, 0.1f, versions, st); });
    std::printf("%10lld %9.2f %8.1f %8.1f %8.1f %8.1f %8.1f %8.1f %10.2fx\n", (long long)n,
                n * 4 / 1048576.0, get, get_acc, acc, pull, push, pull + push,
                (pull + push) / (get_acc + acc));
    shards.add(0, ParamShards::kWorkersDone, 1);
  }
  shards.close();
  MPI_Win_free(&raw);
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
  {
    Comm world(MPI_COMM_WORLD);
    if (world.size() != 2) {
      if (world.rank() == 0) std::fprintf(stderr, "hpdl_bench_rma: run with mpirun -np 2\n");
      MPI_Finalize();
      return 2;
    }
    const int repeats = argc > 1 ? std::atoi(argv[1]) : 200;
    std::vector<int64_t> sizes;
    for (int i = 2; i < argc; ++i) sizes.push_back(std::atoll(argv[i]));
    if (sizes.empty()) sizes = {4096, 55050, 431080, 4 << 20};
    if (world.rank() == 1) {
      std::printf("median of %d, microseconds; raw = lock(shared) + one operation + unlock\n",
                  repeats);
      std::printf("%10s %9s %8s %8s %8s %8s %8s %8s %11s\n", "params", "MiB", "raw get", "raw gacc",
                  "raw acc", "pull", "push", "push+pull", "vs raw g+a");
    }
    for (int64_t n : sizes) bench(world, n, repeats);
  }
  MPI_Finalize();
  return 0;
}
