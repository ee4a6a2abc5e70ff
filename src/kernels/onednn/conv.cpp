// oneDNN convolution in what choices.cpp's tables chose for the layer (the activations'
// layout, blocked or NHWC; oneDNN's first-choice or AVX2 kernels; oneDNN's weight gradient
// or one of hpdl's), f32 or bf16 inputs (ConvDims::precision), reorders to and from the
// model's plain NCHW/OIHW buffers. Building blocks in primitive.hpp.
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "../cpu/nhwc_weight_gradient.hpp"
#include "../cpu/one_channel_conv.hpp"
#include "choices.hpp"
#include "primitive.hpp"

namespace hpdl::onednn {
namespace {

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

// Convolution in the layout its table picked (oneDNN's blocked or NHWC), with reorders to
// and from the plain NCHW/OIHW buffers of the model. Either is several times faster than
// the GEMM path oneDNN takes for plain NCHW; x and dy are converted once per step and
// shared between the passes that read them.
class DnnlConv final : public ConvKernel {
 public:
  DnnlConv(Engine& be, const ConvDims& d, const ConvPick& pick, bool keep_layouts)
      : avx2_(pick.isa == ConvIsa::kAvx2),
        nhwc_(pick.layout == ConvLayout::kNhwc),
        dw_scratch_(d.out_c * d.in_c * d.kernel * d.kernel),
        db_scratch_(d.out_c) {
    const memory::dim N = d.batch, C = d.in_c, H = d.in_h, W = d.in_w, O = d.out_c, K = d.kernel,
                      OH = d.out_h(), OW = d.out_w();
    // What the passes read (x, w, dy) is in in_t, what they write (y, dx, dw, db) in f32.
    const dt in_t = d.precision == Precision::kBf16 ? dt::bf16 : dt::f32;
    build(be, "conv2d", [&] {
      const auto x = plain({N, C, H, W}, tag::nchw), y = plain({N, O, OH, OW}, tag::nchw);
      const auto w = plain({O, C, K, K}, tag::oihw), b = plain({O}, tag::x);
      const tag act = nhwc_ ? tag::nhwc : tag::any;
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
      // hpdl's weight gradients keep oneDNN's primitive descriptor: it names the NHWC layout
      // x and dy are converted to.
      if (pick.weights == ConvWeights::kOneChannel)
        one_channel_ = std::make_unique<OneChannelWeightGradient>(d, be.kernel_threads);
      else if (pick.weights == ConvWeights::kNhwc)
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
      choice_.kernel =
          pick.layout_choice.kernel + " (forward " + fpd.impl_info_str() + ", backward data " +
          dpd.impl_info_str() + ", weights " +
          (pick.weights_choice.kernel.empty() ? wpd.impl_info_str() : pick.weights_choice.kernel) +
          ")";
      choice_.reason = "layout: " + pick.layout_choice.reason +
                       "; kernels: " + pick.isa_choice.reason +
                       "; weight gradient: " + pick.weights_choice.reason;
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

  KernelChoice choice() const override {
    const char* kept[] = {"", ", its input kept in that layout", ", its output kept in that layout",
                          ", its input and output kept in that layout"};
    return {choice_.kernel + kept[int(native_in_) + 2 * int(native_out_)], choice_.reason};
  }
  NativeBlocks native_blocks() const override { return {in_block_, out_block_}; }
  void use_native(bool in, bool out) override {
    HPDL_REQUIRE((!in || in_block_ != 1) && (!out || out_block_ != 1),
                 "convolution: no native layout to keep");
    native_in_ = in, native_out_ = out;
  }

 private:
  bool avx2_;  // oneDNN's AVX2 kernels
  bool nhwc_;  // the activations in NHWC, else oneDNN's blocked layout
  KernelChoice choice_;
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

std::unique_ptr<ConvKernel> make_conv(Engine& be, const ConvDims& d, const KernelChoices& run,
                                      bool keep_layouts) {
  return std::make_unique<DnnlConv>(be, d, choose_conv(d, run, cpu_facts()), keep_layouts);
}

}  // namespace hpdl::onednn
