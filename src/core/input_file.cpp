// Input-file check: stat (following links) before any open.
#include "hpdl/core/input_file.hpp"

#include <filesystem>

#include "hpdl/core/error.hpp"

namespace hpdl {
namespace fs = std::filesystem;

void require_input_file(const std::string& path, const std::string& what) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (st.type() == fs::file_type::not_found) throw Error(what + " " + path + " not found");
  if (ec) throw Error(what + " " + path + " cannot be read: " + ec.message());
  if (st.type() == fs::file_type::regular) return;
  const char* kind = "not a regular file";
  switch (st.type()) {
    case fs::file_type::directory:
      kind = "a directory";
      break;
    case fs::file_type::fifo:
      kind = "a FIFO";
      break;
    case fs::file_type::socket:
      kind = "a socket";
      break;
    case fs::file_type::character:
    case fs::file_type::block:
      kind = "a device";
      break;
    default:
      break;
  }
  throw Error(what + " " + path + " is not a regular file (it is " + kind + ")");
}

}  // namespace hpdl
