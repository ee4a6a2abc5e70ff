// Softmax cross-entropy: the arithmetic is the backend's kernel; here its buffers.
#include "hpdl/nn/loss.hpp"

namespace hpdl {

SoftmaxCrossEntropy::SoftmaxCrossEntropy(KernelFactory& kernels, int64_t batch, int64_t classes)
    : classes_(classes),
      kernel_(kernels.softmax_xent(batch, classes)),
      probs_(batch * classes, kernels.device()),
      probs_host_(kernels.device(), probs_.span()) {}

// The loss is returned to the host: the one value a training step reads back.
double SoftmaxCrossEntropy::forward(const float* logits, const int32_t* labels, int64_t n_valid) {
  return kernel_->forward(logits, labels, n_valid, probs_.data());
}

void SoftmaxCrossEntropy::probs_to_host() { probs_host_.download(); }

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
