// What `hpdl report` reads: configurations compared key by key, the timeline kept within its
// budget for a large run, allreduce overlap worked out by hand, and what is not a run.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "hpdl/core/error.hpp"
#include "hpdl/report/report_data.hpp"

namespace hpdl {
namespace {

namespace fs = std::filesystem;

// A scratch run directory with a trace/ folder, removed with the object. Per process: CTest
// runs this binary under several kernel settings at once.
struct FreshDir {
  explicit FreshDir(const std::string& name)
      : path(fs::temp_directory_path() / ("hpdl_report_" + name + "_" + std::to_string(getpid()))) {
    fs::remove_all(path);
    fs::create_directories(path / "trace");
  }
  ~FreshDir() { fs::remove_all(path); }
  fs::path path;
};

// A Chrome trace of one rank: per step, a forward and a backward span, and an allreduce
// bucket on the communication track that starts in the backward pass's last 1 ms.
void write_rank(const fs::path& dir, int rank, int steps) {
  std::ofstream out(dir / "trace" / ("rank" + std::to_string(rank) + ".json"));
  out << "{\"traceEvents\":[{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" << rank << "}";
  for (int s = 0; s < steps; ++s) {
    const double t = 10000.0 * s;
    out << ",{\"name\":\"fwd dense1\",\"cat\":\"forward\",\"ph\":\"X\",\"ts\":" << t
        << ",\"dur\":2000,\"pid\":" << rank << ",\"tid\":0,\"args\":{\"step\":" << s << "}}"
        << ",{\"name\":\"bwd dense1\",\"cat\":\"backward\",\"ph\":\"X\",\"ts\":" << t + 2000
        << ",\"dur\":4000,\"pid\":" << rank << ",\"tid\":0,\"args\":{\"step\":" << s << "}}"
        << ",{\"name\":\"allreduce\",\"cat\":\"allreduce\",\"ph\":\"X\",\"ts\":" << t + 5000
        << ",\"dur\":3000,\"pid\":" << rank << ",\"tid\":1,\"args\":{\"step\":" << s << "}}";
  }
  out << "]}";
}

TEST(ReportData, ConfigDifferencesNameEveryKeyThatDiffers) {
  const std::string a =
      "[train]\nbatch = 64\nepochs = 3\n[[model.layers]]\ntype = 'dense'\nunits = 16\n"
      "[[model.layers]]\ntype = 'relu'\n";
  const std::string b =
      "[train]\nbatch = 32\nepochs = 3\n[[model.layers]]\ntype = 'dense'\nunits = 32\n"
      "[[model.layers]]\ntype = 'tanh'\n[optimizer]\nname = 'sgd'\n";
  const nlohmann::json d = config_differences(a, b);
  ASSERT_EQ(d.size(), 4u) << d.dump();
  EXPECT_EQ(d[0], nlohmann::json({"model.layers.0.units", "16", "32"}));
  EXPECT_EQ(d[1], nlohmann::json({"model.layers.1.type", "'relu'", "'tanh'"}));
  EXPECT_EQ(d[2], nlohmann::json({"optimizer.name", "", "'sgd'"}));
  EXPECT_EQ(d[3], nlohmann::json({"train.batch", "64", "32"}));
  EXPECT_TRUE(config_differences(a, a).empty());
}

TEST(ReportData, TimelineOfALargeRunStaysWithinItsBudget) {
  const FreshDir dir("large");
  const fs::path& d = dir.path;
  for (int r = 0; r < 16; ++r) write_rank(d, r, 1000);
  const nlohmann::json t = timeline_data(d.string(), 6000);
  EXPECT_EQ(t["ranks"], 16);
  EXPECT_EQ(t["recorded_steps"], 1000);
  // 3 spans a step and rank: 3 steps of 16 ranks fit 6,000 spans.
  EXPECT_EQ(t["spans"].size(), 16u * 3u * 3u);
  EXPECT_EQ(t["steps"], nlohmann::json({498, 500}));  // from the middle
  // A budget of 100 spans: one step (48 spans), not cut within a rank.
  const nlohmann::json small = timeline_data(d.string(), 100);
  EXPECT_EQ(small["steps"][0], small["steps"][1]);
  EXPECT_EQ(small["spans"].size(), 16u * 3u);
}

TEST(ReportData, AllreduceOverlapIsThePartInsideBackward) {
  const FreshDir dir("overlap");
  const fs::path& d = dir.path;
  write_rank(d, 0, 4);
  const nlohmann::json a = timeline_data(d.string())["allreduce"];
  // Backward runs 2..6 ms of the step, the bucket 5..8 ms: 1 of its 3 ms overlapped.
  EXPECT_NEAR(a["per_step_ms"].get<double>(), 3.0, 1e-9);
  EXPECT_NEAR(a["hidden_share"].get<double>(), 1.0 / 3.0, 1e-9);
  ASSERT_EQ(a["buckets"].size(), 1u);
  EXPECT_NEAR(a["buckets"][0]["hidden_ms"].get<double>(), 1.0, 1e-9);
}

TEST(ReportData, WithoutTracesTheTimelineIsEmptyAndANonRunIsRefused) {
  const FreshDir dir("empty");
  const fs::path& d = dir.path;
  EXPECT_FALSE(timeline_data(d.string()).contains("ranks"));
  try {
    run_data(d.string());
    FAIL() << "a directory without manifest.json was read as a run";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is not an hpdl run directory: it has no manifest.json"),
              std::string::npos)
        << e.what();
  }
  std::ofstream(d / "manifest.json") << "[1, 2]";
  EXPECT_THROW(run_data(d.string()), Error);
}

}  // namespace
}  // namespace hpdl
