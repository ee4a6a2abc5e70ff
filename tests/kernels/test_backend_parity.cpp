// Parity of the vector operations, the loss and dropout: the CPU backend (OpenMP SIMD)
// against the reference backend (plain loops), operation by operation, below and above
// the size where threads start. Element-wise results must match bit for bit (both are built without
// fused multiply-add, which the parameter server's bitwise tests rely on); sum_squares only to its
// summation order. One known value per operation pins the reference itself.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "hpdl/kernels/kernels.hpp"
#include "hpdl/kernels/vector_ops.hpp"
#include "kernel_env.hpp"
#include "random_values.hpp"

namespace hpdl {
namespace {

std::vector<float> parity_values(int64_t n, uint64_t seed) { return uniform_values(n, seed, 1); }

std::vector<float> positive(int64_t n, uint64_t seed) {
  std::vector<float> v = parity_values(n, seed);
  for (auto& x : v) x = x * x + 1e-3f;
  return v;
}

class VectorOpsParity : public ::testing::TestWithParam<int64_t> {
 protected:
  std::unique_ptr<VectorOps> ref = make_reference_vector_ops();
  std::unique_ptr<VectorOps> cpu = make_cpu_vector_ops();
  int64_t n = GetParam();
};

// Runs op on a copy of each buffer per backend and requires equal buffers afterwards.
template <typename Op>
void expect_same(VectorOps& a, VectorOps& b, std::vector<std::vector<float>> bufs, Op op) {
  auto mine = bufs;
  op(a, bufs);
  op(b, mine);
  for (size_t k = 0; k < bufs.size(); ++k) {
    ASSERT_EQ(bufs[k].size(), mine[k].size());
    for (size_t i = 0; i < bufs[k].size(); ++i)
      ASSERT_EQ(bufs[k][i], mine[k][i]) << "buffer " << k << " element " << i;
  }
}

TEST_P(VectorOpsParity, Axpy) {
  expect_same(*ref, *cpu, {parity_values(n, 1), parity_values(n, 2)},
              [&](VectorOps& o, auto& b) { o.axpy(n, 0.37f, b[0].data(), b[1].data()); });
}

TEST_P(VectorOpsParity, ScaledCopyAndScale) {
  expect_same(*ref, *cpu, {parity_values(n, 3), parity_values(n, 4)}, [&](VectorOps& o, auto& b) {
    o.scaled_copy(n, -0.01f, b[0].data(), b[1].data());
    o.scale(n, 0.5f, b[0].data());
  });
}

TEST_P(VectorOpsParity, FillAndCopyRows) {
  const int64_t rows = 3, width = n / 3;
  expect_same(*ref, *cpu, {parity_values(n, 17), parity_values(n + 5, 18)},
              [&](VectorOps& o, auto& b) {
                o.copy_rows(rows, width, b[0].data() + 1, width, b[1].data() + 2, width + 1);
                o.fill(n / 2, 0.25f, b[0].data());
              });
}

TEST_P(VectorOpsParity, SumSquares) {
  const std::vector<float> x = parity_values(n, 5);
  const double r = ref->sum_squares(n, x.data()), c = cpu->sum_squares(n, x.data());
  EXPECT_NEAR(c, r, 1e-12 * r);
}

// L2 on some ranges and the norm of all: the ranges' elements as axpy makes them, the others
// untouched, and the sum as sum_squares gives it over the result (on both CPU backends).
TEST_P(VectorOpsParity, AxpySumSquaresOnRanges) {
  // At 100003 elements the first range runs over threads in chunks; the gaps between do not.
  const std::vector<Range> ranges =
      n < 100 ? std::vector<Range>{{1, 2}, {3, 1}, {4, 2}}
              : std::vector<Range>{{1, 70000}, {80000, 20000}, {n - 3, 2}};
  const std::vector<float> x = parity_values(n, 21), y = parity_values(n, 22);
  std::vector<float> want = y;
  for (const Range& r : ranges)
    ref->axpy(r.size, 0.3f, x.data() + r.offset, want.data() + r.offset);
  const double want_sq = ref->sum_squares(n, want.data());
  for (VectorOps* o : {ref.get(), cpu.get()}) {
    std::vector<float> got = y;
    const double sq = o->axpy_sum_squares(ranges, 0.3f, x.data(), n, got.data());
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(got[i], want[i]) << i;
    EXPECT_NEAR(sq, want_sq, 1e-12 * want_sq);
  }
}

TEST_P(VectorOpsParity, SgdPlainAndMomentum) {
  expect_same(*ref, *cpu, {parity_values(n, 6), parity_values(n, 7), parity_values(n, 8)},
              [&](VectorOps& o, auto& b) {
                o.sgd(n, 0.05f, 0.0f, b[0].data(), nullptr, b[2].data());
                o.sgd(n, 0.05f, 0.9f, b[0].data(), b[1].data(), b[2].data());
              });
}

TEST_P(VectorOpsParity, AdamTwoSteps) {
  const AdamStep s{0.9f, 0.999f, 1e-8f, 0.01f / 0.1f, 1.0f / std::sqrt(0.001f)};
  expect_same(*ref, *cpu,
              {parity_values(n, 9), parity_values(n, 10), positive(n, 11), parity_values(n, 12)},
              [&](VectorOps& o, auto& b) {
                for (int t = 0; t < 2; ++t)
                  o.adam(n, s, b[0].data(), b[1].data(), b[2].data(), b[3].data());
              });
}

TEST_P(VectorOpsParity, MeanSquareAndDcAsgd) {
  for (bool adaptive : {false, true}) {
    const DcAsgdStep s{0.1f, 0.04f, 2.0f, 1e-7f, adaptive};
    expect_same(*ref, *cpu,
                {parity_values(n, 13), parity_values(n, 14), positive(n, 15), parity_values(n, 16)},
                [&](VectorOps& o, auto& b) {
                  o.mean_square(n, 0.95f, b[0].data(), b[2].data());
                  o.dcasgd(n, s, b[0].data(), b[1].data(), b[2].data(), b[3].data());
                });
  }
}

// Below and above the 64 Ki elements where the CPU backend starts threads.
INSTANTIATE_TEST_SUITE_P(Sizes, VectorOpsParity, ::testing::Values(int64_t{7}, int64_t{100003}));

// Softmax cross-entropy and dropout, [rows, 300] (7 rows: one thread; 300: threads).
class LossDropoutParity : public ::testing::TestWithParam<int64_t> {
 protected:
  std::unique_ptr<KernelFactory> ref = make_reference_kernels();
  std::unique_ptr<KernelFactory> cpu = onednn_kernels();
  int64_t rows = GetParam(), cols = 300;
};

TEST_P(LossDropoutParity, SoftmaxXentForwardBackward) {
  const int64_t n = rows * cols;
  const std::vector<float> logits = parity_values(n, 21);
  std::vector<int32_t> labels(rows);
  for (int64_t r = 0; r < rows; ++r) labels[r] = static_cast<int32_t>((r * 37) % cols);
  std::vector<float> pr(n), pc(n), dr(n), dc(n);
  const int64_t valid = rows - 1;  // the last row is padding
  const double lr =
      ref->softmax_xent(rows, cols)->forward(logits.data(), labels.data(), valid, pr.data());
  const double lc =
      cpu->softmax_xent(rows, cols)->forward(logits.data(), labels.data(), valid, pc.data());
  EXPECT_NEAR(lc, lr, 1e-12 * lr);  // the sum over rows may be ordered differently
  EXPECT_EQ(pr, pc);
  ref->softmax_xent(rows, cols)->backward(pr.data(), labels.data(), 0.25f, dr.data());
  cpu->softmax_xent(rows, cols)->backward(pc.data(), labels.data(), 0.25f, dc.data());
  EXPECT_EQ(dr, dc);
}

TEST_P(LossDropoutParity, DropoutForwardBackward) {
  const int64_t n = rows * cols;
  const std::vector<float> x = parity_values(n, 22), dy = parity_values(n, 23);
  std::vector<int64_t> ids(rows);
  for (int64_t r = 0; r < rows; ++r) ids[r] = 1000 + 3 * r;
  std::vector<float> mr(n), mc(n), yr(n), yc(n), dxr(n), dxc(n);
  const DropoutDims d{rows, cols, 0.8f};
  ref->dropout(d)->forward(x.data(), ids.data(), 42, 7, mr.data(), yr.data());
  cpu->dropout(d)->forward(x.data(), ids.data(), 42, 7, mc.data(), yc.data());
  EXPECT_EQ(mr, mc);
  EXPECT_EQ(yr, yc);
  int64_t kept = 0;
  for (float m : mr) kept += m != 0;
  EXPECT_NEAR(double(kept) / n, 0.8, 0.05 + 1.0 / std::sqrt(double(n)));
  ref->dropout(d)->backward(dy.data(), mr.data(), dxr.data());
  cpu->dropout(d)->backward(dy.data(), mc.data(), dxc.data());
  EXPECT_EQ(dxr, dxc);
}

TEST_P(LossDropoutParity, LstmCellForwardBackward) {
  // rows samples, H = 75 units (G = 300), rows of a 2-step sequence (ld = 2 rows).
  const int64_t N = rows, H = cols / 4, G = cols, T = 2;
  const auto pre = parity_values(N * T * G, 31), rec = parity_values(N * G, 32),
             cp = parity_values(N * H, 33);
  const auto dy = parity_values(N * T * H, 34), dh = parity_values(N * H, 35),
             dc0 = parity_values(N * H, 36);
  std::vector<std::vector<float>> out[2];
  KernelFactory* backends[2] = {ref.get(), cpu.get()};
  for (int b = 0; b < 2; ++b) {
    auto cell = backends[b]->lstm_cell({N, H});
    std::vector<float> gates(N * G), c(N * H), tc(N * H), h(N * H), y(N * T * H, 0.0f);
    std::vector<float> dc = dc0, d_step(N * G), d_seq(N * T * G, 0.0f);
    cell->forward(pre.data() + G, T * G, rec.data(), cp.data(), gates.data(), c.data(), tc.data(),
                  h.data(), y.data() + H, T * H, -1);
    cell->backward(gates.data(), tc.data(), cp.data(), dy.data() + H, T * H, dh.data(), dc.data(),
                   d_step.data(), d_seq.data() + G, T * G, -1);
    out[b] = {gates, c, tc, h, y, dc, d_step, d_seq};
  }
  for (size_t k = 0; k < out[0].size(); ++k) EXPECT_EQ(out[0][k], out[1][k]) << "output " << k;
}

TEST_P(LossDropoutParity, ScalarNormForwardBackward) {
  const int64_t n = rows * cols;
  const auto x = parity_values(n, 41), dy = parity_values(n, 42);
  const float gamma = 1.3f, beta = -0.2f;
  std::vector<std::vector<float>> out[2];
  KernelFactory* backends[2] = {ref.get(), cpu.get()};
  for (int b = 0; b < 2; ++b) {
    auto norm = backends[b]->scalar_norm({rows, cols, 1e-5f});
    std::vector<float> xhat(n), inv(rows), y(n), dx(n), grads = {0.5f, 0.25f};
    norm->forward(x.data(), &gamma, &beta, xhat.data(), inv.data(), y.data());
    norm->backward(dy.data(), xhat.data(), inv.data(), &gamma, dx.data(), &grads[0], &grads[1]);
    out[b] = {xhat, inv, y, dx, grads};
  }
  for (size_t k = 0; k < 4; ++k) EXPECT_EQ(out[0][k], out[1][k]) << "output " << k;
  // The scalar gradients are sums over samples: equal up to their summation order.
  for (int j = 0; j < 2; ++j)
    EXPECT_NEAR(out[1][4][j], out[0][4][j], 1e-4 * (1 + std::abs(out[0][4][j])));
}

// oneDNN's batch-norm primitive against the reference loops: rows samples of 3 channels x 100
// positions; training forward (output, batch and running statistics), inference, backward.
TEST_P(LossDropoutParity, BatchNormForwardBackward) {
  const BatchNormDims d{rows, 3, 100, 1e-5f, 0.1f};
  const int64_t n = rows * 3 * 100;
  const auto x = parity_values(n, 51), dy = parity_values(n, 52);
  const std::vector<float> gamma = {1.3f, 0.7f, -0.4f}, beta = {-0.2f, 0.1f, 0.0f};
  std::vector<std::vector<float>> out[2];
  KernelFactory* backends[2] = {ref.get(), cpu.get()};
  for (int b = 0; b < 2; ++b) {
    auto bn = backends[b]->batch_norm(d);
    std::vector<float> mean(3), var(3), rm = {0.5f, 0, 0}, rv = {1, 2, 1}, y(n), yi(n), dx(n);
    std::vector<float> dgamma = {0.5f, 0, 0}, dbeta = {0, 0.25f, 0};  // backward adds
    bn->forward_training(x.data(), gamma.data(), beta.data(), mean.data(), var.data(), rm.data(),
                         rv.data(), y.data());
    bn->forward_inference(x.data(), gamma.data(), beta.data(), rm.data(), rv.data(), yi.data());
    bn->backward(x.data(), dy.data(), gamma.data(), mean.data(), var.data(), dx.data(),
                 dgamma.data(), dbeta.data());
    out[b] = {y, mean, var, rm, rv, yi, dx, dgamma, dbeta};
  }
  for (size_t k = 0; k < out[0].size(); ++k)
    for (size_t i = 0; i < out[0][k].size(); ++i)
      ASSERT_NEAR(out[1][k][i], out[0][k][i], 2e-4 * (1 + std::abs(out[0][k][i])))
          << "output " << k << " [" << i << "]";
}

// tanh and sigmoid: the oneDNN backend's loops (the LSTM's fast exp) against the
// reference's std::tanh and std::exp, within 1e-6 over [-12, 12] scaled inputs (7 rows:
// the vector loop's tail; 300: threads); NaN stays NaN; the derivatives from the output.
TEST_P(LossDropoutParity, TanhAndSigmoidForwardBackward) {
  const int64_t n = rows * cols;
  std::vector<float> x = parity_values(n, 31), dy = parity_values(n, 32);
  for (auto& v : x) v *= 12;
  x[n / 2] = std::numeric_limits<float>::quiet_NaN();
  for (const Activation a : {Activation::kTanh, Activation::kSigmoid}) {
    std::vector<float> yr(n), yc(n), dr(n), dc(n);
    ref->activation(a, n)->forward(x.data(), yr.data());
    cpu->activation(a, n)->forward(x.data(), yc.data());
    ref->activation(a, n)->backward(x.data(), yr.data(), dy.data(), dr.data());
    cpu->activation(a, n)->backward(x.data(), yc.data(), dy.data(), dc.data());
    for (int64_t i = 0; i < n; ++i) {
      if (i == n / 2) {
        EXPECT_TRUE(std::isnan(yc[i]));
        continue;
      }
      ASSERT_NEAR(yc[i], yr[i], 1e-6) << "forward, x = " << x[i];
      ASSERT_NEAR(dc[i], dr[i], 2e-6) << "backward, x = " << x[i];
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Rows, LossDropoutParity, ::testing::Values(int64_t{7}, int64_t{300}));

TEST(VectorOpsReference, KnownValues) {
  auto o = make_reference_vector_ops();
  std::vector<float> x = {1, -2, 3}, y = {1, 1, 1};
  o->axpy(3, 2, x.data(), y.data());
  EXPECT_EQ(y, (std::vector<float>{3, -3, 7}));
  EXPECT_EQ(o->sum_squares(3, x.data()), 14.0);
  std::vector<float> w = {1, 1, 1}, v = {0, 0, 0};
  o->sgd(3, 0.5f, 0.5f, x.data(), v.data(), w.data());  // v = g; w -= 0.5 g
  EXPECT_EQ(w, (std::vector<float>{0.5f, 2, -0.5f}));
  o->sgd(3, 0.5f, 0.5f, x.data(), v.data(), w.data());  // v = 1.5 g; w -= 0.75 g
  EXPECT_EQ(w, (std::vector<float>{-0.25f, 3.5f, -2.75f}));
  // Adam's first step moves each weight by lr * sign(g) (bias-corrected m/sqrt(v) = +-1).
  std::vector<float> m(3, 0), s2(3, 0), w2(3, 0);
  const float b1 = 0.9f, b2 = 0.999f;
  o->adam(3, {b1, b2, 0.0f, 0.1f / (1 - b1), 1.0f / std::sqrt(1 - b2)}, x.data(), m.data(),
          s2.data(), w2.data());
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(w2[i], x[i] > 0 ? -0.1f : 0.1f, 1e-5f);
  // DC-ASGD with lambda 0 is SGD; with w == bak too.
  std::vector<float> w3 = {1, 1, 1}, bak = {0, 0, 0};
  o->dcasgd(3, {0.5f, 0.0f, 0.0f, 0.0f, false}, x.data(), bak.data(), nullptr, w3.data());
  EXPECT_EQ(w3, (std::vector<float>{0.5f, 2, -0.5f}));
}

}  // namespace
}  // namespace hpdl
