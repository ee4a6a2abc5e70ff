// Copying from a read-only mapping of a data file without dying when the file shrinks under
// the job: a page past the file's new end raises SIGBUS, which would end the rank with exit
// 135, no error line and a manifest that still says "running". The copy catches exactly that
// fault (its own thread, its own source range) and reports it, so the rank ends the agreed
// way with one line; any other SIGBUS goes on to the handler installed before (OpenMPI's) or
// to the default action.
#pragma once
#include <cstddef>

namespace hpdl {

// Copies `bytes` from `src` (inside a file mapping) to `dst`; false when the mapping's pages
// are no longer backed by the file (it was truncated), with `dst` partly written.
bool copy_from_mapping(void* dst, const void* src, size_t bytes);

}  // namespace hpdl
