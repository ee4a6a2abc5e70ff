// The panel product and the sums of outer products (src/kernels/cpu/panel_gemm.hpp) against
// products in double (a stricter oracle than the reference backend's float loops) for
// every remainder of rows and columns a tile can meet; a row's result does not depend on
// the other rows or the threads; the LSTM's per-step products on the oneDNN backend
// (panels) against the reference backend's (its dense kernel), and its weight and input
// gradients a step at a time against sums in double.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "cpu/panel_gemm.hpp"
#include "cpu/vector_width.hpp"
#include "hpdl/kernels/kernels.hpp"
#include "kernel_env.hpp"
#include "kernel_passes.hpp"
#include "omp_threads.hpp"
#include "random_values.hpp"

using namespace hpdl;

namespace {

struct Case {
  int64_t m, k, n;
};

// c = a b in double, a [m, k] and b [k, n] row-major.
std::vector<double> product(const Case& s, const std::vector<float>& a,
                            const std::vector<float>& b) {
  std::vector<double> c(size_t(s.m * s.n), 0.0);
  for (int64_t i = 0; i < s.m; ++i)
    for (int64_t j = 0; j < s.n; ++j)
      for (int64_t p = 0; p < s.k; ++p) c[i * s.n + j] += double(a[i * s.k + p]) * b[p * s.n + j];
  return c;
}

TEST(PanelGemm, EveryTileRemainderAgainstDouble) {
  // Rows 1..25 meet every remainder of 6- and 12-row tiles; columns narrower than one vector,
  // between one and two, and several panels with a partial last one.
  const std::vector<int64_t> cols = {1, 3, 12, 16, 33, 64, 100};
  for (int64_t m = 1; m <= 25; m += 4)
    for (int64_t n : cols)
      for (int64_t k : {int64_t{1}, int64_t{7}, int64_t{32}}) {
        const Case s{m, k, n};
        SCOPED_TRACE(::testing::Message() << m << " x " << k << " by " << k << " x " << n);
        const auto a = uniform_values(m * k, 1, 70), b = uniform_values(k * n, 2, 70);
        PanelMatrix pm(k, n);
        pm.pack(b.data(), n, 1);
        const int64_t ldc = n + 3;  // rows apart, with columns the product must not write
        std::vector<float> c(size_t(m * ldc), -7.0f);
        pm.multiply(m, a.data(), k, c.data(), ldc);
        const auto want = product(s, a, b);
        for (int64_t i = 0; i < m; ++i) {
          for (int64_t j = 0; j < n; ++j)
            ASSERT_NEAR(c[i * ldc + j], want[i * n + j], 1e-5 * double(k)) << i << ", " << j;
          for (int64_t j = n; j < ldc; ++j) ASSERT_EQ(c[i * ldc + j], -7.0f) << i << ", " << j;
        }
      }
}

TEST(PanelGemm, PacksATransposeAndEachRowAloneGivesTheSameBits) {
  const Case s{19, 16, 64};
  const auto a = uniform_values(s.m * s.k, 3, 70), bt = uniform_values(s.n * s.k, 4, 70);
  PanelMatrix pm(s.k, s.n);
  pm.pack(bt.data(), 1, s.k);  // b(i, j) = bt[j, i]
  std::vector<float> all(size_t(s.m * s.n)), one(size_t(s.n));
  pm.multiply(s.m, a.data(), s.k, all.data(), s.n);
  for (int64_t i = 0; i < s.m; ++i) {
    pm.multiply(1, a.data() + i * s.k, s.k, one.data(), s.n);
    for (int64_t j = 0; j < s.n; ++j) {
      ASSERT_EQ(all[i * s.n + j], one[j]) << i << ", " << j;
      double want = 0;
      for (int64_t p = 0; p < s.k; ++p) want += double(a[i * s.k + p]) * bt[j * s.k + p];
      ASSERT_NEAR(one[j], want, 1e-5 * double(s.k));
    }
  }
}

TEST(PanelGemm, RowsSharedOverThreadsGiveTheSameBits) {
  for (const Case s : {Case{64, 64, 256}, Case{29, 7, 20}, Case{5, 3, 4}}) {
    SCOPED_TRACE(::testing::Message() << s.m << " x " << s.k << " by " << s.k << " x " << s.n);
    const auto a = uniform_values(s.m * s.k, 10, 70), b = uniform_values(s.k * s.n, 11, 70);
    PanelMatrix pm(s.k, s.n);
    pm.pack(b.data(), s.n, 1);
    std::vector<float> one(size_t(s.m * s.n)), three(size_t(s.m * s.n), -1.0f);
    pm.multiply(s.m, a.data(), s.k, one.data(), s.n);
    pm.multiply(s.m, a.data(), s.k, three.data(), s.n, 3);
    EXPECT_EQ(one, three);
  }
}

TEST(PanelGemm, OuterProductSumsEveryTileRemainderAgainstDouble) {
  // c's rows 1..25 meet every remainder of 6- and 12-row tiles; its columns (b's) narrower
  // than one vector, between one and two, several panels with a partial last one. a and b
  // have rows wider than the product reads, c columns it must not write.
  for (int64_t m = 1; m <= 25; m += 4)
    for (int64_t n : {1, 3, 12, 16, 33, 64, 100})
      for (int64_t k : {1, 7, 50}) {
        SCOPED_TRACE(::testing::Message() << "K " << k << ", M " << m << ", N " << n);
        const int64_t lda = m + 2, ldb = n + 1, ldc = n + 3;
        const auto a = uniform_values(k * lda, 5, 70), b = uniform_values(k * ldb, 6, 70);
        const auto c0 = uniform_values(m * ldc, 7, 70);
        std::vector<float> c = c0, shared = c0;
        add_outer_products(k, m, n, a.data(), lda, b.data(), ldb, c.data(), ldc);
        add_outer_products(k, m, n, a.data(), lda, b.data(), ldb, shared.data(), ldc, 3);
        ASSERT_EQ(c, shared);  // the rows shared over threads: the same bits
        for (int64_t i = 0; i < m; ++i) {
          for (int64_t j = 0; j < n; ++j) {
            double want = c0[i * ldc + j];
            for (int64_t p = 0; p < k; ++p) want += double(a[p * lda + i]) * b[p * ldb + j];
            ASSERT_NEAR(c[i * ldc + j], want, 1e-5 * double(k + 1)) << i << ", " << j;
          }
          for (int64_t j = n; j < ldc; ++j) ASSERT_EQ(c[i * ldc + j], c0[i * ldc + j]);
        }
      }
}

// Which LSTMs take their gradients a step at a time on the oneDNN backend; and three
// backward steps of an LSTM's gate gradients d_s [N, G] through step_gradients(), also for
// shapes the layer takes the other way (every remainder of the tiles):
// dWh += d_s^T h_{s-1} (none at the first step), dWx += d_s^T x_s, db += d_s's column sums,
// dx_s = d_s wx, with the steps' rows of x and dx a sequence of three steps apart.
TEST(RecurrentProduct, OneDnnGradientsByStepAgainstDouble) {
  EXPECT_FALSE(test_kernels("reference")->recurrent_product({7, 5, 3})->gradients_by_step());
  auto fast = test_kernels("onednn");
  {
    OmpThreads one(1);
    EXPECT_TRUE(fast->recurrent_product({13, 32, 32})->gradients_by_step());
    // One-vector panels (16 floats with AVX-512): the products over all steps.
    EXPECT_EQ(fast->recurrent_product({50, 16, 16})->gradients_by_step(), 16 >= 2 * kVectorFloats);
    EXPECT_FALSE(fast->recurrent_product({13, 32})->gradients_by_step());  // no inputs named
    OmpThreads two(2);
    EXPECT_FALSE(
        fast->recurrent_product({13, 32, 32})->gradients_by_step());          // a thread would wait
    EXPECT_TRUE(fast->recurrent_product({64, 64, 64})->gradients_by_step());  // shared
  }
  constexpr int64_t T = 3;
  for (const RecurrentDims d : {RecurrentDims{7, 5, 3}, RecurrentDims{50, 16, 16},
                                RecurrentDims{13, 32, 9}, RecurrentDims{64, 64, 64}}) {
    const int64_t N = d.batch, H = d.hidden, G = 4 * H, C = d.inputs, ld = T * C;
    SCOPED_TRACE(::testing::Message() << "N " << N << ", H " << H << ", C " << C);
    // HHAR's size (64 x 64 by 64 x 256) shares its rows and sums over 3 threads; the others
    // run on the rank's only thread.
    OmpThreads scope(N == 64 ? 3 : 1);
    auto kernel = fast->recurrent_product(d);
    const auto wh = uniform_values(G * H, 30, 70), wx = uniform_values(G * C, 31, 70);
    const auto x = uniform_values(N * ld, 32, 70), h = uniform_values(T * N * H, 33, 70);
    const auto dg = uniform_values(T * N * G, 34, 70);
    const auto dwh0 = uniform_values(G * H, 35, 70), dwx0 = uniform_values(G * C, 36, 70),
               db0 = uniform_values(G, 37, 70);
    std::vector<float> dwh = dwh0, dwx = dwx0, db = db0, dx(N * ld, -9.0f);
    kernel->use_weights(wh.data());
    kernel->use_input_weights(wx.data());
    for (int64_t s = 0; s < T; ++s) {
      kernel->step_gradients(dg.data() + s * N * G, s ? h.data() + (s - 1) * N * H : nullptr,
                             x.data() + s * C, dx.data() + s * C, ld, dwh.data(), dwx.data(),
                             db.data());
    }
    const double tol = 1e-5 * double(T * N + 1);
    for (int64_t g = 0; g < G; ++g) {
      double want_b = db0[g];
      for (int64_t s = 0; s < T; ++s)
        for (int64_t n = 0; n < N; ++n) want_b += dg[(s * N + n) * G + g];
      ASSERT_NEAR(db[g], want_b, tol) << g;
      for (int64_t j = 0; j < H; ++j) {
        double want = dwh0[g * H + j];
        for (int64_t s = 1; s < T; ++s)
          for (int64_t n = 0; n < N; ++n)
            want += double(dg[(s * N + n) * G + g]) * h[((s - 1) * N + n) * H + j];
        ASSERT_NEAR(dwh[g * H + j], want, tol) << g << ", " << j;
      }
      for (int64_t c = 0; c < C; ++c) {
        double want = dwx0[g * C + c];
        for (int64_t s = 0; s < T; ++s)
          for (int64_t n = 0; n < N; ++n)
            want += double(dg[(s * N + n) * G + g]) * x[n * ld + s * C + c];
        ASSERT_NEAR(dwx[g * C + c], want, tol) << g << ", " << c;
      }
    }
    for (int64_t s = 0; s < T; ++s)
      for (int64_t n = 0; n < N; ++n)
        for (int64_t c = 0; c < C; ++c) {
          double want = 0;
          for (int64_t g = 0; g < G; ++g) want += double(dg[(s * N + n) * G + g]) * wx[g * C + c];
          ASSERT_NEAR(dx[n * ld + s * C + c], want, 1e-5 * double(G)) << s << ", " << n;
        }
  }
}

TEST(RecurrentProduct, OneDnnPanelsAgreeWithTheReferenceDense) {
  auto ref = test_kernels("reference");
  auto fast = test_kernels("onednn");
  const ValuesFn values = [](int64_t n, uint64_t seed) { return uniform_values(n, seed, 70); };
  // The last one large enough for the rank's threads to share it.
  for (const RecurrentDims d :
       {RecurrentDims{7, 5}, RecurrentDims{50, 16}, RecurrentDims{13, 32}, RecurrentDims{64, 64}}) {
    SCOPED_TRACE(::testing::Message() << "N " << d.batch << ", H " << d.hidden);
    const auto r = recurrent_pass(*ref, d, values), f = recurrent_pass(*fast, d, values);
    const auto &rec_r = r[0], &rec_f = f[0], &dh_r = r[1], &dh_f = f[1];
    for (size_t i = 0; i < rec_r.size(); ++i) ASSERT_NEAR(rec_f[i], rec_r[i], 1e-5 * d.hidden) << i;
    for (size_t i = 0; i < dh_r.size(); ++i)
      ASSERT_NEAR(dh_f[i], dh_r[i], 1e-5 * 4 * d.hidden) << i;
  }
}

}  // namespace
