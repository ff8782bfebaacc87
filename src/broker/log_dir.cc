// Log directory lock and clean-shutdown marker (see log_dir.h).
#include "broker/log_dir.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace tarn::broker {

namespace {

std::string errno_text() { return std::strerror(errno); }

result<void, std::string> fsync_dir(const std::string& dir) {
  int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return fail(fmt::format("cannot open {}: {}", dir, errno_text()));
  int rc = ::fsync(fd);
  std::string err = rc != 0 ? errno_text() : "";
  ::close(fd);
  if (rc != 0) return fail(fmt::format("cannot fsync {}: {}", dir, err));
  return {};
}

}  // namespace

result<log_dir, std::string> log_dir::open(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) return fail(fmt::format("cannot create log directory {}: {}", path, ec.message()));
  std::string lock_path = path + "/" + lock_file_name;
  int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return fail(fmt::format("cannot open {}: {}", lock_path, errno_text()));
  struct flock lock {};
  lock.l_type = F_WRLCK;
  lock.l_whence = SEEK_SET;
  if (::fcntl(fd, F_SETLK, &lock) != 0) {
    std::string err = errno_text();
    ::close(fd);
    return fail(
        fmt::format("cannot lock log directory {}: {} (is another broker using it?)", path, err));
  }
  return log_dir(path, fd);
}

log_dir::log_dir(log_dir&& other) noexcept
    : path_(std::move(other.path_)), lock_fd_(other.lock_fd_) {
  other.lock_fd_ = -1;
}

log_dir::~log_dir() {
  if (lock_fd_ >= 0) ::close(lock_fd_);  // releases the lock
}

result<bool, std::string> log_dir::take_clean_shutdown_marker() {
  std::string marker = path_ + "/" + clean_shutdown_file_name;
  if (::access(marker.c_str(), F_OK) != 0) return false;
  if (::unlink(marker.c_str()) != 0) {
    return fail(fmt::format("cannot remove {}: {}", marker, errno_text()));
  }
  if (auto r = fsync_dir(path_); !r) return fail(r.error());
  return true;
}

result<void, std::string> log_dir::write_clean_shutdown_marker(int64_t broker_epoch) {
  std::string marker = path_ + "/" + clean_shutdown_file_name;
  std::string tmp = marker + ".tmp";
  std::string content = fmt::format("{{\"version\":0,\"brokerEpoch\":{}}}", broker_epoch);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return fail(fmt::format("cannot create {}: {}", tmp, errno_text()));
  bool ok = ::write(fd, content.data(), content.size()) == static_cast<ssize_t>(content.size()) &&
            ::fsync(fd) == 0;
  std::string err = ok ? "" : errno_text();
  ::close(fd);
  if (!ok) return fail(fmt::format("cannot write {}: {}", tmp, err));
  if (::rename(tmp.c_str(), marker.c_str()) != 0) {
    return fail(fmt::format("cannot rename {} to {}: {}", tmp, marker, errno_text()));
  }
  return fsync_dir(path_);
}

}  // namespace tarn::broker
