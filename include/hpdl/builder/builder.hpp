// Builds a Model from the [model] section of a config: one [[model.layers]] table per
// layer, checked strictly (unknown type or key is an error naming the layer).
#pragma once
#include <functional>
#include <memory>

#include "hpdl/config/config.hpp"
#include "hpdl/nn/model.hpp"

namespace hpdl {

// batch: the per-rank batch. The last layer must output [batch, model.classes]. local_rank:
// the rank's index on its node (Comm::node_rank), which picks its GPU on the cuda backend.
// The run's backend, precision (run.precision, "f32" | "bf16", for the dense and conv
// layers) and kernel overrides (run.kernels).
std::unique_ptr<Model> build_model(const ModelConfig& cfg, int64_t batch, const RunConfig& run,
                                   int local_rank = 0);
// The same on `backend` in f32, with what the environment sets of run.kernels (HPDL_GEMM):
// tests and the counting of parameters.
std::unique_ptr<Model> build_model(const ModelConfig& cfg, int64_t batch, Backend backend);
// The same with the backend made by `kernels` (tests: a backend on a test device).
std::unique_ptr<Model> build_model(const ModelConfig& cfg, int64_t batch,
                                   const std::function<std::unique_ptr<KernelFactory>()>& kernels);
// "" when the run's backend starts on this machine with its precision and kernel overrides,
// else why not (no CUDA device, built without CUDA or BLAS, no bf16 instructions).
std::string backend_unavailable(const RunConfig& run);

}  // namespace hpdl
