// LSTM and last-step layers. The LSTM runs the input projection for all steps as one
// matrix product, then one small recurrent product and one OpenMP gate loop per step;
// backward runs the steps in reverse with one small product per step for dh, and takes
// the Wh, Wx and b gradients in one product each over all steps at the end.
// N batch, T steps, C inputs, H hidden, G = 4H.
#include "hpdl/nn/recurrent.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "hpdl/core/error.hpp"
#include "hpdl/core/fast_math.hpp"

namespace hpdl {
namespace {

// One sample's gates at one step (forward), vectorised over the H units.
// p, r: input and recurrent pre-activations [G]; cp: c_{t-1} [H]; outputs: gates [G],
// c, tanh(c), h [H], and h again into the layer output row y.
void cell_forward(const float* __restrict p, const float* __restrict r, const float* __restrict cp,
                  float* __restrict gt, float* __restrict c, float* __restrict tc,
                  float* __restrict h, float* __restrict y, int64_t H) {
#pragma omp simd
  for (int64_t j = 0; j < H; ++j) {
    const float i = fast_sigmoid(p[j] + r[j]), f = fast_sigmoid(p[H + j] + r[H + j]);
    const float g = fast_tanh(p[2 * H + j] + r[2 * H + j]);
    const float o = fast_sigmoid(p[3 * H + j] + r[3 * H + j]);
    const float cj = f * cp[j] + i * g, tcj = fast_tanh(cj);
    gt[j] = i, gt[H + j] = f, gt[2 * H + j] = g, gt[3 * H + j] = o;
    c[j] = cj, tc[j] = tcj;
    h[j] = o * tcj;
    y[j] = o * tcj;
  }
}

// The same sample's gate gradients (backward): from dy and the carried dh, dc; updates the
// carried dc for step t-1 and writes the pre-activation gradients d [G].
void cell_backward(const float* __restrict gt, const float* __restrict tc,
                   const float* __restrict cp, const float* __restrict dy,
                   const float* __restrict dh, float* __restrict dc, float* __restrict d,
                   int64_t H) {
#pragma omp simd
  for (int64_t j = 0; j < H; ++j) {
    const float i = gt[j], f = gt[H + j], g = gt[2 * H + j], o = gt[3 * H + j];
    const float dhj = dy[j] + dh[j];
    const float dcj = dhj * o * (1 - tc[j] * tc[j]) + dc[j];
    dc[j] = dcj * f;
    d[j] = dcj * g * i * (1 - i);
    d[H + j] = dcj * cp[j] * f * (1 - f);
    d[2 * H + j] = dcj * i * (1 - g * g);
    d[3 * H + j] = dhj * tc[j] * o * (1 - o);
  }
}

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
  if (T > 1) recurrent_all_ = k.dense({(T - 1) * N, H, G});
  pre_ = Buffer(N * T * G);
  gates_ = Buffer(T * N * G);
  cells_ = Buffer(T * N * H);
  tanh_cells_ = Buffer(T * N * H);
  hiddens_ = Buffer(T * N * H);
  rec_ = Buffer(N * G);
  dpre_ = Buffer(T * N * G);
  zeros_ = Buffer(std::max(N * H, G));
  dh_ = Buffer(N * H);
  dc_ = Buffer(N * H);
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
    float* tanh_c = tanh_cells_.data() + s * N * H;
    float* hid = hiddens_.data() + s * N * H;
    const float* pre = pre_.data();
    const float* rec = rec_.data();
#pragma omp parallel for if (N * H > 8192)
    for (int64_t n = 0; n < N; ++n) {
      cell_forward(pre + (n * T + t) * G, rec + n * G, c_prev + n * H, gates + n * G, cells + n * H,
                   tanh_c + n * H, hid + n * H, y + (n * T + t) * H, H);
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
    const float* tanh_c = tanh_cells_.data() + s * N * H;
    const float* c_prev = s ? cells_.data() + (s - 1) * N * H : zeros_.data();
    float* dpre_step = dpre_.data() + s * N * G;  // [N, G]: for the recurrent products
    float* dpre_all = pre_.data();                // [N*T, G]: for the input product
    float* dh = dh_.data();
    float* dc = dc_.data();
#pragma omp parallel for if (N * H > 8192)
    for (int64_t n = 0; n < N; ++n) {
      float* d = dpre_step + n * G;
      cell_backward(gates + n * G, tanh_c + n * H, c_prev + n * H, dy + (n * T + t) * H, dh + n * H,
                    dc + n * H, d, H);
      std::memcpy(dpre_all + (n * T + t) * G, d, G * sizeof(float));
    }
    // dh for step s-1; h_{-1} = 0, so the first step passes nothing further back.
    if (s > 0) recurrent_->backward(nullptr, wh_.data(), dpre_step, dh, nullptr, nullptr);
  }
  // dWh = sum over s >= 1 of dpre_s^T h_{s-1}: one product over all steps.
  if (recurrent_all_) {
    recurrent_all_->backward(hiddens_.data(), wh_.data(), dpre_.data() + N * G, nullptr,
                             dwh_.data(), nullptr);
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
