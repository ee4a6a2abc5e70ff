// Checked HDF5 helpers. Every call that can fail goes through HPDL_CHECK_H5 or an explicit
// test with an error that names the file or object.
#include "hpdl/data/h5_util.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "hpdl/core/error.hpp"
#include "hpdl/core/input_file.hpp"
#include "hpdl/core/output_file.hpp"

namespace hpdl {

H5Id& H5Id::operator=(H5Id&& o) noexcept {
  if (this != &o) {
    if (id_ >= 0 && close_) close_(id_);
    id_ = o.id_, close_ = o.close_, o.id_ = -1;
  }
  return *this;
}

H5Id::~H5Id() {
  if (id_ >= 0 && close_) close_(id_);
}

void h5_quiet() { H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr); }

std::string h5_error_text() {
  std::string text;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_UPWARD,
      [](unsigned n, const H5E_error2_t* e, void* out) -> herr_t {
        auto& text = *static_cast<std::string*>(out);
        if (!e->desc) return 0;
        const std::string desc = e->desc;
        if (n == 0 ||
            (desc.find("errno") != std::string::npos && text.find("errno") == std::string::npos))
          text = desc;
        return 0;
      },
      &text);
  // The system's reason, without the file driver's buffer addresses and sizes.
  const size_t m = text.find("error message = '");
  if (m != std::string::npos) {
    const size_t b = m + 17, e = text.find('\'', b);
    const size_t en = text.find("errno = ");
    const std::string errno_text =
        en == std::string::npos ? "" : text.substr(en + 8, text.find(',', en) - en - 8);
    text = text.substr(b, e - b) + (errno_text.empty() ? "" : " (errno " + errno_text + ")");
  }
  return text;
}

namespace {
// What makes an HDF5 file open another file when it is read: an external (or user-defined)
// link, a virtual dataset's sources, a dataset's external raw storage. "" when none.
std::string first_outside_reference(hid_t file) {
  std::string found;
  const auto visit = [](hid_t group, const char* name, const H5L_info_t* info,
                        void* out) -> herr_t {
    std::string& found = *static_cast<std::string*>(out);
    const std::string where = std::string("/") + name;
    if (info->type == H5L_TYPE_SOFT) return 0;  // a path inside this file; its target is visited
    if (info->type != H5L_TYPE_HARD) {
      found = where + " is an external link";
      std::vector<char> value(info->u.val_size + 1, '\0');
      const char *target_file = nullptr, *target = nullptr;
      unsigned flags = 0;
      if (info->type == H5L_TYPE_EXTERNAL &&
          H5Lget_val(group, name, value.data(), value.size(), H5P_DEFAULT) >= 0 &&
          H5Lunpack_elink_val(value.data(), value.size(), &flags, &target_file, &target) >= 0)
        found += std::string(" (to ") + target_file + ":" + target + ")";
      return 1;
    }
    H5Id object(H5Oopen(group, name, H5P_DEFAULT), H5Oclose);
    if (!object.valid() || H5Iget_type(object.get()) != H5I_DATASET) return 0;
    H5Id plist(H5Dget_create_plist(object.get()), H5Pclose);
    if (!plist.valid()) return 0;
    if (H5Pget_layout(plist.get()) == H5D_VIRTUAL) found = where + " is a virtual dataset";
    if (H5Pget_external_count(plist.get()) > 0) found = where + " is stored in external files";
    return found.empty() ? 0 : 1;
  };
  H5Lvisit(file, H5_INDEX_NAME, H5_ITER_NATIVE, visit, &found);
  H5Eclear2(H5E_DEFAULT);
  return found;
}
}  // namespace

H5Id h5_open_file(const std::string& path) {
  require_input_file(path, "HDF5 file");
  // HDF5's default 64 KiB sieve buffer turns every small row read into a 64 KiB read;
  // batches are unions of single rows, so read exactly what is selected.
  H5Id fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  HPDL_CHECK_H5(H5Pset_sieve_buf_size(fapl.get(), 0));
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get());
  if (f < 0) throw Error("HDF5 file " + path + " cannot be opened: " + h5_error_text());
  H5Id file(f, H5Fclose);
  // Reading such an object would open a file the user never named, before any check or
  // watchdog could act (a FIFO there blocks every rank): hpdl reads self-contained files.
  const std::string outside = first_outside_reference(file.get());
  if (!outside.empty())
    throw Error("HDF5 file " + path + ": " + outside +
                "; hpdl reads only self-contained HDF5 files (no external links, virtual "
                "datasets or external storage)");
  return file;
}

