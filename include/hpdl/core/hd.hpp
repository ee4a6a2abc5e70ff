// HPDL_HD marks arithmetic that runs both on the host and in CUDA kernels: __host__
// __device__ under nvcc, nothing for the host compiler. Functions marked with it are the
// GPU's per-element math, unit-tested on the host where no GPU is present.
#pragma once

#if defined(__CUDACC__)
#define HPDL_HD __host__ __device__
#else
#define HPDL_HD
#endif
