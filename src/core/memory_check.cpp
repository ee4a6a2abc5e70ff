// Memory check (see the header).
#include "hpdl/core/memory_check.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "hpdl/core/error.hpp"

namespace hpdl {

namespace {
std::atomic<int> g_sharing{1};

std::string gib(uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GiB", bytes / 1073741824.0);
  return text;
}

// A limit file's value; 0 for "max", no file or anything unreadable.
uint64_t limit_in(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::string text;
  if (!(in >> text) || text == "max") return 0;
  try {
    return std::stoull(text);
  } catch (const std::exception&) {
    return 0;
  }
}

// The lowest limit from this process's cgroup up to the hierarchy's root (0 if none), for
// the hierarchy mounted at `mount` whose path /proc/self/cgroup gives as `path`.
uint64_t lowest_limit(const std::filesystem::path& mount, const std::string& path, const char* file,
                      std::string* where) {
  std::filesystem::path dir = mount / std::filesystem::path(path).relative_path();
  // Inside a cgroup namespace (a container) the named path may not exist: the mount's root
  // is then this process's cgroup.
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) dir = mount;
  uint64_t lowest = 0;
  for (;;) {
    const uint64_t v = limit_in(dir / file);
    if (v > 0 && (lowest == 0 || v < lowest)) lowest = v, *where = (dir / file).string();
    if (dir == mount || !dir.has_relative_path()) break;
    dir = dir.parent_path();
  }
  return lowest;
}

uint64_t cgroup_limit(std::string* where) {
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  uint64_t lowest = 0;
  const auto take = [&](uint64_t v, const std::string& w) {
    if (v > 0 && (lowest == 0 || v < lowest)) lowest = v, *where = w;
  };
  while (std::getline(in, line)) {
    // "ID:CONTROLLERS:PATH": v1 names "memory" among its controllers, v2 has ID 0 and none.
    const size_t a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    std::string w;
    if (controllers.empty() && line.compare(0, a, "0") == 0) {
      for (const char* mount : {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"})
        if (std::filesystem::exists(std::string(mount) + "/cgroup.controllers")) {
          const uint64_t v = lowest_limit(mount, path, "memory.max", &w);
          take(v, w);
          break;
        }
    } else if (("," + controllers + ",").find(",memory,") != std::string::npos) {
      const uint64_t v = lowest_limit("/sys/fs/cgroup/memory", path, "memory.limit_in_bytes", &w);
      take(v, w);
    }
  }
  return lowest;
}
}  // namespace

uint64_t physical_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  return pages > 0 && page > 0 ? static_cast<uint64_t>(pages) * static_cast<uint64_t>(page) : 0;
}

MemoryLimit memory_limit() {
  MemoryLimit m;
  m.bytes = physical_memory_bytes();
  m.what = "this machine's " + gib(m.bytes);
  std::string where;
  const uint64_t cgroup = cgroup_limit(&where);
  if (cgroup > 0 && (m.bytes == 0 || cgroup < m.bytes)) {
    m.bytes = cgroup;
    m.what = "the " + gib(cgroup) + " its memory cgroup allows (" + where + ")";
  }
  return m;
}

void set_ranks_sharing_memory(int ranks) { g_sharing = std::max(ranks, 1); }

void require_memory(uint64_t bytes_per_rank, const std::string& what) {
  const MemoryLimit limit = memory_limit();
  const int ranks = g_sharing;
  const uint64_t need = bytes_per_rank * static_cast<uint64_t>(ranks);
  if (limit.bytes == 0 || need <= limit.bytes) return;
  throw Error(what + " needs " + gib(bytes_per_rank) + " per rank" +
              (ranks > 1
                   ? ", " + gib(need) + " for the " + std::to_string(ranks) + " ranks on this host"
                   : "") +
              ", more than " + limit.what);
}

}  // namespace hpdl
