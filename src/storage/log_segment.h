// One segment of a partition log: `<base>.log` (the batches, byte for byte as Kafka stores them),
// `<base>.index` and `<base>.timeindex`, named by the 20-digit zero-padded base offset. Appends
// write through with one pwrite per batch (no fsync) and add index entries by Kafka's per-batch
// rule (KAFKA-806); reads return file slices of whole batches for sendfile. With `preallocate` a
// new .log is allocated to segment.bytes up front and cut back to its batches when the segment
// stops being active or closes (docs/storage.md#preallocation).
// Not thread-safe: the owning partition's thread uses it (docs/storage.md#threading). File slices
// handed out keep the .log descriptor alive, so a slice stays readable after the segment is
// deleted.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"
#include "base/strong_types.h"
#include "storage/checkpoint_file.h"
#include "storage/io.h"
#include "storage/log_index.h"
#include "storage/storage_error.h"
#include "storage/stored_batch.h"

namespace tarn::storage {

// "00000000000000000042" + suffix (LogFileUtils.filenamePrefixFromOffset).
std::string segment_file_name(offset_t base_offset, std::string_view suffix);
// The base offset of a "<20 digits>.<suffix>" file name, or nullopt.
std::optional<offset_t> parse_segment_file_name(std::string_view name, std::string_view suffix);

// An open .log file, shared with the file slices handed to readers.
struct segment_file {
  fs::path path;
  unique_fd fd;
};

// Bytes of one .log file to send: [position, position + length).
struct file_slice {
  std::shared_ptr<const segment_file> file;
  int64_t position = 0;
  int32_t length = 0;
};

// Copies a slice's bytes into `out` (out.size() must be slice.length), for callers that build a
// response buffer instead of using sendfile.
result<void, storage_error> read_slice(const file_slice& slice, std::span<uint8_t> out);

// What the caller knows of a batch it appends (the broker assigned the offsets).
struct batch_info {
  offset_t base_offset = 0;
  offset_t last_offset = 0;
  timestamp_ms max_timestamp = no_timestamp;
};

// A batch located in a segment file.
struct batch_position {
  stored_batch_header header;
  int64_t position = 0;
};

struct segment_options {
  int32_t index_interval_bytes = 4096;
  int32_t max_index_bytes = 10485760;  // segment.index.bytes
  int64_t roll_jitter_ms = 0;          // drawn once per segment from segment.jitter.ms
  // Kafka's LogConfig.initFileSize: preallocate ? segment.bytes : 0. A segment created with it
  // has its .log allocated (fallocate) to this length, so appends land in allocated blocks
  // instead of reserving delayed-allocation blocks page by page; the zeros past the last batch
  // are cut when the segment becomes inactive or closes, or by recovery after a crash.
  int64_t preallocate_bytes = 0;
};

// Kafka's RollParams.
struct roll_params {
  int64_t max_segment_ms = 0;
  int32_t max_segment_bytes = 0;
  timestamp_ms max_timestamp_in_messages = no_timestamp;
  offset_t max_offset_in_messages = 0;
  int32_t messages_size = 0;
  timestamp_ms now = 0;
};

// What recovery cut from a segment.
struct segment_recovery {
  int64_t valid_bytes = 0;
  int64_t truncated_bytes = 0;
  int32_t valid_batches = 0;
  std::string reason;  // why the first dropped batch was rejected; "" if nothing was cut
  // Each (epoch, first offset) where partitionLeaderEpoch grew, for the leader epoch cache.
  std::vector<epoch_entry> epochs_seen;
};

class log_segment {
 public:
  // Creates the three files of a new, empty segment (it must not exist). `suffix` follows each
  // file name: the cleaner writes "<base>.log.cleaned", ".index.cleaned", ".timeindex.cleaned".
  static result<std::unique_ptr<log_segment>, storage_error> create(const fs::path& dir,
                                                                    offset_t base_offset,
                                                                    const segment_options& options,
                                                                    timestamp_ms now,
                                                                    std::string_view suffix = {});
  // Opens an existing segment. Index files that are missing, of a length that is not a whole
  // number of entries, or whose entries are out of order are recreated empty and reported by
  // index_rebuild_needed(); the caller then runs recover(). `thorough` checks every index
  // entry (the active segment), otherwise only the first and last (older segments, so startup
  // does not read every index page).
  static result<std::unique_ptr<log_segment>, storage_error> open(
      const fs::path& dir, offset_t base_offset, const segment_options& options, timestamp_ms now,
      bool thorough = true, std::string_view suffix = {});
  log_segment(const log_segment&) = delete;
  log_segment& operator=(const log_segment&) = delete;
  ~log_segment();

