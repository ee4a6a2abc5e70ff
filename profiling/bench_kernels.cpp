// Micro-benchmarks of the pieces of a training step (Google Benchmark): HDF5 batch reads,
// oneDNN vs reference kernels, hpdl's LSTM vs oneDNN's LSTM primitive, the memory-bound
// passes (pooling, dropout, optimizer updates) against a copy of the same bytes. Run:
// build/hpdl_bench_kernels
// [--benchmark_filter=...]. The HDF5 benchmark needs data/fashion-mnist-train.h5
// (scripts/setup.sh) and is skipped without it.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <dnnl.hpp>
#include <filesystem>
#include <vector>

#include "hpdl/core/rng.hpp"
#include "hpdl/data/dataset.hpp"
#include "hpdl/data/sampler.hpp"
#include "hpdl/kernels/kernels.hpp"
#include "hpdl/nn/recurrent.hpp"
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
  auto kernels = make_kernel_factory(state.range(0) ? Backend::kOneDnn : Backend::kReference);
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
    ->Args({1, 100, 16,
            64})  // HAR 2x2 h32's step product (H = 16) as a dense layer: BM_RecurrentProduct
    ->Args({1, 16, 784, 64})
    ->Args({1, 64, 2450, 500})
    ->Args({1, 128, 2450, 500})  // LeNet's dense1 at the preset's batch
    ->Args({0, 16, 784, 64})
    ->Unit(benchmark::kMicrosecond);

// An LSTM's per-step products with its recurrent weights, forward and backward (args: 0 the
// oneDNN backend's dense kernel / 1 its panel product, batch, hidden): HAR h32 and h64 per
// direction at batch 50 (2 ranks) and 100 (1 rank).
void BM_RecurrentProduct(benchmark::State& state) {
  auto kernels = make_kernel_factory(Backend::kOneDnn);
  const RecurrentDims d{state.range(1), state.range(2)};
  auto k =
      state.range(0) ? kernels->recurrent_product(d) : kernels->KernelFactory::recurrent_product(d);
  const int64_t G = 4 * d.hidden;
  auto wh = filled(G * d.hidden), h = filled(d.batch * d.hidden), rec = filled(d.batch * G);
  k->use_weights(wh.data());
  for (auto _ : state) {
    k->forward(h.data(), rec.data());
    k->backward(rec.data(), h.data());
  }
  state.SetItemsProcessed(state.iterations() * d.batch);
}
BENCHMARK(BM_RecurrentProduct)
    ->ArgsProduct({{0, 1}, {50, 100}, {16, 32}})
    ->Unit(benchmark::kMicrosecond);

