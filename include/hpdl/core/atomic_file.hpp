// Writing a text file so that readers see either the old file or the whole new one:
// write PATH.tmp, then rename it over PATH. Used for every output except HDF5 files
// (those go through h5_write_atomically).
#pragma once
#include <string>

namespace hpdl {

// Throws Error naming the file if it cannot be written or renamed.
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace hpdl
