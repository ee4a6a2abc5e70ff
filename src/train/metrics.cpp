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

std::vector<ClassScores> ConfusionMatrix::per_class() const {
  std::vector<ClassScores> out(k_);
  for (int64_t k = 0; k < k_; ++k) {
    int64_t predicted = 0;
    for (int64_t j = 0; j < k_; ++j) out[k].support += at(k, j), predicted += at(j, k);
    const double tp = at(k, k);
    ClassScores& c = out[k];
    c.precision = predicted ? tp / predicted : 0;
    c.recall = c.support ? tp / c.support : 0;
    c.f1 = c.precision + c.recall > 0 ? 2 * c.precision * c.recall / (c.precision + c.recall) : 0;
  }
  return out;
}

double ConfusionMatrix::weighted_f1() const {
  const int64_t n = total();
  if (!n) return 0;
  double weighted = 0;
  for (const ClassScores& c : per_class()) weighted += c.f1 * c.support;
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
  for (int64_t k = 0; k < k_; ++k) out.append(",").append(label(names, k));
  out += "\n";
  for (int64_t t = 0; t < k_; ++t) {
    out += label(names, t);
    for (int64_t p = 0; p < k_; ++p) out.append(",").append(std::to_string(at(t, p)));
    out += "\n";
  }
  return out;
}

std::string ConfusionMatrix::scores_table(const std::vector<std::string>& names) const {
  size_t w = 12;
  for (int64_t k = 0; k < k_; ++k) w = std::max(w, label(names, k).size() + 1);
  char line[256];
  std::string out = std::string(w, ' ') + "precision  recall      f1  support\n";
  auto row = [&](const std::string& name, double p, double r, double f, int64_t n) {
    std::string l = name;
    l.resize(std::max(w, l.size()), ' ');
    std::snprintf(line, sizeof line, "%9.4f %7.4f %7.4f %8lld\n", p, r, f, (long long)n);
    out += l + line;
  };
  const std::vector<ClassScores> scores = per_class();
  double wp = 0, wr = 0;
  for (int64_t k = 0; k < k_; ++k) {
    const ClassScores& c = scores[k];
    row(label(names, k), c.precision, c.recall, c.f1, c.support);
    wp += c.precision * c.support, wr += c.recall * c.support;
  }
  const int64_t n = total();
  std::string acc = "accuracy";
  acc.resize(std::max(w, acc.size()), ' ');
  std::snprintf(line, sizeof line, "%25.4f %8lld\n", accuracy(), (long long)n);
  out += acc + line;
  row("weighted avg", n ? wp / n : 0, n ? wr / n : 0, weighted_f1(), n);
  return out;
}

std::string ConfusionMatrix::scores_csv(const std::vector<std::string>& names) const {
  std::string out = "class,precision,recall,f1,support\n";
  const std::vector<ClassScores> scores = per_class();
  char line[160];
  for (int64_t k = 0; k < k_; ++k) {
    const ClassScores& c = scores[k];
    std::snprintf(line, sizeof line, ",%.6f,%.6f,%.6f,%lld\n", c.precision, c.recall, c.f1,
                  (long long)c.support);
    out += label(names, k) + line;
  }
  return out;
}

}  // namespace hpdl
