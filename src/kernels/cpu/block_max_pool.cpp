// Non-overlapping max pooling on activations in channel blocks (kernels.hpp): a
// convolution's own layout, read and written without converting to plain NCHW and back.
// One sample at a time: along each output row, the channels of a block side by side
// (contiguous, so the window's compares are vector compares over channels), the position
// of each maximum kept as its place in the window (kh K + kw; -1 where a fused ReLU zeroed
// the output). Backward writes every input gradient once (dy at the maximum, 0 elsewhere)
// instead of clearing and scattering. An output in other blocks than the input goes
// through a per-sample staging copy in the input's blocks (in cache).
// C channels, H/W input, OH/OW output, K window = stride, Bi/Bo the input's/output's block.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "aligned_floats.hpp"
#include "hpdl/core/error.hpp"
#include "max_pool.hpp"
#include "vector_width.hpp"

namespace hpdl {
namespace {

// One sample's [C, HW] values from blocks `from` into blocks `to`.
void convert_blocks(const float* __restrict src, int64_t from, float* __restrict dst, int64_t to,
                    int64_t C, int64_t HW) {
  for (int64_t c = 0; c < C; ++c) {
    const float* s = src + (c / from) * HW * from + c % from;
    float* d = dst + (c / to) * HW * to + c % to;
    for (int64_t p = 0; p < HW; ++p) d[p * to] = s[p * from];
  }
}

// V channels' input gradients at one place of their windows: dy where the maximum was
// there, else 0. Written with vector types: as a loop, GCC made V scalar compares and
// branches of it (the read of dy is conditional in `code == place ? dy : 0`), which made
// the backward pass 12x a copy of its bytes on a Zen 4.
template <int64_t V>
inline void gradient_at(const int32_t* code, const float* dy, int32_t place, float* out) {
  using Floats = typename Loose<V>::Floats;
  using Ints = typename Loose<V>::Ints;
  const Floats g = *reinterpret_cast<const Floats*>(dy);
  *reinterpret_cast<Floats*>(out) = *reinterpret_cast<const Ints*>(code) == place ? g : Floats{};
}

// V channels' 2 x 2 windows (rows r0 and r1, columns a/b and c/d): the maximum, the first
// of equals in row-major order, its place (0-3) in code, and the fused ReLU (0 and place -1
// where the maximum is not above 0). Vector types, for the reason gradient_at gives.
template <int64_t V>
inline void window_2x2(const float* a, const float* b, const float* c, const float* d, bool relu,
                       float* y, int32_t* code) {
  using Floats = typename Loose<V>::Floats;
  using Ints = typename Loose<V>::Ints;
  const auto at = [](const float* p) { return *reinterpret_cast<const Floats*>(p); };
  const Floats va = at(a), vb = at(b), vc = at(c), vd = at(d);
  const Ints ab = va < vb, cd = vc < vd;  // -1 where the second is larger
  const Floats m0 = ab ? vb : va, m1 = cd ? vd : vc;
  const Ints later = m0 < m1;
  const Floats m = later ? m1 : m0;
  const Ints place = later ? 2 - cd : -ab;
  const Ints keep = relu ? Ints(m > 0) : Ints{} - 1;
  *reinterpret_cast<Floats*>(y) = keep ? m : Floats{};
  *reinterpret_cast<Ints*>(code) = keep ? place : Ints{} - 1;
}

class BlockMaxPool final : public MaxPoolKernel {
 public:
  explicit BlockMaxPool(const PoolDims& d)
      : n_(d.batch),
        c_(d.channels),
        h_(d.in_h),
        w_(d.in_w),
        oh_(d.out_h()),
        ow_(d.out_w()),
        k_(d.kernel),
        bi_(d.in_block),
        bo_(d.out_block),
        relu_(d.relu),
        code_(n_ * c_ * oh_ * ow_),
        stage_(bi_ == bo_ ? 0 : n_ * c_ * oh_ * ow_) {}

