// The timeline and the allreduce buckets of a profiled run, from its per-rank Chrome traces
// (trace/rank<R>.json; their clocks are already aligned to rank 0's). The page draws a few
// consecutive steps of every rank; a run of 16 ranks and 1,000 steps stays light because
// only that window is kept, in a compact form: [rank, start ms, duration ms, kind, name].
#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "hpdl/report/report_data.hpp"
#include "toml_keys.hpp"

namespace hpdl {
namespace {

using nlohmann::json;

struct Span {
  double t0, t1;  // microseconds
  int64_t step;
  std::string cat, name;
};

std::vector<Span> read_rank(const std::string& path) {
  std::vector<Span> out;
  const json t = json::parse(file_text(path), nullptr, false);
  if (t.is_discarded() || !t.contains("traceEvents")) return out;
  for (const json& e : t["traceEvents"]) {
    if (e.value("ph", "") != "X" || !e.contains("args") || !e["args"].contains("step")) continue;
    const double t0 = e.value("ts", 0.0);
    out.push_back({t0, t0 + e.value("dur", 0.0), e["args"]["step"].get<int64_t>(),
                   e.value("cat", ""), e.value("name", "")});
  }
  return out;
}

double overlap(double a0, double a1, double b0, double b1) {
  return std::max(0.0, std::min(a1, b1) - std::max(a0, b0));
}

// Per (rank, step): the backward pass's extent; each allreduce bucket's time and the part
// of it inside that extent.
json buckets_of(const std::vector<std::vector<Span>>& ranks) {
  double total = 0, hidden = 0;
  std::map<size_t, std::pair<double, double>> by_bucket;  // index in its step -> (ms, hidden)
  std::map<size_t, int> seen;
  std::string name;
  int64_t steps = 0;
  for (const auto& spans : ranks) {
    std::map<int64_t, std::pair<double, double>> bwd;  // step -> extent
    for (const Span& s : spans)
      if (s.cat == "backward") {
        auto [it, fresh] = bwd.try_emplace(s.step, s.t0, s.t1);
        if (!fresh)
          it->second = {std::min(it->second.first, s.t0), std::max(it->second.second, s.t1)};
      }
    std::map<int64_t, size_t> index;
    std::set<int64_t> with_buckets;
    for (const Span& s : spans) {
      if (s.cat != "allreduce") continue;
      name = s.name;
      with_buckets.insert(s.step);
      const auto b = bwd.find(s.step);
      const double in = b == bwd.end() ? 0 : overlap(s.t0, s.t1, b->second.first, b->second.second);
      total += s.t1 - s.t0, hidden += in;
      auto& slot = by_bucket[index[s.step]++];
      slot.first += (s.t1 - s.t0) / 1e3, slot.second += in / 1e3;
      ++seen[index[s.step] - 1];
    }
    steps += int64_t(with_buckets.size());
  }
  if (total <= 0) return nullptr;
  json rows = json::array();
  for (auto& [k, v] : by_bucket)
    rows.push_back(
        {{"bucket", k}, {"mean_ms", v.first / seen[k]}, {"hidden_ms", v.second / seen[k]}});
  return {{"name", name},
          {"per_step_ms", total / 1e3 / double(std::max<int64_t>(steps, 1))},
          {"hidden_share", hidden / total},
          {"buckets", rows}};
}

}  // namespace

nlohmann::json timeline_data(const std::string& dir, size_t max_spans) {
  std::vector<std::vector<Span>> ranks;
  for (int r = 0;; ++r) {
    const std::string path = dir + "/trace/rank" + std::to_string(r) + ".json";
    if (!std::filesystem::exists(path)) break;
    ranks.push_back(read_rank(path));
  }
  // The steps of the first rank that recorded any (a parameter server's rank 0 serves and
  // records none; its row stays empty).
  std::set<int64_t> steps;
  for (const auto& spans : ranks) {
    for (const Span& s : spans) steps.insert(s.step);
    if (!steps.empty()) break;
  }
  if (steps.empty()) return json::object();
  // A window of up to 3 consecutive recorded steps from the middle of the recording (the
  // first steps carry warm-up effects), shrunk until every rank's spans fit the budget.
  const std::vector<int64_t> all(steps.begin(), steps.end());
  size_t width = std::min<size_t>(3, all.size());
  const size_t per_event_step = [&] {
    size_t most = 0;
    for (const auto& spans : ranks) most = std::max(most, spans.size());
    return most / std::max<size_t>(all.size(), 1) + 1;
  }();
  while (width > 1 && width * per_event_step * ranks.size() > max_spans) --width;
  const size_t first = (all.size() - width) / 2;
  const int64_t lo = all[first], hi = all[first + width - 1];
  double origin = 1e300;
  for (const auto& spans : ranks)
    for (const Span& s : spans)
      if (s.step >= lo && s.step <= hi) origin = std::min(origin, s.t0);
  std::vector<std::string> kinds, names;
  std::map<std::string, size_t> kind_id, name_id;
  auto id = [](std::map<std::string, size_t>& ids, std::vector<std::string>& list,
               const std::string& text) {
    auto [it, fresh] = ids.try_emplace(text, list.size());
    if (fresh) list.push_back(text);
    return it->second;
  };
  json spans = json::array();
  const size_t per_rank = max_spans / ranks.size();
  for (size_t r = 0; r < ranks.size(); ++r) {
    size_t kept = 0;
    for (const Span& s : ranks[r]) {
      if (s.step < lo || s.step > hi || s.cat == "step" || s.t1 <= s.t0) continue;
      if (++kept > per_rank) break;
      const auto round3 = [](double ms) { return double(int64_t(ms * 1e3 + 0.5)) / 1e3; };
      spans.push_back({r, round3((s.t0 - origin) / 1e3), round3((s.t1 - s.t0) / 1e3),
                       id(kind_id, kinds, s.cat), id(name_id, names, s.name)});
    }
  }
  return {{"ranks", ranks.size()},
          {"steps", {lo, hi}},
          {"recorded_steps", all.size()},
          {"kinds", kinds},
          {"names", names},
          {"spans", spans},
          {"allreduce", buckets_of(ranks)}};
}

}  // namespace hpdl
