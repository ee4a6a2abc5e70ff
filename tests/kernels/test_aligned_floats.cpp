// The kernels' private scratch (kernels/cpu/aligned_floats.hpp) starts on a cache line whatever
// its size, when first sized and after it grows; its contents survive growth like a vector's.
#include <gtest/gtest.h>

#include <cstdint>

#include "cpu/aligned_floats.hpp"

namespace hpdl {
namespace {

bool on_cache_line(const float* p) { return reinterpret_cast<std::uintptr_t>(p) % 64 == 0; }

TEST(AlignedFloats, EverySizeStartsOnACacheLine) {
  for (size_t n : {size_t{1}, size_t{3}, size_t{17}, size_t{1000}, size_t{1} << 20}) {
    AlignedFloats v(n, 1.0f);
    EXPECT_TRUE(on_cache_line(v.data())) << n << " floats";
  }
}

TEST(AlignedFloats, GrowingKeepsTheAlignmentAndTheValues) {
  AlignedFloats v;
  for (int i = 0; i < 5000; ++i) {
    v.push_back(float(i));
    ASSERT_TRUE(on_cache_line(v.data())) << v.size() << " floats";
  }
  v.resize(size_t{1} << 22);  // past malloc's mmap threshold: 16 bytes into a page otherwise
  EXPECT_TRUE(on_cache_line(v.data()));
  for (int i = 0; i < 5000; ++i) ASSERT_EQ(v[size_t(i)], float(i));
}

}  // namespace
}  // namespace hpdl
