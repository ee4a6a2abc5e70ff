// oneDNN convolution: the activations' layout per layer (blocked or NHWC, conv_layout's
// rule or run.kernels.conv_layout), oneDNN's kernels for it (its first choice, or its AVX2 ones on
// a Zen 4: avx2_kernels' rule or run.kernels.conv_isa), f32 or bf16 inputs (ConvDims::precision),
// reorders to and from the model's plain NCHW/OIHW buffers. Building blocks in
// onednn_step.hpp.
#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "../cpu/nhwc_weight_gradient.hpp"
#include "../cpu/one_channel_conv.hpp"
#include "primitive.hpp"

namespace hpdl::onednn {
namespace {

// Whether channel blocks of `block` pad d's output channels or, past a first layer's 1-4,
// its input channels.
bool pads(const ConvDims& d, int64_t block) {
  return d.out_c % block != 0 || (d.in_c > 4 && d.in_c % block != 0);
}

#if defined(__x86_64__)
// The CPU family of an AMD CPU (25: Zen 3 and Zen 4, 26: Zen 5), 0 for any other.
unsigned amd_family() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  const bool amd = __get_cpuid(0, &a, &b, &c, &d) && b == 0x68747541 && d == 0x69746e65 &&
                   c == 0x444d4163;  // "AuthenticAMD"
  if (!amd || !__get_cpuid(1, &a, &b, &c, &d)) return 0;
  const unsigned base = (a >> 8) & 0xf;
  return base == 0xf ? base + ((a >> 20) & 0xff) : base;
}
#endif

// Whether an f32 convolution takes oneDNN's AVX2 kernels although its AVX-512 ones would
// run: on AMD's Zen 4 (family 25 with AVX-512) the AVX-512 instructions are split over
// 256-bit units, and where blocks of 16 channels would pad d's channels the AVX2 kernels
// (blocks of 8) ran faster: LeNet's convolutions 1.08-1.57x, its training 1.02-1.06x; on
// whole blocks (VGG-11) the AVX-512 ones were faster (docs/results.md). A rule on the CPU
// and the shape, not a timing, like the layout's (Zen 3 has no AVX-512; elsewhere oneDNN's
// first choice). `forced` ("" = the rule) is run.kernels.conv_isa's value.
bool avx2_kernels(const ConvDims& d, const std::string& forced) {
#if !defined(__x86_64__)
  (void)d, (void)forced;
  return false;  // oneDNN's AVX2 kernels are x86-64's
#else
  if (d.precision != Precision::kF32 || forced == "native") return false;
  if (forced == "avx2") return true;
  return may_use(dnnl::cpu_isa::avx512_core) && amd_family() == 25 && pads(d, 16);
#endif
}

// oneDNN's channel block on x86-64 for the kernels a convolution takes: 16 with AVX-512, 8
// below.
int64_t channel_block(bool avx2) { return !avx2 && may_use(dnnl::cpu_isa::avx512_core) ? 16 : 8; }

// pd moved along oneDNN's list of implementations to its first AVX2 kernel ("jit:avx2",
// "brg...:avx2"), or, where the list has none, oneDNN's first choice again (made anew).
// make's descriptor must outlive pd (oneDNN 2.x's iterator points to it).
template <typename PD, typename Make>
PD on_avx2(bool avx2, Make make) {
  PD pd = make();
  if (!avx2) return pd;
  do {
    const std::string impl = pd.impl_info_str();
    if (impl.find("avx2") != std::string::npos) return pd;
  } while (pd.next_impl());
  return make();
}

// The activations' layout: oneDNN's blocked one (channels in blocks of 16 on AVX-512, 8
// below; format_tag::any) or NHWC (channels last, no blocks). Blocked kernels pad the
// channels to whole blocks, so a layer whose output channels (or input channels beyond a
// first layer's 1-4) are not whole blocks wastes that share of its work: NHWC (oneDNN's
// brgemm convolution on AVX-512) takes those. Measured with run.kernels.conv_layout forcing either
// on the presets' shapes on AVX-512 and AVX2 (docs/results.md): for every LeNet, AlexNet and
// VGG-11 layer this rule picked the faster layout or one within 4 % of it. A rule, not a
// timing at set-up, so that every run of a config computes the same sums (a resumed run
// equals an uninterrupted one). `forced` ("" = the rule) is run.kernels.conv_layout's value.
std::string conv_layout(const ConvDims& d, const std::string& forced, bool avx2) {
  if (!forced.empty()) return forced;
#if !defined(__x86_64__)
  (void)d, (void)avx2;
  return "blocked";  // measured on x86-64 only; elsewhere oneDNN's own choice (format any)
#endif
  return pads(d, channel_block(avx2)) ? "nhwc" : "blocked";
}

// Whether hpdl's NHWC weight gradient takes d's place of oneDNN's: f32 over several input
// channels where oneDNN's blocks are 8 (its AVX2 kernels) and would pad the output channels.
// There LeNet's conv2 (20 -> 50 channels, 56 in blocks) ran at ~95 % of the GEMM peak
// against oneDNN's ~76 % (docs/results.md); whole blocks were not measured against it, and
// on a Zen 4's AVX-512 (blocks of 16) it was no faster than oneDNN's kernel (6.5-6.7 against
// 6.6-6.8 ms). A rule, like the layout's.
bool hpdl_nhwc_weights(const ConvDims& d, bool avx2) {
#if !defined(__x86_64__)
  (void)d, (void)avx2;
  return false;
#else
  return NhwcWeightGradient::fits(d) && channel_block(avx2) == 8 && d.out_c % 8 != 0;
#endif
}

// The channel block (kernels.hpp) of an f32 activation desc of dims [N, C, H, W]: C for
// NHWC, 16 or 8 for oneDNN's blocked layouts, 1 for plain NCHW and for anything else.
int64_t block_of(const memory::desc& md, const memory::dims& dims) {
  const int64_t C = dims[1];
  for (const auto& [t, b] : {std::pair{tag::nhwc, C}, {tag::nChw16c, 16}, {tag::nChw8c, 8}})
    if (b > 1 && C % b == 0 && md == memory::desc(dims, dt::f32, t)) return b;
  return 1;
}

// The block all three passes use for one side (x/dx or y/dy), 1 when they differ.
int64_t common_block(const memory::desc& a, const memory::desc& b, const memory::desc& c,
                     const memory::dims& dims) {
  return a == b && b == c ? block_of(a, dims) : 1;
}

// Convolution in the layout conv_layout picks (oneDNN's blocked or NHWC), with reorders to
// and from the plain NCHW/OIHW buffers of the model. Either is several times faster than
// the GEMM path oneDNN takes for plain NCHW; x and dy are converted once per step and
// shared between the passes that read them.
class DnnlConv final : public ConvKernel {
 public:
  DnnlConv(Engine& be, const ConvDims& d, const ConvForced& forced, bool keep_layouts)
      : avx2_(avx2_kernels(d, forced.isa)),
        layout_(conv_layout(d, forced.layout, avx2_)),
        dw_scratch_(d.out_c * d.in_c * d.kernel * d.kernel),
        db_scratch_(d.out_c) {
    const memory::dim N = d.batch, C = d.in_c, H = d.in_h, W = d.in_w, O = d.out_c, K = d.kernel,
                      OH = d.out_h(), OW = d.out_w();
    // What the passes read (x, w, dy) is in in_t, what they write (y, dx, dw, db) in f32.
    const dt in_t = d.precision == Precision::kBf16 ? dt::bf16 : dt::f32;
    build(be, "conv2d", [&] {
      const auto x = plain({N, C, H, W}, tag::nchw), y = plain({N, O, OH, OW}, tag::nchw);
      const auto w = plain({O, C, K, K}, tag::oihw), b = plain({O}, tag::x);
      const tag act = layout_ == "nhwc" ? tag::nhwc : tag::any;
      const auto xa = memory::desc({N, C, H, W}, in_t, act);
      const auto wa = memory::desc({O, C, K, K}, in_t, tag::any);
      const auto dya = memory::desc({N, O, OH, OW}, in_t, act);
      const auto ya = plain({N, O, OH, OW}, act), dxa = plain({N, C, H, W}, act);
      const auto dwa = plain({O, C, K, K}, tag::any);
      const memory::dims stride{d.stride, d.stride}, pad{d.pad, d.pad};
      const auto attr = user_scratchpad();
      const auto algo = dnnl::algorithm::convolution_direct;
      // The operation descriptors outlive the walks along their implementations: oneDNN
      // 2.x's iterator keeps a pointer to its descriptor.
      const dnnl::convolution_forward::desc fd(dnnl::prop_kind::forward_training, algo, xa, wa, b,
                                               ya, stride, pad, pad);
      const dnnl::convolution_backward_data::desc dd(algo, dxa, wa, dya, stride, pad, pad);
      const dnnl::convolution_backward_weights::desc wd(algo, xa, dwa, b, dya, stride, pad, pad);
      using Fwd = dnnl::convolution_forward::primitive_desc;
      using Data = dnnl::convolution_backward_data::primitive_desc;
      using Weights = dnnl::convolution_backward_weights::primitive_desc;
      const Fwd fpd = on_avx2<Fwd>(avx2_, [&] { return Fwd(fd, attr, be.engine); });
      const Data dpd = on_avx2<Data>(avx2_, [&] { return Data(dd, attr, be.engine, fpd); });
      const Weights wpd =
          on_avx2<Weights>(avx2_, [&] { return Weights(wd, attr, be.engine, fpd); });
      fwd_ = make_primitive<dnnl::convolution_forward>(be, fpd,
                                                       {{DNNL_ARG_SRC, fpd.src_desc()},
                                                        {DNNL_ARG_WEIGHTS, fpd.weights_desc()},
                                                        {DNNL_ARG_BIAS, b},
                                                        {DNNL_ARG_DST, fpd.dst_desc()}});
      bwd_data_ = make_primitive<dnnl::convolution_backward_data>(
          be, dpd,
          {{DNNL_ARG_DIFF_DST, dpd.diff_dst_desc()},
           {DNNL_ARG_WEIGHTS, dpd.weights_desc()},
           {DNNL_ARG_DIFF_SRC, dpd.diff_src_desc()}});
      // NHWC: the weight gradient by hpdl's kernel for one input channel, and on AVX2 for
      // several (oneDNN's primitive descriptor stays: it names the NHWC layout x and dy are
      // converted to).
      if (layout_ == "nhwc" && OneChannelWeightGradient::fits(d))
        one_channel_ = std::make_unique<OneChannelWeightGradient>(d, be.kernel_threads);
      else if (layout_ == "nhwc" && hpdl_nhwc_weights(d, avx2_))
        nhwc_weights_ = std::make_unique<NhwcWeightGradient>(d, be.kernel_threads);
      else
        bwd_w_ = make_primitive<dnnl::convolution_backward_weights>(
            be, wpd,
            {{DNNL_ARG_SRC, wpd.src_desc()},
             {DNNL_ARG_DIFF_DST, wpd.diff_dst_desc()},
             {DNNL_ARG_DIFF_WEIGHTS, wpd.diff_weights_desc()},
             {DNNL_ARG_DIFF_BIAS, b}});
      x_fwd_ = Relayout(be, x, fpd.src_desc(), false);
      w_fwd_ = Relayout(be, w, fpd.weights_desc(), false);
      y_fwd_ = Relayout(be, y, fpd.dst_desc(), true);
      dy_data_ = Relayout(be, y, dpd.diff_dst_desc(), false);
      w_data_ = Relayout(be, w, dpd.weights_desc(), false);
      dx_data_ = Relayout(be, x, dpd.diff_src_desc(), true);
      in_block_ = common_block(fpd.src_desc(), dpd.diff_src_desc(), wpd.src_desc(), {N, C, H, W});
      out_block_ =
          common_block(fpd.dst_desc(), dpd.diff_dst_desc(), wpd.diff_dst_desc(), {N, O, OH, OW});
      if (!keep_layouts) in_block_ = out_block_ = 1;
      x_shared_ = fpd.src_desc() == wpd.src_desc();
      dy_shared_ = dpd.diff_dst_desc() == wpd.diff_dst_desc();
      x_w_ = Relayout(be, x, wpd.src_desc(), false);
      dy_w_ = Relayout(be, y, wpd.diff_dst_desc(), false);
      dw_w_ = Relayout(be, w, wpd.diff_weights_desc(), true);
      choice_ = layout_ + (forced.layout.empty() ? "" : " as run.kernels.conv_layout says") +
                (forced.isa.empty() ? "" : ", kernels as run.kernels.conv_isa says") +
                " (forward " + fpd.impl_info_str() + ", backward data " + dpd.impl_info_str() +
                ", weights " +
                (one_channel_    ? "hpdl's one-channel kernel"
                 : nhwc_weights_ ? "hpdl's NHWC kernel"
                                 : wpd.impl_info_str()) +
                ")";
      return 0;
    });
  }

