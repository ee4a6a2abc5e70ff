// Gathering and writing traces (see the header). All of this runs after training.
#include "hpdl/profile/trace_writer.hpp"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <sstream>

#include "hpdl/core/atomic_file.hpp"
#include "hpdl/core/error.hpp"
#include "hpdl/core/output_file.hpp"
#include "hpdl/profile/trace_csv.hpp"

namespace hpdl {
namespace {

struct RankTrace {
  std::vector<TraceEvent> events;
  std::vector<std::string> names, categories;
  int64_t offset_ns = 0, dropped = 0;
  std::vector<int64_t> walls;
};

std::string pack(const Profiler& prof, int64_t offset_ns) {
  nlohmann::json meta = {{"names", prof.names()},
                         {"walls", prof.step_walls()},
                         {"categories", prof.categories()},
                         {"offset_ns", offset_ns},
                         {"dropped", prof.dropped()}};
  const std::string m = meta.dump();
  const uint64_t mlen = m.size();
  std::string out(sizeof mlen, '\0');
  std::memcpy(out.data(), &mlen, sizeof mlen);
  out += m;
  out.append(reinterpret_cast<const char*>(prof.events().data()),
             prof.events().size() * sizeof(TraceEvent));
  return out;
}

RankTrace unpack(const std::string& s) {
  uint64_t mlen = 0;
  std::memcpy(&mlen, s.data(), sizeof mlen);
  const auto meta = nlohmann::json::parse(s.substr(sizeof mlen, mlen));
  RankTrace t;
  t.names = meta["names"].get<std::vector<std::string>>();
  t.categories = meta["categories"].get<std::vector<std::string>>();
  t.offset_ns = meta["offset_ns"];
  t.dropped = meta["dropped"];
  t.walls = meta["walls"].get<std::vector<int64_t>>();
  const size_t at = sizeof mlen + mlen;
  t.events.resize((s.size() - at) / sizeof(TraceEvent));
  std::memcpy(t.events.data(), s.data() + at, t.events.size() * sizeof(TraceEvent));
  return t;
}

// "fwd conv1" / "bwd conv1"; other names as they are.
std::string display_name(const RankTrace& t, int32_t id) {
  const std::string& c = t.categories[id];
  if (c == "forward") return "fwd " + t.names[id];
  if (c == "backward") return "bwd " + t.names[id];
  return t.names[id];
}

void append_events(std::string& out, const RankTrace& t, int rank, int64_t origin_ns, bool& first) {
  char buf[512];
  auto sep = [&] {
    if (!first) out += ",\n";
    first = false;
  };
  std::snprintf(
      buf, sizeof buf,
      "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":\"rank %d\"}},\n"
      "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":0,\"args\":{\"name\":\"compute\"}}"
      ",\n"
      "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":1,\"args\":{\"name\":"
      "\"communication\"}}",
      rank, rank, rank, rank);
  sep();
  out += buf;
  std::vector<std::string> quoted;  // JSON-escaped display names, once per id
  for (size_t id = 0; id < t.names.size(); ++id)
    quoted.push_back(nlohmann::json(display_name(t, static_cast<int32_t>(id))).dump());
  for (const TraceEvent& e : t.events) {
    const double ts = (e.t0_ns - t.offset_ns - origin_ns) / 1e3;
    const double dur = (e.t1_ns - e.t0_ns) / 1e3;
    std::snprintf(buf, sizeof buf,
                  "{\"name\":%s,\"cat\":\"%s\",\"ph\":\"X\",\"ts\":%.3f,\"dur\":%.3f,\"pid\":%d,"
                  "\"tid\":%d,\"args\":{\"step\":%lld}}",
                  quoted[e.name].c_str(), t.categories[e.name].c_str(), ts, dur, rank, e.track,
                  static_cast<long long>(e.step));
    sep();
    out += buf;
  }
}

int64_t write_json(const std::string& path, const std::string& events,
                   const nlohmann::json& manifest) {
  const std::string text = "{\"displayTimeUnit\":\"ms\",\"otherData\":" + manifest.dump() +
                           ",\n\"traceEvents\":[\n" + events + "\n]}\n";
  write_file_atomically(path, text);
  return static_cast<int64_t>(text.size());
}

}  // namespace

Stats stats_of(std::vector<double> v) {
  Stats s;
  s.n = v.size();
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  double sum = 0, sq = 0;
  for (double x : v) sum += x;
  s.mean = sum / v.size();
  for (double x : v) sq += (x - s.mean) * (x - s.mean);
  s.std = std::sqrt(sq / v.size());
  s.p50 = v[(v.size() - 1) / 2];
  s.p95 = v[static_cast<size_t>(std::ceil(0.95 * v.size())) - 1];
  return s;
}

int64_t clock_offset_to_root(const Comm& comm) {
  constexpr int kRounds = 16, kTag = 7401;
  int64_t offset = 0, best_rtt = INT64_MAX;
  for (int r = 1; r < comm.size(); ++r) {
    for (int k = 0; k < kRounds; ++k) {
      if (comm.rank() == 0) {
        int64_t ping = 0;
        comm.recv(&ping, 1, r, kTag);
        const int64_t t = Profiler::now();
        comm.send(&t, 1, r, kTag);
      } else if (comm.rank() == r) {
        const int64_t t1 = Profiler::now();
        int64_t t_root = 0;
        comm.send(&t1, 1, 0, kTag);
        comm.recv(&t_root, 1, 0, kTag);
        const int64_t t2 = Profiler::now();
        if (t2 - t1 < best_rtt) best_rtt = t2 - t1, offset = (t1 + t2) / 2 - t_root;
      }
    }
  }
  return offset;
}

GatheredTraces gather_traces(const Comm& comm, const Profiler& prof) {
  const int64_t offset = clock_offset_to_root(comm);
  const std::string mine = pack(prof, offset);
  GatheredTraces g;
  g.bytes = static_cast<int64_t>(mine.size());
  comm.allreduce_sum(&g.bytes, 1);
  g.packed = comm.gather(mine, 0);
  g.step_name = prof.step_name();
  return g;
}

GatheredTraces local_traces(const Profiler& prof) {
  GatheredTraces g;
  g.packed = {pack(prof, 0)};
  g.bytes = static_cast<int64_t>(g.packed[0].size());
  g.step_name = prof.step_name();
  return g;
}

TraceSummary write_traces(const GatheredTraces& gathered, const std::string& dir,
                          const nlohmann::json& manifest,
                          const std::map<std::string, LayerWork>& work) {
  TraceSummary sum;
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<RankTrace> ranks;
  for (const auto& p : gathered.packed) ranks.push_back(unpack(p));

  int64_t origin = INT64_MAX;
  for (const auto& t : ranks)
    for (const auto& e : t.events) origin = std::min(origin, e.t0_ns - t.offset_ns);
  if (origin == INT64_MAX) origin = 0;

  make_output_dir(dir + "/trace");
  std::string merged;
  bool merged_first = true;
  for (size_t r = 0; r < ranks.size(); ++r) {
    std::string one;
    bool first = true;
    append_events(one, ranks[r], static_cast<int>(r), origin, first);
    sum.bytes += write_json(dir + "/trace/rank" + std::to_string(r) + ".json", one, manifest);
    append_events(merged, ranks[r], static_cast<int>(r), origin, merged_first);
    sum.events += static_cast<int64_t>(ranks[r].events.size());
    sum.dropped += ranks[r].dropped;
  }
  sum.bytes += write_json(dir + "/trace/merged.json", merged, manifest);

  // Per-layer durations per (rank, step), and the per-step accounting.
  const std::vector<std::string>& parts = kStepParts;
  std::vector<std::string> layer_order;
  std::map<std::string, std::vector<double>> fwd, bwd;
  std::ostringstream steps;
  const std::vector<std::string> columns = step_columns();
  for (size_t c = 0; c < columns.size(); ++c) steps << (c ? "," : "") << columns[c];
  steps << "\n";
  double ratio_sum = 0;
  sum.attributed_min = 1;
  for (size_t r = 0; r < ranks.size(); ++r) {
    const RankTrace& t = ranks[r];
    for (size_t id = 0; id < t.names.size(); ++id)
      if (t.categories[id] == "forward" &&
          std::find(layer_order.begin(), layer_order.end(), t.names[id]) == layer_order.end())
        layer_order.push_back(t.names[id]);
    struct StepAcc {
      double wall = 0, attributed = 0;
      std::map<std::string, double> part, fwd, bwd;
    };
    std::map<int64_t, StepAcc> acc;
    for (const TraceEvent& e : t.events) {
      const std::string& cat = t.categories[e.name];
      const double us = (e.t1_ns - e.t0_ns) / 1e3;
      StepAcc& a = acc[e.step];
      if (e.name == gathered.step_name) {
        a.wall = us;
        continue;
      }
      if (e.track != static_cast<int32_t>(Track::kCompute) || cat == "rma wait") continue;
      a.attributed += us;
      a.part[cat] += us;
      if (cat == "forward") a.fwd[t.names[e.name]] += us;
      if (cat == "backward") a.bwd[t.names[e.name]] += us;
    }
    for (const auto& [step, a] : acc) {
      if (a.wall <= 0) continue;  // a step whose end was not recorded
      for (const auto& [name, us] : a.fwd) fwd[name].push_back(us);
      for (const auto& [name, us] : a.bwd) bwd[name].push_back(us);
      steps << r << "," << step << "," << a.wall << "," << a.attributed << ","
            << a.wall - a.attributed;
      for (const auto& p : parts) {
        const auto it = a.part.find(p);
        steps << "," << (it == a.part.end() ? 0.0 : it->second);
      }
      steps << "\n";
      const double ratio = a.attributed / a.wall;
      ratio_sum += ratio;
      sum.attributed_min = std::min(sum.attributed_min, ratio);
      ++sum.steps;
    }
  }
  sum.attributed_mean = sum.steps ? ratio_sum / sum.steps : 0;
  std::vector<double> recorded, unrecorded;
  for (const auto& t : ranks)
    for (int64_t w : t.walls) (w >= 0 ? recorded : unrecorded).push_back(std::abs(w) / 1e3);
  sum.recorded_step_us = stats_of(recorded).p50;
  sum.unrecorded_step_us = stats_of(unrecorded).p50;
  if (sum.unrecorded_step_us > 0) sum.overhead = sum.recorded_step_us / sum.unrecorded_step_us - 1;
  if (!sum.steps) sum.attributed_min = 0;

  std::ostringstream layers;
  for (size_t c = 0; c < kLayerColumns.size(); ++c) layers << (c ? "," : "") << kLayerColumns[c];
  layers << "\n";
  for (const auto& name : layer_order) {
    const Stats f = stats_of(fwd[name]), b = stats_of(bwd[name]);
    const auto it = work.find(name);
    const LayerWork w = it == work.end() ? LayerWork{} : it->second;
    layers << name << "," << f.mean << "," << f.p50 << "," << f.p95 << "," << f.std << "," << b.mean
           << "," << b.p50 << "," << b.p95 << "," << b.std << "," << f.n << ","
           << w.forward.flops / 1e9 << "," << w.backward.flops / 1e9 << "," << w.forward.bytes / 1e6
           << "," << w.backward.bytes / 1e6 << "\n";
  }
  write_file_atomically(dir + "/layers.csv", layers.str());
  write_file_atomically(dir + "/steps.csv", steps.str());
  sum.write_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return sum;
}

}  // namespace hpdl
