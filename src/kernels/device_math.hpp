// The per-index bodies of the CUDA backend's kernels that have no CPU twin in
// element_math.hpp: convolution as im2col + one GEMM over the whole batch, max pooling
// with a gather backward (no atomics: every input element sums its own outputs, so the
// result does not depend on thread order), activations. A CUDA kernel calls one of these
// per thread; tests/kernels/test_device_math.cpp calls them in host loops and compares with the
// reference backend, so this arithmetic is checked where no GPU is present.
// Private to kernels/.
//
// N batch, C input channels, H x W input, O output channels, K kernel, S stride, P pad,
// OH x OW output, Q = N OH OW columns of the im2col matrix, R = C K K its rows.
#pragma once
#include <cmath>
#include <cstdint>

#include "hpdl/core/hd.hpp"
#include "hpdl/kernels/kernels.hpp"

namespace hpdl::dmath {

// Plain copies of the dimension structs' numbers for kernels (no member functions).
// The index functions below take their index type I: int64_t, or int32_t for tensors of
// fewer than 2^30 elements (fits_int32), since a GPU divides 32-bit integers several
// times faster than 64-bit ones (LeNet's im2col at batch 128: most of its time was its
// 64-bit divisions). The arithmetic is the same either way.
template <typename I>
struct ConvShapeOf {
  I N, C, H, W, O, K, S, P, OH, OW;
};
using ConvShape = ConvShapeOf<int64_t>;
inline ConvShape conv_shape(const ConvDims& d) {
  return {d.batch,  d.in_c,   d.in_h, d.in_w,    d.out_c,
          d.kernel, d.stride, d.pad,  d.out_h(), d.out_w()};
}
constexpr bool fits_int32(int64_t n) { return n < (int64_t{1} << 30); }
// s in 32-bit numbers (only where every tensor it spans fits_int32).
inline ConvShapeOf<int32_t> narrow(const ConvShape& s) {
  auto n = [](int64_t v) { return static_cast<int32_t>(v); };
  return {n(s.N), n(s.C), n(s.H), n(s.W), n(s.O), n(s.K), n(s.S), n(s.P), n(s.OH), n(s.OW)};
}

// col[R, Q] entry (r, q) of x [N, C, H, W]: r = (c K + kh) K + kw, q = (n OH + oh) OW + ow;
// zero in the padding.
template <typename I>
HPDL_HD inline float im2col_value(const ConvShapeOf<I>& s, const float* x, I r, I q) {
  const I kw = r % s.K, kh = r / s.K % s.K, c = r / (s.K * s.K);
  const I ow = q % s.OW, oh = q / s.OW % s.OH, n = q / (s.OW * s.OH);
  const I ih = oh * s.S - s.P + kh, iw = ow * s.S - s.P + kw;
  if (ih < 0 || ih >= s.H || iw < 0 || iw >= s.W) return 0.0f;
  return x[((n * s.C + c) * s.H + ih) * s.W + iw];
}

// dx [N, C, H, W] element i from dcol [R, Q]: the sum over every tap that read it.
template <typename I>
HPDL_HD inline float col2im_value(const ConvShapeOf<I>& s, const float* dcol, I i) {
  const I iw = i % s.W, ih = i / s.W % s.H, c = i / (s.W * s.H) % s.C, n = i / (s.W * s.H * s.C);
  const I Q = s.N * s.OH * s.OW;
  float sum = 0;
  for (I kh = 0; kh < s.K; ++kh) {
    const I th = ih + s.P - kh;  // = oh S
    if (th < 0 || th % s.S != 0 || th / s.S >= s.OH) continue;
    for (I kw = 0; kw < s.K; ++kw) {
      const I tw = iw + s.P - kw;
      if (tw < 0 || tw % s.S != 0 || tw / s.S >= s.OW) continue;
      const I r = (c * s.K + kh) * s.K + kw, q = (n * s.OH + th / s.S) * s.OW + tw / s.S;
      sum += dcol[r * Q + q];
    }
  }
  return sum;
}

// The GEMM's output [O, Q] back to the layer's layout [N, O, OH OW] with the bias:
// y element i = t[o, n OH OW + p] + b[o]. (Its inverse gives the GEMM layout of dy.)
template <typename I>
HPDL_HD inline I gemm_index(I i, I N, I O, I PQ) {
  const I p = i % PQ, o = i / PQ % O, n = i / (PQ * O);
  return o * (N * PQ) + n * PQ + p;
}

// Max pooling over K x K windows with stride S (no padding) of x [NC, H, W]: output o's
// maximum (the first one in row-major window order wins ties, as the reference) and the
// input index it came from.
template <typename I>
HPDL_HD inline float pool_max(const float* x, I H, I W, I OH, I OW, I K, I S, I o, int64_t* arg) {
  const I ow = o % OW, oh = o / OW % OH, nc = o / (OW * OH);
  float best = -INFINITY;
  I best_i = (nc * H + oh * S) * W + ow * S;
  for (I kh = 0; kh < K; ++kh)
    for (I kw = 0; kw < K; ++kw) {
      const I i = (nc * H + oh * S + kh) * W + ow * S + kw;
      if (x[i] > best) best = x[i], best_i = i;
    }
  *arg = best_i;
  return best;
}

// dx element i: the sum of dy over the outputs whose window holds i and chose it.
template <typename I>
HPDL_HD inline float pool_dx(const float* dy, const int64_t* arg, I H, I W, I OH, I OW, I K, I S,
                             I i) {
  const I iw = i % W, ih = i / W % H, nc = i / (W * H);
  // Outputs oh with oh S <= ih < oh S + K.
  const I oh_lo = ih >= K ? (ih - K) / S + 1 : 0, oh_hi = ih / S < OH ? ih / S : OH - 1;
  const I ow_lo = iw >= K ? (iw - K) / S + 1 : 0, ow_hi = iw / S < OW ? iw / S : OW - 1;
  float sum = 0;
  for (I oh = oh_lo; oh <= oh_hi; ++oh)
    for (I ow = ow_lo; ow <= ow_hi; ++ow) {
      const I o = (nc * OH + oh) * OW + ow;
      if (arg[o] == i) sum += dy[o];
    }
  return sum;
}

HPDL_HD inline float activation_forward(Activation a, float x) {
  switch (a) {
    case Activation::kRelu:
      return x > 0 ? x : 0.0f;
    case Activation::kTanh:
      return std::tanh(x);
    case Activation::kSigmoid:
      return 1.0f / (1.0f + std::exp(-x));
  }
  return x;
}

// dx from dy and the forward's input x and output y.
HPDL_HD inline float activation_backward(Activation a, float x, float y, float dy) {
  switch (a) {
    case Activation::kRelu:
      return x > 0 ? dy : 0.0f;
    case Activation::kTanh:
      return dy * (1 - y * y);
    case Activation::kSigmoid:
      return dy * y * (1 - y);
  }
  return dy;
}

}  // namespace hpdl::dmath
