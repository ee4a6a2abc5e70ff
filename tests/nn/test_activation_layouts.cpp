// Activations kept in a convolution's own layout through a max pool or an activation
// (Chain::bind, kernels.hpp: channel blocks): the pooling in channel blocks equals the plain
// pooling element for element, in every pair of blocks, with and without a fused ReLU, on
// inputs full of ties and negative windows; a chain keeps the convolutions' layout exactly
// where a pool or an activation joins them, and computes bit for bit what the same chain
// computes with every activation plain, also after a one-channel convolution kept in NHWC
// (hpdl's own weight-gradient kernel).
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "hpdl/core/error.hpp"
#include "hpdl/core/rng.hpp"
#include "hpdl/nn/chain.hpp"
#include "hpdl/nn/layers.hpp"
#include "hpdl/plan/planner.hpp"
#include "kernel_env.hpp"
#include "random_values.hpp"

using namespace hpdl;

namespace {

// One array of [N, C, H, W] from blocks `from` into blocks `to`.
std::vector<float> reblock(const std::vector<float>& v, int64_t from, int64_t to, const Shape& s) {
  const int64_t N = s[0], C = s[1], H = s[2], W = s[3];
  std::vector<float> out(v.size());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w)
          out[n * C * H * W + block_offset(to, H, W, c, h, w)] =
              v[n * C * H * W + block_offset(from, H, W, c, h, w)];
  return out;
}

struct BlockCase {
  Shape in;
  int64_t kernel;
  bool relu;
};

void PrintTo(const BlockCase& c, std::ostream* os) {
  *os << c.in.str() << " window " << c.kernel << (c.relu ? " with ReLU" : "");
}

class BlockPool : public ::testing::TestWithParam<BlockCase> {};

TEST_P(BlockPool, EqualsThePlainPoolInEveryPairOfBlocks) {
  const BlockCase c = GetParam();
  const int64_t C = c.in[1];
  PoolDims plain{c.in[0], C, c.in[2], c.in[3], c.kernel, c.kernel, c.relu};
  const Shape out{{c.in[0], C, plain.out_h(), plain.out_w()}};
  auto ref = make_reference_kernels()->max_pool(plain);
  auto onednn = onednn_kernels();
  ASSERT_TRUE(onednn->max_pool(plain)->takes().blocks);
  const std::vector<float> x = kinked_values(c.in.numel(), 1);
  std::vector<float> dy(out.numel());
  Rng rng(2, 2);
  for (auto& v : dy) v = float(rng.uniform()) - 0.5f;
  std::vector<float> y(out.numel()), dx(c.in.numel());
  ref->forward(x.data(), y.data());
  ref->backward(dy.data(), dx.data());

  int64_t zeroed = 0;
  for (const float v : y) zeroed += v == 0;
  EXPECT_GT(zeroed, 0) << "the inputs must hold windows whose maximum is <= 0";
  std::vector<int64_t> blocks = {1, C};  // plain, NHWC, and oneDNN's blocks of 8 where whole
  if (C % 8 == 0 && C != 8) blocks.push_back(8);
  for (const int64_t bi : blocks)
    for (const int64_t bo : blocks) {
      if (bi == 1 && bo == 1) continue;
      PoolDims d = plain;
      d.in_block = bi, d.out_block = bo;
      auto k = onednn->max_pool(d);
      std::vector<float> yb(out.numel()), dxb(c.in.numel(), 99.0f);
      k->forward(reblock(x, 1, bi, c.in).data(), yb.data());
      k->backward(reblock(dy, 1, bo, out).data(), dxb.data());
      EXPECT_EQ(reblock(yb, bo, 1, out), y) << "output, blocks " << bi << " -> " << bo;
      EXPECT_EQ(reblock(dxb, bi, 1, c.in), dx) << "input gradient, blocks " << bi << " -> " << bo;
    }
}

