// Bucketed, overlapped gradient allreduce. Progress: each layer_done() tests the buckets in
// flight, so the MPI library advances them between layers without a progress thread.
#include "hpdl/dist/grad_reducer.hpp"

#include <climits>

#include "hpdl/core/error.hpp"

namespace hpdl {

GradientReducer::GradientReducer(const Comm& comm, Model& model, int64_t bucket_floats,
                                 Watchdog& watchdog)
    : comm_(comm),
      grads_(model.grads()),
      watchdog_(watchdog),
      bucket_of_layer_(model.num_layers(), -1) {
  const int64_t limit = std::min<int64_t>(std::max<int64_t>(bucket_floats, 1), INT_MAX);
  Bucket open;
  for (size_t i = model.num_layers(); i-- > 0;) {
    const Model::Range& r = model.layer_params(i);
    if (r.size == 0) continue;
    // A single layer larger than INT_MAX floats would need splitting; no model is near it.
    HPDL_REQUIRE(r.size <= INT_MAX,
                 "layer '" + model.layer(i).name() + "' has more than 2^31 parameters");
    if (open.layers > 0 && open.size + r.size > INT_MAX) buckets_.push_back(open), open = Bucket{};
    open.offset = r.offset;  // layers are contiguous and visited backwards
    open.size += r.size;
    ++open.layers;
    bucket_of_layer_[i] = static_cast<int>(buckets_.size());
    if (open.size >= limit) buckets_.push_back(open), open = Bucket{};
  }
  if (open.layers > 0) buckets_.push_back(open);
  for (auto& b : buckets_) b.remaining = b.layers;
  requests_.assign(buckets_.size(), MPI_REQUEST_NULL);
}

void GradientReducer::start(Bucket& b, MPI_Request* request) {
  HPDL_CHECK_MPI(MPI_Iallreduce(MPI_IN_PLACE, grads_.data() + b.offset, static_cast<int>(b.size),
                                MPI_FLOAT, MPI_SUM, comm_.raw(), request));
  ++started_;
}

void GradientReducer::layer_done(size_t layer) {
  if (comm_.size() == 1) return;
  const int b = bucket_of_layer_[layer];
  if (b >= 0 && --buckets_[b].remaining == 0) start(buckets_[b], &requests_[b]);
  if (started_ > 0) {
    int done = 0;  // drives progress of the buckets in flight
    HPDL_CHECK_MPI(MPI_Testall(started_, requests_.data(), &done, MPI_STATUSES_IGNORE));
  }
}

void GradientReducer::finish(int64_t step) {
  if (comm_.size() == 1) return;
  WatchdogScope guard(watchdog_, "gradient allreduce", step);
  for (size_t b = 0; b < buckets_.size(); ++b) {
    // Every rank starts every bucket in the same order (all layers are done by now).
    if (buckets_[b].remaining > 0) {
      buckets_[b].remaining = 0;
      start(buckets_[b], &requests_[b]);
    }
  }
  HPDL_CHECK_MPI(
      MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE));
  for (auto& b : buckets_) b.remaining = b.layers;
  started_ = 0;
}

}  // namespace hpdl
