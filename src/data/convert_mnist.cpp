// IDX (MNIST / Fashion-MNIST) to HDF5. zlib's gzread reads compressed and plain files alike.
#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <memory>
#include <vector>

#include "hpdl/core/error.hpp"
#include "hpdl/core/input_file.hpp"
#include "hpdl/data/convert.hpp"
#include "hpdl/data/h5_util.hpp"

namespace hpdl {
namespace {

struct GzFile {
  explicit GzFile(const std::string& path) : path(path) {
    if (!std::filesystem::exists(path)) throw Error("cannot open " + path + ": not found");
    require_input_file(path, "IDX file");
    f = gzopen(path.c_str(), "rb");
    if (!f) throw Error("cannot open " + path);
  }
  ~GzFile() {
    if (f) gzclose(f);
  }
  void read(void* dst, size_t n) {
    const int got = gzread(f, dst, static_cast<unsigned>(n));
    if (got < 0 || static_cast<size_t>(got) != n)
      throw Error(path + ": truncated or unreadable IDX file");
  }
  // n bytes, read in pieces: memory grows with the data that actually arrives, so a header
  // that claims more than the file holds fails on the truncation, not on an allocation.
  std::vector<unsigned char> read_bytes(int64_t n) {
    constexpr int64_t kPiece = int64_t{1} << 24;
    std::vector<unsigned char> out;
    for (int64_t done = 0; done < n;) {
      const int64_t piece = std::min(kPiece, n - done);
      out.resize(static_cast<size_t>(done + piece));
      const int got = gzread(f, out.data() + done, static_cast<unsigned>(piece));
      if (got != piece)
        throw Error(path + ": truncated or unreadable IDX file (the header promises " +
                    std::to_string(n) + " bytes of data, the file ends after " +
                    std::to_string(done + std::max(got, 0)) + ")");
      done += piece;
    }
    return out;
  }
  uint32_t read_be32() {
    unsigned char b[4];
    read(b, 4);
    return (uint32_t(b[0]) << 24) | (uint32_t(b[1]) << 16) | (uint32_t(b[2]) << 8) | b[3];
  }
  std::string path;
  gzFile f = nullptr;
};

}  // namespace

int64_t convert_mnist(const std::string& images, const std::string& labels, const std::string& out,
                      const std::vector<std::string>& class_names) {
  GzFile fi(images), fl(labels);
  if (fi.read_be32() != 0x803)
    throw Error(images + ": not an IDX image file (magic != 0x00000803)");
  if (fl.read_be32() != 0x801)
    throw Error(labels + ": not an IDX label file (magic != 0x00000801)");
  const int64_t n = fi.read_be32(), h = fi.read_be32(), w = fi.read_be32();
  const int64_t nl = fl.read_be32();
  if (n != nl) {
    throw Error(images + " has " + std::to_string(n) + " images but " + labels + " has " +
                std::to_string(nl) + " labels");
  }
  // Header sizes are 32-bit each: bound them before any product can overflow.
  constexpr int64_t kMaxSide = 1 << 16, kMaxImages = (int64_t{1} << 31) - 1;
  if (n < 1 || n > kMaxImages || h < 1 || h > kMaxSide || w < 1 || w > kMaxSide) {
    throw Error(images + ": implausible IDX header (" + std::to_string(n) + " images of " +
                std::to_string(h) + " x " + std::to_string(w) + ")");
  }
  const std::vector<unsigned char> pix = fi.read_bytes(n * h * w), lab = fl.read_bytes(n);
  std::vector<float> x(pix.size());
#pragma omp parallel for simd
  for (int64_t i = 0; i < static_cast<int64_t>(pix.size()); ++i) x[i] = pix[i] / 255.0f;
  std::vector<int32_t> y(lab.begin(), lab.end());
  h5_write_atomically(out, [&](hid_t f) {
    h5_write(f, "x", x.data(), {hsize_t(n), 1, hsize_t(h), hsize_t(w)});
    h5_write(f, "y", y.data(), {hsize_t(n)});
    if (!class_names.empty()) {
      H5Id ds(H5Dopen2(f, "y", H5P_DEFAULT), H5Dclose);
      h5_write_attr(ds.get(), "classes", class_names);
    }
    h5_write_attr(f, "source", images);
  });
  return n;
}

}  // namespace hpdl
