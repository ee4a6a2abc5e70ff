// The check before a large allocation: a model's buffers are sized by the config, so a
// config asking for more than the machine has gets one line naming the need and the
// machine's memory, before any allocation (instead of a bare std::bad_alloc or the OOM killer).
#pragma once
#include <cstdint>
#include <string>

namespace hpdl {

// Physical memory of this machine in bytes (0 if unknown).
uint64_t physical_memory_bytes();

// Throws Error "WHAT needs X GiB per rank, more than this machine's Y GiB" when bytes
// exceeds the physical memory.
void require_memory(uint64_t bytes, const std::string& what);

}  // namespace hpdl
