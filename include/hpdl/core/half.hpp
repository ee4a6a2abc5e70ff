// The two 16-bit float formats gradients travel in (distributed.compression): bfloat16 (f32's
// 8-bit exponent, 7 stored mantissa bits: f32's range, ~3 significant digits) and IEEE
// binary16 (5-bit exponent, 10 mantissa bits: ~4 digits, normal values 6.1e-5 .. 65504).
// Conversions round to nearest, ties to even, like the hardware instructions; NaN stays NaN
// and f32 values beyond binary16's range become infinities. Portable bit arithmetic: the same
// results on every CPU, no F16C/AVX-512-BF16/NEON instruction required.
#pragma once
#include <bit>
#include <cstdint>

namespace hpdl {

enum class HalfFormat { kBf16, kFp16 };

inline uint16_t to_bf16(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u)
    return static_cast<uint16_t>((u >> 16) | 0x40u);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest, ties to even (may carry into inf)
  return static_cast<uint16_t>(u >> 16);
}

inline float from_bf16(uint16_t h) { return std::bit_cast<float>(static_cast<uint32_t>(h) << 16); }

inline uint16_t to_fp16(float f) {
  const uint32_t u = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (u >> 16) & 0x8000u;
  uint32_t x = u & 0x7fffffffu;
  if (x >= 0x7f800000u) return static_cast<uint16_t>(sign | (x > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (x >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520 rounds to inf
  if (x < 0x38800000u) {  // below 2^-14: a binary16 subnormal (or zero)
    if (x <= 0x33000000u) return static_cast<uint16_t>(sign);  // <= 2^-25: ties to even, 0
    const uint32_t mant = (x & 0x7fffffu) | 0x800000u;
    const uint32_t shift = 126u - (x >> 23);  // 14 .. 24
    uint32_t r = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    if (rem > half || (rem == half && (r & 1u))) ++r;
    return static_cast<uint16_t>(sign | r);
  }
  x += 0xfffu + ((x >> 13) & 1u);  // round the 13 dropped bits, ties to even
  return static_cast<uint16_t>(sign | ((x - 0x38000000u) >> 13));
}

inline float from_fp16(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1fu) return std::bit_cast<float>(sign | 0x7f800000u | (m << 13));
  if (e == 0) {
    const float v = static_cast<float>(m) * 5.9604644775390625e-8f;  // m x 2^-24, exact
    return sign ? -v : v;
  }
  return std::bit_cast<float>(sign | ((e + 112u) << 23) | (m << 13));
}

inline uint16_t to_half(HalfFormat f, float v) {
  return f == HalfFormat::kBf16 ? to_bf16(v) : to_fp16(v);
}
inline float from_half(HalfFormat f, uint16_t h) {
  return f == HalfFormat::kBf16 ? from_bf16(h) : from_fp16(h);
}

}  // namespace hpdl
