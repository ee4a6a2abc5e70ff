// The LSTM cell as loops over a step's samples (loop_kernels.hpp), each sample's units
// vectorised (element_math.hpp's fast sigmoid and tanh); on the oneDNN backend also whole
// sequences, the per-step products with the recurrent weights as panel products
// (panel_gemm.hpp). The per-step entry points read the next step's rows ahead
// (LstmCellKernel's `ahead`).
#include <algorithm>
#include <cstring>
#include <memory>

#include "aligned_floats.hpp"
#include "element_math.hpp"
#include "loop_kernels.hpp"
#include "panel_gemm.hpp"

namespace hpdl {
namespace {

class LoopLstmCell final : public LstmCellKernel {
 public:
  // Threads from 8 Ki units a step: the gate loop is short and runs once per step. With
  // `sequences`, whole sequences with their products here (forward_sequence).
  LoopLstmCell(const LstmCellDims& d, bool parallel, bool sequences)
      : d_(d),
        parallel_(parallel && d.batch * d.hidden > 8192),
        y_step_(d.row_stride ? d.row_stride : d.hidden) {
    if (sequences) {
      const int64_t H = d.hidden, G = 4 * H;
      wh_t_ = std::make_unique<PanelMatrix>(H, G);
      wh_ = std::make_unique<PanelMatrix>(G, H);
      zeros_.assign(size_t(kBlock * H), 0.0f);
    }
  }

  void forward(const float* pre, int64_t ld_pre, const float* rec, const float* c_prev,
               float* gates, float* c, float* tanh_c, float* h, float* y, int64_t ld_y,
               int64_t ahead) override {
    const int64_t N = d_.batch, H = d_.hidden, G = 4 * H;
#pragma omp parallel for if (parallel_)
    for (int64_t n = 0; n < N; ++n) {
      if (ahead) {
        read_ahead(pre + n * ld_pre + ahead * G, G);
        write_ahead(y + n * ld_y + ahead * y_step_, H);
      }
      math::lstm_cell_forward(pre + n * ld_pre, rec + n * G, c_prev + n * H, gates + n * G,
                              c + n * H, tanh_c + n * H, h + n * H, y + n * ld_y, H);
    }
  }

  void backward(const float* gates, const float* tanh_c, const float* c_prev, const float* dy,
                int64_t ld_dy, const float* dh, float* dc, float* d_step, float* d_seq,
                int64_t ld_seq, int64_t ahead) override {
    const int64_t N = d_.batch, H = d_.hidden, G = 4 * H;
#pragma omp parallel for if (parallel_)
    for (int64_t n = 0; n < N; ++n) {
      if (ahead) {
        read_ahead(dy + n * ld_dy + ahead * y_step_, H);
        if (d_seq) write_ahead(d_seq + n * ld_seq + ahead * G, G);
      }
      float* d = d_step + n * G;
      math::lstm_cell_backward(gates + n * G, tanh_c + n * H, c_prev + n * H, dy + n * ld_dy,
                               dh + n * H, dc + n * H, d, H);
      std::memcpy(d_seq + n * ld_seq, d, G * sizeof(float));
    }
  }

  // A block of kBlock samples through all T steps, then the next block (on the threads, one
  // block each, outside a parallel region): each sample's rows of pre and y lie one after
  // another along its sequence, so a block reads and writes kBlock streams the hardware
  // prefetcher follows, where a whole step would touch N rows a sequence apart. A row's
  // sums do not depend on the block it is in.
  bool forward_sequence(int64_t T, bool reverse, const float* pre, const float* wh, float* gates,
                        float* c, float* tanh_c, float* h, float* y) override {
    if (!wh_t_) return false;
    const int64_t N = d_.batch, H = d_.hidden, G = 4 * H, W = y_step_;
    wh_t_->pack(wh, 1, H);  // wh^T [H, G]
#pragma omp parallel for schedule(static, 1) if (N > kBlock)
    for (int64_t n0 = 0; n0 < N; n0 += kBlock) {
      const int64_t rows = std::min(kBlock, N - n0);
      AlignedFloats rec(size_t(kBlock * G));
      for (int64_t s = 0; s < T; ++s) {
        const int64_t t = reverse ? T - 1 - s : s, at = s * N + n0;
        const float* h_prev = s ? h + (at - N) * H : zeros_.data();
        const float* c_prev = s ? c + (at - N) * H : zeros_.data();
        wh_t_->multiply(rows, h_prev, H, rec.data(), G);
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t n = n0 + r, row = at + r;
          math::lstm_cell_forward(pre + (n * T + t) * G, rec.data() + r * G, c_prev + r * H,
                                  gates + row * G, c + row * H, tanh_c + row * H, h + row * H,
                                  y + (n * T + t) * W, H);
        }
      }
    }
    return true;
  }

  bool backward_sequence(int64_t T, bool reverse, const float* wh, const float* gates,
                         const float* c, const float* tanh_c, const float* dy, float* d_step,
                         float* d_seq) override {
    if (!wh_) return false;
    const int64_t N = d_.batch, H = d_.hidden, G = 4 * H, W = y_step_;
    wh_->pack(wh, H, 1);
#pragma omp parallel for schedule(static, 1) if (N > kBlock)
    for (int64_t n0 = 0; n0 < N; n0 += kBlock) {
      const int64_t rows = std::min(kBlock, N - n0);
      AlignedFloats dh(size_t(kBlock * H), 0.0f), dc(size_t(kBlock * H), 0.0f);
      for (int64_t s = T - 1; s >= 0; --s) {
        const int64_t t = reverse ? T - 1 - s : s, at = s * N + n0;
        const float* c_prev = s ? c + (at - N) * H : zeros_.data();
        for (int64_t r = 0; r < rows; ++r) {
          const int64_t n = n0 + r, row = at + r;
          float* d = d_step + row * G;
          math::lstm_cell_backward(gates + row * G, tanh_c + row * H, c_prev + r * H,
                                   dy + (n * T + t) * W, dh.data() + r * H, dc.data() + r * H, d,
                                   H);
          std::memcpy(d_seq + (n * T + t) * G, d, G * sizeof(float));
        }
        // dh for step s-1; h_{-1} = 0, so the first step passes nothing further back.
        if (s > 0) wh_->multiply(rows, d_step + at * G, G, dh.data(), H);
      }
    }
    return true;
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

  static constexpr int64_t kBlock = 12;  // samples a thread takes through a sequence

  LstmCellDims d_;
  bool parallel_;
  int64_t y_step_;                          // floats between a sample's steps in y and dy
  std::unique_ptr<PanelMatrix> wh_t_, wh_;  // [H, G], [G, H]: with `sequences` only
  AlignedFloats zeros_;                     // h_{-1} = c_{-1} = 0 for a block
};

}  // namespace

std::unique_ptr<LstmCellKernel> make_loop_lstm_cell(const LstmCellDims& d, bool parallel) {
  return std::make_unique<LoopLstmCell>(d, parallel, parallel);
}

}  // namespace hpdl
