// ReLU fused into the max-pool after it (PlanHooks::absorb_relu) or into the dense layer before
// it (PlanHooks::absorb_following_relu): which chains fuse, and that a fused pool computes
// exactly what a ReLU layer followed by the pool computes — outputs and input gradients
// equal, on every CPU backend, for the tiled 2x2 pool, an odd-sized input and oneDNN's
// overlapping pool (where the layer applies the ReLU), on inputs full of windows whose
// maximum is negative, zero or tied — and a fused dense layer what the dense layer followed
// by a ReLU computes (outputs, input and parameter gradients).
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "hpdl/core/rng.hpp"
#include "hpdl/nn/branches.hpp"
#include "hpdl/nn/chain.hpp"
#include "hpdl/nn/layers.hpp"
#include "hpdl/plan/planner.hpp"
#include "kernel_env.hpp"
#include "random_values.hpp"

using namespace hpdl;

namespace {

std::vector<std::unique_ptr<Layer>> named(std::vector<std::unique_ptr<Layer>> ls) {
  for (size_t i = 0; i < ls.size(); ++i) ls[i]->set_name("l" + std::to_string(i));
  return ls;
}

template <typename... L>
std::vector<std::unique_ptr<Layer>> layers(std::unique_ptr<L>... l) {
  std::vector<std::unique_ptr<Layer>> v;
  (v.push_back(std::move(l)), ...);
  return named(std::move(v));
}

std::unique_ptr<Layer> relu() { return std::make_unique<ActivationLayer>(Activation::kRelu); }

struct PoolCase {
  const char* backend;
  int64_t kernel, stride;
  Shape in;
};

class FusedPool : public ::testing::TestWithParam<PoolCase> {};

TEST_P(FusedPool, EqualsReluLayerThenPool) {
  const PoolCase c = GetParam();
  auto kernels = test_kernels(c.backend);
  ActivationLayer act(Activation::kRelu);
  MaxPool2d pool(c.kernel, c.stride), fused(c.kernel, c.stride);
  act.set_name("relu"), pool.set_name("pool"), fused.set_name("fused");
  ASSERT_TRUE(fused.plan().absorb_relu());
  act.setup(c.in);
  const Shape out = pool.setup(c.in);
  fused.setup(c.in);
  act.bind({}, {}, *kernels), pool.bind({}, {}, *kernels), fused.bind({}, {}, *kernels);

  const int64_t n = c.in.numel(), m = out.numel();
  for (uint64_t seed = 1; seed <= 3; ++seed) {
    const std::vector<float> x = kinked_values(n, seed);
    std::vector<float> dy(m);
    Rng rng(seed, 2);
    for (auto& v : dy) v = float(rng.uniform()) - 0.5f;
    // Separate: r = relu(x), y = pool(r); dr = pool'(dy), dx = relu'(dr).
    std::vector<float> r(n), y(m), dr(n), dx(n);
    act.forward(x.data(), r.data(), Pass{});
    pool.forward(r.data(), y.data(), Pass{});
    pool.backward(r.data(), y.data(), dy.data(), dr.data(), Pass{});
    act.backward(x.data(), r.data(), dr.data(), dx.data(), Pass{});
    // Fused.
    std::vector<float> yf(m), dxf(n, 99.0f);
    fused.forward(x.data(), yf.data(), Pass{});
    fused.backward(x.data(), yf.data(), dy.data(), dxf.data(), Pass{});
    int64_t negative_windows = 0;
    for (int64_t i = 0; i < m; ++i) {
      ASSERT_EQ(yf[i], y[i]) << c.backend << " output " << i << " seed " << seed;
      negative_windows += y[i] == 0;
    }
    for (int64_t i = 0; i < n; ++i)
      ASSERT_EQ(dxf[i], dx[i]) << c.backend << " input gradient " << i << " seed " << seed;
    EXPECT_GT(negative_windows, 0) << "the inputs must hold windows the ReLU zeroes";
  }
}

INSTANTIATE_TEST_SUITE_P(
    Shapes, FusedPool,
    ::testing::Values(PoolCase{"reference", 2, 2, Shape{{3, 4, 8, 8}}},
                      PoolCase{"onednn", 2, 2, Shape{{3, 4, 8, 8}}},     // tiled, K = 2
                      PoolCase{"onednn", 2, 2, Shape{{2, 3, 7, 9}}},     // odd: rows left over
                      PoolCase{"onednn", 3, 3, Shape{{2, 3, 9, 9}}},     // tiled, any K
                      PoolCase{"reference", 3, 2, Shape{{2, 3, 9, 9}}},  // overlapping
                      PoolCase{"onednn", 3, 2, Shape{{2, 3, 9, 9}}}));   // oneDNN + layer's ReLU

TEST(ReluFusion, DenseWithTheReluAfterItEqualsDenseThenRelu) {
  for (const std::string backend : {"reference", "onednn"}) {
    auto kernels = test_kernels(backend);
    const int64_t N = 6, I = 10, O = 9;
    Dense dense(O, Init::kGlorotUniform), fused(O, Init::kGlorotUniform);
    ActivationLayer act(Activation::kRelu);
    dense.set_name("dense"), fused.set_name("fused"), act.set_name("relu");
    ASSERT_TRUE(fused.plan().absorb_following_relu());
    dense.setup(Shape{{N, I}}), fused.setup(Shape{{N, I}}), act.setup(Shape{{N, O}});
    const std::vector<float> w = kinked_values(O * I, 7), b = kinked_values(O, 8);
    std::vector<float> w1 = w, b1 = b, w2 = w, b2 = b;
    std::vector<float> dw1(O * I), db1(O), dw2(O * I), db2(O);
    dense.bind({w1, b1}, {dw1, db1}, *kernels), fused.bind({w2, b2}, {dw2, db2}, *kernels);
    act.bind({}, {}, *kernels);
    const std::vector<float> x = kinked_values(N * I, 9), dy = kinked_values(N * O, 10);
    // Separate: p = dense(x), y = relu(p); dp = relu'(dy), dx = dense'(dp).
    std::vector<float> p(N * O), y(N * O), dp(N * O), dx(N * I);
    dense.forward(x.data(), p.data(), Pass{});
    act.forward(p.data(), y.data(), Pass{});
    act.backward(p.data(), y.data(), dy.data(), dp.data(), Pass{});
    dense.backward(x.data(), p.data(), dp.data(), dx.data(), Pass{});
    std::vector<float> yf(N * O), dxf(N * I, 99.0f);
    fused.forward(x.data(), yf.data(), Pass{});
    fused.backward(x.data(), yf.data(), dy.data(), dxf.data(), Pass{});
    EXPECT_EQ(yf, y) << backend;
    EXPECT_EQ(dxf, dx) << backend;
    EXPECT_EQ(dw2, dw1) << backend;
    EXPECT_EQ(db2, db1) << backend;
    int64_t zeroed = 0;
    for (float v : y) zeroed += v == 0;
    EXPECT_GT(zeroed, 0) << "the outputs must hold values the ReLU zeroes";
  }
}

TEST(ReluFusion, ChainFusesAReluIntoAPoolAfterItOrADenseLayerBeforeIt) {
  auto setup = [](std::vector<std::unique_ptr<Layer>> ls) {
    auto chain = std::make_unique<Chain>(std::move(ls));
    chain->setup(Shape{{2, 3, 8, 8}}, &execution_planner());
    return chain;
  };
  {
    auto c = setup(
        layers(std::make_unique<Conv2d>(4, 3, 1, 1), relu(), std::make_unique<MaxPool2d>(2, 2)));
    EXPECT_TRUE(c->layer(1).plan().is_view());
    EXPECT_EQ(c->layer(1).kernel_choice().kernel, "fused into l2 (applied to its output)");
    EXPECT_EQ(c->layer(1).work(true).forward.flops, 0);
    // The ReLU's activation and its gradient are no longer stored: against a tanh there,
    // 2 x 4 x 8 x 8 values twice fewer.
    auto unfused = setup(layers(std::make_unique<Conv2d>(4, 3, 1, 1),
                                std::make_unique<ActivationLayer>(Activation::kTanh),
                                std::make_unique<MaxPool2d>(2, 2)));
    EXPECT_EQ(unfused->estimated_bytes() - c->estimated_bytes(), 2 * sizeof(float) * 2 * 4 * 8 * 8);
  }
  {  // dense -> ReLU -> dense: the first dense layer applies it
    auto c =
        std::make_unique<Chain>(layers(std::make_unique<Dense>(5, Init::kGlorotUniform), relu(),
                                       std::make_unique<Dense>(3, Init::kGlorotUniform)));
    c->setup(Shape{{2, 7}}, &execution_planner());
    EXPECT_TRUE(c->layer(1).plan().is_view());
    EXPECT_EQ(c->layer(1).kernel_choice().kernel, "fused into l0 (applied to its output)");
  }
  {  // a ReLU before a convolution, a tanh before a pool, a ReLU at the end: none fused
    auto c = setup(layers(std::make_unique<Conv2d>(4, 3, 1, 1), relu(),
                          std::make_unique<Conv2d>(4, 3, 1, 1),
                          std::make_unique<ActivationLayer>(Activation::kTanh),
                          std::make_unique<MaxPool2d>(2, 2), relu()));
    for (size_t i = 0; i < c->size(); ++i) EXPECT_FALSE(c->layer(i).plan().is_view()) << i;
    auto d =
        std::make_unique<Chain>(layers(std::make_unique<Dense>(5, Init::kGlorotUniform), relu()));
    d->setup(Shape{{2, 7}}, &execution_planner());
    EXPECT_FALSE(d->layer(1).plan().is_view());  // a dense layer and the chain's last ReLU
  }
  {  // without a planner every layer runs as written
    auto c = std::make_unique<Chain>(
        layers(std::make_unique<Conv2d>(4, 3, 1, 1), relu(), std::make_unique<MaxPool2d>(2, 2)));
    c->setup(Shape{{2, 3, 8, 8}});
    EXPECT_FALSE(c->layer(1).plan().is_view());
  }
  {  // the planner reaches the chains inside a layer: a ReLU in a branch folds there too
    std::vector<std::pair<std::string, Chain>> branches;
    branches.emplace_back("a",
                          Chain(layers(std::make_unique<Dense>(5, Init::kGlorotUniform), relu(),
                                       std::make_unique<Dense>(3, Init::kGlorotUniform))));
    branches.emplace_back("b", Chain(layers(std::make_unique<Dense>(3, Init::kGlorotUniform))));
    std::vector<std::unique_ptr<Layer>> outer;
    outer.push_back(std::make_unique<Branches>(std::move(branches), Branches::Combine::kSum));
    outer.push_back(std::make_unique<Dense>(2, Init::kGlorotUniform));
    auto c = std::make_unique<Chain>(named(std::move(outer)));
    c->setup(Shape{{2, 7}}, &execution_planner());
    const auto& inner = dynamic_cast<const Branches&>(c->layer(0)).branches()[0].second;
    EXPECT_TRUE(inner.layer(1).plan().is_view());
    EXPECT_EQ(inner.layer(1).kernel_choice().kernel, "fused into l0 (applied to its output)");
  }
}

}  // namespace
