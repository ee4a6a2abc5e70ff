// Fuzzes the config reader with --set overrides: the input's leading lines of the form
// "--set KEY=VALUE" become overrides, the rest is the TOML file.
#include "fuzz_util.hpp"
#include "hpdl/config/config.hpp"
#include "hpdl/core/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> sets;
  while (text.rfind("--set ", 0) == 0) {
    const size_t nl = text.find('\n');
    sets.push_back(text.substr(6, nl == std::string::npos ? std::string::npos : nl - 6));
    text = nl == std::string::npos ? "" : text.substr(nl + 1);
  }
  const std::string path =
      hpdl_fuzz::write("config.toml", reinterpret_cast<const uint8_t*>(text.data()), text.size());
  try {
    hpdl::load_config(path, sets);
  } catch (const hpdl::Error&) {
  }
  return 0;
}
