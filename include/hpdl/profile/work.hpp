// The work of a layer's forward and backward pass at its set-up batch, from shapes alone
// (every layer type's count is in src/nn/layer_work.cpp, one place): floating-point
// operations, a multiply-add counting 2 (as PyTorch's `with_flops` and DeepSpeed's flops
// profiler count), and the bytes a pass must move at least: each input, output, weight and
// gradient tensor touched once, 4 bytes a float, an accumulated gradient read and written.
// Their ratio, the arithmetic intensity, places a pass under a machine's roofline.
// Element-wise counts per element (documented where counted): ReLU 1 / 1, tanh and sigmoid
// 1 / 3, dropout 1 / 1, normalisation 7 / 9, LSTM cell 9 / 14, max-pool window compare k^2 / 1.
#pragma once

namespace hpdl {

struct PassWork {
  double flops = 0, bytes = 0;
  PassWork& operator+=(const PassWork& o) {
    flops += o.flops, bytes += o.bytes;
    return *this;
  }
  double intensity() const { return bytes > 0 ? flops / bytes : 0; }  // FLOP per byte
};

struct LayerWork {
  PassWork forward, backward;
  LayerWork& operator+=(const LayerWork& o) {
    forward += o.forward, backward += o.backward;
    return *this;
  }
};

}  // namespace hpdl
