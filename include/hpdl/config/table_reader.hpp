// Typed, strict reading of one TOML table: each get_* names the key it reads, checks its
// type and range, and finish() rejects any key nobody read, so a typo in a config is an
// error that names the key ("optimizer.lrr") instead of a silently ignored setting.
#pragma once
#include <toml++/toml.h>

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "hpdl/config/choices.hpp"

namespace hpdl {

class TableReader {
 public:
  // `where` prefixes messages, e.g. "config inputs/lenet.toml: optimizer".
  TableReader(const toml::table* table, std::string where);

  int64_t get_int(const std::string& key, std::optional<int64_t> def, int64_t min, int64_t max);
  double get_double(const std::string& key, std::optional<double> def, double min, double max);
  // A number in (above, max]: for values that must be strictly positive (above = 0).
  double get_double_above(const std::string& key, std::optional<double> def, double above,
                          double max);
  bool get_bool(const std::string& key, std::optional<bool> def);
  std::string get_string(const std::string& key, std::optional<std::string> def,
                         const std::vector<std::string>& allowed = {});
  // A word of ChoiceWords<E> (choices.hpp) as its enum; any other word is refused naming them.
  template <class E>
  E get_choice(const std::string& key, E def) {
    return *from_word<E>(get_string(key, std::string(word(def)), all_words<E>()));
  }
  std::vector<int64_t> get_int_list(const std::string& key, std::optional<std::vector<int64_t>> def,
                                    int64_t min);
  // A sub-table (nullptr if absent); marks the key as read.
  const toml::table* get_table(const std::string& key);
  // An array of tables (empty if absent); marks the key as read.
  std::vector<const toml::table*> get_table_array(const std::string& key);

  // Throws if the table holds a key that no get_* asked for.
  void finish() const;
  const std::string& where() const { return where_; }

 private:
  const toml::node* find(const std::string& key);
  // A number in [min, max], or (min, max] when above_min.
  double number(const std::string& key, std::optional<double> def, double min, double max,
                bool above_min);
  [[noreturn]] void bad(const std::string& key, const std::string& why) const;

  const toml::table* table_;
  std::string where_;
  std::set<std::string> read_;
};

}  // namespace hpdl
