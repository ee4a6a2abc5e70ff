// One row of the training history: what metrics.csv and the log show per epoch, and what
// a checkpoint carries for the epochs already done.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

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

// The one field table of EpochStats: metrics.csv's columns in its order, then the flags
// that say which evaluations ran (in the checkpoint's history, not in the CSV). A new
// column is one line in epoch_stats.cpp: metrics.csv, the checkpoint history (read back by
// name) and its broadcast follow.
struct EpochField {
  const char* name;
  enum class In { always, tested, validated, history_only } in;  // when it has a value
  double (*get)(const EpochStats&);
  void (*set)(EpochStats&, double);
};
const std::vector<EpochField>& epoch_fields();

std::string epoch_csv_header();                  // metrics.csv's header
std::string epoch_csv_row(const EpochStats& s);  // evaluations that did not run: empty cells
std::vector<std::string> epoch_field_names();    // every field (the history's columns)
std::vector<double> epoch_values(const std::vector<EpochStats>& h);  // rows x fields
// Rows of `names` columns back to EpochStats by name; Error naming an unknown column.
std::vector<EpochStats> epochs_from(const std::vector<std::string>& names,
                                    const std::vector<double>& values);

}  // namespace hpdl
