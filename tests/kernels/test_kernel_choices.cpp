// The CPU backend's candidate tables (kernels/onednn/choices.cpp) on the CPUs the rules were
// measured on, whatever CPU runs the test: a table reads the CPU's facts as an argument, so
// a Zen 4's, a Zen 3's, an AVX-512 Intel's and an arm64's choices are checked on any of them.
// The first candidate that fits wins; run.kernels rows come before the rules; a table ends
// with a candidate for everything it is asked about.
#include <gtest/gtest.h>

#include <string>

#include "hpdl/core/error.hpp"
#include "onednn/choices.hpp"

using namespace hpdl;
using namespace hpdl::onednn;

namespace {

constexpr CpuFacts kZen4{true, true, 25}, kZen3{true, false, 25}, kIntelAvx512{true, true, 0},
    kArm64{false, false, 0};
constexpr ConvDims kLenetConv1{64, 1, 28, 28, 20, 5, 1, 2},
    kLenetConv2{64, 20, 14, 14, 50, 5, 1, 2}, kWholeBlocks{8, 64, 16, 16, 128, 3, 1, 1};

ConvPick pick(const ConvDims& d, const CpuFacts& cpu, const KernelChoices& run = {}) {
  return choose_conv(d, run, cpu);
}

}  // namespace

TEST(KernelChoices, ConvolutionsOnAZen4TakeAvx2WhereBlocksOf16WouldPad) {
  const ConvPick c1 = pick(kLenetConv1, kZen4), c2 = pick(kLenetConv2, kZen4);
  EXPECT_EQ(c1.isa, ConvIsa::kAvx2);
  EXPECT_EQ(c1.layout, ConvLayout::kNhwc);  // 20 channels: not whole blocks of 8
  EXPECT_EQ(c1.weights, ConvWeights::kOneChannel);
  EXPECT_EQ(c2.isa, ConvIsa::kAvx2);
  EXPECT_EQ(c2.layout, ConvLayout::kNhwc);
  EXPECT_EQ(c2.weights, ConvWeights::kNhwc);  // 50 output channels in blocks of 8
  EXPECT_EQ(c2.isa_choice.reason, "AVX2 on a Zen 4, where blocks of 16 would pad the channels");
  EXPECT_EQ(c2.weights_choice.kernel, "hpdl's NHWC kernel");
  const ConvPick whole = pick(kWholeBlocks, kZen4);
  EXPECT_EQ(whole.isa, ConvIsa::kNative);
  EXPECT_EQ(whole.layout, ConvLayout::kBlocked);
  EXPECT_EQ(whole.weights, ConvWeights::kOneDnn);
  EXPECT_EQ(whole.weights_choice.kernel, "");  // oneDNN's: the kernel names its implementation
}

TEST(KernelChoices, OtherCpusKeepOneDnnsKernelsAndTheirBlocks) {
  // A Zen 3 has no AVX-512: oneDNN's first choice is AVX2, blocks of 8.
  const ConvPick zen3 = pick(kLenetConv2, kZen3);
  EXPECT_EQ(zen3.isa, ConvIsa::kNative);
  EXPECT_EQ(zen3.layout, ConvLayout::kNhwc);
  EXPECT_EQ(zen3.weights, ConvWeights::kNhwc);
  // AVX-512 elsewhere: blocks of 16, which 50 channels pad (NHWC), and oneDNN's gradient.
  const ConvPick intel = pick(kLenetConv2, kIntelAvx512);
  EXPECT_EQ(intel.isa, ConvIsa::kNative);
  EXPECT_EQ(intel.layout, ConvLayout::kNhwc);
  EXPECT_EQ(intel.weights, ConvWeights::kOneDnn);
  EXPECT_EQ(pick(kLenetConv1, kIntelAvx512).weights, ConvWeights::kOneChannel);
  // arm64: oneDNN's own layout and kernels.
  for (const ConvDims& d : {kLenetConv1, kLenetConv2, kWholeBlocks}) {
    const ConvPick arm = pick(d, kArm64);
    EXPECT_EQ(arm.isa, ConvIsa::kNative);
    EXPECT_EQ(arm.layout, ConvLayout::kBlocked);
    EXPECT_EQ(arm.weights, ConvWeights::kOneDnn);
  }
}

TEST(KernelChoices, RunKernelsComeBeforeTheRules) {
  KernelChoices blocked;
  blocked.conv_layout = ConvLayoutChoice::kBlocked;
  const ConvPick b = pick(kLenetConv1, kZen4, blocked);
  EXPECT_EQ(b.layout, ConvLayout::kBlocked);
  EXPECT_EQ(b.weights, ConvWeights::kOneDnn);  // hpdl's weight gradients are NHWC's
  EXPECT_EQ(b.layout_choice.reason, "run.kernels.conv_layout = \"blocked\"");
  KernelChoices native;
  native.conv_isa = ConvIsaChoice::kNative;
  EXPECT_EQ(pick(kLenetConv1, kZen4, native).isa, ConvIsa::kNative);
  KernelChoices avx2;
  avx2.conv_isa = ConvIsaChoice::kAvx2;
  EXPECT_EQ(pick(kWholeBlocks, kIntelAvx512, avx2).isa, ConvIsa::kAvx2);
  EXPECT_EQ(pick(kWholeBlocks, kIntelAvx512, avx2).layout, ConvLayout::kBlocked);  // 8-blocks
  // Before run.kernels: what the CPU or the precision leaves no choice about.
  EXPECT_EQ(pick(kWholeBlocks, kArm64, avx2).isa, ConvIsa::kNative);
  ConvDims bf16 = kLenetConv2;
  bf16.precision = Precision::kBf16;
  EXPECT_EQ(pick(bf16, kZen4, avx2).isa, ConvIsa::kNative);
  EXPECT_EQ(pick(bf16, kZen4).weights, ConvWeights::kOneDnn);  // hpdl's are f32 only
}

TEST(KernelChoices, MaxPoolsAndDenseWeightGradients) {
  const PoolDims plain{8, 20, 24, 24, 2, 2}, overlapping{8, 96, 55, 55, 3, 2};
  PoolDims blocked = plain;
  blocked.in_block = blocked.out_block = 20;
  EXPECT_EQ(choose_max_pool(plain, {}).kernel, PoolKernel::kHpdl);
  EXPECT_EQ(choose_max_pool(blocked, {}).kernel, PoolKernel::kHpdl);
  EXPECT_EQ(choose_max_pool(overlapping, {}).kernel, PoolKernel::kOneDnn);
  EXPECT_EQ(choose_max_pool(overlapping, {}).choice.reason, "overlapping windows");
  KernelChoices onednn;
  onednn.pool = PoolChoice::kOneDnn;
  EXPECT_EQ(choose_max_pool(plain, onednn).kernel, PoolKernel::kOneDnn);
  EXPECT_EQ(choose_max_pool(blocked, onednn).kernel, PoolKernel::kHpdl);  // oneDNN's: plain only
  PoolDims blocked_overlapping = overlapping;
  blocked_overlapping.in_block = 16;
  try {
    choose_max_pool(blocked_overlapping, {});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "max pool: no kernel fits");
  }
  EXPECT_TRUE(choose_dense({12800, 32, 128}).transposed_dw);  // an LSTM's weights over a sequence
  EXPECT_FALSE(choose_dense({64, 800, 500}).transposed_dw);   // LeNet's dense1
  EXPECT_TRUE(choose_dense({64, 800, 500}).choice.empty());
}
