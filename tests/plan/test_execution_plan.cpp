// The execution plan read from a bound model (plan/execution_plan.hpp): the layers inside
// branches are planned too, a plan survives its JSON, the first difference between two
// plans is named, a plan that does not parse is refused, and what an LSTM chooses is fixed
// at bind, so the plan recorded before training (manifest, checkpoint) is the one that runs.
#include <gtest/gtest.h>

#include <numeric>
#include <string>
#include <vector>

#include "hpdl/builder/builder.hpp"
#include "hpdl/config/config.hpp"
#include "hpdl/core/error.hpp"
#include "hpdl/plan/execution_plan.hpp"
#include "kernel_env.hpp"
#include "omp_threads.hpp"

using namespace hpdl;

namespace {

Config preset(const std::string& name, const std::vector<std::string>& sets = {}) {
  Config c = load_config(std::string(HPDL_SOURCE_DIR) + "/inputs/" + name + ".toml", sets);
  c.run.kernels.gemm = env_kernels().gemm;  // CTest's rerun under HPDL_GEMM=blas
  return c;
}

// One training step's forward and backward (dropout masks need the samples' ids).
void one_step(Model& m) {
  std::vector<int64_t> ids(size_t(m.batch()));
  std::iota(ids.begin(), ids.end(), 0);
  Pass pass;
  pass.training = true;
  pass.seed = 1;
  pass.sample_ids = ids.data();
  m.upload_input();
  m.forward(pass);
  m.zero_grads();
  m.backward(pass);
}

}  // namespace

TEST(ExecutionPlan, PlansTheLayersInsideBranches) {
  const Config c = preset("har_2x2");
  const auto m = build_model(c.model, 8, c.run);
  const ExecutionPlan p = plan_of(*m, c.run);
  int lstms = 0;
  for (const PlannedOperation& op : p.operations)
    if (op.kind == "lstm") {
      ++lstms;
      EXPECT_EQ(op.layer.rfind("res", 0), 0u) << op.layer;  // "res1.g0.bi.fw.lstm"
    }
  EXPECT_EQ(lstms, 8);  // 2 residual layers x 2 groups x 2 directions
}

TEST(ExecutionPlan, SurvivesItsJsonAndNamesTheFirstDifference) {
  const Config c = preset("lenet_fashion_mnist");
  const Config plain = preset("lenet_fashion_mnist", {"run.kernels.activations=\"plain\""});
  const ExecutionPlan a = plan_of(*build_model(c.model, 8, c.run), c.run);
  const ExecutionPlan b = plan_of(*build_model(plain.model, 8, plain.run), plain.run);
  EXPECT_EQ(ExecutionPlan::parse(a.serialise()).first_difference(a), "");
  const std::string diff = a.first_difference(b);
  EXPECT_EQ(diff.rfind("run.kernels: it has ", 0), 0u) << diff;
  EXPECT_NE(diff.find("this run " + b.overrides), std::string::npos) << diff;
  EXPECT_NE(b.overrides.find("activations = \"plain\""), std::string::npos) << b.overrides;
  ExecutionPlan same_overrides = b;
  same_overrides.overrides = a.overrides;
  // What the override changed: plain activations keep no layer's output in its own layout,
  // so conv1's kernel differs where it kept one (oneDNN's NHWC on x86-64; not under
  // HPDL_GEMM=blas or where conv1 chose the plain layout anyway, e.g. on arm64).
  const PlannedOperation& conv1 = a.operations.front();
  ASSERT_EQ(conv1.layer, "conv1");
  if (conv1.kernel.find("kept in that layout") != std::string::npos)
    EXPECT_EQ(a.first_difference(same_overrides).rfind("conv1: it has ", 0), 0u)
        << a.first_difference(same_overrides);
  else
    EXPECT_EQ(a.first_difference(same_overrides), "") << conv1.kernel;
  ExecutionPlan other_kernel = a;  // an operation's kernel differs: named, both sides
  other_kernel.operations.front().kernel = "another";
  const std::string op_diff = a.first_difference(other_kernel);
  EXPECT_EQ(op_diff.rfind(a.operations.front().layer + ": it has ", 0), 0u) << op_diff;
  EXPECT_NE(op_diff.find("this run another"), std::string::npos) << op_diff;
}

