// The CPU backend's candidate tables (choices.hpp). A row's reason is what the execution
// plan prints; the measurements behind it are in docs/results.md (its "Kernel choices"
// questions). Each rule reads the shape, the CPU and run.kernels only, never a timing.
#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "../cpu/max_pool.hpp"
#include "../cpu/nhwc_weight_gradient.hpp"
#include "../cpu/one_channel_conv.hpp"
#include "choices.hpp"
#include "primitive.hpp"

namespace hpdl::onednn {
namespace {

#if defined(__x86_64__)
unsigned read_amd_family() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  const bool amd = __get_cpuid(0, &a, &b, &c, &d) && b == 0x68747541 && d == 0x69746e65 &&
                   c == 0x444d4163;  // "AuthenticAMD"
  if (!amd || !__get_cpuid(1, &a, &b, &c, &d)) return 0;
  const unsigned base = (a >> 8) & 0xf;
  return base == 0xf ? base + ((a >> 20) & 0xff) : base;
}
#endif

// oneDNN's channel block on x86-64 for the kernels a convolution takes: 16 with AVX-512, 8
// below (and for its AVX2 kernels).
int64_t channel_block(const CpuFacts& cpu, bool avx2) { return cpu.avx512 && !avx2 ? 16 : 8; }

// Whether channel blocks of `block` pad d's output channels or, past a first layer's 1-4,
// its input channels.
bool pads(const ConvDims& d, int64_t block) {
  return d.out_c % block != 0 || (d.in_c > 4 && d.in_c % block != 0);
}

// What the convolution tables read: the layer, run.kernels, the CPU, and what the tables
// before chose (the kernels' ISA for the layout, the layout for the weight gradient).
struct ConvFacts {
  ConvDims d;
  KernelChoices run;
  CpuFacts cpu;
  bool avx2 = false;
  ConvLayout layout = ConvLayout::kBlocked;
};
using ConvIsaRow = Candidate<ConvFacts, ConvIsa>;
using ConvLayoutRow = Candidate<ConvFacts, ConvLayout>;
using ConvWeightsRow = Candidate<ConvFacts, ConvWeights>;

// oneDNN's kernels. On AMD's Zen 4 (family 25 with AVX-512) the AVX-512 instructions are
// split over 256-bit units, and where blocks of 16 channels would pad the channels the AVX2
// kernels (blocks of 8) ran faster: LeNet's convolutions 1.08-1.57x, its training
// 1.02-1.06x; on whole blocks (VGG-11) the AVX-512 ones were faster. Zen 3 has no AVX-512.
const ConvIsaRow kConvIsa[] = {
    {ConvIsa::kNative, "", "oneDNN's first choice (its AVX2 kernels are x86-64's)",
     [](const ConvFacts& f) { return !f.cpu.x86_64; }},
    {ConvIsa::kNative, "", "oneDNN's first choice (bf16)",
     [](const ConvFacts& f) { return f.d.precision != Precision::kF32; }},
    {ConvIsa::kNative, "", "run.kernels.conv_isa = \"native\"",
     [](const ConvFacts& f) { return f.run.conv_isa == ConvIsaChoice::kNative; }},
    {ConvIsa::kAvx2, "", "run.kernels.conv_isa = \"avx2\"",
     [](const ConvFacts& f) { return f.run.conv_isa == ConvIsaChoice::kAvx2; }},
    {ConvIsa::kAvx2, "", "AVX2 on a Zen 4, where blocks of 16 would pad the channels",
     [](const ConvFacts& f) { return f.cpu.avx512 && f.cpu.amd_family == 25 && pads(f.d, 16); }},
    {ConvIsa::kNative, "", "oneDNN's first choice", [](const ConvFacts&) { return true; }},
};

// The activations' layout: oneDNN's blocked one (channels in blocks of 16 on AVX-512, 8
// below; format_tag::any) or NHWC (channels last, no blocks). Blocked kernels pad the
// channels to whole blocks, so a layer whose channels are not whole blocks wastes that share
// of its work: NHWC (oneDNN's brgemm convolution on AVX-512) takes those. Measured with
// run.kernels.conv_layout forcing either on the presets' shapes on AVX-512 and AVX2: for
// every LeNet, AlexNet and VGG-11 layer this rule picked the faster layout or one within 4 %.
const ConvLayoutRow kConvLayout[] = {
    {ConvLayout::kBlocked, "blocked", "run.kernels.conv_layout = \"blocked\"",
     [](const ConvFacts& f) { return f.run.conv_layout == ConvLayoutChoice::kBlocked; }},
    {ConvLayout::kNhwc, "nhwc", "run.kernels.conv_layout = \"nhwc\"",
     [](const ConvFacts& f) { return f.run.conv_layout == ConvLayoutChoice::kNhwc; }},
    {ConvLayout::kBlocked, "blocked", "oneDNN's own layout (measured on x86-64 only)",
     [](const ConvFacts& f) { return !f.cpu.x86_64; }},
    {ConvLayout::kNhwc, "nhwc", "its channels are not whole blocks of the kernels'",
     [](const ConvFacts& f) { return pads(f.d, channel_block(f.cpu, f.avx2)); }},
    {ConvLayout::kBlocked, "blocked", "its channels are whole blocks",
     [](const ConvFacts&) { return true; }},
};

// The weight gradient on NHWC. One input channel (LeNet's conv1 on a grey image): oneDNN's
// direct kernels block over input channels and reach 22 % of the GEMM peak. Several input
// channels where oneDNN's blocks are 8 (its AVX2 kernels) and would pad the output channels:
// LeNet's conv2 (20 -> 50) ran at ~95 % of the GEMM peak against oneDNN's ~76 %; whole
// blocks were not measured against it, and on a Zen 4's AVX-512 it was no faster.
const ConvWeightsRow kConvWeights[] = {
    {ConvWeights::kOneChannel, "hpdl's one-channel kernel", "one input channel on NHWC",
     [](const ConvFacts& f) {
       return f.layout == ConvLayout::kNhwc && OneChannelWeightGradient::fits(f.d);
     }},
    {ConvWeights::kNhwc, "hpdl's NHWC kernel", "NHWC output channels that blocks of 8 would pad",
     [](const ConvFacts& f) {
       return f.cpu.x86_64 && f.layout == ConvLayout::kNhwc && NhwcWeightGradient::fits(f.d) &&
              channel_block(f.cpu, f.avx2) == 8 && f.d.out_c % 8 != 0;
     }},
    {ConvWeights::kOneDnn, "", "oneDNN's", [](const ConvFacts&) { return true; }},
};

struct PoolFacts {
  PoolDims d;
  KernelChoices run;
  bool plain() const { return d.in_block == 1 && d.out_block == 1; }
};
// Windows equal to their stride: hpdl's pools (cpu/max_pool.hpp), 4-5x faster than oneDNN
// 2.6's pooling on plain layouts, and on a convolution's channel blocks; overlapping windows
// (AlexNet's 3x3/2) on oneDNN's, which takes plain NCHW here.
const Candidate<PoolFacts, PoolKernel> kMaxPool[] = {
    {PoolKernel::kOneDnn, "oneDNN's pooling", "run.kernels.pool = \"onednn\"",
     [](const PoolFacts& f) { return f.run.pool == PoolChoice::kOneDnn && f.plain(); }},
    {PoolKernel::kHpdl, "hpdl's pool", "windows equal to their stride",
     [](const PoolFacts& f) { return cpu_max_pool_fits(f.d); }},
    {PoolKernel::kOneDnn, "oneDNN's pooling", "overlapping windows",
     [](const PoolFacts& f) { return f.plain(); }},
};

// A product over many rows (an LSTM's input and recurrent weights over all steps: 12800
// rows of 4H = 128 by 32 inputs) as x^T dy, the narrow x read transposed instead of the wide
// dy, then added into dw transposed: from memory 0.74 against 1.04 ms for 12700 x 128 x 32,
// 0.10 against 0.19 for 12800 x 128 x 9 (Zen 5, oneDNN 2.6). With few rows or a wide x,
// dy^T x (the transposed add is then not small, or the product no faster).
const Candidate<DenseDims, bool> kDenseWeights[] = {
    {true, "weight gradient as (x^T dy)^T", "many rows of a narrow input",
     [](const DenseDims& d) { return d.batch >= 4096 && d.out > d.in && d.in * d.out <= 65536; }},
    {false, "", "dy^T x", [](const DenseDims&) { return true; }},
};

}  // namespace

