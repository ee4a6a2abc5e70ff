// oneDNN (CPU) kernels. Engine and stream are created once per factory; every primitive
// descriptor and primitive is built in the kernel's constructor (with a user-owned
// scratchpad), and forward/backward only point memory objects at the caller's buffers
// and execute. Dense layers use matmul so the weight gradient can accumulate through a
// sum post-op (over many rows: x^T dy added in transposed, as choices.cpp's dense table says);
// convolution is in conv.cpp; tanh and sigmoid are loops (loop_kernels.hpp). With
// Precision::kBf16 (checked here against the CPU) dense and conv read their inputs as bf16 and
// write f32. N batch, I/O dense inputs/outputs, C/O conv in/out channels, H/W height/width, K
// kernel.
#include <cstdlib>
#include <dnnl.hpp>
#include <unordered_map>
#include <vector>

#include "../blas/blas_gemm.hpp"
#include "../cpu/denormals.hpp"
#include "../cpu/loop_kernels.hpp"
#include "../cpu/max_pool.hpp"
#include "../cpu/recurrent_product.hpp"
#include "../element_math.hpp"
#include "choices.hpp"
#include "hpdl/core/error.hpp"
#include "hpdl/kernels/kernels.hpp"
#include "primitive.hpp"

namespace hpdl::onednn {
namespace {

class DnnlDense final : public DenseKernel {
 public:
  // In bf16, x, w and dy are rounded to bf16 on the way in (x_in_, w_in_, dy_in_; no-ops in
  // f32) and every product writes f32.
  DnnlDense(Engine& be, const DenseDims& d) : d_(d), pick_(choose_dense(d)) {
    const memory::dim N = d.batch, I = d.in, O = d.out;
    const dt in_t = d.precision == Precision::kBf16 ? dt::bf16 : dt::f32;
    build(be, "dense", [&] {
      const auto x = plain({N, I}, tag::ab), y = plain({N, O}, tag::ab);
      const auto w = plain({O, I}, tag::ab), bias = plain({1, O}, tag::ab);
      const auto xb = memory::desc({N, I}, in_t, tag::ab), wb = memory::desc({O, I}, in_t, tag::ab);
      const auto dyb = memory::desc({N, O}, in_t, tag::ab);
      const auto wt = memory::desc({I, O}, in_t, memory::dims{1, I});   // w[O,I] read as w^T
      const auto dyt = memory::desc({O, N}, in_t, memory::dims{1, O});  // dy[N,O] as dy^T
      auto attr = user_scratchpad();
      auto fwd_attr = user_scratchpad();
      if (d.relu) {  // the ReLU after the layer, on the product as it is written
        dnnl::post_ops relu;
        relu.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
        fwd_attr.set_post_ops(relu);
      }
      fwd_ = make_primitive<dnnl::matmul>(
          be, dnnl::matmul::primitive_desc({xb, wt, bias, y}, fwd_attr, be.engine),
          {{DNNL_ARG_SRC, xb}, {DNNL_ARG_WEIGHTS, wt}, {DNNL_ARG_BIAS, bias}, {DNNL_ARG_DST, y}});
      bwd_data_ = make_primitive<dnnl::matmul>(
          be, dnnl::matmul::primitive_desc({dyb, wb, x}, attr, be.engine),
          {{DNNL_ARG_SRC, dyb}, {DNNL_ARG_WEIGHTS, wb}, {DNNL_ARG_DST, x}});
      // dw += dy^T x through a sum post-op (measured faster than the inner-product
      // backward-weights primitive plus an add, 0.75 vs 1.2 ms for the LSTM's 12800x16x64).
      dnnl::post_ops accumulate;
      accumulate.append_sum(1.0f);
      auto acc_attr = user_scratchpad();
      acc_attr.set_post_ops(accumulate);
      if (pick_.transposed_dw) {  // dw^T = x^T dy into scratch, added in transposed
        const auto xt = memory::desc({I, N}, in_t, memory::dims{1, I});  // x[N,I] as x^T
        const auto dwt = plain({I, O}, tag::ab);
        dw_t_.resize(I * O);
        bwd_w_ = make_primitive<dnnl::matmul>(
            be, dnnl::matmul::primitive_desc({xt, dyb, dwt}, attr, be.engine),
            {{DNNL_ARG_SRC, xt}, {DNNL_ARG_WEIGHTS, dyb}, {DNNL_ARG_DST, dwt}});
      } else {
        bwd_w_ = make_primitive<dnnl::matmul>(
            be, dnnl::matmul::primitive_desc({dyt, xb, w}, acc_attr, be.engine),
            {{DNNL_ARG_SRC, dyt}, {DNNL_ARG_WEIGHTS, xb}, {DNNL_ARG_DST, w}});
        // dw = dy^T x, written: no memset before, no read of dw inside (LeNet's dense1 at
        // batch 64: its backward 4.2 -> 3.8 ms, Zen 3).
        bwd_w_write_ = make_primitive<dnnl::matmul>(
            be, dnnl::matmul::primitive_desc({dyt, xb, w}, attr, be.engine),
            {{DNNL_ARG_SRC, dyt}, {DNNL_ARG_WEIGHTS, xb}, {DNNL_ARG_DST, w}});
      }
      x_in_ = Relayout(be, x, xb, false);
      w_in_ = Relayout(be, w, wb, false);
      dy_in_ = Relayout(be, y, dyb, false);
      return 0;
    });
  }

