// The local metadata log (docs/metadata.md): a directory holding `snapshot` (the image as one
// entry, replaced atomically) and `log` (the entries after it, appended and fsynced one change at
// a time). open() loads the snapshot, replays the log over it and cuts a torn tail (an entry the
// file ends inside of, or whose CRC fails at the end of the file): a crash mid-append loses only
// that unacknowledged change. A bad entry with valid bytes after it is corruption and refuses to
// open. Every `snapshot_every` entries the image is written as a new snapshot and the log emptied.
//
// Thread-safety: callers hold lock() (local_metadata_store does) around every other call.
#pragma once

#include <memory>
#include <string>

#include "base/result.h"
#include "cluster/metadata_image.h"
#include "cluster/metadata_journal.h"
#include "storage/io.h"

namespace tarn::cluster {

inline constexpr std::string_view metadata_dir_name = "tarn-metadata";
inline constexpr std::string_view metadata_log_file_name = "log";
inline constexpr std::string_view metadata_snapshot_file_name = "snapshot";

struct metadata_log_options {
  storage::fs::path dir;
  int64_t snapshot_every = 1000;  // entries appended between snapshots
};

struct metadata_recovery {
  bool had_snapshot = false;
  int64_t entries_replayed = 0;
  int64_t torn_bytes = 0;  // bytes cut from the end of the log
};

class metadata_log final : public metadata_journal {
 public:
  static result<std::unique_ptr<metadata_log>, storage::storage_error> open(
      const metadata_log_options& options, metadata_recovery* recovery = nullptr);
  metadata_log(const metadata_log&) = delete;
  metadata_log& operator=(const metadata_log&) = delete;

  std::unique_lock<std::mutex> lock() override { return std::unique_lock(mu_); }
  const metadata_image& image() const override { return image_; }
  // True when the directory held neither a snapshot nor a log entry.
  bool empty_at_open() const { return empty_at_open_; }
  // Appends one change and fsyncs it (the commit point), then applies it to the image. On an I/O
  // failure the file is cut back and the image is unchanged.
  result<void, storage::storage_error> append(std::vector<metadata_record> records) override;
  // Writes the image as the snapshot and empties the log.
  result<void, storage::storage_error> snapshot();

 private:
  explicit metadata_log(const metadata_log_options& options) : options_(options) {}
  result<void, storage::storage_error> load(metadata_recovery& recovery);
  result<void, storage::storage_error> open_log_for_append();

  std::mutex mu_;
  metadata_log_options options_;
  metadata_image image_;
  storage::unique_fd log_fd_;
  int64_t log_size_ = 0;
  int64_t entries_since_snapshot_ = 0;
  bool empty_at_open_ = true;
};

}  // namespace tarn::cluster
