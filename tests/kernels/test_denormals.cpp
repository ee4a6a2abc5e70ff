// The CPU backends flush denormal floats to zero on every thread they compute on
// (src/kernels/cpu/denormals.hpp): a dense layer over denormal inputs gives exactly zero on both,
// so the oneDNN and reference backends still agree.
#include <gtest/gtest.h>
#include <omp.h>

#include <vector>

#include "cpu/denormals.hpp"
#include "hpdl/kernels/kernels.hpp"
#include "kernel_env.hpp"

using namespace hpdl;

namespace {

#if defined(__x86_64__) || defined(__aarch64__)
constexpr bool kCanFlush = true;
#else
constexpr bool kCanFlush = false;
#endif

class Denormals : public ::testing::TestWithParam<const char*> {};

TEST_P(Denormals, EveryThreadOfTheBackendFlushesThem) {
  if (!kCanFlush) GTEST_SKIP() << "no flush-to-zero control on this CPU";
  auto kernels = test_kernels(GetParam());
  int flushing = 0, threads = 0;
#pragma omp parallel reduction(+ : flushing, threads)
  {
    flushing += flushes_denormals() ? 1 : 0;
    threads += 1;
  }
  EXPECT_EQ(flushing, threads);
  EXPECT_GE(threads, 1);
}

TEST_P(Denormals, ADenseLayerReadsThemAsZero) {
  if (!kCanFlush) GTEST_SKIP() << "no flush-to-zero control on this CPU";
  auto kernels = test_kernels(GetParam());
  const DenseDims d{4, 64, 8};
  // 1e-39 is denormal; 64 of them times 1 would sum to 6.4e-38, a normal float.
  std::vector<float> x(size_t(d.batch * d.in), 1e-39f), w(size_t(d.in * d.out), 1.0f);
  std::vector<float> b(size_t(d.out), 0.0f), y(size_t(d.batch * d.out), -1.0f);
  kernels->dense(d)->forward(x.data(), w.data(), b.data(), y.data());
  for (float v : y) EXPECT_EQ(v, 0.0f);
  volatile float tiny = 1e-20f;  // 1e-40, a denormal product, is flushed too
  EXPECT_EQ(tiny * tiny, 0.0f);
}

INSTANTIATE_TEST_SUITE_P(CpuBackends, Denormals, ::testing::Values("onednn", "reference"));

}  // namespace