INSTANTIATE_TEST_SUITE_P(Shapes, BlockPool,
                         ::testing::Values(BlockCase{Shape{{3, 16, 8, 8}}, 2, true},
                                           BlockCase{Shape{{3, 16, 8, 8}}, 2, false},
                                           BlockCase{Shape{{2, 24, 7, 9}}, 2, true},  // odd
                                           // channel runs (over_channels): a register (16 or 8) and
                                           // an overlapping last one, 8 and one, one at a time
                                           BlockCase{Shape{{2, 20, 6, 6}}, 2, true},
                                           BlockCase{Shape{{2, 40, 4, 5}}, 2, false},
                                           BlockCase{Shape{{2, 12, 6, 6}}, 2, true},
                                           BlockCase{Shape{{2, 4, 6, 7}}, 2, false},
                                           BlockCase{Shape{{2, 8, 10, 11}}, 3, true},
                                           BlockCase{Shape{{2, 8, 10, 11}}, 3, false}));

TEST(BlockPool, BlocksAreRefusedWhereTheyCannotBeTaken) {
  PoolDims d{2, 12, 8, 8, 2, 2};
  d.in_block = 12;
  try {
    make_reference_kernels()->max_pool(d);
    FAIL() << "the reference pool took channel blocks";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "max pool: this backend takes plain NCHW only");
  }
  d.in_block = 8;  // does not divide 12 channels
  try {
    onednn_kernels()->max_pool(d);
    FAIL() << "a block of 8 over 12 channels was taken";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "max pool: a channel block of 8 does not divide 12 channels");
  }
}

// Layers named l0, l1, ... in order.
std::vector<std::unique_ptr<Layer>> named(std::vector<std::unique_ptr<Layer>> ls) {
  for (size_t i = 0; i < ls.size(); ++i) ls[i]->set_name("l" + std::to_string(i));
  return ls;
}

// A chain set up for `in` and bound on the oneDNN backend (made with every activation plain
// or not), with seeded parameters and zero gradients.
struct BoundChain {
  BoundChain(std::vector<std::unique_ptr<Layer>> layers, const Shape& in, bool plain) {
    chain = std::make_unique<Chain>(named(std::move(layers)));
    chain->setup(in, &execution_planner());
    KernelChoices choices = env_kernels();
    choices.plain_activations = plain;
    kernels = make_onednn_kernels(Precision::kF32, choices);
    std::vector<std::span<float>> p, g;
    uint64_t seed = 10;
    for (const ParamSpec& s : chain->param_specs()) {
      params.push_back(kinked_values(s.size, ++seed));
      grads.emplace_back(s.size, 0.0f);
      p.emplace_back(params.back()), g.emplace_back(grads.back());
    }
    chain->bind(p, g, *kernels);
  }
  std::unique_ptr<KernelFactory> kernels;
  std::unique_ptr<Chain> chain;
  std::vector<std::vector<float>> params, grads;
};

// LeNet's pattern with a tanh and a third convolution between, on [4, 2, 12, 12]: conv (20
// filters) + ReLU + pool + conv (12) + tanh + conv (12) + ReLU + pool + flatten + dense.
struct ConvChain : BoundChain {
  explicit ConvChain(bool plain) : BoundChain(layers(), Shape{{4, 2, 12, 12}}, plain) {}
  static std::vector<std::unique_ptr<Layer>> layers() {
    std::vector<std::unique_ptr<Layer>> ls;
    ls.push_back(std::make_unique<Conv2d>(20, 3, 1, 1));
    ls.push_back(std::make_unique<ActivationLayer>(Activation::kRelu));
    ls.push_back(std::make_unique<MaxPool2d>(2, 2));
    ls.push_back(std::make_unique<Conv2d>(12, 3, 1, 1));
    ls.push_back(std::make_unique<ActivationLayer>(Activation::kTanh));
    ls.push_back(std::make_unique<Conv2d>(12, 3, 1, 1));
    ls.push_back(std::make_unique<ActivationLayer>(Activation::kRelu));
    ls.push_back(std::make_unique<MaxPool2d>(2, 2));
    ls.push_back(std::make_unique<Flatten>());
    ls.push_back(std::make_unique<Dense>(5, Init::kGlorotUniform));
    return ls;
  }
};

