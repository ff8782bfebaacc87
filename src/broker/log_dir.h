// The broker's hold on its log directory: the `.lock` file (a POSIX record lock, as Kafka's
// FileChannel.tryLock takes, so tarn and Kafka also exclude each other) and Kafka's clean-shutdown
// marker `.kafka_cleanshutdown`, whose presence at start means recovery can be skipped.
#pragma once

#include <string>

#include "base/result.h"

namespace tarn::broker {

inline constexpr const char* clean_shutdown_file_name = ".kafka_cleanshutdown";
inline constexpr const char* lock_file_name = ".lock";

class log_dir {
 public:
  // Creates the directory if needed and locks it; fails if another process holds the lock.
  static result<log_dir, std::string> open(const std::string& path);

  log_dir(log_dir&& other) noexcept;
  log_dir& operator=(log_dir&&) = delete;
  ~log_dir();

  const std::string& path() const { return path_; }

  // True when the previous run left the clean-shutdown marker. The marker is removed (durably)
  // so that a crash from now on is noticed at the next start.
  result<bool, std::string> take_clean_shutdown_marker();

  // Writes the marker as Kafka does ({"version":0,"brokerEpoch":N}), durably: temp file, fsync,
  // rename, fsync of the directory. Call after everything else is flushed and closed.
  result<void, std::string> write_clean_shutdown_marker(int64_t broker_epoch);

 private:
  log_dir(std::string path, int lock_fd) : path_(std::move(path)), lock_fd_(lock_fd) {}

  std::string path_;
  int lock_fd_ = -1;
};

}  // namespace tarn::broker
