// Fuzzes the UCI HAR converter: a valid small dataset folder is written once; each input
// is split into the text of one signal file (train/Inertial Signals/body_acc_x_train.txt)
// and of the training labels (train/y_train.txt).
#include "fuzz_util.hpp"
#include "hpdl/core/error.hpp"
#include "hpdl/data/convert.hpp"

namespace {

const char* const kSignals[] = {"body_acc_x",  "body_acc_y",  "body_acc_z",
                                "body_gyro_x", "body_gyro_y", "body_gyro_z",
                                "total_acc_x", "total_acc_y", "total_acc_z"};

// Two windows of 128 readings per split, labels 1 and 2.
std::string make_folder() {
  namespace fs = std::filesystem;
  const fs::path d = fs::path(hpdl_fuzz::workdir()) / "UCI HAR Dataset";
  for (const char* split : {"train", "test"}) {
    fs::create_directories(d / split / "Inertial Signals");
    for (const char* s : kSignals) {
      std::ofstream f(d / split / "Inertial Signals" / (std::string(s) + "_" + split + ".txt"));
      for (int row = 0; row < 2; ++row, f << "\n")
        for (int t = 0; t < 128; ++t) f << (t ? " " : "") << 0.01 * (t + row);
    }
    std::ofstream(d / split / ("y_" + std::string(split) + ".txt")) << "1\n2\n";
  }
  std::ofstream(d / "activity_labels.txt") << "1 WALKING\n2 WALKING_UPSTAIRS\n";
  return d.string();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string dir = make_folder();
  const uint8_t *a, *b;
  size_t na, nb;
  hpdl_fuzz::split(data, size, &a, &na, &b, &nb);
  std::ofstream(dir + "/train/Inertial Signals/body_acc_x_train.txt", std::ios::binary)
      .write(reinterpret_cast<const char*>(a), static_cast<std::streamsize>(na));
  std::ofstream(dir + "/train/y_train.txt", std::ios::binary)
      .write(reinterpret_cast<const char*>(b), static_cast<std::streamsize>(nb));
  try {
    hpdl::convert_uci_har(dir, hpdl_fuzz::workdir() + "/har.h5");
  } catch (const hpdl::Error&) {
  }
  return 0;
}
