// `hpdl convert`: dataset converters (no MPI needed). Errors print one line and exit 1.
#include <cstdio>
#include <sstream>

#include "hpdl/core/error.hpp"
#include "hpdl/data/convert.hpp"
#include "hpdl/data/h5_util.hpp"
#include "hpdl/run/commands.hpp"

namespace hpdl {

int cmd_convert_mnist(const std::string& images, const std::string& labels, const std::string& out,
                      const std::string& class_names) {
  try {
    h5_quiet();
    std::vector<std::string> names;
    std::istringstream in(class_names);
    for (std::string n; std::getline(in, n, ',');) names.push_back(n);
    const int64_t n = convert_mnist(images, labels, out, names);
    std::printf("wrote %s: x [%lld, 1, 28, 28] float32, y [%lld] int32\n", out.c_str(),
                (long long)n, (long long)n);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hpdl: error: %s\n", e.what());
    return 1;
  }
}

int cmd_convert_uci_har(const std::string& dir, const std::string& out) {
  try {
    h5_quiet();
    const UciHarCounts c = convert_uci_har(dir, out);
    std::printf("wrote %s: /train x [%lld, %lld, 9], /test x [%lld, %lld, 9], labels 0..5\n",
                out.c_str(), (long long)c.train, (long long)c.steps, (long long)c.test,
                (long long)c.steps);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hpdl: error: %s\n", e.what());
    return 1;
  }
}

}  // namespace hpdl
