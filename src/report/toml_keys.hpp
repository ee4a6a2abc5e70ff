// A config.toml as hpdl writes it ("[section]" and "[[array]]" headers, "key = value"
// lines), flattened to "section.key" -> "value" ("array.N.key" in the N-th entry of an
// array of tables, from 0). Enough for the files hpdl writes; not a TOML parser.
#pragma once
#include <map>
#include <string>

namespace hpdl {

std::map<std::string, std::string> toml_keys(const std::string& text);

// The whole file at `path`, or "" when it cannot be read.
std::string file_text(const std::string& path);

}  // namespace hpdl
