// The one check before hpdl opens any file it reads (configs, HDF5 data, checkpoints,
// converter inputs): it must exist and be a regular file. A FIFO, device or directory
// would block or mislead the reader before any watchdog could act, so it is refused here.
#pragma once
#include <string>

namespace hpdl {

// Throws Error "WHAT PATH not found" or "WHAT PATH is not a regular file (it is a FIFO)".
// `what` names the role, e.g. "HDF5 file" or "config".
void require_input_file(const std::string& path, const std::string& what);

}  // namespace hpdl
