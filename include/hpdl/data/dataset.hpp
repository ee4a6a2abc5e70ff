// One split of a dataset in HDF5: a group holding `x` (float, [N, ...]) and `y` (integer
// labels, [N]); see the README for the schema. A rank reads only the rows it needs, so no
// rank ever loads the whole file. When both datasets are contiguous (not chunked) and
// stored as native float32/int32, rows are read with pread() at the byte offsets HDF5
// reports (H5Dget_offset), and the labels (4 bytes a row) are read once: a shuffled batch
// is a union of single rows, and this cuts HDF5's per-row selection overhead (63 -> ~15
// us for 16 Fashion-MNIST rows, profiling/bench_kernels BM_ReadBatch). The inputs are then
// mapped read-only (mmap) where the system allows, and a row is a copy from the page
// cache: no system call a row, and the ranks of a host share one copy of the file's pages
// (pread() where mapping fails). Any other layout or type goes through H5Dread on a union
// of hyperslabs, with type conversion.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "hpdl/data/h5_util.hpp"

namespace hpdl {

class H5Split {
 public:
  // Opens FILE and GROUP/x, GROUP/y; checks they exist, that x has rank >= 2 and that
  // y is [N] with the same N. Throws Error naming the file and dataset.
  H5Split(const std::string& file, const std::string& group);
  ~H5Split();
  H5Split(const H5Split&) = delete;
  H5Split& operator=(const H5Split&) = delete;

  int64_t size() const { return rows_; }
  // From now on the split is the file's rows `rows` (ascending, no repeats, in range), in
  // that order: row i of the split is file row rows[i]. A validation split drawn from the
  // training file and the training rows left are two such views of one file.
  void keep_rows(std::vector<int64_t> rows);
  // The file row of split row i.
  int64_t file_row(int64_t i) const { return subset_.empty() ? i : subset_[i]; }
  const std::vector<int64_t>& sample_shape() const { return sample_shape_; }
  int64_t per_sample() const { return per_sample_; }
  const std::string& where() const { return where_; }  // "FILE:GROUP"
  std::vector<std::string> class_names() const;        // attribute y.classes, if any

  // Reads the given rows (ascending, no repeats) into x [n, per_sample] and y [n].
  void read_rows(std::span<const int64_t> rows, float* x, int32_t* y);
  // Asks the CPU to bring these rows of a mapped file into its cache (the next step's, while
  // this one computes); a hint only, and nothing where the file is not mapped.
  void prefetch_rows(std::span<const int64_t> rows) const;
  // From now on, standardise every channel (last axis) with the split's x.mean and x.std
  // attributes (training statistics, written by the UCI HAR converter). Throws if absent.
  void normalize_channels();
  // Reads rows [begin, end) of x and y.
  void read_range(int64_t begin, int64_t end, float* x, int32_t* y);

  // Checks rows [begin, end): every label in [0, classes), every input finite. Returns ""
  // or a message naming the first bad row.
  std::string validate(int64_t begin, int64_t end, int64_t classes);

  // True when rows are read directly (contiguous native layout), false for H5Dread.
  bool direct() const { return fd_ >= 0; }
  // True when the direct path copies rows from a mapping of the file, false for pread().
  bool mapped() const { return x_map_ != nullptr; }
  // From now on the direct path reads with pread(), as where mapping fails (tests compare
  // the two).
  void unmap();

 private:
  void read(hid_t file_space_x, hid_t file_space_y, int64_t n, float* x, int32_t* y);
  void read_raw(std::span<const int64_t> rows, float* x, int32_t* y);
  void pread_all(void* dst, size_t bytes, haddr_t offset) const;

  std::string where_;
  H5Id file_, x_, y_, x_space_, y_space_;
  int64_t rows_ = 0, per_sample_ = 0;
  int fd_ = -1;  // POSIX descriptor for direct reads, or -1
  haddr_t x_offset_ = HADDR_UNDEF, y_offset_ = HADDR_UNDEF;
  void* map_ = nullptr;          // the pages holding x, mapped read-only (or null)
  size_t map_bytes_ = 0;         // their length
  const char* x_map_ = nullptr;  // x's first byte inside map_
  std::vector<int32_t> labels_;  // direct path: all labels, read once (4 bytes a row)
  std::vector<float> norm_mean_, norm_inv_std_;  // per channel; empty: no normalisation
  std::vector<int64_t> sample_shape_;
  std::vector<int64_t> subset_, mapped_;  // keep_rows' rows (empty: all); a batch's file rows
};

// Splits `rows` rows into a validation part of round(fraction * rows) rows, chosen by seed
// alone, and the training rows left; both ascending and disjoint. Throws Error if either
// part would be empty.
void validation_rows(int64_t rows, double fraction, uint64_t seed, std::vector<int64_t>* validation,
                     std::vector<int64_t>* training);

// What training needs of a split before it reads a row, checked the same by `hpdl train`
// and `hpdl check`: samples of the model's input shape, and with normalize the split's
// x.mean / x.std statistics (normalisation is then on). Throws Error naming the split.
// (Labels and finite inputs: H5Split::validate, over a rank's block or the whole split.)
void prepare_split(H5Split& split, const std::vector<int64_t>& input, bool normalize);

}  // namespace hpdl
