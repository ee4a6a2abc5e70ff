// run.kernels: the kernel overrides of a run (settings.hpp, KernelChoices), as the
// environment's one alias sets them (HPDL_GEMM for run.kernels.gemm), and their names for
// messages and plans. Plain like settings.hpp: the config reader is config.hpp's
// (src/config/kernel_choices.cpp reads the table).
#pragma once
#include <string>

#include "hpdl/config/settings.hpp"

namespace hpdl {

// What the environment alone sets (HPDL_GEMM), for kernels made without a config (tests,
// benchmarks, the calibration); throws Error naming a bad value.
KernelChoices kernel_choices_from_environment();
// "gemm = \"blas\", conv_layout = \"nhwc\"": the keys that differ from auto; "" when none.
std::string kernel_choices_text(const KernelChoices& c);

}  // namespace hpdl
