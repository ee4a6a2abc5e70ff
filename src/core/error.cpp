// Formatting of failed library calls.
#include "hpdl/core/error.hpp"

namespace hpdl {

void fail_call(const std::string& what, const std::string& detail) {
  throw Error(what + ": " + detail);
}

std::string call_name(const char* call) {
  std::string name = call;
  if (const auto open = name.find('('); open != std::string::npos) name.resize(open);
  return name;
}

}  // namespace hpdl
