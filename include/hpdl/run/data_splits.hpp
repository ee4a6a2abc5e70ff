// The data splits a config names, opened and prepared the same way by `hpdl train` and
// `hpdl check`: the training file, the validation split (data.validation_fraction of the
// training rows, chosen by train.seed, or data.validation_file) and the test file, each
// checked against model.input and, with data.normalize, given the training statistics.
#pragma once
#include <memory>

#include "hpdl/config/config.hpp"
#include "hpdl/data/dataset.hpp"
#include "hpdl/train/passes.hpp"

namespace hpdl {

struct DataSplits {
  std::unique_ptr<H5Split> train, validation, test;  // validation, test may be null
  Splits view() const { return {train.get(), validation.get(), test.get()}; }
};

// Throws Error naming the file, the key or the rows at fault.
DataSplits open_splits(const Config& cfg);

}  // namespace hpdl
