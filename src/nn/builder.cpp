// Config -> layers. Each layer type reads its own keys through a TableReader, so
// `[[model.layers]] type = "dense" unit = 10` fails with "unknown key 'unit'".
#include "hpdl/nn/builder.hpp"

#include <map>

#include "hpdl/config/table_reader.hpp"
#include "hpdl/core/error.hpp"
#include "hpdl/nn/layers.hpp"
#include "hpdl/nn/recurrent.hpp"

namespace hpdl {
namespace {

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
  throw Error(lc.where + ": unknown layer type '" + t +
              "' (known: dense, conv2d, maxpool, relu, tanh, sigmoid, flatten, dropout, lstm, "
              "last_step)");
}

}  // namespace

std::unique_ptr<Model> build_model(const ModelConfig& cfg, int64_t batch,
                                   const std::string& backend) {
  std::vector<std::unique_ptr<Layer>> layers;
  std::map<std::string, int> count;
  for (const auto& lc : cfg.layers) {
    TableReader r(lc.params, lc.where);
    r.get_string("type", std::nullopt);
    const std::string short_kind = lc.type == "conv2d"    ? "conv"
                                   : lc.type == "maxpool" ? "pool"
                                                          : lc.type;
    const std::string name = r.get_string("name", short_kind + std::to_string(++count[lc.type]));
    auto layer = make_layer(lc, r);
    r.finish();
    layer->set_name(name);
    layers.push_back(std::move(layer));
  }
  Shape input{{batch}};
  for (auto d : cfg.input) input.dims.push_back(d);
  auto model = std::make_unique<Model>(std::move(layers), input, make_kernel_factory(backend));
  const Shape& out = model->output_shape();
  if (out.rank() != 2 || out[1] != cfg.classes) {
    throw Error("model: the last layer outputs " + out.str() +
                " per batch but model.classes = " + std::to_string(cfg.classes) + " (expected [" +
                std::to_string(batch) + ", " + std::to_string(cfg.classes) + "])");
  }
  return model;
}

}  // namespace hpdl
