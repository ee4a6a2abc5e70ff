// The oneDNN convolution's two activation layouts (blocked, NHWC): each forced through
// run.kernels.conv_layout equals the reference backend within f32 summation order, on a shape the
// rule gives to each; and the rule's pick for the presets' kinds of shape, named in
// ConvKernel::choice() (what `hpdl time` prints); the backward's hook between its passes;
// the weight gradient of one input channel in NHWC by hpdl's own kernel (one_channel_conv);
// oneDNN's AVX2 or first-choice kernels (run.kernels.conv_isa).
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "hpdl/core/error.hpp"
#include "hpdl/kernels/kernels.hpp"
#include "kernel_env.hpp"
#include "kernel_passes.hpp"
#include "random_values.hpp"

namespace hpdl {
namespace {

std::vector<float> layout_values(int64_t n, uint64_t seed) { return uniform_values(n, seed, 9); }

// An environment variable set to a value ("" = unset) for the guard's lifetime, then as
// before.
// The oneDNN factory made with run.kernels.conv_layout and conv_isa forced (kAuto: the rule).
std::unique_ptr<KernelFactory> onednn_with(ConvLayoutChoice layout,
                                           ConvIsaChoice isa = ConvIsaChoice::kAuto) {
  KernelChoices c = env_kernels();
  c.conv_layout = layout, c.conv_isa = isa;
  return make_onednn_kernels(Precision::kF32, c);
}
constexpr auto kBlocked = ConvLayoutChoice::kBlocked, kNhwc = ConvLayoutChoice::kNhwc;

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

TEST(ConvLayout, EachLayoutEqualsTheReference) {
  if (onednn_gemm() != "oneDNN") GTEST_SKIP() << "HPDL_GEMM=blas: no oneDNN convolution";
  auto ref = make_reference_kernels();
  // 20 -> 50 channels (LeNet's conv2: NHWC by the rule) and 16 -> 32 (blocked by the rule).
  for (const ConvDims d :
       {ConvDims{6, 20, 12, 12, 50, 5, 1, 0}, ConvDims{4, 16, 9, 9, 32, 3, 2, 1}}) {
    const auto want = conv_pass(*ref, d, layout_values);
    for (const auto layout : {kBlocked, kNhwc}) {
      const auto got = conv_pass(*onednn_with(layout), d, layout_values);
      for (size_t k = 0; k < want.size(); ++k)
        EXPECT_LT(relative_error(got[k], want[k]), 1e-5)
            << int(layout) << " output " << k << " of " << d.in_c << " -> " << d.out_c;
    }
  }
}

TEST(ConvLayout, TheRulePicksNhwcWhereBlocksWouldPadChannels) {
  if (onednn_gemm() != "oneDNN") GTEST_SKIP() << "HPDL_GEMM=blas: no oneDNN convolution";
#if !defined(__x86_64__)
  GTEST_SKIP() << "the layout rule applies on x86-64 only (elsewhere: blocked, oneDNN's choice)";
#endif
  auto k = onednn_with(ConvLayoutChoice::kAuto);
  // in -> out channels and the layout the rule gives them (the same with blocks of 8 or 16).
  const struct {
    int64_t in, out;
    const char* layout;
  } cases[] = {{1, 20, "nhwc"},       // LeNet conv1: 20 output channels, not whole blocks
               {20, 50, "nhwc"},      // LeNet conv2
               {3, 64, "blocked"},    // VGG-11 conv1: a first layer's 3 input channels
               {3, 96, "blocked"},    // AlexNet conv1
               {64, 128, "blocked"},  // whole blocks
               {12, 32, "nhwc"}};     // input channels beyond a first layer, not whole blocks
  for (const auto& c : cases) {
    const KernelChoice choice = k->conv({2, c.in, 8, 8, c.out, 3, 1, 1})->choice();
    EXPECT_TRUE(starts_with(choice.kernel, c.layout))
        << c.in << " -> " << c.out << ": " << choice.kernel;
    EXPECT_EQ(choice.reason.find("run.kernels"), std::string::npos) << choice.reason;
    EXPECT_TRUE(
        starts_with(choice.reason, std::string("layout: its channels ") +
                                       (c.layout == std::string("nhwc") ? "are not" : "are")))
        << choice.reason;
  }
  const KernelChoice forced = onednn_with(kBlocked)->conv({2, 1, 8, 8, 20, 3, 1, 1})->choice();
  EXPECT_TRUE(starts_with(forced.kernel, "blocked (")) << forced.kernel;
  EXPECT_TRUE(starts_with(forced.reason, "layout: run.kernels.conv_layout = \"blocked\""))
      << forced.reason;
}

// One input channel in NHWC: the weight and bias gradients by hpdl's one-channel kernel,
// against the reference (which adds to dw and db as the contract says: conv_pass starts them
// non-zero). Shapes: LeNet's conv1; fewer channels than a vector, stride 2, a non-square
// image; channels of exactly one vector (AVX-512) or two (AVX2); a 7 x 7 window (no unrolled
// case) over channels in several groups of vectors; a 1 x 1 window over 33 channels.
TEST(ConvLayout, OneInputChannelTakesHpdlsWeightGradient) {
  if (onednn_gemm() != "oneDNN") GTEST_SKIP() << "HPDL_GEMM=blas: no oneDNN convolution";
  auto ref = make_reference_kernels();
  auto nhwc = onednn_with(kNhwc);
  for (const ConvDims d : {ConvDims{5, 1, 28, 28, 20, 5, 1, 2}, ConvDims{3, 1, 9, 11, 3, 3, 2, 1},
                           ConvDims{2, 1, 10, 10, 16, 5, 1, 0}, ConvDims{3, 1, 13, 13, 72, 7, 3, 3},
                           ConvDims{2, 1, 8, 8, 33, 1, 1, 0}}) {
    EXPECT_NE(nhwc->conv(d)->choice().kernel.find("weights hpdl's one-channel kernel"),
              std::string::npos)
        << nhwc->conv(d)->choice().kernel;
    const auto want = conv_pass(*ref, d, layout_values);
    const auto got = conv_pass(*nhwc, d, layout_values);
    for (size_t k = 0; k < want.size(); ++k)
      EXPECT_LT(relative_error(got[k], want[k]), 1e-5)
          << "output " << k << " of 1 -> " << d.out_c << ", window " << d.kernel;
  }
  // Blocked activations and several input channels keep oneDNN's weight gradient.
  EXPECT_EQ(
      onednn_with(kBlocked)->conv({2, 1, 8, 8, 20, 3, 1, 1})->choice().kernel.find("one-channel"),
      std::string::npos);
  EXPECT_EQ(nhwc->conv({2, 2, 8, 8, 20, 3, 1, 1})->choice().kernel.find("one-channel"),
            std::string::npos);
}

// run.kernels.conv_isa: oneDNN's AVX2 kernels (the rule's pick on a Zen 4) or its first choice
// (AVX-512 where the CPU has it), each in both layouts, equal the reference; the choice
// names the kernels and the key. (Which CPUs the rule gives AVX2 is a CPU-model rule,
// measured in docs/results.md.)
TEST(ConvIsa, EachKernelChoiceEqualsTheReference) {
  if (onednn_gemm() != "oneDNN") GTEST_SKIP() << "HPDL_GEMM=blas: no oneDNN convolution";
#if !defined(__x86_64__)
  GTEST_SKIP() << "oneDNN's AVX2 kernels are x86-64's";
#endif
  auto ref = make_reference_kernels();
  const ConvDims d{6, 20, 12, 12, 50, 5, 1, 0};
  const auto want = conv_pass(*ref, d, layout_values);
  for (const auto isa : {ConvIsaChoice::kAvx2, ConvIsaChoice::kNative})
    for (const auto layout : {kBlocked, kNhwc}) {
      auto k = onednn_with(layout, isa);
      const KernelChoice made = k->conv(d)->choice();
      const std::string& choice = made.kernel;
      EXPECT_NE(made.reason.find(std::string("kernels: run.kernels.conv_isa = \"") +
                                 (isa == ConvIsaChoice::kAvx2 ? "avx2" : "native") + "\""),
                std::string::npos)
          << made.reason;
      if (isa == ConvIsaChoice::kAvx2)
        EXPECT_NE(choice.find("(forward jit:avx2, backward data jit:avx2"), std::string::npos)
            << choice;
      const auto got = conv_pass(*k, d, layout_values);
      for (size_t o = 0; o < want.size(); ++o)
        EXPECT_LT(relative_error(got[o], want[o]), 1e-5)
            << int(isa) << ", " << int(layout) << ": output " << o;
    }
}

// The oneDNN convolution's backward calls `between` once, after the input gradient and
// before the weight gradient (where the trainer tests the allreduce buckets in flight); every
// backend's result equals plain backward(). The reference's single loop need not call it.
TEST(ConvBackward, CallsBetweenItsInputAndWeightGradients) {
  const ConvDims d{2, 3, 6, 6, 4, 3, 1, 1};
  const int64_t nx = 2 * 3 * 6 * 6, nw = 4 * 3 * 3 * 3, ny = 2 * 4 * 6 * 6;
  const auto x = layout_values(nx, 1), w = layout_values(nw, 2), b = layout_values(4, 3),
             dy = layout_values(ny, 4);
  for (auto* make : {&make_reference_kernels, +[] { return onednn_kernels(); }}) {
    auto factory = make();  // outlives its kernels
    auto k = factory->conv(d);
    std::vector<float> y(ny), dx(nx, 7.0f), dw(nw, 0.0f), db(4, 0.0f);
    k->forward(x.data(), w.data(), b.data(), y.data());
    int calls = 0;
    k->backward_between(x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data(), [&] {
      ++calls;
      EXPECT_NE(dx[0], 7.0f) << "the input gradient is written before";
      EXPECT_EQ(dw, std::vector<float>(nw, 0.0f)) << "the weight gradient is not yet";
    });
    std::vector<float> dx2(nx), dw2(nw, 0.0f), db2(4, 0.0f);
    k->backward(x.data(), w.data(), dy.data(), dx2.data(), dw2.data(), db2.data());
    EXPECT_EQ(dx, dx2);
    EXPECT_EQ(dw, dw2);
    EXPECT_EQ(db, db2);
    if (onednn_gemm() == "oneDNN" && make != &make_reference_kernels)
      EXPECT_EQ(calls, 1);
    else
      EXPECT_LE(calls, 1);
  }
}

}  // namespace
}  // namespace hpdl
