// The table, CSV, SVG and predicted trace of `hpdl predict` (see the header).
#include "hpdl/predict/prediction_output.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "hpdl/predict/batch_split.hpp"

namespace hpdl {

namespace {

// "11.2-14.1": the step's range in ms (predict_with_band), "-" where none was computed.
std::string range(const Prediction& r) {
  if (r.step_s_high <= 0) return "-";
  char s[48];
  std::snprintf(s, sizeof s, "%.3f-%.3f", r.step_s_low * 1e3, r.step_s_high * 1e3);
  return s;
}

}  // namespace

std::string prediction_table(const StepProfile& p, const std::vector<Prediction>& rows) {
  char line[512];
  if (p.async()) {
    std::string out = "predicted from " + p.name + " (" + word(p.mode) + ", " +
                      std::to_string(p.ranks) + " rank(s), " + std::to_string(p.servers) +
                      " server(s), batch " + std::to_string(p.global_batch) +
                      " per worker, n_fetch " + std::to_string(p.n_fetch) + ", n_push " +
                      std::to_string(p.n_push) + ")\n";
    if (p.mode == DistMode::kDcAsgd)
      out +=
          "note: DC-ASGD takes Downpour's path (the server applies the rule) and is costed "
          "alike; validated for Downpour only\n";
    out +=
        " ranks workers  step ms  range ms          samples/s   effic.  compute ms  pull+push ms  "
        "staleness  bottleneck\n";
    for (const auto& r : rows) {
      std::snprintf(line, sizeof line,
                    "%6d %7d %8.3f %-17s %11.1f %7.1f%% %11.3f %13.3f %10.1f  %s%s\n", r.ranks,
                    r.workers, r.step_s * 1e3, range(r).c_str(), r.samples_per_s,
                    100 * r.efficiency, r.compute_s * 1e3, r.exposed_s * 1e3, r.staleness,
                    r.bottleneck.c_str(), r.oversubscribed ? " (cores shared)" : "");
      out += line;
    }
    return out;
  }
  std::string out =
      "predicted from " + p.name + " (" + std::to_string(p.ranks) + " rank(s), batch " +
      std::to_string(p.global_batch) + " global, strong scaling" +
      (p.call_batch > 0
           ? "; each call's cost measured at batch " + std::to_string(p.call_batch) + " as well"
           : "") +
      ")\n";
  out +=
      " ranks  hosts   step ms  range ms            samples/s   effic.  compute ms  comm ms  "
      "exposed ms  bottleneck\n";
  for (const auto& r : rows) {
    std::snprintf(line, sizeof line,
                  "%6d %6d %9.3f %-19s %11.1f %7.1f%% %11.3f %8.3f %11.3f  %s%s\n", r.ranks,
                  r.hosts, r.step_s * 1e3, range(r).c_str(), r.samples_per_s, 100 * r.efficiency,
                  r.compute_s * 1e3, r.comm_s * 1e3, r.exposed_s * 1e3, r.bottleneck.c_str(),
                  r.oversubscribed ? " (cores shared)" : "");
    out += line;
  }
  return out;
}

std::string prediction_csv(const std::vector<Prediction>& rows) {
  std::ostringstream os;
  os << "ranks,hosts,step_s,step_s_low,step_s_high,samples_per_s,efficiency,compute_s,"
        "straggler_factor,comm_s,hidden_s,"
        "exposed_s,"
        "oversubscribed,workers,staleness,bottleneck\n";
  for (const auto& r : rows)
    os << r.ranks << "," << r.hosts << "," << r.step_s << "," << r.step_s_low << ","
       << r.step_s_high << "," << r.samples_per_s << "," << r.efficiency << "," << r.compute_s
       << "," << r.straggler_factor << "," << r.comm_s << "," << r.hidden_s << "," << r.exposed_s
       << "," << r.oversubscribed << "," << r.workers << "," << r.staleness << ",\"" << r.bottleneck
       << "\"\n";
  return os.str();
}

std::string prediction_svg(const std::vector<Prediction>& rows) {
  // samples/s (left axis) and efficiency (right axis) against log2(ranks).
  const double W = 640, H = 400, L = 70, R = 70, T = 30, B = 50;
  double max_sps = 1, max_x = 1;
  for (const auto& r : rows)
    max_sps = std::max(max_sps, r.samples_per_s),
    max_x = std::max(max_x, std::log2(double(r.ranks)));
  auto X = [&](int ranks) { return L + (W - L - R) * std::log2(double(ranks)) / max_x; };
  auto Ys = [&](double s) { return H - B - (H - B - T) * s / max_sps; };
  auto Ye = [&](double e) { return H - B - (H - B - T) * std::min(e, 1.2) / 1.2; };
  std::ostringstream os;
  os << "<svg xmlns='http://www.w3.org/2000/svg' width='" << W << "' height='" << H
     << "' font-family='sans-serif' font-size='12'>\n";
  os << "<rect width='100%' height='100%' fill='white'/>\n";
  os << "<line x1='" << L << "' y1='" << H - B << "' x2='" << W - R << "' y2='" << H - B
     << "' stroke='black'/>\n";
  os << "<line x1='" << L << "' y1='" << T << "' x2='" << L << "' y2='" << H - B
     << "' stroke='black'/>\n";
  os << "<line x1='" << W - R << "' y1='" << T << "' x2='" << W - R << "' y2='" << H - B
     << "' stroke='black'/>\n";
  std::string sps, eff;
  for (const auto& r : rows) {
    sps += std::to_string(X(r.ranks)) + "," + std::to_string(Ys(r.samples_per_s)) + " ";
    eff += std::to_string(X(r.ranks)) + "," + std::to_string(Ye(r.efficiency)) + " ";
    os << "<text x='" << X(r.ranks) << "' y='" << H - B + 16 << "' text-anchor='middle'>" << r.ranks
       << "</text>\n";
  }
  os << "<polyline fill='none' stroke='#1f77b4' stroke-width='2' points='" << sps << "'/>\n";
  os << "<polyline fill='none' stroke='#d62728' stroke-width='2' stroke-dasharray='6,3' points='"
     << eff << "'/>\n";
  os << "<text x='" << W / 2 << "' y='" << H - 12 << "' text-anchor='middle'>ranks</text>\n";
  os << "<text x='12' y='" << T - 10 << "' fill='#1f77b4'>samples/s (max "
     << static_cast<int64_t>(max_sps) << ")</text>\n";
  os << "<text x='" << W - R - 120 << "' y='" << T - 10
     << "' fill='#d62728'>efficiency (0..1.2)</text>\n";
  os << "</svg>\n";
  return os.str();
}

nlohmann::json predicted_trace(const StepProfile& profile, const Prediction& at) {
  const StepProfile p = at_batch(profile, double(profile.global_batch) / at.ranks);
  nlohmann::json ev = nlohmann::json::array();
  double t = 0;
  auto add = [&](const std::string& name, const char* cat, double start_s, double dur_s, int tid) {
    ev.push_back({{"name", name},
                  {"cat", cat},
                  {"ph", "X"},
                  {"pid", 0},
                  {"tid", tid},
                  {"ts", start_s * 1e6},
                  {"dur", dur_s * 1e6}});
  };
  if (p.async()) {  // one worker's step: its compute, then its pulls and pushes (and waits)
    add("worker compute", "compute", 0, at.compute_s, 0);
    add("pull + push", "comm", at.compute_s, at.step_s - at.compute_s, 1);
    return {{"traceEvents", ev},
            {"displayTimeUnit", "ms"},
            {"metadata",
             {{"predicted_ranks", at.ranks}, {"workers", at.workers}, {"step_s", at.step_s}}}};
  }
  add("data", "data", t, p.data_s, 0), t += p.data_s;
  for (size_t i = 0; i < p.layers.size(); ++i)
    add(p.layers[i], "forward", t, p.forward_s[i], 0), t += p.forward_s[i];
  add("loss", "loss", t, p.loss_s, 0), t += p.loss_s;
  std::vector<double> done(p.layers.size(), t);
  for (size_t i = p.layers.size(); i-- > 0;) {
    add(p.layers[i], "backward", t, p.backward_s[i], 0);
    t += p.backward_s[i];
    done[i] = t;
  }
  // Buckets one after another on the communication track, each from when it is complete.
  double comm = 0;
  for (size_t k = 0; k < at.buckets.size(); ++k) {
    const int last = p.bucket_last_layer[k];
    const double ready = last < static_cast<int>(done.size()) ? done[last] : t;
    const double start = std::max(ready, comm), dur = at.buckets[k].seconds;
    add("allreduce bucket " + std::to_string(k), "allreduce", start, dur, 1);
    comm = start + dur;
  }
  const double end = std::max(t, t + at.exposed_s);
  add("update", "update", end, p.update_s, 0);
  return {{"traceEvents", ev},
          {"displayTimeUnit", "ms"},
          {"metadata", {{"predicted_ranks", at.ranks}, {"step_s", at.step_s}}}};
}

}  // namespace hpdl
