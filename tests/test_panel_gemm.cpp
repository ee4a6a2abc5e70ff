// The panel product (src/kernels/panel_gemm.hpp) against a product in double (a stricter
// oracle than the reference backend's float loops) for every remainder of rows and columns
// a tile can meet; a row's result does not depend on the other rows or the threads; and
// the LSTM's per-step products on the oneDNN backend (panels) against the reference
// backend's (its dense kernel).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "hpdl/kernels/kernels.hpp"
#include "kernel_passes.hpp"
#include "panel_gemm.hpp"
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

TEST(RecurrentProduct, OneDnnPanelsAgreeWithTheReferenceDense) {
  auto ref = make_kernel_factory("reference");
  auto fast = make_kernel_factory("onednn");
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