H5Id h5_create_file(const std::string& path) {
  // Attributes of any size: dense attribute storage (the 1.8 file format, read by every
  // HDF5 since 1.8 and h5py) instead of the object header, whose attributes end at 64 KiB
  // (a config of a few thousand layers is larger). Groups created in it inherit nothing:
  // h5_create_group asks the same.
  H5Id fcpl(H5Pcreate(H5P_FILE_CREATE), H5Pclose);
  H5Id fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  if (!fcpl.valid() || !fapl.valid() || H5Pset_attr_phase_change(fcpl.get(), 0, 0) < 0 ||
      H5Pset_libver_bounds(fapl.get(), H5F_LIBVER_V18, H5F_LIBVER_LATEST) < 0)
    throw Error("cannot create HDF5 file " + path + ": " + h5_error_text());
  // Exclusive create (a leftover removed first): a link planted under PATH is refused,
  // never written through (core/output_file.hpp).
  remove_leftover(path);
  const hid_t f = H5Fcreate(path.c_str(), H5F_ACC_EXCL, fcpl.get(), fapl.get());
  if (f < 0) throw Error("cannot create HDF5 file " + path + ": " + h5_error_text());
  return H5Id(f, H5Fclose);
}

H5Id h5_create_group(hid_t loc, const std::string& name) {
  H5Id gcpl(H5Pcreate(H5P_GROUP_CREATE), H5Pclose);
  HPDL_CHECK_H5(H5Pset_attr_phase_change(gcpl.get(), 0, 0));  // dense: attributes of any size
  const hid_t g = H5Gcreate2(loc, name.c_str(), H5P_DEFAULT, gcpl.get(), H5P_DEFAULT);
  if (g < 0) fail_call("cannot create group '" + name + "'", h5_error_text());
  return H5Id(g, H5Gclose);
}

