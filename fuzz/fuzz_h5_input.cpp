// Fuzzes the HDF5 input path as training uses it: open the split (group "/"), check its
// shapes, validate every row (labels in range, no NaN/Inf) and read a few rows. libhdf5
// parses the file itself; a crash inside it is reported too (see the README: hpdl checks
// what it can before handing a file to it).
#include <vector>

#include "fuzz_util.hpp"
#include "hpdl/core/error.hpp"
#include "hpdl/data/dataset.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool quiet = (hpdl::h5_quiet(), true);
  (void)quiet;
  const std::string path = hpdl_fuzz::write("input.h5", data, size);
  try {
    hpdl::H5Split split(path, "/");
    const int64_t n = std::min<int64_t>(split.size(), 64);
    split.validate(0, n, 10);
    std::vector<float> x(static_cast<size_t>(n * split.per_sample()));
    std::vector<int32_t> y(static_cast<size_t>(n));
    split.read_range(0, n, x.data(), y.data());
  } catch (const hpdl::Error&) {
  }
  return 0;
}
