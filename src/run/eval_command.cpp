// `hpdl eval MODEL_OR_CHECKPOINT.h5 DATA.h5 [--group G] [--batch B]`: the saved model (the
// config that built it is stored beside its parameters) evaluated on any HDF5 data in
// hpdl's schema, on 1..N ranks (each scores its block of rows, as training's evaluation
// does): loss, accuracy, weighted F1, per-class precision/recall/F1 and the confusion
// matrix, printed by rank 0.
#include <cstdio>
#include <memory>

#include "hpdl/builder/builder.hpp"
#include "hpdl/core/error.hpp"
#include "hpdl/core/input_file.hpp"
#include "hpdl/data/dataset.hpp"
#include "hpdl/data/h5_util.hpp"
#include "hpdl/data/sampler.hpp"
#include "hpdl/run/commands.hpp"
#include "hpdl/run/device_choice.hpp"
#include "hpdl/run/mpi_command.hpp"
#include "hpdl/train/checkpoint.hpp"
#include "hpdl/train/passes.hpp"

namespace hpdl {
namespace {

struct SavedModel {
  Config cfg;
  std::vector<float> params;
  std::string kind;  // "model" or "checkpoint"
};

// model.h5 (/params and attribute "config") or checkpoint.h5 (attribute "format").
SavedModel read_saved_model(const std::string& path) {
  require_input_file(path, "model");
  SavedModel m;
  std::string config;
  bool checkpoint = false;
  {
    H5Id f = h5_open_file(path);
    checkpoint = !h5_read_string_attr(f.get(), "format").empty();
    if (!checkpoint) {
      if (!h5_exists(f.get(), "params"))
        throw Error(path + " is neither an hpdl model (no /params) nor an hpdl checkpoint");
      config = h5_read_string_attr(f.get(), "config");
      m.params = h5_read_floats(f.get(), "params");
    }
  }
  if (checkpoint) {
    Checkpoint c = read_checkpoint(path);
    config = c.config;
    m.params = std::move(c.params);
  }
  m.kind = checkpoint ? "checkpoint" : "model";
  if (config.empty())
    throw Error(path +
                " holds no config (written before hpdl saved it with the model): "
                "evaluate it with the hpdl that wrote it");
  m.cfg = config_from_text(config, path + " (its saved config)");
  return m;
}

int eval(const EvalArgs& args, Comm& comm) {
  Watchdog watchdog(RunConfig{}.watchdog_s, comm.rank());
  comm.bound_waits_by(&watchdog);
  SavedModel saved;
  std::unique_ptr<H5Split> data;
  std::unique_ptr<Model> model;
  on_all_ranks(comm, watchdog, [&] {
    h5_quiet();
    saved = read_saved_model(args.model);
    const Config& cfg = saved.cfg;
    data = std::make_unique<H5Split>(args.data, args.group);
    prepare_split(*data, cfg.model.input, cfg.data.normalize);
    int64_t b = 0, e = 0;
    block_range(data->size(), comm.rank(), comm.size(), &b, &e);
    const std::string bad = data->validate(b, e, cfg.model.classes);
    if (!bad.empty()) throw Error(bad);
  });
  // Every rank read the same saved config: a GPU config puts each rank of a node on its own GPU.
  const int local_rank = node_device_rank(saved.cfg.run, comm, watchdog);
  on_all_ranks(comm, watchdog, [&] {
    const Config& cfg = saved.cfg;
    model =
        build_model(cfg.model, args.batch > 0 ? args.batch : cfg.train.batch, cfg.run, local_rank);
    if (static_cast<int64_t>(saved.params.size()) != model->num_params())
      throw Error(args.model + " holds " + std::to_string(saved.params.size()) +
                  " parameters but its config's model has " + std::to_string(model->num_params()));
    model->params_from_host(saved.params);
  });
  Evaluator evaluator(comm, *model, saved.cfg.model.classes, watchdog);
  const double loss = evaluator.run(*data, 0);
  comm.bound_waits_by(nullptr);
  if (comm.rank() != 0) return 0;
  const ConfusionMatrix& m = evaluator.confusion();
  const std::vector<std::string> names = data->class_names();
  std::printf("%s %s (%lld parameters) on %s: %lld samples, %d rank(s)\n", saved.kind.c_str(),
              args.model.c_str(), static_cast<long long>(model->num_params()),
              data->where().c_str(), static_cast<long long>(m.total()), comm.size());
  std::printf("loss %.4f | accuracy %.4f | weighted F1 %.4f\n", loss, m.accuracy(),
              m.weighted_f1());
  std::printf("%s\n%s", m.scores_table(names).c_str(), m.table(names).c_str());
  return 0;
}

}  // namespace

int cmd_eval(const EvalArgs& args, int* argc, char*** argv) {
  return run_under_mpi(argc, argv, [&](Comm& comm) { return eval(args, comm); });
}

}  // namespace hpdl
