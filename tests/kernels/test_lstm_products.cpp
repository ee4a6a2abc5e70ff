// An LSTM layer on the oneDNN backend (its per-step products with the recurrent weights as
// panel products, src/kernels/cpu/panel_gemm.hpp, in tiles of 6 or 12 rows): a sample's numbers
// do not depend on the threads, nor (beyond rounding) on where in the batch it sits or how
// many samples the batch has; and they agree with the reference backend's.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <vector>

#include "hpdl/nn/model.hpp"
#include "hpdl/nn/recurrent.hpp"
#include "kernel_env.hpp"
#include "omp_threads.hpp"
#include "random_values.hpp"

using namespace hpdl;

namespace {

constexpr int64_t kSteps = 5, kChannels = 3, kHidden = 5;

struct Outcome {
  std::vector<float> out, grads;
};

// One LSTM (reversed or not) over `batch` samples: samples [first, first + batch) of a fixed
// set of inputs and output gradients, on `threads` threads.
Outcome run_lstm(const std::string& backend, int64_t first, int64_t batch, bool reverse,
                 int threads) {
  OmpThreads scope(threads);
  std::vector<std::unique_ptr<Layer>> ls;
  ls.push_back(std::make_unique<Lstm>(kHidden, 1.0f, reverse));
  ls.back()->set_name("lstm");
  Model m(std::move(ls), Shape{{batch, kSteps, kChannels}}, test_kernels(backend));
  m.init_params(3);
  const int64_t in = kSteps * kChannels, out = kSteps * kHidden;
  const auto x = uniform_values(64 * in, 8, 71), dy = uniform_values(64 * out, 9, 71);
  std::copy(x.begin() + first * in, x.begin() + (first + batch) * in, m.input_host());
  m.upload_input();
  m.forward(Pass{});
  Outcome r;
  r.out.assign(m.output(), m.output() + batch * out);
  std::copy(dy.begin() + first * out, dy.begin() + (first + batch) * out, m.output_grad());
  m.zero_grads();
  m.backward(Pass{});
  r.grads.assign(m.grads().begin(), m.grads().end());
  return r;
}

TEST(LstmProducts, ASamplesNumbersDoNotDependOnItsPlaceInTheBatchOrTheThreads) {
  for (const bool reverse : {false, true}) {
    SCOPED_TRACE(reverse ? "reversed" : "forward");
    // 29 samples: whole tiles of 6 or 12 rows and 5 more; samples 5..17 alone sit elsewhere
    // in their tiles (sample 12 first of the second 12-row tile there, eighth here).
    const Outcome all = run_lstm("onednn", 0, 29, reverse, 1),
                  two = run_lstm("onednn", 0, 29, reverse, 2);
    EXPECT_EQ(all.out, two.out);
    EXPECT_EQ(all.grads, two.grads);
    // Within rounding only: oneDNN's input projection over all steps (AVX2 code: gemm:jit)
    // may sum in another order for another row count; the panel products do not
    // (PanelGemm.PacksATransposeAndEachRowAloneGivesTheSameBits).
    const Outcome part = run_lstm("onednn", 5, 13, reverse, 1);
    const int64_t out = kSteps * kHidden;
    for (int64_t i = 0; i < 13 * out; ++i)
      ASSERT_NEAR(part.out[i], all.out[5 * out + i], 1e-6) << i;
    const Outcome ref = run_lstm("reference", 0, 29, reverse, 1);
    for (size_t i = 0; i < ref.out.size(); ++i) ASSERT_NEAR(all.out[i], ref.out[i], 1e-5) << i;
    for (size_t i = 0; i < ref.grads.size(); ++i)
      ASSERT_NEAR(all.grads[i], ref.grads[i], 1e-4 * (1 + std::abs(ref.grads[i]))) << i;
  }
}

}  // namespace
