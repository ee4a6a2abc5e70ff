#include "key_depth.hpp"

#include "hpdl/core/error.hpp"

namespace hpdl {
namespace {

bool bare_key_char(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '-';
}

}  // namespace

void check_key_depth(std::string_view s, const std::string& where) {
  int line = 1, parts = 1;
  size_t i = 0;
  auto refuse = [&] {
    throw Error(where + ":" + std::to_string(line) +
                ": a dotted key or table header of more than " + std::to_string(kMaxKeyParts) +
                " parts (hpdl's keys have at most a few)");
  };
  while (i < s.size()) {
    const char c = s[i];
    if (c == '"' ||
        c == '\'') {  // a string: skipped whole; as a quoted key part it continues the run
      const bool multi = s.substr(i, 3) == std::string(3, c);
      const std::string_view close = multi ? s.substr(i, 3) : s.substr(i, 1);
      i += close.size();
      while (i < s.size() && s.substr(i, close.size()) != close) {
        if (s[i] == '\n') ++line;
        if (c == '"' && s[i] == '\\') ++i;  // an escape: the next character is content
        ++i;
      }
      i += close.size();
      continue;
    }
    if (c == '#') {  // a comment, to the end of the line
      while (i < s.size() && s[i] != '\n') ++i;
      continue;
    }
    if (c == '.') {
      if (++parts > kMaxKeyParts) refuse();
    } else if (c == '\n') {
      ++line, parts = 1;
    } else if (!bare_key_char(c) && c != ' ' && c != '\t') {
      parts = 1;  // '=', brackets, commas...: the run of parts ends
    }
    ++i;
  }
}

}  // namespace hpdl