  bool applies_relu() const override { return d_.relu; }
  KernelChoice choice() const override {
    return pick_.transposed_dw ? pick_.choice : KernelChoice{};
  }
  void forward(const float* x, const float* w, const float* b, float* y) override {
    fwd_.run({{DNNL_ARG_SRC, x_in_.in(x)},
              {DNNL_ARG_WEIGHTS, w_in_.in(w)},
              {DNNL_ARG_BIAS, b},
              {DNNL_ARG_DST, y}});
  }

  void backward(const float* x, const float* w, const float* dy, float* dx, float* dw,
                float* db) override {
    backward(x, w, dy, dx, dw, db, false);
  }
  bool writes_gradients() const override { return true; }
  void backward_writing(const float* x, const float* w, const float* dy, float* dx, float* dw,
                        float* db) override {
    backward(x, w, dy, dx, dw, db, true);
  }

 private:
  // dw[o, i] += t[i, o] for t [I, O] (write: dw[o, i] = t[i, o]).
  static void add_transposed(const float* t, int64_t I, int64_t O, float* dw, bool write) {
    for (int64_t o = 0; o < O; ++o)
      for (int64_t i = 0; i < I; ++i) dw[o * I + i] = (write ? 0.0f : dw[o * I + i]) + t[i * O + o];
  }

  // dw and db added to, or (write) written.
  void backward(const float* x, const float* w, const float* dy, float* dx, float* dw, float* db,
                bool write) {
    const void* dyp = dx || dw ? dy_in_.in(dy) : nullptr;
    if (dx)
      bwd_data_.run({{DNNL_ARG_SRC, dyp}, {DNNL_ARG_WEIGHTS, w_in_.in(w)}, {DNNL_ARG_DST, dx}});
    if (dw && pick_.transposed_dw) {
      bwd_w_.run(
          {{DNNL_ARG_SRC, x_in_.in(x)}, {DNNL_ARG_WEIGHTS, dyp}, {DNNL_ARG_DST, dw_t_.data()}});
      add_transposed(dw_t_.data(), d_.in, d_.out, dw, write);
    } else if (dw) {
      (write ? bwd_w_write_ : bwd_w_)
          .run({{DNNL_ARG_SRC, dyp}, {DNNL_ARG_WEIGHTS, x_in_.in(x)}, {DNNL_ARG_DST, dw}});
    }
    if (db && write) {
      math::write_row_sums(dy, d_.batch, d_.out, db);
    } else if (db) {
      math::add_row_sums(dy, d_.batch, d_.out, db);
    }
  }

