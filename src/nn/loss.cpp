// Numerically stable softmax cross-entropy (max-shifted, log-sum-exp in double).
#include "hpdl/nn/loss.hpp"

#include <cmath>

namespace hpdl {

SoftmaxCrossEntropy::SoftmaxCrossEntropy(int64_t batch, int64_t classes)
    : batch_(batch), classes_(classes), probs_(batch * classes) {}

double SoftmaxCrossEntropy::forward(const float* logits, const int32_t* labels, int64_t n_valid) {
  double total = 0;
  const int64_t K = classes_;
#pragma omp parallel for reduction(+ : total) if (batch_ * K > 65536)
  for (int64_t n = 0; n < batch_; ++n) {
    const float* z = logits + n * K;
    float* p = probs_.data() + n * K;
    float zmax = z[0];
    for (int64_t k = 1; k < K; ++k) zmax = std::max(zmax, z[k]);
    double sum = 0;
    for (int64_t k = 0; k < K; ++k) sum += std::exp(double(z[k]) - zmax);
    const double log_sum = std::log(sum);
    for (int64_t k = 0; k < K; ++k)
      p[k] = static_cast<float>(std::exp(double(z[k]) - zmax - log_sum));
    if (n < n_valid) total += log_sum - (double(z[labels[n]]) - zmax);
  }
  return total;
}

void SoftmaxCrossEntropy::backward(const int32_t* labels, float scale, float* dlogits) const {
  const int64_t K = classes_;
  for (int64_t n = 0; n < batch_; ++n)
    for (int64_t k = 0; k < K; ++k)
      dlogits[n * K + k] = (probs_[n * K + k] - (k == labels[n] ? 1.0f : 0.0f)) * scale;
}

int32_t SoftmaxCrossEntropy::predicted(int64_t n) const {
  const float* p = probs_.data() + n * classes_;
  int32_t best = 0;
  for (int64_t k = 1; k < classes_; ++k)
    if (p[k] > p[best]) best = static_cast<int32_t>(k);
  return best;
}

}  // namespace hpdl
