// The width of the build's vector registers for kernels written with GCC vector types (the
// panel product, the one-channel convolution, the block max pool's channel runs): 16 floats
// with AVX-512, 8 with AVX/AVX2, 4 elsewhere (SSE, arm64's NEON), and how many such registers
// there are (32 with AVX-512 and on arm64, 16 on x86-64 below AVX-512), so that a kernel can
// size the sums it keeps in registers; and vectors of any width read at any float (Loose).
// Private to kernels/.
#pragma once
#include <cstdint>

namespace hpdl {

#if defined(__AVX512F__)
constexpr int kVectorFloats = 16;
#elif defined(__AVX__)
constexpr int kVectorFloats = 8;
#else
constexpr int kVectorFloats = 4;
#endif
// The same width as a signed 64-bit count, for a kernel's index arithmetic.
constexpr int64_t kLanes = kVectorFloats;
#if defined(__AVX512F__) || defined(__aarch64__)
constexpr int kVectorRegisters = 32;
#else
constexpr int kVectorRegisters = 16;
#endif
typedef float FloatVec __attribute__((vector_size(kVectorFloats * sizeof(float))));

// V floats or int32s read and written as one vector at any 4-byte-aligned address (a run of
// channels that starts anywhere); V = 1 is a one-lane vector, so one code path serves a run
// of any width.
template <int64_t V>
struct Loose {
  typedef float Floats __attribute__((vector_size(V * sizeof(float)), aligned(4)));
  typedef int32_t Ints __attribute__((vector_size(V * sizeof(int32_t)), aligned(4)));
};

}  // namespace hpdl
