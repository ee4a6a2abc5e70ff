// The machine a process runs on, as a report names it: the CPU's model, the widest vector
// ISA it offers, and its online cores. Read from /proc/cpuinfo (Linux, x86-64 and arm64).
#pragma once
#include <string>

namespace hpdl {

struct Machine {
  std::string
      cpu;  // "AMD EPYC (family 25, model 17)", "Raspberry Pi 4 Model B Rev 1.4 (Cortex-A72)"
  std::string isa;  // "AVX-512 (BF16)", "AVX2", "NEON", "SVE"
  int cores = 0;
};

Machine this_machine();

}  // namespace hpdl
