// Formatting of failed library calls; the rank is set once MPI is initialised.
#include "hpdl/core/error.hpp"

namespace hpdl {
namespace {
int g_rank = -1;  // written once in main() before any other thread exists
}

void set_error_rank(int rank) { g_rank = rank; }
int error_rank() { return g_rank; }

void fail_call(const char* file, int line, const std::string& what, const std::string& detail) {
  std::string where = file;
  const auto pos = where.find("/src/");
  if (pos != std::string::npos) where = where.substr(pos + 1);
  throw Error("rank " + std::to_string(g_rank) + ": " + where + ":" + std::to_string(line) + ": " +
              what + ": " + detail);
}

}  // namespace hpdl