  offset_t base_offset() const { return base_offset_; }
  int64_t size() const { return size_; }
  // The .log file's length: size() plus a preallocated tail not yet cut.
  int64_t file_length() const { return file_length_; }
  // Offset after the last batch; base_offset() when empty.
  offset_t next_offset() const { return next_offset_; }
  timestamp_ms max_timestamp_so_far() const { return max_timestamp_so_far_; }
  // The last offset of the (first) batch holding max_timestamp_so_far().
  offset_t offset_of_max_timestamp_so_far() const { return offset_of_max_timestamp_so_far_; }
  // Kafka's LogSegment.largestTimestamp: the max timestamp, or the .log file's modification time
  // when no batch carries a timestamp. Used by retention.ms.
  timestamp_ms largest_timestamp() const;
  const fs::path& log_path() const { return file_->path; }
  // The .log file as readers share it (the cleaner reads rolled segments through it).
  std::shared_ptr<const segment_file> file() const { return file_; }
  // The .log file's modification time (Kafka's LogSegment.lastModified), 0 if unknown.
  timestamp_ms last_modified() const;
  // Sets it, as Kafka gives a cleaned segment the time of the last segment it replaces.
  result<void, storage_error> set_last_modified(timestamp_ms ms);
  // Renames the three files, and the .txnindex when there is one (the log writes it, see
  // txn_index.h), from "<name><old_suffix>" to "<name><new_suffix>" (.log first, .txnindex last,
  // so a crash part way is undone or completed by recovery, as Kafka's changeFileSuffixes).
  // Readers' slices keep the descriptor they hold.
  result<void, storage_error> change_file_suffixes(std::string_view old_suffix,
                                                   std::string_view new_suffix);
  const offset_index& offset_idx() const { return *offset_index_; }
  const time_index& time_idx() const { return *time_index_; }
  bool index_rebuild_needed() const { return index_rebuild_needed_; }
  std::string index_problem() const { return index_problem_; }

  // Appends one batch whose offsets are assigned. One pwrite; index entries are stores into
  // the mappings. No allocation, no fsync.
  result<void, storage_error> append(std::span<const uint8_t> batch, const batch_info& info);

  // Kafka's LogSegment.shouldRoll.
  bool should_roll(const roll_params& params);

  // The batch containing `offset` (the first batch whose last offset >= offset), searching from
  // the offset index entry at or before it; nullopt when the segment ends first.
  result<std::optional<batch_position>, storage_error> translate_offset(
      offset_t offset, int64_t starting_position = 0) const;

  // Whole batches from the one containing `start_offset`, at most `max_bytes` and ending at or
  // before `max_position`. With `min_one_batch` the first batch is returned whole even when it
  // is larger than max_bytes. nullopt when start_offset is past this segment's end.
  result<std::optional<file_slice>, storage_error> read(offset_t start_offset, int32_t max_bytes,
                                                        int64_t max_position,
                                                        bool min_one_batch) const;

  // The first batch with max timestamp >= `timestamp` and last offset >= `starting_offset`,
  // found through the time index (the record within it is the caller's to find).
  result<std::optional<batch_position>, storage_error> find_batch_by_timestamp(
      timestamp_ms timestamp, offset_t starting_offset) const;

  // Copies `out.size()` bytes at `position` of the .log file.
  result<void, storage_error> read_bytes(int64_t position, std::span<uint8_t> out) const;

  // Validates every batch from the start, rebuilds both indexes, and truncates the file after
  // the last valid batch. Batch offsets must lie in this segment and increase.
  result<segment_recovery, storage_error> recover();

  // Removes every batch with offsets >= `offset` (offset must be at a batch boundary or inside
  // the segment); returns the bytes removed.
  result<int64_t, storage_error> truncate_to(offset_t offset);

  // The segment stops being active: final time index entry, indexes trimmed, the .log cut to
  // its batches (a preallocated tail dropped).
  result<void, storage_error> on_become_inactive();
  // The segment becomes active again (after load): indexes re-grown to segment.index.bytes.
  result<void, storage_error> make_active();

  // fdatasync of the .log and msync of both indexes.
  result<void, storage_error> flush();
  // Final time index entry, indexes and a preallocated .log trimmed, files closed.
  result<void, storage_error> close();
  // Closes and deletes the three files and the .txnindex if any (open slices keep the .log data
  // readable).
  result<void, storage_error> remove();

 private:
  log_segment(offset_t base_offset, const segment_options& options, timestamp_ms now,
              std::string_view suffix);
  result<void, storage_error> open_files(const fs::path& dir, bool create, bool thorough);
  result<std::optional<batch_position>, storage_error> header_at(int64_t position) const;
  result<void, storage_error> load_state();
  // Allocates the new .log to `bytes` (fallocate; a sparse length where the file system has no
  // fallocate, as Java's setLength; nothing when the disk lacks the space).
  result<void, storage_error> preallocate(int64_t bytes);
  // Cuts the .log to size_ when a preallocated tail is left (Kafka's FileRecords.trim).
  result<void, storage_error> trim();
  int64_t time_waited_for_roll(timestamp_ms now, timestamp_ms message_timestamp);

  offset_t base_offset_;
  segment_options options_;
  std::string suffix_;  // after each file name: "", ".cleaned", ".swap"
  std::shared_ptr<segment_file> file_;
  std::unique_ptr<offset_index> offset_index_;
  std::unique_ptr<time_index> time_index_;
  int64_t size_ = 0;         // bytes of batches (where the next append goes)
  int64_t file_length_ = 0;  // the .log's length: size_, or more while preallocated
  offset_t next_offset_;
  timestamp_ms max_timestamp_so_far_ = no_timestamp;
  offset_t offset_of_max_timestamp_so_far_;
  std::optional<timestamp_ms> rolling_based_timestamp_;
  timestamp_ms created_ms_;
  int32_t bytes_since_last_index_entry_ = 0;
  bool index_rebuild_needed_ = false;
  std::string index_problem_;
  bool closed_ = false;
};

}  // namespace tarn::storage
