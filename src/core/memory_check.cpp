// Memory check (see the header).
#include "hpdl/core/memory_check.hpp"

#include <unistd.h>

#include <cstdio>

#include "hpdl/core/error.hpp"

namespace hpdl {

uint64_t physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
}

void require_memory(uint64_t bytes, const std::string& what) {
  const uint64_t have = physical_memory_bytes();
  if (have == 0 || bytes <= have) return;
  char text[128];
  std::snprintf(text, sizeof text, " needs %.1f GiB per rank, more than this machine's %.1f GiB",
                bytes / 1073741824.0, have / 1073741824.0);
  throw Error(what + text);
}

}  // namespace hpdl
