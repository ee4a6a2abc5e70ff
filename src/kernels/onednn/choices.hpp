// The CPU backend's kernel choices as ordered candidate tables (../candidates.hpp): for a
// convolution its oneDNN kernels, its activations' layout and its weight gradient; for a max
// pool and for a dense layer's weight gradient. The rows, and the measurements behind them,
// are in choices.cpp; the kernels only run what these return.
#pragma once
#include "../candidates.hpp"
#include "hpdl/config/settings.hpp"

namespace hpdl::onednn {

// What this CPU gives the rules, read once a process.
struct CpuFacts {
  bool x86_64 = false;
  bool avx512 = false;      // oneDNN may run AVX-512 kernels here (ONEDNN_MAX_CPU_ISA counts)
  unsigned amd_family = 0;  // AMD's CPU family (25: Zen 3 and Zen 4, 26: Zen 5); 0 not AMD
};
const CpuFacts& cpu_facts();

enum class ConvIsa { kNative, kAvx2 };  // oneDNN's first choice, or its AVX2 kernels
enum class ConvLayout { kBlocked, kNhwc };
enum class ConvWeights { kOneDnn, kOneChannel, kNhwc };  // oneDNN's, or one of hpdl's

struct ConvPick {
  ConvIsa isa;
  ConvLayout layout;
  ConvWeights weights;
  KernelChoice isa_choice, layout_choice, weights_choice;
};
ConvPick choose_conv(const ConvDims& d, const KernelChoices& run, const CpuFacts& cpu);

enum class PoolKernel { kHpdl, kOneDnn };
struct PoolPick {
  PoolKernel kernel;
  KernelChoice choice;
};
PoolPick choose_max_pool(const PoolDims& d, const KernelChoices& run);

// Whether a dense layer's weight gradient is taken as (x^T dy)^T, and why.
struct DensePick {
  bool transposed_dw;
  KernelChoice choice;
};
DensePick choose_dense(const DenseDims& d);

}  // namespace hpdl::onednn
