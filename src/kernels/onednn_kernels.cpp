// oneDNN (CPU) kernels. Engine and stream are created once per factory; every primitive
// descriptor and primitive is built in the kernel's constructor (with a user-owned
// scratchpad), and forward/backward only point memory objects at the caller's buffers
// and execute. Dense layers use matmul so the weight gradient can accumulate through a
// sum post-op; convolution weight gradients go through a small scratch buffer and an add.
// N batch, I/O dense inputs/outputs, C/O conv in/out channels, H/W height/width, K kernel.
#include <cstdlib>
#include <dnnl.hpp>
#include <unordered_map>
#include <vector>

#include "blas_gemm.hpp"
#include "element_math.hpp"
#include "hpdl/core/error.hpp"
#include "hpdl/kernels/kernels.hpp"
#include "loop_kernels.hpp"
#include "onednn_step.hpp"
#include "tiled_max_pool.hpp"

namespace hpdl::onednn {
namespace {

class DnnlDense final : public DenseKernel {
 public:
  DnnlDense(Backend& be, const DenseDims& d) : d_(d) {
    const memory::dim N = d.batch, I = d.in, O = d.out;
    build("dense", [&] {
      const auto x = plain({N, I}, tag::ab), y = plain({N, O}, tag::ab);
      const auto wt = memory::desc({I, O}, dt::f32, memory::dims{1, I});  // w[O,I] read as w^T
      const auto bias = plain({1, O}, tag::ab);
      const auto w = plain({O, I}, tag::ab);
      const auto dyt = memory::desc({O, N}, dt::f32, memory::dims{1, O});  // dy[N,O] as dy^T
      auto attr = user_scratchpad();
      fwd_ = make_step<dnnl::matmul>(
          be, dnnl::matmul::primitive_desc({x, wt, bias, y}, attr, be.engine),
          {{DNNL_ARG_SRC, x}, {DNNL_ARG_WEIGHTS, wt}, {DNNL_ARG_BIAS, bias}, {DNNL_ARG_DST, y}});
      bwd_data_ =
          make_step<dnnl::matmul>(be, dnnl::matmul::primitive_desc({y, w, x}, attr, be.engine),
                                  {{DNNL_ARG_SRC, y}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, x}});
      // dw += dy^T x through a sum post-op (measured faster than the inner-product
      // backward-weights primitive plus an add, 0.75 vs 1.2 ms for the LSTM's 12800x16x64).
      dnnl::post_ops accumulate;
      accumulate.append_sum(1.0f);
      auto acc_attr = user_scratchpad();
      acc_attr.set_post_ops(accumulate);
      bwd_w_ = make_step<dnnl::matmul>(
          be, dnnl::matmul::primitive_desc({dyt, x, w}, acc_attr, be.engine),
          {{DNNL_ARG_SRC, dyt}, {DNNL_ARG_WEIGHTS, x}, {DNNL_ARG_DST, w}});
      return 0;
    });
  }

  void forward(const float* x, const float* w, const float* b, float* y) override {
    fwd_.run({{DNNL_ARG_SRC, x}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_BIAS, b}, {DNNL_ARG_DST, y}});
  }

  void backward(const float* x, const float* w, const float* dy, float* dx, float* dw,
                float* db) override {
    if (dx) bwd_data_.run({{DNNL_ARG_SRC, dy}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, dx}});
    if (dw) bwd_w_.run({{DNNL_ARG_SRC, dy}, {DNNL_ARG_WEIGHTS, x}, {DNNL_ARG_DST, dw}});
    if (!db) return;
    // db[o] += sum_n dy[n, o], row by row: contiguous and vectorised across o (a column
    // walk with stride O was 4.7 ms of a 6.6 ms step for the LSTM's 12800 x 64).
    const int64_t N = d_.batch, O = d_.out;
    float* __restrict acc = db;
    for (int64_t n = 0; n < N; ++n) {
      const float* __restrict row = dy + n * O;
#pragma omp simd
      for (int64_t o = 0; o < O; ++o) acc[o] += row[o];
    }
  }

 private:
  DenseDims d_;
  Step fwd_, bwd_data_, bwd_w_;
};

