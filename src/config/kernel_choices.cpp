// run.kernels (kernel_choices.hpp): each key a typed choice, "auto" for the rules.
#include "hpdl/config/kernel_choices.hpp"

#include <utility>
#include <vector>

#include "hpdl/config/table_reader.hpp"
#include "hpdl/core/environment.hpp"
#include "hpdl/core/error.hpp"
#include "read_kernel_choices.hpp"

namespace hpdl {
namespace {

template <typename E>
using Names = std::vector<std::pair<std::string, E>>;

const Names<GemmChoice> kGemm = {
    {"auto", GemmChoice::kAuto}, {"onednn", GemmChoice::kOneDnn}, {"blas", GemmChoice::kBlas}};
const Names<ConvLayoutChoice> kConvLayout = {{"auto", ConvLayoutChoice::kAuto},
                                             {"blocked", ConvLayoutChoice::kBlocked},
                                             {"nhwc", ConvLayoutChoice::kNhwc}};
const Names<ConvIsaChoice> kConvIsa = {{"auto", ConvIsaChoice::kAuto},
                                       {"avx2", ConvIsaChoice::kAvx2},
                                       {"native", ConvIsaChoice::kNative}};
const Names<PoolChoice> kPool = {{"auto", PoolChoice::kAuto}, {"onednn", PoolChoice::kOneDnn}};
const Names<bool> kActivations = {{"auto", false}, {"plain", true}};

template <typename E>
std::vector<std::string> keys(const Names<E>& names) {
  std::vector<std::string> k;
  for (const auto& [name, value] : names) k.push_back(name);
  return k;
}

template <typename E>
E value_of(const Names<E>& names, const std::string& name) {
  for (const auto& [n, value] : names)
    if (n == name) return value;
  throw Error("unknown kernel choice '" + name + "' (a bug)");
}

template <typename E>
std::string name_of(const Names<E>& names, E value) {
  for (const auto& [name, v] : names)
    if (v == value) return name;
  return "?";
}

// HPDL_GEMM's value as a choice: unset or "" is auto.
GemmChoice gemm_from_environment() {
  const auto env = environment_variable("HPDL_GEMM");
  if (!env || env->empty()) return GemmChoice::kAuto;
  for (const auto& [name, value] : kGemm)
    if (name == *env) return value;
  throw Error("HPDL_GEMM = \"" + *env + "\" is not one of: auto, onednn, blas");
}

}  // namespace

KernelChoices read_kernel_choices(const toml::table* table, const std::string& where,
                                  const std::string& backend) {
  KernelChoices c = kernel_choices_from_environment();
  TableReader r(table, where);
  const auto read = [&](const std::string& key, const auto& names, auto current,
                        const char* applies_to) {
    const std::string name = r.get_string(key, name_of(names, current), keys(names));
    const auto value = value_of(names, name);
    if (table && table->contains(key) && value != names.front().second && backend != applies_to)
      throw Error(where + "." + key + " = \"" + name + "\" applies to run.backend = \"" +
                  applies_to + "\" only (this run's is \"" + backend + "\")");
    return value;
  };
  c.gemm = read("gemm", kGemm, c.gemm, "onednn");
  c.conv_layout = read("conv_layout", kConvLayout, c.conv_layout, "onednn");
  c.conv_isa = read("conv_isa", kConvIsa, c.conv_isa, "onednn");
  c.plain_activations = read("activations", kActivations, c.plain_activations, "onednn");
  c.pool = read("pool", kPool, c.pool, "onednn");
  const auto read_bool = [&](const std::string& key, bool current, const char* applies_to) {
    const bool value = r.get_bool(key, current);
    if (table && table->contains(key) && value != current && backend != applies_to)
      throw Error(where + "." + key + " = " + (value ? "true" : "false") +
                  " applies to run.backend = \"" + applies_to + "\" only (this run's is \"" +
                  backend + "\")");
    return value;
  };
  c.cuda_graphs = read_bool("cuda_graphs", c.cuda_graphs, "cuda");
  c.cuda_lstm_sequence = read_bool("cuda_lstm_sequence", c.cuda_lstm_sequence, "cuda");
  r.finish();
  return c;
}

KernelChoices kernel_choices_from_environment() {
  KernelChoices c;
  c.gemm = gemm_from_environment();
  return c;
}

std::string kernel_choices_text(const KernelChoices& c) {
  const KernelChoices a;
  std::string s;
  const auto add = [&](const char* key, const std::string& value, bool differs) {
    if (differs) s += (s.empty() ? "" : ", ") + std::string(key) + " = \"" + value + "\"";
  };
  add("gemm", name_of(kGemm, c.gemm), c.gemm != a.gemm);
  add("conv_layout", name_of(kConvLayout, c.conv_layout), c.conv_layout != a.conv_layout);
  add("conv_isa", name_of(kConvIsa, c.conv_isa), c.conv_isa != a.conv_isa);
  add("activations", name_of(kActivations, c.plain_activations),
      c.plain_activations != a.plain_activations);
  add("pool", name_of(kPool, c.pool), c.pool != a.pool);
  // The two switches are booleans: false is the only value that differs.
  if (!c.cuda_graphs) s += std::string(s.empty() ? "" : ", ") + "cuda_graphs = false";
  if (!c.cuda_lstm_sequence) s += std::string(s.empty() ? "" : ", ") + "cuda_lstm_sequence = false";
  return s;
}

}  // namespace hpdl
