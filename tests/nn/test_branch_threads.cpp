// Branches on a CPU backend run their chains at once, one OpenMP thread each, and join them
// in branch order: the same HAR-like model (3 groups summed, each a bidirectional pair of
// LSTMs concatenated) built and run on 2 threads gives exactly what it gives on 1, forward
// and backward, on both CPU backends; an error thrown inside a branch reaches the caller;
// LSTMs that write their rows straight into the concatenation give what copied rows give.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "hpdl/core/error.hpp"
#include "hpdl/core/rng.hpp"
#include "hpdl/nn/branches.hpp"
#include "hpdl/nn/layers.hpp"
#include "hpdl/nn/model.hpp"
#include "hpdl/nn/recurrent.hpp"
#include "kernel_env.hpp"
#include "omp_threads.hpp"

using namespace hpdl;

namespace {

Chain one_layer(std::unique_ptr<Layer> l, const std::string& name) {
  l->set_name(name);
  std::vector<std::unique_ptr<Layer>> v;
  v.push_back(std::move(l));
  return Chain(std::move(v));
}

// y = x: a last layer that cannot write into a concatenation's rows (its branch is copied).
class Copy final : public Layer {
 public:
  std::string kind() const override { return "copy"; }
  LayerWork work(bool) const override { return {}; }
  Shape setup(const Shape& in) override { return n_ = in.numel(), in; }
  void bind(std::vector<std::span<float>>, std::vector<std::span<float>>, KernelFactory&) override {
  }
  void forward(const float* x, float* y, const Pass&) override { std::copy(x, x + n_, y); }
  void backward(const float*, const float*, const float* dy, float* dx, const Pass&) override {
    if (dx) std::copy(dy, dy + n_, dx);
  }

