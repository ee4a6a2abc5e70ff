// A model whose step is too small to pay for splitting it over threads runs its kernels on
// one thread (Model::kOneThreadBelowFlop) where the backend splits them (oneDNN), and the
// rank's thread count is what it was after every pass; a larger step, or a backend that does
// not split its kernels, keeps all the rank's threads.
#include <gtest/gtest.h>
#include <omp.h>

#include <memory>
#include <vector>

#include "hpdl/core/rng.hpp"
#include "hpdl/nn/layers.hpp"
#include "hpdl/nn/model.hpp"
#include "kernel_env.hpp"
#include "omp_threads.hpp"
#include "onednn/primitive.hpp"

using namespace hpdl;

namespace {

std::unique_ptr<Model> mlp(const std::string& backend, int64_t batch, int64_t width) {
  std::vector<std::unique_ptr<Layer>> ls;
  ls.push_back(std::make_unique<Dense>(width, Init::kGlorotUniform));
  ls.push_back(std::make_unique<ActivationLayer>(Activation::kTanh));
  ls.push_back(std::make_unique<Dense>(10, Init::kGlorotUniform));
  for (size_t i = 0; i < ls.size(); ++i) ls[i]->set_name("l" + std::to_string(i));
  auto m = std::make_unique<Model>(std::move(ls), Shape{{batch, 784}}, test_kernels(backend));
  m->init_params(3);
  return m;
}

void step(Model& m) {
  Rng rng(4, 1);
  for (int64_t i = 0; i < m.input_shape().numel(); ++i) m.input_host()[i] = float(rng.uniform());
  m.upload_input();
  m.forward(Pass{});
  for (int64_t i = 0; i < m.output_shape().numel(); ++i) m.output_grad()[i] = 0.01f;
  m.zero_grads();
  m.backward(Pass{});
}

class KernelThreads : public ::testing::Test {
 protected:
  OmpThreads two_{2};
};

TEST_F(KernelThreads, ASmallStepRunsOnOneThreadAndLeavesTheRanksThreads) {
  auto m = mlp("onednn", 32, 64);  // the MLP preset's first layers: about 10 MFLOP a step
  EXPECT_LT(m->step_flop(), Model::kOneThreadBelowFlop);
  EXPECT_EQ(m->one_thread(),
            onednn_gemm() == "oneDNN");  // HPDL_GEMM=blas: OpenBLAS keeps its threads
  step(*m);
  EXPECT_EQ(omp_get_max_threads(), 2);
}

TEST_F(KernelThreads, ALargerStepKeepsTheRanksThreads) {
  auto m = mlp("onednn", 256, 1024);  // about 1.2 GFLOP a step
  EXPECT_GE(m->step_flop(), Model::kOneThreadBelowFlop);
  EXPECT_FALSE(m->one_thread());
  step(*m);
  EXPECT_EQ(omp_get_max_threads(), 2);
}

// The cap itself: held while a oneDNN kernel is built (oneDNN splits a primitive's work over
// the threads present at its creation) and while it runs, and undone after; none inside a
// parallel region (oneDNN runs on the calling thread there) or for 0 threads.
TEST_F(KernelThreads, TheCapHoldsWhileAKernelIsBuiltAndIsUndoneAfter) {
  {
    const onednn::ThreadCap cap(1);
    EXPECT_EQ(omp_get_max_threads(), 1);
  }
  EXPECT_EQ(omp_get_max_threads(), 2);
  {
    const onednn::ThreadCap none(0);
    EXPECT_EQ(omp_get_max_threads(), 2);
  }
  int inside = 0;
#pragma omp parallel num_threads(2)
  {
    const onednn::ThreadCap cap(1);
#pragma omp master
    inside = omp_get_max_threads();
  }
  EXPECT_EQ(inside, omp_get_max_threads());
  onednn::Engine be;
  be.kernel_threads = 1;
  EXPECT_EQ(onednn::build(be, "probe", [] { return omp_get_max_threads(); }), 1);
  EXPECT_EQ(omp_get_max_threads(), 2);
}

TEST_F(KernelThreads, TheReferenceBackendIgnoresIt) {
  auto m = mlp("reference", 32, 64);
  EXPECT_FALSE(m->one_thread());
}

}  // namespace
