// The LSTM's whole recurrence in one kernel a pass (LstmCellKernel::forward_sequence and
// backward_sequence): one thread block per sample walks its T steps with h and c (in
// backward, dh and dc) in shared memory, so a pass is one launch instead of a recurrent
// product, a bias and a gate kernel per step. The per-unit math is element_math.hpp's, as
// in the step kernels; the recurrent sums run over k in order within one thread.
// Included by cuda_kernels.cu only (internal linkage).
#pragma once
#include <cstdint>

#include "../element_math.hpp"
#include "cuda_launch.cuh"

namespace hpdl::cuda {
namespace {

// The largest hidden size the sequence kernels take: a block has a thread per gate (4H).
constexpr int64_t kMaxSequenceHidden = 256;

// wh_t[k * 4H + g] = wh[g * H + k]: the recurrent weights [4H, H] transposed, so that the
// threads of a warp in lstm_sequence_forward (consecutive gates g) read consecutive floats.
__global__ void transpose_recurrent_weights(int64_t H, const float* wh, float* wh_t) {
  const int64_t G = 4 * H;
  HPDL_GRID_STRIDE(i, G * H) wh_t[(i % H) * G + i / H] = wh[i];
}

// Block n, 4H threads; shared: h and c of the previous step [H] each, its products [4H].
// Thread g forms gate g's recurrent sum h_{s-1} . wh[g] from the transposed weights (wh_t
// above: a warp's reads coalesce); then thread j < H updates unit j.
__global__ void lstm_sequence_forward(int64_t N, int64_t T, int64_t H, bool reverse,
                                      const float* pre, const float* wh_t, float* gates, float* c,
                                      float* tanh_c, float* h, float* y) {
  extern __shared__ float shared[];
  const int64_t G = 4 * H, n = blockIdx.x, g = threadIdx.x;
  float *hs = shared, *cs = shared + H, *rs = shared + 2 * H;
  if (g < H) hs[g] = 0, cs[g] = 0;
  __syncthreads();
  const float* w = wh_t + g;
  for (int64_t s = 0; s < T; ++s) {
    const int64_t t = reverse ? T - 1 - s : s, at = s * N + n;
    float sum = 0;
    for (int64_t k = 0; k < H; ++k) sum += hs[k] * w[k * G];
    rs[g] = sum;
    __syncthreads();  // every product formed; every read of hs done
    if (g < H) {
      math::lstm_unit_forward(pre + (n * T + t) * G, rs, cs, gates + at * G, c + at * H,
                              tanh_c + at * H, h + at * H, y + (n * T + t) * H, H, g);
      cs[g] = c[at * H + g];
      hs[g] = h[at * H + g];
    }
    __syncthreads();  // h_s complete before the next products read it
  }
}

// Block n, 4H threads; shared: the carried dh and dc [H] each, c_{-1} = 0 [H], the step's
// gate gradients [4H], partial sums [4H]. Thread j < H takes unit j's gate gradients; then
// thread (q, j) sums d_s[e] wh[e, j] over gate q's rows e, and thread j adds the four
// partial sums in gate order: dh_{s-1}[j] = d_s . wh[:, j]. (With H threads, one a unit,
// a block summed 4H products a thread and a step.)
__global__ void lstm_sequence_backward(int64_t N, int64_t T, int64_t H, bool reverse,
                                       const float* wh, const float* gates, const float* c,
                                       const float* tanh_c, const float* dy, float* d_step,
                                       float* d_seq) {
  extern __shared__ float shared[];
  const int64_t G = 4 * H, n = blockIdx.x, e = threadIdx.x, q = e / H, j = e % H;
  float *dhs = shared, *dcs = shared + H, *zs = shared + 2 * H, *ds = shared + 3 * H,
        *part = shared + 3 * H + G;
  if (e < H) dhs[e] = 0, dcs[e] = 0, zs[e] = 0;
  for (int64_t s = T - 1; s >= 0; --s) {
    const int64_t t = reverse ? T - 1 - s : s, at = s * N + n;
    if (e < H) {
      const float* cp = s ? c + ((s - 1) * N + n) * H : zs;
      math::lstm_unit_backward(gates + at * G, tanh_c + at * H, cp, dy + (n * T + t) * H, dhs, dcs,
                               ds, H, e);
    }
    __syncthreads();  // every gate gradient of the step in ds
    d_step[at * G + e] = ds[e];
    d_seq[(n * T + t) * G + e] = ds[e];
    if (s == 0) break;
    float sum = 0;
    for (int64_t r = q * H; r < (q + 1) * H; ++r) sum += ds[r] * wh[r * H + j];
    part[e] = sum;
    __syncthreads();  // every partial sum formed; every read of ds done
    if (e < H) dhs[e] = ((part[e] + part[H + e]) + part[2 * H + e]) + part[3 * H + e];
    __syncthreads();  // dh_{s-1} complete before the next step's units read it
  }
}

}  // namespace
}  // namespace hpdl::cuda
