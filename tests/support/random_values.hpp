// Seeded test inputs from the counter-based Rng, the same on every machine and rank: n floats
// uniform in [-1, 1), or on a grid of ties. `stream` keeps one test file's draws apart from
// another's.
#pragma once
#include <cstdint>
#include <vector>

#include "hpdl/core/rng.hpp"

namespace hpdl {

inline std::vector<float> uniform_values(int64_t n, uint64_t seed, uint64_t stream) {
  Rng rng(seed, stream);
  std::vector<float> v(n);
  for (auto& x : v) x = 2 * rng.uniform() - 1;
  return v;
}

// Values on a coarse grid around 0 (-1.5 to 0.5 in steps of 0.25): many exact ties, zeros
// and all-negative windows, for the max-pool and ReLU tests.
inline std::vector<float> kinked_values(int64_t n, uint64_t seed) {
  Rng rng(seed, 1);
  std::vector<float> v(n);
  for (auto& x : v) x = 0.25f * float(static_cast<int64_t>(rng.below(9)) - 6);
  return v;
}

}  // namespace hpdl
