#include "hpdl/run/wait_policy.hpp"

#include <algorithm>
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
  // The cores the node's ranks may use between them: ranks bound to a core each (mpirun's
  // default for a few ranks) each see one, and together see them all.
  std::vector<uint8_t> node_mask = cpu.affinity;
  comm.node_or(node_mask);  // collective: every rank asks
  const int node_cores = cores_in(node_mask);
  char why[160];
  if (cpu.quota_cores > 0) {
    // Each wake-up spends a test and a system call of the quota, and libnbc starts a
    // collective's next round only inside a test, so a rank asleep adds up to a pause to
    // each round: the longest pause grows as the share shrinks, 75 us / quota cores (measured
    // best of 50, 150 and 500 us at 0.5, 0.25 and 0.125 cores: docs/results.md, "A
    // sleeping rank's longest pause fitted to the host's CPU share").
    c.policy.sleep = true;
    c.policy.max_pause_s = std::clamp(75e-6 / cpu.quota_cores, 20e-6, 1e-3);
    std::snprintf(why, sizeof why,
                  "sleep: this host's CPU has a quota of %.3g cores (pauses up to %.0f us)",
                  cpu.quota_cores, 1e6 * c.policy.max_pause_s);
  } else if (threads > cpu.affinity_cores) {
    c.policy.sleep = true;
    std::snprintf(why, sizeof why, "sleep: %d threads on this rank's %d cores", threads,
                  cpu.affinity_cores);
  } else if (on_node * threads > node_cores) {
    c.policy.sleep = true;
    std::snprintf(why, sizeof why, "sleep: %d ranks x %d threads on %d cores", on_node, threads,
                  node_cores);
  } else {
    std::snprintf(why, sizeof why, "spin: %d ranks x %d threads on %d cores", on_node, threads,
                  node_cores);
  }
  c.why = why;
  return c;
}

}  // namespace hpdl
