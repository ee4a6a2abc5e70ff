// The CUDA backend's vector operations (see hpdl/kernels/vector_ops.hpp), enqueued on the
// device's stream. Private to the CUDA backend.
#pragma once
#include <memory>

#include "cuda_device.hpp"
#include "hpdl/kernels/vector_ops.hpp"

namespace hpdl::cuda {

std::unique_ptr<VectorOps> make_vector_ops(CudaDevice& device);

}  // namespace hpdl::cuda
