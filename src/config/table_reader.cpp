// Strict TOML table access with messages that name the file, the dotted key and the rule.
#include "hpdl/config/table_reader.hpp"

#include <cmath>
#include <sstream>

#include "hpdl/core/error.hpp"

namespace hpdl {

TableReader::TableReader(const toml::table* table, std::string where)
    : table_(table), where_(std::move(where)) {}

const toml::node* TableReader::find(const std::string& key) {
  read_.insert(key);
  return table_ ? table_->get(key) : nullptr;
}

void TableReader::bad(const std::string& key, const std::string& why) const {
  throw Error(where_ + "." + key + " " + why);
}

int64_t TableReader::get_int(const std::string& key, std::optional<int64_t> def, int64_t min,
                             int64_t max) {
  const toml::node* n = find(key);
  if (!n) {
    if (!def) bad(key, "is missing");
    return *def;
  }
  if (!n->is_integer()) bad(key, "must be an integer");
  const int64_t v = n->as_integer()->get();
  if (v < min || v > max) {
    bad(key, "= " + std::to_string(v) + " is out of range [" + std::to_string(min) + ", " +
                 std::to_string(max) + "]");
  }
  return v;
}

double TableReader::get_double(const std::string& key, std::optional<double> def, double min,
                               double max) {
  return number(key, def, min, max, false);
}

double TableReader::get_double_above(const std::string& key, std::optional<double> def,
                                     double above, double max) {
  return number(key, def, above, max, true);
}

double TableReader::number(const std::string& key, std::optional<double> def, double min,
                           double max, bool above_min) {
  const toml::node* n = find(key);
  if (!n) {
    if (!def) bad(key, "is missing");
    return *def;
  }
  double v = 0;
  if (n->is_floating_point()) {
    v = n->as_floating_point()->get();
  } else if (n->is_integer()) {
    v = static_cast<double>(n->as_integer()->get());
  } else {
    bad(key, "must be a number");
  }
  if (!std::isfinite(v) || v < min || (above_min && v == min) || v > max) {
    std::ostringstream os;
    os << "= " << v << " is out of range " << (above_min ? "(" : "[") << min << ", " << max << "]";
    if (above_min) os << ": it must be > " << min;
    bad(key, os.str());
  }
  return v;
}

bool TableReader::get_bool(const std::string& key, std::optional<bool> def) {
  const toml::node* n = find(key);
  if (!n) {
    if (!def) bad(key, "is missing");
    return *def;
  }
  if (!n->is_boolean()) bad(key, "must be true or false");
  return n->as_boolean()->get();
}

std::string TableReader::get_string(const std::string& key, std::optional<std::string> def,
                                    const std::vector<std::string>& allowed) {
  const toml::node* n = find(key);
  if (!n) {
    if (!def) bad(key, "is missing");
    return *def;
  }
  if (!n->is_string()) bad(key, "must be a string");
  std::string v = n->as_string()->get();
  if (!allowed.empty()) {
    bool ok = false;
    std::string list;
    for (const auto& a : allowed) ok |= (a == v), list += (list.empty() ? "" : ", ") + a;
    if (!ok) bad(key, "= \"" + v + "\" is not one of: " + list);
  }
  return v;
}

std::vector<int64_t> TableReader::get_int_list(const std::string& key,
                                               std::optional<std::vector<int64_t>> def,
                                               int64_t min) {
  const toml::node* n = find(key);
  if (!n) {
    if (!def) bad(key, "is missing");
    return *def;
  }
  if (!n->is_array()) bad(key, "must be an array of integers");
  std::vector<int64_t> out;
  for (const auto& e : *n->as_array()) {
    if (!e.is_integer()) bad(key, "must be an array of integers");
    const int64_t v = e.as_integer()->get();
    if (v < min) bad(key, "holds " + std::to_string(v) + ", below " + std::to_string(min));
    out.push_back(v);
  }
  return out;
}

const toml::table* TableReader::get_table(const std::string& key) {
  const toml::node* n = find(key);
  if (!n) return nullptr;
  if (!n->is_table()) bad(key, "must be a table");
  return n->as_table();
}

std::vector<const toml::table*> TableReader::get_table_array(const std::string& key) {
  const toml::node* n = find(key);
  std::vector<const toml::table*> out;
  if (!n) return out;
  if (!n->is_array()) bad(key, "must be an array of tables ([[" + key + "]])");
  for (const auto& e : *n->as_array()) {
    if (!e.is_table()) bad(key, "must be an array of tables ([[" + key + "]])");
    out.push_back(e.as_table());
  }
  return out;
}

void TableReader::finish() const {
  if (!table_) return;
  for (const auto& [k, v] : *table_) {
    const std::string key(k.str());
    if (!read_.count(key)) throw Error(where_ + ": unknown key '" + key + "'");
  }
}

}  // namespace hpdl
