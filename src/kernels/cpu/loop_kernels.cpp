// Softmax cross-entropy, dropout, the LSTM cell, ScalarNorm, tanh and sigmoid as loops (see
// loop_kernels.hpp). Threads start above 64 Ki elements (8 Ki units for the LSTM cell);
// below, a parallel region costs more than it saves. The LSTM cell reads the next step's
// rows ahead (LstmCellKernel's `ahead`).
#include "loop_kernels.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "../device_math.hpp"
#include "../element_math.hpp"
#include "hpdl/core/error.hpp"

namespace hpdl {
namespace {

constexpr int64_t kParallelFrom = int64_t{1} << 16;

class LoopSoftmaxXent final : public SoftmaxXentKernel {
 public:
  LoopSoftmaxXent(int64_t batch, int64_t classes, bool parallel)
      : batch_(batch), classes_(classes), parallel_(parallel && batch * classes > kParallelFrom) {}

  double forward(const float* logits, const int32_t* labels, int64_t n_valid,
                 float* probs) override {
    const int64_t K = classes_;
    double total = 0;
#pragma omp parallel for reduction(+ : total) if (parallel_)
    for (int64_t n = 0; n < batch_; ++n) {
      const int32_t label = n < n_valid ? labels[n] : -1;
      total += math::softmax_row(logits + n * K, K, label, probs + n * K);
    }
    return total;
  }

  void backward(const float* probs, const int32_t* labels, float scale, float* dlogits) override {
    const int64_t K = classes_;
#pragma omp parallel for if (parallel_)
    for (int64_t n = 0; n < batch_; ++n)
      for (int64_t k = 0; k < K; ++k)
        dlogits[n * K + k] = math::xent_grad(probs[n * K + k], k == labels[n], scale);
  }

 private:
  int64_t batch_, classes_;
  bool parallel_;
};

class LoopDropout final : public DropoutKernel {
 public:
  LoopDropout(const DropoutDims& d, bool parallel)
      : d_(d), parallel_(parallel && d.batch * d.per_sample > kParallelFrom) {}

  void forward(const float* x, const int64_t* sample_ids, uint64_t key, uint64_t stream,
               float* mask, float* y) override {
    const int64_t S = d_.per_sample;
#pragma omp parallel for if (parallel_)
    for (int64_t s = 0; s < d_.batch; ++s) {
      for (int64_t i = 0; i < S; ++i) {
        const float m = math::dropout_mask(key, stream, sample_ids[s], i, d_.keep);
        mask[s * S + i] = m;
        y[s * S + i] = x[s * S + i] * m;
      }
    }
  }

  void backward(const float* dy, const float* mask, float* dx) override {
    const int64_t n = d_.batch * d_.per_sample;
#pragma omp parallel for simd if (parallel : parallel_)
    for (int64_t i = 0; i < n; ++i) dx[i] = dy[i] * mask[i];
  }

 private:
  DropoutDims d_;
  bool parallel_;
};

// f(width) with width() the LSTM's hidden size H, a compile-time constant for the common
// sizes, else H itself. With a known trip count the gate loops lose their loop set-up (run
// 5 times a sample a step): HAR h32 (16 units a direction), 1 thread, batch 50, AVX-512:
// its residual LSTM layers' forward 3.61 -> 3.16-3.22 ms, backward 5.8 -> 5.4 ms; h64
// unchanged. Chosen once a call, outside the loop over samples.
template <typename F>
void with_width(int64_t H, const F& f) {
  switch (H) {
    case 16:
      return f(std::integral_constant<int64_t, 16>{});
    case 32:
      return f(std::integral_constant<int64_t, 32>{});
    case 64:
      return f(std::integral_constant<int64_t, 64>{});
    default:
      return f([H] { return H; });
  }
}

class LoopLstmCell final : public LstmCellKernel {
 public:
  // Threads from 8 Ki units a step: the gate loop is short and runs once per step.
  LoopLstmCell(const LstmCellDims& d, bool parallel)
      : d_(d),
        parallel_(parallel && d.batch * d.hidden > 8192),
        y_step_(d.row_stride ? d.row_stride : d.hidden) {}

  void forward(const float* pre, int64_t ld_pre, const float* rec, const float* c_prev,
               float* gates, float* c, float* tanh_c, float* h, float* y, int64_t ld_y,
               int64_t ahead) override {
    const int64_t N = d_.batch, H = d_.hidden, G = 4 * H;
    with_width(H, [&](auto width) {
#pragma omp parallel for if (parallel_)
      for (int64_t n = 0; n < N; ++n) {
        if (ahead) {
          read_ahead(pre + n * ld_pre + ahead * G, G);
          write_ahead(y + n * ld_y + ahead * y_step_, H);
        }
        math::lstm_cell_forward(pre + n * ld_pre, rec + n * G, c_prev + n * H, gates + n * G,
                                c + n * H, tanh_c + n * H, h + n * H, y + n * ld_y, width());
      }
    });
  }

