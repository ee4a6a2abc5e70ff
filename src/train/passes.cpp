// Training and evaluation passes shared by the synchronous and parameter-server trainers.
#include "hpdl/train/passes.hpp"

#include <algorithm>

#include "hpdl/data/sampler.hpp"

namespace hpdl {

StepNames::StepNames(Profiler* p) {
  if (!p) return;
  data = p->name("read batch", "data");
  loss = p->name("loss", "loss");
  update = p->name("update", "update");
  comm_wait = p->name("allreduce wait", "comm");
  pull = p->name("pull", "comm");
  push = p->name("push", "comm");
}

double forward_backward(Model& model, SoftmaxCrossEntropy& loss, const int32_t* labels,
                        const Pass& pass, float loss_scale,
                        const std::function<void(size_t)>& on_layer_done, Profiler* prof,
                        const StepNames* names) {
  model.forward(pass);
  double sum = 0;
  {
    DeviceScope timed(prof, names ? names->loss : 0);
    sum = loss.forward(model.output(), labels, model.batch());
    loss.backward(labels, loss_scale, model.output_grad());
  }
  model.backward_fresh(pass, on_layer_done);
  return sum;
}

double compute_gradients(Model& model, SoftmaxCrossEntropy& loss, H5Split& split,
                         std::span<const int64_t> rows, int32_t* labels, const Pass& pass,
                         float loss_scale, const std::function<void(size_t)>& on_layer_done,
                         Profiler* prof, const StepNames* names,
                         std::span<const int64_t> next_rows) {
  {
    ProfileScope timed(prof, names ? names->data : 0);
    split.read_rows(rows, model.input_host(), labels);
    model.upload_input();
    split.prefetch_rows(next_rows);
  }
  return forward_backward(model, loss, labels, pass, loss_scale, on_layer_done, prof, names);
}

Evaluator::Evaluator(const Comm& comm, Model& model, int64_t classes, Watchdog& watchdog)
    : comm_(comm),
      model_(model),
      watchdog_(watchdog),
      loss_(model.kernels(), model.batch(), classes),
      labels_(model.batch()),
      confusion_(classes) {}

double Evaluator::run(H5Split& split, int64_t step) {
  int64_t begin = 0, end = 0;
  block_range(split.size(), comm_.rank(), comm_.size(), &begin, &end);
  confusion_.clear();
  double loss_sum = 0;
  const int64_t B = model_.batch();
  for (int64_t b = begin; b < end; b += B) {
    const int64_t n = std::min(B, end - b);  // the rest of the batch is padding, ignored
    split.read_range(b, b + n, model_.input_host(), labels_.data());
    model_.upload_input();
    for (int64_t i = n; i < B; ++i) labels_[i] = 0;
    model_.forward(Pass{});
    loss_sum += loss_.forward(model_.output(), labels_.data(), n);
    loss_.probs_to_host();
    for (int64_t i = 0; i < n; ++i) confusion_.add(labels_[i], loss_.predicted(i));
  }
  WatchdogScope guard(watchdog_, "evaluation allreduce", step);
  comm_.allreduce_sum(confusion_.data(), confusion_.classes() * confusion_.classes());
  comm_.allreduce_sum(&loss_sum, 1);
  return confusion_.total() ? loss_sum / confusion_.total() : 0.0;
}

void evaluate_epoch(Evaluator& evaluator, const Splits& splits, int64_t step, EpochStats& st) {
  if (splits.validation) {
    st.val_loss = evaluator.run(*splits.validation, step);
    st.val_accuracy = evaluator.confusion().accuracy();
    st.val_f1 = evaluator.confusion().weighted_f1();
    st.validated = true;
  } else if (splits.test) {
    st.test_loss = evaluator.run(*splits.test, step);
    st.test_accuracy = evaluator.confusion().accuracy();
    st.test_f1 = evaluator.confusion().weighted_f1();
    st.tested = true;
  }
}

}  // namespace hpdl
