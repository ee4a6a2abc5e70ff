// The parameter-server checkpoint protocol (see the header).
#include "hpdl/train/ps_checkpoint.hpp"

#include <algorithm>

#include "hpdl/core/error.hpp"

namespace hpdl {
namespace {
// Point-to-point tags of the protocol: a worker's header (state and buffer names), then
// each buffer in the header's order.
constexpr int kTagHeader = 21;
constexpr int kTagBuffer = 22;

std::string worker_key(int k) { return "worker" + std::to_string(k); }
}  // namespace

void send_worker(const Comm& comm, const WorkerState& w, const std::vector<NamedValues>& buffers) {
  nlohmann::json names = nlohmann::json::array();
  for (const NamedValues& b : buffers) names.push_back(b.name);
  comm.send(nlohmann::json{{"state", w}, {"buffers", names}}.dump(), 0, kTagHeader);
  for (const NamedValues& b : buffers)
    comm.send(b.values.data(), static_cast<int64_t>(b.values.size()), 0, kTagBuffer);
}

std::vector<WorkerState> gather_workers(const Comm& comm, int first_worker, int64_t n,
                                        Checkpoint& c) {
  std::vector<WorkerState> out;
  for (int r = first_worker; r < comm.size(); ++r) {
    const nlohmann::json header = nlohmann::json::parse(comm.recv_string(r, kTagHeader));
    for (const auto& name : header.at("buffers")) {
      std::vector<float> v(static_cast<size_t>(n));
      comm.recv(v.data(), n, r, kTagBuffer);
      c.buffers.push_back(
          {worker_key(r - first_worker) + "." + name.get<std::string>(), std::move(v)});
    }
    out.push_back(header.at("state").get<WorkerState>());
    c.extra["workers"].push_back(header.at("state"));
  }
  return out;
}

WorkerState restore_worker(const Checkpoint& c, int k, const std::vector<NamedValues>& buffers) {
  const std::string key = worker_key(k);
  if (!c.extra.contains("workers") || static_cast<int>(c.extra["workers"].size()) <= k)
    throw AgreedError("checkpoint holds no state for parameter-server " + key);
  WorkerState w;
  try {
    w = c.extra["workers"][k].get<WorkerState>();
  } catch (const nlohmann::json::exception& e) {
    throw AgreedError("checkpoint's state of " + key + " is malformed: " + e.what());
  }
  for (const NamedValues& b : buffers) {
    const std::vector<float>* v = c.buffer(key + "." + b.name);
    if (!v || v->size() != b.values.size())
      throw AgreedError("checkpoint lacks " + key + "." + b.name + " of " +
                        std::to_string(b.values.size()) + " values");
    std::copy(v->begin(), v->end(), b.values.begin());
  }
  return w;
}

}  // namespace hpdl
