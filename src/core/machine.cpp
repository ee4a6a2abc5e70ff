#include "hpdl/core/machine.hpp"

#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>

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

}  // namespace

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
