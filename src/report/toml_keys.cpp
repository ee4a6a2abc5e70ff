#include "toml_keys.hpp"

#include <fstream>
#include <sstream>

namespace hpdl {
namespace {

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r"), b = s.find_last_not_of(" \t\r");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

}  // namespace

std::map<std::string, std::string> toml_keys(const std::string& text) {
  std::map<std::string, std::string> out;
  std::map<std::string, int> entries;  // array of tables -> entries seen
  std::string section;
  std::istringstream in(text);
  for (std::string raw; std::getline(in, raw);) {
    const std::string line = trim(raw);
    if (line.empty() || line[0] == '#') continue;
    if (line.rfind("[[", 0) == 0) {
      const std::string name = trim(line.substr(2, line.find("]]") - 2));
      section = name + "." + std::to_string(entries[name]++);
    } else if (line[0] == '[') {
      section = trim(line.substr(1, line.find(']') - 1));
    } else if (const size_t eq = line.find('='); eq != std::string::npos) {
      const std::string key = trim(line.substr(0, eq));
      out[section.empty() ? key : section + "." + key] = trim(line.substr(eq + 1));
    }
  }
  return out;
}

std::string file_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) return "";
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace hpdl
