#include "hpdl/run/wait_policy.hpp"

#include <cstdio>

#include "hpdl/core/machine.hpp"

namespace hpdl {

ChosenWait choose_wait(WaitChoice wait, const Comm& comm, int threads) {
  const int on_node = comm.node_size();  // collective: every rank asks
  ChosenWait c;
  if (wait != WaitChoice::kAuto) {
    c.policy.sleep = wait == WaitChoice::kSleep;
    c.why = std::string(word(wait)) + ": run.wait";
    return c;
  }
  const CpuAllowance cpu = this_process_cpu();
  char why[160];
  if (cpu.quota_cores > 0) {
    c.policy.sleep = true;
    std::snprintf(why, sizeof why, "sleep: this host's CPU has a quota of %.3g cores",
                  cpu.quota_cores);
  } else if (on_node * threads > cpu.affinity_cores) {
    c.policy.sleep = true;
    std::snprintf(why, sizeof why, "sleep: %d ranks x %d threads on %d cores", on_node, threads,
                  cpu.affinity_cores);
  } else {
    std::snprintf(why, sizeof why, "spin: %d ranks x %d threads on %d cores", on_node, threads,
                  cpu.affinity_cores);
  }
  c.why = why;
  return c;
}

}  // namespace hpdl
