// Accuracy, weighted F1 and confusion-matrix printing.
#include "hpdl/train/metrics.hpp"

#include <algorithm>
#include <cstdio>
#include <numeric>

namespace hpdl {

int64_t ConfusionMatrix::total() const {
  return std::accumulate(counts_.begin(), counts_.end(), int64_t{0});
}

double ConfusionMatrix::accuracy() const {
  int64_t right = 0;
  for (int64_t k = 0; k < k_; ++k) right += at(k, k);
  const int64_t n = total();
  return n ? double(right) / n : 0.0;
}

double ConfusionMatrix::weighted_f1() const {
  double weighted = 0;
  const int64_t n = total();
  if (!n) return 0;
  for (int64_t k = 0; k < k_; ++k) {
    int64_t support = 0, predicted = 0;
    for (int64_t j = 0; j < k_; ++j) support += at(k, j), predicted += at(j, k);
    const double tp = at(k, k);
    const double precision = predicted ? tp / predicted : 0, recall = support ? tp / support : 0;
    const double f1 = precision + recall > 0 ? 2 * precision * recall / (precision + recall) : 0;
    weighted += f1 * support;
  }
  return weighted / n;
}

static std::string label(const std::vector<std::string>& names, int64_t k) {
  return k < static_cast<int64_t>(names.size()) ? names[k] : std::to_string(k);
}

std::string ConfusionMatrix::table(const std::vector<std::string>& names) const {
  size_t w = 6;
  for (int64_t k = 0; k < k_; ++k) w = std::max(w, label(names, k).size() + 1);
  std::string out;
  char cell[64];
  out += std::string(w, ' ');
  for (int64_t k = 0; k < k_; ++k)
    std::snprintf(cell, sizeof cell, "%7lld", (long long)k), out += cell;
  out += "   (rows: true class, columns: predicted)\n";
  for (int64_t t = 0; t < k_; ++t) {
    std::string l = label(names, t) + " " + std::to_string(t);
    l.resize(std::max(w, l.size()), ' ');
    out += l;
    for (int64_t p = 0; p < k_; ++p)
      std::snprintf(cell, sizeof cell, "%7lld", (long long)at(t, p)), out += cell;
    out += "\n";
  }
  return out;
}

std::string ConfusionMatrix::csv(const std::vector<std::string>& names) const {
  std::string out = "true\\predicted";
  for (int64_t k = 0; k < k_; ++k) out += "," + label(names, k);
  out += "\n";
  for (int64_t t = 0; t < k_; ++t) {
    out += label(names, t);
    for (int64_t p = 0; p < k_; ++p) out += "," + std::to_string(at(t, p));
    out += "\n";
  }
  return out;
}

}  // namespace hpdl
