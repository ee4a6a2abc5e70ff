// Dense and convolution layers on a CBLAS sgemm (Debian's OpenBLAS, OpenMP build): a second
// GEMM path for the oneDNN backend, taken with run.kernels.gemm = "blas", for
// CPUs where oneDNN lacks optimised kernels. oneDNN 2.6 on arm64 without SVE (every
// Raspberry Pi) names its convolution "gemm:ref"; under qemu as a Cortex-A72 its matmul and
// convolution nevertheless ran as fast per FLOP as OpenBLAS's NEON kernels (and twice as
// fast as its own public dnnl_sgemm), and this path's im2col made LeNet 25 % slower, so
// oneDNN stays the default everywhere; emulation cannot time NEON code as a Pi runs it,
// so `hpdl time --set run.kernels.gemm='"blas"'` on the Pi itself decides (docs/raspberry_pi.md).
// Built wherever CMake finds OpenBLAS (HPDL_HAVE_BLAS); the parity tests run both paths. Private to
// kernels/.
#pragma once
#include <memory>

#include "hpdl/kernels/kernels.hpp"

namespace hpdl {

#ifdef HPDL_HAVE_BLAS
std::unique_ptr<DenseKernel> make_blas_dense(const DenseDims& d);
// im2col and one GEMM per chunk of images (see blas_kernels.cpp).
std::unique_ptr<ConvKernel> make_blas_conv(const ConvDims& d);
#endif

}  // namespace hpdl
