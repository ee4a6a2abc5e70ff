// The CUDA backend against the reference backend, operation by operation, on a GPU: the
// same seeded inputs go through both (on the GPU through device buffers), every output
// buffer is compared within a relative tolerance (GEMMs and reductions sum in other
// orders). Without a GPU (or in a build without CUDA) every test here skips with one line
// saying why; the per-element math is still checked on the host (test_device_math.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

#include "hpdl/core/buffer.hpp"
#include "hpdl/core/error.hpp"
#include "hpdl/kernels/kernels.hpp"
#include "hpdl/nn/layers.hpp"
#include "hpdl/nn/recurrent.hpp"
#include "kernel_env.hpp"
#include "random_values.hpp"

namespace hpdl {
namespace {

using Bufs = std::vector<std::vector<float>>;
// An operation on device pointers (one per buffer, in order) of backend k.
using Op = std::function<void(KernelFactory& k, const std::vector<float*>& p)>;

std::vector<float> cuda_values(int64_t n, uint64_t seed) { return uniform_values(n, seed, 3); }
// Values in [0, 1): second moments and mean squares, which are never negative.
std::vector<float> squares(int64_t n, uint64_t seed) {
  std::vector<float> v = cuda_values(n, seed);
  for (float& x : v) x *= x;
  return v;
}

class CudaParity : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda_backend_built()) GTEST_SKIP() << "no CUDA device: this hpdl was built without CUDA";
    try {
      cuda = test_kernels("cuda");
    } catch (const Error& e) {
      GTEST_SKIP() << e.what();  // "... no CUDA device (the runtime's reason)"
    }
  }
  // Runs op on copies of bufs in k's memory and returns them afterwards.
  static Bufs run(KernelFactory& k, Bufs bufs, const Op& op) {
    std::vector<Buffer> on(bufs.size());
    std::vector<float*> p;
    for (size_t i = 0; i < bufs.size(); ++i) {
      on[i] = Buffer(static_cast<int64_t>(bufs[i].size()), k.device());
      k.device().copy_from_host(on[i].data(), bufs[i].data(), bufs[i].size() * sizeof(float));
      p.push_back(on[i].data());
    }
    op(k, p);
    for (size_t i = 0; i < bufs.size(); ++i)
      k.device().copy_to_host(bufs[i].data(), on[i].data(), bufs[i].size() * sizeof(float));
    return bufs;
  }
  // The reference and the GPU on the same buffers; every buffer must agree within tol.
  void expect_parity(const Bufs& bufs, const Op& op, double tol = 1e-4) {
    const Bufs want = run(*ref, bufs, op), got = run(*cuda, bufs, op);
    for (size_t k = 0; k < want.size(); ++k)
      for (size_t i = 0; i < want[k].size(); ++i)
        ASSERT_NEAR(got[k][i], want[k][i], tol * (1 + std::abs(want[k][i])))
            << "buffer " << k << " [" << i << "]";
  }
  std::unique_ptr<KernelFactory> ref = make_reference_kernels(), cuda;
};

TEST_F(CudaParity, Dense) {
  const DenseDims d{5, 7, 3};  // x, w, b, y, dy, dx, dw, db
  expect_parity({cuda_values(35, 1), cuda_values(21, 2), cuda_values(3, 3), std::vector<float>(15),
                 cuda_values(15, 4), std::vector<float>(35), cuda_values(21, 5), cuda_values(3, 6)},
                [&](KernelFactory& k, const std::vector<float*>& p) {
                  auto dense = k.dense(d);
                  dense->forward(p[0], p[1], p[2], p[3]);
                  dense->backward(p[0], p[1], p[4], p[5], p[6], p[7]);
                });
}