// A reason changes no sum; a plan written before plans had a format (a checkpoint of an
// older hpdl, whose words for the same kernels differ) is read, and not compared.
TEST(ExecutionPlan, ComparesKernelsNotReasonsNorOlderFormats) {
  const Config c = preset("lenet_fashion_mnist");
  const ExecutionPlan a = plan_of(*build_model(c.model, 8, c.run), c.run);
  ExecutionPlan reworded = a;
  for (PlannedOperation& op : reworded.operations) op.reason += " (reworded)";
  EXPECT_EQ(a.first_difference(reworded), "");
  EXPECT_EQ(ExecutionPlan::parse(a.serialise()).format, ExecutionPlan::kFormat);
  const ExecutionPlan old = ExecutionPlan::parse(
      R"({"backend": "onednn", "gemm": "oneDNN", "precision": "f32", "overrides": "",)"
      R"( "one_thread": false, "operations": [{"layer": "pool1", "kind": "maxpool",)"
      R"( "kernel": "reads nhwc, writes nhwc"}]})");
  EXPECT_EQ(old.format, 1);
  EXPECT_EQ(old.operations.at(0).reason, "");
  EXPECT_EQ(old.first_difference(a), "");
  EXPECT_EQ(a.first_difference(old), "");
}

TEST(ExecutionPlan, RefusesAPlanThatDoesNotParse) {
  try {
    ExecutionPlan::parse("{\"backend\": 3");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("its execution plan does not parse"), std::string::npos)
        << e.what();
  }
}

// On one thread HAR's baseline LSTM takes its gradients a step at a time; that choice was
// once made at the first backward pass, so a plan read before training said otherwise.
TEST(ExecutionPlan, TheLstmChoosesAtBindWhatItsBackwardRuns) {
  for (const int threads : {1, 2}) {
    OmpThreads scope(threads);
    const Config c = preset("har_baseline");
    const auto m = build_model(c.model, 8, c.run);
    const ExecutionPlan before = plan_of(*m, c.run);
    one_step(*m);
    EXPECT_EQ(before.first_difference(plan_of(*m, c.run)), "") << threads << " thread(s)";
  }
}

TEST(ExecutionPlan, RecordsViewsLayoutsAndWhoWritesItsGradients) {
  const Config c = preset("lenet_fashion_mnist");
  const ExecutionPlan p = plan_of(*build_model(c.model, 8, c.run), c.run);
  const auto op = [&](const std::string& layer) {
    for (const PlannedOperation& o : p.operations)
      if (o.layer == layer) return o;
    ADD_FAILURE() << "no operation " << layer;
    return PlannedOperation{};
  };
  // The planner's fusions: both ReLUs before a pool and the one after dense1 are views.
  for (const char* view : {"relu1", "relu2", "flatten1", "relu3"})
    EXPECT_EQ(op(view).output, "view") << view;
  EXPECT_EQ(op("dense2").output, "plain");  // the model's output stays plain
  // conv1's output is kept in its layout exactly where its kernel says so.
  const bool kept = op("conv1").kernel.find("output kept") != std::string::npos;
  EXPECT_EQ(op("conv1").output != "plain", kept) << op("conv1").output;
  EXPECT_EQ(op("pool1").gradients, "");
  EXPECT_NE(op("conv1").gradients, "");
  EXPECT_NE(p.table().find("views (no storage, no work): relu1, relu2, flatten1, relu3\n"),
            std::string::npos)
      << p.table();
  const ExecutionPlan back = ExecutionPlan::parse(p.serialise());
  EXPECT_EQ(back.operations, p.operations);
}
