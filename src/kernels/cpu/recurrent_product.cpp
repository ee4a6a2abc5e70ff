// The LSTM's per-step products with its recurrent weights (kernels.hpp): by default two
// products of the backend's dense kernel; on the oneDNN backend the panel product
// (panel_gemm.hpp), the weights laid out once per pass, and a backward step's weight and
// input gradients from the step's gate gradients while they are in the cache (the sums of
// outer products and a panel product with the input weights).
#include "recurrent_product.hpp"

#include <omp.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>

#include "../element_math.hpp"
#include "hpdl/core/buffer.hpp"
#include "hpdl/kernels/kernels.hpp"
#include "panel_gemm.hpp"
#include "vector_width.hpp"

namespace hpdl {
namespace {

// rec = h wh^T + 0 through the dense kernel's forward (a zero bias on the backend's device),
// dh = d wh through its backward's input gradient.
class DenseRecurrentProduct final : public RecurrentProductKernel {
 public:
  DenseRecurrentProduct(KernelFactory& k, const RecurrentDims& d)
      : dense_(k.dense({d.batch, d.hidden, 4 * d.hidden})), zeros_(4 * d.hidden, k.device()) {
    zeros_.zero();
  }
  void use_weights(const float* wh) override { wh_ = wh; }
  void forward(const float* h, float* rec) override { dense_->forward(h, wh_, zeros_.data(), rec); }
  void backward(const float* d, float* dh) override {
    dense_->backward(nullptr, wh_, d, dh, nullptr, nullptr);
  }

 private:
  std::unique_ptr<DenseKernel> dense_;
  Buffer zeros_;
  const float* wh_ = nullptr;
};

// Shared over the rank's threads from kShareFrom multiply-adds (HHAR's 64 x 64 by 64 x 256 a
// step); HAR's 50 x 16 by 16 x 64 is over before a parallel region would have started.
constexpr int64_t kShareFrom = int64_t{1} << 20;

class PanelRecurrentProduct final : public RecurrentProductKernel {
 public:
  PanelRecurrentProduct(const RecurrentDims& d, int threads)
      : n_(d.batch),
        h_(d.hidden),
        c_(d.inputs),
        share_(n_ * h_ * 4 * h_ >= kShareFrom),
        threads_(threads),
        wh_t_(d.hidden, 4 * d.hidden),
        wh_(4 * d.hidden, d.hidden) {
    if (c_ == 0) return;
    wx_.emplace(4 * h_, c_);
    x_.resize(size_t(n_ * c_));
    dx_.resize(size_t(n_ * c_));
  }
  void use_weights(const float* wh) override {
    wh_t_.pack(wh, 1, h_);  // wh^T(i, j) = wh[j, i]
    wh_.pack(wh, h_, 1);
  }
  void forward(const float* h, float* rec) override {
    wh_t_.multiply(n_, h, h_, rec, 4 * h_, threads());
  }
  void backward(const float* d, float* dh) override {
    wh_.multiply(n_, d, 4 * h_, dh, h_, threads());
  }

  // Where the sums' panels are two vectors wide (H and C at least 32 floats with AVX-512, 16
  // with AVX2): a one-vector panel broadcasts a value for every multiply-add (HAR h32 on
  // AVX-512, 16 units a direction: 3 % slower at batch 50). A step's sums are too small to
  // share over threads unless its products are (HHAR's): where threads would wait beside
  // them (an LSTM outside a branch on a rank of several threads: HAR's baseline, 0.94x), the
  // products over all steps after the loop share them instead.
  bool gradients_by_step() const override {
    return wx_ && std::min(h_, c_) >= 2 * kVectorFloats && (share_ || available() == 1);
  }
  void use_input_weights(const float* wx) override { wx_->pack(wx, c_, 1); }
  void step_gradients(const float* d, const float* h_prev, const float* x, float* dx, int64_t ld,
                      float* dwh, float* dwx, float* db) override {
    const int64_t N = n_, H = h_, G = 4 * h_, C = c_;
    const int threads = this->threads();
    // The step's rows of x and dx lie a whole sequence apart (ld floats), in the same few
    // cache sets; read and written through contiguous copies (HAR h64, batch 50: 4 % faster).
    for (int64_t k = 0; k < N; ++k) std::memcpy(x_.data() + k * C, x + k * ld, C * sizeof(float));
    if (h_prev) add_outer_products(N, G, H, d, G, h_prev, H, dwh, H, threads);
    add_outer_products(N, G, C, d, G, x_.data(), C, dwx, C, threads);
    math::add_row_sums(d, N, G, db);
    if (!dx) return;
    wx_->multiply(N, d, G, dx_.data(), C, threads);
    for (int64_t k = 0; k < N; ++k) std::memcpy(dx + k * ld, dx_.data() + k * C, C * sizeof(float));
  }

 private:
  // The threads a product may take: inside a parallel region (an LSTM on a branch's thread)
  // the calling thread alone, else the factory's (0: all the rank's).
  int available() const {
    if (omp_in_parallel()) return 1;
    return threads_ > 0 ? threads_ : omp_get_max_threads();
  }
  int threads() const { return share_ ? available() : 1; }

  int64_t n_, h_, c_;
  bool share_;                     // large enough to share over threads
  int threads_;                    // the factory's threads (0: all)
  PanelMatrix wh_t_, wh_;          // [H, G] and [G, H]
  std::optional<PanelMatrix> wx_;  // [G, C], where the dims name C
  AlignedFloats x_, dx_;           // [N, C]: a step's rows of x and dx, contiguous
};

}  // namespace

std::unique_ptr<RecurrentProductKernel> KernelFactory::recurrent_product(const RecurrentDims& d) {
  return std::make_unique<DenseRecurrentProduct>(*this, d);
}

std::unique_ptr<RecurrentProductKernel> make_panel_recurrent_product(const RecurrentDims& d,
                                                                     int threads) {
  return std::make_unique<PanelRecurrentProduct>(d, threads);
}

}  // namespace hpdl
