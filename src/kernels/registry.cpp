// The one place that maps a backend name (and run.precision) to its kernels. The CUDA
// backend is compiled in when CMake's HPDL_CUDA found nvcc and cuBLAS (HPDL_HAVE_CUDA, set
// on this file only); layers never test which backend they run on.
#include "hpdl/core/error.hpp"
#include "hpdl/kernels/kernels.hpp"

namespace hpdl {

bool cuda_backend_built() {
#ifdef HPDL_HAVE_CUDA
  return true;
#else
  return false;
#endif
}

std::string gemm_library(Backend backend, const KernelChoices& choices) {
  if (backend == Backend::kOneDnn) return choices.gemm == GemmChoice::kBlas ? "OpenBLAS" : "oneDNN";
  if (backend == Backend::kCuda) return "cuBLAS";
  return "loops";
}

void DenseKernel::backward_writing(const float*, const float*, const float*, float*, float*,
                                   float*) {
  throw Error("a dense kernel that adds to its gradients was asked to write them (a bug)");
}

std::string block_name(int64_t block, int64_t channels) {
  if (block == 1) return "nchw";
  if (block == channels) return "nhwc";
  return "blocks of " + std::to_string(block);
}

std::unique_ptr<KernelFactory> make_kernel_factory(Backend backend, int local_rank,
                                                   Precision precision,
                                                   const KernelChoices& choices) {
  if (backend == Backend::kOneDnn) return make_onednn_kernels(precision, choices);
  if (precision != Precision::kF32)
    throw Error("run.precision = \"" + std::string(word(precision)) +
                "\" needs run.backend = \"onednn\" (the " + word(backend) +
                " backend computes in f32)");
  if (backend == Backend::kReference) return make_reference_kernels();
#ifdef HPDL_HAVE_CUDA
  return make_cuda_kernels(local_rank, choices);
#else
  (void)local_rank;
  throw Error(
      "run.backend = \"cuda\": this hpdl was built without the CUDA backend "
      "(configure with -DHPDL_CUDA=ON on a machine with nvcc and cuBLAS)");
#endif
}

}  // namespace hpdl
