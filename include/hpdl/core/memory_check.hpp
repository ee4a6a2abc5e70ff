// The check before a large allocation: a model's buffers are sized by the config, so a
// config asking for more than the ranks of a host can have gets one line naming the need
// and the limit, before any allocation (instead of a bare std::bad_alloc or the OOM killer,
// which ends a job with exit 137 and no message).
#pragma once
#include <cstdint>
#include <string>

namespace hpdl {

// Physical memory of this machine in bytes (0 if unknown).
uint64_t physical_memory_bytes();

// What this process may use: the machine's memory or, when lower, the limit of the memory
// cgroup it runs in (Slurm's --mem, a container; cgroup v2 memory.max or v1
// memory.limit_in_bytes, the lowest of its cgroup and their parents).
struct MemoryLimit {
  uint64_t bytes = 0;  // 0 if unknown
  std::string what;    // "this machine's 23.5 GiB", "the 4.0 GiB its memory cgroup allows (...)"
};
MemoryLimit memory_limit();

// How many ranks of this job share this host's memory (default 1); the trainer sets it once
// it knows (CPU backends: every rank of the host holds its own model).
void set_ranks_sharing_memory(int ranks);

// Throws Error "WHAT needs X GiB per rank[, Y GiB for the N ranks on this host], more than
// LIMIT" when the ranks of this host together would need more than memory_limit().
void require_memory(uint64_t bytes_per_rank, const std::string& what);

}  // namespace hpdl
