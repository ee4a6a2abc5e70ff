// The 16-bit float formats gradients travel in, and error feedback: conversions round to the
// nearest representable value with ties to even (checked against the neighbours of every
// result), every 16-bit value survives a round trip, and error feedback keeps the sum of
// what was sent within one rounding step of the sum of what was meant.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "hpdl/core/half.hpp"
#include "hpdl/core/rng.hpp"
#include "hpdl/dist/error_feedback.hpp"

using namespace hpdl;

namespace {
const HalfFormat kFormats[] = {HalfFormat::kBf16, HalfFormat::kFp16};

bool is_nan16(HalfFormat f, uint16_t h) { return std::isnan(from_half(f, h)); }
}  // namespace

TEST(Half, EverySixteenBitValueSurvivesARoundTrip) {
  for (HalfFormat f : kFormats) {
    for (uint32_t h = 0; h <= 0xffff; ++h) {
      const uint16_t v = static_cast<uint16_t>(h);
      if (is_nan16(f, v)) {
        EXPECT_TRUE(is_nan16(f, to_half(f, from_half(f, v))));
      } else {
        ASSERT_EQ(to_half(f, from_half(f, v)), v) << "format " << int(f) << " value " << h;
      }
    }
  }
}

TEST(Half, RoundsToTheNearestValueTiesToEven) {
  Rng rng(7, 1);
  for (HalfFormat f : kFormats) {
    const double top = f == HalfFormat::kFp16 ? 65504.0 : 3.3e38;
    for (int i = 0; i < 200000; ++i) {
      // Magnitudes across the whole range, subnormals of both formats included.
      const double scale = std::pow(2.0, rng.uniform() * (f == HalfFormat::kFp16 ? 44 : 250) -
                                             (f == HalfFormat::kFp16 ? 28 : 125));
      const float x = static_cast<float>((rng.uniform() * 2 - 1) * scale);
      if (std::abs(x) > top) continue;
      const uint16_t h = to_half(f, x);
      const double err = std::abs(double(from_half(f, h)) - x);
      for (int step : {-1, 1}) {  // the neighbours of the same sign are not closer
        const uint16_t n = static_cast<uint16_t>(h + step);
        if ((n & 0x7fff) == 0x7fff || ((h ^ n) & 0x8000) || is_nan16(f, n)) continue;
        const double other = std::abs(double(from_half(f, n)) - x);
        ASSERT_TRUE(err < other || (err == other && (h & 1) == 0))
            << "format " << int(f) << " x " << x << " gave " << from_half(f, h) << ", "
            << from_half(f, n) << " is closer";
      }
    }
  }
  // Exact ties go to the even mantissa; the extremes.
  EXPECT_EQ(from_bf16(to_bf16(1.0f + 1.0f / 256)), 1.0f);               // tie, 1.0 even
  EXPECT_EQ(from_bf16(to_bf16(1.0f + 3.0f / 256)), 1.0f + 4.0f / 256);  // tie, up to even
  EXPECT_EQ(from_fp16(to_fp16(1.0f + 1.0f / 2048)), 1.0f);
  EXPECT_EQ(from_fp16(to_fp16(65504.0f)), 65504.0f);
  EXPECT_TRUE(std::isinf(from_fp16(to_fp16(65520.0f))));
  EXPECT_EQ(from_fp16(to_fp16(std::ldexp(1.0f, -24))), std::ldexp(1.0f, -24));  // smallest
  EXPECT_EQ(from_fp16(to_fp16(std::ldexp(1.0f, -25))), 0.0f);                   // tie to 0
  EXPECT_TRUE(std::isnan(from_bf16(to_bf16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_TRUE(std::isnan(from_fp16(to_fp16(std::numeric_limits<float>::quiet_NaN()))));
  EXPECT_EQ(from_fp16(to_fp16(-std::numeric_limits<float>::infinity())),
            -std::numeric_limits<float>::infinity());
}

// A hand-made gradient that no 16-bit format holds exactly, sent 1000 times: without
// feedback the rounding error grows with every step, with it the total sent stays within
// one rounding step of the total meant.
TEST(ErrorFeedback, SentSumStaysWithinOneRoundingOfTheMeantSum) {
  for (HalfFormat f : kFormats) {
    const std::vector<float> g = {1.0f / 3, -2.0f / 7, 1e-3f / 3, 12345.678f, 3e-6f};
    std::vector<float> residual(g.size(), 0.0f);
    std::vector<uint16_t> wire(g.size());
    std::vector<double> sent(g.size(), 0), plain(g.size(), 0);
    const int steps = 1000;
    for (int s = 0; s < steps; ++s) {
      encode_with_feedback(f, g, residual, wire);
      for (size_t i = 0; i < g.size(); ++i) {
        sent[i] += from_half(f, wire[i]);
        plain[i] += from_half(f, to_half(f, g[i]));
      }
    }
    for (size_t i = 0; i < g.size(); ++i) {
      const double meant = double(g[i]) * steps;
      // sent + residual == meant, up to f32 rounding of the residual's updates.
      EXPECT_NEAR(sent[i] + residual[i], meant, 1e-4 * std::abs(meant) + 1e-6) << i;
      EXPECT_LE(std::abs(residual[i]),
                std::abs(g[i]) / (f == HalfFormat::kBf16 ? 128 : 1024) + 1e-7);
      EXPECT_LT(std::abs(sent[i] - meant), std::abs(plain[i] - meant) + 1e-6) << i;
    }
  }
}

TEST(ErrorFeedback, SaturatesFiniteValuesAndPassesNonFiniteOnes) {
  std::vector<float> g = {1e6f, -1e6f, std::numeric_limits<float>::infinity()}, r(3, 0.0f);
  std::vector<uint16_t> w(3);
  encode_with_feedback(HalfFormat::kFp16, g, r, w);
  EXPECT_EQ(from_fp16(w[0]), 65504.0f);
  EXPECT_EQ(r[0], 1e6f - 65504.0f);  // the excess waits in the residual
  EXPECT_EQ(from_fp16(w[1]), -65504.0f);
  EXPECT_TRUE(std::isinf(from_fp16(w[2])));  // the non-finite guard sees it
}