// A dense layer that applies the ReLU after it (PlanHooks::absorb_following_relu): on the GPU its
// ReLU kernel runs on the output in place and the backward passes the gradient through it.
// Outputs and every gradient against the reference backend's fused layer.
TEST_F(CudaParity, DenseWithTheReluAfterIt) {
  const int64_t N = 6, I = 10, O = 9;
  // x, w, b, y, dy, dx, dw, db
  expect_parity({cuda_values(N * I, 1), cuda_values(O * I, 2), cuda_values(O, 3),
                 std::vector<float>(N * O), cuda_values(N * O, 4), std::vector<float>(N * I),
                 std::vector<float>(O * I), std::vector<float>(O)},
                [&](KernelFactory& k, const std::vector<float*>& p) {
                  Dense dense(O, Init::kGlorotUniform);
                  dense.set_name("dense");
                  ASSERT_TRUE(dense.plan().absorb_following_relu());
                  dense.setup(Shape{{N, I}});
                  dense.bind({{p[1], size_t(O * I)}, {p[2], size_t(O)}},
                             {{p[6], size_t(O * I)}, {p[7], size_t(O)}}, k);
                  dense.forward(p[0], p[3], Pass{});
                  dense.backward(p[0], p[3], p[4], p[5], Pass{});
                });
}

TEST_F(CudaParity, Conv) {
  for (const ConvDims& d :
       {ConvDims{2, 3, 7, 6, 4, 3, 2, 1}, ConvDims{4, 20, 12, 12, 50, 5, 1, 0}}) {
    const int64_t nx = d.batch * d.in_c * d.in_h * d.in_w,
                  nw = d.out_c * d.in_c * d.kernel * d.kernel;
    const int64_t ny = d.batch * d.out_c * d.out_h() * d.out_w();
    expect_parity(
        {cuda_values(nx, 1), cuda_values(nw, 2), cuda_values(d.out_c, 3), std::vector<float>(ny),
         cuda_values(ny, 4), std::vector<float>(nx), cuda_values(nw, 5), cuda_values(d.out_c, 6)},
        [&](KernelFactory& k, const std::vector<float*>& p) {
          auto conv = k.conv(d);
          conv->forward(p[0], p[1], p[2], p[3]);
          conv->backward(p[0], p[1], p[4], p[5], p[6], p[7]);
        });
  }
}

TEST_F(CudaParity, MaxPoolAndActivations) {
  const PoolDims d{2, 3, 7, 7, 3, 2};
  const int64_t nx = 2 * 3 * 49, ny = 2 * 3 * d.out_h() * d.out_w();
  expect_parity(
      {cuda_values(nx, 1), std::vector<float>(ny), cuda_values(ny, 2), std::vector<float>(nx)},
      [&](KernelFactory& k, const std::vector<float*>& p) {
        auto pool = k.max_pool(d);
        pool->forward(p[0], p[1]);
        pool->backward(p[2], p[3]);
      });
  for (Activation a : {Activation::kRelu, Activation::kTanh, Activation::kSigmoid})
    expect_parity({cuda_values(1000, 3), std::vector<float>(1000), cuda_values(1000, 4),
                   std::vector<float>(1000)},
                  [&](KernelFactory& k, const std::vector<float*>& p) {
                    auto act = k.activation(a, 1000);
                    act->forward(p[0], p[1]);
                    act->backward(p[0], p[1], p[2], p[3]);
                  });
}

TEST_F(CudaParity, SoftmaxCrossEntropyWithPaddingRows) {
  const int64_t N = 6, K = 10, n_valid = 4;
  const std::vector<int32_t> labels = {3, 0, 9, 4, 1, 1};
  double loss[2] = {0, 0};
  int which = 0;
  expect_parity({cuda_values(N * K, 1), std::vector<float>(N * K), std::vector<float>(N * K)},
                [&](KernelFactory& k, const std::vector<float*>& p) {
                  auto xent = k.softmax_xent(N, K);
                  loss[which++] = xent->forward(p[0], labels.data(), n_valid, p[1]);
                  xent->backward(p[1], labels.data(), 0.25f, p[2]);
                });
  EXPECT_NEAR(loss[1], loss[0], 1e-9 * (1 + std::abs(loss[0])));
}

TEST_F(CudaParity, DropoutDrawsTheSameMask) {
  const DropoutDims d{4, 300, 0.85f};
  const std::vector<int64_t> ids = {17, 2, 40000, 3};
  expect_parity(
      {cuda_values(1200, 1), std::vector<float>(1200), std::vector<float>(1200),
       cuda_values(1200, 2), std::vector<float>(1200)},
      [&](KernelFactory& k, const std::vector<float*>& p) {
        auto drop = k.dropout(d);
        drop->forward(p[0], ids.data(), 11, 2, p[1], p[2]);
        drop->backward(p[3], p[1], p[4]);
      },
      0.0);
}

