// Classification metrics from a confusion matrix: accuracy, weighted F1 (per-class F1
// weighted by the class's support, as scikit-learn's "weighted"), and a printable table.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace hpdl {

// One class's scores, as scikit-learn's classification_report (0 where undefined).
struct ClassScores {
  double precision = 0, recall = 0, f1 = 0;
  int64_t support = 0;  // rows of this true class
};

class ConfusionMatrix {
 public:
  explicit ConfusionMatrix(int64_t classes) : k_(classes), counts_(classes * classes, 0) {}
  void add(int32_t truth, int32_t predicted) { ++counts_[truth * k_ + predicted]; }
  void clear() { std::fill(counts_.begin(), counts_.end(), 0); }
  int64_t classes() const { return k_; }
  int64_t total() const;
  int64_t* data() { return counts_.data(); }  // [truth, predicted], for allreduce
  int64_t at(int64_t truth, int64_t predicted) const { return counts_[truth * k_ + predicted]; }

  double accuracy() const;
  double weighted_f1() const;
  std::vector<ClassScores> per_class() const;
  // Rows = true class, columns = predicted; names may be empty (indices are used).
  std::string table(const std::vector<std::string>& names) const;
  std::string csv(const std::vector<std::string>& names) const;
  // Precision, recall, F1 and support per class, then accuracy and the weighted averages.
  std::string scores_table(const std::vector<std::string>& names) const;
  std::string scores_csv(const std::vector<std::string>& names) const;  // class,precision,...

 private:
  int64_t k_;
  std::vector<int64_t> counts_;
};

}  // namespace hpdl
