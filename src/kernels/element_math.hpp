// The per-element and per-row arithmetic of the backends' loops, written once: the
// reference backend calls these in plain loops, the CPU backend in OpenMP SIMD loops (and a
// CUDA backend will mark them __host__ __device__ and call them from its kernels, so the
// host tests check the arithmetic the GPU runs): every function here is HPDL_HD. Private to
// kernels/.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>

#include "hpdl/core/fast_math.hpp"
#include "hpdl/core/hd.hpp"
#include "hpdl/core/rng.hpp"
#include "hpdl/kernels/vector_ops.hpp"

namespace hpdl::math {

// SGD with momentum on one element: v = mu v + g; w -= lr v.
HPDL_HD inline void sgd_momentum(float lr, float mu, float g, float& v, float& w) {
  v = mu * v + g;
  w -= lr * v;
}

// Adam on one element (see AdamStep).
HPDL_HD inline void adam(const AdamStep& s, float g, float& m, float& v, float& w) {
  m = s.beta1 * m + (1 - s.beta1) * g;
  v = s.beta2 * v + (1 - s.beta2) * g * g;
  w -= s.step * m / (std::sqrt(v) * s.inv_sqrt_c2 + s.eps);
}

// Exponential mean of squares on one element.
HPDL_HD inline float mean_square(float decay, float g, float ms) {
  return decay * ms + (1 - decay) * g * g;
}

// DC-ASGD on one element (see DcAsgdStep); ms is read only when adaptive.
HPDL_HD inline float dcasgd(const DcAsgdStep& s, float g, float bak, float ms, float w) {
  const float lam = s.adaptive ? s.lambda0 / std::sqrt(ms + s.eps) : s.lambda;
  return w - s.lr * (g + lam * g * g * (w - bak));
}

// Softmax of one row of K logits into p, max-shifted with the log-sum-exp in double;
// returns -log p[label] (label < 0: not needed, returns 0).
HPDL_HD inline double softmax_row(const float* z, int64_t K, int32_t label, float* p) {
  float zmax = z[0];
  for (int64_t k = 1; k < K; ++k) zmax = std::max(zmax, z[k]);
  double sum = 0;
  for (int64_t k = 0; k < K; ++k) sum += std::exp(double(z[k]) - zmax);
  const double log_sum = std::log(sum);
  for (int64_t k = 0; k < K; ++k)
    p[k] = static_cast<float>(std::exp(double(z[k]) - zmax - log_sum));
  return label < 0 ? 0.0 : log_sum - (double(z[label]) - zmax);
}

// Inverted dropout's mask value of element i of a sample: 1 / keep with probability keep,
// else 0, drawn from the counter (sample << 24) ^ i (the same on any rank or device).
HPDL_HD inline float dropout_mask(uint64_t key, uint64_t stream, int64_t sample, int64_t i,
                                  float keep) {
  const uint64_t counter = (static_cast<uint64_t>(sample) << 24) ^ static_cast<uint64_t>(i);
  // (keep or not) x 1 / keep: no branch, so the loops over a sample vectorise on AVX2.
  return static_cast<float>(random_uniform(key, stream, counter) < keep) * (1.0f / keep);
}

// The cross-entropy gradient of one logit: (p - onehot) * scale.
HPDL_HD inline float xent_grad(float p, bool is_label, float scale) {
  return (p - (is_label ? 1.0f : 0.0f)) * scale;
}

// Unit j's new cell state from its gates i, f, g, o and c_{t-1}: c, tanh(c), h, and h again
// into the layer's output row y.
HPDL_HD inline void lstm_unit_state(float i, float f, float g, float o, float cp, float* c,
                                    float* tc, float* h, float* y) {
  const float cj = f * cp + i * g, tcj = fast_tanh(cj);
  *c = cj, *tc = tcj;
  *h = o * tcj;
  *y = o * tcj;
}

// Unit j of one sample's LSTM gates at one step. p, r: input and recurrent pre-activations
// [G]; cp: c_{t-1} [H]; outputs: gates [G], c, tanh(c), h [H], and h again into the layer's
// output row y. (A CUDA thread computes one (sample, unit); the CPU loops over the sample's
// units in lstm_cell_forward, with the same arithmetic.)
HPDL_HD inline void lstm_unit_forward(const float* __restrict p, const float* __restrict r,
                                      const float* __restrict cp, float* __restrict gt,
                                      float* __restrict c, float* __restrict tc,
                                      float* __restrict h, float* __restrict y, int64_t H,
                                      int64_t j) {
  const float i = fast_sigmoid(p[j] + r[j]), f = fast_sigmoid(p[H + j] + r[H + j]);
  const float g = fast_tanh(p[2 * H + j] + r[2 * H + j]);
  const float o = fast_sigmoid(p[3 * H + j] + r[3 * H + j]);
  gt[j] = i, gt[H + j] = f, gt[2 * H + j] = g, gt[3 * H + j] = o;
  lstm_unit_state(i, f, g, o, cp[j], &c[j], &tc[j], &h[j], &y[j]);
}

// One sample's LSTM gates at one step, vectorised: first the G gates (each exp on its own,
// so the out-of-order core overlaps many), then the H units' states from them (a unit's
// gates and state as one chain of five exps and divisions was 12 % slower on an AVX2 EPYC).
HPDL_HD inline void lstm_cell_forward(const float* __restrict p, const float* __restrict r,
                                      const float* __restrict cp, float* __restrict gt,
                                      float* __restrict c, float* __restrict tc,
                                      float* __restrict h, float* __restrict y, int64_t H) {
#pragma omp simd
  for (int64_t j = 0; j < 2 * H; ++j) gt[j] = fast_sigmoid(p[j] + r[j]);  // i, f
#pragma omp simd
  for (int64_t j = 2 * H; j < 3 * H; ++j) gt[j] = fast_tanh(p[j] + r[j]);  // g
#pragma omp simd
  for (int64_t j = 3 * H; j < 4 * H; ++j) gt[j] = fast_sigmoid(p[j] + r[j]);  // o
#pragma omp simd
  for (int64_t j = 0; j < H; ++j)
    lstm_unit_state(gt[j], gt[H + j], gt[2 * H + j], gt[3 * H + j], cp[j], &c[j], &tc[j], &h[j],
                    &y[j]);
}

// Unit j of the same sample's gate gradients (backward): from dy and the carried dh, dc;
// updates the carried dc for step t-1 and writes the pre-activation gradients d [G].
HPDL_HD inline void lstm_unit_backward(const float* __restrict gt, const float* __restrict tc,
                                       const float* __restrict cp, const float* __restrict dy,
                                       const float* __restrict dh, float* __restrict dc,
                                       float* __restrict d, int64_t H, int64_t j) {
  const float i = gt[j], f = gt[H + j], g = gt[2 * H + j], o = gt[3 * H + j];
  const float dhj = dy[j] + dh[j];
  const float dcj = dhj * o * (1 - tc[j] * tc[j]) + dc[j];
  dc[j] = dcj * f;
  d[j] = dcj * g * i * (1 - i);
  d[H + j] = dcj * cp[j] * f * (1 - f);
  d[2 * H + j] = dcj * i * (1 - g * g);
  d[3 * H + j] = dhj * tc[j] * o * (1 - o);
}

HPDL_HD inline void lstm_cell_backward(const float* __restrict gt, const float* __restrict tc,
                                       const float* __restrict cp, const float* __restrict dy,
                                       const float* __restrict dh, float* __restrict dc,
                                       float* __restrict d, int64_t H) {
#pragma omp simd
  for (int64_t j = 0; j < H; ++j) lstm_unit_backward(gt, tc, cp, dy, dh, dc, d, H, j);
}

// sums[j] += x[i, j] over `rows` rows of `width` (a bias gradient), row by row: contiguous
// and vectorised across j (a column walk with stride `width` was 4.7 ms of a 6.6 ms step
// for an LSTM's 12800 x 64).
HPDL_HD inline void add_row_sums(const float* __restrict x, int64_t rows, int64_t width,
                                 float* __restrict sums) {
  for (int64_t i = 0; i < rows; ++i) {
    const float* __restrict row = x + i * width;
#pragma omp simd
    for (int64_t j = 0; j < width; ++j) sums[j] += row[j];
  }
}

// sums[j] = the sum of x[i, j] over `rows` rows (rows >= 1), in the order add_row_sums adds
// them: the values add_row_sums gives into zeros (a -0 stays -0 here).
HPDL_HD inline void write_row_sums(const float* __restrict x, int64_t rows, int64_t width,
                                   float* __restrict sums) {
#pragma omp simd
  for (int64_t j = 0; j < width; ++j) sums[j] = x[j];
  add_row_sums(x + width, rows - 1, width, sums);
}

// Mean and 1 / std of M values from their sum and sum of squares (both in double).
HPDL_HD inline float norm_inv_std(double sum, double sq, int64_t M, float eps, float* mean) {
  const double m = sum / M, v = sq / M - m * m;
  *mean = static_cast<float>(m);
  return static_cast<float>(1.0 / std::sqrt((v > 0 ? v : 0.0) + eps));
}

// The sums of a[i] and of a[i] * b[i] over n values, in double: eight interleaved partial
// sums combined in a fixed order, so the loop vectorises (one running sum is a chain of
// dependent adds: 545 -> 110 us for HAR's 50 samples of 8192) and gives the same result
// on any SIMD width.
HPDL_HD inline void sum_and_dot(const float* __restrict a, const float* __restrict b, int64_t n,
                                double* sum, double* dot) {
  constexpr int kLanes = 8;
  double s[kLanes] = {}, d[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
#pragma omp simd
    for (int k = 0; k < kLanes; ++k) s[k] += a[i + k], d[k] += double(a[i + k]) * b[i + k];
  }
  for (int k = 0; i < n; ++i, ++k) s[k] += a[i], d[k] += double(a[i]) * b[i];
  *sum = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
  *dot = ((d[0] + d[1]) + (d[2] + d[3])) + ((d[4] + d[5]) + (d[6] + d[7]));
}

// One sample of ScalarNorm forward: mean and variance in double; writes xhat, y and
// returns 1 / std.
HPDL_HD inline float scalar_norm_forward(const float* __restrict x, int64_t M, float eps,
                                         float gamma, float beta, float* __restrict xhat,
                                         float* __restrict y) {
  double sum, sq;
  sum_and_dot(x, x, M, &sum, &sq);
  float mean;
  const float inv = norm_inv_std(sum, sq, M, eps, &mean);
  for (int64_t i = 0; i < M; ++i) {
    xhat[i] = (x[i] - mean) * inv;
    y[i] = gamma * xhat[i] + beta;
  }
  return inv;
}

// One sample of ScalarNorm backward: adds the sums of dy and dy * xhat to *s, *sx and
// writes dx (unless null).
HPDL_HD inline void scalar_norm_backward(const float* __restrict dy, const float* __restrict xhat,
                                         int64_t M, float gamma, float inv_std,
                                         float* __restrict dx, double* s_out, double* sx_out) {
  double s, sx;
  sum_and_dot(dy, xhat, M, &s, &sx);
  *s_out = s, *sx_out = sx;
  if (!dx) return;
  // dx = gamma/std * (dy - mean(dy) - xhat * mean(dy * xhat))
  const float k = gamma * inv_std, mean_d = static_cast<float>(s / M),
              mean_dx = static_cast<float>(sx / M);
  for (int64_t i = 0; i < M; ++i) dx[i] = k * (dy[i] - mean_d - xhat[i] * mean_dx);
}

// Batch normalisation of one value with its channel's statistics.
HPDL_HD inline float batch_norm_apply(float x, float mean, float inv_std, float gamma, float beta) {
  return gamma * ((x - mean) * inv_std) + beta;
}
// A channel's running statistics moved towards its batch's (M values): the mean, and the
// variance made unbiased (x M / (M - 1)); running = (1 - momentum) running + momentum batch.
HPDL_HD inline void update_running(float mean, float var, int64_t M, float momentum,
                                   float* running_mean, float* running_var) {
  const float unbiased = M > 1 ? var * (float(M) / float(M - 1)) : var;
  *running_mean = (1 - momentum) * *running_mean + momentum * mean;
  *running_var = (1 - momentum) * *running_var + momentum * unbiased;
}
// One value of the batch-norm input gradient (the ScalarNorm form per channel).
HPDL_HD inline float batch_norm_dx(float dy, float xhat, float k, float mean_d, float mean_dx) {
  return k * (dy - mean_d - xhat * mean_dx);
}

}  // namespace hpdl::math
