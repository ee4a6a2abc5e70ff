// SIGUSR1 and SIGTERM as a request to checkpoint and stop, the way batch systems warn a
// job before its time limit (sbatch --signal, Slurm's SIGTERM at the limit, mpirun
// forwarding). The handler only records the signal; the trainers act on it between steps.
#pragma once

namespace hpdl {

// Installs the handlers (idempotent). Without it the signals keep their default action.
void catch_stop_signals();
// Gives the signals back their default action; one that already arrived acts now.
void release_stop_signals();
// The signal that arrived (SIGUSR1 or SIGTERM), or 0.
int stop_signal();
// "SIGUSR1", "SIGTERM" or "" for 0.
const char* signal_name(int sig);

}  // namespace hpdl
