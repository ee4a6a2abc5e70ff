// Same-job agreement (see the header).
#include "hpdl/run/same_job.hpp"

#include <map>
#include <sstream>
#include <vector>

#include "hpdl/core/error.hpp"

namespace hpdl {
namespace {

// (key, value) pairs of TOML-like text in order, keys prefixed by their section; the
// entries of an array of tables are numbered ("[[model.layers]]" twice: model.layers.0.,
// model.layers.1.), so the same key in another entry is another key.
std::vector<std::pair<std::string, std::string>> keyed_values(const std::string& text) {
  std::vector<std::pair<std::string, std::string>> out;
  std::map<std::string, int> entries;
  std::istringstream in(text);
  std::string section;
  for (std::string line; std::getline(in, line);) {
    const size_t b = line.find_first_not_of(" \t");
    if (b == std::string::npos) continue;
    line = line.substr(b);
    if (line.front() == '[') {
      const bool array = line.rfind("[[", 0) == 0;
      const size_t open = array ? 2 : 1;
      section = line.substr(open, line.find(']') - open);
      if (array) {
        const int entry = entries[section]++;
        section.append(".").append(std::to_string(entry));
      }
      continue;
    }
    const size_t eq = line.find(" = ");
    const std::string key = line.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : line.substr(eq + 3);
    out.emplace_back(section.empty() ? key : section + "." + key, value);
  }
  return out;
}

}  // namespace

uint64_t fnv1a64(const std::string& text) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : text) h = (h ^ c) * 1099511628211ull;
  return h;
}

std::string first_difference(const std::string& mine, const std::string& reference) {
  const auto a = keyed_values(mine), b = keyed_values(reference);
  const std::map<std::string, std::string> ref(b.begin(), b.end()), own(a.begin(), a.end());
  for (const auto& [key, value] : a) {
    const auto it = ref.find(key);
    if (it == ref.end()) return key + ": " + value + " vs (not set)";
    if (it->second != value) return key + ": " + value + " vs " + it->second;
  }
  for (const auto& [key, value] : b)
    if (!own.count(key)) return key + ": (not set) vs " + value;
  return "";
}

void require_same_job(const Comm& comm, const std::string& what, const std::string& text) {
  const std::vector<std::string> digests = comm.allgather(std::to_string(fnv1a64(text)));
  bool same = true;
  for (const auto& d : digests) same &= d == digests[0];
  if (same) return;
  std::string reference = comm.rank() == 0 ? text : std::string();
  comm.broadcast(reference, 0);
  std::string err;
  if (digests[comm.rank()] != digests[0]) {
    std::string diff = first_difference(text, reference);
    if (diff.empty()) diff = "(same text, different digest)";
    err = "ranks do not run the same job: rank " + std::to_string(comm.rank()) + "'s " + what +
          " differs from rank 0's at " + diff + " (start every rank with the same command)";
  }
  comm.agree(err);
}

}  // namespace hpdl
