// Softmax cross-entropy on logits [N, K] with integer labels [N] in 0..K-1, on the model's
// backend (SoftmaxXentKernel). The forward keeps the probabilities for backward and for
// metrics; the backward writes (overwrites) dlogits = (p - onehot(label)) * scale, where the
// trainer passes scale = 1 / global batch so that summing rank gradients gives the mean
// over the global batch.
#pragma once
#include <cstdint>
#include <memory>

#include "hpdl/core/buffer.hpp"
#include "hpdl/core/host_mirror.hpp"
#include "hpdl/kernels/kernels.hpp"

namespace hpdl {

class SoftmaxCrossEntropy {
 public:
  SoftmaxCrossEntropy(KernelFactory& kernels, int64_t batch, int64_t classes);

  // Sum over the first n_valid rows of -log p(label). Rows past n_valid are padding.
  double forward(const float* logits, const int32_t* labels, int64_t n_valid);
  void backward(const int32_t* labels, float scale, float* dlogits);

  // Evaluation only (training never needs it): copies the last forward's probabilities to
  // the host (nothing to copy on the CPU backends), for predicted() and probs().
  void probs_to_host();
  // Arg-max class of row n, from the host copy.
  int32_t predicted(int64_t n) const;
  const float* probs() const { return probs_host_.data(); }

 private:
  int64_t classes_;
  std::unique_ptr<SoftmaxXentKernel> kernel_;
  Buffer probs_;  // [N, K] on the backend's device
  HostMirror probs_host_;
};

}  // namespace hpdl
