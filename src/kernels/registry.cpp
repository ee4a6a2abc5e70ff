// The one place that maps a backend name to its kernels. A CUDA backend registers here
// (behind the CMake option) when it exists; layers never test which backend they run on.
#include "hpdl/core/error.hpp"
#include "hpdl/kernels/kernels.hpp"

namespace hpdl {

std::unique_ptr<KernelFactory> make_kernel_factory(const std::string& backend) {
  if (backend == "onednn") return make_onednn_kernels();
  if (backend == "reference") return make_reference_kernels();
  throw Error("unknown backend '" + backend + "' (known: onednn, reference)");
}

}  // namespace hpdl
