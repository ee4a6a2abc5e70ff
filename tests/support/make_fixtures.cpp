// Writes the small HDF5 files and configs the command-line tests train on or reject:
// a good tiny dataset, and one file per kind of bad data (labels out of range, NaN,
// wrong sample shape, missing dataset, overlapping classes, fewer samples than ranks, one huge
// finite value, inputs that HDF5 would read from another file).
#include <sys/stat.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "hpdl/core/rng.hpp"
#include "hpdl/data/h5_util.hpp"

using namespace hpdl;

namespace {

void write_split(const std::string& path, int64_t n, std::vector<hsize_t> sample, bool with_y,
                 int bad_label_row = -1, int nan_row = -1, float bad_value = std::nanf(""),
                 int64_t bad_count = 1, float signal = 1.0f, uint64_t seed = 7) {
  int64_t per = 1;
  for (auto d : sample) per *= d;
  std::vector<float> x(n * per);
  std::vector<int32_t> y(n);
  Rng rng(seed, 7);
  for (int64_t i = 0; i < n; ++i) {
    y[i] = static_cast<int32_t>(i % 4);
    // class c lights up quarter c of the image, so the tiny model can learn it
    for (int64_t j = 0; j < per; ++j)
      x[i * per + j] = 0.3f * rng.uniform() + ((j * 4 / per) == y[i] ? signal : 0.0f);
  }
  if (bad_label_row >= 0) y[bad_label_row] = 7;
  if (nan_row >= 0)
    for (int64_t j = 3; j < 3 + bad_count; ++j) x[nan_row * per + j] = bad_value;
  std::vector<hsize_t> dims = {hsize_t(n)};
  dims.insert(dims.end(), sample.begin(), sample.end());
  h5_write_atomically(path, [&](hid_t f) {
    h5_write(f, "x", x.data(), dims);
    if (with_y) h5_write(f, "y", y.data(), {hsize_t(n)});
  });
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  const std::string d = argv[1];
  std::filesystem::create_directories(d);
  write_split(d + "/train.h5", 256, {1, 8, 8}, true);
  write_split(d + "/test.h5", 64, {1, 8, 8}, true);
  // Classes that overlap (a weak signal under the noise): accuracy well below 1, so keeping
  // the best epoch and evaluating a saved model are tested on numbers that can differ.
  write_split(d + "/noisy_train.h5", 512, {1, 8, 8}, true, -1, -1, 0, 1, 0.06f, 11);
  write_split(d + "/noisy_test.h5", 256, {1, 8, 8}, true, -1, -1, 0, 1, 0.06f, 12);
  write_split(d + "/bad_labels.h5", 64, {1, 8, 8}, true, 50);
  write_split(d + "/nan.h5", 64, {1, 8, 8}, true, -1, 45);  // in rank 1's block with 2 ranks
  write_split(d + "/wrong_shape.h5", 64, {3, 8, 8}, true);
  write_split(d + "/no_y.h5", 64, {1, 8, 8}, false);
  write_split(d + "/wrong_rank.h5", 64, {64}, true);
  write_split(d + "/empty.h5", 0, {1, 8, 8}, true);
  write_split(d + "/three.h5", 3, {1, 8, 8}, true);
  // Finite (it passes validation) but so large that the forward pass overflows: the step
  // that meets row 45 has a non-finite loss and gradient.
  write_split(d + "/huge.h5", 256, {1, 8, 8}, true, -1, 45, 3e38f, 60);
  std::ostringstream tiny;
  tiny << "[run]\nname = \"tiny\"\noutput_dir = \"" << d << "/outputs\"\nwatchdog_s = 60\n"
       << "[data]\ntrain_file = \"" << d << "/train.h5\"\ntest_file = \"" << d << "/test.h5\"\n"
       << "[model]\ninput = [1, 8, 8]\nclasses = 4\n"
       << "[[model.layers]]\ntype = \"flatten\"\n"
       << "[[model.layers]]\ntype = \"dense\"\nunits = 16\n"
       << "[[model.layers]]\ntype = \"relu\"\n"
       << "[[model.layers]]\ntype = \"dense\"\nunits = 4\n"
       << "[optimizer]\nname = \"adam\"\nlr = 0.01\n"
       << "[train]\nbatch = 16\nepochs = 3\nprogress = false\n";
  std::ofstream(d + "/tiny.toml") << tiny.str();
  // Without run.name: the run is named by Slurm's job id when there is one.
  std::string unnamed = tiny.str();
  unnamed.erase(unnamed.find("name = \"tiny\"\n"), 14);
  std::ofstream(d + "/unnamed.toml") << unnamed;
  std::ofstream(d + "/malformed.toml") << "[model\ninput = [1, 8\n";
  // Keys nested 100,000 parts deep (toml++ recurses once per part): a dotted key, a header.
  std::string deep = "a";
  for (int i = 1; i < 100000; ++i) deep += ".a";
  std::ofstream(d + "/deep_key.toml") << deep << " = 1\n";
  std::ofstream(d + "/deep_header.toml") << "[" << deep << "]\n";
  // The first half of a good file: its datasets end past the end of the file.
  {
    const auto bytes = std::filesystem::file_size(d + "/train.h5");
    std::filesystem::copy_file(d + "/train.h5", d + "/truncated.h5",
                               std::filesystem::copy_options::overwrite_existing);
    std::filesystem::resize_file(d + "/truncated.h5", bytes / 2);
  }
  // IDX headers that promise 2^31 - 1 images of 28 x 28 while the files hold 16 bytes.
  {
    const unsigned char images[] = {0, 0, 8, 3, 0x7f, 0xff, 0xff, 0xff, 0, 0, 0, 28, 0, 0, 0, 28};
    const unsigned char labels[] = {0, 0, 8, 1, 0x7f, 0xff, 0xff, 0xff};
    std::ofstream(d + "/lying-images.idx", std::ios::binary)
        .write(reinterpret_cast<const char*>(images), sizeof images);
    std::ofstream(d + "/lying-labels.idx", std::ios::binary)
        .write(reinterpret_cast<const char*>(labels), sizeof labels);
  }
  // A FIFO in place of a data file: opening it would block every rank.
  std::remove((d + "/fifo.h5").c_str());
  if (mkfifo((d + "/fifo.h5").c_str(), 0600) != 0) return 1;
  // Good labels, and inputs x that HDF5 would read from the FIFO: through an external link,
  // as a virtual dataset's source, as external raw storage.
  const std::string fifo = std::filesystem::absolute(d + "/fifo.h5").string();
  const auto with_outside_x = [&](const std::string& name, const std::function<void(hid_t)>& x) {
    const std::vector<int32_t> y(64, 1);
    h5_write_atomically(d + "/" + name, [&](hid_t f) {
      h5_write(f, "y", y.data(), {64});
      x(f);
    });
  };
  const hsize_t dims[] = {64, 1, 8, 8};
  with_outside_x("external_link.h5", [&](hid_t f) {
    HPDL_CHECK_H5(H5Lcreate_external(fifo.c_str(), "/x", f, "x", H5P_DEFAULT, H5P_DEFAULT));
  });
  const auto dataset_x = [&](hid_t f, hid_t dcpl) {
    H5Id space(H5Screate_simple(4, dims, nullptr), H5Sclose);
    H5Id x(H5Dcreate2(f, "x", H5T_IEEE_F32LE, space.get(), H5P_DEFAULT, dcpl, H5P_DEFAULT),
           H5Dclose);
    if (!x.valid()) throw Error("cannot create x: " + h5_error_text());
  };
  with_outside_x("virtual.h5", [&](hid_t f) {
    H5Id dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
    H5Id space(H5Screate_simple(4, dims, nullptr), H5Sclose);
    HPDL_CHECK_H5(H5Pset_virtual(dcpl.get(), space.get(), fifo.c_str(), "/x", space.get()));
    dataset_x(f, dcpl.get());
  });
  with_outside_x("external_storage.h5", [&](hid_t f) {
    H5Id dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
    HPDL_CHECK_H5(H5Pset_external(dcpl.get(), fifo.c_str(), 0, 64 * 64 * sizeof(float)));
    dataset_x(f, dcpl.get());
  });
  return 0;
}