namespace {
void write_dataset(hid_t loc, const std::string& name, hid_t file_type, hid_t mem_type,
                   const void* data, const std::vector<hsize_t>& dims) {
  H5Id space(H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr), H5Sclose);
  if (!space.valid()) fail_call("cannot shape dataset '" + name + "'", h5_error_text());
  H5Id ds(
      H5Dcreate2(loc, name.c_str(), file_type, space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
      H5Dclose);
  if (!ds.valid()) fail_call("cannot create dataset '" + name + "'", h5_error_text());
  if (H5Dwrite(ds.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0)
    fail_call("cannot write dataset '" + name + "'", h5_error_text());
}

H5Id make_attr(hid_t obj, const std::string& name, hid_t type, hid_t space) {
  if (H5Aexists(obj, name.c_str()) > 0) HPDL_CHECK_H5(H5Adelete(obj, name.c_str()));
  H5Id a(H5Acreate2(obj, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  if (!a.valid()) fail_call("cannot create attribute '" + name + "'", h5_error_text());
  return a;
}
}  // namespace

void h5_write(hid_t loc, const std::string& name, const float* data,
              const std::vector<hsize_t>& dims) {
  write_dataset(loc, name, H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, data, dims);
}

void h5_write(hid_t loc, const std::string& name, const int32_t* data,
              const std::vector<hsize_t>& dims) {
  write_dataset(loc, name, H5T_STD_I32LE, H5T_NATIVE_INT32, data, dims);
}

void h5_write(hid_t loc, const std::string& name, const double* data,
              const std::vector<hsize_t>& dims) {
  write_dataset(loc, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, data, dims);
}

void h5_write(hid_t loc, const std::string& name, const int64_t* data,
              const std::vector<hsize_t>& dims) {
  write_dataset(loc, name, H5T_STD_I64LE, H5T_NATIVE_INT64, data, dims);
}

bool h5_exists(hid_t loc, const std::string& name) {
  return H5Lexists(loc, name.c_str(), H5P_DEFAULT) > 0;
}

void h5_check_storage(hid_t dataset, const std::string& where) {
  H5Id space(H5Dget_space(dataset), H5Sclose), type(H5Dget_type(dataset), H5Tclose);
  H5Id plist(H5Dget_create_plist(dataset), H5Pclose);
  if (!space.valid() || !type.valid() || !plist.valid())
    throw Error(where + ": unreadable dataset header: " + h5_error_text());
  const hssize_t points = H5Sget_simple_extent_npoints(space.get());
  const size_t type_size = H5Tget_size(type.get());
  if (points < 0 || type_size == 0 || type_size > 64 ||
      static_cast<uint64_t>(points) > (uint64_t{1} << 56) / type_size)
    throw Error(where + ": implausible dataset size (" + std::to_string(points) + " values)");
  const uint64_t declared = static_cast<uint64_t>(points) * type_size;
  const uint64_t stored = H5Dget_storage_size(dataset);
  hsize_t file_bytes = 0;
  {
    H5Id file(H5Iget_file_id(dataset), H5Fclose);
    if (!file.valid() || H5Fget_filesize(file.get(), &file_bytes) < 0)
      throw Error(where + ": cannot tell the file's size: " + h5_error_text());
  }
  const std::string sizes =
      " (declares " + std::to_string(declared) + " bytes, stores " + std::to_string(stored) + ")";
  switch (H5Pget_layout(plist.get())) {
    case H5D_COMPACT:
      if (stored != declared) throw Error(where + ": damaged compact dataset" + sizes);
      break;
    case H5D_CONTIGUOUS: {
      if (declared == 0) break;
      if (stored != declared) throw Error(where + ": damaged or empty dataset" + sizes);
      const haddr_t offset = H5Dget_offset(dataset);
      if (offset == HADDR_UNDEF || offset + stored > file_bytes)
        throw Error(where + ": the dataset's data lies outside the file (" +
                    std::to_string(file_bytes) + " bytes; truncated?)");
      break;
    }
    case H5D_CHUNKED:
      if (declared > 1024 * std::max<uint64_t>(stored, 1))
        throw Error(where + ": implausible chunked dataset" + sizes);
      break;
    default:
      throw Error(where + ": unsupported dataset layout (virtual or unknown)");
  }
  H5Eclear2(H5E_DEFAULT);
}

namespace {
template <typename T>
std::vector<T> read_dataset(hid_t loc, const std::string& name, hid_t mem_type) {
  if (!h5_exists(loc, name)) throw Error("has no dataset " + name);
  H5Id ds(H5Dopen2(loc, name.c_str(), H5P_DEFAULT), H5Dclose);
  if (!ds.valid()) throw Error("cannot open dataset " + name + ": " + h5_error_text());
  h5_check_storage(ds.get(), "dataset " + name);
  H5Id space(H5Dget_space(ds.get()), H5Sclose);
  const hssize_t n = H5Sget_simple_extent_npoints(space.get());
  std::vector<T> out(n > 0 ? static_cast<size_t>(n) : 0);
  if (n > 0 && H5Dread(ds.get(), mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.data()) < 0)
    throw Error("cannot read dataset " + name + ": " + h5_error_text());
  return out;
}
}  // namespace

std::vector<float> h5_read_floats(hid_t loc, const std::string& name) {
  return read_dataset<float>(loc, name, H5T_NATIVE_FLOAT);
}
std::vector<double> h5_read_doubles(hid_t loc, const std::string& name) {
  return read_dataset<double>(loc, name, H5T_NATIVE_DOUBLE);
}
std::vector<int64_t> h5_read_int64s(hid_t loc, const std::string& name) {
  return read_dataset<int64_t>(loc, name, H5T_NATIVE_INT64);
}

void h5_write_attr(hid_t obj, const std::string& name, const std::vector<float>& values) {
  const hsize_t n = values.size();
  H5Id space(H5Screate_simple(1, &n, nullptr), H5Sclose);
  H5Id a = make_attr(obj, name, H5T_IEEE_F32LE, space.get());
  HPDL_CHECK_H5(H5Awrite(a.get(), H5T_NATIVE_FLOAT, values.data()));
}

void h5_write_attr(hid_t obj, const std::string& name, const std::string& value) {
  H5Id type(H5Tcopy(H5T_C_S1), H5Tclose);
  HPDL_CHECK_H5(H5Tset_size(type.get(), value.empty() ? 1 : value.size()));
  H5Id space(H5Screate(H5S_SCALAR), H5Sclose);
  H5Id a = make_attr(obj, name, type.get(), space.get());
  HPDL_CHECK_H5(H5Awrite(a.get(), type.get(), value.empty() ? "" : value.data()));
}

void h5_write_attr(hid_t obj, const std::string& name, const std::vector<std::string>& values) {
  H5Id type(H5Tcopy(H5T_C_S1), H5Tclose);
  HPDL_CHECK_H5(H5Tset_size(type.get(), H5T_VARIABLE));
  const hsize_t n = values.size();
  H5Id space(H5Screate_simple(1, &n, nullptr), H5Sclose);
  H5Id a = make_attr(obj, name, type.get(), space.get());
  std::vector<const char*> ptrs;
  for (const auto& v : values) ptrs.push_back(v.c_str());
  HPDL_CHECK_H5(H5Awrite(a.get(), type.get(), ptrs.data()));
}

std::vector<std::string> h5_read_string_list_attr(hid_t obj, const std::string& name) {
  std::vector<std::string> out;
  if (H5Aexists(obj, name.c_str()) <= 0) return out;
  H5Id a(H5Aopen(obj, name.c_str(), H5P_DEFAULT), H5Aclose);
  H5Id space(H5Aget_space(a.get()), H5Sclose);
  const hssize_t n = H5Sget_simple_extent_npoints(space.get());
  H5Id type(H5Tcopy(H5T_C_S1), H5Tclose);
  HPDL_CHECK_H5(H5Tset_size(type.get(), H5T_VARIABLE));
  std::vector<char*> ptrs(n > 0 ? n : 0);
  if (n <= 0 || H5Aread(a.get(), type.get(), ptrs.data()) < 0) return out;
  for (char* p : ptrs) out.emplace_back(p ? p : "");
  H5Dvlen_reclaim(type.get(), space.get(), H5P_DEFAULT, ptrs.data());
  return out;
}

std::string h5_read_string_attr(hid_t obj, const std::string& name) {
  if (H5Aexists(obj, name.c_str()) <= 0) return "";
  H5Id a(H5Aopen(obj, name.c_str(), H5P_DEFAULT), H5Aclose);
  H5Id type(H5Aget_type(a.get()), H5Tclose);
  if (H5Tget_class(type.get()) != H5T_STRING || H5Tis_variable_str(type.get()) > 0) return "";
  std::string out(H5Tget_size(type.get()), '\0');
  if (H5Aread(a.get(), type.get(), out.data()) < 0) return "";
  out.resize(std::strlen(out.c_str()));
  return out;
}

std::vector<float> h5_read_float_attr(hid_t obj, const std::string& name) {
  std::vector<float> out;
  if (H5Aexists(obj, name.c_str()) <= 0) return out;
  H5Id a(H5Aopen(obj, name.c_str(), H5P_DEFAULT), H5Aclose);
  H5Id space(H5Aget_space(a.get()), H5Sclose);
  const hssize_t n = H5Sget_simple_extent_npoints(space.get());
  if (n <= 0) return out;
  out.resize(static_cast<size_t>(n));
  if (H5Aread(a.get(), H5T_NATIVE_FLOAT, out.data()) < 0) out.clear();
  return out;
}

void h5_commit_file(H5Id& file, const std::string& tmp_path, const std::string& path,
                    const std::function<void()>& before_rename) {
  HPDL_CHECK_H5(H5Fflush(file.get(), H5F_SCOPE_GLOBAL));
  file = H5Id();  // close before fsync and rename
  const int fd = ::open(tmp_path.c_str(), O_RDONLY);
  if (fd < 0 || ::fsync(fd) != 0) {
    if (fd >= 0) ::close(fd);
    throw Error("cannot sync " + tmp_path + ": " + std::strerror(errno));
  }
  ::close(fd);
  if (before_rename) before_rename();
  if (std::rename(tmp_path.c_str(), path.c_str()) != 0) {
    throw Error("cannot rename " + tmp_path + " to " + path + ": " + std::strerror(errno));
  }
  // The rename itself is durable only once the directory is synced.
  const std::string dir = std::filesystem::path(path).parent_path().string();
  const int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace hpdl
