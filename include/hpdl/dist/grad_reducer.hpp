// Sums gradients across ranks in buckets that start while backward is still running
// (after Horovod/DDP). Buckets are contiguous, layer-aligned ranges of the flat gradient
// buffer, formed from the last layer backwards because backward finishes those first;
// each is reduced in place with MPI_Iallreduce once all its layers are done, and later
// layers' backward overlaps the communication. finish() waits for every bucket, bounded
// by the watchdog. With one rank it does nothing.
//
// The gradients are device memory. When a bucket's last layer is done, the reducer records
// an event on the device's stream behind that layer's backward and enqueues the bucket's
// download to its host mirror on the device's copy stream after that event (a GPU copies
// while later layers' backward runs); MPI starts on the bucket once the copy has completed
// (on a host-accessible device the mirror is the gradient buffer itself and nothing is
// copied). Buckets start strictly in layout order, on every rank the same, as MPI requires
// of non-blocking collectives.
//
// Compression (distributed.compression = "bf16" | "fp16"): a bucket travels as 16-bit
// floats, half the bytes on every link, with error feedback (after 1-bit SGD and PowerSGD):
// each rank adds what rounding dropped from its previous contribution to the next one before
// rounding, so the rounding error does not accumulate over steps. With one rank nothing
// travels and nothing is rounded.
//
// When every rank shares one node (one box, `mpirun -np N` on it) and buckets travel as f32,
// the gradients are summed in finish() through a shared-memory window instead (NodeSum,
// comm/node_sum.hpp): MPI would move every bucket through its transport, at a few GB/s on
// virtual machines, while the sum itself is a few passes over memory. Nothing starts during
// backward then: the ranks of one box have no spare core to overlap it with.
#pragma once
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "hpdl/comm/comm.hpp"
#include "hpdl/comm/node_sum.hpp"
#include "hpdl/comm/watchdog.hpp"
#include "hpdl/core/device.hpp"
#include "hpdl/core/half.hpp"
#include "hpdl/core/host_mirror.hpp"
#include "hpdl/core/range.hpp"
#include "hpdl/profile/profiler.hpp"

namespace hpdl {

// How GradientReducer groups a gradient vector into allreduce buckets: layers with
// parameters, visited from the last to the first (the order backward completes them), a
// bucket closed once it holds bucket_floats or more (or would pass INT_MAX).
struct BucketLayout {
  std::vector<Range> buckets;         // in the order they start
  std::vector<int> layers_in_bucket;  // layers with parameters in each
  std::vector<int> bucket_of_layer;   // per layer; -1 for a layer without parameters
};
BucketLayout bucket_layout(const std::vector<Range>& layers, int64_t bucket_floats);

// The shared-memory sum's chunk (NodeSum): the whole gradient up to 1 MiB, two barriers a
// chunk; larger gradients go through in 1 MiB pieces, so the window stays small however
// large the model.
inline constexpr int64_t kNodeSumChunkFloats = int64_t{1} << 18;

class GradientReducer {
 public:
  // grads: the flat gradient buffer on `device`; layers[i]: layer i's range in it (size 0:
  // no parameters), contiguous and in layer order. bucket_floats: close a bucket once it
  // holds at least this many gradients. wire: the 16-bit format buckets travel in
  // (nothing: f32). shared_memory: sum through a shared-memory window when every rank
  // shares this node and wire is f32 (distributed.shared_memory). Collective.
  GradientReducer(const Comm& comm, Device& device, std::span<float> grads,
                  const std::vector<Range>& layers, int64_t bucket_floats, Watchdog& watchdog,
                  std::optional<HalfFormat> wire = std::nullopt, bool shared_memory = true);
  ~GradientReducer();
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  // Called by Model::backward when layer i's parameter gradients are final.
  void layer_done(size_t layer);
  // Tests the buckets in flight, so that the MPI library moves them on: called after each
  // layer (layer_done) and inside a long layer's backward (Pass::progress).
  void progress();
  // Waits until every bucket of this step is reduced; then the gradient buffer (on the
  // device) holds the sum over ranks.
  void finish(int64_t step);

  // Compression's error feedback: what rounding dropped from this rank's last contribution
  // (host memory, one value per gradient; empty without compression or with one rank).
  // Part of the training state: checkpoints keep every rank's.
  std::span<float> feedback() { return residual_; }
  // Forgets it (after a skipped step, whose gradient may not be finite).
  void clear_feedback() { std::fill(residual_.begin(), residual_.end(), 0.0f); }

  int64_t num_buckets() const { return static_cast<int64_t>(buckets_.size()); }
  // Whether finish() sums through shared memory (NodeSum) rather than MPI's allreduce.
  bool sums_on_node() const { return node_sum_ != nullptr; }
  // Buckets whose allreduce has started in this step (tests).
  int buckets_started() const { return started_; }
  // Times the issue/test calls (compute track) and each bucket from issue to completion
  // (communication track). Null: off.
  void set_profiler(Profiler* p);

 private:
  struct Bucket {
    int64_t offset = 0, size = 0;
    int layers = 0;     // layers with parameters in this bucket
    int remaining = 0;  // of those, not yet done in this step
  };
  // Starts, in layout order, every bucket whose download has completed (all: wait).
  void start_ready(bool wait);
  // Records bucket b's ready event and enqueues its download behind it.
  void enqueue_download(size_t b);
  void start(size_t b);
  // wire_[bucket] = 16-bit(staging + residual); residual = what rounding dropped.
  void encode(const Bucket& b);
  void record_completions(int count, const int* indices);
  // Every bucket, once downloaded, summed through the shared-memory window.
  void sum_on_node();
  // Waits for every bucket's allreduce.
  void wait_all_buckets();

  const Comm& comm_;
  HostMirror staging_;  // what MPI reduces: the gradients themselves on a host device
  Watchdog& watchdog_;
  std::vector<Bucket> buckets_;
  std::vector<int> bucket_of_layer_;   // -1 for layers without parameters
  std::vector<MPI_Request> requests_;  // one per bucket; MPI_REQUEST_NULL when not in flight
  std::vector<std::unique_ptr<DeviceEvent>> ready_;   // per bucket: its last layer's backward
  std::vector<std::unique_ptr<DeviceEvent>> copied_;  // per bucket: its download to the host
  int recorded_ = 0;  // buckets whose download was enqueued this step (a prefix: layout order)
  int started_ = 0;   // buckets started this step (a prefix of the recorded ones)
  Profiler* prof_ = nullptr;
  int32_t issue_name_ = 0;
  std::vector<int32_t> bucket_names_;
  std::vector<int64_t> issued_ns_;  // per bucket, while profiling
  std::vector<int> indices_;
  std::optional<HalfFormat> wire_format_;  // compression; nothing: buckets travel as f32
  std::vector<uint16_t> wire_;             // the buckets in 16 bits
  std::vector<float> residual_;            // error feedback
  std::unique_ptr<NodeSum> node_sum_;      // every rank on this node, f32: the sums go here
  Range node_range_;                       // what it sums: every bucket, one range
  int32_t node_sum_name_ = 0;
};

}  // namespace hpdl
