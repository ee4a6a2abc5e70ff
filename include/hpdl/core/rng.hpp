// Counter-based random numbers: a value is a pure function of (seed, stream, counter), so
// shuffles, initialisation and dropout masks are identical whatever the rank count or
// thread schedule. splitmix64 mixing; good enough statistically for ML, and stateless.
#pragma once
#include <cmath>
#include <cstdint>

#include "hpdl/core/hd.hpp"

namespace hpdl {

HPDL_HD inline uint64_t mix64(uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// A 64-bit random value for (seed, stream, counter).
HPDL_HD inline uint64_t random_u64(uint64_t seed, uint64_t stream, uint64_t counter) {
  return mix64(mix64(mix64(seed) ^ stream) ^ counter);
}

// Uniform in [0, 1) with 24 bits of precision. (The 24 bits go to float through a 32-bit
// integer: the same value, but x86-64 converts 32-bit integers to float in vectors on any
// SIMD width, 64-bit ones only with AVX-512 — without it a loop drawing values would not
// vectorise at all.)
HPDL_HD inline float random_uniform(uint64_t seed, uint64_t stream, uint64_t counter) {
  const auto bits = static_cast<uint32_t>(random_u64(seed, stream, counter) >> 40);
  return static_cast<float>(bits) * (1.0f / 16777216.0f);
}

// A small sequential generator for code that draws many values in order (init, shuffles).
class Rng {
 public:
  Rng(uint64_t seed, uint64_t stream) : seed_(seed), stream_(stream) {}
  uint64_t next_u64() { return random_u64(seed_, stream_, counter_++); }
  float uniform() { return static_cast<float>(next_u64() >> 40) * (1.0f / 16777216.0f); }
  // Standard normal by Box-Muller.
  float normal() {
    const float u1 = 1.0f - uniform();  // (0, 1]: log stays finite
    const float u2 = uniform();
    return std::sqrt(-2.0f * std::log(u1)) * std::cos(6.28318530718f * u2);
  }
  // Uniform integer in [0, n).
  uint64_t below(uint64_t n) { return next_u64() % n; }

 private:
  uint64_t seed_, stream_, counter_ = 0;
};

}  // namespace hpdl