// A tensor kept in the caller's plain layout that a primitive wants in its own (blocked)
// layout: converts through a cached reorder and a private buffer only when they differ.
class Relayout {
 public:
  Relayout() = default;
  Relayout(Backend& be, const memory::desc& plain, const memory::desc& wanted, bool to_plain)
      : same_(plain == wanted) {
    if (same_) return;
    buffer_.resize(wanted.get_size() / sizeof(float) + 1);
    const memory::desc& from = to_plain ? wanted : plain;
    const memory::desc& to = to_plain ? plain : wanted;
    reorder_ =
        Step(be, dnnl::reorder(dnnl::reorder::primitive_desc(be.engine, from, be.engine, to)),
             memory::desc(), {{DNNL_ARG_FROM, from}, {DNNL_ARG_TO, to}});
  }
  // Input side: the data of `plain` in the wanted layout.
  const void* in(const void* plain) {
    if (same_) return plain;
    reorder_.run({{DNNL_ARG_FROM, plain}, {DNNL_ARG_TO, buffer_.data()}});
    return buffer_.data();
  }
  // The data last converted by in() (valid until the next in()).
  const void* last(const void* plain) const { return same_ ? plain : buffer_.data(); }
  // Output side: where the primitive writes, then finish() copies it out to `plain`.
  void* target(void* plain) { return same_ ? plain : buffer_.data(); }
  void finish(void* plain) {
    if (!same_) reorder_.run({{DNNL_ARG_FROM, buffer_.data()}, {DNNL_ARG_TO, plain}});
  }

 private:
  bool same_ = true;
  Step reorder_;
  std::vector<float> buffer_;
};

