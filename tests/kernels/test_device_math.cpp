// The CUDA backend's per-element arithmetic, run on the host: the HPDL_HD functions that its
// kernels call per thread (device_math.hpp, element_math.hpp), composed here exactly as the
// kernels compose them (im2col, one GEMM over the batch, the layout permutation, the gather
// backwards of col2im and max pooling, block sums for the norms), and compared with the
// reference backend. This checks the GPU's math on machines without a GPU; the GPU tests
// (test_cuda_backend.cpp) then only have to show that the kernels run it.
#include <gtest/gtest.h>

#include <cmath>
#include <ostream>
#include <vector>

#include "device_math.hpp"
#include "element_math.hpp"
#include "hpdl/kernels/kernels.hpp"
#include "random_values.hpp"

namespace hpdl {

// Readable test names (CTest lists each instantiation by its parameter).
void PrintTo(const ConvDims& d, std::ostream* os) {
  *os << "N" << d.batch << "_C" << d.in_c << "_" << d.in_h << "x" << d.in_w << "_O" << d.out_c
      << "_K" << d.kernel << "_S" << d.stride << "_P" << d.pad;
}
void PrintTo(const PoolDims& d, std::ostream* os) {
  *os << "N" << d.batch << "_C" << d.channels << "_" << d.in_h << "x" << d.in_w << "_K" << d.kernel
      << "_S" << d.stride;
}

namespace {

std::vector<float> device_values(int64_t n, uint64_t seed) { return uniform_values(n, seed, 7); }

void expect_near(const std::vector<float>& want, const std::vector<float>& got, double tol,
                 const char* what) {
  ASSERT_EQ(want.size(), got.size()) << what;
  for (size_t i = 0; i < want.size(); ++i)
    ASSERT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << what << " [" << i << "]";
}

// Row-major C[M, N] = A[M, K] B[K, N] with A, B read through strides (a, b: element (i, j)
// at i * a_row + j * a_col), added to C when accumulate: the GEMMs the CUDA kernels issue.
void host_gemm(int64_t M, int64_t N, int64_t K, const float* A, int64_t a_row, int64_t a_col,
               const float* B, int64_t b_row, int64_t b_col, float* C, bool accumulate) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = accumulate ? C[i * N + j] : 0.0;
      for (int64_t k = 0; k < K; ++k)
        s += double(A[i * a_row + k * a_col]) * B[k * b_row + j * b_col];
      C[i * N + j] = static_cast<float>(s);
    }
}

class ConvAsGemm : public ::testing::TestWithParam<ConvDims> {};

TEST_P(ConvAsGemm, MatchesTheReferenceForwardAndBackward) {
  const ConvDims d = GetParam();
  const dmath::ConvShape s = dmath::conv_shape(d);
  const int64_t R = s.C * s.K * s.K, PQ = s.OH * s.OW, Q = s.N * PQ;
  const int64_t nx = s.N * s.C * s.H * s.W, ny = s.N * s.O * PQ;
  const auto x = device_values(nx, 1), w = device_values(s.O * R, 2), b = device_values(s.O, 3),
             dy = device_values(ny, 4);

  auto ref = make_reference_kernels()->conv(d);
  std::vector<float> y_ref(ny), dx_ref(nx), dw_ref = device_values(s.O * R, 5),
                                            db_ref = device_values(s.O, 6);
  std::vector<float> dw = dw_ref, db = db_ref;  // backward adds to both
  ref->forward(x.data(), w.data(), b.data(), y_ref.data());
  ref->backward(x.data(), w.data(), dy.data(), dx_ref.data(), dw_ref.data(), db_ref.data());

  // Forward as CudaConv: col [R, Q]; t [O, Q] = w [O, R] col; y = t in [N, O, PQ] + b.
  std::vector<float> col(R * Q), t(s.O * Q), y(ny);
  for (int64_t i = 0; i < R * Q; ++i) col[i] = dmath::im2col_value(s, x.data(), i / Q, i % Q);
  host_gemm(s.O, Q, R, w.data(), R, 1, col.data(), Q, 1, t.data(), false);
  for (int64_t i = 0; i < ny; ++i) y[i] = t[dmath::gemm_index(i, s.N, s.O, PQ)] + b[i / PQ % s.O];
  expect_near(y_ref, y, 1e-5, "y");

  // Backward: t = dy in the GEMM layout; db += channel sums; dw += t col^T; dcol = w^T t;
  // dx = col2im(dcol).
  for (int64_t i = 0; i < ny; ++i) t[dmath::gemm_index(i, s.N, s.O, PQ)] = dy[i];
  for (int64_t i = 0; i < ny; ++i) db[i / PQ % s.O] += dy[i];
  host_gemm(s.O, R, Q, t.data(), Q, 1, col.data(), 1, Q, dw.data(), true);
  std::vector<float> dcol(R * Q), dx(nx);
  host_gemm(R, Q, s.O, w.data(), 1, R, t.data(), Q, 1, dcol.data(), false);
  for (int64_t i = 0; i < nx; ++i) dx[i] = dmath::col2im_value(s, dcol.data(), i);
  expect_near(dx_ref, dx, 1e-5, "dx");
  // The same index functions on 32-bit indices (the GPU's where every tensor fits) give
  // exactly the same values.
  const auto n = dmath::narrow(s);
  using I = int32_t;
  for (int64_t i = 0; i < R * Q; ++i)
    ASSERT_EQ(dmath::im2col_value(n, x.data(), I(i / Q), I(i % Q)), col[i]) << "col " << i;
  for (int64_t i = 0; i < ny; ++i)
    ASSERT_EQ(dmath::gemm_index(I(i), n.N, n.O, I(PQ)), dmath::gemm_index(i, s.N, s.O, PQ));
  for (int64_t i = 0; i < nx; ++i)
    ASSERT_EQ(dmath::col2im_value(n, dcol.data(), I(i)), dx[i]) << "dx " << i;
  expect_near(dw_ref, dw, 1e-5, "dw");
  expect_near(db_ref, db, 1e-5, "db");
}

