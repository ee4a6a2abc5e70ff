// Flush-to-zero for the CPU backends' threads (denormals.hpp).
#include "denormals.hpp"

#include <omp.h>

#include <cstdint>

#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

namespace hpdl {
namespace {

#if defined(__x86_64__)
constexpr unsigned kFtzDaz = 0x8040;  // MXCSR: flush to zero (bit 15), denormals are zero (6)
void set_on_this_thread() { _mm_setcsr(_mm_getcsr() | kFtzDaz); }
bool set_here() { return (_mm_getcsr() & kFtzDaz) == kFtzDaz; }
#elif defined(__aarch64__)
constexpr uint64_t kFz = uint64_t{1} << 24;  // FPCR.FZ: denormal inputs and results are zero
uint64_t fpcr() {
  uint64_t v = 0;
  asm volatile("mrs %0, fpcr" : "=r"(v));
  return v;
}
void set_on_this_thread() {
  const uint64_t v = fpcr() | kFz;
  asm volatile("msr fpcr, %0" : : "r"(v));
}
bool set_here() { return (fpcr() & kFz) != 0; }
#else
void set_on_this_thread() {}
bool set_here() { return false; }
#endif

}  // namespace

void flush_denormals() {
  set_on_this_thread();
  if (omp_in_parallel()) return;  // inside a team only the calling thread can be reached
#pragma omp parallel
  set_on_this_thread();
}

bool flushes_denormals() { return set_here(); }

}  // namespace hpdl
