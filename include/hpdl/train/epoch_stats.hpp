// One row of the training history: what metrics.csv and the log show per epoch, and what
// a checkpoint carries for the epochs already done.
#pragma once
#include <cstdint>

namespace hpdl {

struct EpochStats {
  int64_t epoch = 0, steps = 0;
  double train_loss = 0;  // mean over the epoch's training samples (all ranks)
  double lr = 0;          // the learning rate of the epoch's last update
  // Evaluations after the epoch, where they ran: the test split every epoch when there is
  // no validation split (with one, the test split is evaluated once, at the end).
  bool tested = false, validated = false;
  double test_loss = 0, test_accuracy = 0, test_f1 = 0;
  double val_loss = 0, val_accuracy = 0, val_f1 = 0;
  double epoch_s = 0, samples_per_s = 0;
  double train_s = 0;    // training time since the start, evaluations excluded
  double elapsed_s = 0;  // wall time since the start, evaluations included
};

}  // namespace hpdl