  void forward(const float* x, float* y) override {
    const int64_t per_in = c_ * h_ * w_, per_out = c_ * oh_ * ow_;
#pragma omp parallel for
    for (int64_t n = 0; n < n_; ++n) {
      float* ys = bi_ == bo_ ? y + n * per_out : stage_.data() + n * per_out;
      for (int64_t cb = 0; cb < c_ / bi_; ++cb)
        for (int64_t oh = 0; oh < oh_; ++oh) {
          const int64_t in0 = n * per_in + block_offset(bi_, h_, w_, cb * bi_, oh * k_, 0);
          const int64_t out0 = block_offset(bi_, oh_, ow_, cb * bi_, oh, 0);
          int32_t* code = code_.data() + n * per_out + out0;
          if (k_ == 2) {
            row_2x2(x + in0, ys + out0, code);  // applies the ReLU itself
          } else {
            row(x + in0, ys + out0, code);
            if (relu_) relu_row(ys + out0, code);  // the row's outputs are still in L1
          }
        }
      if (bi_ != bo_) convert_blocks(ys, bi_, y + n * per_out, bo_, c_, oh_ * ow_);
    }
  }

  void backward(const float* dy, float* dx) override {
    const int64_t per_in = c_ * h_ * w_, per_out = c_ * oh_ * ow_;
#pragma omp parallel for
    for (int64_t n = 0; n < n_; ++n) {
      const float* g = dy + n * per_out;
      if (bi_ != bo_) {
        convert_blocks(g, bo_, stage_.data() + n * per_out, bi_, c_, oh_ * ow_);
        g = stage_.data() + n * per_out;
      }
      float* dxs = dx + n * per_in;
      for (int64_t cb = 0; cb < c_ / bi_; ++cb) {
        for (int64_t oh = 0; oh < oh_; ++oh) {
          const int64_t in0 = block_offset(bi_, h_, w_, cb * bi_, oh * k_, 0);
          const int64_t out0 = block_offset(bi_, oh_, ow_, cb * bi_, oh, 0);
          const int32_t* code = code_.data() + n * per_out + out0;
          row_backward(g + out0, code, dxs + in0);
          if (w_ > ow_ * k_)  // columns no window covers
            for (int64_t kh = 0; kh < k_; ++kh)
              std::memset(dxs + in0 + (kh * w_ + ow_ * k_) * bi_, 0,
                          (w_ - ow_ * k_) * bi_ * sizeof(float));
        }
        if (h_ > oh_ * k_)  // rows no window covers
          std::memset(dxs + block_offset(bi_, h_, w_, cb * bi_, oh_ * k_, 0), 0,
                      (h_ - oh_ * k_) * w_ * bi_ * sizeof(float));
      }
    }
  }

  Takes takes() const override { return {relu_, true}; }

 private:
  // One output row: x at the row's first window, y and code at its first output, both in
  // [OW][Bi] order; the first maximum in row-major window order.
  void row(const float* __restrict x, float* __restrict y, int32_t* __restrict code) const {
    const int64_t K = k_, W = w_, B = bi_;
    for (int64_t ow = 0; ow < ow_; ++ow)
      for (int64_t j = 0; j < B; ++j) {
        const float* p = x + ow * K * B + j;
        float best = p[0];
        int32_t at = 0;
        for (int64_t kh = 0; kh < K; ++kh)
          for (int64_t kw = 0; kw < K; ++kw)
            if (p[(kh * W + kw) * B] > best)
              best = p[(kh * W + kw) * B], at = static_cast<int32_t>(kh * K + kw);
        y[ow * B + j] = best;
        code[ow * B + j] = at;
      }
  }

  // K = 2 unrolled as selects over a row of OW x B contiguous channels, in vectors of a fixed
  // width (below), the fused ReLU applied before the stores (a second pass reading them back
  // stalled on the overlapping runs' stores).
  void row_2x2(const float* __restrict x, float* __restrict y, int32_t* __restrict code) const {
    const int64_t B = bi_, WB = w_ * bi_;
    const bool relu = relu_;
    for (int64_t ow = 0; ow < ow_; ++ow)
      over_channels(B, [&](auto width, int64_t j0) {
        const float* __restrict r0 = x + ow * 2 * B + j0;
        const float* __restrict r1 = r0 + WB;
        float* __restrict yo = y + ow * B + j0;
        int32_t* __restrict co = code + ow * B + j0;
        window_2x2<decltype(width)::value>(r0, r0 + B, r1, r1 + B, relu, yo, co);
      });
  }

