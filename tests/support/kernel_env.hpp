// Kernels for tests as a run would make them: with what the environment sets of run.kernels
// (HPDL_GEMM: tests/CMakeLists.txt runs the unit and MPI tests again under HPDL_GEMM=blas).
#pragma once
#include <memory>
#include <string>

#include "hpdl/config/kernel_choices.hpp"
#include "hpdl/kernels/kernels.hpp"

namespace hpdl {

inline KernelChoices env_kernels() { return kernel_choices_from_environment(); }
inline std::unique_ptr<KernelFactory> test_kernels(const std::string& backend) {
  return make_kernel_factory(parse_word<Backend>(backend, "backend"), 0, Precision::kF32,
                             env_kernels());
}
inline std::unique_ptr<KernelFactory> onednn_kernels(Precision p = Precision::kF32) {
  return make_onednn_kernels(p, env_kernels());
}
// "oneDNN" or, under HPDL_GEMM=blas, "OpenBLAS".
inline std::string onednn_gemm() { return gemm_library(Backend::kOneDnn, env_kernels()); }

}  // namespace hpdl
