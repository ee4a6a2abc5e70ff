// The reader of the table run.kernels (kernel_choices.cpp), for config.cpp. Private to config/.
#pragma once
#include <toml++/toml.h>

#include <string>

#include "hpdl/config/settings.hpp"

namespace hpdl {

// The table (null: absent) for a run on `backend`, starting from what the environment sets:
// every key's value named in one line when it is unknown or does not apply to that backend
// ("run.kernels.pool = \"onednn\" applies to run.backend = \"onednn\" only (this run's is
// \"reference\")"). `where`: "config F: run.kernels".
KernelChoices read_kernel_choices(const toml::table* table, const std::string& where,
                                  Backend backend);

}  // namespace hpdl
