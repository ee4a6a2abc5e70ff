// Recurrent layers for sequence models (the HAR and HHAR LSTMs). Sequences are [N, T, C]
// row-major (batch, time, channels). The LSTM's products over whole sequences go through the
// backend's DenseKernel (oneDNN matmul on the CPU), the small per-step ones with the
// recurrent weights through its RecurrentProductKernel, its gate arithmetic through its
// fused LstmCellKernel.
#pragma once
#include <vector>

#include "hpdl/core/buffer.hpp"
#include "hpdl/nn/layer.hpp"

namespace hpdl {

// LSTM, sequence in and full sequence out: [N, T, C] -> [N, T, H], zero initial state.
// Gates in the order i, f, g, o: pre = x_t Wx^T + h_{t-1} Wh^T + b; c_t = f c_{t-1} + i g;
// h_t = o tanh(c_t). Parameters: wx [4H, C], wh [4H, H], b [4H] (forget-gate bias
// initialised to forget_bias, the others to 0). With reverse, the sequence is read from
// the last step to the first and the output keeps the input's time order (the backward
// half of a bidirectional LSTM).
class Lstm final : public Layer, PlanHooks {
 public:
  Lstm(int64_t hidden, float forget_bias, bool reverse)
      : hidden_(hidden), forget_bias_(forget_bias), reverse_(reverse) {
    set_plan_hooks(*this);
  }
  std::string kind() const override { return "lstm"; }
  LayerWork work(bool input_grad) const override;
  KernelChoice kernel_choice() const override;
  Shape setup(const Shape& in) override;
  std::vector<ParamSpec> param_specs() const override;
  void bind(std::vector<std::span<float>> p, std::vector<std::span<float>> g,
            KernelFactory& k) override;
  // On a CPU backend: the cell writes y and reads dy with rows `stride` apart (the GPU's
  // whole-sequence kernels keep them H apart).
  bool write_rows_apart(int64_t stride, KernelFactory& k) override;
  void run_on_own_thread() override { own_thread_ = true; }
  void forward(const float* x, float* y, const Pass&) override;
  void backward(const float* x, const float* y, const float* dy, float* dx, const Pass&) override;
  // The bias is initialised by the model; this value is added to the forget gate's part.
  float forget_bias() const { return forget_bias_; }

 private:
  int64_t step_index(int64_t s) const { return reverse_ ? steps_ - 1 - s : s; }
  // The time loops: two or three small operations a step, recorded once per output (or
  // output-gradient) buffer and run as one (Device::record: a CUDA graph on a GPU).
  void forward_steps(float* y);
  struct BackwardBuffers {
    const float *x, *dy;
    float* dx;
    bool by_step;  // the recurrent kernel takes the weight and input gradients
    bool operator==(const BackwardBuffers&) const = default;
  };
  void backward_steps(const BackwardBuffers& b);

  int64_t hidden_, batch_ = 0, steps_ = 0, in_ = 0;
  int64_t row_stride_ = 0;  // floats between rows of y and dy: H, or wider inside a concat
  float forget_bias_;
  bool reverse_;
  bool own_thread_ = false;  // on a branch's own thread (PlanHooks::run_on_own_thread)
  bool by_step_ = false;     // backward takes its gradients a step at a time (bind)
  std::span<float> wx_, wh_, b_, dwx_, dwh_, db_;
  // [N*T, C] -> [N*T, 4H]; [(T-1)*N, H] -> [.., 4H] for dWh; the per-step products with wh
  std::unique_ptr<DenseKernel> input_, recurrent_all_;
  std::unique_ptr<RecurrentProductKernel> recurrent_;
  std::unique_ptr<LstmCellKernel> cell_;
  Buffer pre_;         // [N*T, 4H]: input projections, then (backward) gate gradients
  Buffer gates_;       // [T, N, 4H]: i, f, g, o after their nonlinearities (processing order)
  Buffer cells_;       // [T, N, H]: c_t
  Buffer tanh_cells_;  // [T, N, H]: tanh(c_t), reused by backward
  Buffer hiddens_;     // [T, N, H]: h_t in processing order (contiguous per step for matmuls)
  Buffer rec_;         // [N, 4H]: h_{t-1} Wh^T
  Buffer dpre_;        // [T, N, 4H]: gate gradients in processing order
  Buffer zeros_;       // [N*H]: h_{-1} = c_{-1} = 0
  Buffer dh_, dc_;     // [N, H]: gradients flowing to the previous step
  Device* device_ = nullptr;
  std::unique_ptr<Recording> forward_loop_, backward_loop_;
  const float* forward_for_ = nullptr;  // the y forward_loop_ writes
  BackwardBuffers backward_for_{};      // what backward_loop_ reads and writes
};

// The last time step of a sequence: [N, T, C] -> [N, C] (many-to-one classification).
class LastStep final : public Layer {
 public:
  std::string kind() const override { return "last_step"; }
  LayerWork work(bool input_grad) const override;
  Shape setup(const Shape& in) override;
  void bind(std::vector<std::span<float>>, std::vector<std::span<float>>,
            KernelFactory& k) override {
    ops_ = &k.ops();
  }
  void forward(const float* x, float* y, const Pass&) override;
  void backward(const float* x, const float* y, const float* dy, float* dx, const Pass&) override;

 private:
  int64_t batch_ = 0, steps_ = 0, channels_ = 0;
  VectorOps* ops_ = nullptr;
};

}  // namespace hpdl
