// Config -> layers. Each layer type reads its own keys through a TableReader, so
// `[[model.layers]] type = "dense" unit = 10` fails with "unknown key 'unit'". Any entry
// may say `repeat = n`. `residual_lstm` expands into the HAR thesis's residual layer:
// K (bi)directional cell groups on the same input, summed, then normalised.
#include "hpdl/builder/builder.hpp"

#include <functional>
#include <map>

#include "hpdl/config/table_reader.hpp"
#include "hpdl/core/error.hpp"
#include "hpdl/nn/batch_norm.hpp"
#include "hpdl/nn/branches.hpp"
#include "hpdl/nn/layers.hpp"
#include "hpdl/nn/recurrent.hpp"

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
    sum.emplace_back("g" + std::to_string(k), bidirectional
                                                  ? bidirectional_group()
                                                  : cell_group(hidden, forget_bias, false));
  }
  std::vector<std::unique_ptr<Layer>> out;
  out.push_back(std::make_unique<Branches>(std::move(sum), Branches::Combine::kSum));
  out.back()->set_name(name);
  out.push_back(std::make_unique<ScalarNorm>());
  out.back()->set_name(name + "_norm");
  return out;
}

std::unique_ptr<Layer> make_layer(const LayerConfig& lc, TableReader& r) {
  const std::string& t = lc.type;
  if (t == "dense") {
    const int64_t units = r.get_int("units", std::nullopt, 1, 1 << 26);
    const std::string init = r.get_string("init", "glorot", {"glorot", "he"});
    const bool per_step = r.get_bool("per_step", false);
    return std::make_unique<Dense>(units, init == "he" ? Init::kHeUniform : Init::kGlorotUniform,
                                   per_step);
  }
  if (t == "lstm") {
    const int64_t hidden = r.get_int("hidden", std::nullopt, 1, 1 << 20);
    const double forget_bias = r.get_double("forget_bias", 1.0, -100.0, 100.0);
    const bool reverse = r.get_bool("reverse", false);
    return std::make_unique<Lstm>(hidden, static_cast<float>(forget_bias), reverse);
  }
  if (t == "last_step") return std::make_unique<LastStep>();
  if (t == "conv2d") {
    const int64_t filters = r.get_int("filters", std::nullopt, 1, 1 << 20);
    const int64_t kernel = r.get_int("kernel", std::nullopt, 1, 1024);
    const int64_t stride = r.get_int("stride", 1, 1, 1024);
    const int64_t pad = r.get_int("pad", 0, 0, 1024);
    return std::make_unique<Conv2d>(filters, kernel, stride, pad);
  }
  if (t == "maxpool") {
    const int64_t kernel = r.get_int("kernel", 2, 1, 1024);
    const int64_t stride = r.get_int("stride", kernel, 1, 1024);
    return std::make_unique<MaxPool2d>(kernel, stride);
  }
  if (t == "relu") return std::make_unique<ActivationLayer>(Activation::kRelu);
  if (t == "tanh") return std::make_unique<ActivationLayer>(Activation::kTanh);
  if (t == "sigmoid") return std::make_unique<ActivationLayer>(Activation::kSigmoid);
  if (t == "flatten") return std::make_unique<Flatten>();
  if (t == "dropout") {
    const double keep = r.get_double("keep", std::nullopt, 1e-6, 1.0);
    return std::make_unique<Dropout>(static_cast<float>(keep));
  }
  if (t == "batch_norm") {
    const double eps = r.get_double("eps", 1e-5, 1e-12, 1.0);
    const double momentum = r.get_double("momentum", 0.1, 0.0, 1.0);
    return std::make_unique<BatchNorm>(static_cast<float>(eps), static_cast<float>(momentum));
  }
  throw Error(lc.where + ": unknown layer type '" + t +
              "' (known: dense, conv2d, maxpool, relu, tanh, sigmoid, flatten, dropout, "
              "batch_norm, lstm, last_step, residual_lstm)");
}

}  // namespace

std::unique_ptr<Model> build_model(const ModelConfig& cfg, int64_t batch,
                                   const std::string& backend, int local_rank) {
  // The layers are read first: a bad config is named before any backend (a GPU) starts.
  return build_model(cfg, batch, [&] { return make_kernel_factory(backend, local_rank); });
}

std::string backend_unavailable(const std::string& backend) {
  try {
    make_kernel_factory(backend);
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
    const std::string short_kind = lc.type == "conv2d"          ? "conv"
                                   : lc.type == "maxpool"       ? "pool"
                                   : lc.type == "residual_lstm" ? "res"
                                   : lc.type == "batch_norm"    ? "bn"
                                                                : lc.type;
    const bool named = lc.params->contains("name");
    const std::string base = r.get_string("name", "");
    for (int64_t rep = 0; rep < repeat; ++rep) {
      const std::string name = !named       ? short_kind + std::to_string(++count[lc.type])
                               : repeat > 1 ? base + "_" + std::to_string(rep + 1)
                                            : base;
      if (lc.type == "residual_lstm") {
        const int64_t groups = r.get_int("groups", 2, 1, 64);
        const int64_t hidden = r.get_int("hidden", std::nullopt, 1, 1 << 16);
        const bool bidirectional = r.get_bool("bidirectional", true);
        const double forget_bias = r.get_double("forget_bias", 1.0, -100.0, 100.0);
        HPDL_REQUIRE(!bidirectional || hidden % 2 == 0,
                     lc.where + ": a bidirectional residual_lstm needs an even hidden size, got " +
                         std::to_string(hidden));
        for (auto& l : residual_lstm(name, groups, hidden, bidirectional, float(forget_bias)))
          layers.push_back(std::move(l));
        continue;
      }
      auto layer = make_layer(lc, r);
      layer->set_name(name);
      layers.push_back(std::move(layer));
    }
    r.finish();
  }
  Shape input{{batch}};
  for (auto d : cfg.input) input.dims.push_back(d);
  auto model = std::make_unique<Model>(std::move(layers), input, kernels());
  const Shape& out = model->output_shape();
  if (out.rank() != 2 || out[1] != cfg.classes) {
    throw Error("model: the last layer outputs " + out.str() +
                " per batch but model.classes = " + std::to_string(cfg.classes) + " (expected [" +
                std::to_string(batch) + ", " + std::to_string(cfg.classes) + "])");
  }
  return model;
}

}  // namespace hpdl
