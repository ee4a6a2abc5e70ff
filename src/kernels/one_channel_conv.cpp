// A convolution's weight and bias gradients over one input channel (one_channel_conv.hpp).
// Per sample and output row, the row's output gradients are copied into a buffer whose
// channels are padded to whole vectors (zeros), and for each window row kh the K sums
// dw[kh, kw, :] stay in registers along the row: sum over ow of x[oh S + kh, ow S + kw] *
// dy[oh, ow, :]. Each sample's sums (each row's for the bias) start at zero and are added
// into double totals (a sum over a whole batch's positions in float would lose digits); the
// samples are split over the threads, whose totals are added in thread order (the same bits
// for a thread count).
#include "one_channel_conv.hpp"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <vector>

namespace hpdl {
namespace {

#ifdef __AVX512F__
constexpr int64_t kLanes = 16;
constexpr int64_t kSumRegisters = 20;  // of 32 vector registers
#else
constexpr int64_t kLanes = 8;
constexpr int64_t kSumRegisters = 10;  // of 16
#endif
typedef float Vec __attribute__((vector_size(kLanes * sizeof(float))));
constexpr int64_t kMaxVectors = 64;  // of output channels (fits: up to 512 or 1024 channels)

// One window row over one output row, for R vectors of channels from v0 (R K sums).
template <int64_t R, int64_t K>
void window_row(const float* __restrict xr, const Vec* __restrict g, int64_t OW, int64_t S,
                int64_t OV, int64_t v0, Vec* __restrict sums) {
  Vec a[K][R];
  for (int64_t kw = 0; kw < K; ++kw)
    for (int64_t r = 0; r < R; ++r) a[kw][r] = sums[kw * OV + v0 + r];
  for (int64_t ow = 0; ow < OW; ++ow) {
    Vec gv[R];
    for (int64_t r = 0; r < R; ++r) gv[r] = g[ow * OV + v0 + r];
    const float* xw = xr + ow * S;
    for (int64_t kw = 0; kw < K; ++kw)
      for (int64_t r = 0; r < R; ++r) a[kw][r] += xw[kw] * gv[r];
  }
  for (int64_t kw = 0; kw < K; ++kw)
    for (int64_t r = 0; r < R; ++r) sums[kw * OV + v0 + r] = a[kw][r];
}

// The window sizes unrolled at compile time; others through K = 1 calls per kw.
template <int64_t R>
void window_row_any(int64_t K, const float* xr, const Vec* g, int64_t OW, int64_t S, int64_t OV,
                    int64_t v0, Vec* sums) {
  switch (K) {
    case 3:
      return window_row<R, 3>(xr, g, OW, S, OV, v0, sums);
    case 5:
      return window_row<R, 5>(xr, g, OW, S, OV, v0, sums);
    default:
      for (int64_t kw = 0; kw < K; ++kw)
        window_row<R, 1>(xr + kw, g, OW, S, OV, v0, sums + kw * OV);
  }
}

}  // namespace

bool OneChannelWeightGradient::fits(const ConvDims& d) {
  return d.in_c == 1 && d.precision == Precision::kF32 && d.out_h() > 0 && d.out_w() > 0 &&
         d.out_c <= kMaxVectors * kLanes;
}

OneChannelWeightGradient::OneChannelWeightGradient(const ConvDims& d, int threads)
    : d_(d), threads_(threads) {}

void OneChannelWeightGradient::accumulate(const float* x, const float* dy, float* dw,
                                          float* db) const {
  const int64_t N = d_.batch, H = d_.in_h, W = d_.in_w, O = d_.out_c, K = d_.kernel, S = d_.stride,
                P = d_.pad, OH = d_.out_h(), OW = d_.out_w();
  const int64_t OV = (O + kLanes - 1) / kLanes, PH = H + 2 * P, PW = W + 2 * P;
  // Vectors of channels summed together: as many as keep K R sums in registers.
  const int64_t R = std::max<int64_t>(1, std::min<int64_t>(OV, kSumRegisters / K));
  int threads = threads_ > 0 ? threads_ : omp_get_max_threads();
  if (omp_in_parallel()) threads = 1;
  threads = static_cast<int>(std::min<int64_t>(threads, N));
  // Per thread: K K OV window sums and OV bias sums in double, added over its samples.
  std::vector<double> totals(size_t(threads) * (K * K + 1) * OV * kLanes, 0.0);
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
    const int64_t r0 = N * t / threads * OH, r1 = N * (t + 1) / threads * OH;  // rows n OH + oh
    std::vector<float> xp(size_t(PH * PW), 0.0f);  // the sample, zero-padded
    // Two rows of gradients with the channels padded (the padding stays 0): the next row is
    // copied in before this one is summed, so no load waits on a store just made.
    std::vector<Vec> rows(size_t(2 * OW * OV), Vec{}), sums(size_t(K * K * OV));
    double* total = totals.data() + size_t(t) * (K * K + 1) * OV * kLanes;
    const auto stage = [&](int64_t r, Vec* into) {
      const float* __restrict from = dy + r * OW * O;
      float* __restrict to = reinterpret_cast<float*>(into);
      for (int64_t ow = 0; ow < OW; ++ow)
        for (int64_t o = 0; o < O; ++o) to[ow * OV * kLanes + o] = from[ow * O + o];
    };
    const auto add_sums = [&](const Vec* from, int64_t count, double* to) {
      const float* f = reinterpret_cast<const float*>(from);
      for (int64_t i = 0; i < count * kLanes; ++i) to[i] += f[i];
    };
    if (r0 < r1) stage(r0, rows.data());
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t n = r / OH, oh = r % OH;
      const Vec* g = rows.data() + (r - r0) % 2 * OW * OV;
      if (r + 1 < r1) stage(r + 1, rows.data() + (r + 1 - r0) % 2 * OW * OV);
      if (oh == 0) {
        for (int64_t h = 0; h < H; ++h)
          std::memcpy(&xp[size_t((h + P) * PW + P)], x + (n * H + h) * W, W * sizeof(float));
        std::fill(sums.begin(), sums.end(), Vec{});
      }
      Vec bias[kMaxVectors];
      std::fill(bias, bias + OV, Vec{});
      for (int64_t ow = 0; ow < OW; ++ow)
        for (int64_t v = 0; v < OV; ++v) bias[v] += g[ow * OV + v];
      add_sums(bias, OV, total + K * K * OV * kLanes);
      for (int64_t kh = 0; kh < K; ++kh) {
        const float* xr = &xp[size_t((oh * S + kh) * PW)];
        Vec* s = sums.data() + kh * K * OV;
        int64_t v0 = 0;
        if (R >= 4)
          for (; v0 + 4 <= OV; v0 += 4) window_row_any<4>(K, xr, g, OW, S, OV, v0, s);
        if (R >= 2)
          for (; v0 + 2 <= OV; v0 += 2) window_row_any<2>(K, xr, g, OW, S, OV, v0, s);
        for (; v0 < OV; ++v0) window_row_any<1>(K, xr, g, OW, S, OV, v0, s);
      }
      if (oh == OH - 1) add_sums(sums.data(), K * K * OV, total);  // the sample's sums
    }
  }
  // Sums [kh][kw][channel] and the bias's [channel] into dw [O][kh][kw] and db.
  for (int t = 1; t < threads; ++t)
    for (int64_t i = 0; i < (K * K + 1) * OV * kLanes; ++i)
      totals[i] += totals[size_t(t) * (K * K + 1) * OV * kLanes + i];
  for (int64_t o = 0; o < O; ++o) {
    for (int64_t k = 0; k < K * K; ++k) dw[o * K * K + k] += float(totals[k * OV * kLanes + o]);
    db[o] += float(totals[K * K * OV * kLanes + o]);
  }
}

}  // namespace hpdl