  void forward(const float* x, const float* w, const float* b, float* y) override {
    fwd_.run({{DNNL_ARG_SRC, native_in_ ? x : x_fwd_.in(x)},
              {DNNL_ARG_WEIGHTS, w_fwd_.in(w)},
              {DNNL_ARG_BIAS, b},
              {DNNL_ARG_DST, native_out_ ? y : y_fwd_.target(y)}});
    if (!native_out_) y_fwd_.finish(y);
  }

  void backward(const float* x, const float* w, const float* dy, float* dx, float* dw,
                float* db) override {
    backward_between(x, w, dy, dx, dw, db, {});
  }

  void backward_between(const float* x, const float* w, const float* dy, float* dx, float* dw,
                        float* db, const std::function<void()>& between) override {
    const void* dy_blocked = nullptr;
    if (dx) {
      dy_blocked = native_out_ ? dy : dy_data_.in(dy);
      bwd_data_.run({{DNNL_ARG_DIFF_DST, dy_blocked},
                     {DNNL_ARG_WEIGHTS, w_data_.in(w)},
                     {DNNL_ARG_DIFF_SRC, native_in_ ? dx : dx_data_.target(dx)}});
      if (!native_in_) dx_data_.finish(dx);
      if (between) between();
    }
    // The forward of this step converted x already; dy too if backward-data ran. In the
    // native blocks they were never converted.
    const void* dyw = native_out_ ? dy : dy_shared_ && dy_blocked ? dy_blocked : dy_w_.in(dy);
    if (one_channel_) {  // x [N, 1, H, W] is its own NHWC; dyw is NHWC
      one_channel_->accumulate(x, static_cast<const float*>(dyw), dw, db);
      return;
    }
    const void* xw = native_in_ ? x : x_shared_ ? x_fwd_.last(x) : x_w_.in(x);
    if (nhwc_weights_) {  // xw and dyw are NHWC
      nhwc_weights_->accumulate(static_cast<const float*>(xw), static_cast<const float*>(dyw), dw,
                                db);
      return;
    }
    // oneDNN overwrites weight gradients; the kernel contract accumulates.
    bwd_w_.run({{DNNL_ARG_SRC, xw},
                {DNNL_ARG_DIFF_DST, dyw},
                {DNNL_ARG_DIFF_WEIGHTS, dw_w_.target(dw_scratch_.data())},
                {DNNL_ARG_DIFF_BIAS, db_scratch_.data()}});
    dw_w_.finish(dw_scratch_.data());
    const int64_t nw = static_cast<int64_t>(dw_scratch_.size());
#pragma omp parallel for simd if (parallel : nw > 16384)
    for (int64_t i = 0; i < nw; ++i) dw[i] += dw_scratch_[i];
    for (size_t o = 0; o < db_scratch_.size(); ++o) db[o] += db_scratch_[o];
  }

