// Converters from the original dataset formats to hpdl's HDF5 schema (README, "Data").
// Both write OUT under a temporary name and rename it when complete.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace hpdl {

// MNIST-style IDX files (gzip-compressed or not): images [N, 28, 28] uint8 and labels [N].
// Writes /x float32 [N, 1, H, W] scaled to [0, 1] and /y int32 [N]; class names (optional)
// go to the attribute y.classes. Returns N.
int64_t convert_mnist(const std::string& images, const std::string& labels, const std::string& out,
                      const std::vector<std::string>& class_names);

// The original "UCI HAR Dataset" folder: {train,test}/Inertial Signals/*_{train,test}.txt
// (9 signals, one window per line) and {train,test}/y_{split}.txt (labels 1..6).
// Writes /train and /test groups with x float32 [N, T, 9] and y int32 [N] in 0..5; x.mean
// and x.std hold per-channel statistics of the training split; y.classes the activity names.
struct UciHarCounts {
  int64_t train, test, steps;
};
UciHarCounts convert_uci_har(const std::string& dir, const std::string& out);

// The channel order of the UCI HAR conversion.
const std::vector<std::string>& uci_har_channels();

}  // namespace hpdl
