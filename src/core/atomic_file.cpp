// Temporary file plus rename (see the header).
#include "hpdl/core/atomic_file.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "hpdl/core/error.hpp"
#include "hpdl/core/output_file.hpp"

namespace hpdl {

void write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  const int fd = open_output(tmp, OutputMode::kFresh);
  std::string failure;
  try {
    write_all(fd, text, tmp);
  } catch (const Error& e) {
    failure = e.what();
  }
  if (::close(fd) != 0 && failure.empty())
    failure = "cannot write " + tmp + ": " + std::strerror(errno);
  if (!failure.empty()) {
    std::remove(tmp.c_str());  // PATH keeps its previous content; nothing partial is left
    throw Error(failure);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    std::remove(tmp.c_str());
    throw Error("cannot rename " + tmp + " to " + path + ": " + why);
  }
}

}  // namespace hpdl