// N, C, H, W, O, K, S, P: padded and strided, unpadded, a kernel as large as the image, and
// a stride larger than the kernel (input pixels no tap reads).
INSTANTIATE_TEST_SUITE_P(Shapes, ConvAsGemm,
                         ::testing::Values(ConvDims{2, 3, 7, 6, 4, 3, 2, 1},
                                           ConvDims{3, 2, 8, 8, 5, 5, 1, 0},
                                           ConvDims{2, 1, 5, 5, 3, 5, 1, 0},
                                           ConvDims{1, 2, 9, 7, 2, 2, 3, 1}));

TEST(DeviceMath, GemmLayoutIsAPermutation) {
  const int64_t N = 3, O = 4, PQ = 5;
  std::vector<int> hits(N * O * PQ, 0);
  for (int64_t i = 0; i < N * O * PQ; ++i) ++hits[dmath::gemm_index(i, N, O, PQ)];
  for (int h : hits) EXPECT_EQ(h, 1);
}

class PoolGather : public ::testing::TestWithParam<PoolDims> {};

TEST_P(PoolGather, MatchesTheReferenceIncludingTiesAndOverlaps) {
  const PoolDims d = GetParam();
  const int64_t OH = d.out_h(), OW = d.out_w();
  const int64_t nx = d.batch * d.channels * d.in_h * d.in_w, ny = d.batch * d.channels * OH * OW;
  auto x = device_values(nx, 11);
  for (auto& v : x) v = std::round(v * 3) / 3;  // few distinct values: many ties
  const auto dy = device_values(ny, 12);
  auto ref = make_reference_kernels()->max_pool(d);
  std::vector<float> y_ref(ny), dx_ref(nx), y(ny), dx(nx);
  ref->forward(x.data(), y_ref.data());
  ref->backward(dy.data(), dx_ref.data());
  std::vector<int64_t> arg(ny);
  for (int64_t o = 0; o < ny; ++o)
    y[o] = dmath::pool_max(x.data(), d.in_h, d.in_w, OH, OW, d.kernel, d.stride, o, &arg[o]);
  for (int64_t i = 0; i < nx; ++i)
    dx[i] = dmath::pool_dx(dy.data(), arg.data(), d.in_h, d.in_w, OH, OW, d.kernel, d.stride, i);
  EXPECT_EQ(y_ref, y);
  expect_near(dx_ref, dx, 1e-6, "dx");
  using I = int32_t;  // 32-bit indices: exactly the same
  std::vector<int64_t> arg32(ny);
  for (int64_t o = 0; o < ny; ++o)
    ASSERT_EQ(dmath::pool_max(x.data(), I(d.in_h), I(d.in_w), I(OH), I(OW), I(d.kernel),
                              I(d.stride), I(o), &arg32[o]),
              y[o]);
  EXPECT_EQ(arg32, arg);
  for (int64_t i = 0; i < nx; ++i)
    ASSERT_EQ(dmath::pool_dx(dy.data(), arg.data(), I(d.in_h), I(d.in_w), I(OH), I(OW), I(d.kernel),
                             I(d.stride), I(i)),
              dx[i]);
}