  std::string choice() const override {
    const char* kept[] = {"", ", its input kept in that layout", ", its output kept in that layout",
                          ", its input and output kept in that layout"};
    return choice_ + kept[int(native_in_) + 2 * int(native_out_)];
  }
  int64_t native_in_block() const override { return in_block_; }
  int64_t native_out_block() const override { return out_block_; }
  void use_native(bool in, bool out) override {
    HPDL_REQUIRE((!in || in_block_ != 1) && (!out || out_block_ != 1),
                 "convolution: no native layout to keep");
    native_in_ = in, native_out_ = out;
  }

 private:
  bool avx2_;  // oneDNN's AVX2 kernels (avx2_kernels)
  std::string layout_, choice_;
  int64_t in_block_ = 1, out_block_ = 1;
  bool native_in_ = false, native_out_ = false;
  Primitive fwd_, bwd_data_, bwd_w_;
  Relayout x_fwd_, w_fwd_, y_fwd_, dy_data_, w_data_, dx_data_, x_w_, dy_w_, dw_w_;
  bool x_shared_ = false, dy_shared_ = false;
  AlignedFloats dw_scratch_, db_scratch_;
  std::unique_ptr<OneChannelWeightGradient> one_channel_;  // set: it takes bwd_w_'s place
  std::unique_ptr<NhwcWeightGradient> nhwc_weights_;       // set: it takes bwd_w_'s place
};

}  // namespace

std::unique_ptr<ConvKernel> make_conv(Engine& be, const ConvDims& d, const ConvForced& forced,
                                      bool keep_layouts) {
  return std::make_unique<DnnlConv>(be, d, forced, keep_layouts);
}

}  // namespace hpdl::onednn
