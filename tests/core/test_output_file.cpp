// Output files never follow a link planted in their place (core/output_file.hpp): every
// way hpdl creates a file (text files written atomically, HDF5 files written atomically,
// appended logs, emptied files, directories) refuses a link, whatever it points at, and
// leaves the file it points at as it was.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "hpdl/core/atomic_file.hpp"
#include "hpdl/core/error.hpp"
#include "hpdl/core/output_file.hpp"
#include "hpdl/data/h5_util.hpp"

using namespace hpdl;
namespace fs = std::filesystem;

namespace {

// A directory for one test holding a victim file outside the "run directory" run/.
struct LinkSite {
  LinkSite() {
    fs::remove_all(root);
    fs::create_directories(root / "run");
    std::ofstream(victim) << "victim's data\n";
  }
  ~LinkSite() { fs::remove_all(root); }
  std::string run(const std::string& name) const { return (root / "run" / name).string(); }
  std::string victim_text() const {
    std::ifstream in(victim);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  fs::path root = fs::temp_directory_path() / ("hpdl_links_" + std::to_string(getpid()));
  fs::path victim = root / "victim.txt";
};

template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(OutputFile, AtomicTextWriteRefusesALinkedTemporaryFile) {
  LinkSite s;
  fs::create_symlink(s.victim, s.run("manifest.json.tmp"));
  const std::string e = error_of([&] { write_file_atomically(s.run("manifest.json"), "{}\n"); });
  EXPECT_NE(e.find("manifest.json.tmp is a symbolic link"), std::string::npos) << e;
  EXPECT_EQ(s.victim_text(), "victim's data\n");
  EXPECT_FALSE(fs::exists(s.run("manifest.json")));
}

TEST(OutputFile, AtomicTextWriteReplacesALeftoverTemporaryFile) {
  LinkSite s;
  std::ofstream(s.run("config.toml.tmp")) << "left by a killed run, longer than the new text";
  write_file_atomically(s.run("config.toml"), "a = 1\n");
  std::ifstream in(s.run("config.toml"));
  std::string line;
  std::getline(in, line);
  EXPECT_EQ(line, "a = 1");
  EXPECT_FALSE(fs::exists(s.run("config.toml.tmp")));
}

TEST(OutputFile, AtomicHdf5WriteRefusesALinkedTemporaryFile) {
  LinkSite s;
  h5_quiet();
  for (const char* name : {"checkpoint.h5", "model.h5"}) {
    fs::create_symlink(s.victim, s.run(std::string(name) + ".tmp"));
    const float x = 1;
    const std::string e = error_of(
        [&] { h5_write_atomically(s.run(name), [&](hid_t f) { h5_write(f, "x", &x, {1}); }); });
    EXPECT_NE(e.find(std::string(name) + ".tmp is a symbolic link"), std::string::npos) << e;
    EXPECT_EQ(s.victim_text(), "victim's data\n") << name;
    EXPECT_FALSE(fs::exists(s.run(name))) << name;
  }
}

TEST(OutputFile, AppendAndTruncateRefuseALink) {
  LinkSite s;
  fs::create_symlink(s.victim, s.run("log.txt"));
  fs::create_symlink(s.root / "nothing-there", s.run("metrics.csv"));  // a dangling link
  for (const auto mode : {OutputMode::kAppend, OutputMode::kTruncate, OutputMode::kFresh}) {
    EXPECT_NE(error_of([&] { open_output(s.run("log.txt"), mode); }).find("is a symbolic link"),
              std::string::npos);
    EXPECT_NE(error_of([&] { open_output(s.run("metrics.csv"), mode); }).find("is a symbolic link"),
              std::string::npos);
  }
  EXPECT_EQ(s.victim_text(), "victim's data\n");
  EXPECT_FALSE(fs::exists(s.root / "nothing-there"));
}

TEST(OutputFile, DirectoryRefusesALinkAndAFile) {
  LinkSite s;
  fs::create_directory_symlink(s.root, s.run("trace"));
  EXPECT_NE(error_of([&] { make_output_dir(s.run("trace")); }).find("trace is a symbolic link"),
            std::string::npos);
  std::ofstream(s.run("plain")) << "x";
  EXPECT_NE(error_of([&] { make_output_dir(s.run("plain")); }).find("is not a directory"),
            std::string::npos);
  make_output_dir(s.run("new/deeper"));
  EXPECT_TRUE(fs::is_directory(s.run("new/deeper")));
}