// Overlapping windows (3 / 2), tiling windows (2 / 2), windows with gaps (2 / 3).
INSTANTIATE_TEST_SUITE_P(Shapes, PoolGather,
                         ::testing::Values(PoolDims{2, 3, 7, 7, 3, 2}, PoolDims{2, 2, 8, 6, 2, 2},
                                           PoolDims{1, 2, 8, 8, 2, 3}));

TEST(DeviceMath, ActivationsMatchTheReference) {
  const int64_t n = 1000;
  const auto x = device_values(n, 21), dy = device_values(n, 22);
  for (Activation a : {Activation::kRelu, Activation::kTanh, Activation::kSigmoid}) {
    auto ref = make_reference_kernels()->activation(a, n);
    std::vector<float> y_ref(n), dx_ref(n), y(n), dx(n);
    ref->forward(x.data(), y_ref.data());
    ref->backward(x.data(), y_ref.data(), dy.data(), dx_ref.data());
    for (int64_t i = 0; i < n; ++i) y[i] = dmath::activation_forward(a, x[i]);
    for (int64_t i = 0; i < n; ++i) dx[i] = dmath::activation_backward(a, x[i], y[i], dy[i]);
    expect_near(y_ref, y, 1e-6, "y");
    expect_near(dx_ref, dx, 1e-6, "dx");
  }
}

// The sums a CUDA block forms: kThreads strided partial sums, then a tree (block_sum2).
void block_sums(const std::vector<double>& a, const std::vector<double>& b, double* sa,
                double* sb) {
  constexpr int kT = 256;
  std::vector<double> pa(kT, 0.0), pb(kT, 0.0);
  for (size_t i = 0; i < a.size(); ++i) pa[i % kT] += a[i], pb[i % kT] += b[i];
  for (int half = kT / 2; half > 0; half /= 2)
    for (int t = 0; t < half; ++t) pa[t] += pa[t + half], pb[t] += pb[t + half];
  *sa = pa[0], *sb = pb[0];
}

TEST(DeviceMath, ScalarNormInBlockSumsMatchesTheReference) {
  const int64_t N = 3, M = 1000;
  const auto x = device_values(N * M, 31), dy = device_values(N * M, 32);
  const float gamma = 0.7f, beta = 0.1f, eps = 1e-5f;
  auto ref = make_reference_kernels()->scalar_norm({N, M, eps});
  std::vector<float> xhat_ref(N * M), inv_ref(N), y_ref(N * M), dx_ref(N * M), g_ref = {0, 0};
  ref->forward(x.data(), &gamma, &beta, xhat_ref.data(), inv_ref.data(), y_ref.data());
  ref->backward(dy.data(), xhat_ref.data(), inv_ref.data(), &gamma, dx_ref.data(), &g_ref[0],
                &g_ref[1]);
  // As the CUDA kernels: per sample, block sums -> norm_inv_std -> xhat, y; backward block
  // sums -> batch_norm_dx; scale and shift gradients from per-sample partials.
  std::vector<float> xhat(N * M), y(N * M), dx(N * M);
  double dgamma = 0, dbeta = 0;
  for (int64_t n = 0; n < N; ++n) {
    std::vector<double> v(M), v2(M);
    for (int64_t i = 0; i < M; ++i)
      v[i] = x[n * M + i], v2[i] = double(x[n * M + i]) * x[n * M + i];
    double sum, sq;
    block_sums(v, v2, &sum, &sq);
    float mean;
    const float inv = math::norm_inv_std(sum, sq, M, eps, &mean);
    for (int64_t i = 0; i < M; ++i) {
      xhat[n * M + i] = (x[n * M + i] - mean) * inv;
      y[n * M + i] = gamma * xhat[n * M + i] + beta;
    }
    for (int64_t i = 0; i < M; ++i)
      v[i] = dy[n * M + i], v2[i] = double(dy[n * M + i]) * xhat[n * M + i];
    double s, sx;
    block_sums(v, v2, &s, &sx);
    for (int64_t i = 0; i < M; ++i)
      dx[n * M + i] = math::batch_norm_dx(dy[n * M + i], xhat[n * M + i], gamma * inv,
                                          static_cast<float>(s / M), static_cast<float>(sx / M));
    dbeta += s, dgamma += sx;
  }
  expect_near(xhat_ref, xhat, 1e-5, "xhat");
  expect_near(y_ref, y, 1e-5, "y");
  expect_near(dx_ref, dx, 1e-5, "dx");
  expect_near(g_ref, {static_cast<float>(dgamma), static_cast<float>(dbeta)}, 1e-5,
              "dgamma, dbeta");
}

