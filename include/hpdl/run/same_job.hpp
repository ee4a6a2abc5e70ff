// One agreement before any collective whose sizes depend on the job: every rank must run
// the same job (one `mpirun` can start ranks with different configs or binaries). Each rank
// describes its job as text (the resolved config and the command's flags; later the data
// and model layout); a 64-bit FNV-1a digest of it is compared across ranks, and only on a
// mismatch is rank 0's text sent round so each differing rank can name the first
// difference.
#pragma once
#include <cstdint>
#include <string>

#include "hpdl/comm/comm.hpp"

namespace hpdl {

// FNV-1a, 64 bits: the same on every build and machine.
uint64_t fnv1a64(const std::string& text);

// The first key whose value differs between `mine` and `reference` (TOML-like text:
// "[section]" and "[[array]]" headers, "key = value" lines), as "KEY: VALUE vs REFERENCE"
// with KEY "section.key" ("array.N.key" in the N-th entry of an array of tables) and
// "(not set)" for a missing key; "" when they are equal.
std::string first_difference(const std::string& mine, const std::string& reference);

// Collective. Throws AgreedError on every rank when some rank's `text` differs from rank 0's:
// "ranks do not run the same job: rank R's WHAT differs from rank 0's at KEY: V vs W".
void require_same_job(const Comm& comm, const std::string& what, const std::string& text);

}  // namespace hpdl
