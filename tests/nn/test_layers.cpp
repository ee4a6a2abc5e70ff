// Layer tests on every CPU backend: finite-difference gradient checks (inputs and
// parameters) and reference-vs-oneDNN parity of forward and backward.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "hpdl/core/error.hpp"
#include "hpdl/core/rng.hpp"
#include "hpdl/nn/batch_norm.hpp"
#include "hpdl/nn/branches.hpp"
#include "hpdl/nn/layers.hpp"
#include "hpdl/nn/loss.hpp"
#include "hpdl/nn/model.hpp"
#include "hpdl/nn/recurrent.hpp"
#include "kernel_env.hpp"
#include "omp_threads.hpp"

using namespace hpdl;

namespace {

std::vector<float> random_vec(int64_t n, uint64_t stream, float scale = 1.0f) {
  Rng rng(42, stream);
  std::vector<float> v(n);
  for (auto& x : v) x = (2 * rng.uniform() - 1) * scale;
  return v;
}

std::vector<std::unique_ptr<Layer>> one(std::unique_ptr<Layer> l) {
  l->set_name("l");
  std::vector<std::unique_ptr<Layer>> v;
  v.push_back(std::move(l));
  return v;
}

// L = sum(y * r) for a fixed random r; checks dL/dx and dL/dparams against central
// differences of L computed in double from float forwards.
// Kinked layers (ReLU, max-pool) get inputs spaced well apart from each other and from 0,
// so no finite-difference probe crosses a kink.
enum class Inputs { kRandom, kSeparated };

void gradient_check(const std::string& backend, std::function<std::unique_ptr<Layer>()> make,
                    const Shape& in, bool training = false, Inputs inputs = Inputs::kRandom) {
  auto layer = make();
  layer->set_name("l");
  const Shape out = layer->setup(in);
  const auto specs = layer->param_specs();
  int64_t total = 0;
  for (const auto& s : specs) total += s.size;
  std::vector<float> params = random_vec(total, 1, 0.5f), grads(total, 0.0f);
  std::vector<std::span<float>> p, g;
  int64_t off = 0;
  for (const auto& s : specs) {
    p.emplace_back(params.data() + off, s.size);
    g.emplace_back(grads.data() + off, s.size);
    off += s.size;
  }
  auto kernels = test_kernels(backend);
  layer->bind(p, g, *kernels);

  std::vector<float> x = random_vec(in.numel(), 2), y(out.numel()), dx(in.numel());
  if (inputs == Inputs::kSeparated) {
    Rng rng(5, 5);
    for (int64_t i = 0; i < in.numel(); ++i) x[i] = 0.05f * float(i + 1) * (i % 2 ? 1.0f : -1.0f);
    for (int64_t i = in.numel() - 1; i > 0; --i) std::swap(x[i], x[rng.below(i + 1)]);
  }
  const std::vector<float> r = random_vec(out.numel(), 3);
  std::vector<int64_t> ids(in[0]);
  for (int64_t i = 0; i < in[0]; ++i) ids[i] = 100 + i;
  const Pass pass{training, 7, 3, ids.data()};

  auto loss = [&]() {
    layer->forward(x.data(), y.data(), pass);
    double l = 0;
    for (int64_t i = 0; i < out.numel(); ++i) l += double(y[i]) * r[i];
    return l;
  };
  loss();
  layer->backward(x.data(), y.data(), r.data(), dx.data(), pass);

  const float eps = 1e-2f;
  auto check = [&](std::vector<float>& v, const std::vector<float>& analytic, const char* what) {
    const int64_t n = static_cast<int64_t>(v.size());
    const int64_t stride = std::max<int64_t>(1, n / 60);  // about 60 probes per tensor
    for (int64_t i = 0; i < n; i += stride) {
      const float keep = v[i];
      v[i] = keep + eps;
      const double lp = loss();
      v[i] = keep - eps;
      const double lm = loss();
      v[i] = keep;
      const double numeric = (lp - lm) / (2 * eps);
      EXPECT_NEAR(analytic[i], numeric, 2e-3 + 2e-2 * std::abs(numeric))
          << backend << " " << layer->kind() << " d" << what << "[" << i << "]";
    }
  };
  check(x, dx, "x");
  check(params, grads, "params");
}

class LayerTest : public ::testing::TestWithParam<std::string> {};

TEST_P(LayerTest, DenseGradient) {
  gradient_check(
      GetParam(), [] { return std::make_unique<Dense>(5, Init::kGlorotUniform); }, Shape{{3, 7}});
}
TEST_P(LayerTest, DenseOnImageInputGradient) {
  gradient_check(
      GetParam(), [] { return std::make_unique<Dense>(4, Init::kGlorotUniform); },
      Shape{{2, 2, 3, 3}});
}
TEST_P(LayerTest, ReluGradient) {
  gradient_check(
      GetParam(), [] { return std::make_unique<ActivationLayer>(Activation::kRelu); },
      Shape{{4, 9}}, false, Inputs::kSeparated);
}
TEST_P(LayerTest, TanhGradient) {
  gradient_check(
      GetParam(), [] { return std::make_unique<ActivationLayer>(Activation::kTanh); },
      Shape{{4, 9}});
}
TEST_P(LayerTest, SigmoidGradient) {
  gradient_check(
      GetParam(), [] { return std::make_unique<ActivationLayer>(Activation::kSigmoid); },
      Shape{{4, 9}});
}
TEST_P(LayerTest, Conv2dGradient) {
  gradient_check(
      GetParam(), [] { return std::make_unique<Conv2d>(3, 3, 1, 1); }, Shape{{2, 2, 6, 6}});
}
TEST_P(LayerTest, Conv2dStridedGradient) {
  gradient_check(
      GetParam(), [] { return std::make_unique<Conv2d>(4, 3, 2, 0); }, Shape{{2, 3, 7, 7}});
}
TEST_P(LayerTest, MaxPoolGradient) {
  gradient_check(
      GetParam(), [] { return std::make_unique<MaxPool2d>(2, 2); }, Shape{{2, 3, 6, 6}}, false,
      Inputs::kSeparated);
}
TEST_P(LayerTest, OverlappingMaxPoolGradient) {  // AlexNet's 3x3 stride 2 (oneDNN's pooling)
  gradient_check(
      GetParam(), [] { return std::make_unique<MaxPool2d>(3, 2); }, Shape{{2, 2, 7, 7}}, false,
      Inputs::kSeparated);
}
TEST_P(LayerTest, MaxPoolWithFusedReluGradient) {  // a ReLU before it, absorbed
  gradient_check(
      GetParam(),
      [] {
        auto pool = std::make_unique<MaxPool2d>(2, 2);
        pool->plan().absorb_relu();
        return pool;
      },
      Shape{{2, 3, 6, 6}}, false, Inputs::kSeparated);
}
TEST_P(LayerTest, DenseWithFusedReluGradient) {  // a ReLU after it, absorbed
  gradient_check(
      GetParam(),
      [] {
        auto dense = std::make_unique<Dense>(6, Init::kGlorotUniform);
        dense->plan().absorb_following_relu();
        return dense;
      },
      Shape{{3, 7}}, false, Inputs::kSeparated);
}
TEST_P(LayerTest, MaxPoolOddSizeGradient) {  // rows/columns past the last window get no gradient
  gradient_check(
      GetParam(), [] { return std::make_unique<MaxPool2d>(2, 2); }, Shape{{2, 2, 5, 7}}, false,
      Inputs::kSeparated);
}
// Window arithmetic never truncates a negative span into one output position.
TEST(WindowShapes, OutputsOrZero) {
  EXPECT_EQ(window_outputs(8, 16, 16, 0), 0);  // (8 - 16) / 16 + 1 would be 1
  EXPECT_EQ(window_outputs(8, 9, 1, 0), 0);
  EXPECT_EQ(window_outputs(8, 9, 1, 1), 2);  // fits once padded
  EXPECT_EQ(window_outputs(8, 2, 2, 0), 4);
  EXPECT_EQ(window_outputs(5, 3, 2, 1), 3);
  EXPECT_EQ(window_outputs(8, 8, 1, 0), 1);
  EXPECT_EQ(window_outputs(8, 2, 0, 0), 0);  // stride 0
  EXPECT_EQ(window_outputs(8, 0, 1, 0), 0);  // empty window
}
TEST(WindowShapes, LayersRefuseAWindowLargerThanTheirInput) {
  EXPECT_THROW(MaxPool2d(16, 16).setup(Shape{{2, 1, 8, 8}}), Error);
  EXPECT_THROW(Conv2d(2, 9, 1, 0).setup(Shape{{2, 1, 8, 8}}), Error);
  EXPECT_EQ(Conv2d(2, 9, 1, 1).setup(Shape{{2, 1, 8, 8}}).str(), Shape({{2, 2, 2, 2}}).str());
}
TEST_P(LayerTest, DropoutGradient) {
  gradient_check(
      GetParam(), [] { return std::make_unique<Dropout>(0.7f); }, Shape{{3, 10}}, true);
}

TEST_P(LayerTest, DensePerStepGradient) {
  gradient_check(
      GetParam(), [] { return std::make_unique<Dense>(4, Init::kGlorotUniform, true); },
      Shape{{2, 3, 5}});
}
TEST_P(LayerTest, LstmGradient) {
  gradient_check(
      GetParam(), [] { return std::make_unique<Lstm>(4, 1.0f, false); }, Shape{{3, 5, 2}});
}
TEST_P(LayerTest, ReversedLstmGradient) {
  gradient_check(
      GetParam(), [] { return std::make_unique<Lstm>(3, 1.0f, true); }, Shape{{2, 4, 3}});
}
TEST_P(LayerTest, LastStepGradient) {
  gradient_check(
      GetParam(), [] { return std::make_unique<LastStep>(); }, Shape{{2, 4, 3}});
}

// A cell group as in the HAR thesis (per-step projection, then an LSTM), with tanh in
// place of the ReLU so finite differences never straddle a kink (ReLU has its own check).
Chain group(int64_t hidden, bool reverse) {
  std::vector<std::unique_ptr<Layer>> ls;
  ls.push_back(std::make_unique<Dense>(hidden, Init::kHeUniform, true));
  ls.push_back(std::make_unique<ActivationLayer>(Activation::kTanh));
  ls.push_back(std::make_unique<Lstm>(hidden, 1.0f, reverse));
  ls[0]->set_name("proj"), ls[1]->set_name("relu"), ls[2]->set_name("lstm");
  return Chain(std::move(ls));
}

std::unique_ptr<Layer> bidirectional(int64_t hidden) {
  std::vector<std::pair<std::string, Chain>> b;
  b.emplace_back("fw", group(hidden / 2, false));
  b.emplace_back("bw", group(hidden / 2, true));
  return std::make_unique<Branches>(std::move(b), Branches::Combine::kConcat);
}

TEST_P(LayerTest, BidirectionalGradient) {
  gradient_check(
      GetParam(), [] { return bidirectional(6); }, Shape{{2, 4, 3}});
}
TEST_P(LayerTest, ResidualSumOfBidirectionalGroupsGradient) {
  gradient_check(
      GetParam(),
      [] {
        std::vector<std::pair<std::string, Chain>> b;
        for (int k = 0; k < 2; ++k) {
          std::vector<std::unique_ptr<Layer>> ls;
          ls.push_back(bidirectional(4));
          ls[0]->set_name("bi");
          b.emplace_back("g" + std::to_string(k), Chain(std::move(ls)));
        }
        return std::make_unique<Branches>(std::move(b), Branches::Combine::kSum);
      },
      Shape{{2, 3, 5}});
}
TEST_P(LayerTest, ScalarNormGradient) {
  gradient_check(
      GetParam(), [] { return std::make_unique<ScalarNorm>(); }, Shape{{3, 4, 5}});
}

// Training mode (batch statistics); after a dense layer [N, C] and a convolution [N, C, H, W].
TEST_P(LayerTest, BatchNormGradient) {
  auto make = [] { return std::make_unique<BatchNorm>(1e-5f, 0.1f); };
  gradient_check(GetParam(), make, Shape{{5, 3}}, true);
  gradient_check(GetParam(), make, Shape{{2, 3, 2, 3}}, true);
}

// Inference uses the running statistics, which training moved towards the batch's: after
// one training pass from (0, 1) with momentum 1 they are the batch's own (variance
// unbiased), so inference on the same batch reproduces training up to M/(M-1).
TEST_P(LayerTest, BatchNormRunningStatisticsServeInference) {
  BatchNorm bn(0.0f, 1.0f);
  bn.set_name("bn");
  const Shape in{{4, 2, 1, 3}};
  bn.setup(in);
  std::vector<float> params = {1, 1, 0, 0, 0, 0, 1, 1}, grads(8, 0.0f);  // scale shift mean var
  std::vector<std::span<float>> p, g;
  for (int k = 0; k < 4; ++k)
    p.emplace_back(params.data() + 2 * k, 2), g.emplace_back(grads.data() + 2 * k, 2);
  auto kernels = test_kernels(GetParam());
  bn.bind(p, g, *kernels);
  const auto x = random_vec(in.numel(), 9);
  std::vector<float> y_train(in.numel()), y_infer(in.numel());
  bn.forward(x.data(), y_train.data(), Pass{true});
  for (int c = 0; c < 2; ++c) {
    double sum = 0, sq = 0;
    for (int n = 0; n < 4; ++n)
      for (int s = 0; s < 3; ++s) sum += x[(n * 2 + c) * 3 + s];
    const double mean = sum / 12;
    for (int n = 0; n < 4; ++n)
      for (int s = 0; s < 3; ++s) sq += std::pow(x[(n * 2 + c) * 3 + s] - mean, 2);
    EXPECT_NEAR(params[4 + c], mean, 1e-5) << "running mean " << c;
    EXPECT_NEAR(params[6 + c], sq / 11, 1e-5) << "running variance (unbiased) " << c;
  }
  bn.forward(x.data(), y_infer.data(), Pass{false});
  for (int64_t i = 0; i < in.numel(); ++i)
    EXPECT_NEAR(y_infer[i], y_train[i] * std::sqrt(11.0 / 12.0), 1e-4) << i;
  EXPECT_EQ(grads, std::vector<float>(8, 0.0f));  // forward never writes gradients
}

TEST(BatchNorm, RefusesSequences) {
  BatchNorm bn(1e-5f, 0.1f);
  bn.set_name("bn1");
  EXPECT_THROW(bn.setup(Shape{{2, 5, 3}}), Error);
}

INSTANTIATE_TEST_SUITE_P(Backends, LayerTest, ::testing::Values("reference", "onednn"));

TEST(Dropout, MaskDependsOnSampleIdNotPosition) {
  Dropout d(0.5f);
  d.set_name("drop");
  d.setup(Shape{{2, 64}});
  auto kernels = make_reference_kernels();
  d.bind({}, {}, *kernels);
  std::vector<float> x(128, 1.0f), y(128), y2(128);
  const int64_t ids[2] = {10, 11}, swapped[2] = {11, 10};
  d.forward(x.data(), y.data(), Pass{true, 1, 5, ids});
  d.forward(x.data(), y2.data(), Pass{true, 1, 5, swapped});
  for (int i = 0; i < 64; ++i) {
    EXPECT_EQ(y[i], y2[64 + i]);
    EXPECT_TRUE(y[i] == 0.0f || y[i] == 2.0f);
  }
  d.forward(x.data(), y2.data(), Pass{false, 1, 5, ids});
  for (float v : y2) EXPECT_EQ(v, 1.0f);
}

TEST(Loss, SoftmaxCrossEntropyGradientAndValue) {
  auto kernels = make_reference_kernels();
  SoftmaxCrossEntropy loss(*kernels, 2, 3);
  const float logits[6] = {1, 2, 3, 0, 0, 0};
  const int32_t labels[2] = {2, 0};
  const double l = loss.forward(logits, labels, 2);
  const double expect =
      -std::log(std::exp(3.0) / (std::exp(1.0) + std::exp(2.0) + std::exp(3.0))) + std::log(3.0);
  EXPECT_NEAR(l, expect, 1e-6);
  float d[6];
  loss.backward(labels, 0.5f, d);
  loss.probs_to_host();
  EXPECT_NEAR(d[2], (loss.probs()[2] - 1) * 0.5f, 1e-7);
  EXPECT_NEAR(d[3], (1.0f / 3 - 1) * 0.5f, 1e-6);
  EXPECT_EQ(loss.predicted(0), 2);
}

// Runs the same seeded batch and output gradient through `ref` and `dnn` (two builds of
// one model on different backends) and expects equal outputs and parameter gradients.
void expect_backends_agree(Model& ref, Model& dnn, uint64_t seed, double out_tol) {
  ASSERT_EQ(ref.num_params(), dnn.num_params());
  const auto x = random_vec(ref.input_shape().numel(), seed);
  std::copy(x.begin(), x.end(), ref.input_host());
  std::copy(x.begin(), x.end(), dnn.input_host());
  ref.upload_input(), dnn.upload_input();
  ref.forward(Pass{});
  dnn.forward(Pass{});
  const int64_t n_out = ref.output_shape().numel();
  for (int64_t i = 0; i < n_out; ++i) EXPECT_NEAR(ref.output()[i], dnn.output()[i], out_tol) << i;
  const auto dy = random_vec(n_out, seed + 1);
  std::copy(dy.begin(), dy.end(), ref.output_grad());
  std::copy(dy.begin(), dy.end(), dnn.output_grad());
  ref.zero_grads();
  dnn.zero_grads();
  ref.backward(Pass{});
  dnn.backward(Pass{});
  double max_err = 0;
  for (int64_t i = 0; i < ref.num_params(); ++i) {
    const double a = ref.grads()[i], b = dnn.grads()[i];
    max_err = std::max(max_err, std::abs(a - b) / (1e-3 + std::abs(a)));
  }
  EXPECT_LT(max_err, 1e-3);
}

// The same seeded model and batch through both backends: logits and all gradients agree.
TEST(Parity, LeNetLikeModelReferenceVsOneDnn) {
  auto build = [](const std::string& backend) {
    std::vector<std::unique_ptr<Layer>> ls;
    ls.push_back(std::make_unique<Conv2d>(6, 5, 1, 2));
    ls.push_back(std::make_unique<ActivationLayer>(Activation::kRelu));
    ls.push_back(std::make_unique<MaxPool2d>(2, 2));
    ls.push_back(std::make_unique<Conv2d>(8, 3, 2, 1));
    ls.push_back(std::make_unique<ActivationLayer>(Activation::kTanh));
    ls.push_back(std::make_unique<Flatten>());
    ls.push_back(std::make_unique<Dense>(12, Init::kGlorotUniform));
    ls.push_back(std::make_unique<ActivationLayer>(Activation::kSigmoid));
    ls.push_back(std::make_unique<Dense>(5, Init::kGlorotUniform));
    for (size_t i = 0; i < ls.size(); ++i) ls[i]->set_name("l" + std::to_string(i));
    auto m = std::make_unique<Model>(std::move(ls), Shape{{4, 3, 12, 12}}, test_kernels(backend));
    m->init_params(3);
    return m;
  };
  auto ref = build("reference"), dnn = build("onednn");
  expect_backends_agree(*ref, *dnn, 9, 1e-4);
}

// A reversed LSTM reads the sequence backwards: its output at step t equals a forward
// LSTM's output on the time-reversed input, at step T-1-t. Forget bias lands in [H, 2H).
TEST(Lstm, ReverseEqualsForwardOnReversedInputAndForgetBiasInit) {
  for (const std::string backend : {"reference", "onednn"}) {
    auto make = [&](bool reverse) {
      std::vector<std::unique_ptr<Layer>> ls;
      ls.push_back(std::make_unique<Lstm>(3, 1.0f, reverse));
      ls[0]->set_name("lstm");
      auto m = std::make_unique<Model>(std::move(ls), Shape{{2, 5, 4}}, test_kernels(backend));
      m->init_params(11);
      return m;
    };
    auto fwd = make(false), rev = make(true);
    const auto& b = fwd->segments()[2];
    EXPECT_EQ(fwd->params()[b.offset + 2], 0.0f);
    EXPECT_EQ(fwd->params()[b.offset + 3], 1.0f);
    EXPECT_EQ(fwd->params()[b.offset + 6], 0.0f);
    const auto x = random_vec(2 * 5 * 4, 12);
    for (int n = 0; n < 2; ++n)
      for (int t = 0; t < 5; ++t)
        for (int c = 0; c < 4; ++c) {
          fwd->input_host()[(n * 5 + t) * 4 + c] = x[(n * 5 + (4 - t)) * 4 + c];
          rev->input_host()[(n * 5 + t) * 4 + c] = x[(n * 5 + t) * 4 + c];
        }
    fwd->upload_input(), rev->upload_input();
    fwd->forward(Pass{});
    rev->forward(Pass{});
    for (int n = 0; n < 2; ++n)
      for (int t = 0; t < 5; ++t)
        for (int h = 0; h < 3; ++h)
          EXPECT_NEAR(rev->output()[(n * 5 + t) * 3 + h], fwd->output()[(n * 5 + (4 - t)) * 3 + h],
                      1e-6)
              << backend;
  }
}

// The LSTM model path (per-step dense, two LSTMs, last step, dense) through both backends.
TEST(Parity, SequenceModelReferenceVsOneDnn) {
  auto build = [](const std::string& backend) {
    std::vector<std::unique_ptr<Layer>> ls;
    ls.push_back(std::make_unique<Dense>(6, Init::kGlorotUniform, true));
    ls.push_back(std::make_unique<ActivationLayer>(Activation::kRelu));
    ls.push_back(std::make_unique<Lstm>(5, 1.0f, false));
    ls.push_back(std::make_unique<Lstm>(4, 1.0f, true));
    ls.push_back(std::make_unique<LastStep>());
    ls.push_back(std::make_unique<Dense>(3, Init::kGlorotUniform));
    for (size_t i = 0; i < ls.size(); ++i) ls[i]->set_name("l" + std::to_string(i));
    auto m = std::make_unique<Model>(std::move(ls), Shape{{4, 7, 9}}, test_kernels(backend));
    m->init_params(5);
    return m;
  };
  auto ref = build("reference"), dnn = build("onednn");
  expect_backends_agree(*ref, *dnn, 21, 1e-5);
}

// Products over many rows (64 sequences of 70 steps: 4480 rows): the per-step dense, whose
// weight gradient the oneDNN dense kernel takes as (x^T dy)^T, added in transposed, and an
// LSTM large enough (220 MFLOP a pass) to keep the rank's threads: on one thread it takes
// its weight and input gradients a step at a time, on two (outside a branch) as products
// over all steps, again as (x^T dy)^T. Both ways agree with the reference backend, and the
// gradients accumulate.
TEST(Parity, ManyRowWeightGradientsReferenceVsOneDnn) {
  auto build = [](const std::string& backend) {
    std::vector<std::unique_ptr<Layer>> ls;
    ls.push_back(std::make_unique<Dense>(32, Init::kGlorotUniform, true));
    ls.push_back(std::make_unique<Lstm>(32, 1.0f, false));
    ls.push_back(std::make_unique<LastStep>());
    ls.push_back(std::make_unique<Dense>(3, Init::kGlorotUniform));
    for (size_t i = 0; i < ls.size(); ++i) ls[i]->set_name("l" + std::to_string(i));
    auto m = std::make_unique<Model>(std::move(ls), Shape{{64, 70, 6}}, test_kernels(backend));
    m->init_params(7);
    return m;
  };
  auto ref = build("reference");
  for (const int threads : {1, 2}) {
    SCOPED_TRACE(::testing::Message() << threads << " threads");
    OmpThreads scope(threads);
    auto dnn = build("onednn");
    ASSERT_FALSE(dnn->one_thread());
    expect_backends_agree(*ref, *dnn, 23, 1e-5);
    if (threads == 1) {
      EXPECT_EQ(dnn->layer(1).kernel_choice().kernel,
                "weight and input gradients a step at a time");
    } else if (onednn_gemm() == "oneDNN") {  // not under HPDL_GEMM=blas
      EXPECT_EQ(dnn->layer(1).kernel_choice().kernel,
                "input weights: weight gradient as (x^T dy)^T; recurrent weights: weight "
                "gradient as (x^T dy)^T");
    }
    if (onednn_gemm() == "oneDNN") {
      EXPECT_EQ(dnn->layer(0).kernel_choice().kernel, "weight gradient as (x^T dy)^T");
      EXPECT_EQ(dnn->layer(3).kernel_choice().kernel, "");  // 64 rows: dy^T x
    }
    std::vector<float> once(dnn->grads().begin(), dnn->grads().end());
    dnn->backward(Pass{});
    for (int64_t i = 0; i < dnn->num_params(); ++i)
      ASSERT_NEAR(dnn->grads()[i], 2 * once[i], 1e-5 + 1e-5 * std::abs(once[i])) << i;
  }
  EXPECT_EQ(ref->layer(1).kernel_choice().kernel, "");
}

// A model of `layers` (named l0, l1, ...) on `backend`, its parameters drawn from seed 1,
// after a forward of random inputs, with a fixed output gradient set for backward.
std::unique_ptr<Model> model_ready_for_backward(std::vector<std::unique_ptr<Layer>> ls,
                                                const Shape& input, const std::string& backend) {
  for (size_t i = 0; i < ls.size(); ++i) ls[i]->set_name("l" + std::to_string(i));
  auto m = std::make_unique<Model>(std::move(ls), input, test_kernels(backend));
  m->init_params(1);
  const auto x = random_vec(m->input_shape().numel(), 4);
  std::copy(x.begin(), x.end(), m->input_host());
  m->upload_input();
  m->forward(Pass{});
  for (int64_t i = 0; i < m->output_shape().numel(); ++i) m->output_grad()[i] = 0.1f * (i % 5);
  return m;
}

// backward adds into parameter gradients: two backwards give twice the gradient.
TEST(Contract, BackwardAccumulatesParameterGradients) {
  for (const std::string backend : {"reference", "onednn"}) {
    std::vector<std::unique_ptr<Layer>> ls;
    ls.push_back(std::make_unique<Conv2d>(2, 3, 1, 1));
    ls.push_back(std::make_unique<Flatten>());
    ls.push_back(std::make_unique<Dense>(3, Init::kGlorotUniform));
    const auto model = model_ready_for_backward(std::move(ls), Shape{{2, 1, 5, 5}}, backend);
    Model& m = *model;
    m.zero_grads();
    m.backward(Pass{});
    std::vector<float> once(m.grads().begin(), m.grads().end());
    m.backward(Pass{});
    for (int64_t i = 0; i < m.num_params(); ++i)
      EXPECT_NEAR(m.grads()[i], 2 * once[i], 1e-5) << backend;
  }
}

// One batch's gradient without zeroing first (what a training step takes): the layers that
// can write their parameter gradients (dense layers on oneDNN: the small-batch product and
// the many-row one, its weight gradient transposed) write them, the others' are zeroed just
// before their backward (also a one-channel convolution in NHWC before a pool) and
// added to; a layer with branches leaves both to its branches' chains. Whatever grads()
// held before, backward_fresh gives what zero_grads + backward gives, on every CPU backend,
// and twice in a row the same (nothing added to the last).
TEST(Contract, BackwardFreshWritesOneBatchsGradient) {
  struct Case {
    Shape input;
    std::function<std::vector<std::unique_ptr<Layer>>()> layers;
  };
  const Case cases[] = {
      {Shape{{2, 1, 5, 5}},
       [] {
         std::vector<std::unique_ptr<Layer>> ls;
         ls.push_back(std::make_unique<Conv2d>(2, 3, 1, 1));
         ls.push_back(std::make_unique<Flatten>());
         ls.push_back(std::make_unique<Dense>(6, Init::kGlorotUniform));
         ls.push_back(std::make_unique<ActivationLayer>(Activation::kRelu));
         ls.push_back(std::make_unique<Dense>(3, Init::kGlorotUniform));
         return ls;
       }},
      {Shape{{2, 1, 8, 8}},
       [] {  // conv1's weight gradient by hpdl's one-channel kernel (oneDNN, NHWC)
         std::vector<std::unique_ptr<Layer>> ls;
         ls.push_back(std::make_unique<Conv2d>(20, 3, 1, 1));
         ls.push_back(std::make_unique<ActivationLayer>(Activation::kRelu));
         ls.push_back(std::make_unique<MaxPool2d>(2, 2));
         ls.push_back(std::make_unique<Flatten>());
         ls.push_back(std::make_unique<Dense>(3, Init::kGlorotUniform));
         return ls;
       }},
      {Shape{{4096, 8}},
       [] {  // 4096 rows, 8 -> 16: the weight gradient as (x^T dy)^T
         std::vector<std::unique_ptr<Layer>> ls;
         ls.push_back(std::make_unique<Dense>(16, Init::kGlorotUniform));
         return ls;
       }},
      {Shape{{2, 4, 3}}, [] {  // branches: their inner chains zero or write their own layers
         std::vector<std::unique_ptr<Layer>> ls;
         ls.push_back(bidirectional(6));
         ls.push_back(std::make_unique<LastStep>());
         ls.push_back(std::make_unique<Dense>(3, Init::kGlorotUniform));
         return ls;
       }}};
  for (const Case& c : cases) {
    for (const std::string backend : {"reference", "onednn"}) {
      const auto model = model_ready_for_backward(c.layers(), c.input, backend);
      Model& m = *model;
      m.zero_grads();
      m.backward(Pass{});
      const std::vector<float> want(m.grads().begin(), m.grads().end());
      for (int round = 0; round < 2; ++round) {
        if (round == 0) std::fill(m.grads().begin(), m.grads().end(), 1e30f);
        m.backward_fresh(Pass{});
        for (int64_t i = 0; i < m.num_params(); ++i)
          ASSERT_EQ(m.grads()[i], want[size_t(i)]) << backend << " round " << round << " at " << i;
      }
      const bool dense_writes = m.layer(m.num_layers() - 1).plan().writes_param_grads();
      // oneDNN's matmul writes; under HPDL_GEMM=blas the dense product is OpenBLAS's, which adds.
      EXPECT_EQ(dense_writes, backend == "onednn" && onednn_gemm() == "oneDNN") << backend;
    }
  }
}

}  // namespace
