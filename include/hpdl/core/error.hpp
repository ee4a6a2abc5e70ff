// Errors in hpdl: one exception type whose what() is the single line the user sees, and
// check macros for every library call (MPI, HDF5, oneDNN) that name the failed call (its
// function, not hpdl's source) and the library's own text. The job's ending adds the rank
// (comm/failure_relay.hpp); main() turns them into a non-zero exit.
#pragma once
#include <stdexcept>
#include <string>

namespace hpdl {

// A bad input or a failed call on this rank. what() is one line, without "error:" prefix.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Thrown with the same text on every rank once the ranks have agreed that the job must
// stop (Comm::agree); main() may then finalize MPI normally instead of aborting.
class AgreedError : public Error {
 public:
  using Error::Error;
};

// Thrown on a rank the others have dropped from the job (a parameter-server worker that
// was silent too long): it ends alone, without ending theirs.
class LeftJob : public Error {
 public:
  using Error::Error;
};

// Throws Error("WHAT: DETAIL").
[[noreturn]] void fail_call(const std::string& what, const std::string& detail);
// The function a stringized call names: "H5Dwrite(ds.get(), ...)" -> "H5Dwrite".
std::string call_name(const char* call);

}  // namespace hpdl

// Input errors: a plain message that names the bad input.
#define HPDL_REQUIRE(cond, msg)            \
  do {                                     \
    if (!(cond)) throw ::hpdl::Error(msg); \
  } while (0)
