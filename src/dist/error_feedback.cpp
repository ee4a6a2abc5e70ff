#include "hpdl/dist/error_feedback.hpp"

#include <algorithm>
#include <cmath>

#include "hpdl/core/error.hpp"

namespace hpdl {

void encode_with_feedback(HalfFormat f, std::span<const float> values, std::span<float> residual,
                          std::span<uint16_t> out) {
  HPDL_REQUIRE(values.size() == residual.size() && values.size() == out.size(),
               "error feedback: values, residual and output differ in size");
  const float limit = f == HalfFormat::kFp16 ? 65504.0f : from_bf16(0x7f7f);
  for (size_t i = 0; i < values.size(); ++i) {
    const float v = values[i] + residual[i];
    const uint16_t h = to_half(f, std::isfinite(v) ? std::clamp(v, -limit, limit) : v);
    residual[i] = v - from_half(f, h);
    out[i] = h;
  }
}

void decode(HalfFormat f, std::span<const uint16_t> in, std::span<float> out) {
  HPDL_REQUIRE(in.size() == out.size(), "decode: input and output differ in size");
  for (size_t i = 0; i < in.size(); ++i) out[i] = from_half(f, in[i]);
}

}  // namespace hpdl
