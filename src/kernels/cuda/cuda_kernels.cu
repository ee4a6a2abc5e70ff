// The CUDA backend: dense and convolution layers as cuBLAS GEMMs (a convolution is one
// im2col and one GEMM over the whole batch, never a launch per image), every other
// operation a grid-stride kernel over the per-element math of element_math.hpp and
// device_math.hpp (the same functions the host tests check). Everything is enqueued on the
// device's stream; the loss value is the one number a step reads back.
// N batch, O outputs/channels, I inputs, K classes or kernel size, H hidden units, G = 4H.
#include <algorithm>
#include <vector>

#include "../device_math.hpp"
#include "../element_math.hpp"
#include "cuda_check.hpp"
#include "cuda_device.hpp"
#include "cuda_launch.cuh"
#include "cuda_vector_ops.hpp"
#include "hpdl/kernels/kernels.hpp"
#include "layer_kernels.cuh"
#include "lstm_sequence.cuh"

namespace hpdl::cuda {
namespace {

// Row-major C[M, N] = alpha op(A) op(B) + beta C with op(A) [M, K], op(B) [K, N]; ld* are
// row strides. cuBLAS is column-major: a row-major C is its column-major transpose, so
// C^T = op(B)^T op(A)^T is the column-major call with the operands swapped.
void gemm(cublasHandle_t blas, bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha,
          const float* A, int64_t lda, const float* B, int64_t ldb, float beta, float* C,
          int64_t ldc) {
  HPDL_CUDA_CHECK(cublasSgemm_64(blas, tb ? CUBLAS_OP_T : CUBLAS_OP_N,
                                 ta ? CUBLAS_OP_T : CUBLAS_OP_N, N, M, K, &alpha, B, ldb, A, lda,
                                 &beta, C, ldc));
}

// ---- kernel objects ---------------------------------------------------------------------

// What every kernel object needs: the device (its stream) and the cuBLAS handle on it.
struct Context {
  CudaDevice& device;
  cublasHandle_t blas;
  cudaStream_t stream() const { return device.stream(); }
};

#define HPDL_LAUNCH(kernel, blocks, ...)                           \
  do {                                                             \
    kernel<<<(blocks), kThreads, 0, ctx_.stream()>>>(__VA_ARGS__); \
    HPDL_CUDA_LAUNCHED();                                          \
  } while (0)

class CudaDense final : public DenseKernel {
 public:
  CudaDense(Context ctx, const DenseDims& d) : ctx_(ctx), d_(d) {}
  void forward(const float* x, const float* w, const float* b, float* y) override {
    if (b) HPDL_LAUNCH(broadcast_rows, blocks_for(d_.batch * d_.out), d_.batch, d_.out, b, y);
    gemm(ctx_.blas, false, true, d_.batch, d_.out, d_.in, 1, x, d_.in, w, d_.in, b ? 1 : 0, y,
         d_.out);
  }
  void backward(const float* x, const float* w, const float* dy, float* dx, float* dw,
                float* db) override {
    if (dx)
      gemm(ctx_.blas, false, false, d_.batch, d_.in, d_.out, 1, dy, d_.out, w, d_.in, 0, dx, d_.in);
    if (dw)
      gemm(ctx_.blas, true, false, d_.out, d_.in, d_.batch, 1, dy, d_.out, x, d_.in, 1, dw, d_.in);
    if (db) HPDL_LAUNCH(channel_sum, static_cast<unsigned>(d_.out), dy, d_.batch, d_.out, 1, db);
  }

 private:
  Context ctx_;
  DenseDims d_;
};

// col [R, Q] and t [O, Q] workspaces; backward reuses col for dcol once dw is done. The
// index kernels take 32-bit indices where every tensor fits (dmath::fits_int32). db: each
// row of t summed in kBiasParts slices at once, then the slices in order (one block a
// channel, summing LeNet's 100352 values of a channel, took 127 us on an H200).
class CudaConv final : public ConvKernel {
 public:
  CudaConv(Context ctx, const ConvDims& d)
      : ctx_(ctx),
        s_(dmath::conv_shape(d)),
        R_(s_.C * s_.K * s_.K),
        Q_(s_.N * s_.OH * s_.OW),
        narrow_(dmath::fits_int32(std::max({R_ * Q_, s_.O * Q_, s_.N * s_.C * s_.H * s_.W}))),
        col_(ctx.device, R_ * Q_),
        t_(ctx.device, s_.O * Q_),
        bias_parts_(ctx.device, s_.O * kBiasParts) {}
  void forward(const float* x, const float* w, const float* b, float* y) override {
    if (narrow_) return forward_as(dmath::narrow(s_), x, w, b, y);
    forward_as(s_, x, w, b, y);
  }
  void backward(const float* x, const float* w, const float* dy, float* dx, float* dw,
                float* db) override {
    if (narrow_) return backward_as(dmath::narrow(s_), x, w, dy, dx, dw, db);
    backward_as(s_, x, w, dy, dx, dw, db);
  }