  // Calls f(width, j0) over a block's B channels in runs of a width fixed at compile time
  // (std::integral_constant: vectors of that width in window_2x2 and gradient_at, no scalar
  // tail): runs of 16 with AVX-512, else 8 (one AVX2 register), then one more ending at B
  // that overlaps the last (it writes the same values again); one channel at a time below 8.
  // (Runs of two AVX2 registers, 16 floats, took 11 % longer.)
  template <typename F>
  static void over_channels(int64_t B, F&& f) {
    if (B >= kRun)
      runs_of<kRun>(B, f);
    else if (B >= 8)
      runs_of<8>(B, f);
    else
      for (int64_t j0 = 0; j0 < B; ++j0) f(std::integral_constant<int64_t, 1>{}, j0);
  }
  template <int64_t V, typename F>
  static void runs_of(int64_t B, F& f) {
    int64_t j0 = 0;
    for (; j0 + V <= B; j0 += V) f(std::integral_constant<int64_t, V>{}, j0);
    if (j0 < B) f(std::integral_constant<int64_t, V>{}, B - V);
  }
  static constexpr int64_t kRun = kVectorFloats >= 16 ? 16 : 8;

  // The fused ReLU on one row: y > 0 ? y : 0 (as the ReLU kernels), no gradient where not.
  void relu_row(float* __restrict y, int32_t* __restrict code) const {
    for (int64_t i = 0; i < ow_ * bi_; ++i) {
      const bool keep = y[i] > 0;
      y[i] = keep ? y[i] : 0.0f;
      code[i] = keep ? code[i] : -1;
    }
  }

  // dy at each window's maximum, 0 at the rest of the window.
  void row_backward(const float* __restrict g, const int32_t* __restrict code,
                    float* __restrict dx) const {
    const int64_t K = k_, W = w_, B = bi_;
    if (K == 2) return row_backward_2x2(g, code, dx);
    for (int64_t ow = 0; ow < ow_; ++ow)
      for (int64_t kh = 0; kh < K; ++kh)
        for (int64_t kw = 0; kw < K; ++kw) {
          float* p = dx + (ow * K + kh * W + kw) * B;
          const int32_t place = static_cast<int32_t>(kh * K + kw);
          over_channels(B, [&](auto width, int64_t j0) {
            gradient_at<decltype(width)::value>(code + ow * B + j0, g + ow * B + j0, place, p + j0);
          });
        }
  }

  // K = 2: each of the window's two input rows written front to back, B channels at a time
  // (LeNet's pool1 on an AVX2 EPYC: 2.75 -> 0.72 ms on one thread, against runs of vectors
  // staged per window and copied to its four places, which also wrote the two rows
  // interleaved).
  void row_backward_2x2(const float* __restrict g, const int32_t* __restrict code,
                        float* __restrict dx) const {
    const int64_t B = bi_, W = w_;
    for (int32_t kh = 0; kh < 2; ++kh)
      for (int64_t ow = 0; ow < ow_; ++ow)
        for (int32_t kw = 0; kw < 2; ++kw) {
          const int32_t place = 2 * kh + kw;
          const float* __restrict gw = g + ow * B;
          const int32_t* __restrict cw = code + ow * B;
          float* __restrict p = dx + (kh * W + ow * 2 + kw) * B;
          over_channels(B, [&](auto width, int64_t j0) {
            gradient_at<decltype(width)::value>(cw + j0, gw + j0, place, p + j0);
          });
        }
  }

  int64_t n_, c_, h_, w_, oh_, ow_, k_, bi_, bo_;
  bool relu_;                  // PoolDims::relu
  std::vector<int32_t> code_;  // each output's place in its window, in the input's blocks
  AlignedFloats stage_;        // outputs (dy) in the input's blocks, when the output's differ
};

}  // namespace

std::unique_ptr<MaxPoolKernel> make_block_max_pool(const PoolDims& d) {
  for (const int64_t b : {d.in_block, d.out_block})
    HPDL_REQUIRE(b >= 1 && d.channels % b == 0, "max pool: a channel block of " +
                                                    std::to_string(b) + " does not divide " +
                                                    std::to_string(d.channels) + " channels");
  HPDL_REQUIRE(d.kernel == d.stride, "max pool: channel blocks need kernel = stride");
  return std::make_unique<BlockMaxPool>(d);
}

}  // namespace hpdl