  DenseDims d_;
  DensePick pick_;      // choices.cpp: the weight gradient as (x^T dy)^T or dy^T x
  AlignedFloats dw_t_;  // [I, O]: x^T dy when pick_.transposed_dw
  Primitive fwd_, bwd_data_, bwd_w_, bwd_w_write_;  // bwd_w_write_: not when pick_.transposed_dw
  Relayout x_in_, w_in_, dy_in_;
};

class DnnlMaxPool final : public MaxPoolKernel {
 public:
  DnnlMaxPool(Engine& be, const PoolDims& d) {
    const memory::dim N = d.batch, C = d.channels;
    build(be, "max_pool", [&] {
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
      fwd_ = make_primitive<dnnl::pooling_forward>(
          be, fpd, {{DNNL_ARG_SRC, x}, {DNNL_ARG_DST, y}, {DNNL_ARG_WORKSPACE, ws}});
      dnnl::pooling_backward::primitive_desc bpd({algo, x, y, stride, kernel, pad, pad}, attr,
                                                 be.engine, fpd);
      bwd_ = make_primitive<dnnl::pooling_backward>(
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
  Primitive fwd_, bwd_;
  AlignedFloats workspace_;  // argmax positions written by forward, read by backward
};

// ReLU (tanh and sigmoid are loops: LoopKernels::smooth_activation); backward from its input.
class DnnlRelu final : public ActivationKernel {
 public:
  DnnlRelu(Engine& be, int64_t n) {
    build(be, "activation", [&] {
      const auto md = plain({n}, tag::x);
      const auto attr = user_scratchpad();
      const auto algo = dnnl::algorithm::eltwise_relu;
      dnnl::eltwise_forward::primitive_desc fpd(
          {dnnl::prop_kind::forward_training, algo, md, 0.f, 0.f}, attr, be.engine);
      fwd_ =
          make_primitive<dnnl::eltwise_forward>(be, fpd, {{DNNL_ARG_SRC, md}, {DNNL_ARG_DST, md}});
      dnnl::eltwise_backward::primitive_desc bpd({algo, md, md, 0.f, 0.f}, attr, be.engine, fpd);
      bwd_ = make_primitive<dnnl::eltwise_backward>(
          be, bpd, {{DNNL_ARG_SRC, md}, {DNNL_ARG_DIFF_DST, md}, {DNNL_ARG_DIFF_SRC, md}});
      return 0;
    });
  }
  void forward(const float* x, float* y) override {
    fwd_.run({{DNNL_ARG_SRC, x}, {DNNL_ARG_DST, y}});
  }
  void backward(const float* x, const float*, const float* dy, float* dx) override {
    bwd_.run({{DNNL_ARG_SRC, x}, {DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_DIFF_SRC, dx}});
  }

 private:
  Primitive fwd_, bwd_;
};

// oneDNN primitives; the loss, dropout, LSTM cell, ScalarNorm, tanh, sigmoid and vector operations
// are OpenMP loops (LoopKernels): oneDNN has no primitive that fits them. Dense and conv go through
// OpenBLAS instead with run.kernels.gemm = "blas" (see blas_gemm.hpp).
std::string isa_name(dnnl::cpu_isa isa) {
  switch (isa) {
    case dnnl::cpu_isa::sse41:
      return "SSE4.1";
    case dnnl::cpu_isa::avx:
      return "AVX";
    case dnnl::cpu_isa::avx2:
      return "AVX2";
    case dnnl::cpu_isa::avx2_vnni:
      return "AVX2 with VNNI";
    case dnnl::cpu_isa::avx512_core:
      return "AVX-512";
    case dnnl::cpu_isa::avx512_core_vnni:
      return "AVX-512 with VNNI";
    default:
      return "an ISA without bf16 (oneDNN code " + std::to_string(int(isa)) + ")";
  }
}

// bf16 needs the CPU's own bf16 instructions (oneDNN would otherwise emulate them, slower
// than f32): AVX512_BF16, or AMX-BF16. ONEDNN_MAX_CPU_ISA caps what oneDNN may use.
void require_bf16_isa() {
#if !defined(__x86_64__)
  throw Error(
      "run.precision = \"bf16\": hpdl's bf16 needs an x86-64 CPU with AVX512_BF16 or AMX-BF16 "
      "(this hpdl is built for another architecture); use \"f32\"");
#endif
  if (may_use(dnnl::cpu_isa::avx512_core_bf16)) return;
  throw Error(std::string("run.precision = \"bf16\": this CPU lacks the bf16 instructions oneDNN "
                          "needs (AVX512_BF16 or AMX-BF16; it has up to ") +
              isa_name(dnnl::get_effective_cpu_isa()) + "); use \"f32\"");
}

class OneDnnKernels final : public LoopKernels {
 public:
  OneDnnKernels(Precision precision, const KernelChoices& choices)
      : LoopKernels(true),
        be_(build("engine", [] { return std::make_unique<Engine>(); })),
        blas_(choices.gemm == GemmChoice::kBlas),
        choices_(choices),
        precision_(precision) {
#ifndef HPDL_HAVE_BLAS
    if (blas_)
      throw Error(
          "run.kernels.gemm = \"blas\": this hpdl was built without BLAS (install Debian's "
          "libopenblas-openmp-dev and configure again)");
#endif
    if (precision_ == Precision::kF32) return;
    if (blas_)
      throw Error(
          "run.precision = \"bf16\" with run.kernels.gemm = \"blas\": OpenBLAS computes in f32 "
          "(leave run.kernels.gemm \"auto\" for oneDNN's bf16 GEMM)");
    require_bf16_isa();
  }
  std::string name() const override { return "onednn"; }
  Precision precision() const override { return precision_; }
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
    return make_conv(*be_, d, choices_, !choices_.plain_activations);
  }
  std::unique_ptr<MaxPoolKernel> max_pool(const PoolDims& d) override {
    const PoolPick pick = choose_max_pool(d, choices_);
    std::unique_ptr<MaxPoolKernel> k;
    if (pick.kernel == PoolKernel::kHpdl)
      k = make_cpu_max_pool(d);
    else
      k = std::make_unique<DnnlMaxPool>(*be_, d);
    k->set_choice(pick.choice);
    return k;
  }
  std::unique_ptr<ActivationKernel> activation(Activation a, int64_t n) override {
    if (a != Activation::kRelu) return smooth_activation(a, n);
    return std::make_unique<DnnlRelu>(*be_, n);
  }
  std::unique_ptr<BatchNormKernel> batch_norm(const BatchNormDims& d) override {
    return make_batch_norm(*be_, d);
  }
  // The LSTM's small per-step products: its own panel product (with gemm = "blas" too).
  std::unique_ptr<RecurrentProductKernel> recurrent_product(const RecurrentDims& d) override {
    return make_panel_recurrent_product(d, d.threads > 0 ? d.threads : be_->kernel_threads);
  }
  bool use_one_thread() override {
    if (blas_) return false;  // OpenBLAS keeps its own threads
    be_->kernel_threads = 1;
    return true;
  }

 private:
  std::unique_ptr<Engine> be_;  // kernels keep a pointer: its address must not move
  bool blas_;
  // run.kernels, read by the candidate tables (choices.cpp). With activations = "plain" no
  // convolution keeps its own layout for a max pool or the next convolution.
  KernelChoices choices_;
  Precision precision_;
};

}  // namespace
}  // namespace hpdl::onednn

namespace hpdl {

std::unique_ptr<KernelFactory> make_onednn_kernels(Precision precision,
                                                   const KernelChoices& choices) {
  flush_denormals();
  return std::make_unique<onednn::OneDnnKernels>(precision, choices);
}

}  // namespace hpdl
