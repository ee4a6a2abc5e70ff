// The run directory's log on a full disk (run/run_dir.hpp): a line the disk cut short leaves
// part of itself (stdio drops the rest), so the line after it, the run's "error: ..." once the
// reserve is freed, must start a line of its own, where `grep '^error:'` and a person look.
// On a 256 KiB tmpfs; skipped where one cannot be mounted (not root).
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "hpdl/run/run_dir.hpp"

using namespace hpdl;

namespace {

struct SmallDisk {
  std::string path;
  bool mounted = false;
  SmallDisk() {
    char tmpl[] = "/tmp/hpdl_small_disk_XXXXXX";
    if (::mkdtemp(tmpl)) path = tmpl;
    mounted = !path.empty() && ::mount("tmpfs", path.c_str(), "tmpfs", 0, "size=256k") == 0;
  }
  ~SmallDisk() {
    if (mounted) ::umount(path.c_str());
    if (!path.empty()) ::rmdir(path.c_str());
  }
};

// Fills what is left of the disk at `path`.
void fill(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr);
  const std::string page(4096, 'f');
  while (std::fwrite(page.data(), 1, page.size(), f) == page.size() && std::fflush(f) == 0) {
  }
  std::fclose(f);
}

}  // namespace

TEST(RunDirLog, TheLineAfterOneTheDiskCutStartsALineOfItsOwn) {
  SmallDisk disk;
  if (!disk.mounted) GTEST_SKIP() << "cannot mount a small tmpfs (not root?)";
  {
    RunDir dir(disk.path + "/run", false);
    dir.open();
    dir.log("first line");                       // log.txt's first page, mostly free
    fill(disk.path + "/filler");                 // no page left on the disk
    dir.log("epoch " + std::string(6000, '.'));  // fills the page, then cut short
    dir.free_reserve();
    dir.log("error: the run failed");
    std::ifstream in(dir.file("log.txt"));
    std::string line;
    bool found = false;
    while (std::getline(in, line)) found = found || line == "error: the run failed";
    EXPECT_TRUE(found) << "no line of its own for the error";
  }
  std::filesystem::remove(disk.path + "/filler");
  std::filesystem::remove_all(disk.path + "/run");
}
