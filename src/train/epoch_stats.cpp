#include "hpdl/train/epoch_stats.hpp"

#include <algorithm>
#include <sstream>

#include "hpdl/core/error.hpp"

namespace hpdl {

#define HPDL_EPOCH_FIELD(field, when)                                         \
  EpochField {                                                                \
#field, EpochField::In::when,                                               \
        [](const EpochStats& s) { return static_cast<double>(s.field); },       \
        [](EpochStats& s, double v) { s.field = static_cast<decltype(s.field)>(v); } \
  }

const std::vector<EpochField>& epoch_fields() {
  static const std::vector<EpochField> fields = {
      HPDL_EPOCH_FIELD(epoch, always),
      HPDL_EPOCH_FIELD(steps, always),
      HPDL_EPOCH_FIELD(train_loss, always),
      HPDL_EPOCH_FIELD(test_loss, tested),
      HPDL_EPOCH_FIELD(test_accuracy, tested),
      HPDL_EPOCH_FIELD(test_f1, tested),
      HPDL_EPOCH_FIELD(samples_per_s, always),
      HPDL_EPOCH_FIELD(epoch_s, always),
      HPDL_EPOCH_FIELD(train_s, always),
      HPDL_EPOCH_FIELD(elapsed_s, always),
      HPDL_EPOCH_FIELD(lr, always),
      HPDL_EPOCH_FIELD(val_loss, validated),
      HPDL_EPOCH_FIELD(val_accuracy, validated),
      HPDL_EPOCH_FIELD(val_f1, validated),
      HPDL_EPOCH_FIELD(tested, history_only),
      HPDL_EPOCH_FIELD(validated, history_only),
  };
  return fields;
}

#undef HPDL_EPOCH_FIELD

std::string epoch_csv_header() {
  std::string out;
  for (const EpochField& f : epoch_fields()) {
    if (f.in == EpochField::In::history_only) continue;
    if (!out.empty()) out += ',';
    out += f.name;
  }
  return out;
}

std::string epoch_csv_row(const EpochStats& s) {
  std::ostringstream row;
  bool first = true;
  for (const EpochField& f : epoch_fields()) {
    if (f.in == EpochField::In::history_only) continue;
    if (!first) row << ",";
    first = false;
    const bool present = f.in == EpochField::In::always ||
                         (f.in == EpochField::In::tested && s.tested) ||
                         (f.in == EpochField::In::validated && s.validated);
    if (present) row << f.get(s);
  }
  return row.str();
}

std::vector<std::string> epoch_field_names() {
  std::vector<std::string> names;
  for (const EpochField& f : epoch_fields()) names.push_back(f.name);
  return names;
}

std::vector<double> epoch_values(const std::vector<EpochStats>& h) {
  std::vector<double> values;
  for (const EpochStats& s : h)
    for (const EpochField& f : epoch_fields()) values.push_back(f.get(s));
  return values;
}

std::vector<EpochStats> epochs_from(const std::vector<std::string>& names,
                                    const std::vector<double>& values) {
  std::vector<const EpochField*> column;
  for (const std::string& n : names) {
    const auto& fields = epoch_fields();
    const auto it = std::find_if(fields.begin(), fields.end(),
                                 [&](const EpochField& f) { return n == f.name; });
    if (it == fields.end()) throw Error("the history has an unknown column '" + n + "'");
    column.push_back(&*it);
  }
  HPDL_REQUIRE(!names.empty() && values.size() % names.size() == 0,
               "the history holds " + std::to_string(values.size()) + " values for " +
                   std::to_string(names.size()) + " columns");
  std::vector<EpochStats> h(values.size() / names.size());
  for (size_t r = 0; r < h.size(); ++r)
    for (size_t c = 0; c < names.size(); ++c) column[c]->set(h[r], values[r * names.size() + c]);
  return h;
}

}  // namespace hpdl