TEST(DeviceMath, DropoutMaskPerElementIsTheReferenceMask) {
  const DropoutDims d{4, 300, 0.8f};
  const std::vector<int64_t> ids = {7, 1, 123456, 0};
  const auto x = device_values(d.batch * d.per_sample, 41);
  std::vector<float> mask(x.size()), y(x.size());
  make_reference_kernels()->dropout(d)->forward(x.data(), ids.data(), 99, 5, mask.data(), y.data());
  for (int64_t i = 0; i < d.batch * d.per_sample; ++i)
    ASSERT_EQ(mask[i], math::dropout_mask(99, 5, ids[i / d.per_sample], i % d.per_sample, d.keep))
        << i;
}

// The LSTM cell a unit at a time (lstm_unit_forward / backward, as a CUDA thread runs it)
// against the reference backend's gate loops, at the hidden sizes those loops take as
// compile-time constants (16, 32, 64) and one they do not (75); on strided rows of a
// 2-step sequence.
TEST(DeviceMath, LstmCellPerUnitIsTheReferenceCell) {
  const int64_t N = 3, T = 2;
  for (const int64_t H : {16, 32, 64, 75}) {
    const int64_t G = 4 * H;
    const auto pre = device_values(N * T * G, 51), rec = device_values(N * G, 52),
               cp = device_values(N * H, 53);
    const auto dy = device_values(N * T * H, 54), dh = device_values(N * H, 55),
               dc0 = device_values(N * H, 56);
    std::vector<float> gates(N * G), c(N * H), tc(N * H), h(N * H), y(N * T * H, 0.0f);
    std::vector<float> dc = dc0, d(N * G);
    auto cell = make_reference_kernels()->lstm_cell({N, H});
    cell->forward(pre.data() + G, T * G, rec.data(), cp.data(), gates.data(), c.data(), tc.data(),
                  h.data(), y.data() + H, T * H, 0);
    cell->backward(gates.data(), tc.data(), cp.data(), dy.data() + H, T * H, dh.data(), dc.data(),
                   d.data(), nullptr, 0, 0);
    std::vector<float> ug(N * G), uc(N * H), utc(N * H), uh(N * H), uy(N * T * H, 0.0f);
    std::vector<float> udc = dc0, ud(N * G);
    for (int64_t n = 0; n < N; ++n) {
      for (int64_t j = 0; j < H; ++j) {
        math::lstm_unit_forward(pre.data() + G + n * T * G, rec.data() + n * G, cp.data() + n * H,
                                ug.data() + n * G, uc.data() + n * H, utc.data() + n * H,
                                uh.data() + n * H, uy.data() + H + n * T * H, H, j);
        math::lstm_unit_backward(ug.data() + n * G, utc.data() + n * H, cp.data() + n * H,
                                 dy.data() + H + n * T * H, dh.data() + n * H, udc.data() + n * H,
                                 ud.data() + n * G, H, j);
      }
    }
    SCOPED_TRACE("H = " + std::to_string(H));
    expect_near(gates, ug, 1e-6, "gates");
    expect_near(c, uc, 1e-6, "c");
    expect_near(tc, utc, 1e-6, "tanh(c)");
    expect_near(h, uh, 1e-6, "h");
    expect_near(y, uy, 1e-6, "y");
    expect_near(dc, udc, 1e-6, "dc");
    expect_near(d, ud, 1e-6, "d");
  }
}

}  // namespace
}  // namespace hpdl