// Convolution in the layouts oneDNN prefers (format_tag::any, blocked on AVX-512), with
// reorders to and from the plain NCHW/OIHW buffers of the model. Blocked direct kernels
// are several times faster than the GEMM path oneDNN takes for plain layouts; x and dy are
// converted once per step and shared between the passes that read them.
class DnnlConv final : public ConvKernel {
 public:
  DnnlConv(Backend& be, const ConvDims& d)
      : dw_scratch_(d.out_c * d.in_c * d.kernel * d.kernel), db_scratch_(d.out_c) {
    const memory::dim N = d.batch, C = d.in_c, H = d.in_h, W = d.in_w, O = d.out_c, K = d.kernel,
                      OH = d.out_h(), OW = d.out_w();
    build("conv2d", [&] {
      const auto x = plain({N, C, H, W}, tag::nchw), y = plain({N, O, OH, OW}, tag::nchw);
      const auto w = plain({O, C, K, K}, tag::oihw), b = plain({O}, tag::x);
      const auto xa = plain({N, C, H, W}, tag::any), ya = plain({N, O, OH, OW}, tag::any);
      const auto wa = plain({O, C, K, K}, tag::any);
      const memory::dims stride{d.stride, d.stride}, pad{d.pad, d.pad};
      const auto attr = user_scratchpad();
      const auto algo = dnnl::algorithm::convolution_direct;
      dnnl::convolution_forward::primitive_desc fpd(
          {dnnl::prop_kind::forward_training, algo, xa, wa, b, ya, stride, pad, pad}, attr,
          be.engine);
      dnnl::convolution_backward_data::primitive_desc dpd({algo, xa, wa, ya, stride, pad, pad},
                                                          attr, be.engine, fpd);
      dnnl::convolution_backward_weights::primitive_desc wpd(
          {algo, xa, wa, b, ya, stride, pad, pad}, attr, be.engine, fpd);
      fwd_ = make_step<dnnl::convolution_forward>(be, fpd,
                                                  {{DNNL_ARG_SRC, fpd.src_desc()},
                                                   {DNNL_ARG_WEIGHTS, fpd.weights_desc()},
                                                   {DNNL_ARG_BIAS, b},
                                                   {DNNL_ARG_DST, fpd.dst_desc()}});
      bwd_data_ =
          make_step<dnnl::convolution_backward_data>(be, dpd,
                                                     {{DNNL_ARG_DIFF_DST, dpd.diff_dst_desc()},
                                                      {DNNL_ARG_WEIGHTS, dpd.weights_desc()},
                                                      {DNNL_ARG_DIFF_SRC, dpd.diff_src_desc()}});
      bwd_w_ = make_step<dnnl::convolution_backward_weights>(
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
      x_shared_ = fpd.src_desc() == wpd.src_desc();
      dy_shared_ = dpd.diff_dst_desc() == wpd.diff_dst_desc();
      x_w_ = Relayout(be, x, wpd.src_desc(), false);
      dy_w_ = Relayout(be, y, wpd.diff_dst_desc(), false);
      dw_w_ = Relayout(be, w, wpd.diff_weights_desc(), true);
      return 0;
    });
  }

  void forward(const float* x, const float* w, const float* b, float* y) override {
    fwd_.run({{DNNL_ARG_SRC, x_fwd_.in(x)},
              {DNNL_ARG_WEIGHTS, w_fwd_.in(w)},
              {DNNL_ARG_BIAS, b},
              {DNNL_ARG_DST, y_fwd_.target(y)}});
    y_fwd_.finish(y);
  }

  void backward(const float* x, const float* w, const float* dy, float* dx, float* dw,
                float* db) override {
    const void* dy_blocked = nullptr;
    if (dx) {
      dy_blocked = dy_data_.in(dy);
      bwd_data_.run({{DNNL_ARG_DIFF_DST, dy_blocked},
                     {DNNL_ARG_WEIGHTS, w_data_.in(w)},
                     {DNNL_ARG_DIFF_SRC, dx_data_.target(dx)}});
      dx_data_.finish(dx);
    }
    // The forward of this step converted x already; dy too if backward-data ran.
    const void* xw = x_shared_ ? x_fwd_.last(x) : x_w_.in(x);
    const void* dyw = dy_shared_ && dy_blocked ? dy_blocked : dy_w_.in(dy);
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

 private:
  Step fwd_, bwd_data_, bwd_w_;
  Relayout x_fwd_, w_fwd_, y_fwd_, dy_data_, w_data_, dx_data_, x_w_, dy_w_, dw_w_;
  bool x_shared_ = false, dy_shared_ = false;
  std::vector<float> dw_scratch_, db_scratch_;
};

class DnnlMaxPool final : public MaxPoolKernel {
 public:
  DnnlMaxPool(Backend& be, const PoolDims& d) {
    const memory::dim N = d.batch, C = d.channels;
    build("max_pool", [&] {
      const auto x = plain({N, C, d.in_h, d.in_w}, tag::nchw);
      const auto y = plain({N, C, d.out_h(), d.out_w()}, tag::nchw);
      const memory::dims stride{d.stride, d.stride}, kernel{d.kernel, d.kernel}, pad{0, 0};
      const auto attr = user_scratchpad();
      const auto algo = dnnl::algorithm::pooling_max;
      dnnl::pooling_forward::primitive_desc fpd(
          {dnnl::prop_kind::forward_training, algo, x, y, stride, kernel, pad, pad}, attr,
          be.engine);
      const memory::desc ws = fpd.workspace_desc();
      workspace_.resize(ws.get_size() / sizeof(float) + 1);
      fwd_ = make_step<dnnl::pooling_forward>(
          be, fpd, {{DNNL_ARG_SRC, x}, {DNNL_ARG_DST, y}, {DNNL_ARG_WORKSPACE, ws}});
      dnnl::pooling_backward::primitive_desc bpd({algo, x, y, stride, kernel, pad, pad}, attr,
                                                 be.engine, fpd);
      bwd_ = make_step<dnnl::pooling_backward>(
          be, bpd, {{DNNL_ARG_DIFF_DST, y}, {DNNL_ARG_DIFF_SRC, x}, {DNNL_ARG_WORKSPACE, ws}});
      return 0;
    });
  }
  void forward(const float* x, float* y) override {
    fwd_.run({{DNNL_ARG_SRC, x}, {DNNL_ARG_DST, y}, {DNNL_ARG_WORKSPACE, workspace_.data()}});
  }
  void backward(const float* dy, float* dx) override {
    bwd_.run({{DNNL_ARG_DIFF_DST, dy},
              {DNNL_ARG_DIFF_SRC, dx},
              {DNNL_ARG_WORKSPACE, workspace_.data()}});
  }

 private:
  Step fwd_, bwd_;
  std::vector<float> workspace_;  // argmax positions written by forward, read by backward
};

class DnnlActivation final : public ActivationKernel {
 public:
  DnnlActivation(Backend& be, Activation a, int64_t n) {
    // tanh and sigmoid differentiate from their output; ReLU from its input.
    const auto algo = a == Activation::kRelu   ? dnnl::algorithm::eltwise_relu
                      : a == Activation::kTanh ? dnnl::algorithm::eltwise_tanh_use_dst_for_bwd
                                               : dnnl::algorithm::eltwise_logistic_use_dst_for_bwd;
    uses_dst_ = a != Activation::kRelu;
    build("activation", [&] {
      const auto md = plain({n}, tag::x);
      const auto attr = user_scratchpad();
      dnnl::eltwise_forward::primitive_desc fpd(
          {dnnl::prop_kind::forward_training, algo, md, 0.f, 0.f}, attr, be.engine);
      fwd_ = make_step<dnnl::eltwise_forward>(be, fpd, {{DNNL_ARG_SRC, md}, {DNNL_ARG_DST, md}});
      dnnl::eltwise_backward::primitive_desc bpd({algo, md, md, 0.f, 0.f}, attr, be.engine, fpd);
      bwd_ = make_step<dnnl::eltwise_backward>(be, bpd,
                                               {{uses_dst_ ? DNNL_ARG_DST : DNNL_ARG_SRC, md},
                                                {DNNL_ARG_DIFF_DST, md},
                                                {DNNL_ARG_DIFF_SRC, md}});
      return 0;
    });
  }
  void forward(const float* x, float* y) override {
    fwd_.run({{DNNL_ARG_SRC, x}, {DNNL_ARG_DST, y}});
  }
  void backward(const float* x, const float* y, const float* dy, float* dx) override {
    bwd_.run({{uses_dst_ ? DNNL_ARG_DST : DNNL_ARG_SRC, uses_dst_ ? y : x},
              {DNNL_ARG_DIFF_DST, dy},
              {DNNL_ARG_DIFF_SRC, dx}});
  }

 private:
  bool uses_dst_ = false;
  Step fwd_, bwd_;
};

// oneDNN primitives; the loss, dropout, LSTM cell, ScalarNorm and vector operations are
// OpenMP loops (LoopKernels): oneDNN has no primitive that fits them. Dense and conv go
// through OpenBLAS instead when HPDL_GEMM=blas (see blas_gemm.hpp).
class OneDnnKernels final : public LoopKernels {
 public:
  OneDnnKernels()
      : LoopKernels(true),
        be_(build("engine", [] { return std::make_unique<Backend>(); })),
        blas_(use_blas_gemm()) {}
  std::string name() const override { return "onednn"; }
  std::unique_ptr<DenseKernel> dense(const DenseDims& d) override {
#ifdef HPDL_HAVE_BLAS
    if (blas_) return make_blas_dense(d);
#endif
    return std::make_unique<DnnlDense>(*be_, d);
  }
  std::unique_ptr<ConvKernel> conv(const ConvDims& d) override {
#ifdef HPDL_HAVE_BLAS
    if (blas_) return make_blas_conv(d);
#endif
    return std::make_unique<DnnlConv>(*be_, d);
  }
  std::unique_ptr<MaxPoolKernel> max_pool(const PoolDims& d) override {
    if (!std::getenv("HPDL_ONEDNN_POOL"))
      if (auto tiled = make_tiled_max_pool(d)) return tiled;  // see tiled_max_pool.hpp
    return std::make_unique<DnnlMaxPool>(*be_, d);
  }
  std::unique_ptr<ActivationKernel> activation(Activation a, int64_t n) override {
    return std::make_unique<DnnlActivation>(*be_, a, n);
  }
  std::unique_ptr<BatchNormKernel> batch_norm(const BatchNormDims& d) override {
    return make_batch_norm(*be_, d);
  }

 private:
  std::unique_ptr<Backend> be_;  // kernels keep a pointer: its address must not move
  bool blas_;
};

}  // namespace
}  // namespace hpdl::onednn

namespace hpdl {

bool use_blas_gemm() {
  const char* env = std::getenv("HPDL_GEMM");
  const std::string want = env ? env : "";
#ifdef HPDL_HAVE_BLAS
  constexpr bool built = true;
#else
  constexpr bool built = false;
#endif
  if (want.empty()) return false;
  if (want == "onednn") return false;
  if (want != "blas") throw Error("HPDL_GEMM = \"" + want + "\" is not one of: blas, onednn");
  if (!built)
    throw Error(
        "HPDL_GEMM = \"blas\": this hpdl was built without BLAS (install Debian's "
        "libopenblas-openmp-dev and configure again)");
  return true;
}

std::unique_ptr<KernelFactory> make_onednn_kernels() {
  return std::make_unique<onednn::OneDnnKernels>();
}

}  // namespace hpdl
