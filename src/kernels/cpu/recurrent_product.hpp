// The oneDNN backend's LSTM per-step products (kernels.hpp's RecurrentProductKernel) as
// panel products (panel_gemm.hpp); the default, on the dense kernel, is
// KernelFactory::recurrent_product. Both in recurrent_product.cpp. Private to kernels/.
#pragma once
#include <memory>

#include "hpdl/kernels/kernels.hpp"

namespace hpdl {

// wh laid out by use_weights; on `threads` OpenMP threads (0: all the rank's) where a product
// is large enough to share.
std::unique_ptr<RecurrentProductKernel> make_panel_recurrent_product(const RecurrentDims& d,
                                                                     int threads);

}  // namespace hpdl