  void backward(const float* gates, const float* tanh_c, const float* c_prev, const float* dy,
                int64_t ld_dy, const float* dh, float* dc, float* d_step, float* d_seq,
                int64_t ld_seq, int64_t ahead) override {
    const int64_t N = d_.batch, H = d_.hidden, G = 4 * H;
    with_width(H, [&](auto width) {
#pragma omp parallel for if (parallel_)
      for (int64_t n = 0; n < N; ++n) {
        if (ahead) {
          read_ahead(dy + n * ld_dy + ahead * y_step_, H);
          if (d_seq) write_ahead(d_seq + n * ld_seq + ahead * G, G);
        }
        float* d = d_step + n * G;
        math::lstm_cell_backward(gates + n * G, tanh_c + n * H, c_prev + n * H, dy + n * ld_dy,
                                 dh + n * H, dc + n * H, d, width());
        if (d_seq) std::memcpy(d_seq + n * ld_seq, d, G * sizeof(float));
      }
    });
  }

 private:
  // The cache lines of n floats at p, into the cache (to read, or to write): a step's rows
  // are a whole sequence apart, too many streams for the hardware's prefetcher (HAR 2x2,
  // 1 thread, `hpdl time`: 55.4 -> 52.5 ms an iteration reading pre and dy ahead, 49.8 ->
  // 47.5 also writing y ahead).
  static void read_ahead(const float* p, int64_t n) {
    for (int64_t k = 0; k < n; k += 64 / int64_t(sizeof(float))) __builtin_prefetch(p + k, 0);
  }
  static void write_ahead(float* p, int64_t n) {
    for (int64_t k = 0; k < n; k += 64 / int64_t(sizeof(float))) __builtin_prefetch(p + k, 1);
  }

  LstmCellDims d_;
  bool parallel_;
  int64_t y_step_;  // floats between a sample's steps in y and dy
};

class LoopScalarNorm final : public ScalarNormKernel {
 public:
  LoopScalarNorm(const ScalarNormDims& d, bool parallel)
      : d_(d), parallel_(parallel && d.batch * d.per_sample > kParallelFrom) {}

  void forward(const float* x, const float* gamma, const float* beta, float* xhat, float* inv_std,
               float* y) override {
    const int64_t M = d_.per_sample;
    const float g = *gamma, b = *beta;
#pragma omp parallel for if (parallel_)
    for (int64_t n = 0; n < d_.batch; ++n)
      inv_std[n] = math::scalar_norm_forward(x + n * M, M, d_.eps, g, b, xhat + n * M, y + n * M);
  }

  void backward(const float* dy, const float* xhat, const float* inv_std, const float* gamma,
                float* dx, float* dgamma, float* dbeta) override {
    const int64_t M = d_.per_sample;
    const float g = *gamma;
    double sum_gamma = 0, sum_beta = 0;
#pragma omp parallel for reduction(+ : sum_gamma, sum_beta) if (parallel_)
    for (int64_t n = 0; n < d_.batch; ++n) {
      double s = 0, sx = 0;
      math::scalar_norm_backward(dy + n * M, xhat + n * M, M, g, inv_std[n],
                                 dx ? dx + n * M : nullptr, &s, &sx);
      sum_beta += s, sum_gamma += sx;
    }
    *dgamma += static_cast<float>(sum_gamma);
    *dbeta += static_cast<float>(sum_beta);
  }

 private:
  ScalarNormDims d_;
  bool parallel_;
};

// C channels, each over its N x S values (S positions per channel); sums in double.
class LoopBatchNorm final : public BatchNormKernel {
 public:
  LoopBatchNorm(const BatchNormDims& d, bool parallel)
      : d_(d), parallel_(parallel && d.batch * d.channels * d.spatial > kParallelFrom) {}

  void forward_training(const float* x, const float* gamma, const float* beta, float* mean,
                        float* var, float* running_mean, float* running_var, float* y) override {
    const int64_t C = d_.channels, S = d_.spatial, M = d_.batch * S;
#pragma omp parallel for if (parallel_)
    for (int64_t c = 0; c < C; ++c) {
      double sum = 0, sq = 0;
      for (int64_t n = 0; n < d_.batch; ++n)
        for (const float* v = x + (n * C + c) * S; v < x + (n * C + c + 1) * S; ++v)
          sum += *v, sq += double(*v) * *v;
      const double m = sum / M, v = std::max(0.0, sq / M - m * m);
      mean[c] = static_cast<float>(m), var[c] = static_cast<float>(v);
      math::update_running(mean[c], var[c], M, d_.momentum, &running_mean[c], &running_var[c]);
    }
    apply(x, gamma, beta, mean, var, y);
  }

  void forward_inference(const float* x, const float* gamma, const float* beta,
                         const float* running_mean, const float* running_var, float* y) override {
    apply(x, gamma, beta, running_mean, running_var, y);
  }