// An LSTM's weight and input gradients of one backward step, as the oneDNN backend takes
// them a step at a time (args: batch, hidden, input width C): dWh += d^T h_prev, dWx +=
// d^T x, db, dx = d wx; x and dx rows a sequence (128 steps) apart as in the layer.
// FLOP/s counts the three products' multiply-adds (2 N G (H + 2 C)).
void BM_StepGradients(benchmark::State& state) {
  auto kernels = make_kernel_factory(Backend::kOneDnn);
  const int64_t N = state.range(0), H = state.range(1), C = state.range(2), G = 4 * H;
  const int64_t ld = 128 * C;
  auto k = kernels->recurrent_product(RecurrentDims{N, H, C});
  if (!k->gradients_by_step()) {
    state.SkipWithError("this CPU's rule takes these gradients after the loop");
    return;
  }
  auto wh = filled(G * H), wx = filled(G * C), d = filled(N * G), h = filled(N * H);
  auto x = filled(N * ld), dx = filled(N * ld), dwh = filled(G * H), dwx = filled(G * C),
       db = filled(G);
  k->use_weights(wh.data());
  k->use_input_weights(wx.data());
  for (auto _ : state) {
    k->step_gradients(d.data(), h.data(), x.data(), dx.data(), ld, dwh.data(), dwx.data(),
                      db.data());
    benchmark::DoNotOptimize(dx.data());
  }
  state.counters["FLOP/s"] = benchmark::Counter(
      double(state.iterations()) * 2 * N * G * (H + 2 * C), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_StepGradients)
    ->Args({50, 32, 32})
    ->Args({50, 32, 64})
    ->Args({100, 32, 32})
    ->Args({50, 64, 64})
    ->Unit(benchmark::kMicrosecond);

// Conv forward + backward (args: backend, batch, in_c, hw, out_c, kernel, pad): LeNet's conv2.
void BM_Conv(benchmark::State& state) {
  auto kernels = make_kernel_factory(state.range(0) ? Backend::kOneDnn : Backend::kReference);
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
// 0 reference / 1 onednn factory / 2 onednn with run.kernels.pool = "onednn": oneDNN's own).
void BM_MaxPool(benchmark::State& state) {
  KernelChoices choices;
  if (state.range(0) == 2) choices.pool = PoolChoice::kOneDnn;
  auto kernels = make_kernel_factory(state.range(0) ? Backend::kOneDnn : Backend::kReference, 0,
                                     Precision::kF32, choices);
  const PoolDims d{64, 20, 28, 28, 2, 2};
  auto k = kernels->max_pool(d);
  auto x = filled(64 * 20 * 28 * 28), dx = x, y = filled(64 * 20 * 14 * 14);
  for (auto _ : state) {
    k->forward(x.data(), y.data());
    k->backward(y.data(), dx.data());
  }
  state.SetItemsProcessed(state.iterations() * d.batch);
}
BENCHMARK(BM_MaxPool)->Arg(1)->Arg(2)->Arg(0)->Unit(benchmark::kMicrosecond);

// The memory-bound passes of a step against a copy of the same bytes (#32: "at memory
// bandwidth"). Each benchmark counts the bytes its pass must move at least (every input
// read once, every output written once) and reports `vs_copy`: its time over the time of
// a single-thread memcpy moving as many bytes (half read, half written), timed right after
// it: 1.0 is a pass at copy speed. profiling/bench_memory_bound.sh runs them on one thread
// (OMP_NUM_THREADS=1) and prints them as a table.
double copy_seconds(int64_t bytes) {
  std::vector<char> a(bytes / 2, 1), b(bytes / 2);
  int64_t calls = 0;
  const auto t0 = std::chrono::steady_clock::now();
  double dt = 0;
  while (dt < 0.05 || calls < 10) {
    std::memcpy(b.data(), a.data(), a.size());
    benchmark::DoNotOptimize(b.data());
    ++calls;
    dt = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  return dt / double(calls);
}

void report_vs_copy(benchmark::State& state, int64_t bytes, double seconds) {
  state.SetBytesProcessed(state.iterations() * bytes);
  state.counters["vs_copy"] = seconds / double(state.iterations()) / copy_seconds(bytes);
}

template <class F>
double timed(benchmark::State& state, F&& pass) {
  const auto t0 = std::chrono::steady_clock::now();
  for (auto _ : state) pass();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Max pooling alone, each direction (args: backend 0 reference / 1 onednn, 0 forward /
// 1 backward, channel block: 1 plain NCHW, 20 NHWC with the fused ReLU as LeNet's pool1
// runs): forward reads x and writes y (and the argmax it keeps), backward reads dy and the
// argmax and writes dx. LeNet's pool1 at batch 128.
void BM_MaxPoolPass(benchmark::State& state) {
  auto kernels = make_kernel_factory(state.range(0) ? Backend::kOneDnn : Backend::kReference);
  PoolDims d{128, 20, 28, 28, 2, 2};
  d.in_block = d.out_block = state.range(2);
  d.relu = d.in_block > 1;
  auto k = kernels->max_pool(d);
  const int64_t in = 128 * 20 * 28 * 28, out = in / 4;
  auto x = filled(in), dx = x, y = filled(out);
  k->forward(x.data(), y.data());
  const bool backward = state.range(1) != 0;
  const double s = timed(state, [&] {
    if (backward)
      k->backward(y.data(), dx.data());
    else
      k->forward(x.data(), y.data());
  });
  report_vs_copy(state, backward ? 4 * (out + out + in) : 4 * (in + out + out), s);
}
BENCHMARK(BM_MaxPoolPass)
    ->Args({1, 0, 1})
    ->Args({1, 1, 1})
    ->Args({1, 0, 20})
    ->Args({1, 1, 20})
    ->Args({0, 0, 1})
    ->Args({0, 1, 1})
    ->Unit(benchmark::kMicrosecond);

// Dropout (keep 0.5) each direction (args: samples, elements a sample, 0 forward /
// 1 backward): forward reads x and writes the mask and y, backward reads dy and the mask
// and writes dx. LeNet's (128 x 500) and HAR 2x2's input dropout (100 x 128 x 9).
void BM_DropoutPass(benchmark::State& state) {
  auto kernels = make_kernel_factory(Backend::kOneDnn);
  const int64_t n = state.range(0), per = state.range(1), total = n * per;
  auto k = kernels->dropout({n, per, 0.5f});
  auto x = filled(total), mask = x, y = x;
  std::vector<int64_t> ids(n);
  for (int64_t i = 0; i < n; ++i) ids[i] = i;
  const bool backward = state.range(2) != 0;
  uint64_t step = 0;
  const double s = timed(state, [&] {
    if (backward)
      k->backward(y.data(), mask.data(), x.data());
    else
      k->forward(x.data(), ids.data(), 7, ++step, mask.data(), y.data());
  });
  report_vs_copy(state, 12 * total, s);
}
BENCHMARK(BM_DropoutPass)
    ->Args({128, 500, 0})
    ->Args({128, 500, 1})
    ->Args({100, 128 * 9, 0})
    ->Args({100, 128 * 9, 1})
    ->Unit(benchmark::kMicrosecond);

// The LSTM two ways, forward + backward on one sequence batch (args: T, N, C, H; the HAR
// 2x2 model's cell is 128, 50, 16, 16 at hidden 32, and 128, 50, 32, 32 at hidden 64):
// hpdl's Lstm layer (oneDNN matmuls + vectorised gate loops) and oneDNN's own LSTM
// primitive (lstm_forward / lstm_backward, weights in the layouts it picks).
void BM_LstmLayer(benchmark::State& state) {
  const int64_t T = state.range(0), N = state.range(1), C = state.range(2), H = state.range(3);
  auto kernels = make_kernel_factory(Backend::kOneDnn);
  Lstm lstm(H, 1.0f, false);
  lstm.set_name("lstm");
  lstm.setup(Shape{{N, T, C}});
  std::vector<std::vector<float>> params, grads;
  std::vector<std::span<float>> p, g;
  for (const auto& spec : lstm.param_specs()) {
    params.push_back(filled(spec.size));
    grads.push_back(std::vector<float>(spec.size));
  }
  for (size_t i = 0; i < params.size(); ++i) p.emplace_back(params[i]), g.emplace_back(grads[i]);
  lstm.bind(p, g, *kernels);
  auto x = filled(N * T * C), y = filled(N * T * H), dy = filled(N * T * H), dx = filled(N * T * C);
  for (auto _ : state) {
    lstm.forward(x.data(), y.data(), Pass{});
    lstm.backward(x.data(), y.data(), dy.data(), dx.data(), Pass{});
  }
  state.SetItemsProcessed(state.iterations() * N);
}
BENCHMARK(BM_LstmLayer)
    ->Args({128, 50, 16, 16})
    ->Args({128, 50, 32, 32})
    ->Unit(benchmark::kMillisecond);

void BM_OneDnnLstmPrimitive(benchmark::State& state) {
  using dnnl::memory;
  using tag = memory::format_tag;
  const memory::dim T = state.range(0), N = state.range(1), C = state.range(2), H = state.range(3);
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  const auto f32 = memory::data_type::f32;
  const memory::desc src({T, N, C}, f32, tag::tnc), dst({T, N, H}, f32, tag::tnc);
  const memory::desc wl_any({1, 1, C, 4, H}, f32, tag::any), wi_any({1, 1, H, 4, H}, f32, tag::any);
  const memory::desc bias({1, 1, 4, H}, f32, tag::ldgo), none;
  const auto dir = dnnl::rnn_direction::unidirectional_left2right;
  dnnl::lstm_forward::primitive_desc fpd(
      dnnl::lstm_forward::desc(dnnl::prop_kind::forward_training, dir, src, none, none, wl_any,
                               wi_any, bias, dst, none, none),
      eng);
  dnnl::lstm_backward::primitive_desc bpd(
      dnnl::lstm_backward::desc(dnnl::prop_kind::backward, dir, src, none, none, wl_any, wi_any,
                                bias, dst, none, none, src, none, none, wl_any, wi_any, bias, dst,
                                none, none),
      eng, fpd);
  auto mem = [&](const memory::desc& md) {
    memory m(md, eng);
    float* p = static_cast<float*>(m.get_data_handle());
    for (size_t i = 0; i < md.get_size() / sizeof(float); ++i) p[i] = 0.01f * float(i % 97) - 0.4f;
    return m;
  };
  memory x = mem(src), y = mem(dst), b = mem(bias), dy = mem(dst), dx = mem(src), db = mem(bias);
  memory wl = mem(fpd.weights_layer_desc()), wi = mem(fpd.weights_iter_desc());
  memory bwl = mem(bpd.weights_layer_desc()), bwi = mem(bpd.weights_iter_desc());
  memory dwl = mem(bpd.diff_weights_layer_desc()), dwi = mem(bpd.diff_weights_iter_desc());
  memory ws = mem(fpd.workspace_desc());
  dnnl::lstm_forward fwd(fpd);
  dnnl::lstm_backward bwd(bpd);
  for (auto _ : state) {
    fwd.execute(strm, {{DNNL_ARG_SRC_LAYER, x},
                       {DNNL_ARG_WEIGHTS_LAYER, wl},
                       {DNNL_ARG_WEIGHTS_ITER, wi},
                       {DNNL_ARG_BIAS, b},
                       {DNNL_ARG_DST_LAYER, y},
                       {DNNL_ARG_WORKSPACE, ws}});
    // backward takes the weights in its own layouts (bwl, bwi): a real layer would reorder
    // them every step, which this timing leaves out in the primitive's favour.
    bwd.execute(strm, {{DNNL_ARG_SRC_LAYER, x},
                       {DNNL_ARG_WEIGHTS_LAYER, bwl},
                       {DNNL_ARG_WEIGHTS_ITER, bwi},
                       {DNNL_ARG_BIAS, b},
                       {DNNL_ARG_DST_LAYER, y},
                       {DNNL_ARG_WORKSPACE, ws},
                       {DNNL_ARG_DIFF_SRC_LAYER, dx},
                       {DNNL_ARG_DIFF_WEIGHTS_LAYER, dwl},
                       {DNNL_ARG_DIFF_WEIGHTS_ITER, dwi},
                       {DNNL_ARG_DIFF_BIAS, db},
                       {DNNL_ARG_DIFF_DST_LAYER, dy}});
    strm.wait();
  }
  state.SetItemsProcessed(state.iterations() * N);
}
BENCHMARK(BM_OneDnnLstmPrimitive)
    ->Args({128, 50, 16, 16})
    ->Args({128, 50, 32, 32})
    ->Unit(benchmark::kMillisecond);

// SGD and Adam updates on a flat buffer (args: parameters; 55050: the MLP, 1256080:
// LeNet): SGD reads w and g and writes w (12 bytes a parameter), Adam also reads and
// writes its two moments (28).
void BM_SgdUpdate(benchmark::State& state) {
  auto w = filled(state.range(0)), g = filled(state.range(0));
  auto ops = make_cpu_vector_ops();
  Sgd sgd(*ops, host_device(), state.range(0), 0.01f, 0.0f);
  report_vs_copy(state, 12 * state.range(0), timed(state, [&] { sgd.update(w, g); }));
}
BENCHMARK(BM_SgdUpdate)->Arg(55050)->Arg(1256080)->Unit(benchmark::kMicrosecond);

void BM_AdamUpdate(benchmark::State& state) {
  auto w = filled(state.range(0)), g = filled(state.range(0));
  auto ops = make_cpu_vector_ops();
  Adam adam(*ops, host_device(), state.range(0), 0.001f, 0.9f, 0.999f, 1e-8f);
  report_vs_copy(state, 28 * state.range(0), timed(state, [&] { adam.update(w, g); }));
}
BENCHMARK(BM_AdamUpdate)->Arg(55050)->Arg(1256080)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
