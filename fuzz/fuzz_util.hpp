// Shared by the libFuzzer harnesses: each input is written to files in a private temporary
// folder (hpdl's readers take paths), and only hpdl::Error is an expected outcome: any
// other exception, a crash, a leak, undefined behaviour or an allocation past libFuzzer's
// -rss_limit_mb is a finding.
#pragma once
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>

namespace hpdl_fuzz {

// A folder of this process, created on first use, removed at exit.
struct Workdir {
  std::string path =
      std::filesystem::temp_directory_path().string() + "/hpdl_fuzz_" + std::to_string(::getpid());
  Workdir() { std::filesystem::create_directories(path); }
  ~Workdir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

inline const std::string& workdir() {
  static const Workdir dir;
  return dir.path;
}

inline std::string write(const std::string& name, const uint8_t* data, size_t size) {
  const std::string path = workdir() + "/" + name;
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  return path;
}

// Splits an input in two at a position taken from its first two bytes.
inline void split(const uint8_t* data, size_t size, const uint8_t** a, size_t* na,
                  const uint8_t** b, size_t* nb) {
  if (size < 2) {
    *a = *b = data, *na = *nb = 0;
    return;
  }
  const size_t cut = (size_t(data[0]) | size_t(data[1]) << 8) % (size - 1);
  *a = data + 2, *na = cut;
  *b = data + 2 + cut, *nb = size - 2 - cut;
}

}  // namespace hpdl_fuzz
