// Fuzzes the IDX (MNIST) converter: the input is split into an image file and a label
// file (plain or gzip: zlib reads both).
#include "fuzz_util.hpp"
#include "hpdl/core/error.hpp"
#include "hpdl/data/convert.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const uint8_t *a, *b;
  size_t na, nb;
  hpdl_fuzz::split(data, size, &a, &na, &b, &nb);
  const std::string images = hpdl_fuzz::write("images.idx", a, na);
  const std::string labels = hpdl_fuzz::write("labels.idx", b, nb);
  try {
    hpdl::convert_mnist(images, labels, hpdl_fuzz::workdir() + "/out.h5", {});
  } catch (const hpdl::Error&) {
  }
  return 0;
}