const CpuFacts& cpu_facts() {
  static const CpuFacts facts = [] {
    CpuFacts f;
#if defined(__x86_64__)
    f.x86_64 = true;
    f.amd_family = read_amd_family();
#endif
    f.avx512 = may_use(dnnl::cpu_isa::avx512_core);
    return f;
  }();
  return facts;
}

ConvPick choose_conv(const ConvDims& d, const KernelChoices& run, const CpuFacts& cpu) {
  ConvFacts f{d, run, cpu};
  const ConvIsaRow& isa = first_fit(kConvIsa, f, "convolution kernels");
  f.avx2 = isa.value == ConvIsa::kAvx2;
  const ConvLayoutRow& layout = first_fit(kConvLayout, f, "convolution layout");
  f.layout = layout.value;
  const ConvWeightsRow& weights = first_fit(kConvWeights, f, "convolution weight gradient");
  return {isa.value, layout.value, weights.value, isa.choice(), layout.choice(), weights.choice()};
}

PoolPick choose_max_pool(const PoolDims& d, const KernelChoices& run) {
  const auto& row = first_fit(kMaxPool, PoolFacts{d, run}, "max pool");
  return {row.value, row.choice()};
}

DensePick choose_dense(const DenseDims& d) {
  const auto& row = first_fit(kDenseWeights, d, "dense weight gradient");
  return {row.value, row.choice()};
}

}  // namespace hpdl::onednn
