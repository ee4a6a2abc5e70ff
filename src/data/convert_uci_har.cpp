// "UCI HAR Dataset" folder to HDF5. Each of the 9 signal files is parsed as plain float
// text (any notation strtod accepts), one window per line; files are parsed in parallel.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include "hpdl/core/error.hpp"
#include "hpdl/core/input_file.hpp"
#include "hpdl/data/convert.hpp"
#include "hpdl/data/h5_util.hpp"

namespace hpdl {
namespace {

namespace fs = std::filesystem;

std::string read_text(const fs::path& p) {
  if (!fs::exists(p)) throw Error("UCI HAR: missing file " + p.string());
  require_input_file(p.string(), "UCI HAR file");
  std::ifstream in(p, std::ios::binary);
  if (!in) throw Error("UCI HAR: cannot read " + p.string());
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Rows of floats; every row must have the same length. Error names file and line.
std::vector<std::vector<float>> parse_rows(const fs::path& p) {
  const std::string text = read_text(p);
  std::vector<std::vector<float>> rows;
  std::istringstream lines(text);
  std::string line;
  int64_t lineno = 0;
  while (std::getline(lines, line)) {
    ++lineno;
    std::vector<float> row;
    const char* s = line.c_str();
    char* end = nullptr;
    for (;;) {
      while (*s == ' ' || *s == '\t' || *s == '\r' || *s == ',') ++s;
      if (!*s) break;
      const double v = std::strtod(s, &end);
      if (end == s || !std::isfinite(v)) {
        throw Error("UCI HAR: " + p.string() + ":" + std::to_string(lineno) + ": not a number: '" +
                    std::string(s).substr(0, 20) + "'");
      }
      if (std::abs(v) > std::numeric_limits<float>::max()) {
        throw Error("UCI HAR: " + p.string() + ":" + std::to_string(lineno) + ": " +
                    std::string(s, static_cast<size_t>(end - s)).substr(0, 30) +
                    " is beyond the range of a 32-bit float (|x| <= 3.4e38)");
      }
      row.push_back(static_cast<float>(v));
      s = end;
    }
    if (row.empty()) continue;  // blank lines
    if (!rows.empty() && row.size() != rows[0].size()) {
      throw Error("UCI HAR: " + p.string() + ":" + std::to_string(lineno) + ": " +
                  std::to_string(row.size()) + " values, expected " +
                  std::to_string(rows[0].size()));
    }
    rows.push_back(std::move(row));
  }
  if (rows.empty()) throw Error("UCI HAR: " + p.string() + " holds no data");
  return rows;
}

struct Split {
  int64_t n = 0, steps = 0;
  std::vector<float> x;  // [N, T, 9]
  std::vector<int32_t> y;
};

Split read_split(const fs::path& dir, const std::string& split) {
  const auto& ch = uci_har_channels();
  const int64_t C = static_cast<int64_t>(ch.size());
  std::vector<std::vector<std::vector<float>>> sig(C);
  std::vector<std::string> errors(C);
#pragma omp parallel for schedule(dynamic)
  for (int64_t c = 0; c < C; ++c) {
    try {
      sig[c] = parse_rows(dir / split / "Inertial Signals" / (ch[c] + "_" + split + ".txt"));
    } catch (const Error& e) {
      errors[c] = e.what();
    }
  }
  for (const auto& e : errors)
    if (!e.empty()) throw Error(e);
  Split s;
  s.n = static_cast<int64_t>(sig[0].size());
  s.steps = static_cast<int64_t>(sig[0][0].size());
  for (int64_t c = 1; c < C; ++c) {
    if (static_cast<int64_t>(sig[c].size()) != s.n ||
        static_cast<int64_t>(sig[c][0].size()) != s.steps) {
      throw Error("UCI HAR: " + split + "/" + ch[c] + " has " + std::to_string(sig[c].size()) +
                  "x" + std::to_string(sig[c][0].size()) + " values, " + ch[0] + " has " +
                  std::to_string(s.n) + "x" + std::to_string(s.steps));
    }
  }
  const auto labels = parse_rows(dir / split / ("y_" + split + ".txt"));
  if (static_cast<int64_t>(labels.size()) != s.n || labels[0].size() != 1) {
    throw Error("UCI HAR: " + split + "/y_" + split + ".txt has " + std::to_string(labels.size()) +
                " labels for " + std::to_string(s.n) + " windows");
  }
  s.x.resize(s.n * s.steps * C);
  s.y.resize(s.n);
  for (int64_t i = 0; i < s.n; ++i) {
    const float l = labels[i][0];
    if (l != std::floor(l) || l < 1 || l > 6) {
      throw Error("UCI HAR: " + split + "/y_" + split + ".txt line " + std::to_string(i + 1) +
                  ": label must be 1..6");
    }
    s.y[i] = static_cast<int32_t>(l) - 1;
  }
#pragma omp parallel for
  for (int64_t i = 0; i < s.n; ++i)
    for (int64_t t = 0; t < s.steps; ++t)
      for (int64_t c = 0; c < C; ++c) s.x[(i * s.steps + t) * C + c] = sig[c][i][t];
  return s;
}

std::vector<std::string> activity_names(const fs::path& dir) {
  std::vector<std::string> names = {"WALKING", "WALKING_UPSTAIRS", "WALKING_DOWNSTAIRS",
                                    "SITTING", "STANDING",         "LAYING"};
  std::ifstream in(dir / "activity_labels.txt");
  int id;
  std::string name;
  while (in >> id >> name)
    if (id >= 1 && id <= 6) names[id - 1] = name;
  return names;
}

}  // namespace

const std::vector<std::string>& uci_har_channels() {
  static const std::vector<std::string> kChannels = {"body_acc_x",  "body_acc_y",  "body_acc_z",
                                                     "body_gyro_x", "body_gyro_y", "body_gyro_z",
                                                     "total_acc_x", "total_acc_y", "total_acc_z"};
  return kChannels;
}

UciHarCounts convert_uci_har(const std::string& dir, const std::string& out) {
  if (!fs::is_directory(dir)) throw Error("UCI HAR: " + dir + " is not a directory");
  const Split train = read_split(dir, "train"), test = read_split(dir, "test");
  if (train.steps != test.steps) throw Error("UCI HAR: train and test windows differ in length");
  const int64_t C = static_cast<int64_t>(uci_har_channels().size());
  // Per-channel statistics of the training split, for normalisation at load time.
  std::vector<float> mean(C), stdev(C);
  for (int64_t c = 0; c < C; ++c) {
    double s = 0, s2 = 0;
    const int64_t n = train.n * train.steps;
    for (int64_t i = 0; i < n; ++i) {
      const double v = train.x[i * C + c];
      s += v, s2 += v * v;
    }
    mean[c] = static_cast<float>(s / n);
    stdev[c] = static_cast<float>(std::sqrt(std::max(0.0, s2 / n - (s / n) * (s / n))));
  }
  const auto names = activity_names(dir);
  h5_write_atomically(out, [&](hid_t f) {
    for (const Split* s : {&train, &test}) {
      H5Id g = h5_create_group(f, s == &train ? "train" : "test");
      h5_write(g.get(), "x", s->x.data(), {hsize_t(s->n), hsize_t(s->steps), hsize_t(C)});
      h5_write(g.get(), "y", s->y.data(), {hsize_t(s->n)});
      H5Id x(H5Dopen2(g.get(), "x", H5P_DEFAULT), H5Dclose),
          y(H5Dopen2(g.get(), "y", H5P_DEFAULT), H5Dclose);
      h5_write_attr(x.get(), "mean", mean);
      h5_write_attr(x.get(), "std", stdev);
      h5_write_attr(x.get(), "channels", uci_har_channels());
      h5_write_attr(y.get(), "classes", names);
    }
    h5_write_attr(f, "source", dir);
  });
  return {train.n, test.n, train.steps};
}

}  // namespace hpdl
