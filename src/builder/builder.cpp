// Config -> layers. Each layer type reads its own keys through a TableReader, so
// `[[model.layers]] type = "dense" unit = 10` fails with "unknown key 'unit'". Any entry
// may say `repeat = n`. `residual_lstm` expands into the HAR thesis's residual layer:
// K (bi)directional cell groups on the same input, summed, then normalised.
#include "hpdl/builder/builder.hpp"

#include <functional>
#include <map>

#include "hpdl/config/kernel_choices.hpp"
#include "hpdl/config/table_reader.hpp"
#include "hpdl/core/error.hpp"
#include "hpdl/nn/batch_norm.hpp"
#include "hpdl/nn/branches.hpp"
#include "hpdl/nn/layers.hpp"
#include "hpdl/nn/recurrent.hpp"
#include "hpdl/plan/planner.hpp"

namespace hpdl {
namespace {

// A cell group: per-step ReLU projection to `hidden`, then an LSTM of `hidden` units.
Chain cell_group(int64_t hidden, float forget_bias, bool reverse) {
  std::vector<std::unique_ptr<Layer>> ls;
  ls.push_back(std::make_unique<Dense>(hidden, Init::kHeUniform, true));
  ls.push_back(std::make_unique<ActivationLayer>(Activation::kRelu));
  ls.push_back(std::make_unique<Lstm>(hidden, forget_bias, reverse));
  ls[0]->set_name("proj"), ls[1]->set_name("relu"), ls[2]->set_name("lstm");
  return Chain(std::move(ls));
}

// One residual layer: K groups summed (the highway), then normalised. Bidirectional
// groups are two cell groups of hidden/2 units, one reading the sequence backwards, with
// their outputs concatenated per step.
std::vector<std::unique_ptr<Layer>> residual_lstm(const std::string& name, int64_t groups,
                                                  int64_t hidden, bool bidirectional,
                                                  float forget_bias) {
  auto bidirectional_group = [&] {
    std::vector<std::pair<std::string, Chain>> dirs;
    dirs.emplace_back("fw", cell_group(hidden / 2, forget_bias, false));
    dirs.emplace_back("bw", cell_group(hidden / 2, forget_bias, true));
    std::vector<std::unique_ptr<Layer>> ls;
    ls.push_back(std::make_unique<Branches>(std::move(dirs), Branches::Combine::kConcat));
    ls[0]->set_name("bi");
    return Chain(std::move(ls));
  };
  std::vector<std::pair<std::string, Chain>> sum;
  for (int64_t k = 0; k < groups; ++k) {
    sum.emplace_back(
        std::string("g").append(std::to_string(k)),
        bidirectional ? bidirectional_group() : cell_group(hidden, forget_bias, false));
  }
  std::vector<std::unique_ptr<Layer>> out;
  out.push_back(std::make_unique<Branches>(std::move(sum), Branches::Combine::kSum));
  out.back()->set_name(name);
  out.push_back(std::make_unique<ScalarNorm>());
  out.back()->set_name(name + "_norm");
  return out;
}

using Layers = std::vector<std::unique_ptr<Layer>>;

template <typename L, typename... Args>
Layers one(Args&&... args) {
  Layers ls;
  ls.push_back(std::make_unique<L>(std::forward<Args>(args)...));
  return ls;
}

// Every layer type, registered once: its config name, the short name its layers are
// numbered by ("conv1", "pool2"), and how its keys become layers. A layer type on the
// existing operations is one entry here beside its own files and test.
struct LayerKind {
  const char* type;
  const char* short_name;
  Layers (*make)(TableReader& r, const std::string& name, const std::string& where);
};

const std::vector<LayerKind>& layer_kinds() {
  static const std::vector<LayerKind> kinds = {
      {"dense", "dense",
       [](TableReader& r, const std::string&, const std::string&) {
         const int64_t units = r.get_int("units", std::nullopt, 1, 1 << 26);
         const std::string init = r.get_string("init", "glorot", {"glorot", "he"});
         const bool per_step = r.get_bool("per_step", false);
         return one<Dense>(units, init == "he" ? Init::kHeUniform : Init::kGlorotUniform, per_step);
       }},
      {"conv2d", "conv",
       [](TableReader& r, const std::string&, const std::string&) {
         const int64_t filters = r.get_int("filters", std::nullopt, 1, 1 << 20);
         const int64_t kernel = r.get_int("kernel", std::nullopt, 1, 1024);
         const int64_t stride = r.get_int("stride", 1, 1, 1024);
         const int64_t pad = r.get_int("pad", 0, 0, 1024);
         return one<Conv2d>(filters, kernel, stride, pad);
       }},
      {"maxpool", "pool",
       [](TableReader& r, const std::string&, const std::string&) {
         const int64_t kernel = r.get_int("kernel", 2, 1, 1024);
         const int64_t stride = r.get_int("stride", kernel, 1, 1024);
         return one<MaxPool2d>(kernel, stride);
       }},
      {"relu", "relu",
       [](TableReader&, const std::string&, const std::string&) {
         return one<ActivationLayer>(Activation::kRelu);
       }},
      {"tanh", "tanh",
       [](TableReader&, const std::string&, const std::string&) {
         return one<ActivationLayer>(Activation::kTanh);
       }},
      {"sigmoid", "sigmoid",
       [](TableReader&, const std::string&, const std::string&) {
         return one<ActivationLayer>(Activation::kSigmoid);
       }},
      {"flatten", "flatten",
       [](TableReader&, const std::string&, const std::string&) { return one<Flatten>(); }},
      {"dropout", "dropout",
       [](TableReader& r, const std::string&, const std::string&) {
         const double keep = r.get_double("keep", std::nullopt, 1e-6, 1.0);
         return one<Dropout>(static_cast<float>(keep));
       }},
      {"batch_norm", "bn",
       [](TableReader& r, const std::string&, const std::string&) {
         const double eps = r.get_double("eps", 1e-5, 1e-12, 1.0);
         const double momentum = r.get_double("momentum", 0.1, 0.0, 1.0);
         return one<BatchNorm>(static_cast<float>(eps), static_cast<float>(momentum));
       }},
      {"lstm", "lstm",
       [](TableReader& r, const std::string&, const std::string&) {
         const int64_t hidden = r.get_int("hidden", std::nullopt, 1, 1 << 20);
         const double forget_bias = r.get_double("forget_bias", 1.0, -100.0, 100.0);
         const bool reverse = r.get_bool("reverse", false);
         return one<Lstm>(hidden, static_cast<float>(forget_bias), reverse);
       }},
      {"last_step", "last_step",
       [](TableReader&, const std::string&, const std::string&) { return one<LastStep>(); }},
      {"residual_lstm", "res",
       [](TableReader& r, const std::string& name, const std::string& where) {
         const int64_t groups = r.get_int("groups", 2, 1, 64);
         const int64_t hidden = r.get_int("hidden", std::nullopt, 1, 1 << 16);
         const bool bidirectional = r.get_bool("bidirectional", true);
         const double forget_bias = r.get_double("forget_bias", 1.0, -100.0, 100.0);
         HPDL_REQUIRE(!bidirectional || hidden % 2 == 0,
                      where + ": a bidirectional residual_lstm needs an even hidden size, got " +
                          std::to_string(hidden));
         return residual_lstm(name, groups, hidden, bidirectional, float(forget_bias));
       }},
  };
  return kinds;
}

const LayerKind& layer_kind(const LayerConfig& lc) {
  std::string known;
  for (const LayerKind& k : layer_kinds()) {
    if (lc.type == k.type) return k;
    known += (known.empty() ? "" : ", ") + std::string(k.type);
  }
  throw Error(lc.where + ": unknown layer type '" + lc.type + "' (known: " + known + ")");
}

}  // namespace

std::unique_ptr<Model> build_model(const ModelConfig& cfg, int64_t batch, const RunConfig& run,
                                   int local_rank) {
  // The layers are read first: a bad config is named before any backend (a GPU) starts.
  return build_model(cfg, batch, [&] {
    return make_kernel_factory(run.backend, local_rank, run.precision, run.kernels);
  });
}

std::unique_ptr<Model> build_model(const ModelConfig& cfg, int64_t batch, Backend backend) {
  RunConfig run;
  run.backend = backend;
  run.kernels = kernel_choices_from_environment();
  return build_model(cfg, batch, run);
}

std::string backend_unavailable(const RunConfig& run) {
  try {
    make_kernel_factory(run.backend, 0, run.precision, run.kernels);
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

std::unique_ptr<Model> build_model(const ModelConfig& cfg, int64_t batch,
                                   const std::function<std::unique_ptr<KernelFactory>()>& kernels) {
  std::vector<std::unique_ptr<Layer>> layers;
  std::map<std::string, int> count;
  for (const auto& lc : cfg.layers) {
    TableReader r(lc.params, lc.where);
    r.get_string("type", std::nullopt);
    const int64_t repeat = r.get_int("repeat", 1, 1, 1000);
    const LayerKind& kind = layer_kind(lc);
    const bool named = lc.params->contains("name");
    const std::string base = r.get_string("name", "");
    for (int64_t rep = 0; rep < repeat; ++rep) {
      const std::string name = !named       ? kind.short_name + std::to_string(++count[lc.type])
                               : repeat > 1 ? base + "_" + std::to_string(rep + 1)
                                            : base;
      Layers made = kind.make(r, name, lc.where);
      if (made.size() == 1) made[0]->set_name(name);  // several name themselves
      for (auto& l : made) layers.push_back(std::move(l));
    }
    r.finish();
  }
  Shape input{{batch}};
  for (auto d : cfg.input) input.dims.push_back(d);
  auto model = std::make_unique<Model>(std::move(layers), input, kernels(), &execution_planner());
  const Shape& out = model->output_shape();
  if (out.rank() != 2 || out[1] != cfg.classes) {
    throw Error("model: the last layer outputs " + out.str() +
                " per batch but model.classes = " + std::to_string(cfg.classes) + " (expected [" +
                std::to_string(batch) + ", " + std::to_string(cfg.classes) + "])");
  }
  return model;
}

}  // namespace hpdl
