// Vectorisable exp, sigmoid and tanh for hand-written OpenMP loops (LSTM gates). glibc's
// scalar expf/tanhf calls kept such loops scalar and took over half of the HAR model's
// step time; these inline versions vectorise under `#pragma omp simd`. exp: range
// reduction x = k ln2 + r, |r| <= ln2/2, then a degree-6 polynomial; relative error below
// 2e-7 on [-87, 88], clamped outside.
#pragma once
#include <bit>
#include <cstdint>

#include "hpdl/core/hd.hpp"

namespace hpdl {

HPDL_HD inline float fast_exp(float x) {
  // Written so GCC vectorises it on any SIMD width: the clamp as a bitwise select on
  // compare masks, and rounding by adding and removing 1.5 * 2^23 (no libm call). As
  // selects (x > 88 ? 88 : x) the clamp stayed a branch without AVX-512's masks, and the
  // LSTM's gate loop scalar (AVX2: 19.4 -> 4.0 ns a unit); with them, GCC split the rest
  // of the function into a path per case (fminf/fmaxf are not vectorised either). A NaN
  // stays NaN (both compares false).
  const int32_t high = -static_cast<int32_t>(x > 88.0f), low = -static_cast<int32_t>(x < -87.0f);
  int32_t bits_x = std::bit_cast<int32_t>(x);
  bits_x = (bits_x & ~high) | (std::bit_cast<int32_t>(88.0f) & high);
  bits_x = (bits_x & ~low) | (std::bit_cast<int32_t>(-87.0f) & low);
  x = std::bit_cast<float>(bits_x);
  // round(x / ln2): k, and in the low bits of kb's pattern as an integer (1.5 * 2^23 has
  // the units in its last place), read from there without a float-to-int conversion.
  const float kb = x * 1.44269504088896341f + 12582912.0f, k = kb - 12582912.0f;
  const float r = x - k * 0.693359375f + k * 2.12194440e-4f;  // x - k ln2, in two parts
  float p = 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  const int32_t bits = (std::bit_cast<int32_t>(kb) - 0x4B400000 + 127) << 23;  // 2^k
  return p * std::bit_cast<float>(bits);
}

HPDL_HD inline float fast_sigmoid(float x) { return 1.0f / (1.0f + fast_exp(-x)); }

// tanh(x) = 2 sigmoid(2x) - 1; absolute error about 1e-7.
HPDL_HD inline float fast_tanh(float x) { return 2.0f / (1.0f + fast_exp(-2.0f * x)) - 1.0f; }

}  // namespace hpdl
