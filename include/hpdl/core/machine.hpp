// The machine a process runs on, as a report names it: the CPU's model, the widest vector
// ISA it offers, and its online cores. Read from /proc/cpuinfo (Linux, x86-64 and arm64).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace hpdl {

struct Machine {
  std::string
      cpu;  // "AMD EPYC (family 25, model 17)", "Raspberry Pi 4 Model B Rev 1.4 (Cortex-A72)"
  std::string isa;  // "AVX-512 (BF16)", "AVX2", "NEON", "SVE"
  int cores = 0;
};

Machine this_machine();

// The CPU this process may use: the cores of its affinity mask and, where its cgroup (v1's
// cpu.cfs_quota_us / cpu.cfs_period_us or v2's cpu.max, the tightest of its ancestors)
// sets a quota, that quota in cores (0: none). An emulated host's budget shows here; a
// real host's is its cores.
struct CpuAllowance {
  int affinity_cores = 0;
  std::vector<uint8_t> affinity;  // the mask: bit c % 8 of byte c / 8 set where core c is in it
  double quota_cores = 0;
};
// The cores a mask (CpuAllowance::affinity) holds.
int cores_in(const std::vector<uint8_t>& mask);
CpuAllowance this_process_cpu();

}  // namespace hpdl
