// Loading configs. The TOML tree is parsed once, overrides are applied to the tree (so the
// resolved copy in the run directory shows them), then each section is read into the typed
// structs (read_sections.cpp).
#include "hpdl/config/config.hpp"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "hpdl/config/table_reader.hpp"
#include "hpdl/core/error.hpp"
#include "hpdl/core/input_file.hpp"
#include "key_depth.hpp"
#include "read_sections.hpp"

namespace hpdl {
namespace {

std::string read_text(const std::string& path, const std::string& where) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(where + ": cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// "a.b.c=value": sets t[a][b][c], creating tables as needed; a number indexes an
// existing array ("model.layers.1.hidden=64" sets the second layer's hidden size).
void apply_override(toml::table& root, const std::string& item, const std::string& where) {
  const auto eq = item.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw Error(where + ": --set '" + item + "' must look like key=value");
  }
  const std::string key = item.substr(0, eq), text = item.substr(eq + 1);
  std::vector<std::string> path;
  std::istringstream parts(key);
  for (std::string part; std::getline(parts, part, '.');) {
    // hpdl's keys are at most a few levels deep; a huge depth would only build a tree
    // that later recursion (printing, destruction) cannot walk.
    constexpr size_t kMaxDepth = 16;
    if (path.size() == kMaxDepth)
      throw Error(where + ": --set key '" + key.substr(0, 80) + (key.size() > 80 ? "..." : "") +
                  "' has more than " + std::to_string(kMaxDepth) + " parts");
    if (part.empty()) throw Error(where + ": --set key '" + key + "' has an empty part");
    path.push_back(part);
  }
  toml::table* table = &root;
  for (size_t i = 0; i + 1 < path.size(); ++i) {
    toml::node* n = table->get(path[i]);
    if (!n) {
      table->insert(path[i], toml::table{});
      n = table->get(path[i]);
    }
    if (n->is_array()) {
      char* end = nullptr;
      const long index = std::strtol(path[i + 1].c_str(), &end, 10);
      toml::array* arr = n->as_array();
      if (*end || index < 0 || static_cast<size_t>(index) >= arr->size() || i + 2 >= path.size())
        throw Error(where + ": --set " + key + ": '" + path[i + 1] + "' is not an entry of " +
                    path[i]);
      n = arr->get(static_cast<size_t>(index));
      ++i;
    }
    if (!n->is_table())
      throw Error(where + ": --set " + key + ": '" + path[i] + "' is not a table");
    table = n->as_table();
  }
  // The value is parsed as TOML ("0.1", "true", "[1, 28, 28]", "\"adam\""); a bare word
  // that is not valid TOML (adam) is taken as a string.
  check_key_depth(text, where + ": --set " + key);
  try {
    toml::table parsed = toml::parse("v = " + text);
    table->insert_or_assign(path.back(), std::move(*parsed.get("v")));
  } catch (const toml::parse_error&) {
    table->insert_or_assign(path.back(), text);
  }
}

}  // namespace

std::string to_toml(const toml::table& t) {
  std::ostringstream os;
  os << t << "\n";
  return os.str();
}

Config load_config(const std::string& path, const std::vector<std::string>& overrides) {
  Config c;
  c.source = path;
  const std::string where = "config " + path;
  if (!std::filesystem::exists(path)) throw Error(where + ": file not found");
  require_input_file(path, "config");
  const std::string text = read_text(path, where);
  check_key_depth(text, where);
  try {
    c.resolved = toml::parse(text, path);
  } catch (const toml::parse_error& err) {
    throw Error(where + ":" + std::to_string(err.source().begin.line) +
                ": malformed TOML: " + std::string(err.description()));
  }
  for (const auto& o : overrides) apply_override(c.resolved, o, where);
  read_sections(c, where, path);
  return c;
}

Config config_from_text(const std::string& text, const std::string& where) {
  Config c;
  c.source = where;
  check_key_depth(text, where);
  try {
    c.resolved = toml::parse(text);
  } catch (const toml::parse_error& err) {
    throw Error(where + ":" + std::to_string(err.source().begin.line) +
                ": malformed TOML: " + std::string(err.description()));
  }
  read_sections(c, where, where);
  return c;
}

// The run directory is output_dir/name: a name must not lead out of output_dir.
void check_run_name(const std::string& name, const std::string& source) {
  const bool control = std::any_of(name.begin(), name.end(),
                                   [](char ch) { return static_cast<unsigned char>(ch) < 0x20; });
  if (name.empty() || name == "." || name == ".." || name.find('/') != std::string::npos ||
      control || name.size() > 255) {
    throw Error(source + " = \"" + name +
                "\" must be a plain directory name (no '/' or control characters, not '.' or "
                "'..', at most 255 bytes)");
  }
}

}  // namespace hpdl
