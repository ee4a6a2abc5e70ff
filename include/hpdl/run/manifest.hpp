// The run manifest: what ran, where and with what (hpdl version and git hash, MPI library,
// oneDNN and HDF5 versions, ranks x threads, binding, hosts, Slurm variables, command).
// Collective: every rank contributes its host name.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "hpdl/comm/comm.hpp"
#include "hpdl/config/config.hpp"

namespace hpdl {

// Collective (host names and devices are gathered). device: this rank's Device::name() (on
// a GPU its model, compute capability, driver and CUDA runtime versions).
nlohmann::json make_manifest(const Comm& comm, const Config& cfg, const std::string& command_line,
                             const std::string& device);

// "2026-11-21T21:30:00Z"
std::string utc_now();
// This process's machine as the manifest records it: CPU, ISA, cores, and the GPU when
// `device` (Device::name()) is not the host. `hpdl train` and `hpdl time --out` alike.
nlohmann::json machine_json(const std::string& device);

}  // namespace hpdl
