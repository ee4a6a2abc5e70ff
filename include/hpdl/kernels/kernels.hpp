// The narrow math interface under the layers: one abstract kernel per operation, built
// once for fixed dimensions, then executed per step on raw pointers into model buffers.
// Implementations: reference (plain loops, the ground truth for tests), oneDNN (CPU) and
// CUDA (cuBLAS + kernels, when built with HPDL_CUDA).
// Layouts are plain row-major: activations N,C,H,W; dense weights O,I; conv weights O,I,KH,KW.
// The one exception, chosen by the planner between a convolution and a max pool or another
// convolution (plan/planner.hpp): an activation with its channels in blocks (kernels' native
// blocks below).
// Every backward overwrites the input gradient dx (skipped when dx is null) and ADDS into
// the parameter gradients dw, db (a dense kernel may also write them: backward_writing).
// Kernels never allocate in forward/backward.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "hpdl/config/settings.hpp"
#include "hpdl/core/device.hpp"
#include "hpdl/kernels/vector_ops.hpp"

namespace hpdl {

// What a kernel chose at construction among its ways to compute (a layout, the library's
// kernels), and why (its candidate table's reason, kernels/candidates.hpp), in words for the
// execution plan; an empty kernel where it has one way.
struct KernelChoice {
  std::string kernel, reason;
  bool empty() const { return kernel.empty(); }
};

// N batch, I inputs, O outputs.
struct DenseDims {
  int64_t batch, in, out;
  Precision precision = Precision::kF32;
  bool relu = false;  // forward may write max(0, y) (DenseKernel::applies_relu)
};

// Output positions of a K-wide window with stride S over IN inputs padded by P on both
// sides; 0 when the window does not fit (or K, S < 1, P < 0). Never truncating division
// of a negative span: (8 - 16) / 16 + 1 would claim one position and read outside.
constexpr int64_t window_outputs(int64_t in, int64_t kernel, int64_t stride, int64_t pad) {
  if (kernel < 1 || stride < 1 || pad < 0 || in < 1 || in + 2 * pad < kernel) return 0;
  return (in + 2 * pad - kernel) / stride + 1;
}

// How an activation [N, C, H, W] lies in memory: its channels in blocks of B, element
// (n, c, h, w) at ((n C/B + c/B) H W + h W + w) B + c % B, C a multiple of B. B = 1 is plain
// NCHW, B = C is NHWC, 8 and 16 are oneDNN's blocked layouts. kAnyBlock: a kernel that reads
// or writes whichever block its neighbour wants.
constexpr int64_t kAnyBlock = -1;
// The element offset of (c, h, w) within one sample of an activation in blocks of `block`.
constexpr int64_t block_offset(int64_t block, int64_t h_size, int64_t w_size, int64_t c, int64_t h,
                               int64_t w) {
  return ((c / block) * h_size * w_size + h * w_size + w) * block + c % block;
}
// "nchw", "nhwc" or "blocks of B", for `hpdl time`.
std::string block_name(int64_t block, int64_t channels);

// N batch, C/H/W input channels/height/width, O output channels, K square kernel.
struct ConvDims {
  int64_t batch, in_c, in_h, in_w, out_c, kernel, stride, pad;
  Precision precision = Precision::kF32;
  int64_t out_h() const { return window_outputs(in_h, kernel, stride, pad); }
  int64_t out_w() const { return window_outputs(in_w, kernel, stride, pad); }
};

// Max pooling over K x K windows with stride S, no padding.
struct PoolDims {
  int64_t batch, channels, in_h, in_w, kernel, stride;
  // A ReLU on the output (a ReLU layer before the pool, fused: PlanHooks::absorb_relu). A kernel
  // that applies it says so (MaxPoolKernel::takes); for one that does not, the layer
  // applies it with the backend's activation kernel.
  bool relu = false;
  // The input's and the output's channel blocks (1: plain), for a kernel that takes them
  // (MaxPoolKernel::takes).
  int64_t in_block = 1, out_block = 1;
  int64_t out_h() const { return window_outputs(in_h, kernel, stride, 0); }
  int64_t out_w() const { return window_outputs(in_w, kernel, stride, 0); }
};

enum class Activation { kRelu, kTanh, kSigmoid };

class DenseKernel {
 public:
  virtual ~DenseKernel() = default;
  // y[N,O] = x[N,I] * w[O,I]^T + b[O]; max(0, that) where applies_relu().
  virtual void forward(const float* x, const float* w, const float* b, float* y) = 0;
  // Whether forward applies the ReLU the dims asked for (false: the layer applies it).
  virtual bool applies_relu() const { return false; }
  // dx[N,I] = dy * w (overwrite); dw[O,I] += dy^T * x; db[O] += sum_n dy. Any of dx, dw,
  // db may be null: that part is skipped (the LSTM takes its weight gradient in one
  // product over all steps, and needs only dx per step).
  virtual void backward(const float* x, const float* w, const float* dy, float* dx, float* dw,
                        float* db) = 0;
  // Whether backward_writing is this kernel's own: the same as backward, but dw = dy^T x and
  // db = sum_n dy written, not added to, so that no one zeroes them first and the product
  // does not read them back (Model::backward_fresh). Only where it is may it be called.
  virtual bool writes_gradients() const { return false; }
  virtual void backward_writing(const float* x, const float* w, const float* dy, float* dx,
                                float* dw, float* db);
  // What it chose at construction among its ways to compute; empty if it has one.
  virtual KernelChoice choice() const { return {}; }
};

class ConvKernel {
 public:
  virtual ~ConvKernel() = default;
  // y[N,O,OH,OW] = conv(x[N,C,H,W], w[O,C,K,K]) + b[O]
  virtual void forward(const float* x, const float* w, const float* b, float* y) = 0;
  virtual void backward(const float* x, const float* w, const float* dy, float* dx, float* dw,
                        float* db) = 0;
  // The same, calling `between` (when set) where one pass ends and the next begins, for a
  // kernel whose backward runs several (the oneDNN convolution: input gradient, then weight
  // gradient); a kernel of one pass computes exactly backward() and may not call it.
  virtual void backward_between(const float* x, const float* w, const float* dy, float* dx,
                                float* dw, float* db, const std::function<void()>& between) {
    (void)between;
    backward(x, w, dy, dx, dw, db);
  }
  // What it chose at construction among its ways to compute; empty if it has one.
  virtual KernelChoice choice() const { return {}; }
  // The channel blocks its passes compute x/dx (in) and y/dy (out) in: 1 when that is plain
  // or a layout without a block (it converts from and to plain on every pass).
  struct NativeBlocks {
    int64_t in = 1, out = 1;
  };
  virtual NativeBlocks native_blocks() const { return {}; }
  // From now on x and dx (in), y and dy (out) are in its native blocks, not plain: no
  // conversion on that side. Only for a side whose native block is not 1.
  virtual void use_native(bool in, bool out) { (void)in, (void)out; }
};

class MaxPoolKernel {
 public:
  virtual ~MaxPoolKernel() = default;
  // y[N,C,OH,OW]; remembers the argmax of the last forward for backward.
  virtual void forward(const float* x, float* y) = 0;
  virtual void backward(const float* dy, float* dx) = 0;
  // What it can take on. relu: it applies PoolDims::relu itself (y = max(0, max of the
  // window), and dy reaches the window's maximum only where y > 0); blocks: it reads and
  // writes activations in any channel blocks (PoolDims::in_block, out_block), not only plain.
  struct Takes {
    bool relu = false, blocks = false;
  };
  virtual Takes takes() const { return {}; }
  // Which pooling the backend chose for these dims (set by the factory that chose it); empty
  // where the backend has one.
  const KernelChoice& choice() const { return choice_; }
  void set_choice(KernelChoice c) { choice_ = std::move(c); }

