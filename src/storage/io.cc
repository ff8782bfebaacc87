// POSIX helpers: see io.h.
#include "storage/io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "fmt/format.h"

namespace tarn::storage {

unique_fd& unique_fd::operator=(unique_fd&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = o.release();
  }
  return *this;
}

unique_fd::~unique_fd() {
  if (fd_ >= 0) ::close(fd_);
}

storage_error io_error(std::string_view what, const fs::path& path, int err) {
  return {storage_errc::io_error,
          fmt::format("{} {}: {}", what, path.string(), std::strerror(err))};
}

result<void, storage_error> pwrite_all(int fd, std::span<const uint8_t> data, int64_t offset,
                                       const fs::path& path_for_errors) {
  while (!data.empty()) {
    ssize_t n = ::pwrite(fd, data.data(), data.size(), offset);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(io_error("write", path_for_errors, errno));
    }
    data = data.subspan(static_cast<size_t>(n));
    offset += n;
  }
  return {};
}

result<void, storage_error> pread_exact(int fd, std::span<uint8_t> out, int64_t offset,
                                        const fs::path& path_for_errors) {
  while (!out.empty()) {
    ssize_t n = ::pread(fd, out.data(), out.size(), offset);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(io_error("read", path_for_errors, errno));
    }
    if (n == 0) {
      return fail(storage_error{storage_errc::corrupt,
                                fmt::format("read {}: unexpected end of file at position {}",
                                            path_for_errors.string(), offset)});
    }
    out = out.subspan(static_cast<size_t>(n));
    offset += n;
  }
  return {};
}

result<std::string, storage_error> read_small_file(const fs::path& path, size_t max_bytes) {
  unique_fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) {
    int err = errno;
    storage_error e = io_error("open", path, err);
    if (err == ENOENT) e.code = storage_errc::not_found;
    return fail(std::move(e));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return fail(io_error("stat", path, errno));
  if (static_cast<uint64_t>(st.st_size) > max_bytes) {
    return fail(
        storage_error{storage_errc::corrupt, fmt::format("{} is {} bytes, more than the {} allowed",
                                                         path.string(), st.st_size, max_bytes)});
  }
  std::string out(static_cast<size_t>(st.st_size), '\0');
  auto r =
      pread_exact(fd.get(), std::span(reinterpret_cast<uint8_t*>(out.data()), out.size()), 0, path);
  if (!r) return fail(r.error());
  return out;
}

result<void, storage_error> fsync_directory(const fs::path& dir) {
  unique_fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid()) return fail(io_error("open directory", dir, errno));
  if (::fsync(fd.get()) != 0) return fail(io_error("fsync directory", dir, errno));
  return {};
}

result<void, storage_error> write_file_atomic(const fs::path& path, std::string_view contents) {
  fs::path tmp = path;
  tmp += ".tmp";
  {
    unique_fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (!fd.valid()) return fail(io_error("create", tmp, errno));
    auto w = pwrite_all(
        fd.get(), std::span(reinterpret_cast<const uint8_t*>(contents.data()), contents.size()), 0,
        tmp);
    if (w && ::fsync(fd.get()) != 0) w = fail(io_error("fsync", tmp, errno));
    if (!w) {
      // A full disk: the old file stays as it was, and the partial temp file goes.
      ::unlink(tmp.c_str());
      return w;
    }
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    auto e = io_error("rename", tmp, errno);
    ::unlink(tmp.c_str());
    return fail(std::move(e));
  }
  return fsync_directory(path.has_parent_path() ? path.parent_path() : fs::path("."));
}

}  // namespace tarn::storage
