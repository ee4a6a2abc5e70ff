// The one place that calls getenv (environment.hpp). main.cpp reads its own launcher
// variables before the library starts.
#include "hpdl/core/environment.hpp"

#include <cstdlib>

#include "hpdl/core/error.hpp"

namespace hpdl {
namespace {

// Name and what hpdl takes it for.
struct Variable {
  const char* name;
  const char* meaning;
};
constexpr Variable kVariables[] = {
    {"SLURM_JOB_ID", "a run directory's name under a Slurm job (run_dir.cpp)"},
    {"SLURM_ARRAY_TASK_ID", "the same for one task of a job array"},
    {"HPDL_GEMM", "alias of run.kernels.gemm where the config does not set it"},
    {"HPDL_MPI_START_S", "the bound on MPI's start, seconds (comm/start_bound.hpp)"},
    {"OMPI_COMM_WORLD_RANK", "this process's rank before MPI has started (mpirun)"},
    {"PMI_RANK", "the same under a PMI launcher"},
    {"SLURM_PROCID", "the same under srun"},
};

}  // namespace

std::optional<std::string> environment_variable(const std::string& name) {
  bool known = false;
  for (const Variable& v : kVariables) known |= name == v.name;
  HPDL_REQUIRE(known, "environment variable " + name + " is not in hpdl's table (a bug)");
  const char* value = std::getenv(name.c_str());
  if (!value) return std::nullopt;
  return std::string(value);
}

}  // namespace hpdl