 private:
  KernelChoice choice_;
};

class ActivationKernel {
 public:
  virtual ~ActivationKernel() = default;
  virtual void forward(const float* x, float* y) = 0;
  // dx from dy and the forward's input x and output y.
  virtual void backward(const float* x, const float* y, const float* dy, float* dx) = 0;
};

// Softmax cross-entropy over logits [N, K] with integer labels [N] in 0..K-1.
class SoftmaxXentKernel {
 public:
  virtual ~SoftmaxXentKernel() = default;
  // probs[N,K] = softmax of each row (max-shifted, log-sum-exp in double); returns the sum
  // over the first n_valid rows of -log probs[label] (later rows are padding).
  virtual double forward(const float* logits, const int32_t* labels, int64_t n_valid,
                         float* probs) = 0;
  // dlogits = (probs - onehot(label)) * scale (overwrite).
  virtual void backward(const float* probs, const int32_t* labels, float scale, float* dlogits) = 0;
};

// Inverted dropout over [N, S] (S elements a sample) keeping elements with probability keep.
struct DropoutDims {
  int64_t batch, per_sample;
  float keep;
};

class DropoutKernel {
 public:
  virtual ~DropoutKernel() = default;
  // mask[s,i] = 1/keep if random_uniform(key, stream, sample_ids[s] << 24 ^ i) < keep, else
  // 0 (counter-based: the same sample draws the same mask on any rank); y = x * mask.
  virtual void forward(const float* x, const int64_t* sample_ids, uint64_t key, uint64_t stream,
                       float* mask, float* y) = 0;
  // dx = dy * mask (overwrite).
  virtual void backward(const float* dy, const float* mask, float* dx) = 0;
};

// One LSTM time step for a batch: N samples, H units, G = 4H gate pre-activations in the
// order i, f, g, o. Rows of the step's input projection, output and output gradient sit
// `ld` floats apart (they are one step of an [N, T, .] sequence).
struct LstmCellDims {
  int64_t batch, hidden;
  int64_t row_stride = 0;  // floats between a sample's steps in y and dy (0: hidden)
};

class LstmCellKernel {
 public:
  virtual ~LstmCellKernel() = default;
  // gates = (sigmoid, sigmoid, tanh, sigmoid)(pre + rec); c = f c_prev + i g;
  // tanh_c = tanh(c); h = y = o tanh_c. pre [N, ld_pre], rec [N, G], c_prev [N, H]; gates
  // [N, G], c, tanh_c, h [N, H], y [N, ld_y]. In both passes `ahead` says where the next
  // step's rows lie: +1 or -1 step along the sequence (G floats away in pre and d_seq, the
  // dims' row_stride in y and dy), or 0 when there is no next step. A backend may read them
  // into the cache while this step computes (rows a whole sequence apart) or ignore it.
  virtual void forward(const float* pre, int64_t ld_pre, const float* rec, const float* c_prev,
                       float* gates, float* c, float* tanh_c, float* h, float* y, int64_t ld_y,
                       int64_t ahead) = 0;
  // From dy [N, ld_dy] and the carried dh, dc [N, H]: the gate gradients into d_step
  // [N, G] and d_seq [N, ld_seq] (null: d_step only); dc becomes the gradient for step t-1.
  virtual void backward(const float* gates, const float* tanh_c, const float* c_prev,
                        const float* dy, int64_t ld_dy, const float* dh, float* dc, float* d_step,
                        float* d_seq, int64_t ld_seq, int64_t ahead) = 0;

