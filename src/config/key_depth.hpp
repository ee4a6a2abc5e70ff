// A bound on dotted keys, checked on the text before toml++ parses it: toml++ builds a
// dotted key or table header by recursion, one level per part, so a key of 100,000 parts
// overflows the stack (arrays and inline tables it bounds itself, at 256 levels).
#pragma once
#include <string>
#include <string_view>

namespace hpdl {

// hpdl's keys have at most a few parts; this many is refused.
constexpr int kMaxKeyParts = 64;

// Throws Error "WHERE:LINE: a dotted key or table header of more than 64 parts" at the
// first run of dot-separated parts (bare or quoted, outside strings and comments) that is
// longer than kMaxKeyParts.
void check_key_depth(std::string_view toml_text, const std::string& where);

}  // namespace hpdl