 private:
  static constexpr int64_t kBiasParts = 32;
  template <typename I>
  void forward_as(const dmath::ConvShapeOf<I>& s, const float* x, const float* w, const float* b,
                  float* y) {
    HPDL_LAUNCH(im2col<I>, blocks_for(R_ * Q_), s, x, col_.get());
    gemm(ctx_.blas, false, false, s_.O, Q_, R_, 1, w, R_, col_.get(), Q_, 0, t_.get(), Q_);
    HPDL_LAUNCH(from_gemm_layout<I>, blocks_for(s_.O * Q_), s.N, s.O, s.OH * s.OW, t_.get(), b, y);
  }
  template <typename I>
  void backward_as(const dmath::ConvShapeOf<I>& s, const float* x, const float* w, const float* dy,
                   float* dx, float* dw, float* db) {
    HPDL_LAUNCH(to_gemm_layout<I>, blocks_for(s_.O * Q_), s.N, s.O, s.OH * s.OW, dy, t_.get());
    if (db) {
      row_sum_parts<<<dim3(kBiasParts, static_cast<unsigned>(s_.O)), kThreads, 0, ctx_.stream()>>>(
          t_.get(), Q_, bias_parts_.get());
      HPDL_CUDA_LAUNCHED();
      HPDL_LAUNCH(add_row_parts, blocks_for(s_.O), s_.O, kBiasParts, bias_parts_.get(), db);
    }
    if (dw) {
      HPDL_LAUNCH(im2col<I>, blocks_for(R_ * Q_), s, x, col_.get());
      gemm(ctx_.blas, false, true, s_.O, R_, Q_, 1, t_.get(), Q_, col_.get(), Q_, 1, dw, R_);
    }
    if (dx) {
      gemm(ctx_.blas, true, false, R_, Q_, s_.O, 1, w, R_, t_.get(), Q_, 0, col_.get(), Q_);
      HPDL_LAUNCH(col2im<I>, blocks_for(s_.N * s_.C * s_.H * s_.W), s, col_.get(), dx);
    }
  }

  Context ctx_;
  dmath::ConvShape s_;
  int64_t R_, Q_;
  bool narrow_;  // 32-bit indices
  Array<float> col_, t_;
  Array<double> bias_parts_;  // [O, kBiasParts]
};

class CudaMaxPool final : public MaxPoolKernel {
 public:
  CudaMaxPool(Context ctx, const PoolDims& d)
      : ctx_(ctx),
        d_(d),
        n_out_(d.batch * d.channels * d.out_h() * d.out_w()),
        n_in_(d.batch * d.channels * d.in_h * d.in_w),
        narrow_(dmath::fits_int32(n_in_)),
        arg_(ctx.device, n_out_) {}
  void forward(const float* x, float* y) override {
    if (narrow_) return forward_as<int32_t>(x, y);
    forward_as<int64_t>(x, y);
  }
  void backward(const float* dy, float* dx) override {
    if (narrow_) return backward_as<int32_t>(dy, dx);
    backward_as<int64_t>(dy, dx);
  }

 private:
  template <typename I>
  void forward_as(const float* x, float* y) {
    HPDL_LAUNCH(pool_forward<I>, blocks_for(n_out_), I(n_out_), I(d_.in_h), I(d_.in_w),
                I(d_.out_h()), I(d_.out_w()), I(d_.kernel), I(d_.stride), x, y, arg_.get());
  }
  template <typename I>
  void backward_as(const float* dy, float* dx) {
    HPDL_LAUNCH(pool_backward<I>, blocks_for(n_in_), I(n_in_), I(d_.in_h), I(d_.in_w),
                I(d_.out_h()), I(d_.out_w()), I(d_.kernel), I(d_.stride), dy, arg_.get(), dx);
  }

