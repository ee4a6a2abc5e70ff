#include "hpdl/core/machine.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

namespace hpdl {
namespace {

std::string value_of(const std::string& line) {
  const size_t colon = line.find(':');
  if (colon == std::string::npos) return "";
  const size_t a = line.find_first_not_of(" \t", colon + 1);
  return a == std::string::npos ? "" : line.substr(a);
}

// The arm cores a Pi or a small board has, by their part number.
std::string arm_part(const std::string& part) {
  if (part == "0xd03") return "Cortex-A53";
  if (part == "0xd08") return "Cortex-A72";
  if (part == "0xd0b") return "Cortex-A76";
  if (part == "0xd0c") return "Neoverse-N1";
  if (part == "0xd40") return "Neoverse-V1";
  if (part == "0xd4f") return "Neoverse-V2";
  return "arm64 CPU part " + part;
}

double read_number(const std::string& path) {
  std::ifstream in(path);
  double v = 0;
  return in >> v ? v : 0;
}

// The quota in cores of the cgroup `rel` (a path below the hierarchy `root`) and each of its
// ancestors, the tightest; 0 where none sets one.
double quota_in(const std::string& root, std::string rel, bool v2) {
  double best = 0;
  for (;;) {
    const std::string dir = root + rel;
    double q = 0;
    if (v2) {
      std::ifstream in(dir + "/cpu.max");
      std::string quota;
      double period = 0;
      if (in >> quota >> period && quota != "max" && period > 0) q = std::stod(quota) / period;
    } else {
      const double quota = read_number(dir + "/cpu.cfs_quota_us");
      const double period = read_number(dir + "/cpu.cfs_period_us");
      if (quota > 0 && period > 0) q = quota / period;
    }
    if (q > 0) best = best > 0 ? std::min(best, q) : q;
    if (rel.empty() || rel == "/") break;
    rel = rel.substr(0, rel.find_last_of('/'));
  }
  return best;
}

}  // namespace

int cores_in(const std::vector<uint8_t>& mask) {
  int n = 0;
  for (uint8_t b : mask) n += std::popcount(b);
  return n;
}

CpuAllowance this_process_cpu() {
  CpuAllowance a;
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) {  // every online core
    CPU_ZERO(&set);
    for (long c = 0; c < sysconf(_SC_NPROCESSORS_ONLN) && c < CPU_SETSIZE; ++c) CPU_SET(c, &set);
  }
  a.affinity_cores = CPU_COUNT(&set);
  a.affinity.assign(CPU_SETSIZE / 8, 0);
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) a.affinity[c / 8] |= uint8_t(1u << (c % 8));
  std::ifstream in("/proc/self/cgroup");
  for (std::string line; std::getline(in, line);) {
    // "ID:CONTROLLERS:PATH": v1's cpu controller ("cpu" or "cpu,cpuacct"), or v2's "0::PATH".
    const size_t a1 = line.find(':'), a2 = line.find(':', a1 + 1);
    if (a1 == std::string::npos || a2 == std::string::npos) continue;
    std::string controllers(",");
    controllers.append(line, a1 + 1, a2 - a1 - 1).append(",");
    const std::string path = line.substr(a2 + 1);
    if (controllers.find(",cpu,") != std::string::npos) {
      for (const char* root : {"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct"}) {
        const double q = quota_in(root, path, false);
        if (q > 0) a.quota_cores = q;
        if (q > 0) break;
      }
    } else if (controllers == ",," && a.quota_cores == 0) {
      a.quota_cores = quota_in("/sys/fs/cgroup", path, true);
    }
  }
  return a;
}

Machine this_machine() {
  Machine m;
  m.cores = int(sysconf(_SC_NPROCESSORS_ONLN));
  std::ifstream in("/proc/cpuinfo");
  std::set<std::string> flags;
  std::string board, part, family, model;
  for (std::string line; std::getline(in, line);) {
    const std::string key = line.substr(0, line.find_first_of("\t:"));
    if (key == "model name" && m.cpu.empty()) m.cpu = value_of(line);
    if (key == "cpu family" && family.empty()) family = value_of(line);
    if (key == "model" && model.empty()) model = value_of(line);
    if (key == "Model") board = value_of(line);  // a Raspberry Pi names its board here
    if (key == "CPU part" && part.empty()) part = value_of(line);
    if ((key == "flags" || key == "Features") && flags.empty()) {
      std::istringstream words(value_of(line));
      for (std::string w; words >> w;) flags.insert(w);
    }
  }
  // A virtual machine often names only the vendor ("AMD EPYC"): family and model tell more.
  if (!m.cpu.empty() && !family.empty()) m.cpu += " (family " + family + ", model " + model + ")";
  if (!board.empty()) m.cpu = board + (part.empty() ? "" : " (" + arm_part(part) + ")");
  if (m.cpu.empty() && !part.empty()) m.cpu = arm_part(part);
  if (m.cpu.empty()) m.cpu = "unknown CPU";
  if (flags.count("avx512f"))
    m.isa = flags.count("avx512_bf16") ? "AVX-512 (BF16)" : "AVX-512";
  else if (flags.count("avx2"))
    m.isa = "AVX2";
  else if (flags.count("sve"))
    m.isa = "SVE";
  else if (flags.count("asimd"))
    m.isa = "NEON";
  else
    m.isa = flags.count("sse2") ? "SSE2" : "unknown";
  return m;
}

}  // namespace hpdl
