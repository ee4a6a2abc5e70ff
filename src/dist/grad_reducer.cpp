// Bucketed, overlapped gradient allreduce. Progress: each layer_done() tests the buckets in
// flight, so the MPI library advances them between layers without a progress thread.
#include "hpdl/dist/grad_reducer.hpp"

#include <climits>

#include "hpdl/core/error.hpp"
#include "hpdl/dist/error_feedback.hpp"

namespace hpdl {

BucketLayout bucket_layout(const std::vector<Range>& layers, int64_t bucket_floats) {
  const int64_t limit = std::min<int64_t>(std::max<int64_t>(bucket_floats, 1), INT_MAX);
  BucketLayout out;
  out.bucket_of_layer.assign(layers.size(), -1);
  Range open;
  int open_layers = 0;
  auto close = [&] {
    out.buckets.push_back(open), out.layers_in_bucket.push_back(open_layers);
    open = Range{}, open_layers = 0;
  };
  for (size_t i = layers.size(); i-- > 0;) {
    const Range& r = layers[i];
    if (r.size == 0) continue;
    // A single layer larger than INT_MAX floats would need splitting; no model is near it.
    HPDL_REQUIRE(r.size <= INT_MAX,
                 "layer " + std::to_string(i) + " has more than 2^31 parameters");
    if (open_layers > 0 && open.size + r.size > INT_MAX) close();
    open.offset = r.offset;  // layers are contiguous and visited backwards
    open.size += r.size;
    ++open_layers;
    out.bucket_of_layer[i] = static_cast<int>(out.buckets.size());
    if (open.size >= limit) close();
  }
  if (open_layers > 0) close();
  return out;
}

GradientReducer::GradientReducer(const Comm& comm, Device& device, std::span<float> grads,
                                 const std::vector<Range>& layers, int64_t bucket_floats,
                                 Watchdog& watchdog, std::optional<HalfFormat> wire,
                                 bool shared_memory)
    : comm_(comm),
      staging_(comm.size() > 1 ? HostMirror(device, grads) : HostMirror()),
      watchdog_(watchdog),
      wire_format_(comm.size() > 1 ? wire : std::nullopt) {
  if (wire_format_) {
    wire_.resize(grads.size());
    residual_.assign(grads.size(), 0.0f);
  }
  const BucketLayout layout = bucket_layout(layers, bucket_floats);
  bucket_of_layer_ = layout.bucket_of_layer;
  for (size_t b = 0; b < layout.buckets.size(); ++b) {
    Bucket bucket;
    bucket.offset = layout.buckets[b].offset, bucket.size = layout.buckets[b].size;
    bucket.layers = bucket.remaining = layout.layers_in_bucket[b];
    buckets_.push_back(bucket);
    ready_.push_back(device.make_event());
    copied_.push_back(device.make_event());
  }
  requests_.assign(buckets_.size(), MPI_REQUEST_NULL);
  if (shared_memory && !wire_format_ && !buckets_.empty()) {
    // Buckets are contiguous, layer-aligned and together cover every gradient: one range.
    int64_t begin = buckets_.front().offset, end = begin;
    for (const Bucket& b : buckets_) {
      begin = std::min(begin, b.offset);
      end = std::max(end, b.offset + b.size);
    }
    node_range_ = {begin, end - begin};
    // Allocating the window is collective: bounded like every other wait on the ranks.
    WatchdogScope guard(watchdog_, "gradient reducer: allocating the shared window", 0);
    node_sum_ = NodeSum::open(comm, std::min<int64_t>(kNodeSumChunkFloats, grads.size()));
  }
}

GradientReducer::~GradientReducer() {
  // Freeing the shared window is collective and cannot poll: the watchdog's own thread
  // bounds it.
  if (node_sum_) {
    WatchdogScope guard(watchdog_, "gradient reducer: freeing the shared window", 0);
    node_sum_.reset();
  }
}

void GradientReducer::set_profiler(Profiler* p) {
  prof_ = p;
  bucket_names_.clear();
  if (!p) return;
  issue_name_ = p->name("allreduce issue/test", "comm");
  node_sum_name_ = p->name("allreduce through shared memory", "allreduce");
  for (size_t b = 0; b < buckets_.size(); ++b)
    bucket_names_.push_back(p->name("allreduce bucket " + std::to_string(b), "allreduce"));
  issued_ns_.assign(buckets_.size(), 0);
  indices_.resize(buckets_.size());
}

void GradientReducer::start_ready(bool wait) {
  while (started_ < recorded_) {
    DeviceEvent& copied = *copied_[started_];
    if (wait) {
      copied.wait();
    } else if (!copied.done()) {
      return;  // later buckets wait for this one: MPI needs one order on every rank
    }
    start(static_cast<size_t>(started_));
  }
}

void GradientReducer::enqueue_download(size_t b) {
  ready_[b]->record();  // buckets complete in layout order: b == recorded_
  staging_.download_after(*ready_[b], buckets_[b].offset, buckets_[b].size, *copied_[b]);
  ++recorded_;
}

void GradientReducer::encode(const Bucket& b) {
  const auto at = [&](auto& v) { return std::span(v.data() + b.offset, b.size); };
  encode_with_feedback(*wire_format_, std::span(staging_.data() + b.offset, b.size), at(residual_),
                       at(wire_));
}

void GradientReducer::start(size_t b) {
  if (wire_format_) {
    encode(buckets_[b]);
    comm_.start_allreduce_sum(wire_.data() + buckets_[b].offset, buckets_[b].size, *wire_format_,
                              &requests_[b]);
  } else {
    comm_.start_allreduce_sum(staging_.data() + buckets_[b].offset, buckets_[b].size,
                              &requests_[b]);
  }
  ++started_;
  if (prof_ && prof_->on()) issued_ns_[b] = Profiler::now();
}

void GradientReducer::record_completions(int count, const int* indices) {
  const int64_t t = Profiler::now();
  for (int k = 0; k < count; ++k)
    prof_->add(bucket_names_[indices[k]], issued_ns_[indices[k]], t, Track::kComm);
}

void GradientReducer::layer_done(size_t layer) {
  if (comm_.size() == 1) return;
  const int b = bucket_of_layer_[layer];
  if (b < 0 && recorded_ == 0) return;
  ProfileScope timed(prof_, issue_name_);
  if (b >= 0 && --buckets_[b].remaining == 0) enqueue_download(static_cast<size_t>(b));
  if (node_sum_) return;  // summed in finish()
  start_ready(false);
  progress();
}

void GradientReducer::progress() {
  if (comm_.size() == 1 || node_sum_) return;  // nothing in flight to move on
  if (prof_ && prof_->on()) {
    // Drives progress, and tells which buckets completed when.
    const int count = comm_.test_some(started_, requests_.data(), indices_.data());
    if (count > 0) record_completions(count, indices_.data());
  } else if (started_ > 0) {
    comm_.test_all(started_, requests_.data());  // drives progress of the buckets in flight
  }
}

void GradientReducer::finish(int64_t step) {
  if (comm_.size() == 1) return;
  WatchdogScope guard(watchdog_, "gradient allreduce", step);
  // Every rank starts every bucket in the same order (all layers are done by now).
  for (size_t b = static_cast<size_t>(recorded_); b < buckets_.size(); ++b) {
    buckets_[b].remaining = 0;
    enqueue_download(b);
  }
  if (node_sum_) {
    sum_on_node();
  } else {
    start_ready(true);
    wait_all_buckets();
  }
  if (wire_format_) {
    decode(*wire_format_, wire_, staging_.host());
  }
  staging_.upload();  // the sums, back on the device
  for (auto& b : buckets_) b.remaining = b.layers;
  recorded_ = started_ = 0;
}

void GradientReducer::sum_on_node() {
  for (auto& copied : copied_) copied->wait();
  const int64_t t0 = prof_ && prof_->on() ? Profiler::now() : 0;
  node_sum_->sum(staging_.data() + node_range_.offset, node_range_.size);
  if (t0) prof_->add(node_sum_name_, t0, Profiler::now(), Track::kComm);
}

void GradientReducer::wait_all_buckets() {
  const int n = static_cast<int>(requests_.size());
  if (prof_ && prof_->on()) {
    for (int done; (done = comm_.wait_some(n, requests_.data(), indices_.data())) > 0;)
      record_completions(done, indices_.data());
  } else {
    comm_.wait_all(n, requests_.data());
  }
}

}  // namespace hpdl