TEST_F(CudaParity, LstmCellOnStridedRows) {
  const int64_t N = 5, H = 32, G = 4 * H, T = 2;
  expect_parity(
      {cuda_values(N * T * G, 1), cuda_values(N * G, 2), cuda_values(N * H, 3),
       std::vector<float>(N * G), std::vector<float>(N * H), std::vector<float>(N * H),
       std::vector<float>(N * H), std::vector<float>(N * T * H), cuda_values(N * T * H, 4),
       cuda_values(N * H, 5), cuda_values(N * H, 6), std::vector<float>(N * G),
       std::vector<float>(N * T * G)},
      [&](KernelFactory& k, const std::vector<float*>& p) {
        auto cell = k.lstm_cell({N, H});
        cell->forward(p[0] + G, T * G, p[1], p[2], p[3], p[4], p[5], p[6], p[7] + H, T * H, -1);
        cell->backward(p[3], p[5], p[2], p[8] + H, T * H, p[9], p[10], p[11], p[12] + G, T * G, -1);
      });
}

TEST_F(CudaParity, ScalarNormAndBatchNorm) {
  const int64_t N = 4, M = 1000;
  expect_parity({cuda_values(N * M, 1),
                 {1.3f},
                 {-0.2f},
                 std::vector<float>(N * M),
                 std::vector<float>(N),
                 std::vector<float>(N * M),
                 cuda_values(N * M, 2),
                 std::vector<float>(N * M),
                 {0.5f},
                 {0.25f}},
                [&](KernelFactory& k, const std::vector<float*>& p) {
                  auto norm = k.scalar_norm({N, M, 1e-5f});
                  norm->forward(p[0], p[1], p[2], p[3], p[4], p[5]);
                  norm->backward(p[6], p[3], p[4], p[1], p[7], p[8], p[9]);
                });
  const BatchNormDims d{N, 3, 100, 1e-5f, 0.1f};
  const int64_t n = N * 300;
  expect_parity(
      {cuda_values(n, 3),
       {1.3f, 0.7f, -0.4f},
       {-0.2f, 0.1f, 0},
       std::vector<float>(3),
       std::vector<float>(3),
       {0.5f, 0, 0},
       {1, 2, 1},
       std::vector<float>(n),
       std::vector<float>(n),
       cuda_values(n, 4),
       std::vector<float>(n),
       {0.5f, 0, 0},
       {0, 0.25f, 0}},
      [&](KernelFactory& k, const std::vector<float*>& p) {
        auto bn = k.batch_norm(d);
        bn->forward_training(p[0], p[1], p[2], p[3], p[4], p[5], p[6], p[7]);
        bn->forward_inference(p[0], p[1], p[2], p[5], p[6], p[8]);
        bn->backward(p[0], p[9], p[1], p[3], p[4], p[10], p[11], p[12]);
      },
      2e-4);
}

TEST_F(CudaParity, VectorOps) {
  const int64_t n = 70000;  // more than one grid's worth of a block per 256 elements
  double sums[2] = {0, 0};
  int which = 0;
  expect_parity({cuda_values(n, 1), cuda_values(n, 2), cuda_values(n, 3), cuda_values(n, 4),
                 cuda_values(n, 5), cuda_values(n, 6), squares(n, 7)},
                [&](KernelFactory& k, const std::vector<float*>& p) {
                  VectorOps& o = k.ops();
                  o.axpy(n, 0.3f, p[0], p[1]);
                  o.scaled_copy(n, -0.5f, p[0], p[2]);
                  o.scale(n, 0.9f, p[3]);
                  o.sgd(n, 0.1f, 0.9f, p[0], p[4], p[5]);
                  o.sgd(n, 0.1f, 0.0f, p[0], nullptr, p[5]);
                  o.adam(n, AdamStep{0.9f, 0.999f, 1e-8f, 0.01f, 1.2f}, p[0], p[1], p[6], p[5]);
                  o.copy_rows(100, 30, p[0], 50, p[2], 40);
                  sums[which++] = o.sum_squares(n, p[5]);
                  o.fill(10, 2.5f, p[3]);
                });
  // Double sums of buffers that agree to float rounding (the updates contract differently):
  // a float accumulation of 70000 terms would miss by more.
  EXPECT_NEAR(sums[1], sums[0], 1e-6 * sums[0]);
  const int64_t m = 5000;
  expect_parity({cuda_values(m, 7), cuda_values(m, 8), squares(m, 9), cuda_values(m, 10)},
                [&](KernelFactory& k, const std::vector<float*>& p) {
                  VectorOps& o = k.ops();
                  o.mean_square(m, 0.95f, p[0], p[2]);
                  o.dcasgd(m, DcAsgdStep{0.1f, 0.04f, 2.0f, 1e-7f, false}, p[0], p[1], p[2], p[3]);
                  o.dcasgd(m, DcAsgdStep{0.1f, 0.04f, 2.0f, 1e-7f, true}, p[0], p[1], p[2], p[3]);
                });
}

