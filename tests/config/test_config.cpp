// Config loading: defaults, overrides, and one error per kind of bad value, each naming
// the key or file.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "hpdl/builder/builder.hpp"
#include "hpdl/config/config.hpp"
#include "hpdl/config/kernel_choices.hpp"
#include "hpdl/core/error.hpp"
#include "hpdl/run/same_job.hpp"

using namespace hpdl;

namespace {

const char* kMinimal = R"(
[data]
train_file = "t.h5"
[model]
input = [1, 4, 4]
classes = 3
[[model.layers]]
type = "flatten"
[[model.layers]]
type = "dense"
units = 3
)";

// Config files go into a directory of this process (CTest runs test cases in parallel
// processes), removed when the process ends; file names are unique per call.
struct ConfigDir {
  ConfigDir()
      : path(std::filesystem::temp_directory_path() / ("hpdl_cfg_" + std::to_string(getpid()))) {
    std::filesystem::create_directories(path);
  }
  ~ConfigDir() { std::filesystem::remove_all(path); }
  std::filesystem::path path;
};

std::string write_config(const std::string& name, const std::string& text) {
  static ConfigDir dir;
  static int calls = 0;
  const std::string path = (dir.path / (name + "_" + std::to_string(++calls) + ".toml")).string();
  std::ofstream(path) << text;
  return path;
}

std::string error_of(const std::string& text, const std::vector<std::string>& sets = {}) {
  try {
    load_config(write_config("bad", text), sets);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Config, DefaultsAndOverrides) {
  const Config c =
      load_config(write_config("ok", kMinimal),
                  {"optimizer.lr=0.5", "optimizer.name=adam", "train.batch=7", "run.name=\"x y\""});
  EXPECT_DOUBLE_EQ(c.optimizer.lr, 0.5);
  EXPECT_EQ(c.optimizer.name, OptimizerKind::kAdam);
  EXPECT_EQ(c.train.batch, 7);
  EXPECT_EQ(c.train.epochs, 1);
  EXPECT_EQ(c.run.name, "x y");
  EXPECT_EQ(c.model.layers.size(), 2u);
  EXPECT_NE(to_toml(c.resolved).find("lr = 0.5"), std::string::npos);
}

// One source for defaults: a config that sets nothing but its model (and the training file)
// reads as the settings structs' own defaults, section for section.
TEST(Config, AnEmptyConfigIsTheDefaultSettings) {
  const std::string path = write_config("defaults", kMinimal);
  const Config c = load_config(path, {});
  RunConfig run;
  run.name = std::filesystem::path(path).stem().string();
  run.kernels = kernel_choices_from_environment();  // HPDL_GEMM, in the tests' BLAS run
  EXPECT_EQ(c.run, run);
  DataConfig data;
  data.train_file = "t.h5";
  EXPECT_EQ(c.data, data);
  EXPECT_EQ(c.optimizer, OptimizerConfig{});
  EXPECT_EQ(c.train, TrainConfig{});
  EXPECT_EQ(c.distributed, DistributedConfig{});
  EXPECT_EQ(c.profile, ProfileConfig{});
  EXPECT_EQ(c.checkpoint, CheckpointConfig{});
}

TEST(Config, OverrideIndexesArraysOfLayers) {
  const Config c = load_config(write_config("index", kMinimal), {"model.layers.1.units=7"});
  EXPECT_EQ(c.model.layers[1].params->get("units")->value<int64_t>(), 7);
  EXPECT_NE(error_of(kMinimal, {"model.layers.5.units=7"}).find("'5' is not an entry of layers"),
            std::string::npos);
}

TEST(Config, RunNameDefaultsToFileStem) {
  EXPECT_EQ(load_config(write_config("stem", kMinimal), {}).run.name.rfind("stem_", 0), 0u);
}

TEST(Config, MissingFile) {
  try {
    load_config("/nonexistent/x.toml", {});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/x.toml: file not found"), std::string::npos);
  }
}

TEST(Config, Malformed) {
  EXPECT_NE(error_of("[model\ninput = ").find("malformed TOML"), std::string::npos);
}

TEST(Config, UnknownKey) {
  EXPECT_NE(error_of(std::string(kMinimal) + "[optimizer]\nlrr = 1\n").find("unknown key 'lrr'"),
            std::string::npos);
  EXPECT_NE(error_of(kMinimal, {"trian.batch=3"}).find("unknown key 'trian'"), std::string::npos);
}

TEST(Config, WrongTypeAndRange) {
  EXPECT_NE(error_of(kMinimal, {"train.batch=\"big\""}).find("train.batch must be an integer"),
            std::string::npos);
  EXPECT_NE(error_of(kMinimal, {"train.batch=0"}).find("train.batch = 0 is out of range"),
            std::string::npos);
  EXPECT_NE(error_of(kMinimal, {"optimizer.lr=-0.1"}).find("optimizer.lr"), std::string::npos);
  EXPECT_NE(error_of(kMinimal, {"optimizer.name=adagrad"}).find("not one of: sgd, adam"),
            std::string::npos);
  EXPECT_NE(error_of(kMinimal, {"badoverride"}).find("key=value"), std::string::npos);
}

TEST(Config, UnknownLayerTypeAndLayerKey) {
  Config c = load_config(
      write_config("layer", std::string(kMinimal) + "[[model.layers]]\ntype = \"dense2\"\n"), {});
  try {
    build_model(c.model, 2, Backend::kReference);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown layer type 'dense2'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("model.layers[2]"), std::string::npos);
  }
  Config c2 =
      load_config(write_config("layerkey", std::string(kMinimal) +
                                               "[[model.layers]]\ntype = \"relu\"\nunits = 3\n"),
                  {});
  try {
    build_model(c2.model, 2, Backend::kReference);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown key 'units'"), std::string::npos);
  }
}