  // All T steps at once, recurrent products included, where a backend has that (a GPU: one
  // kernel, each sample's steps in one thread block); false where it has not, and the
  // layer runs the steps itself (a product and the cell per step). Step s of the
  // processing order is sequence step t = reverse ? T-1-s : s. pre [N*T, G] and y, dy
  // [N*T, H] by sequence step (row n*T + t); wh [G, H]; gates, d_step [T, N, G] and c,
  // tanh_c, h [T, N, H] by processing step; d_seq [N*T, G] like pre. h_{-1} = c_{-1} = 0.
  virtual bool forward_sequence(int64_t /*T*/, bool /*reverse*/, const float* /*pre*/,
                                const float* /*wh*/, float* /*gates*/, float* /*c*/,
                                float* /*tanh_c*/, float* /*h*/, float* /*y*/) {
    return false;
  }
  virtual bool backward_sequence(int64_t /*T*/, bool /*reverse*/, const float* /*wh*/,
                                 const float* /*gates*/, const float* /*c*/,
                                 const float* /*tanh_c*/, const float* /*dy*/, float* /*d_step*/,
                                 float* /*d_seq*/) {
    return false;
  }
};

// The two products of an LSTM's steps with its recurrent weights wh [G, H] (G = 4H), which
// stay the same through a pass: rec[N, G] = h[N, H] wh^T forward, dh[N, H] = d[N, G] wh
// backward; and, where the kernel takes them (gradients_by_step), a backward step's
// weight and input gradients from the same gate gradients d.
struct RecurrentDims {
  int64_t batch, hidden;
  int64_t inputs = 0;  // C, the width of the LSTM's input x (0: no gradients by step)
  int threads = 0;     // 1: on a branch's own thread (nn/branches.hpp); 0: the factory's
};

class RecurrentProductKernel {
 public:
  virtual ~RecurrentProductKernel() = default;
  // The weights of the products that follow, until the next call: a kernel may copy them
  // into a layout of its own here, so they must not change before that call.
  virtual void use_weights(const float* wh) = 0;
  virtual void forward(const float* h, float* rec) = 0;  // overwrites rec
  virtual void backward(const float* d, float* dh) = 0;  // overwrites dh