  Context ctx_;
  PoolDims d_;
  int64_t n_out_, n_in_;
  bool narrow_;  // 32-bit indices
  Array<int64_t> arg_;
};

class CudaActivation final : public ActivationKernel {
 public:
  CudaActivation(Context ctx, Activation a, int64_t n) : ctx_(ctx), a_(a), n_(n) {}
  void forward(const float* x, float* y) override {
    HPDL_LAUNCH(activation_forward, blocks_for(n_), a_, n_, x, y);
  }
  void backward(const float* x, const float* y, const float* dy, float* dx) override {
    HPDL_LAUNCH(activation_backward, blocks_for(n_), a_, n_, x, y, dy, dx);
  }

 private:
  Context ctx_;
  Activation a_;
  int64_t n_;
};

// Labels come from the host (the data reader); forward and backward each have a pinned
// upload, so one may be in flight while the host fills the other.
class CudaSoftmaxXent final : public SoftmaxXentKernel {
 public:
  CudaSoftmaxXent(Context ctx, int64_t batch, int64_t classes)
      : ctx_(ctx),
        N_(batch),
        K_(classes),
        loss_(ctx.device, batch),
        labels_fwd_(ctx.device, batch * sizeof(int32_t)),
        labels_bwd_(ctx.device, batch * sizeof(int32_t)),
        host_loss_(ctx.device, batch, Memory::kHost) {}
  double forward(const float* logits, const int32_t* labels, int64_t n_valid,
                 float* probs) override {
    const auto* l =
        static_cast<const int32_t*>(labels_fwd_.upload(labels, n_valid * sizeof(int32_t)));
    HPDL_LAUNCH(softmax_rows, blocks_for(N_), N_, K_, logits, l, n_valid, probs, loss_.get());
    if (n_valid <= 0) return 0;
    HPDL_CUDA_CHECK(cudaMemcpyAsync(host_loss_.get(), loss_.get(), n_valid * sizeof(double),
                                    cudaMemcpyDeviceToHost, ctx_.stream()));
    HPDL_CUDA_CHECK(cudaStreamSynchronize(ctx_.stream()));
    double total = 0;
    for (int64_t n = 0; n < n_valid; ++n) total += host_loss_.get()[n];
    return total;
  }
  void backward(const float* probs, const int32_t* labels, float scale, float* dlogits) override {
    const auto* l = static_cast<const int32_t*>(labels_bwd_.upload(labels, N_ * sizeof(int32_t)));
    HPDL_LAUNCH(xent_backward, blocks_for(N_ * K_), N_, K_, probs, l, scale, dlogits);
  }

 private:
  Context ctx_;
  int64_t N_, K_;
  Array<double> loss_;
  PinnedUpload labels_fwd_, labels_bwd_;
  Array<double> host_loss_;  // [N], page-locked
};

class CudaDropout final : public DropoutKernel {
 public:
  CudaDropout(Context ctx, const DropoutDims& d)
      : ctx_(ctx), d_(d), ids_(ctx.device, d.batch * sizeof(int64_t)) {}
  void forward(const float* x, const int64_t* sample_ids, uint64_t key, uint64_t stream,
               float* mask, float* y) override {
    const auto* ids =
        static_cast<const int64_t*>(ids_.upload(sample_ids, d_.batch * sizeof(int64_t)));
    const int64_t n = d_.batch * d_.per_sample;
    HPDL_LAUNCH(dropout_forward, blocks_for(n), n, d_.per_sample, d_.keep, key, stream, ids, x,
                mask, y);
  }
  void backward(const float* dy, const float* mask, float* dx) override {
    const int64_t n = d_.batch * d_.per_sample;
    HPDL_LAUNCH(multiply, blocks_for(n), n, dy, mask, dx);
  }