TEST(Config, ModelOutputMustMatchClasses) {
  Config c = load_config(write_config("classes", kMinimal), {"model.classes=4"});
  try {
    build_model(c.model, 2, Backend::kReference);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("model.classes = 4"), std::string::npos);
  }
}

TEST(Config, EveryShippedConfigLoadsAndBuilds) {
  for (const auto& entry : std::filesystem::directory_iterator(HPDL_SOURCE_DIR "/inputs")) {
    if (entry.path().extension() != ".toml") continue;
    SCOPED_TRACE(entry.path().string());
    const Config c = load_config(entry.path().string(), {});
    EXPECT_GT(build_model(c.model, 2, Backend::kOneDnn)->num_params(), 0);
  }
}

}  // namespace

// The same-job agreement names the first differing key of TOML-like text.
TEST(SameJob, FirstDifferenceNamesTheKey) {
  const std::string a = "[optimizer]\nlr = 0.1\nname = \"sgd\"\n[[model.layers]]\nunits = 8\n";
  const std::string b = "[optimizer]\nlr = 0.1\nname = \"sgd\"\n[[model.layers]]\nunits = 16\n";
  EXPECT_EQ(first_difference(a, a), "");
  EXPECT_EQ(first_difference(a, b), "model.layers.0.units: 8 vs 16");
  EXPECT_EQ(first_difference(a + "x = 1\n", a), "model.layers.0.x: 1 vs (not set)");
  EXPECT_EQ(first_difference(a, a + "[[model.layers]]\nunits = 4\n"),
            "model.layers.1.units: (not set) vs 4");
  // A key present on one side only does not shift the comparison of the others.
  EXPECT_EQ(first_difference("[d]\nmode = 'x'\n" + a, a), "d.mode: 'x' vs (not set)");
  EXPECT_NE(fnv1a64(a), fnv1a64(b));
  EXPECT_EQ(fnv1a64(""), 14695981039346656037ull);
}
