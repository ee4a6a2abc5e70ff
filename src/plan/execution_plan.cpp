// The execution plan read from a bound model (execution_plan.hpp).
#include "hpdl/plan/execution_plan.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "hpdl/config/kernel_choices.hpp"
#include "hpdl/core/error.hpp"
#include "hpdl/nn/branches.hpp"

namespace hpdl {

// A key that is absent takes the default: "format" and "reason" came with format 2.
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(PlannedOperation, layer, kind, kernel, reason,
                                                output, gradients)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE_WITH_DEFAULT(ExecutionPlan, format, backend, gemm, precision,
                                                overrides, one_thread, operations)

namespace {

// Layer i of chain c's operation, then those of the layers inside its branches (named
// "<layer>.<branch>.<inner layer>"): an LSTM of a residual group chooses too.
void add_operations(const Chain& c, size_t i, const std::string& name,
                    std::vector<PlannedOperation>& ops) {
  const Layer& l = c.layer(i);
  const KernelChoice choice = l.kernel_choice();
  const Shape& out = c.activation_shape(i + 1);
  const int64_t block = c.activation_block(i + 1);
  const std::string output = l.plan().is_view() ? "view"
                             : block == 1       ? "plain"
                                                : block_name(block, out[1]);
  const std::string gradients = c.spec_count(i) == 0            ? ""
                                : l.plan().writes_param_grads() ? "written"
                                                                : "added";
  ops.push_back({name, l.kind(), choice.kernel, choice.reason, output, gradients});
  if (const auto* b = dynamic_cast<const Branches*>(&l))
    for (const auto& [branch, chain] : b->branches())
      for (size_t k = 0; k < chain.size(); ++k)
        add_operations(chain, k, name + "." + branch + "." + chain.layer(k).name(), ops);
}

// "a, b, c" of the operations whose `field` is `value`.
std::string names_where(const std::vector<PlannedOperation>& ops,
                        std::string PlannedOperation::*field, const std::string& value) {
  std::string names;
  for (const PlannedOperation& op : ops)
    if (op.*field == value) names += (names.empty() ? "" : ", ") + op.layer;
  return names;
}

}  // namespace

ExecutionPlan plan_of(const Model& model, const RunConfig& run) {
  ExecutionPlan p;
  p.backend = model.kernels_name();
  p.gemm = gemm_library(run.backend, run.kernels);
  p.precision = word(run.precision);
  p.overrides = kernel_choices_text(run.kernels);
  p.one_thread = model.one_thread();
  for (size_t i = 0; i < model.num_layers(); ++i)
    add_operations(model.chain(), i, model.layer(i).name(), p.operations);
  return p;
}

std::string ExecutionPlan::first_difference(const ExecutionPlan& o) const {
  const auto differs = [](const std::string& what, const std::string& mine,
                          const std::string& theirs) {
    return what + ": it has " + (mine.empty() ? "none" : mine) + ", this run " +
           (theirs.empty() ? "none" : theirs);
  };
  if (format != o.format) return "";
  if (backend != o.backend) return differs("backend", backend, o.backend);
  if (gemm != o.gemm) return differs("GEMM", gemm, o.gemm);
  if (precision != o.precision) return differs("precision", precision, o.precision);
  if (overrides != o.overrides) return differs("run.kernels", overrides, o.overrides);
  if (one_thread != o.one_thread)
    return differs("threads", one_thread ? "one" : "all", o.one_thread ? "one" : "all");
  if (operations.size() != o.operations.size())
    return differs("operations", std::to_string(operations.size()),
                   std::to_string(o.operations.size()));
  for (size_t i = 0; i < operations.size(); ++i) {
    const PlannedOperation &a = operations[i], &b = o.operations[i];
    if (a.layer != b.layer || a.kind != b.kind)
      return differs("operation " + std::to_string(i + 1), a.layer + " (" + a.kind + ")",
                     b.layer + " (" + b.kind + ")");
    if (a.kernel != b.kernel) return differs(a.layer, a.kernel, b.kernel);
  }
  return "";
}

std::string ExecutionPlan::table() const {
  std::string t = "plan: backend " + backend + ", GEMM " + gemm + ", " + precision +
                  (overrides.empty() ? "" : ", run.kernels: " + overrides) +
                  (one_thread ? ", kernels on one thread" : "") + "\n";
  // One row an operation that chose among ways to compute (the rest have one), in the form
  // `hpdl time` has always printed: "conv1            chose nhwc (...)".
  for (const PlannedOperation& op : operations)
    if (!op.kernel.empty()) {
      std::string name = op.layer;
      name.resize(std::max<size_t>(name.size(), 16), ' ');
      t += name + " chose " + op.kernel + "\n";
      if (!op.reason.empty()) t += std::string(name.size(), ' ') + " because " + op.reason + "\n";
    }
  // Then what the planner chose across layers (outputs in a kernel's own layout, views) and
  // which layers write their gradients rather than add to zeroed ones.
  std::string kept;
  for (const PlannedOperation& op : operations)
    if (!op.output.empty() && op.output != "plain" && op.output != "view")
      kept += (kept.empty() ? "" : ", ") + op.layer + " " + op.output;
  if (!kept.empty()) t += "outputs kept in a kernel's layout: " + kept + "\n";
  const std::string views = names_where(operations, &PlannedOperation::output, "view");
  if (!views.empty()) t += "views (no storage, no work): " + views + "\n";
  const std::string written = names_where(operations, &PlannedOperation::gradients, "written");
  if (!written.empty()) t += "parameter gradients written, not zeroed and added: " + written + "\n";
  return t;
}

std::string ExecutionPlan::serialise() const { return nlohmann::json(*this).dump(); }

ExecutionPlan ExecutionPlan::parse(const std::string& text) {
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    ExecutionPlan p = j.get<ExecutionPlan>();
    if (!j.contains("format")) p.format = 1;  // written before the plan had a format
    return p;
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("its execution plan does not parse (") + e.what() + ")");
  }
}

}  // namespace hpdl