 private:
  Context ctx_;
  DropoutDims d_;
  PinnedUpload ids_;
};

class CudaLstmCell final : public LstmCellKernel {
 public:
  // sequence false (run.kernels.cuda_lstm_sequence, a measurement switch) leaves the steps
  // to the layer.
  CudaLstmCell(Context ctx, const LstmCellDims& d, bool sequence)
      : ctx_(ctx),
        d_(d),
        sequence_(d.hidden <= kMaxSequenceHidden && sequence),
        wh_t_(ctx.device, sequence_ ? 4 * d.hidden * d.hidden : 1) {}
  void forward(const float* pre, int64_t ld_pre, const float* rec, const float* c_prev,
               float* gates, float* c, float* tanh_c, float* h, float* y, int64_t ld_y,
               int64_t /*ahead: the GPU hides latency by its threads*/) override {
    HPDL_LAUNCH(lstm_forward, blocks_for(d_.batch * d_.hidden), d_.batch, d_.hidden, pre, ld_pre,
                rec, c_prev, gates, c, tanh_c, h, y, ld_y);
  }
  void backward(const float* gates, const float* tanh_c, const float* c_prev, const float* dy,
                int64_t ld_dy, const float* dh, float* dc, float* d_step, float* d_seq,
                int64_t ld_seq, int64_t /*ahead*/) override {
    HPDL_LAUNCH(lstm_backward, blocks_for(d_.batch * d_.hidden), d_.batch, d_.hidden, gates, tanh_c,
                c_prev, dy, ld_dy, dh, dc, d_step, d_seq, ld_seq);
  }
  bool forward_sequence(int64_t T, bool reverse, const float* pre, const float* wh, float* gates,
                        float* c, float* tanh_c, float* h, float* y) override {
    if (!sequence_) return false;
    const int64_t H = d_.hidden, G = 4 * H;
    HPDL_LAUNCH(transpose_recurrent_weights, blocks_for(G * H), H, wh, wh_t_.get());
    lstm_sequence_forward<<<static_cast<unsigned>(d_.batch), static_cast<unsigned>(G),
                            (2 * H + G) * sizeof(float), ctx_.stream()>>>(
        d_.batch, T, H, reverse, pre, wh_t_.get(), gates, c, tanh_c, h, y);
    HPDL_CUDA_LAUNCHED();
    return true;
  }
  bool backward_sequence(int64_t T, bool reverse, const float* wh, const float* gates,
                         const float* c, const float* tanh_c, const float* dy, float* d_step,
                         float* d_seq) override {
    if (!sequence_) return false;
    const int64_t H = d_.hidden, G = 4 * H;
    lstm_sequence_backward<<<static_cast<unsigned>(d_.batch), static_cast<unsigned>(G),
                             (3 * H + 2 * G) * sizeof(float), ctx_.stream()>>>(
        d_.batch, T, H, reverse, wh, gates, c, tanh_c, dy, d_step, d_seq);
    HPDL_CUDA_LAUNCHED();
    return true;
  }

 private:
  Context ctx_;
  LstmCellDims d_;
  bool sequence_;      // forward_sequence and backward_sequence run
  Array<float> wh_t_;  // the recurrent weights transposed for forward_sequence [H, 4H]
};

class CudaScalarNorm final : public ScalarNormKernel {
 public:
  CudaScalarNorm(Context ctx, const ScalarNormDims& d)
      : ctx_(ctx), d_(d), partial_(ctx.device, 2 * d.batch) {}
  void forward(const float* x, const float* gamma, const float* beta, float* xhat, float* inv_std,
               float* y) override {
    HPDL_LAUNCH(scalar_norm_forward, static_cast<unsigned>(d_.batch), d_.per_sample, d_.eps, x,
                gamma, beta, xhat, inv_std, y);
  }
  void backward(const float* dy, const float* xhat, const float* inv_std, const float* gamma,
                float* dx, float* dgamma, float* dbeta) override {
    HPDL_LAUNCH(scalar_norm_backward, static_cast<unsigned>(d_.batch), d_.per_sample, dy, xhat,
                inv_std, gamma, dx, partial_.get());
    HPDL_LAUNCH(add_partials, 1u, d_.batch, partial_.get(), dgamma, dbeta);
  }

