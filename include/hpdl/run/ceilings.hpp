// The two ceilings of a roofline, measured through a backend on the threads this process
// runs: the peak GEMM rate (the backend's dense kernel on a 1024 x 1024 x 1024 product, the
// best of repeated calls: oneDNN's sgemm on the CPU, cuBLAS on a GPU) and the memory
// bandwidth (the backend's axpy, y += a x, over two arrays of twice the last-level cache
// each: 12 bytes moved per element). Per-layer efficiency (`hpdl time`) is measured against them.
#pragma once
#include "hpdl/kernels/kernels.hpp"

namespace hpdl {

struct Ceilings {
  double gemm_flops_per_s = 0;  // FLOP/s, a multiply-add counting 2
  double memory_Bps = 0;        // bytes per second
  // The roofline: what a pass of `intensity` FLOP per byte can reach (FLOP/s).
  double attainable(double intensity) const;
};

// Spends about `seconds` on each ceiling (at least two calls each). The bandwidth test's
// arrays: twice the last-level cache, at least 64 MiB, at most 1 GiB and an eighth of the
// memory divided by `sharing` (the processes measuring at once on this machine).
Ceilings measure_ceilings(KernelFactory& k, double seconds = 0.4, int sharing = 1);

}  // namespace hpdl
