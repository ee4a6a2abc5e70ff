// LSTM and last-step layers. The LSTM runs the input projection for all steps as one
// matrix product, then one small recurrent product and one OpenMP gate loop per step;
// backward runs the steps in reverse, accumulating Wh gradients per step and Wx, b
// gradients in one product at the end. N batch, T steps, C inputs, H hidden, G = 4H.
#include "hpdl/nn/recurrent.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "hpdl/core/error.hpp"

namespace hpdl {
namespace {
inline float sigmoid(float v) { return 1.0f / (1.0f + std::exp(-v)); }
}  // namespace

Shape Lstm::setup(const Shape& in) {
  HPDL_REQUIRE(in.rank() == 3,
               "lstm layer '" + name() + "' needs a sequence [N, T, C], got " + in.str());
  batch_ = in[0], steps_ = in[1], in_ = in[2];
  return Shape{{batch_, steps_, hidden_}};
}

std::vector<ParamSpec> Lstm::param_specs() const {
  const int64_t G = 4 * hidden_;
  return {{"wx", G * in_, true, Init::kGlorotUniform, in_, G},
          {"wh", G * hidden_, true, Init::kGlorotUniform, hidden_, G},
          {"b", G, false, Init::kLstmBias, in_, G, forget_bias_}};
}

void Lstm::bind(std::vector<std::span<float>> p, std::vector<std::span<float>> g,
                KernelFactory& k) {
  wx_ = p[0], wh_ = p[1], b_ = p[2], dwx_ = g[0], dwh_ = g[1], db_ = g[2];
  const int64_t N = batch_, T = steps_, H = hidden_, G = 4 * H;
  input_ = k.dense({N * T, in_, G});
  recurrent_ = k.dense({N, H, G});
  pre_ = Buffer(N * T * G);
  gates_ = Buffer(T * N * G);
  cells_ = Buffer(T * N * H);
  hiddens_ = Buffer(T * N * H);
  rec_ = Buffer(N * G);
  zeros_ = Buffer(std::max(N * H, G));
  dh_ = Buffer(N * H);
  dc_ = Buffer(N * H);
  dummy_db_ = Buffer(G);
}

void Lstm::forward(const float* x, float* y, const Pass&) {
  const int64_t N = batch_, T = steps_, H = hidden_, G = 4 * H;
  input_->forward(x, wx_.data(), b_.data(), pre_.data());
  for (int64_t s = 0; s < T; ++s) {
    const int64_t t = step_index(s);
    const float* h_prev = s ? hiddens_.data() + (s - 1) * N * H : zeros_.data();
    const float* c_prev = s ? cells_.data() + (s - 1) * N * H : zeros_.data();
    recurrent_->forward(h_prev, wh_.data(), zeros_.data(), rec_.data());
    float* gates = gates_.data() + s * N * G;
    float* cells = cells_.data() + s * N * H;
    float* hid = hiddens_.data() + s * N * H;
    const float* pre = pre_.data();
    const float* rec = rec_.data();
#pragma omp parallel for if (N * H > 8192)
    for (int64_t n = 0; n < N; ++n) {
      const float* p = pre + (n * T + t) * G;
      const float* r = rec + n * G;
      float* gt = gates + n * G;
      for (int64_t j = 0; j < H; ++j) {
        const float i = sigmoid(p[j] + r[j]), f = sigmoid(p[H + j] + r[H + j]);
        const float g = std::tanh(p[2 * H + j] + r[2 * H + j]),
                    o = sigmoid(p[3 * H + j] + r[3 * H + j]);
        const float c = f * c_prev[n * H + j] + i * g;
        gt[j] = i, gt[H + j] = f, gt[2 * H + j] = g, gt[3 * H + j] = o;
        cells[n * H + j] = c;
        const float h = o * std::tanh(c);
        hid[n * H + j] = h;
        y[(n * T + t) * H + j] = h;
      }
    }
  }
}

void Lstm::backward(const float* x, const float*, const float* dy, float* dx, const Pass&) {
  const int64_t N = batch_, T = steps_, H = hidden_, G = 4 * H;
  dh_.zero();
  dc_.zero();
  for (int64_t s = T - 1; s >= 0; --s) {
    const int64_t t = step_index(s);
    const float* gates = gates_.data() + s * N * G;
    const float* cells = cells_.data() + s * N * H;
    const float* c_prev = s ? cells_.data() + (s - 1) * N * H : zeros_.data();
    float* dpre_step = rec_.data();  // [N, G], input to the recurrent product's backward
    float* dpre_all = pre_.data();   // [N*T, G], input to the input product's backward
    float* dh = dh_.data();
    float* dc = dc_.data();
#pragma omp parallel for if (N * H > 8192)
    for (int64_t n = 0; n < N; ++n) {
      const float* gt = gates + n * G;
      float* d = dpre_step + n * G;
      for (int64_t j = 0; j < H; ++j) {
        const float i = gt[j], f = gt[H + j], g = gt[2 * H + j], o = gt[3 * H + j];
        const float tc = std::tanh(cells[n * H + j]);
        const float dhj = dy[(n * T + t) * H + j] + dh[n * H + j];
        const float dcj = dhj * o * (1 - tc * tc) + dc[n * H + j];
        dc[n * H + j] = dcj * f;  // to step s-1
        d[j] = dcj * g * i * (1 - i);
        d[H + j] = dcj * c_prev[n * H + j] * f * (1 - f);
        d[2 * H + j] = dcj * i * (1 - g * g);
        d[3 * H + j] = dhj * tc * o * (1 - o);
      }
      std::memcpy(dpre_all + (n * T + t) * G, d, G * sizeof(float));
    }
    // h_{-1} = 0: the first step adds nothing to dWh and passes no gradient further back.
    if (s > 0) {
      recurrent_->backward(hiddens_.data() + (s - 1) * N * H, wh_.data(), dpre_step, dh,
                           dwh_.data(), dummy_db_.data());
    }
  }
  input_->backward(x, wx_.data(), pre_.data(), dx, dwx_.data(), db_.data());
}

Shape LastStep::setup(const Shape& in) {
  HPDL_REQUIRE(in.rank() == 3,
               "last_step layer '" + name() + "' needs a sequence [N, T, C], got " + in.str());
  batch_ = in[0], steps_ = in[1], channels_ = in[2];
  return Shape{{batch_, channels_}};
}

void LastStep::forward(const float* x, float* y, const Pass&) {
  const int64_t T = steps_, C = channels_;
  for (int64_t n = 0; n < batch_; ++n)
    std::memcpy(y + n * C, x + (n * T + T - 1) * C, C * sizeof(float));
}

void LastStep::backward(const float*, const float*, const float* dy, float* dx, const Pass&) {
  if (!dx) return;
  const int64_t T = steps_, C = channels_;
  std::memset(dx, 0, batch_ * T * C * sizeof(float));
  for (int64_t n = 0; n < batch_; ++n)
    std::memcpy(dx + (n * T + T - 1) * C, dy + n * C, C * sizeof(float));
}

}  // namespace hpdl
