// Opening a config's data splits (see the header).
#include "hpdl/run/data_splits.hpp"

#include "hpdl/core/error.hpp"

namespace hpdl {

DataSplits open_splits(const Config& cfg) {
  const DataConfig& d = cfg.data;
  HPDL_REQUIRE(!d.train_file.empty(), "config " + cfg.source + ": data.train_file is missing");
  DataSplits s;
  s.train = std::make_unique<H5Split>(d.train_file, d.train_group);
  if (d.validation_fraction > 0) {
    std::vector<int64_t> validation, training;
    validation_rows(s.train->size(), d.validation_fraction, cfg.train.seed, &validation, &training);
    s.validation = std::make_unique<H5Split>(d.train_file, d.train_group);
    s.validation->keep_rows(std::move(validation));
    s.train->keep_rows(std::move(training));
  } else if (!d.validation_file.empty()) {
    s.validation = std::make_unique<H5Split>(d.validation_file, d.validation_group);
  }
  if (!d.test_file.empty()) s.test = std::make_unique<H5Split>(d.test_file, d.test_group);
  for (H5Split* split : {s.train.get(), s.validation.get(), s.test.get()}) {
    if (!split) continue;
    // A metric over no sample would read as measured (accuracy 0.0000).
    HPDL_REQUIRE(split->size() > 0, split->where() + " holds no samples");
    prepare_split(*split, cfg.model.input, d.normalize);
  }
  return s;
}

}  // namespace hpdl