 private:
  int64_t n_ = 0;
};

// An LSTM branch of a bidirectional pair; with `copied`, a Copy after it.
Chain direction(bool reverse, bool copied) {
  std::vector<std::unique_ptr<Layer>> v;
  v.push_back(std::make_unique<Lstm>(4, 1.0f, reverse));
  v.back()->set_name("cell");
  if (copied) v.push_back(std::make_unique<Copy>()), v.back()->set_name("copy");
  return Chain(std::move(v));
}

// groups x (forward LSTM | reversed LSTM), summed; then last step and a dense layer.
std::unique_ptr<Model> har_like(const std::string& backend, int groups, bool copied = false) {
  std::vector<std::pair<std::string, Chain>> sum;
  for (int g = 0; g < groups; ++g) {
    std::vector<std::pair<std::string, Chain>> dirs;
    dirs.emplace_back("fw", direction(false, copied));
    dirs.emplace_back("bw", direction(true, copied));
    sum.emplace_back(
        "g" + std::to_string(g),
        one_layer(std::make_unique<Branches>(std::move(dirs), Branches::Combine::kConcat), "bi"));
  }
  std::vector<std::unique_ptr<Layer>> ls;
  ls.push_back(std::make_unique<Branches>(std::move(sum), Branches::Combine::kSum));
  ls.push_back(std::make_unique<LastStep>());
  ls.push_back(std::make_unique<Dense>(3, Init::kGlorotUniform));
  for (size_t i = 0; i < ls.size(); ++i) ls[i]->set_name("l" + std::to_string(i));
  auto m = std::make_unique<Model>(std::move(ls), Shape{{8, 6, 5}}, test_kernels(backend));
  m->init_params(5);
  return m;
}

struct Result {
  std::vector<float> out, grads;
};

Result run_on(const std::string& backend, int threads, bool copied = false) {
  OmpThreads scope(threads);
  auto m = har_like(backend, 3, copied);
  Rng rng(9, 1);
  for (int64_t i = 0; i < m->input_shape().numel(); ++i)
    m->input_host()[i] = float(rng.uniform()) - 0.5f;
  m->upload_input();
  m->forward(Pass{});
  Result r;
  r.out.assign(m->output(), m->output() + m->output_shape().numel());
  for (int64_t i = 0; i < m->output_shape().numel(); ++i)
    m->output_grad()[i] = float(rng.uniform()) - 0.5f;
  m->zero_grads();
  m->backward(Pass{});
  r.grads.assign(m->grads().begin(), m->grads().end());
  return r;
}

TEST(BranchThreads, TwoThreadsEqualOneBitForBit) {
  for (const std::string backend : {"reference", "onednn"}) {
    const Result one = run_on(backend, 1), two = run_on(backend, 2);
    ASSERT_EQ(one.out.size(), two.out.size());
    for (size_t i = 0; i < one.out.size(); ++i) ASSERT_EQ(one.out[i], two.out[i]) << backend << i;
    ASSERT_EQ(one.grads.size(), two.grads.size());
    for (size_t i = 0; i < one.grads.size(); ++i)
      ASSERT_EQ(one.grads[i], two.grads[i]) << backend << " gradient " << i;
  }
}

// Each LSTM writes its rows into the pair's joined output and reads its slice of the output
// gradient there (no copies: the pair's join moves no bytes); the same model with a copy
// after each LSTM, which makes the pair copy rows, gives the same numbers bit for bit.
TEST(BranchThreads, LstmsWrittenIntoTheConcatenationEqualCopiedRows) {
  for (const std::string backend : {"reference", "onednn"}) {
    const Result in_place = run_on(backend, 2), copied = run_on(backend, 2, true);
    EXPECT_EQ(in_place.out, copied.out) << backend;
    EXPECT_EQ(in_place.grads, copied.grads) << backend;
    const auto pair_bytes = [&](bool with_copy) {
      const auto m = har_like(backend, 1, with_copy);
      const auto& sum = m->layer(0);
      return sum.work(true).forward.bytes;
    };
    EXPECT_LT(pair_bytes(false), pair_bytes(true)) << backend;
  }
}

// A layer that throws in forward, to see an error leave the branches' threads.
class Throws final : public Layer {
 public:
  std::string kind() const override { return "throws"; }
  LayerWork work(bool) const override { return {}; }
  Shape setup(const Shape& in) override { return in; }
  void bind(std::vector<std::span<float>>, std::vector<std::span<float>>, KernelFactory&) override {
  }
  void forward(const float*, float*, const Pass&) override { throw Error("branch failed"); }
  void backward(const float*, const float*, const float*, float*, const Pass&) override {}
};

// A pair (concatenated) of a dense layer and, with `throwing`, a Throws, else another dense.
std::unique_ptr<Layer> pair(bool throwing) {
  std::vector<std::pair<std::string, Chain>> two;
  two.emplace_back("a", one_layer(std::make_unique<Dense>(2, Init::kGlorotUniform), "d"));
  if (throwing)
    two.emplace_back("b", one_layer(std::make_unique<Throws>(), "t"));
  else
    two.emplace_back("b", one_layer(std::make_unique<Dense>(2, Init::kGlorotUniform), "e"));
  return std::make_unique<Branches>(std::move(two), Branches::Combine::kConcat);
}

// A model of that one layer, run forward on 2 threads: the branch's Error reaches the caller.
void expect_error_on_two_threads(std::unique_ptr<Layer> layer) {
  OmpThreads scope(2);
  layer->set_name("top");
  std::vector<std::unique_ptr<Layer>> ls;
  ls.push_back(std::move(layer));
  Model m(std::move(ls), Shape{{2, 2}}, test_kernels("onednn"));
  m.init_params(1);
  EXPECT_THROW(m.forward(Pass{}), Error);
}

TEST(BranchThreads, AnErrorInABranchReachesTheCaller) { expect_error_on_two_threads(pair(true)); }

// The same from a branch of a branch (three groups of pairs: the pairs' halves run as tasks).
TEST(BranchThreads, AnErrorInANestedBranchReachesTheCaller) {
  std::vector<std::pair<std::string, Chain>> groups;
  for (int g = 0; g < 3; ++g)
    groups.emplace_back("g" + std::to_string(g), one_layer(pair(g == 2), "pair"));
  expect_error_on_two_threads(
      std::make_unique<Branches>(std::move(groups), Branches::Combine::kSum));
}

}  // namespace
