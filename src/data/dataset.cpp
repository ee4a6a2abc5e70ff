// HDF5 split reader. Row selections are built as unions of contiguous runs of rows, so a
// sorted batch costs one H5Dread for x and one for y.
#include "hpdl/data/dataset.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <sstream>

#include "hpdl/core/error.hpp"
#include "hpdl/core/tensor.hpp"
#include "hpdl/data/mapped_copy.hpp"
#include "hpdl/data/sampler.hpp"

namespace hpdl {

H5Split::H5Split(const std::string& file, const std::string& group) {
  std::string g = group;
  if (g.empty() || g.back() != '/') g += "/";
  where_ = file + ":" + g;
  file_ = h5_open_file(file);
  for (const char* name : {"x", "y"}) {
    const std::string path = g + name;
    if (H5Lexists(file_.get(), g.c_str(), H5P_DEFAULT) <= 0 ||
        H5Lexists(file_.get(), path.c_str(), H5P_DEFAULT) <= 0) {
      throw Error("HDF5 file " + file + " has no dataset " + path);
    }
  }
  x_ = H5Id(H5Dopen2(file_.get(), (g + "x").c_str(), H5P_DEFAULT), H5Dclose);
  y_ = H5Id(H5Dopen2(file_.get(), (g + "y").c_str(), H5P_DEFAULT), H5Dclose);
  if (!x_.valid() || !y_.valid()) throw Error("HDF5 file " + file + ": cannot open " + g + "x/y");
  h5_check_storage(x_.get(), where_ + "x");
  h5_check_storage(y_.get(), where_ + "y");
  x_space_ = H5Id(H5Dget_space(x_.get()), H5Sclose);
  y_space_ = H5Id(H5Dget_space(y_.get()), H5Sclose);

  const int xr = H5Sget_simple_extent_ndims(x_space_.get());
  const int yr = H5Sget_simple_extent_ndims(y_space_.get());
  if (xr < 2)
    throw Error(where_ + "x must have rank >= 2 ([N, ...]), has rank " + std::to_string(xr));
  if (yr != 1) throw Error(where_ + "y must have rank 1 ([N]), has rank " + std::to_string(yr));
  std::vector<hsize_t> xd(xr);
  hsize_t yd = 0;
  H5Sget_simple_extent_dims(x_space_.get(), xd.data(), nullptr);
  H5Sget_simple_extent_dims(y_space_.get(), &yd, nullptr);
  if (xd[0] != yd) {
    throw Error(where_ + "x has " + std::to_string(xd[0]) + " rows but y has " +
                std::to_string(yd));
  }
  {
    H5Id tx(H5Dget_type(x_.get()), H5Tclose), ty(H5Dget_type(y_.get()), H5Tclose);
    const H5T_class_t cx = H5Tget_class(tx.get()), cy = H5Tget_class(ty.get());
    if (cx != H5T_FLOAT && cx != H5T_INTEGER) throw Error(where_ + "x must be numeric");
    if (cy != H5T_INTEGER) throw Error(where_ + "y must hold integer labels");
  }
  // Sizes from the file's header are checked before anything is sized by them.
  constexpr hsize_t kMaxRows = hsize_t{1} << 40, kMaxPerSample = hsize_t{1} << 28;
  if (xd[0] > kMaxRows) throw Error(where_ + "x claims " + std::to_string(xd[0]) + " rows");
  rows_ = static_cast<int64_t>(xd[0]);
  per_sample_ = 1;
  for (int i = 1; i < xr; ++i) {
    if (xd[i] < 1 || xd[i] > kMaxPerSample || per_sample_ * xd[i] > kMaxPerSample) {
      throw Error(where_ + "x has an implausible sample shape (dimension " + std::to_string(i) +
                  " = " + std::to_string(xd[i]) + "; at most " + std::to_string(kMaxPerSample) +
                  " values a sample)");
    }
    sample_shape_.push_back(static_cast<int64_t>(xd[i]));
    per_sample_ *= static_cast<int64_t>(xd[i]);
  }

  H5Id tx(H5Dget_type(x_.get()), H5Tclose), ty(H5Dget_type(y_.get()), H5Tclose);
  if (H5Tequal(tx.get(), H5T_NATIVE_FLOAT) > 0 && H5Tequal(ty.get(), H5T_NATIVE_INT32) > 0) {
    x_offset_ = H5Dget_offset(x_.get());  // HADDR_UNDEF unless contiguous and allocated
    y_offset_ = H5Dget_offset(y_.get());
    H5Eclear2(H5E_DEFAULT);
    if (x_offset_ != HADDR_UNDEF && y_offset_ != HADDR_UNDEF)
      fd_ = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  }
  if (fd_ >= 0) {
    // The fast path reads at the offsets HDF5 reports: the data must lie inside the file.
    struct stat st {};
    const uint64_t bytes = ::fstat(fd_, &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
    const uint64_t x_end = x_offset_ + uint64_t(rows_) * uint64_t(per_sample_) * sizeof(float);
    const uint64_t y_end = y_offset_ + uint64_t(rows_) * sizeof(int32_t);
    if (x_end > bytes || y_end > bytes) {
      throw Error(where_ + "x/y end at byte " + std::to_string(std::max(x_end, y_end)) +
                  " but the file has " + std::to_string(bytes) + " bytes (truncated?)");
    }
    // Labels are 4 bytes a row: read them once rather than one system call per sample.
    labels_.resize(rows_);
    pread_all(labels_.data(), labels_.size() * sizeof(int32_t), y_offset_);
    // The inputs mapped from the page holding their first byte to their end (the size
    // check above keeps the mapping inside the file).
    const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
    const uint64_t start = x_offset_ / page * page;
    if (x_end > x_offset_) {
      void* m =
          ::mmap(nullptr, x_end - start, PROT_READ, MAP_SHARED, fd_, static_cast<off_t>(start));
      if (m != MAP_FAILED) {
        map_ = m, map_bytes_ = x_end - start;
        x_map_ = static_cast<const char*>(m) + (x_offset_ - start);
      }
    }
  }
}

H5Split::~H5Split() {
  unmap();
  if (fd_ >= 0) ::close(fd_);
}

void H5Split::unmap() {
  if (map_) ::munmap(map_, map_bytes_);
  map_ = nullptr, map_bytes_ = 0, x_map_ = nullptr;
}

void H5Split::pread_all(void* dst, size_t bytes, haddr_t offset) const {
  char* p = static_cast<char*>(dst);
  while (bytes > 0) {
    const ssize_t got = ::pread(fd_, p, bytes, static_cast<off_t>(offset));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      fail_call("cannot read " + where_, got < 0 ? std::strerror(errno) : "file truncated");
    }
    p += got, bytes -= static_cast<size_t>(got), offset += static_cast<haddr_t>(got);
  }
}

std::vector<std::string> H5Split::class_names() const {
  return h5_read_string_list_attr(y_.get(), "classes");
}

void H5Split::read(hid_t fsx, hid_t fsy, int64_t n, float* x, int32_t* y) {
  const hsize_t mx[2] = {static_cast<hsize_t>(n), static_cast<hsize_t>(per_sample_)};
  const hsize_t my = static_cast<hsize_t>(n);
  H5Id memx(H5Screate_simple(2, mx, nullptr), H5Sclose),
      memy(H5Screate_simple(1, &my, nullptr), H5Sclose);
  if (H5Dread(x_.get(), H5T_NATIVE_FLOAT, memx.get(), fsx, H5P_DEFAULT, x) < 0 ||
      H5Dread(y_.get(), H5T_NATIVE_INT32, memy.get(), fsy, H5P_DEFAULT, y) < 0) {
    fail_call("cannot read " + where_, h5_error_text());
  }
}

void H5Split::keep_rows(std::vector<int64_t> rows) {
  HPDL_REQUIRE(subset_.empty(), "keep_rows: the split is already a subset");
  for (size_t i = 0; i < rows.size(); ++i)
    HPDL_REQUIRE(rows[i] >= 0 && rows[i] < rows_ && (i == 0 || rows[i] > rows[i - 1]),
                 "keep_rows: rows must be ascending file rows");
  subset_ = std::move(rows);
  rows_ = static_cast<int64_t>(subset_.size());
}

void H5Split::read_rows(std::span<const int64_t> rows, float* x, int32_t* y) {
  if (!subset_.empty()) {
    mapped_.resize(rows.size());
    for (size_t i = 0; i < rows.size(); ++i) mapped_[i] = subset_[rows[i]];
    rows = mapped_;
  }
  read_raw(rows, x, y);
  if (norm_mean_.empty()) return;
  // Per-channel standardisation; the channel is the last axis of a sample.
  const int64_t n = static_cast<int64_t>(rows.size()) * per_sample_,
                C = static_cast<int64_t>(norm_mean_.size());
  const float* mean = norm_mean_.data();
  const float* inv = norm_inv_std_.data();
#pragma omp parallel for if (n > 262144)
  for (int64_t i = 0; i < n; i += C)
    for (int64_t c = 0; c < C; ++c) x[i + c] = (x[i + c] - mean[c]) * inv[c];
}

void H5Split::normalize_channels() {
  std::vector<float> mean = h5_read_float_attr(x_.get(), "mean");
  std::vector<float> stdev = h5_read_float_attr(x_.get(), "std");
  const size_t C = static_cast<size_t>(sample_shape_.back());
  if (mean.size() != C || stdev.size() != C) {
    throw Error("data.normalize needs attributes mean and std of " + std::to_string(C) +
                " channels on " + where_ + "x (hpdl convert uci-har writes them)");
  }
  norm_inv_std_.resize(C);
  for (size_t c = 0; c < C; ++c) {
    auto bad = [&](const char* stat, double v, const char* why) {
      std::ostringstream msg;
      msg << where_ << "x." << stat << "[" << c << "] = " << v << " " << why
          << " (data.normalize divides by std and subtracts mean)";
      throw Error(msg.str());
    };
    if (!std::isfinite(mean[c])) bad("mean", mean[c], "is not finite");
    if (!std::isfinite(stdev[c])) bad("std", stdev[c], "is not finite");
    // A positive denormal std (below 2^-126): 1/std overflows, or is 1/0 where the CPU
    // backends' threads read denormals as zero (src/kernels/cpu/denormals.hpp). There it would
    // also compare, and print, as 0, so it is found from its bits and printed from them.
    if (const auto bits = std::bit_cast<uint32_t>(stdev[c]); bits != 0 && bits < 0x00800000u)
      bad("std", std::ldexp(static_cast<double>(bits), -149), "is so small that 1/std overflows");
    if (!(stdev[c] > 0)) bad("std", stdev[c], "is not positive");
    norm_inv_std_[c] = 1.0f / stdev[c];
  }
  norm_mean_ = std::move(mean);
}

void H5Split::prefetch_rows(std::span<const int64_t> rows) const {
  if (!x_map_) return;
  const size_t row_bytes = static_cast<size_t>(per_sample_) * sizeof(float);
  for (int64_t r : rows) {
    const char* row = x_map_ + static_cast<size_t>(subset_.empty() ? r : subset_[r]) * row_bytes;
    for (size_t b = 0; b < row_bytes; b += 64) __builtin_prefetch(row + b, 0, 1);
  }
}

void H5Split::read_raw(std::span<const int64_t> rows, float* x, int32_t* y) {
  if (fd_ >= 0) {
    const size_t row_bytes = static_cast<size_t>(per_sample_) * sizeof(float);
    for (size_t i = 0; i < rows.size();) {
      size_t j = i + 1;
      while (j < rows.size() && rows[j] == rows[j - 1] + 1) ++j;  // one contiguous run
      const haddr_t r = static_cast<haddr_t>(rows[i]);
      if (x_map_) {
        if (!copy_from_mapping(x + i * per_sample_, x_map_ + r * row_bytes, (j - i) * row_bytes))
          throw Error(where_ + "x: rows " + std::to_string(r) + " to " +
                      std::to_string(r + j - i - 1) +
                      " are no longer in the file: it was truncated or rewritten while the job "
                      "read it");
      } else
        pread_all(x + i * per_sample_, (j - i) * row_bytes, x_offset_ + r * row_bytes);
      i = j;
    }
    for (size_t i = 0; i < rows.size(); ++i) y[i] = labels_[rows[i]];
    return;
  }
  H5Id fsx(H5Scopy(x_space_.get()), H5Sclose), fsy(H5Scopy(y_space_.get()), H5Sclose);
  const int xr = static_cast<int>(sample_shape_.size()) + 1;
  std::vector<hsize_t> start(xr, 0), count(xr);
  count[0] = 0;
  for (int i = 1; i < xr; ++i) count[i] = sample_shape_[i - 1];
  bool first = true;
  for (size_t i = 0; i < rows.size();) {
    size_t j = i + 1;
    while (j < rows.size() && rows[j] == rows[j - 1] + 1) ++j;  // one contiguous run
    start[0] = rows[i];
    count[0] = j - i;
    const H5S_seloper_t op = first ? H5S_SELECT_SET : H5S_SELECT_OR;
    HPDL_CHECK_H5(H5Sselect_hyperslab(fsx.get(), op, start.data(), nullptr, count.data(), nullptr));
    HPDL_CHECK_H5(H5Sselect_hyperslab(fsy.get(), op, start.data(), nullptr, count.data(), nullptr));
    first = false;
    i = j;
  }
  read(fsx.get(), fsy.get(), static_cast<int64_t>(rows.size()), x, y);
}

void H5Split::read_range(int64_t begin, int64_t end, float* x, int32_t* y) {
  std::vector<int64_t> rows;
  rows.reserve(end - begin);
  for (int64_t r = begin; r < end; ++r) rows.push_back(r);
  read_rows(rows, x, y);
}

std::string H5Split::validate(int64_t begin, int64_t end, int64_t classes) {
  // Up to 1024 rows, at most 2^24 values (64 MiB) at a time.
  const int64_t kChunk = std::clamp<int64_t>((int64_t{1} << 24) / per_sample_, 1, 1024);
  std::vector<float> x(kChunk * per_sample_);
  std::vector<int32_t> y(kChunk);
  for (int64_t b = begin; b < end; b += kChunk) {
    const int64_t e = std::min(end, b + kChunk);
    read_range(b, e, x.data(), y.data());
    for (int64_t r = 0; r < e - b; ++r) {
      if (y[r] < 0 || y[r] >= classes) {
        return where_ + "y[" + std::to_string(file_row(b + r)) + "] = " + std::to_string(y[r]) +
               " is outside the class range 0.." + std::to_string(classes - 1);
      }
      const float* xr = x.data() + r * per_sample_;
      for (int64_t i = 0; i < per_sample_; ++i)
        if (!std::isfinite(xr[i]))
          return where_ + "x[" + std::to_string(file_row(b + r)) + "] holds NaN or Inf (element " +
                 std::to_string(i) + ")";
    }
  }
  return "";
}

void validation_rows(int64_t rows, double fraction, uint64_t seed, std::vector<int64_t>* validation,
                     std::vector<int64_t>* training) {
  const int64_t n = std::llround(fraction * static_cast<double>(rows));
  if (n < 1 || n >= rows) {
    std::ostringstream msg;
    msg << "data.validation_fraction = " << fraction << " of " << rows << " training rows leaves "
        << (n < 1 ? "no validation row" : "no training row");
    throw Error(msg.str());
  }
  // Epochs count from 1: the permutation of "epoch 0" is used only for this split.
  std::vector<int64_t> perm(static_cast<size_t>(rows));
  epoch_permutation(seed, 0, perm);
  std::vector<char> is_validation(rows, 0);
  for (int64_t i = 0; i < n; ++i) is_validation[perm[i]] = 1;
  validation->clear(), training->clear();
  for (int64_t r = 0; r < rows; ++r) (is_validation[r] ? validation : training)->push_back(r);
}

void prepare_split(H5Split& split, const std::vector<int64_t>& input, bool normalize) {
  if (split.sample_shape() != input) {
    throw Error(split.where() + "x has samples of shape " + Shape{split.sample_shape()}.str() +
                " but model.input = " + Shape{input}.str());
  }
  if (normalize) split.normalize_channels();
}

}  // namespace hpdl