TEST(ActivationLayouts, ConvolutionsKeepTheirLayoutThroughPoolsAndActivations) {
  ConvChain net(false);
  const Chain& c = *net.chain;
  // Activations: 0 input, 1 conv1 (= 2, its fused ReLU), 3 pool1, 4 conv2, 5 tanh, 6 conv3
  // (= 7, its fused ReLU), 8 pool2 (= 9, flatten), 10 output.
  const int64_t conv1 = c.layer(0).plan().native_out_block(),
                conv2 = c.layer(3).plan().native_out_block(),
                conv3 = c.layer(5).plan().native_out_block();
  for (const size_t i : {size_t{0}, size_t{8}, size_t{9}, size_t{10}})
    EXPECT_EQ(c.activation_block(i), 1) << "activation " << i << " must stay plain";
  EXPECT_EQ(c.activation_block(1), conv1);
  EXPECT_EQ(c.activation_block(2), conv1);
  EXPECT_EQ(c.activation_block(3), c.layer(3).plan().native_in_block());
  const int64_t between = conv2 == c.layer(5).plan().native_in_block() ? conv2 : 1;
  EXPECT_EQ(c.activation_block(4), between);
  EXPECT_EQ(c.activation_block(5), between);
  EXPECT_EQ(c.activation_block(6), conv3);
  EXPECT_EQ(c.activation_block(7), conv3);
#if defined(__x86_64__)
  // 20 and 12 channels are not whole blocks of 8 (AVX2) or 16 (AVX-512): NHWC by the
  // convolution's rule on either (24, a whole number of 8-blocks, went blocked on AVX2).
  if (onednn_gemm() == "oneDNN") {
    EXPECT_EQ(conv1, 20);
    EXPECT_EQ(c.activation_block(3), 20);
    EXPECT_EQ(c.activation_block(5), 12);
    EXPECT_EQ(conv3, 12);
    EXPECT_EQ(c.layer(2).kernel_choice().kernel, "hpdl's pool, reads nhwc, writes nhwc");
    EXPECT_EQ(c.layer(7).kernel_choice().kernel, "hpdl's pool, reads nhwc, writes nchw");
  }
#endif
  ConvChain plain(true);
  for (size_t i = 0; i <= plain.chain->size(); ++i) EXPECT_EQ(plain.chain->activation_block(i), 1);
}

TEST(ActivationLayouts, APoolThatReadsPlainWritesPlain) {
  // pool + conv (20) + ReLU + pool + flatten + dense: the first pool reads the chain's
  // (plain) input, so it hands the convolution plain values rather than converting.
  std::vector<std::unique_ptr<Layer>> ls;
  ls.push_back(std::make_unique<MaxPool2d>(2, 2));
  ls.push_back(std::make_unique<Conv2d>(20, 3, 1, 1));
  ls.push_back(std::make_unique<ActivationLayer>(Activation::kRelu));
  ls.push_back(std::make_unique<MaxPool2d>(2, 2));
  ls.push_back(std::make_unique<Flatten>());
  ls.push_back(std::make_unique<Dense>(5, Init::kGlorotUniform));
  const BoundChain net(std::move(ls), Shape{{2, 3, 12, 12}}, false);
  const Chain& c = *net.chain;
  EXPECT_EQ(c.activation_block(1), 1);
  EXPECT_EQ(c.activation_block(2), c.layer(1).plan().native_out_block());
  // The pool reads the input plain: no layout to name.
  EXPECT_EQ(c.layer(0).kernel_choice().kernel.find("reads"), std::string::npos);
}

