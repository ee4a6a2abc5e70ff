// One rank's training step (see the header).
#include "hpdl/train/local_step.hpp"

#include <cmath>

namespace hpdl {

LocalStep::LocalStep(const TrainerConfig& cfg, const Comm& comm, Model& model, H5Split& train,
                     Watchdog& watchdog, Profiler* prof, int64_t steps_per_epoch)
    : cfg_(cfg),
      model_(model),
      train_(train),
      prof_(prof),
      names_(prof),
      loss_(model.kernels(), model.batch(), cfg.classes),
      labels_(model.batch()),
      schedule_(cfg.optimizer, cfg.train, steps_per_epoch),
      decayed_(model.decayed_ranges()),
      optimizer_(make_optimizer(model.ops(), model.device(), cfg.optimizer, model.num_params())),
      guard_(cfg.train.nonfinite == NonFinite::kSkip, comm, watchdog) {}

double LocalStep::gradients(std::span<const int64_t> rows, int64_t step, float loss_scale,
                            const std::function<void(size_t)>& on_layer_done,
                            std::span<const int64_t> next_rows, std::function<void()> progress) {
  const Pass pass{true, cfg_.train.seed, step, rows.data(), std::move(progress)};
  return compute_gradients(model_, loss_, train_, rows, labels_.data(), pass, loss_scale,
                           on_layer_done, prof_, &names_, next_rows);
}

bool LocalStep::checked(Gradient kind, double local_loss, int64_t step, int64_t epoch) {
  VectorOps& ops = model_.ops();
  const double grad_sq = add_l2_sum_squares(ops, decayed_, model_.params(), model_.grads(),
                                            static_cast<float>(cfg_.optimizer.l2));
  const bool ok = kind == Gradient::kReduced
                      ? guard_.check_reduced(grad_sq, local_loss, model_, step, epoch)
                      : guard_.check_local(grad_sq, model_, step, epoch);
  if (ok) clip_to_norm(ops, model_.grads(), std::sqrt(grad_sq), cfg_.optimizer.clip_norm);
  return ok;
}

void LocalStep::update(int64_t step) {
  optimizer_->set_lr(static_cast<float>(lr(step)));
  optimizer_->update(model_.params(), model_.grads());
}

}  // namespace hpdl
