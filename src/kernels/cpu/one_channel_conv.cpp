// A convolution's weight and bias gradients over one input channel (one_channel_conv.hpp).
// Per sample and output row, the row's output gradients are copied into a buffer whose channels are
// padded to whole vectors (zeros), and for each window row kh the K sums dw[kh, kw, :] stay in
// registers along the row: sum over ow of x[oh S + kh, ow S + kw] * dy[oh, ow, :]. Each sample's
// sums (each row's for the bias) start at zero and are added into double totals (a sum over a whole
// batch's positions in float would lose digits); the samples are split over the threads, whose
// totals are added in thread order (the same bits for a thread count).
#include "one_channel_conv.hpp"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "vector_width.hpp"

namespace hpdl {
namespace {

using Vec = FloatVec;
// Sums kept in registers: 20 of 32 vector registers, 10 of 16 (the rest hold the row's
// gradients and the broadcast input).
constexpr int64_t kSumRegisters = kVectorRegisters * 5 / 8;
constexpr int64_t kMaxVectors = 64;  // of output channels: 256 to 1024 channels (fits())

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

// One thread's buffers, made once: the sample zero-padded (only its inside is rewritten, so
// the padding stays 0); two rows of gradients with the channels padded to whole vectors (the
// next row is copied in before this one is summed, so no load waits on a store just made;
// the padding lanes stay 0); the K K window sums of a sample; the thread's double totals (K K
// sums and the bias's, OV kLanes each).
struct OneChannelWeightGradient::Scratch {
  std::vector<float> padded_x;
  std::vector<Vec> rows, sums;
  std::vector<double> totals;
};

OneChannelWeightGradient::OneChannelWeightGradient(const ConvDims& d, int threads) : d_(d) {
  const int64_t OV = (d.out_c + kLanes - 1) / kLanes, K = d.kernel, OW = d.out_w();
  const int most = threads > 0 ? threads : omp_get_max_threads();
  scratch_.resize(size_t(std::max<int64_t>(1, std::min<int64_t>(most, d.batch))));
  for (auto& s : scratch_) {
    s = std::make_unique<Scratch>();
    s->padded_x.assign(size_t((d.in_h + 2 * d.pad) * (d.in_w + 2 * d.pad)), 0.0f);
    s->rows.assign(size_t(2 * OW * OV), Vec{});
    s->sums.assign(size_t(K * K * OV), Vec{});
    s->totals.assign(size_t((K * K + 1) * OV * kLanes), 0.0);
  }
}

OneChannelWeightGradient::~OneChannelWeightGradient() = default;

void OneChannelWeightGradient::accumulate(const float* x, const float* dy, float* dw, float* db) {
  const int64_t N = d_.batch, H = d_.in_h, W = d_.in_w, O = d_.out_c, K = d_.kernel, S = d_.stride,
                P = d_.pad, OH = d_.out_h(), OW = d_.out_w();
  const int64_t OV = (O + kLanes - 1) / kLanes, PW = W + 2 * P,
                per_total = (K * K + 1) * OV * kLanes;
  // Vectors of channels summed together: as many as keep K R sums in registers.
  const int64_t R = std::max<int64_t>(1, std::min<int64_t>(OV, kSumRegisters / K));
  const int threads = omp_in_parallel() ? 1 : static_cast<int>(scratch_.size());
#pragma omp parallel num_threads(threads)
  {
    const int t = omp_get_thread_num();
    Scratch& sc = *scratch_[size_t(t)];
    const int64_t r0 = N * t / threads * OH, r1 = N * (t + 1) / threads * OH;  // rows n OH + oh
    float* xp = sc.padded_x.data();
    double* total = sc.totals.data();
    std::fill(sc.totals.begin(), sc.totals.end(), 0.0);
    // Output row r (n OH + oh) of dy into whole vectors of channels.
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
    if (r0 < r1) stage(r0, sc.rows.data());
    for (int64_t r = r0; r < r1; ++r) {
      const int64_t n = r / OH, oh = r % OH;
      const Vec* g = sc.rows.data() + (r - r0) % 2 * OW * OV;
      if (r + 1 < r1) stage(r + 1, sc.rows.data() + (r + 1 - r0) % 2 * OW * OV);
      if (oh == 0) {
        for (int64_t h = 0; h < H; ++h)
          std::memcpy(xp + (h + P) * PW + P, x + (n * H + h) * W, W * sizeof(float));
        std::fill(sc.sums.begin(), sc.sums.end(), Vec{});
      }
      Vec bias[kMaxVectors];
      std::fill(bias, bias + OV, Vec{});
      for (int64_t ow = 0; ow < OW; ++ow)
        for (int64_t v = 0; v < OV; ++v) bias[v] += g[ow * OV + v];
      add_sums(bias, OV, total + K * K * OV * kLanes);
      for (int64_t kh = 0; kh < K; ++kh) {
        const float* xr = xp + (oh * S + kh) * PW;
        Vec* s = sc.sums.data() + kh * K * OV;
        int64_t v0 = 0;
        if (R >= 4)
          for (; v0 + 4 <= OV; v0 += 4) window_row_any<4>(K, xr, g, OW, S, OV, v0, s);
        if (R >= 2)
          for (; v0 + 2 <= OV; v0 += 2) window_row_any<2>(K, xr, g, OW, S, OV, v0, s);
        for (; v0 < OV; ++v0) window_row_any<1>(K, xr, g, OW, S, OV, v0, s);
      }
      if (oh == OH - 1) add_sums(sc.sums.data(), K * K * OV, total);  // the sample's sums
    }
  }
  // Sums [kh][kw][channel] and the bias's [channel] into dw [O][kh][kw] and db, the threads'
  // totals in thread order.
  std::vector<double>& sum = scratch_[0]->totals;
  for (int t = 1; t < threads; ++t)
    for (int64_t i = 0; i < per_total; ++i)
      sum[size_t(i)] += scratch_[size_t(t)]->totals[size_t(i)];
  for (int64_t o = 0; o < O; ++o) {
    for (int64_t k = 0; k < K * K; ++k)
      dw[o * K * K + k] += float(sum[size_t(k * OV * kLanes + o)]);
    db[o] += float(sum[size_t(K * K * OV * kLanes + o)]);
  }
}

}  // namespace hpdl