TEST(ActivationLayouts, KeptLayoutsComputeWhatPlainOnesDoBitForBit) {
  ConvChain kept(false), plain(true);
  const std::vector<float> x = kinked_values(4 * 2 * 12 * 12, 3);
  const std::vector<float> dy = kinked_values(4 * 5, 4);
  std::vector<std::vector<float>> dx(2, std::vector<float>(x.size()));
  int k = 0;
  for (ConvChain* net : {&kept, &plain}) {
    for (int step = 0; step < 2; ++step) {  // twice: gradients accumulate
      net->chain->forward(x.data(), Pass{true, 1, step, nullptr});
      net->chain->backward(x.data(), dy.data(), dx[k].data(), Pass{true, 1, step, nullptr});
    }
    ++k;
  }
  const float* yk = kept.chain->output();
  const float* yp = plain.chain->output();
  EXPECT_EQ(std::vector<float>(yk, yk + 20), std::vector<float>(yp, yp + 20));
  EXPECT_EQ(dx[0], dx[1]);
  for (size_t i = 0; i < kept.grads.size(); ++i)
    EXPECT_EQ(kept.grads[i], plain.grads[i]) << "gradient of parameter " << i;
}

// LeNet's first layers on a grey image: conv (1 -> 20 channels, 5 x 5) + ReLU + pool, then
// (second) conv (12, 3 x 3), + flatten + dense, on [4, 1, side, side] (side 13: a last row
// and column no window covers). The pool writes NHWC for the second convolution, NCHW for the
// flatten.
struct GreyChain : BoundChain {
  GreyChain(bool plain, int64_t side, bool second)
      : BoundChain(layers(second), Shape{{4, 1, side, side}}, plain) {}
  static std::vector<std::unique_ptr<Layer>> layers(bool second) {
    std::vector<std::unique_ptr<Layer>> ls;
    ls.push_back(std::make_unique<Conv2d>(20, 5, 1, 2));
    ls.push_back(std::make_unique<ActivationLayer>(Activation::kRelu));
    ls.push_back(std::make_unique<MaxPool2d>(2, 2));
    if (second) ls.push_back(std::make_unique<Conv2d>(12, 3, 1, 1));
    ls.push_back(std::make_unique<Flatten>());
    ls.push_back(std::make_unique<Dense>(5, Init::kGlorotUniform));
    return ls;
  }
};

TEST(ActivationLayouts, AOneChannelConvolutionInNhwcGivesTheSameGradientsBitForBit) {
  for (const bool second : {false, true})
    for (const int64_t side : {12, 13}) {
      SCOPED_TRACE("side " + std::to_string(side) + (second ? ", a second convolution" : ""));
      GreyChain kept(false, side, second), plain(true, side, second);
#if defined(__x86_64__)
      // 20 channels: NHWC by the rule, hpdl's one-channel weight kernel; never with plain
      // activations.
      if (onednn_gemm() == "oneDNN")
        EXPECT_EQ(kept.chain->layer(2).kernel_choice().kernel,
                  std::string("hpdl's pool, reads nhwc, writes ") + (second ? "nhwc" : "nchw"));
#endif
      EXPECT_EQ(plain.chain->layer(2).kernel_choice().kernel, "hpdl's pool");
      const std::vector<float> x = kinked_values(4 * side * side, 5);
      const std::vector<float> dy = kinked_values(4 * 5, 6);
      std::vector<std::vector<float>> dx(2, std::vector<float>(x.size()));
      for (const bool input_grad : {false, true}) {
        int k = 0;
        for (GreyChain* net : {&kept, &plain}) {
          for (int step = 0; step < 2; ++step) {  // twice: gradients accumulate
            net->chain->forward(x.data(), Pass{true, 1, step, nullptr});
            net->chain->backward(x.data(), dy.data(), input_grad ? dx[k].data() : nullptr,
                                 Pass{true, 1, step, nullptr});
          }
          ++k;
        }
        EXPECT_EQ(dx[0], dx[1]);
        for (size_t i = 0; i < kept.grads.size(); ++i)
          EXPECT_EQ(kept.grads[i], plain.grads[i])
              << "gradient of parameter " << i << ", input gradient " << input_grad;
      }
    }
}

}  // namespace
