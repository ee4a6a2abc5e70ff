// Ordered candidate tables: each kernel choice of a backend is a table of candidates, each
// with the condition under which it fits and the reason it is there, tried in order; the
// first that fits wins (as Horovod's ordered Enabled() list, or Caffe's per-layer engine).
// Conditions are static (the shape, the CPU, run.kernels; never a timing), so every run of
// a config chooses the same kernels and computes the same sums, and a resumed run stays
// equal to an uninterrupted one. The CPU backend's tables are in onednn/choices.cpp.
#pragma once
#include <cstddef>
#include <string>

#include "hpdl/core/error.hpp"
#include "hpdl/kernels/kernels.hpp"

namespace hpdl {

template <typename Facts, typename Value>
struct Candidate {
  Value value;         // what the kernel runs, for its code
  const char* kernel;  // the same in words ("nhwc", "hpdl's NHWC kernel"); "" = nothing to say
  const char* reason;  // why it runs where it fits, as the execution plan prints it
  bool (*fits)(const Facts&);
  KernelChoice choice() const { return {kernel, reason}; }
};

// The first candidate of `table` that fits `facts`. A table ends with a candidate that fits
// everything it is asked about; `what` names the choice in the error if none does.
template <typename Facts, typename Value, size_t N>
const Candidate<Facts, Value>& first_fit(const Candidate<Facts, Value> (&table)[N],
                                         const Facts& facts, const char* what) {
  for (const Candidate<Facts, Value>& c : table)
    if (c.fits(facts)) return c;
  throw Error(std::string(what) + ": no kernel fits");
}

}  // namespace hpdl
