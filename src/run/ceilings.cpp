// Measured ceilings (see the header). The best call, not the mean: a ceiling is what the
// machine can do, and the slower calls are interference.
#include "hpdl/run/ceilings.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>

#include "hpdl/core/buffer.hpp"
#include "hpdl/kernels/vector_ops.hpp"

namespace hpdl {
namespace {

// The fastest of repeated calls of `run` (device work included), within `seconds`.
template <class Run>
double best_seconds(Device& device, double seconds, Run run) {
  using clock = std::chrono::steady_clock;
  run();  // warm-up: first-touch pages, primitive creation
  device.synchronize();
  double best = 1e300;
  const auto start = clock::now();
  for (int calls = 0;
       calls < 2 || std::chrono::duration<double>(clock::now() - start).count() < seconds;
       ++calls) {
    const auto t0 = clock::now();
    run();
    device.synchronize();
    best = std::min(best, std::chrono::duration<double>(clock::now() - t0).count());
  }
  return best;
}

// Floats per array of the bandwidth test: twice the last-level cache (reported by the C
// library; 32 MiB assumed when it says nothing), at least 64 MiB, at most 1 GiB and an
// eighth of the memory shared by `sharing` processes.
int64_t stream_floats(int sharing) {
  long cache = sysconf(_SC_LEVEL3_CACHE_SIZE);
  if (cache <= 0) cache = sysconf(_SC_LEVEL2_CACHE_SIZE);
  if (cache <= 0) cache = 32L << 20;
  const double memory = double(sysconf(_SC_PHYS_PAGES)) * double(sysconf(_SC_PAGESIZE));
  double bytes = std::clamp(2.0 * double(cache), 64.0 * (1 << 20), 1024.0 * (1 << 20));
  if (memory > 0) bytes = std::min(bytes, memory / (8.0 * std::max(sharing, 1)));
  return static_cast<int64_t>(bytes / 4);
}

}  // namespace

double Ceilings::attainable(double intensity) const {
  return std::min(gemm_flops_per_s, intensity * memory_Bps);
}

Ceilings measure_ceilings(KernelFactory& k, double seconds, int sharing) {
  Ceilings c;
  Device& dev = k.device();
  {
    // A GPU's 1024^3 product takes tens of microseconds, of which launching and waiting
    // would be a third: it gets a product 64 times larger.
    const int64_t n = dev.host_accessible() ? 1024 : 4096;
    Buffer x(n * n, dev), w(n * n, dev), b(n, dev), y(n * n, dev);
    VectorOps& ops = k.ops();
    ops.fill(n * n, 0.5f, x.data()), ops.fill(n * n, 0.25f, w.data()), ops.fill(n, 0, b.data());
    auto dense = k.dense({n, n, n});
    const double t =
        best_seconds(dev, seconds, [&] { dense->forward(x.data(), w.data(), b.data(), y.data()); });
    c.gemm_flops_per_s = 2.0 * double(n) * double(n) * double(n) / t;
  }
  {
    const int64_t n = stream_floats(sharing);
    Buffer x(n, dev), y(n, dev);
    k.ops().fill(n, 1, x.data()), k.ops().fill(n, 0, y.data());
    const double t =
        best_seconds(dev, seconds, [&] { k.ops().axpy(n, 1e-6f, x.data(), y.data()); });
    c.memory_Bps = 12.0 * double(n) / t;
  }
  return c;
}

}  // namespace hpdl