  // True where step_gradients() takes an LSTM's weight and input gradients one step at a
  // time, while the step's gate gradients are still in the cache (the oneDNN backend's
  // panels); false where the layer takes them after the loop, as products over all steps
  // (the default). Fixed when the kernel is made: the answer depends on the threads it was
  // made for (RecurrentDims::threads, the factory's), so the plan records it.
  virtual bool gradients_by_step() const { return false; }
  // The input weights wx [G, C] of the step_gradients() calls that follow, as use_weights.
  virtual void use_input_weights(const float* /*wx*/) {}
  // One backward step's gate gradients d [N, G]: dwh [G, H] += d^T h_prev (h_prev [N, H];
  // null at the first step: h_{-1} = 0), dwx [G, C] += d^T x, db [G] += d's column sums, and
  // dx = d wx (overwritten; null: no input gradient). x and dx: [N, C], rows ld apart.
  virtual void step_gradients(const float* /*d*/, const float* /*h_prev*/, const float* /*x*/,
                              float* /*dx*/, int64_t /*ld*/, float* /*dwh*/, float* /*dwx*/,
                              float* /*db*/) {}
};

// Per-sample normalisation of [N, M] to zero mean and unit variance, then one learned
// scale and shift for all elements: y = gamma * xhat + beta. gamma, beta and their
// gradients are single floats in backend memory (the layer's parameters).
struct ScalarNormDims {
  int64_t batch, per_sample;
  float eps;
};

class ScalarNormKernel {
 public:
  virtual ~ScalarNormKernel() = default;
  // xhat [N, M] and inv_std [N] are kept for backward.
  virtual void forward(const float* x, const float* gamma, const float* beta, float* xhat,
                       float* inv_std, float* y) = 0;
  // dx (null: skipped) = gamma inv_std (dy - mean(dy) - xhat mean(dy xhat)) per sample;
  // *dgamma += sum(dy xhat); *dbeta += sum(dy).
  virtual void backward(const float* dy, const float* xhat, const float* inv_std,
                        const float* gamma, float* dx, float* dgamma, float* dbeta) = 0;
};

// Batch normalisation of [N, C, S] (S positions per channel: H x W after a convolution, 1
// after a dense layer), with statistics per channel over the N x S values of the batch.
struct BatchNormDims {
  int64_t batch, channels, spatial;
  float eps, momentum;  // running = (1 - momentum) running + momentum batch
};

class BatchNormKernel {
 public:
  virtual ~BatchNormKernel() = default;
  // Training: mean [C] and var [C] (biased) of this batch, kept for backward;
  // y = gamma (x - mean) / sqrt(var + eps) + beta; the running statistics move towards the
  // batch's (running_var towards the unbiased variance, var * M / (M - 1), M = N S).
  virtual void forward_training(const float* x, const float* gamma, const float* beta, float* mean,
                                float* var, float* running_mean, float* running_var, float* y) = 0;
  // Inference: the same with the running statistics.
  virtual void forward_inference(const float* x, const float* gamma, const float* beta,
                                 const float* running_mean, const float* running_var, float* y) = 0;
  // From the training forward's x, mean, var and dy: dx (null: skipped, overwritten) =
  // gamma / sqrt(var + eps) (dy - mean(dy) - xhat mean(dy xhat)) per channel;
  // dgamma [C] += sum(dy xhat); dbeta [C] += sum(dy).
  virtual void backward(const float* x, const float* dy, const float* gamma, const float* mean,
                        const float* var, float* dx, float* dgamma, float* dbeta) = 0;
};

// Builds kernels of one backend. Created once per model; owns backend state (engine, stream).
// Every pointer passed to a kernel or to ops() is memory of device(), except the loss's
// labels and dropout's sample ids: those few integers a step come from the data reader in
// host memory, and a device backend uploads them itself. Calls are enqueued on the
// device's stream in call order (see core/device.hpp for when results are visible).
class KernelFactory {
 public:
  virtual ~KernelFactory() = default;
  virtual std::string name() const = 0;
  // The precision the run asked for: dense and conv layers put it in their dims (the LSTM's
  // products stay f32). A factory that cannot compute it refuses at construction.
  virtual Precision precision() const { return Precision::kF32; }
  virtual std::unique_ptr<DenseKernel> dense(const DenseDims& d) = 0;
  virtual std::unique_ptr<ConvKernel> conv(const ConvDims& d) = 0;
  virtual std::unique_ptr<MaxPoolKernel> max_pool(const PoolDims& d) = 0;
  virtual std::unique_ptr<ActivationKernel> activation(Activation a, int64_t n) = 0;
  virtual std::unique_ptr<SoftmaxXentKernel> softmax_xent(int64_t batch, int64_t classes) = 0;
  virtual std::unique_ptr<DropoutKernel> dropout(const DropoutDims& d) = 0;
  virtual std::unique_ptr<LstmCellKernel> lstm_cell(const LstmCellDims& d) = 0;
  // By default two products of dense() (recurrent_product.cpp).
  virtual std::unique_ptr<RecurrentProductKernel> recurrent_product(const RecurrentDims& d);
  virtual std::unique_ptr<ScalarNormKernel> scalar_norm(const ScalarNormDims& d) = 0;
  virtual std::unique_ptr<BatchNormKernel> batch_norm(const BatchNormDims& d) = 0;
  // Runs the kernels made from now on on one of the rank's threads: what Model asks for when
  // a step is too small to pay for splitting it. False: this backend does not split its
  // kernels over the rank's threads (or not through this factory) and ignores it.
  virtual bool use_one_thread() { return false; }
  // The backend's element-wise, reduction and update operations (vector_ops.hpp).
  virtual VectorOps& ops() = 0;
  // The backend's device: where its buffers live, its stream, events, host copies and the
  // clock that times its work (the profiler's per-layer intervals).
  virtual Device& device() = 0;
};

// Throws Error for an unavailable backend (a build without CUDA, or no CUDA device) or a precision
// it cannot compute here (bf16 on another backend, with run.kernels.gemm = "blas", or on a CPU
// without AVX512_BF16 / AMX-BF16). local_rank, the rank's index among the ranks of its node, picks
// the GPU (local_rank modulo the node's GPUs); CPU backends ignore it. choices: run.kernels (what
// the config forces; the backend ignores the keys that are not its own).
std::unique_ptr<KernelFactory> make_kernel_factory(Backend backend, int local_rank = 0,
                                                   Precision precision = Precision::kF32,
                                                   const KernelChoices& choices = {});
std::unique_ptr<KernelFactory> make_reference_kernels();
std::unique_ptr<KernelFactory> make_onednn_kernels(Precision precision = Precision::kF32,
                                                   const KernelChoices& choices = {});
// Defined only in builds with the CUDA backend (registry.cpp calls it only there).
std::unique_ptr<KernelFactory> make_cuda_kernels(int local_rank, const KernelChoices& choices);
// True when this build has the CUDA backend (HPDL_CUDA found nvcc and cuBLAS).
bool cuda_backend_built();
// The library whose GEMM runs BACKEND's dense and conv layers here: "oneDNN" or, with
// choices.gemm = blas, "OpenBLAS" for onednn; "cuBLAS"; "loops" (reference).
std::string gemm_library(Backend backend, const KernelChoices& choices = {});

}  // namespace hpdl
