// The first difference between two TOML tables (see the header).
#include "hpdl/config/table_diff.hpp"

#include <toml++/toml.h>

#include <set>
#include <sstream>

#include "hpdl/core/error.hpp"

namespace hpdl {

namespace {
std::string shown(const toml::node* n) {
  if (!n) return "nothing";
  if (n->is_table()) return "a table";
  if (n->is_array()) return std::to_string(n->as_array()->size()) + " entries";
  if (n->is_string()) {  // as a config spells it (built in steps: GCC 12 warns falsely on
                         // "\"" + s, -Wrestrict, and the arm64 build fails on warnings)
    std::string quoted(1, '"');
    quoted += *n->value<std::string>();
    quoted += '"';
    return quoted;
  }
  std::ostringstream s;
  n->visit([&](const auto& v) { s << v; });
  return s.str();
}

std::string differ(const std::string& where, const toml::node* was, const toml::node* now) {
  return where + ": it has " + shown(was) + ", this run " + shown(now);
}

std::string first_in(const toml::node* was, const toml::node* now, const std::string& where) {
  if (!was || !now || was->type() != now->type()) return differ(where, was, now);
  if (const toml::table* a = was->as_table()) {
    const toml::table* b = now->as_table();
    std::set<std::string> keys;
    for (const auto& [k, v] : *a) keys.insert(std::string(k.str()));
    for (const auto& [k, v] : *b) keys.insert(std::string(k.str()));
    for (const std::string& k : keys) {
      const std::string d = first_in(a->get(k), b->get(k), where + "." + k);
      if (!d.empty()) return d;
    }
    return "";
  }
  if (const toml::array* a = was->as_array()) {
    const toml::array* b = now->as_array();
    if (a->size() != b->size()) return differ(where, was, now);  // a layer more or less
    for (size_t i = 0; i < a->size(); ++i) {
      const std::string d = first_in(a->get(i), b->get(i), where + "." + std::to_string(i));
      if (!d.empty()) return d;
    }
    return "";
  }
  return shown(was) == shown(now) ? "" : differ(where, was, now);
}

toml::table parsed(const std::string& text, const std::string& which) {
  try {
    return toml::parse(text);
  } catch (const toml::parse_error& e) {
    throw Error(which + " cannot be read: " + std::string(e.description()));
  }
}
}  // namespace

std::string first_difference(const std::string& was_toml, const std::string& now_toml,
                             const std::string& key) {
  const toml::table was = parsed(was_toml, "the saved config"),
                    now = parsed(now_toml, "the config");
  return first_in(was.get(key), now.get(key), key);
}

}  // namespace hpdl
