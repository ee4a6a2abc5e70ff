// The CUDA backend's device kernels (__global__): grid-stride loops over the per-element
// math of element_math.hpp and device_math.hpp, launched by the kernel objects in
// cuda_kernels.cu (their only includer: internal linkage).
#pragma once
#include <cstdint>

#include "../device_math.hpp"
#include "../element_math.hpp"
#include "cuda_launch.cuh"

namespace hpdl::cuda {
namespace {

// y[n, o] = b[o] (the GEMM then adds x w^T with beta = 1).
__global__ void broadcast_rows(int64_t n_rows, int64_t O, const float* b, float* y) {
  HPDL_GRID_STRIDE(i, n_rows * O) y[i] = b[i % O];
}

// out[o] += sum over n < N, p < P of v[(n O + o) P + p]: one block per o.
__global__ void channel_sum(const float* v, int64_t N, int64_t O, int64_t P, float* out) {
  const int64_t o = blockIdx.x;
  double s = 0, unused = 0;
  for (int64_t e = threadIdx.x; e < N * P; e += blockDim.x) s += v[(e / P * O + o) * P + e % P];
  block_sum2(s, unused);
  if (threadIdx.x == 0) out[o] += static_cast<float>(s);
}

// The index kernels below run on I = int32_t where the tensors fit (dmath::fits_int32),
// else int64_t: their time is mostly integer division.
template <typename I>
__global__ void im2col(dmath::ConvShapeOf<I> s, const float* x, float* col) {
  const I Q = s.N * s.OH * s.OW;
  HPDL_GRID_STRIDE_AS(I, i, s.C * s.K * s.K * Q) col[i] = dmath::im2col_value(s, x, i / Q, i % Q);
}
template <typename I>
__global__ void col2im(dmath::ConvShapeOf<I> s, const float* dcol, float* dx) {
  HPDL_GRID_STRIDE_AS(I, i, s.N * s.C * s.H * s.W) dx[i] = dmath::col2im_value(s, dcol, i);
}
// y [N, O, PQ] from the GEMM's t [O, N PQ], plus the bias.
template <typename I>
__global__ void from_gemm_layout(I N, I O, I PQ, const float* t, const float* b, float* y) {
  HPDL_GRID_STRIDE_AS(I, i, N * O * PQ)
  y[i] = t[dmath::gemm_index(i, N, O, PQ)] + (b ? b[i / PQ % O] : 0.0f);
}
// t [O, N PQ] from dy [N, O, PQ].
template <typename I>
__global__ void to_gemm_layout(I N, I O, I PQ, const float* dy, float* t) {
  HPDL_GRID_STRIDE_AS(I, i, N * O * PQ) t[dmath::gemm_index(i, N, O, PQ)] = dy[i];
}
// partial[o, p] = the sum of part p of row o of t [O, Q] (parts: blocks in x, rows in y;
// each part a contiguous slice), in double.
__global__ void row_sum_parts(const float* t, int64_t Q, double* partial) {
  const int64_t o = blockIdx.y, p = blockIdx.x, parts = gridDim.x;
  const int64_t lo = Q * p / parts, hi = Q * (p + 1) / parts;
  double s = 0, unused = 0;
  for (int64_t q = lo + threadIdx.x; q < hi; q += blockDim.x) s += t[o * Q + q];
  block_sum2(s, unused);
  if (threadIdx.x == 0) partial[o * parts + p] = s;
}
// out[o] += row o's parts, added in order.
__global__ void add_row_parts(int64_t O, int64_t parts, const double* partial, float* out) {
  HPDL_GRID_STRIDE(o, O) {
    double s = 0;
    for (int64_t p = 0; p < parts; ++p) s += partial[o * parts + p];
    out[o] += static_cast<float>(s);
  }
}

template <typename I>
__global__ void pool_forward(I n, I H, I W, I OH, I OW, I K, I S, const float* x, float* y,
                             int64_t* arg) {
  HPDL_GRID_STRIDE_AS(I, o, n) y[o] = dmath::pool_max(x, H, W, OH, OW, K, S, o, &arg[o]);
}
template <typename I>
__global__ void pool_backward(I n, I H, I W, I OH, I OW, I K, I S, const float* dy,
                              const int64_t* arg, float* dx) {
  HPDL_GRID_STRIDE_AS(I, i, n) dx[i] = dmath::pool_dx(dy, arg, H, W, OH, OW, K, S, i);
}

__global__ void activation_forward(Activation a, int64_t n, const float* x, float* y) {
  HPDL_GRID_STRIDE(i, n) y[i] = dmath::activation_forward(a, x[i]);
}
__global__ void activation_backward(Activation a, int64_t n, const float* x, const float* y,
                                    const float* dy, float* dx) {
  HPDL_GRID_STRIDE(i, n) dx[i] = dmath::activation_backward(a, x[i], y[i], dy[i]);
}

// One thread per row: rows are short (the classes).
__global__ void softmax_rows(int64_t N, int64_t K, const float* z, const int32_t* labels,
                             int64_t n_valid, float* p, double* loss) {
  HPDL_GRID_STRIDE(n, N)
  loss[n] = math::softmax_row(z + n * K, K, n < n_valid ? labels[n] : -1, p + n * K);
}
__global__ void xent_backward(int64_t N, int64_t K, const float* p, const int32_t* labels,
                              float scale, float* dz) {
  HPDL_GRID_STRIDE(i, N * K) dz[i] = math::xent_grad(p[i], i % K == labels[i / K], scale);
}

__global__ void dropout_forward(int64_t n, int64_t S, float keep, uint64_t key, uint64_t stream,
                                const int64_t* ids, const float* x, float* mask, float* y) {
  HPDL_GRID_STRIDE(i, n) {
    const float m = math::dropout_mask(key, stream, ids[i / S], i % S, keep);
    mask[i] = m;
    y[i] = x[i] * m;
  }
}
__global__ void multiply(int64_t n, const float* a, const float* b, float* out) {
  HPDL_GRID_STRIDE(i, n) out[i] = a[i] * b[i];
}

// One thread per (sample, unit).
__global__ void lstm_forward(int64_t N, int64_t H, const float* pre, int64_t ld_pre,
                             const float* rec, const float* c_prev, float* gates, float* c,
                             float* tanh_c, float* h, float* y, int64_t ld_y) {
  HPDL_GRID_STRIDE(i, N * H) {
    const int64_t n = i / H, G = 4 * H;
    math::lstm_unit_forward(pre + n * ld_pre, rec + n * G, c_prev + n * H, gates + n * G, c + n * H,
                            tanh_c + n * H, h + n * H, y + n * ld_y, H, i % H);
  }
}
__global__ void lstm_backward(int64_t N, int64_t H, const float* gates, const float* tanh_c,
                              const float* c_prev, const float* dy, int64_t ld_dy, const float* dh,
                              float* dc, float* d_step, float* d_seq, int64_t ld_seq) {
  HPDL_GRID_STRIDE(i, N * H) {
    const int64_t n = i / H, j = i % H, G = 4 * H;
    float* d = d_step + n * G;
    math::lstm_unit_backward(gates + n * G, tanh_c + n * H, c_prev + n * H, dy + n * ld_dy,
                             dh + n * H, dc + n * H, d, H, j);
    for (int64_t g = 0; g < 4; ++g) d_seq[n * ld_seq + g * H + j] = d[g * H + j];
  }
}

// One block per sample of [N, M].
__global__ void scalar_norm_forward(int64_t M, float eps, const float* x, const float* gamma,
                                    const float* beta, float* xhat, float* inv_std, float* y) {
  const int64_t n = blockIdx.x;
  const float* xs = x + n * M;
  double sum = 0, sq = 0;
  for (int64_t i = threadIdx.x; i < M; i += blockDim.x) sum += xs[i], sq += double(xs[i]) * xs[i];
  block_sum2(sum, sq);
  float mean;
  const float inv = math::norm_inv_std(sum, sq, M, eps, &mean);
  if (threadIdx.x == 0) inv_std[n] = inv;
  const float g = *gamma, b = *beta;
  for (int64_t i = threadIdx.x; i < M; i += blockDim.x) {
    const float xh = (xs[i] - mean) * inv;
    xhat[n * M + i] = xh;
    y[n * M + i] = g * xh + b;
  }
}
// Per sample: dx, and the sums of dy and dy xhat into partial [N, 2].
__global__ void scalar_norm_backward(int64_t M, const float* dy, const float* xhat,
                                     const float* inv_std, const float* gamma, float* dx,
                                     double* partial) {
  const int64_t n = blockIdx.x;
  double s = 0, sx = 0;
  for (int64_t i = threadIdx.x; i < M; i += blockDim.x)
    s += dy[n * M + i], sx += double(dy[n * M + i]) * xhat[n * M + i];
  block_sum2(s, sx);
  if (threadIdx.x == 0) partial[2 * n] = s, partial[2 * n + 1] = sx;
  if (!dx) return;
  const float k = *gamma * inv_std[n], mean_d = static_cast<float>(s / M),
              mean_dx = static_cast<float>(sx / M);
  for (int64_t i = threadIdx.x; i < M; i += blockDim.x)
    dx[n * M + i] = math::batch_norm_dx(dy[n * M + i], xhat[n * M + i], k, mean_d, mean_dx);
}
// *dbeta += sum_n partial[n, 0]; *dgamma += sum_n partial[n, 1] (one block).
__global__ void add_partials(int64_t N, const double* partial, float* dgamma, float* dbeta) {
  double s = 0, sx = 0;
  for (int64_t n = threadIdx.x; n < N; n += blockDim.x)
    s += partial[2 * n], sx += partial[2 * n + 1];
  block_sum2(s, sx);
  if (threadIdx.x == 0) *dbeta += static_cast<float>(s), *dgamma += static_cast<float>(sx);
}

// One block per channel c of [N, C, S].
__global__ void batch_norm_stats(int64_t N, int64_t C, int64_t S, float momentum, const float* x,
                                 float* mean, float* var, float* running_mean, float* running_var) {
  const int64_t c = blockIdx.x, M = N * S;
  double sum = 0, sq = 0;
  for (int64_t e = threadIdx.x; e < M; e += blockDim.x) {
    const float v = x[(e / S * C + c) * S + e % S];
    sum += v, sq += double(v) * v;
  }
  block_sum2(sum, sq);
  if (threadIdx.x != 0) return;
  const double m = sum / M, v = sq / M - m * m;
  mean[c] = static_cast<float>(m), var[c] = static_cast<float>(v > 0 ? v : 0.0);
  math::update_running(mean[c], var[c], M, momentum, &running_mean[c], &running_var[c]);
}
__global__ void batch_norm_apply(int64_t N, int64_t C, int64_t S, float eps, const float* x,
                                 const float* gamma, const float* beta, const float* mean,
                                 const float* var, float* y) {
  HPDL_GRID_STRIDE(i, N * C * S) {
    const int64_t c = i / S % C;
    y[i] = math::batch_norm_apply(x[i], mean[c], 1.0f / sqrtf(var[c] + eps), gamma[c], beta[c]);
  }
}
__global__ void batch_norm_backward(int64_t N, int64_t C, int64_t S, float eps, const float* x,
                                    const float* dy, const float* gamma, const float* mean,
                                    const float* var, float* dx, float* dgamma, float* dbeta) {
  const int64_t c = blockIdx.x, M = N * S;
  const float inv = 1.0f / sqrtf(var[c] + eps);
  double s = 0, sx = 0;
  for (int64_t e = threadIdx.x; e < M; e += blockDim.x) {
    const int64_t i = (e / S * C + c) * S + e % S;
    s += dy[i], sx += double(dy[i]) * ((x[i] - mean[c]) * inv);
  }
  block_sum2(s, sx);
  if (threadIdx.x == 0) dgamma[c] += static_cast<float>(sx), dbeta[c] += static_cast<float>(s);
  if (!dx) return;
  const float k = gamma[c] * inv, mean_d = static_cast<float>(s / M),
              mean_dx = static_cast<float>(sx / M);
  for (int64_t e = threadIdx.x; e < M; e += blockDim.x) {
    const int64_t i = (e / S * C + c) * S + e % S;
    dx[i] = math::batch_norm_dx(dy[i], (x[i] - mean[c]) * inv, k, mean_d, mean_dx);
  }
}

}  // namespace
}  // namespace hpdl::cuda
