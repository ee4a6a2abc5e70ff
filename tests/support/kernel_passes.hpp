// One dense or conv layer's forward and backward through a backend's kernel, for tests
// that compare backends or kernel variants: y, dx, dw (added onto a non-zero start) and db,
// from inputs drawn by `values` (n, seed); and an LSTM step's two recurrent products.
#pragma once
#include <cmath>
#include <vector>

#include "hpdl/kernels/kernels.hpp"

namespace hpdl {

using ValuesFn = std::vector<float> (*)(int64_t, uint64_t);

inline std::vector<std::vector<float>> dense_pass(KernelFactory& k, DenseDims d, ValuesFn values) {
  const auto x = values(d.batch * d.in, 1), w = values(d.out * d.in, 2);
  const auto b = values(d.out, 3), dy = values(d.batch * d.out, 4);
  std::vector<float> y(d.batch * d.out), dx(d.batch * d.in), dw = values(d.out * d.in, 5);
  std::vector<float> db = values(d.out, 6);
  auto kernel = k.dense(d);
  kernel->forward(x.data(), w.data(), b.data(), y.data());
  kernel->backward(x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data());
  return {y, dx, dw, db};
}

inline std::vector<std::vector<float>> conv_pass(KernelFactory& k, ConvDims d, ValuesFn values) {
  const int64_t nx = d.batch * d.in_c * d.in_h * d.in_w,
                nw = d.out_c * d.in_c * d.kernel * d.kernel;
  const int64_t ny = d.batch * d.out_c * d.out_h() * d.out_w();
  const auto x = values(nx, 11), w = values(nw, 12), b = values(d.out_c, 13), dy = values(ny, 14);
  std::vector<float> y(ny), dx(nx), dw = values(nw, 15), db = values(d.out_c, 16);
  auto kernel = k.conv(d);
  kernel->forward(x.data(), w.data(), b.data(), y.data());
  kernel->backward(x.data(), w.data(), dy.data(), dx.data(), dw.data(), db.data());
  return {y, dx, dw, db};
}

// rec = h wh^T and dh = d wh through a backend's RecurrentProductKernel.
inline std::vector<std::vector<float>> recurrent_pass(KernelFactory& k, RecurrentDims d,
                                                      ValuesFn values) {
  const int64_t G = 4 * d.hidden;
  const auto wh = values(G * d.hidden, 21), h = values(d.batch * d.hidden, 22),
             dg = values(d.batch * G, 23);
  std::vector<float> rec(d.batch * G), dh(d.batch * d.hidden);
  auto kernel = k.recurrent_product(d);
  kernel->use_weights(wh.data());
  kernel->forward(h.data(), rec.data());
  kernel->backward(dg.data(), dh.data());
  return {rec, dh};
}

inline  // ||a - b|| / ||b||.
    double
    relative_error(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0, n = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    d += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    n += double(b[i]) * b[i];
  }
  return std::sqrt(d / n);
}

}  // namespace hpdl
