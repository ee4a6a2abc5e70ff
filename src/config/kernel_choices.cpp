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

// run.kernels.activations: "plain" forces every activation plain; "auto" lets the plan keep
// a convolution's layout between layers.
const char* activations_word(bool plain) { return plain ? "plain" : "auto"; }

// HPDL_GEMM's value as a choice: unset or "" is auto.
GemmChoice gemm_from_environment() {
  const auto env = environment_variable("HPDL_GEMM");
  if (!env || env->empty()) return GemmChoice::kAuto;
  return parse_word<GemmChoice>(*env, "HPDL_GEMM");
}

}  // namespace

KernelChoices read_kernel_choices(const toml::table* table, const std::string& where,
                                  Backend backend) {
  KernelChoices c = kernel_choices_from_environment();
  TableReader r(table, where);
  // A key set to anything but auto on a backend it does not apply to is refused.
  const auto applies = [&](const std::string& key, const std::string& value, bool is_auto,
                           Backend to) {
    if (table && table->contains(key) && !is_auto && backend != to)
      throw Error(where + "." + key + " = " + value + " applies to run.backend = \"" + word(to) +
                  "\" only (this run's is \"" + word(backend) + "\")");
  };
  const auto read = [&](const std::string& key, auto current) {
    const auto value = r.get_choice(key, current);
    std::string shown = "\"";  // built by appending: GCC 12 warns (-Wrestrict) on "\"" + string
    shown.append(word(value)).append("\"");
    applies(key, shown, value == decltype(value)::kAuto, Backend::kOneDnn);
    return value;
  };
  c.gemm = read("gemm", c.gemm);
  c.conv_layout = read("conv_layout", c.conv_layout);
  c.conv_isa = read("conv_isa", c.conv_isa);
  c.plain_activations = r.get_string("activations", activations_word(c.plain_activations),
                                     {"auto", "plain"}) == "plain";
  applies("activations", "\"plain\"", !c.plain_activations, Backend::kOneDnn);
  c.pool = read("pool", c.pool);
  const auto read_bool = [&](const std::string& key, bool current) {
    const bool value = r.get_bool(key, current);
    applies(key, value ? "true" : "false", value == current, Backend::kCuda);
    return value;
  };
  c.cuda_graphs = read_bool("cuda_graphs", c.cuda_graphs);
  c.cuda_lstm_sequence = read_bool("cuda_lstm_sequence", c.cuda_lstm_sequence);
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
  add("gemm", word(c.gemm), c.gemm != a.gemm);
  add("conv_layout", word(c.conv_layout), c.conv_layout != a.conv_layout);
  add("conv_isa", word(c.conv_isa), c.conv_isa != a.conv_isa);
  add("activations", activations_word(c.plain_activations),
      c.plain_activations != a.plain_activations);
  add("pool", word(c.pool), c.pool != a.pool);
  // The two switches are booleans: false is the only value that differs.
  if (!c.cuda_graphs) s += std::string(s.empty() ? "" : ", ") + "cuda_graphs = false";
  if (!c.cuda_lstm_sequence) s += std::string(s.empty() ? "" : ", ") + "cuda_lstm_sequence = false";
  return s;
}

}  // namespace hpdl
