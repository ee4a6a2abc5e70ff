// Output files that never follow a planted link (see the header).
#include "hpdl/core/output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "hpdl/core/error.hpp"

namespace hpdl {

namespace {
[[noreturn]] void link_refused(const std::string& path) {
  throw Error(path + " is a symbolic link: hpdl does not write through links (remove it)");
}

bool is_link(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISLNK(st.st_mode);
}
}  // namespace

void refuse_link(const std::string& path) {
  if (is_link(path)) link_refused(path);
}

void remove_leftover(const std::string& path) {
  refuse_link(path);
  if (::unlink(path.c_str()) != 0 && errno != ENOENT)
    throw Error("cannot remove the leftover " + path + ": " + std::strerror(errno));
}

int open_output(const std::string& path, OutputMode mode) {
  int flags = O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC;
  if (mode == OutputMode::kFresh) {
    remove_leftover(path);
    flags |= O_EXCL;
  } else {
    flags |= mode == OutputMode::kAppend ? O_APPEND : O_TRUNC;
  }
  const int fd = ::open(path.c_str(), flags, 0644);
  if (fd >= 0) return fd;
  // O_NOFOLLOW fails with ELOOP on a link; O_EXCL with EEXIST on anything that appeared.
  if (errno == ELOOP || is_link(path)) link_refused(path);
  throw Error("cannot write " + path + ": " + std::strerror(errno));
}

void make_output_dir(const std::string& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    std::error_code ec;
    std::filesystem::create_directories(path, ec);
    if (ec) throw Error("cannot create directory " + path + ": " + ec.message());
    // A link may have been put there since the check: what is there must be a directory.
    if (::lstat(path.c_str(), &st) != 0) throw Error("cannot create directory " + path);
  }
  if (S_ISLNK(st.st_mode)) link_refused(path);
  if (!S_ISDIR(st.st_mode)) throw Error(path + " is not a directory");
}

void write_all(int fd, const std::string& bytes, const std::string& path) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw Error("cannot write " + path + ": " + std::strerror(n < 0 ? errno : EIO));
    done += static_cast<size_t>(n);
  }
}

}  // namespace hpdl
