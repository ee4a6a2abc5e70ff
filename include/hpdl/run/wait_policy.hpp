// run.wait: how a training rank waits for the others (comm/comm.hpp's IdlePolicy). A rank
// that spins while it waits on a host with a CPU quota spends the quota on waiting and is
// throttled when its work resumes; one that shares a core with another rank takes that
// rank's time. Neither happens on a real host with a core per rank, where spinning answers
// soonest.
#pragma once
#include <string>

#include "hpdl/comm/comm.hpp"
#include "hpdl/config/choices.hpp"

namespace hpdl {

struct ChosenWait {
  IdlePolicy policy;
  std::string why;  // "sleep: the host's CPU has a quota of 0.125 cores", "spin: run.wait"
};

// Collective (it counts the ranks of this node and their cores). wait: spin, sleep or auto
// (sleep where this process has a cgroup CPU quota, pausing up to 75 us / its cores;
// where its threads outnumber the cores it may use, or this node's ranks x threads
// outnumber the cores they may use between them; else spin).
ChosenWait choose_wait(WaitChoice wait, const Comm& comm, int threads);

}  // namespace hpdl
