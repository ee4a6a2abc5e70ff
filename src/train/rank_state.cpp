#include "hpdl/train/rank_state.hpp"

namespace hpdl {
namespace {
constexpr int kTagRankState = 41;
std::string key(int rank, const std::string& name) {
  return "rank" + std::to_string(rank) + "." + name;
}
}  // namespace

void gather_rank_state(const Comm& comm, const RankState& own, Checkpoint& c) {
  if (comm.rank() != 0) {
    for (const auto& [name, v] : own)
      comm.send(v.data(), static_cast<int64_t>(v.size()), 0, kTagRankState);
    return;
  }
  for (const auto& [name, v] : own) c.buffers.push_back({key(0, name), v});
  for (int r = 1; r < comm.size(); ++r) {
    for (const auto& [name, v] : own) {  // every rank's state has rank 0's sizes
      std::vector<float> theirs(v.size());
      comm.recv(theirs.data(), static_cast<int64_t>(theirs.size()), r, kTagRankState);
      c.buffers.push_back({key(r, name), std::move(theirs)});
    }
  }
}

const std::vector<float>* saved_rank_state(const Comm& comm, const Checkpoint& c,
                                           const std::string& name) {
  return c.buffer(key(comm.rank(), name));
}

}  // namespace hpdl