  void backward(const float* x, const float* dy, const float* gamma, const float* mean,
                const float* var, float* dx, float* dgamma, float* dbeta) override {
    const int64_t C = d_.channels, S = d_.spatial, M = d_.batch * S;
#pragma omp parallel for if (parallel_)
    for (int64_t c = 0; c < C; ++c) {
      const float inv = 1.0f / std::sqrt(var[c] + d_.eps);
      double s = 0, sx = 0;
      for (int64_t n = 0; n < d_.batch; ++n)
        for (int64_t i = (n * C + c) * S; i < (n * C + c + 1) * S; ++i)
          s += dy[i], sx += double(dy[i]) * ((x[i] - mean[c]) * inv);
      dgamma[c] += static_cast<float>(sx), dbeta[c] += static_cast<float>(s);
      if (!dx) continue;
      const float k = gamma[c] * inv, mean_d = static_cast<float>(s / M),
                  mean_dx = static_cast<float>(sx / M);
      for (int64_t n = 0; n < d_.batch; ++n)
        for (int64_t i = (n * C + c) * S; i < (n * C + c + 1) * S; ++i)
          dx[i] = math::batch_norm_dx(dy[i], (x[i] - mean[c]) * inv, k, mean_d, mean_dx);
    }
  }

 private:
  void apply(const float* x, const float* gamma, const float* beta, const float* mean,
             const float* var, float* y) const {
    const int64_t C = d_.channels, S = d_.spatial;
#pragma omp parallel for if (parallel_)
    for (int64_t c = 0; c < C; ++c) {
      const float inv = 1.0f / std::sqrt(var[c] + d_.eps);
      for (int64_t n = 0; n < d_.batch; ++n)
        for (int64_t i = (n * C + c) * S; i < (n * C + c + 1) * S; ++i)
          y[i] = math::batch_norm_apply(x[i], mean[c], inv, gamma[c], beta[c]);
    }
  }

  BatchNormDims d_;
  bool parallel_;
};

// tanh and sigmoid with element_math's fast exp (the LSTM gates' functions): on AVX2
// oneDNN 2.6's tanh took 4 us for 2048 values against 1 us on AVX-512 (the MLP's 64 x 32).
class LoopActivation final : public ActivationKernel {
 public:
  LoopActivation(Activation a, int64_t n, bool parallel)
      : tanh_(a == Activation::kTanh), n_(n), parallel_(parallel && n > kParallelFrom) {}

  void forward(const float* __restrict x, float* __restrict y) override {
    if (tanh_) {
#pragma omp parallel for simd if (parallel : parallel_)
      for (int64_t i = 0; i < n_; ++i) y[i] = fast_tanh(x[i]);
    } else {
#pragma omp parallel for simd if (parallel : parallel_)
      for (int64_t i = 0; i < n_; ++i) y[i] = fast_sigmoid(x[i]);
    }
  }
  // From the output, as every backend (device_math.hpp); one loop per function, so the
  // switch folds away and the loop vectorises.
  void backward(const float* __restrict x, const float* __restrict y, const float* __restrict dy,
                float* __restrict dx) override {
    using dmath::activation_backward;
    if (tanh_) {
#pragma omp parallel for simd if (parallel : parallel_)
      for (int64_t i = 0; i < n_; ++i)
        dx[i] = activation_backward(Activation::kTanh, x[i], y[i], dy[i]);
    } else {
#pragma omp parallel for simd if (parallel : parallel_)
      for (int64_t i = 0; i < n_; ++i)
        dx[i] = activation_backward(Activation::kSigmoid, x[i], y[i], dy[i]);
    }
  }

 private:
  bool tanh_;
  int64_t n_;
  bool parallel_;
};

}  // namespace

std::unique_ptr<ActivationKernel> LoopKernels::smooth_activation(Activation a, int64_t n) {
  HPDL_REQUIRE(a != Activation::kRelu, "the loop activation is for tanh and sigmoid");
  return std::make_unique<LoopActivation>(a, n, parallel_);
}

LoopKernels::LoopKernels(bool parallel)
    : parallel_(parallel), ops_(parallel ? make_cpu_vector_ops() : make_reference_vector_ops()) {}

std::unique_ptr<SoftmaxXentKernel> LoopKernels::softmax_xent(int64_t batch, int64_t classes) {
  return std::make_unique<LoopSoftmaxXent>(batch, classes, parallel_);
}

std::unique_ptr<DropoutKernel> LoopKernels::dropout(const DropoutDims& d) {
  return std::make_unique<LoopDropout>(d, parallel_);
}

std::unique_ptr<LstmCellKernel> LoopKernels::lstm_cell(const LstmCellDims& d) {
  return std::make_unique<LoopLstmCell>(d, parallel_);
}

std::unique_ptr<ScalarNormKernel> LoopKernels::scalar_norm(const ScalarNormDims& d) {
  return std::make_unique<LoopScalarNorm>(d, parallel_);
}

std::unique_ptr<BatchNormKernel> LoopKernels::batch_norm(const BatchNormDims& d) {
  return std::make_unique<LoopBatchNorm>(d, parallel_);
}

}  // namespace hpdl
