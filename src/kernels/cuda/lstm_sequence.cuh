// The LSTM's whole recurrence in one kernel a pass (LstmCellKernel::forward_sequence and
// backward_sequence): one thread block per sample walks its T steps with h and c (in
// backward, dh and dc) in shared memory, so a pass is one launch instead of a recurrent
// product, a bias and a gate kernel per step. The per-unit math is element_math.hpp's, as
// in the step kernels; the recurrent sums run over k in order within one thread.
// Included by cuda_kernels.cu only (internal linkage).
#pragma once
#include <cstdint>

#include "../element_math.hpp"

namespace hpdl::cuda {
namespace {

// The largest hidden size the sequence kernels take: forward has a thread per gate (4H).
constexpr int64_t kMaxSequenceHidden = 256;

// Block n, 4H threads; shared: h and c of the previous step [H] each, its products [4H].
// Thread g forms gate g's recurrent sum h_{s-1} . wh[g]; then thread j < H updates unit j.
__global__ void lstm_sequence_forward(int64_t N, int64_t T, int64_t H, bool reverse,
                                      const float* pre, const float* wh, float* gates, float* c,
                                      float* tanh_c, float* h, float* y) {
  extern __shared__ float shared[];
  const int64_t G = 4 * H, n = blockIdx.x, g = threadIdx.x;
  float *hs = shared, *cs = shared + H, *rs = shared + 2 * H;
  if (g < H) hs[g] = 0, cs[g] = 0;
  __syncthreads();
  const float* w = wh + g * H;
  for (int64_t s = 0; s < T; ++s) {
    const int64_t t = reverse ? T - 1 - s : s, at = s * N + n;
    float sum = 0;
    for (int64_t k = 0; k < H; ++k) sum += hs[k] * w[k];
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

// Block n, H threads; shared: the carried dh and dc [H] each, c_{-1} = 0 [H], the step's gate
// gradients [4H]. Thread j takes unit j's gate gradients, then dh_{s-1}[j] = d_s . wh[:, j].
__global__ void lstm_sequence_backward(int64_t N, int64_t T, int64_t H, bool reverse,
                                       const float* wh, const float* gates, const float* c,
                                       const float* tanh_c, const float* dy, float* d_step,
                                       float* d_seq) {
  extern __shared__ float shared[];
  const int64_t G = 4 * H, n = blockIdx.x, j = threadIdx.x;
  float *dhs = shared, *dcs = shared + H, *zs = shared + 2 * H, *ds = shared + 3 * H;
  dhs[j] = 0, dcs[j] = 0, zs[j] = 0;
  for (int64_t s = T - 1; s >= 0; --s) {
    const int64_t t = reverse ? T - 1 - s : s, at = s * N + n;
    const float* cp = s ? c + ((s - 1) * N + n) * H : zs;
    math::lstm_unit_backward(gates + at * G, tanh_c + at * H, cp, dy + (n * T + t) * H, dhs, dcs,
                             ds, H, j);
    for (int64_t q = 0; q < 4; ++q) {
      const float v = ds[q * H + j];
      d_step[at * G + q * H + j] = v;
      d_seq[(n * T + t) * G + q * H + j] = v;
    }
    __syncthreads();  // every gate gradient of the step written
    if (s > 0) {
      float sum = 0;
      for (int64_t e = 0; e < G; ++e) sum += ds[e] * wh[e * H + j];
      dhs[j] = sum;
    }
    __syncthreads();  // every read of ds done before the next step writes it
  }
}

}  // namespace
}  // namespace hpdl::cuda
