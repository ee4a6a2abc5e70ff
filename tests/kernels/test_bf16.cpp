// run.precision = "bf16" on the oneDNN backend: dense and conv kernels round x, w and dy to
// bfloat16 and accumulate in f32. Against the reference backend in f32: equal (up to f32
// summation order) on inputs that bf16 holds exactly, within bf16 rounding on random ones,
// and not equal there (the bf16 path really ran). The refusals where bf16 cannot run.
// Skipped on a CPU without AVX512_BF16 / AMX-BF16 and under HPDL_GEMM=blas, with the reason.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "hpdl/core/error.hpp"
#include "hpdl/kernels/kernels.hpp"
#include "kernel_env.hpp"
#include "kernel_passes.hpp"
#include "random_values.hpp"

namespace hpdl {
namespace {

// n values on a grid of 1/8 in [-1, 1]: exact in bf16 (8 significant bits), and every
// product and partial sum of a few hundred of them is exact in f32.
std::vector<float> on_grid(int64_t n, uint64_t seed) {
  std::vector<float> v = uniform_values(n, seed, 7);
  for (auto& x : v) x = std::round(x * 8) / 8;
  return v;
}

class Bf16Kernels : public ::testing::Test {
 protected:
  void SetUp() override {
    try {
      bf16 = onednn_kernels(Precision::kBf16);
    } catch (const Error& e) {
      GTEST_SKIP() << e.what();
    }
  }
  std::unique_ptr<KernelFactory> ref = make_reference_kernels();
  std::unique_ptr<KernelFactory> bf16;
};

std::vector<float> bf16_values(int64_t n, uint64_t seed) { return uniform_values(n, seed, 7); }

const char* kOutputs[] = {"y", "dx", "dw", "db"};

// The dense pass in bf16 equals the reference's f32 one on bf16-exact values.
void expect_dense_exact_on_grid(KernelFactory& ref, KernelFactory& bf16, DenseDims d) {
  d.precision = Precision::kF32;
  const auto want = dense_pass(ref, d, on_grid);
  d.precision = Precision::kBf16;
  const auto got = dense_pass(bf16, d, on_grid);
  for (size_t k = 0; k < want.size(); ++k) EXPECT_EQ(got[k], want[k]) << kOutputs[k];
}

TEST_F(Bf16Kernels, DenseIsExactOnBf16Values) {
  expect_dense_exact_on_grid(*ref, *bf16, DenseDims{37, 120, 20});
}

// 4100 rows: the weight gradient taken as (x^T dy)^T (an LSTM's product over all steps).
TEST_F(Bf16Kernels, DenseOverManyRowsIsExactOnBf16Values) {
  expect_dense_exact_on_grid(*ref, *bf16, DenseDims{4100, 6, 16});
}

TEST_F(Bf16Kernels, DenseIsWithinBf16RoundingOnRandomValues) {
  DenseDims d{64, 300, 50, Precision::kF32};
  const auto want = dense_pass(*ref, d, bf16_values);
  d.precision = Precision::kBf16;
  const auto got = dense_pass(*bf16, d, bf16_values);
  for (size_t k = 0; k < 3; ++k) {  // db sums dy in f32: no rounding to bf16
    const double e = relative_error(got[k], want[k]);
    EXPECT_LT(e, 1e-2) << kOutputs[k];
    EXPECT_GT(e, 1e-5) << kOutputs[k] << ": as exact as f32, so bf16 did not run";
  }
}

TEST_F(Bf16Kernels, ConvIsExactOnBf16Values) {
  for (ConvDims d : {ConvDims{4, 3, 12, 12, 8, 3, 1, 1}, ConvDims{3, 1, 11, 11, 6, 5, 2, 0}}) {
    const auto want = conv_pass(*ref, d, on_grid);
    d.precision = Precision::kBf16;
    const auto got = conv_pass(*bf16, d, on_grid);
    for (size_t k = 0; k < want.size(); ++k) EXPECT_EQ(got[k], want[k]) << kOutputs[k];
  }
}

TEST_F(Bf16Kernels, ConvIsWithinBf16RoundingOnRandomValues) {
  ConvDims d{8, 20, 12, 12, 16, 5, 1, 0};
  const auto want = conv_pass(*ref, d, bf16_values);
  d.precision = Precision::kBf16;
  const auto got = conv_pass(*bf16, d, bf16_values);
  for (size_t k = 0; k < 3; ++k) {
    const double e = relative_error(got[k], want[k]);
    EXPECT_LT(e, 1e-2) << kOutputs[k];
    EXPECT_GT(e, 1e-5) << kOutputs[k] << ": as exact as f32, so bf16 did not run";
  }
}

TEST_F(Bf16Kernels, FactoryReportsItsPrecision) {
  EXPECT_EQ(bf16->precision(), Precision::kBf16);
  EXPECT_EQ(ref->precision(), Precision::kF32);
}

TEST(Bf16Refusals, OtherBackendsAndNamesAreRefused) {
  EXPECT_EQ(parse_word<Precision>("bf16", "run.precision"), Precision::kBf16);
  EXPECT_EQ(parse_word<Precision>("f32", "run.precision"), Precision::kF32);
  try {
    parse_word<Precision>("fp16", "run.precision");
    FAIL() << "fp16 accepted";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "run.precision = \"fp16\" is not one of: f32, bf16");
  }
  try {
    make_kernel_factory(Backend::kReference, 0, Precision::kBf16);
    FAIL() << "bf16 on the reference backend accepted";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(),
                 "run.precision = \"bf16\" needs run.backend = \"onednn\" (the reference backend "
                 "computes in f32)");
  }
  if (onednn_gemm() == "OpenBLAS") {  // the HPDL_GEMM=blas run of these tests
    try {
      onednn_kernels(Precision::kBf16);
      FAIL() << "bf16 with run.kernels.gemm = blas accepted";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("run.kernels.gemm = \"blas\""), std::string::npos)
          << e.what();
    }
  }
}

}  // namespace
}  // namespace hpdl
