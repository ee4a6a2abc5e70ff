// Micro-benchmarks of the pieces of a training step (Google Benchmark): HDF5 batch reads,
// oneDNN vs reference kernels, optimizer updates. Run: build/hpdl_bench_kernels
// [--benchmark_filter=...]. The HDF5 benchmark needs data/fashion-mnist-train.h5
// (scripts/setup.sh) and is skipped without it.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <filesystem>
#include <vector>

#include "hpdl/core/rng.hpp"
#include "hpdl/data/dataset.hpp"
#include "hpdl/data/sampler.hpp"
#include "hpdl/kernels/kernels.hpp"
#include "hpdl/optim/optimizer.hpp"

using namespace hpdl;

namespace {

std::vector<float> filled(int64_t n) {
  std::vector<float> v(n);
  Rng rng(1, 1);
  for (auto& x : v) x = rng.uniform() - 0.5f;
  return v;
}

// One rank's share of a shuffled batch, read from HDF5 (args: rows per read).
void BM_ReadBatch(benchmark::State& state) {
  const std::string path = "data/fashion-mnist-train.h5";
  if (!std::filesystem::exists(path)) {
    state.SkipWithError("data/fashion-mnist-train.h5 missing: run scripts/setup.sh");
    return;
  }
  h5_quiet();
  H5Split split(path, "/");
  const int64_t batch = state.range(0);
  BatchPlan plan(split.size(), batch, 0, 1);
  plan.begin_epoch(1, 1);
  std::vector<float> x(batch * split.per_sample());
  std::vector<int32_t> y(batch);
  int64_t step = 0;
  for (auto _ : state) {
    split.read_rows(plan.local_rows(step++ % plan.steps_per_epoch()), x.data(), y.data());
    benchmark::DoNotOptimize(x.data());
  }
  state.SetItemsProcessed(state.iterations() * batch);
}
BENCHMARK(BM_ReadBatch)->Arg(16)->Arg(64)->Unit(benchmark::kMicrosecond);

// Dense forward + backward (args: backend 0 reference / 1 oneDNN, batch, in, out).
void BM_Dense(benchmark::State& state) {
  auto kernels = make_kernel_factory(state.range(0) ? "onednn" : "reference");
  const DenseDims d{state.range(1), state.range(2), state.range(3)};
  auto k = kernels->dense(d);
  auto x = filled(d.batch * d.in), w = filled(d.in * d.out), b = filled(d.out);
  auto y = filled(d.batch * d.out), dx = filled(d.batch * d.in), dw = filled(d.in * d.out),
       db = filled(d.out);
  for (auto _ : state) {
    k->forward(x.data(), w.data(), b.data(), y.data());
    k->backward(x.data(), w.data(), y.data(), dx.data(), dw.data(), db.data());
  }
  state.SetItemsProcessed(state.iterations() * d.batch);
}
BENCHMARK(BM_Dense)
    ->Args({1, 12800, 16, 64})
    ->Args({1, 16, 784, 64})
    ->Args({1, 64, 2450, 500})
    ->Args({0, 16, 784, 64})
    ->Unit(benchmark::kMicrosecond);

// Conv forward + backward (args: backend, batch, in_c, hw, out_c, kernel, pad): LeNet's conv2.
void BM_Conv(benchmark::State& state) {
  auto kernels = make_kernel_factory(state.range(0) ? "onednn" : "reference");
  const ConvDims d{state.range(1),
                   state.range(2),
                   state.range(3),
                   state.range(3),
                   state.range(4),
                   state.range(5),
                   1,
                   state.range(6)};
  auto k = kernels->conv(d);
  auto x = filled(d.batch * d.in_c * d.in_h * d.in_w),
       w = filled(d.out_c * d.in_c * d.kernel * d.kernel);
  auto b = filled(d.out_c), y = filled(d.batch * d.out_c * d.out_h() * d.out_w());
  auto dx = x, dw = w, db = b;
  for (auto _ : state) {
    k->forward(x.data(), w.data(), b.data(), y.data());
    k->backward(x.data(), w.data(), y.data(), dx.data(), dw.data(), db.data());
  }
  state.SetItemsProcessed(state.iterations() * d.batch);
}
BENCHMARK(BM_Conv)->Args({1, 64, 20, 14, 50, 5, 2})->Unit(benchmark::kMillisecond);

// Max pooling 2x2/2 forward + backward on LeNet's first pooling input (args: backend
// 0 reference / 1 onednn factory; set HPDL_ONEDNN_POOL=1 to force oneDNN's own pooling).
void BM_MaxPool(benchmark::State& state) {
  auto kernels = make_kernel_factory(state.range(0) ? "onednn" : "reference");
  const PoolDims d{64, 20, 28, 28, 2, 2};
  auto k = kernels->max_pool(d);
  auto x = filled(64 * 20 * 28 * 28), dx = x, y = filled(64 * 20 * 14 * 14);
  for (auto _ : state) {
    k->forward(x.data(), y.data());
    k->backward(y.data(), dx.data());
  }
  state.SetItemsProcessed(state.iterations() * d.batch);
}
BENCHMARK(BM_MaxPool)->Arg(1)->Arg(0)->Unit(benchmark::kMicrosecond);

// SGD and Adam updates on a flat buffer (args: parameters).
void BM_SgdUpdate(benchmark::State& state) {
  auto w = filled(state.range(0)), g = filled(state.range(0));
  Sgd sgd(state.range(0), 0.01f, 0.0f);
  for (auto _ : state) sgd.update(w, g);
  state.SetBytesProcessed(state.iterations() * state.range(0) * 12);
}
BENCHMARK(BM_SgdUpdate)->Arg(55050)->Arg(1256080)->Unit(benchmark::kMicrosecond);

void BM_AdamUpdate(benchmark::State& state) {
  auto w = filled(state.range(0)), g = filled(state.range(0));
  Adam adam(state.range(0), 0.001f, 0.9f, 0.999f, 1e-8f);
  for (auto _ : state) adam.update(w, g);
  state.SetBytesProcessed(state.iterations() * state.range(0) * 20);
}
BENCHMARK(BM_AdamUpdate)->Arg(1256080)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
