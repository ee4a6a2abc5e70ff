// Every environment variable hpdl's library reads, in one table (environment.cpp;
// docs/configuration.md#environment-variables): a name outside the table is a bug, so a new
// variable cannot be read without being listed and documented. Settings that choose what
// runs belong in the config (run.kernels), not here.
#pragma once
#include <optional>
#include <string>

namespace hpdl {

// The variable's value; nullopt when unset. Throws Error (a bug) for a name not in the table.
std::optional<std::string> environment_variable(const std::string& name);

}  // namespace hpdl