 private:
  Context ctx_;
  ScalarNormDims d_;
  Array<double> partial_;  // [N, 2]: sum dy, sum dy xhat per sample
};

class CudaBatchNorm final : public BatchNormKernel {
 public:
  CudaBatchNorm(Context ctx, const BatchNormDims& d) : ctx_(ctx), d_(d) {}
  void forward_training(const float* x, const float* gamma, const float* beta, float* mean,
                        float* var, float* running_mean, float* running_var, float* y) override {
    HPDL_LAUNCH(batch_norm_stats, static_cast<unsigned>(d_.channels), d_.batch, d_.channels,
                d_.spatial, d_.momentum, x, mean, var, running_mean, running_var);
    forward_inference(x, gamma, beta, mean, var, y);
  }
  void forward_inference(const float* x, const float* gamma, const float* beta,
                         const float* running_mean, const float* running_var, float* y) override {
    HPDL_LAUNCH(batch_norm_apply, blocks_for(d_.batch * d_.channels * d_.spatial), d_.batch,
                d_.channels, d_.spatial, d_.eps, x, gamma, beta, running_mean, running_var, y);
  }
  void backward(const float* x, const float* dy, const float* gamma, const float* mean,
                const float* var, float* dx, float* dgamma, float* dbeta) override {
    HPDL_LAUNCH(batch_norm_backward, static_cast<unsigned>(d_.channels), d_.batch, d_.channels,
                d_.spatial, d_.eps, x, dy, gamma, mean, var, dx, dgamma, dbeta);
  }

 private:
  Context ctx_;
  BatchNormDims d_;
};

class CudaKernels final : public KernelFactory {
 public:
  CudaKernels(int ordinal, const KernelChoices& choices)
      : device_(ordinal, choices.cuda_graphs), lstm_sequence_(choices.cuda_lstm_sequence) {
    HPDL_CUDA_CHECK(cublasCreate(&blas_));
    HPDL_CUDA_CHECK(cublasSetStream(blas_, device_.stream()));
    ops_ = make_vector_ops(device_);
  }
  ~CudaKernels() override {
    ops_.reset();
    cublasDestroy(blas_);
  }
  std::string name() const override { return "cuda"; }
  std::unique_ptr<DenseKernel> dense(const DenseDims& d) override {
    return std::make_unique<CudaDense>(ctx(), d);
  }
  std::unique_ptr<ConvKernel> conv(const ConvDims& d) override {
    return std::make_unique<CudaConv>(ctx(), d);
  }
  std::unique_ptr<MaxPoolKernel> max_pool(const PoolDims& d) override {
    HPDL_REQUIRE(d.in_block == 1 && d.out_block == 1,
                 "max pool: this backend takes plain NCHW only");
    return std::make_unique<CudaMaxPool>(ctx(), d);
  }
  std::unique_ptr<ActivationKernel> activation(Activation a, int64_t n) override {
    return std::make_unique<CudaActivation>(ctx(), a, n);
  }
  std::unique_ptr<SoftmaxXentKernel> softmax_xent(int64_t batch, int64_t classes) override {
    return std::make_unique<CudaSoftmaxXent>(ctx(), batch, classes);
  }
  std::unique_ptr<DropoutKernel> dropout(const DropoutDims& d) override {
    return std::make_unique<CudaDropout>(ctx(), d);
  }
  std::unique_ptr<LstmCellKernel> lstm_cell(const LstmCellDims& d) override {
    return std::make_unique<CudaLstmCell>(ctx(), d, lstm_sequence_);
  }
  std::unique_ptr<ScalarNormKernel> scalar_norm(const ScalarNormDims& d) override {
    return std::make_unique<CudaScalarNorm>(ctx(), d);
  }
  std::unique_ptr<BatchNormKernel> batch_norm(const BatchNormDims& d) override {
    return std::make_unique<CudaBatchNorm>(ctx(), d);
  }
  VectorOps& ops() override { return *ops_; }
  Device& device() override { return device_; }

 private:
  Context ctx() { return {device_, blas_}; }
  CudaDevice device_;  // first member: destroyed last
  bool lstm_sequence_;
  cublasHandle_t blas_ = nullptr;
  std::unique_ptr<VectorOps> ops_;
};

}  // namespace
}  // namespace hpdl::cuda

namespace hpdl {

std::unique_ptr<KernelFactory> make_cuda_kernels(int local_rank, const KernelChoices& choices) {
  std::string why;
  const int count = cuda::device_count(&why);
  if (count == 0) throw Error("run.backend = \"cuda\": no CUDA device (" + why + ")");
  return std::make_unique<cuda::CudaKernels>(choose_device(local_rank, count), choices);
}

}  // namespace hpdl
