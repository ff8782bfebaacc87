// Small POSIX file helpers shared by the storage code: an owning descriptor, whole-file reads,
// and the crash-safe replace (temp file + fsync + rename + directory fsync) every metadata file
// uses. See docs/storage.md#crash-safety.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>

#include "base/result.h"
#include "storage/storage_error.h"

namespace tarn::storage {

namespace fs = std::filesystem;

// An owned file descriptor, closed on destruction.
class unique_fd {
 public:
  unique_fd() = default;
  explicit unique_fd(int fd) : fd_(fd) {}
  unique_fd(unique_fd&& o) noexcept : fd_(o.release()) {}
  unique_fd& operator=(unique_fd&& o) noexcept;
  unique_fd(const unique_fd&) = delete;
  unique_fd& operator=(const unique_fd&) = delete;
  ~unique_fd();

  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }

 private:
  int fd_ = -1;
};

// "<what> <path>: <strerror(errno)>", the message of every io_error.
storage_error io_error(std::string_view what, const fs::path& path, int err);

// Writes all of `data` at `offset` (pwrite, retried on short writes and EINTR).
result<void, storage_error> pwrite_all(int fd, std::span<const uint8_t> data, int64_t offset,
                                       const fs::path& path_for_errors);
// Reads exactly `out.size()` bytes at `offset`; fewer bytes available is a corrupt error.
result<void, storage_error> pread_exact(int fd, std::span<uint8_t> out, int64_t offset,
                                        const fs::path& path_for_errors);

// The whole file, refusing files larger than `max_bytes` (metadata files are small).
result<std::string, storage_error> read_small_file(const fs::path& path,
                                                   size_t max_bytes = 64 << 20);

// Replaces `path` with `contents` so that a crash leaves either the old or the new file:
// write `<path>.tmp`, fsync it, rename over `path`, fsync the directory (Kafka's
// Utils.atomicMoveWithFallback does the same).
result<void, storage_error> write_file_atomic(const fs::path& path, std::string_view contents);

// fsync of a directory, making renames and creations inside it durable.
result<void, storage_error> fsync_directory(const fs::path& dir);

}  // namespace tarn::storage
