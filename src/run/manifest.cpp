// Manifest collection. Host names are gathered from all ranks; everything else is local.
#include "hpdl/run/manifest.hpp"

#include <hdf5.h>
#include <omp.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <ctime>
#include <dnnl.hpp>
#include <map>

#include "hpdl/core/machine.hpp"
#include "hpdl/kernels/kernels.hpp"
#include "hpdl/version.hpp"

extern char** environ;

namespace hpdl {

std::string utc_now() {
  char buf[32];
  const std::time_t t = std::time(nullptr);
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

nlohmann::json machine_json(const std::string& device) {
  const Machine m = this_machine();
  return {
      {"cpu", m.cpu}, {"isa", m.isa}, {"cores", m.cores}, {"gpu", device == "host" ? "" : device}};
}

nlohmann::json make_manifest(const Comm& comm, const Config& cfg, const std::string& command_line,
                             const std::string& device) {
  char host[256] = {0};
  gethostname(host, sizeof host - 1);
  const auto hosts = comm.allgather(host);
  std::map<std::string, int> per_host;
  for (const auto& h : hosts) ++per_host[h];

  const std::string mpi = MpiSession::library_version();

  unsigned h5maj = 0, h5min = 0, h5rel = 0;
  H5get_libversion(&h5maj, &h5min, &h5rel);
  const dnnl_version_t* dv = dnnl_version();

  nlohmann::json env = nlohmann::json::object(), slurm = nlohmann::json::object();
  for (char** e = environ; *e; ++e) {
    const std::string kv = *e;
    const auto eq = kv.find('=');
    const std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
    if (k.rfind("SLURM_", 0) == 0) slurm[k] = v;
    if (k.rfind("OMP_", 0) == 0 || k.rfind("DNNL_", 0) == 0 || k.rfind("ONEDNN_", 0) == 0)
      env[k] = v;
  }

  // The CPU rank 0 had: its host's (its cgroup's quota, else the machine's cores) shared by
  // the ranks there, at most its own affinity mask. What a forecast scales compute from
  // (predict/step_profile.hpp), so that a budget is counted once.
  const CpuAllowance cpu = this_process_cpu();
  const int on_host = std::max(per_host[hosts[0]], 1);
  const double host_cores =
      cpu.quota_cores > 0 ? cpu.quota_cores : double(sysconf(_SC_NPROCESSORS_ONLN));
  const nlohmann::json cpu_json = {
      {"affinity_cores", cpu.affinity_cores},
      {"quota_cores", cpu.quota_cores},
      {"ranks_on_host", on_host},
      {"cores_per_rank", std::min(double(cpu.affinity_cores), host_cores / on_host)}};

  return {
      {"hpdl_version", kVersion},
      {"cpu", cpu_json},
      {"git_hash", kGitHash},
      {"mpi_library", mpi},
      {"onednn_version", std::to_string(dv->major) + "." + std::to_string(dv->minor) + "." +
                             std::to_string(dv->patch) + " (" + dv->hash + ")"},
      {"hdf5_version",
       std::to_string(h5maj) + "." + std::to_string(h5min) + "." + std::to_string(h5rel)},
      {"ranks", comm.size()},
      {"threads_per_rank", omp_get_max_threads()},
      {"hosts", per_host},
      {"thread_env", env},
      {"slurm", slurm},
      {"command", command_line},
      {"config", cfg.source},
      {"backend", cfg.run.backend},
      {"gemm", gemm_library(cfg.run.backend, cfg.run.kernels)},
      {"precision", cfg.run.precision},
      {"devices", comm.allgather(device)},  // per rank
      {"machine", machine_json(device)},    // rank 0's
      {"mode", cfg.distributed.mode},
      {"started", utc_now()},
      {"status", "running"},
  };
}

}  // namespace hpdl
