// Seeded test inputs: n floats uniform in [-1, 1) from the counter-based Rng, the same on
// every machine and rank. `stream` keeps one test file's draws apart from another's.
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

}  // namespace hpdl
