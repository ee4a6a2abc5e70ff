// Softmax cross-entropy: the arithmetic is the backend's kernel; here its buffers.
#include "hpdl/nn/loss.hpp"

namespace hpdl {

SoftmaxCrossEntropy::SoftmaxCrossEntropy(KernelFactory& kernels, int64_t batch, int64_t classes)
    : classes_(classes),
      kernel_(kernels.softmax_xent(batch, classes)),
      probs_(batch * classes, kernels.device()),
      probs_host_(kernels.device(), probs_.span()) {}

// The loss is returned to the host: the one value a step reads back. The probabilities
// follow it for predicted() (a copy only off the host: N x K floats).
double SoftmaxCrossEntropy::forward(const float* logits, const int32_t* labels, int64_t n_valid) {
  const double sum = kernel_->forward(logits, labels, n_valid, probs_.data());
  probs_host_.download();
  return sum;
}

void SoftmaxCrossEntropy::backward(const int32_t* labels, float scale, float* dlogits) {
  kernel_->backward(probs_.data(), labels, scale, dlogits);
}

int32_t SoftmaxCrossEntropy::predicted(int64_t n) const {
  const float* p = probs_host_.data() + n * classes_;
  int32_t best = 0;
  for (int64_t k = 1; k < classes_; ++k)
    if (p[k] > p[best]) best = static_cast<int32_t>(k);
  return best;
}

}  // namespace hpdl
