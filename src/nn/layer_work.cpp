// Every layer type's work() (profile/work.hpp), in one place so that the counting rules
// read side by side. F: 4 bytes per float. Shape letters as in each layer's header.
#include "hpdl/nn/batch_norm.hpp"
#include "hpdl/nn/branches.hpp"
#include "hpdl/nn/layers.hpp"
#include "hpdl/nn/recurrent.hpp"

namespace hpdl {
namespace {
constexpr double F = 4;
}

// [R, I] -> [R, O]: y = x w^T + b; backward dw += dy^T x, db += sum dy, dx = dy w.
LayerWork Dense::work(bool input_grad) const {
  const double R = double(rows_), I = double(in_), O = double(units_);
  LayerWork w;
  w.forward = {2 * R * I * O + R * O, F * (R * I + I * O + O + R * O)};
  w.backward = {2 * R * I * O + R * O, F * (R * I + R * O + 2 * I * O + 2 * O)};
  if (input_grad) w.backward += {2 * R * I * O, F * (I * O + R * I)};
  if (relu_) {  // an absorbed ReLU: in the product's write forward, a pass of its own backward
    w.forward.flops += R * O;
    w.backward.flops += R * O, w.backward.bytes += F * 3 * R * O;
  }
  return w;
}

// n elements: ReLU 1 operation each way; tanh and sigmoid 1 forward (a transcendental counted
// once, as profilers do), 3 backward (dy (1 - y^2), dy y (1 - y)). Read x, write y; read y
// and dy, write dx.
LayerWork ActivationLayer::work(bool input_grad) const {
  if (!fused_into_.empty()) return {};  // the absorbing layer's (MaxPool2d, Dense::work)
  const double n = double(n_), back = act_ == Activation::kRelu ? 1 : 3;
  LayerWork w;
  w.forward = {n, F * 2 * n};
  if (input_grad) w.backward = {back * n, F * 3 * n};
  return w;
}

LayerWork Flatten::work(bool) const { return {}; }  // a view: nothing moves

// [N, C, H, W] -> [N, K, P, Q] with K filters of C x k x k: M = N K P Q outputs, each
// C k^2 multiply-adds. Backward: dw and dx the same multiply-adds again, db a sum over M.
LayerWork Conv2d::work(bool input_grad) const {
  const ConvDims& d = dims_;
  const double x = double(d.batch * d.in_c * d.in_h * d.in_w);
  const double M = double(d.batch * d.out_c * d.out_h() * d.out_w());
  const double wn = double(d.out_c * d.in_c * d.kernel * d.kernel), K = double(d.out_c);
  const double mac = M * double(d.in_c * d.kernel * d.kernel);
  LayerWork w;
  w.forward = {2 * mac + M, F * (x + wn + K + M)};
  w.backward = {2 * mac + M, F * (x + M + 2 * wn + 2 * K)};
  if (input_grad) w.backward += {2 * mac, F * (wn + x)};
  return w;
}

// [N, C, H, W] -> [N, C, P, Q]: k^2 compares per output; backward adds each output's
// gradient at its window's maximum (read x, y and dy to find it, write dx).
LayerWork MaxPool2d::work(bool input_grad) const {
  const PoolDims& d = dims_;
  const double x = double(d.batch * d.channels * d.in_h * d.in_w);
  const double E = double(d.batch * d.channels * d.out_h() * d.out_w());
  LayerWork w;
  w.forward = {E * double(d.kernel * d.kernel), F * (x + E)};
  if (input_grad) w.backward = {E, F * (2 * x + 2 * E)};
  if (relu_) {  // an absorbed ReLU on the output: as ActivationLayer's on E elements
    w.forward.flops += E, w.forward.bytes += F * 2 * E;
    if (input_grad) w.backward.flops += E, w.backward.bytes += F * 3 * E;
  }
  return w;
}

// n elements: one multiply by the mask's scale each way (training). Read x, write the mask
// and y; read dy and the mask, write dx.
LayerWork Dropout::work(bool input_grad) const {
  const double n = double(batch_ * per_sample_);
  LayerWork w;
  w.forward = {n, F * 3 * n};
  if (input_grad) w.backward = {n, F * 3 * n};
  return w;
}

// M = N C S elements, C channels. Forward per element: mean 1, variance 2, normalise 2, scale
// and shift 2; backward 9 (recompute x-hat 2, dscale 2, dshift 1, dx 4). Read x (and dy),
// write y (dx); the per-channel parameters, read and (their gradients) read and written.
LayerWork BatchNorm::work(bool input_grad) const {
  const double M = double(batch_ * channels_ * spatial_), C = double(channels_);
  LayerWork w;
  w.forward = {7 * M, F * (2 * M + 4 * C)};
  w.backward = {9 * M, F * (2 * M + 6 * C) + (input_grad ? F * M : 0)};
  return w;
}

// The same per-element counts over N samples of M elements each, one scale and shift.
LayerWork ScalarNorm::work(bool input_grad) const {
  const double M = double(batch_ * per_sample_);
  LayerWork w;
  w.forward = {7 * M, F * (2 * M + 2)};
  w.backward = {9 * M, F * (2 * M + 4) + (input_grad ? F * M : 0)};
  return w;
}

// [N, T, C] -> [N, T, H], G = 4H gate rows. Forward: the input projection (N T C G
// multiply-adds), T recurrent products (N H G each), the bias, 9 operations per cell (4 gate
// nonlinearities, c = f c + i g: 3, tanh c, o tanh c). Backward: 14 per cell (the gates'
// derivatives), dWx (N T C G), dWh (N (T - 1) H G), db, the recurrent dh (N T G H) and dx
// (N T C G).
LayerWork Lstm::work(bool input_grad) const {
  const double N = double(batch_), T = double(steps_), C = double(in_), H = double(hidden_);
  const double G = 4 * H, weights = G * C + G * H + G;
  LayerWork w;
  w.forward = {2 * N * T * C * G + 2 * N * T * H * G + N * T * G + 9 * N * T * H,
               F * (N * T * C + weights + N * T * H)};
  w.backward = {
      14 * N * T * H + 2 * N * T * C * G + 2 * N * (T - 1) * H * G + N * T * G + 2 * N * T * G * H,
      F * (N * T * C + N * T * H + G * H + 2 * weights)};
  if (input_grad) w.backward += {2 * N * T * C * G, F * (G * C + N * T * C)};
  return w;
}

// [N, T, C] -> [N, C]: copies; backward writes the whole dx (zeros but the last step).
LayerWork LastStep::work(bool input_grad) const {
  const double N = double(batch_), T = double(steps_), C = double(channels_);
  LayerWork w;
  w.forward = {0, F * 2 * N * C};
  if (input_grad) w.backward = {0, F * (N * C + N * T * C)};
  return w;
}

// The branches' own work, then the join: a sum adds K outputs (K - 1 additions per output
// element), a concatenation copies; backward, every branch after the first adds its input
// gradient into dx.
LayerWork Branches::work(bool input_grad) const {
  LayerWork w;
  for (const auto& [name, chain] : branches_) w += chain.work(input_grad);
  const double K = double(branches_.size()), out = double(rows_ * width_);
  const double in = double(in_numel_);
  if (combine_ == Combine::kSum) {
    w.forward += {(K - 1) * out, F * (K + 1) * out};
  } else {  // the slices copied in and out, but for branches written in place
    double copied = 0;
    for (size_t k = 0; k < branches_.size(); ++k)
      if (k >= in_place_.size() || !in_place_[k]) copied += double(rows_ * widths_[k]);
    w.forward += {0, F * 2 * copied};
    w.backward += {0, F * 2 * copied};
  }
  if (input_grad) w.backward += {(K - 1) * in, F * (2 * K - 1) * in};
  return w;
}

LayerWork Chain::work(bool input_grad) const {
  LayerWork w;
  for (size_t i = 0; i < layers_.size(); ++i) w += layer_work(i, input_grad);
  return w;
}

}  // namespace hpdl
