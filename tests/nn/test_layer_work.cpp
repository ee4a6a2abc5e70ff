// The per-layer work model (profile/work.hpp) against counts made by hand from the shapes:
// dense, conv, max-pool, batch-norm, LSTM, and a sum of branches; and LeNet's iteration, the
// 4.9 GFLOP at batch 128 that issue #32 derived by hand.
#include <gtest/gtest.h>

#include "hpdl/builder/builder.hpp"
#include "hpdl/config/config.hpp"
#include "hpdl/nn/batch_norm.hpp"
#include "hpdl/nn/branches.hpp"
#include "hpdl/nn/layers.hpp"
#include "hpdl/nn/recurrent.hpp"
#include "hpdl/run/efficiency_table.hpp"

namespace hpdl {
namespace {

TEST(LayerWork, DenseByHand) {
  // 32 x 784 -> 64: 2 x 32 x 784 x 64 = 3,211,264 plus 32 x 64 bias adds.
  Dense d(64, Init::kGlorotUniform);
  d.setup(Shape{{32, 784}});
  const LayerWork w = d.work(true);
  EXPECT_DOUBLE_EQ(w.forward.flops, 3'211'264 + 2'048);
  // x 25,088 + w 50,176 + b 64 + y 2,048 floats.
  EXPECT_DOUBLE_EQ(w.forward.bytes, 4.0 * (25'088 + 50'176 + 64 + 2'048));
  // dw and db as forward, dx another 3,211,264.
  EXPECT_DOUBLE_EQ(w.backward.flops, 2 * 3'211'264 + 2'048);
  // read x, dy, w; read and write dw, db; write dx.
  EXPECT_DOUBLE_EQ(w.backward.bytes,
                   4.0 * (25'088 + 2'048 + 50'176 + 2 * 50'176 + 2 * 64 + 25'088));
  // The first layer computes no dx.
  EXPECT_DOUBLE_EQ(d.work(false).backward.flops, 3'211'264 + 2'048);
}

TEST(LayerWork, ConvAndPoolByHand) {
  // LeNet's conv2 at batch 128: [128, 20, 12, 12] -> [128, 50, 8, 8] with 5 x 5 kernels:
  // 409,600 outputs x 500 multiply-adds = 204,800,000; x 2 = 409.6 MFLOP forward.
  Conv2d c(50, 5, 1, 0);
  c.setup(Shape{{128, 20, 12, 12}});
  const LayerWork w = c.work(true);
  EXPECT_DOUBLE_EQ(w.forward.flops, 409'600'000 + 409'600);
  EXPECT_DOUBLE_EQ(w.forward.bytes, 4.0 * (368'640 + 25'000 + 50 + 409'600));
  EXPECT_DOUBLE_EQ(w.backward.flops, 2 * 409'600'000 + 409'600);
  // Pool 2 x 2 stride 2 over [128, 50, 8, 8]: 102,400 outputs x 4 compares.
  MaxPool2d p(2, 2);
  p.setup(Shape{{128, 50, 8, 8}});
  EXPECT_DOUBLE_EQ(p.work(true).forward.flops, 409'600);
  EXPECT_DOUBLE_EQ(p.work(true).forward.bytes, 4.0 * (409'600 + 102'400));
  EXPECT_DOUBLE_EQ(p.work(true).backward.flops, 102'400);
}

TEST(LayerWork, BatchNormByHand) {
  BatchNorm b(1e-5f, 0.1f);
  b.setup(Shape{{8, 3, 4, 4}});  // 384 elements, 3 channels
  const LayerWork w = b.work(true);
  EXPECT_DOUBLE_EQ(w.forward.flops, 7 * 384);
  EXPECT_DOUBLE_EQ(w.forward.bytes, 4.0 * (2 * 384 + 4 * 3));
  EXPECT_DOUBLE_EQ(w.backward.flops, 9 * 384);
  EXPECT_DOUBLE_EQ(w.backward.bytes, 4.0 * (3 * 384 + 6 * 3));
}

TEST(LayerWork, LstmByHand) {
  // N 2, T 3, C 4 -> H 5 (G = 20 gate rows).
  Lstm l(5, 1.0f, false);
  l.setup(Shape{{2, 3, 4}});
  const LayerWork w = l.work(true);
  // input projection 2*2*3*4*20 = 960, recurrent 2*2*3*5*20 = 1200, bias 120, cells 9*30.
  EXPECT_DOUBLE_EQ(w.forward.flops, 960 + 1200 + 120 + 270);
  // x 24, wx 80, wh 100, b 20, y 30 floats.
  EXPECT_DOUBLE_EQ(w.forward.bytes, 4.0 * (24 + 200 + 30));
  // cells 14*30, dWx 960, dWh 2*2*2*5*20 = 800, db 120, dh 1200, dx 960.
  EXPECT_DOUBLE_EQ(w.backward.flops, 420 + 960 + 800 + 120 + 1200 + 960);
}

TEST(LayerWork, BranchesSumTheirChainsAndTheJoin) {
  auto relu_chain = [] {
    std::vector<std::unique_ptr<Layer>> ls;
    ls.push_back(std::make_unique<ActivationLayer>(Activation::kRelu));
    return Chain(std::move(ls));
  };
  std::vector<std::pair<std::string, Chain>> b;
  b.emplace_back("a", relu_chain());
  b.emplace_back("b", relu_chain());
  b.emplace_back("c", relu_chain());
  Branches sum(std::move(b), Branches::Combine::kSum);
  sum.setup(Shape{{2, 10}});
  const LayerWork w = sum.work(true);
  // 3 ReLUs of 20 elements, then 2 additions per output element; backward 3 x 20, then 2
  // additions per input element into dx.
  EXPECT_DOUBLE_EQ(w.forward.flops, 3 * 20 + 2 * 20);
  EXPECT_DOUBLE_EQ(w.backward.flops, 3 * 20 + 2 * 20);
}

// LeNet at batch 128, summed over its layers: the "about 4.9 GFLOP" an iteration that issue
// #32 derived by hand.
TEST(LayerWork, LenetIterationByHand) {
  const Config cfg =
      load_config(std::string(HPDL_SOURCE_DIR) + "/inputs/lenet_fashion_mnist.toml", {});
  auto model = build_model(cfg.model, 128, Backend::kReference);
  double fwd = 0, bwd = 0;
  for (size_t i = 0; i < model->num_layers(); ++i) {
    fwd += model->layer_work(i).forward.flops;
    bwd += model->layer_work(i).backward.flops;
  }
  // conv1 (pad 2) [128,1,28,28] -> [128,20,28,28]: 2,007,040 outputs x 25 MACs; conv2 (pad 2)
  // [128,20,14,14] -> [128,50,14,14]: 1,254,400 x 500; dense1 128 x 2450 x 500; dense2
  // 128 x 500 x 10.
  const double conv1 = 50'176'000, macs = conv1 + 627'200'000 + 156'800'000 + 640'000;
  // Forward 2 x MACs plus biases, pools, ReLUs, dropout; backward twice that but conv1's dx.
  EXPECT_NEAR(fwd, 2 * macs, 0.01 * 2 * macs);
  EXPECT_NEAR(bwd, 4 * macs - 2 * conv1, 0.01 * 4 * macs);
  EXPECT_NEAR((fwd + bwd) / 1e9, 4.9, 0.05);
}

// The MLP preset starts with a flatten (a view): its first dense layer is given no dx to
// write, so its backward counts no input gradient (counted, it showed 170 % of the GEMM peak).
TEST(LayerWork, ALayerAfterOnlyViewsCountsNoInputGradient) {
  const Config cfg =
      load_config(std::string(HPDL_SOURCE_DIR) + "/inputs/mlp_fashion_mnist.toml", {});
  auto model = build_model(cfg.model, 32, Backend::kReference);
  ASSERT_EQ(model->layer(0).kind(), "flatten");
  ASSERT_EQ(model->layer(1).kind(), "dense");
  // dense1 32 x 784 -> 64: dw and db only; dense2 64 -> 64 computes its dx as well.
  EXPECT_DOUBLE_EQ(model->layer_work(1).backward.flops, 3'211'264 + 2'048);
  EXPECT_DOUBLE_EQ(model->layer_work(4).backward.flops, 2 * (2 * 32.0 * 64 * 64) + 2'048);
}

// HAR's models start with a dropout on the input (no parameters): the residual LSTM layer
// after it writes no input gradient (nothing before it needs one), and the dropout is not run
// backward; the layers after the first with parameters do write theirs.
TEST(LayerWork, ALayerAfterOnlyParameterFreeLayersCountsNoInputGradient) {
  const Config cfg = load_config(std::string(HPDL_SOURCE_DIR) + "/inputs/har_2x2.toml", {});
  auto model = build_model(cfg.model, 4, Backend::kReference);
  ASSERT_EQ(model->layer(0).kind(), "dropout");
  const double without = model->layer(1).work(false).backward.flops;
  EXPECT_LT(without, model->layer(1).work(true).backward.flops);
  EXPECT_DOUBLE_EQ(model->layer_work(1).backward.flops, without);
  EXPECT_DOUBLE_EQ(model->layer_work(0).backward.flops, 0.0);
  ASSERT_EQ(model->layer(2).kind(), "norm");  // after res1: its dx is needed
  EXPECT_DOUBLE_EQ(model->layer_work(2).backward.flops, model->layer(2).work(true).backward.flops);
}

// Ceilings of 100 GFLOP/s and 10 GB/s: the ridge at 10 FLOP/byte.
TEST(LayerWork, EfficiencyAgainstTheRooflineByHand) {
  const Ceilings c{100e9, 10e9};
  // 1 GFLOP over 10 MB (100 FLOP/byte: compute-bound) in 20 ms: 50 GFLOP/s, half the peak,
  // 10 ms at the roofline, 10 ms lost.
  const PassEfficiency a = efficiency_of({"conv", "forward", 0.020, {1e9, 1e7}}, c);
  EXPECT_EQ(a.bound, "compute");
  EXPECT_NEAR(a.gflops_per_s, 50, 1e-9);
  EXPECT_NEAR(a.peak_share, 0.5, 1e-12);
  EXPECT_NEAR(a.roofline_share, 0.5, 1e-12);
  EXPECT_NEAR(a.lost_s, 0.010, 1e-12);
  // 1 MFLOP over 100 MB (0.01 FLOP/byte: memory-bound, 0.1 GFLOP/s attainable) in 40 ms:
  // 10 ms at the roofline, a quarter of it reached, 30 ms lost.
  const PassEfficiency m = efficiency_of({"relu", "backward", 0.040, {1e6, 1e8}}, c);
  EXPECT_EQ(m.bound, "memory");
  EXPECT_NEAR(m.roofline_share, 0.25, 1e-12);
  EXPECT_NEAR(m.lost_s, 0.030, 1e-12);
  // No work (a view): nothing to compare.
  EXPECT_EQ(efficiency_of({"flatten", "forward", 1e-6, {}}, c).bound, "-");
}

}  // namespace
}  // namespace hpdl
