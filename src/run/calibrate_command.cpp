// `hpdl calibrate [--out network.json] [--max-bytes B] [--budget-s S] [--strict]
// [--no-compute]`: measures the network of an allocation (net/calibration.hpp) and each
// rank's compute ceilings (GEMM peak, memory bandwidth), writes network.json and prints a
// table on rank 0. Also the smoke test before a long job: it touches every host and every
// host pair, and flags a pair or host far slower than the others (--strict: exit 3 then).
#include <cstdio>
#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "hpdl/config/kernel_choices.hpp"
#include "hpdl/core/atomic_file.hpp"
#include "hpdl/core/error.hpp"
#include "hpdl/kernels/kernels.hpp"
#include "hpdl/net/calibration.hpp"
#include "hpdl/run/commands.hpp"
#include "hpdl/run/mpi_command.hpp"
#include "hpdl/run/rank_ceilings.hpp"
#include "hpdl/run/wait_policy.hpp"

namespace hpdl {
namespace {

// Every rank's ceilings, through the CPU backend, as training would share the node.
void measure_compute(const Comm& comm, Calibration& c) {
  auto kernels =
      make_kernel_factory(Backend::kOneDnn, 0, Precision::kF32, kernel_choices_from_environment());
  RankCeilings r = measure_rank_ceilings(comm, *kernels);
  c.gemm_flops_per_s = std::move(r.gemm_flops_per_s);
  c.memory_Bps = std::move(r.memory_Bps);
}

}  // namespace

int cmd_calibrate(const CalibrateArgs& args, int* argc, char*** argv) {
  // coll_tuned reads the forced allreduce algorithm only with dynamic rules on, which must
  // be set before MPI starts (a value given by the user wins).
  setenv("OMPI_MCA_coll_tuned_use_dynamic_rules", "1", 0);
  // A waiting rank yields its core: where ranks share cores (more ranks than cores, or
  // emulated hosts on one machine) a spinning waiter would otherwise hold the core its
  // peer needs for a whole scheduler tick, and a 10 us round trip would read 4 ms.
  setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);
  return run_under_mpi(argc, argv, [&](Comm& comm) {
    Watchdog watchdog(args.watchdog_s, comm.rank());
    comm.bound_waits_by(&watchdog);
    // Waits as training's do (run.wait = "auto"), so that a host with a CPU budget is not
    // timed throttled for spinning.
    const ChosenWait wait = choose_wait(WaitChoice::kAuto, comm, 1);
    comm.idle_by(wait.policy);
    if (comm.rank() == 0)
      std::printf("calibrating %d ranks (up to %lld bytes, at most %.2g s a size) ...\n",
                  comm.size(), static_cast<long long>(args.options.max_bytes),
                  args.options.budget_s);
    std::fflush(stdout);
    Calibration c = calibrate(comm, args.options, watchdog);
    c.wait = wait.why;
    if (args.compute) measure_compute(comm, c);
    comm.bound_waits_by(nullptr);
    if (comm.rank() != 0) return 0;
    write_file_atomically(args.out, c.to_json().dump(1) + "\n");
    std::printf("%s\nwritten: %s\n", c.table().c_str(), args.out.c_str());
    return args.strict && !c.flags.empty() ? 3 : 0;
  });
}

}  // namespace hpdl
