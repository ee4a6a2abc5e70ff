// Error feedback for gradients or parameter changes sent as 16-bit floats (after 1-bit SGD,
// Seide et al. 2014, and PowerSGD, Vogels et al. 2019): before rounding, a rank adds what
// rounding dropped from its previous contribution, so over steps the rounding errors cancel
// instead of accumulating; what it sends sums to what it meant to send, up to one residual.
#pragma once
#include <cstdint>
#include <span>

#include "hpdl/core/half.hpp"

namespace hpdl {

// out = 16-bit(values + residual); residual = (values + residual) - out, element by element.
// A finite value saturates at the format's largest finite value (the excess stays in the
// residual); NaN and Inf pass through, for the non-finite guard to see.
void encode_with_feedback(HalfFormat f, std::span<const float> values, std::span<float> residual,
                          std::span<uint16_t> out);
// out = the f32 values of `in`.
void decode(HalfFormat f, std::span<const uint16_t> in, std::span<float> out);

}  // namespace hpdl