// The LSTM layer forward and backward, both directions: at hidden 32 and 256 (the most,
// 1024 threads a block) the CUDA backend runs each time loop as one kernel
// (forward_sequence, backward_sequence); at hidden 300, more
// than those take, as a recorded CUDA graph of its steps. Outputs and every gradient
// against the reference backend's step-by-step loops.
TEST_F(CudaParity, LstmLayerOverWholeSequences) {
  for (const int64_t H : {32, 256, 300})
    for (const bool reverse : {false, true}) {
      const int64_t N = 3, T = 5, C = 4, G = 4 * H;
      SCOPED_TRACE("hidden " + std::to_string(H) + (reverse ? ", reversed" : ""));
      // x, wx, wh, b, y, dy, dx, dwx, dwh, db
      expect_parity({cuda_values(N * T * C, 1), cuda_values(G * C, 2), cuda_values(G * H, 3),
                     cuda_values(G, 4), std::vector<float>(N * T * H), cuda_values(N * T * H, 5),
                     std::vector<float>(N * T * C), std::vector<float>(G * C),
                     std::vector<float>(G * H), std::vector<float>(G)},
                    [&](KernelFactory& k, const std::vector<float*>& p) {
                      Lstm lstm(H, 1.0f, reverse);
                      lstm.setup(Shape{{N, T, C}});
                      lstm.bind({{p[1], size_t(G * C)}, {p[2], size_t(G * H)}, {p[3], size_t(G)}},
                                {{p[7], size_t(G * C)}, {p[8], size_t(G * H)}, {p[9], size_t(G)}},
                                k);
                      const Pass pass;
                      lstm.forward(p[0], p[4], pass);
                      lstm.backward(p[0], p[4], p[5], p[6], pass);
                    });
    }
}

// A recording (a CUDA graph captured from the stream) enqueues nothing when it is made and
// all of its work on each run, on the buffers it was made with.
TEST_F(CudaParity, RecordingReplaysItsWork) {
  Device& dev = cuda->device();
  const int64_t n = 70000;
  Buffer a(n, dev), b(n, dev);
  VectorOps& o = cuda->ops();
  auto recording = dev.record([&] {
    o.fill(n, 1.0f, a.data());
    o.axpy(n, 2.0f, a.data(), b.data());
  });
  std::vector<float> back(n, -1.0f);
  dev.copy_to_host(back.data(), b.data(), n * sizeof(float));
  EXPECT_EQ(back[0], 0.0f);
  recording->run();
  recording->run();
  dev.copy_to_host(back.data(), b.data(), n * sizeof(float));
  for (int64_t i : {int64_t{0}, n / 2, n - 1}) EXPECT_EQ(back[i], 4.0f) << i;
}

TEST_F(CudaParity, DeviceEventsAndTimeline) {
  Device& dev = cuda->device();
  EXPECT_FALSE(dev.host_accessible());
  Buffer b(1 << 20, dev);
  std::vector<float> back(1 << 20, 1.0f);
  dev.copy_to_host(back.data(), b.data(), back.size() * sizeof(float));
  for (float v : back) ASSERT_EQ(v, 0.0f);  // allocations are zeroed
  auto ev = dev.make_event();
  int64_t marks[2];
  marks[0] = dev.timeline().mark();
  cuda->ops().fill(b.size(), 1.0f, b.data());
  ev->record();
  marks[1] = dev.timeline().mark();
  ev->wait();
  EXPECT_TRUE(ev->done());
  dev.timeline().resolve(marks, 2);
  EXPECT_LE(marks[0], marks[1]);
  EXPECT_GT(marks[0], 0);
}

}  // namespace
}  // namespace hpdl
