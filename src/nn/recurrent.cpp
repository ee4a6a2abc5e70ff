// LSTM and last-step layers. The LSTM runs the input projection for all steps as one
// matrix product, then one small recurrent product and one fused gate kernel per step;
// backward runs the steps in reverse with one small product per step for dh, and takes
// the Wh, Wx and b gradients and dx either in one product each over all steps at the end,
// or, where the backend's recurrent kernel takes them (gradients_by_step: the oneDNN
// backend, on one thread or with its products shared), a step at a time from the step's
// gate gradients while they are in the cache. A backend may
// run a whole time loop in one call (the CUDA backend: one kernel); otherwise each loop is
// recorded once and run as one (on a GPU, a CUDA graph: 128 steps are 384 small kernels,
// which launched one by one leave the GPU waiting on launches).
// N batch, T steps, C inputs, H hidden, G = 4H.
#include "hpdl/nn/recurrent.hpp"

#include <algorithm>
#include <cmath>

#include "hpdl/core/error.hpp"

namespace hpdl {

Shape Lstm::setup(const Shape& in) {
  HPDL_REQUIRE(in.rank() == 3,
               "lstm layer '" + name() + "' needs a sequence [N, T, C], got " + in.str());
  batch_ = in[0], steps_ = in[1], in_ = in[2];
  row_stride_ = hidden_;
  return Shape{{batch_, steps_, hidden_}};
}

std::vector<ParamSpec> Lstm::param_specs() const {
  const int64_t G = 4 * hidden_;
  return {{"wx", G * in_, true, Init::kGlorotUniform, in_, G},
          {"wh", G * hidden_, true, Init::kGlorotUniform, hidden_, G},
          {"b", G, false, Init::kLstmBias, in_, G, forget_bias_}};
}

void Lstm::bind(std::vector<std::span<float>> p, std::vector<std::span<float>> g,
                KernelFactory& k) {
  wx_ = p[0], wh_ = p[1], b_ = p[2], dwx_ = g[0], dwh_ = g[1], db_ = g[2];
  const int64_t N = batch_, T = steps_, H = hidden_, G = 4 * H;
  input_ = k.dense({N * T, in_, G});
  recurrent_ = k.recurrent_product({N, H, in_, own_thread_ ? 1 : 0});
  by_step_ = recurrent_->gradients_by_step();
  if (T > 1) recurrent_all_ = k.dense({(T - 1) * N, H, G});
  cell_ = k.lstm_cell({N, H, row_stride_});
  pre_ = Buffer(N * T * G, k.device());
  gates_ = Buffer(T * N * G, k.device());
  cells_ = Buffer(T * N * H, k.device());
  tanh_cells_ = Buffer(T * N * H, k.device());
  hiddens_ = Buffer(T * N * H, k.device());
  rec_ = Buffer(N * G, k.device());
  dpre_ = Buffer(T * N * G, k.device());
  zeros_ = Buffer(N * H, k.device());
  dh_ = Buffer(N * H, k.device());
  dc_ = Buffer(N * H, k.device());
  device_ = &k.device();
  forward_loop_.reset(), backward_loop_.reset();  // they hold the old buffers
}

KernelChoice Lstm::kernel_choice() const {
  if (by_step_)  // the panel kernel's rule (kernels/cpu/recurrent_product.cpp)
    return {"weight and input gradients a step at a time",
            "panels of two vectors on a thread of its own"};
  const KernelChoice in = input_ ? input_->choice() : KernelChoice{};
  const KernelChoice rec = recurrent_all_ ? recurrent_all_->choice() : KernelChoice{};
  if (in.empty() && rec.empty()) return {};
  return {"input weights: " + (in.empty() ? "dy^T x" : in.kernel) +
              "; recurrent weights: " + (rec.empty() ? "dy^T x" : rec.kernel),
          in.empty() ? rec.reason : in.reason};
}

bool Lstm::write_rows_apart(int64_t stride, KernelFactory& k) {
  if (!k.device().host_accessible() || stride < hidden_) return false;
  row_stride_ = stride;
  cell_ = k.lstm_cell({batch_, hidden_, row_stride_});
  forward_loop_.reset(), backward_loop_.reset();
  return true;
}

void Lstm::forward(const float* x, float* y, const Pass&) {
  input_->forward(x, wx_.data(), b_.data(), pre_.data());
  if (cell_->forward_sequence(steps_, reverse_, pre_.data(), wh_.data(), gates_.data(),
                              cells_.data(), tanh_cells_.data(), hiddens_.data(), y))
    return;
  if (!forward_loop_ || forward_for_ != y) {
    forward_loop_ = device_->record([this, y] { forward_steps(y); });
    forward_for_ = y;
  }
  forward_loop_->run();
}

void Lstm::forward_steps(float* y) {
  const int64_t N = batch_, T = steps_, H = hidden_, G = 4 * H, W = row_stride_;
  recurrent_->use_weights(wh_.data());
  for (int64_t s = 0; s < T; ++s) {
    const int64_t t = step_index(s);
    const float* h_prev = s ? hiddens_.data() + (s - 1) * N * H : zeros_.data();
    const float* c_prev = s ? cells_.data() + (s - 1) * N * H : zeros_.data();
    recurrent_->forward(h_prev, rec_.data());
    float* gates = gates_.data() + s * N * G;
    float* cells = cells_.data() + s * N * H;
    float* tanh_c = tanh_cells_.data() + s * N * H;
    float* hid = hiddens_.data() + s * N * H;
    // Sample n's step t is row n * T + t of the [N*T, .] input projection and output.
    const int64_t ahead = s + 1 < T ? step_index(s + 1) - t : 0;
    cell_->forward(pre_.data() + t * G, T * G, rec_.data(), c_prev, gates, cells, tanh_c, hid,
                   y + t * W, T * W, ahead);
  }
}

void Lstm::backward(const float* x, const float*, const float* dy, float* dx, const Pass&) {
  const int64_t N = batch_, G = 4 * hidden_;
  if (!cell_->backward_sequence(steps_, reverse_, wh_.data(), gates_.data(), cells_.data(),
                                tanh_cells_.data(), dy, dpre_.data(), pre_.data())) {
    dh_.zero();
    dc_.zero();
    const BackwardBuffers now{x, dy, dx, by_step_};
    if (!backward_loop_ || backward_for_ != now) {
      backward_loop_ = device_->record([this, now] { backward_steps(now); });
      backward_for_ = now;
    }
    backward_loop_->run();
    if (by_step_) return;
  }
  // dWh = sum over s >= 1 of dpre_s^T h_{s-1}: one product over all steps.
  if (recurrent_all_) {
    recurrent_all_->backward(hiddens_.data(), wh_.data(), dpre_.data() + N * G, nullptr,
                             dwh_.data(), nullptr);
  }
  input_->backward(x, wx_.data(), pre_.data(), dx, dwx_.data(), db_.data());
}

void Lstm::backward_steps(const BackwardBuffers& b) {
  const int64_t N = batch_, T = steps_, H = hidden_, G = 4 * H, W = row_stride_, C = in_;
  const bool by_step = b.by_step;
  recurrent_->use_weights(wh_.data());
  if (by_step) recurrent_->use_input_weights(wx_.data());
  for (int64_t s = T - 1; s >= 0; --s) {
    const int64_t t = step_index(s);
    const float* gates = gates_.data() + s * N * G;
    const float* tanh_c = tanh_cells_.data() + s * N * H;
    const float* c_prev = s ? cells_.data() + (s - 1) * N * H : zeros_.data();
    const float* h_prev = s ? hiddens_.data() + (s - 1) * N * H : nullptr;
    // The step's gate gradients [N, G] for the products that follow: by step in one place
    // that stays in the cache (3 % on HAR h64), else where the products over all steps after
    // the loop read them, in dpre_ and pre_ [N*T, G].
    float* d_step = dpre_.data() + (by_step ? 0 : s * N * G);
    float* d_seq = by_step ? nullptr : pre_.data() + t * G;
    float* dh = dh_.data();
    const int64_t ahead = s > 0 ? step_index(s - 1) - t : 0;
    cell_->backward(gates, tanh_c, c_prev, b.dy + t * W, T * W, dh, dc_.data(), d_step, d_seq,
                    T * G, ahead);
    // dh for step s-1; h_{-1} = 0, so the first step passes nothing further back.
    if (s > 0) recurrent_->backward(d_step, dh);
    if (by_step) {
      recurrent_->step_gradients(d_step, h_prev, b.x + t * C, b.dx ? b.dx + t * C : nullptr, T * C,
                                 dwh_.data(), dwx_.data(), db_.data());
    }
  }
}

Shape LastStep::setup(const Shape& in) {
  HPDL_REQUIRE(in.rank() == 3,
               "last_step layer '" + name() + "' needs a sequence [N, T, C], got " + in.str());
  batch_ = in[0], steps_ = in[1], channels_ = in[2];
  return Shape{{batch_, channels_}};
}

void LastStep::forward(const float* x, float* y, const Pass&) {
  const int64_t T = steps_, C = channels_;
  ops_->copy_rows(batch_, C, x + (T - 1) * C, T * C, y, C);
}

void LastStep::backward(const float*, const float*, const float* dy, float* dx, const Pass&) {
  if (!dx) return;
  const int64_t T = steps_, C = channels_;
  ops_->fill(batch_ * T * C, 0.0f, dx);
  ops_->copy_rows(batch_, C, dy, C, dx + (T - 1) * C, T * C);
}

}  // namespace hpdl
