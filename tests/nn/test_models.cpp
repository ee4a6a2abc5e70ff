// Whole-model checks: finite-difference gradients of the softmax cross-entropy loss with
// respect to every kind of parameter of a tiny HAR 2x2 residual bidirectional LSTM
// (input dropout, two residual layers of two bidirectional groups, per-sample norm,
// last step, output dropout, dense), on both CPU backends.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "hpdl/builder/builder.hpp"
#include "hpdl/config/config.hpp"
#include "hpdl/core/rng.hpp"
#include "hpdl/nn/loss.hpp"
#include "tiny_models.hpp"

using namespace hpdl;

namespace {

const std::string kTinyHar = std::string("[data]\ntrain_file = \"unused.h5\"\n") + kTinyHarModel;

class ModelGradient : public ::testing::TestWithParam<std::string> {};

TEST_P(ModelGradient, TinyHar2x2) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("hpdl_tiny_har_" + std::to_string(getpid()) + ".toml"))
                               .string();
  std::ofstream(path) << kTinyHar;
  const Config cfg = load_config(path, {});
  std::filesystem::remove(path);
  const int64_t batch = 3;
  auto model = build_model(cfg.model, batch, parse_word<Backend>(GetParam(), "backend"));
  model->init_params(4);
  // 2 residual layers x (sum + norm) between the dropouts, and named nested parameters.
  EXPECT_EQ(model->num_layers(), 8u);
  EXPECT_EQ(model->segments()[0].name, "res1.g0.bi.fw.proj.w");
  // L2 applies exactly to the segments marked for decay (weights), in order.
  std::vector<Range> decays;
  for (const auto& seg : model->segments())
    if (seg.decay) decays.push_back({seg.offset, seg.size});
  const std::vector<Range> decayed = model->decayed_ranges();
  ASSERT_EQ(decayed.size(), decays.size());
  EXPECT_LT(decayed.size(), model->segments().size());  // biases do not decay
  for (size_t k = 0; k < decays.size(); ++k) {
    EXPECT_EQ(decayed[k].offset, decays[k].offset);
    EXPECT_EQ(decayed[k].size, decays[k].size);
  }

  Rng rng(3, 3);
  std::vector<float> x(model->input_shape().numel());
  for (auto& v : x) v = 2 * rng.uniform() - 1;
  const int32_t labels[batch] = {0, 3, 1};
  const int64_t ids[batch] = {10, 11, 12};
  const Pass pass{true, 9, 2, ids};
  SoftmaxCrossEntropy loss(model->kernels(), batch, cfg.model.classes);
  auto eval = [&] {
    std::copy(x.begin(), x.end(), model->input_host());
    model->upload_input();
    model->forward(pass);
    return loss.forward(model->output(), labels, batch);
  };
  eval();
  loss.backward(labels, 1.0f, model->output_grad());
  model->zero_grads();
  model->backward(pass);
  const std::vector<float> analytic(model->grads().begin(), model->grads().end());

  const float eps = 2e-3f;
  int checked = 0;
  for (const auto& seg : model->segments()) {
    const int64_t stride = std::max<int64_t>(1, seg.size / 6);
    for (int64_t i = seg.offset; i < seg.offset + seg.size; i += stride, ++checked) {
      float& p = model->params()[i];
      const float keep = p;
      p = keep + eps;
      const double lp = eval();
      p = keep - eps;
      const double lm = eval();
      p = keep;
      const double numeric = (lp - lm) / (2 * eps);
      EXPECT_NEAR(analytic[i], numeric, 3e-3 + 3e-2 * std::abs(numeric))
          << GetParam() << " " << seg.name;
    }
  }
  EXPECT_GT(checked, 100);
}

INSTANTIATE_TEST_SUITE_P(Backends, ModelGradient, ::testing::Values("reference", "onednn"));

}  // namespace
