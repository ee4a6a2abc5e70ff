// Checks for every CUDA runtime and cuBLAS call: a failure throws hpdl::Error naming the
// called function, the library's own error text and a hint. Private to the CUDA backend
// (src/kernels/cuda/).
#pragma once
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <string>

#include "hpdl/core/error.hpp"

namespace hpdl::cuda {

inline void check(cudaError_t rc, const char* call) {
  if (rc == cudaSuccess) return;
  fail_call(call_name(call),
            std::string(cudaGetErrorName(rc)) + ": " + cudaGetErrorString(rc) +
                " (hint: nvidia-smi shows the GPU and driver; a kernel's own failure surfaces at "
                "the next synchronising call)");
}

inline void check(cublasStatus_t rc, const char* call) {
  if (rc == CUBLAS_STATUS_SUCCESS) return;
  fail_call(call_name(call),
            std::string("cuBLAS ") + cublasGetStatusName(rc) + ": " + cublasGetStatusString(rc));
}

}  // namespace hpdl::cuda

#define HPDL_CUDA_CHECK(call) ::hpdl::cuda::check((call), #call)
// After a kernel launch: a bad launch configuration is reported here, at the launch.
#define HPDL_CUDA_LAUNCHED() HPDL_CUDA_CHECK(cudaGetLastError())
