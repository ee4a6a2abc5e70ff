// Thin RAII and checked helpers over the HDF5 C API, shared by the converters, the
// dataset reader and the model/checkpoint writer. HDF5's own stderr error stacks are
// turned off; failures become hpdl::Error with HDF5's innermost message.
#pragma once
#include <hdf5.h>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "hpdl/core/error.hpp"

namespace hpdl {

// Owns an hid_t and closes it with the matching H5*close.
class H5Id {
 public:
  using Closer = herr_t (*)(hid_t);
  H5Id() = default;
  H5Id(hid_t id, Closer close) : id_(id), close_(close) {}
  H5Id(H5Id&& o) noexcept : id_(o.id_), close_(o.close_) { o.id_ = -1; }
  H5Id& operator=(H5Id&& o) noexcept;
  H5Id(const H5Id&) = delete;
  H5Id& operator=(const H5Id&) = delete;
  ~H5Id();
  hid_t get() const { return id_; }
  bool valid() const { return id_ >= 0; }

 private:
  hid_t id_ = -1;
  Closer close_ = nullptr;
};

// Silences HDF5's automatic error printing (call once per process).
void h5_quiet();
// The most telling description on HDF5's current error stack ("" if none): the one that
// carries the system's reason ("... errno = 28, error message = 'No space left on device'")
// when there is one, else the innermost.
std::string h5_error_text();

// HDF5 calls return a negative value on failure: the message names the called function and
// HDF5's own reason.
#define HPDL_CHECK_H5(call)                                                            \
  do {                                                                                 \
    if ((call) < 0)                                                                    \
      ::hpdl::fail_call(::hpdl::call_name(#call), "HDF5: " + ::hpdl::h5_error_text()); \
  } while (0)

H5Id h5_open_file(const std::string& path);    // read-only; Error "FILE: cannot open ..."
H5Id h5_create_file(const std::string& path);  // truncates
H5Id h5_create_group(hid_t loc, const std::string& name);

void h5_write(hid_t loc, const std::string& name, const float* data,
              const std::vector<hsize_t>& dims);
void h5_write(hid_t loc, const std::string& name, const int32_t* data,
              const std::vector<hsize_t>& dims);
void h5_write(hid_t loc, const std::string& name, const double* data,
              const std::vector<hsize_t>& dims);
void h5_write(hid_t loc, const std::string& name, const int64_t* data,
              const std::vector<hsize_t>& dims);
// A whole dataset, flattened; Error naming the dataset if it is missing or unreadable.
std::vector<float> h5_read_floats(hid_t loc, const std::string& name);
std::vector<double> h5_read_doubles(hid_t loc, const std::string& name);
std::vector<int64_t> h5_read_int64s(hid_t loc, const std::string& name);
bool h5_exists(hid_t loc, const std::string& name);
// Before a dataset is read: its storage must match what its shape and type declare (compact
// and contiguous: exactly, and inside the file; chunked: at most 1024x compressed), so a
// crafted or damaged file is refused by hpdl instead of reaching libhdf5's read path or an
// allocation sized by a lie. Throws Error "WHERE ...".
void h5_check_storage(hid_t dataset, const std::string& where);
void h5_write_attr(hid_t obj, const std::string& name, const std::vector<float>& values);
void h5_write_attr(hid_t obj, const std::string& name, const std::string& value);
void h5_write_attr(hid_t obj, const std::string& name, const std::vector<std::string>& values);

// Optional attributes; false/empty when absent.
std::vector<std::string> h5_read_string_list_attr(hid_t obj, const std::string& name);
std::vector<float> h5_read_float_attr(hid_t obj, const std::string& name);
std::string h5_read_string_attr(hid_t obj, const std::string& name);

// Writes an HDF5 file under PATH.tmp with `fill`, then fsyncs and renames it to PATH (and
// syncs the directory), so a reader never sees a half-written file under the final name.
// before_rename (optional) runs once the new file is complete and synced, just before it
// replaces PATH (a checkpoint keeps the one it replaces there).
template <typename Fill>
void h5_write_atomically(const std::string& path, Fill&& fill,
                         const std::function<void()>& before_rename = {});
void h5_commit_file(H5Id& file, const std::string& tmp_path, const std::string& path,
                    const std::function<void()>& before_rename = {});

template <typename Fill>
void h5_write_atomically(const std::string& path, Fill&& fill,
                         const std::function<void()>& before_rename) {
  const std::string tmp = path + ".tmp";
  try {
    H5Id file = h5_create_file(tmp);
    fill(file.get());
    h5_commit_file(file, tmp, path, before_rename);
  } catch (const Error& e) {
    // PATH keeps its previous content; the partial file goes (a full disk gets its space back).
    std::remove(tmp.c_str());
    throw Error("cannot write " + path + ": " + e.what());
  }
}

}  // namespace hpdl
