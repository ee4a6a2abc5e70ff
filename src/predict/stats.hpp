// Medians and means of the predictor's samples.
#pragma once
#include <algorithm>
#include <vector>

namespace hpdl::predict_stats {

inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

inline double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / double(v.size());
}

}  // namespace hpdl::predict_stats
