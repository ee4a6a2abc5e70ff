// The one way hpdl creates what it writes (run directory files, temporary files, their
// folders): a symbolic link planted in place of any of them is refused, never followed.
// On a shared cluster file system another user may plant outputs/<run>/log.txt -> ~victim/x;
// following it would make hpdl overwrite or append to the victim's file. Temporary files
// are created exclusively (O_EXCL after removing what an earlier run left), so nothing that
// appears between the check and the open is written through either.
#pragma once
#include <string>

namespace hpdl {

enum class OutputMode {
  kFresh,     // a new file: a leftover regular file of that name is removed first (.tmp files)
  kTruncate,  // an existing regular file is emptied, else created
  kAppend,    // written at the end of an existing regular file, else created
};

// Throws Error "PATH is a symbolic link: hpdl does not write through links (remove it)"
// when PATH itself is a link (whatever it points to, even nothing).
void refuse_link(const std::string& path);

// Before an exclusive create of PATH (O_EXCL, H5F_ACC_EXCL): refuses a link there and
// removes a regular file an earlier run left.
void remove_leftover(const std::string& path);

// Opens PATH for writing without following a link in its last part; returns the file
// descriptor (close-on-exec). Throws Error naming PATH on a link or any failure.
int open_output(const std::string& path, OutputMode mode);

// Creates the directory PATH (its parents as needed) or accepts an existing one; refuses
// PATH when it is a link or not a directory.
void make_output_dir(const std::string& path);

// Writes all of `bytes` to `fd`; throws Error naming `path` (e.g. a full disk).
void write_all(int fd, const std::string& bytes, const std::string& path);

}  // namespace hpdl
