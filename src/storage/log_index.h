// A segment's two index files, memory-mapped as Kafka maps them:
//   .index      8-byte entries, big-endian int32 relative offset, int32 file position
//   .timeindex 12-byte entries, big-endian int64 timestamp, int32 relative offset
// The active segment's files are sized to segment.index.bytes (sparse, by ftruncate) so appends
// are plain stores into the mapping, no system call; close() and roll trim them to exactly
// entries * entry size, because Kafka loads an index as file length / entry size entries.
// No descriptor is kept open: the file is opened by path to map it, to resize it and to reserve
// its blocks, and closed again, as Kafka's AbstractIndex closes its RandomAccessFile once mapped.
// A segment thus holds one descriptor (its .log), so a broker with many partitions and segments
// needs a third of the descriptors three open files a segment would.
// Not thread-safe: the owning partition's thread uses it (docs/storage.md#threading).
#pragma once

#include <cstdint>
#include <filesystem>

#include "base/result.h"
#include "base/strong_types.h"
#include "storage/io.h"
#include "storage/storage_error.h"

namespace tarn::storage {

inline constexpr timestamp_ms no_timestamp = -1;  // RecordBatch.NO_TIMESTAMP

struct offset_position {
  offset_t offset = 0;
  int32_t position = 0;
};

struct timestamp_offset {
  timestamp_ms timestamp = no_timestamp;
  offset_t offset = 0;
};

// The mapping shared by both index kinds.
class index_file {
 public:
  index_file(const index_file&) = delete;
  index_file& operator=(const index_file&) = delete;
  ~index_file();

  const fs::path& path() const { return path_; }
  offset_t base_offset() const { return base_offset_; }
  int32_t entries() const { return entries_; }
  int32_t max_entries() const { return max_entries_; }
  bool full() const { return entries_ >= max_entries_; }
  int64_t file_length() const { return length_; }

  // Sets the file length to `new_size` rounded down to whole entries, keeping the entries.
  result<void, storage_error> resize(int64_t new_size);
  // Drops any preallocated space: the file then holds exactly its entries.
  result<void, storage_error> trim_to_valid_size() {
    return resize(int64_t{entries_} * entry_size_);
  }
  // Forgets every entry and re-preallocates, for an index being rebuilt.
  result<void, storage_error> reset();
  // msync of the entries written so far.
  result<void, storage_error> flush();
  // Makes sure the file's blocks for the next entry exist (fallocate), so that storing it into
  // the mapping cannot fault with SIGBUS on a full disk: the preallocated length is sparse.
  // ENOSPC here is an io_error, returned before anything is written.
  result<void, storage_error> reserve_next_entry() {
    const int64_t end = int64_t{entries_ + 1} * entry_size_;
    return end <= reserved_bytes_ ? result<void, storage_error>{} : reserve_through(end);
  }
  // Trims and unmaps; the object is unusable afterwards.
  result<void, storage_error> close();
  // Renames the file (open or closed); the mapping stays valid.
  result<void, storage_error> rename_to(const fs::path& new_path);
  // Removes the file (after close or without it).
  result<void, storage_error> remove();

 protected:
  index_file(fs::path path, offset_t base_offset, int32_t max_index_bytes, int entry_size);
  // Opens or creates the file. A new file is preallocated to max_index_bytes; an existing one
  // keeps its length (Kafka's rule), and `writable` grows it back to max_index_bytes.
  result<void, storage_error> open(bool writable);
  // Maps `length` bytes of the file open on `fd` (closed by the caller afterwards).
  result<void, storage_error> map(int64_t length, int fd);
  // The file, opened read-write by path for one operation.
  result<unique_fd, storage_error> open_file() const;
  void unmap();
  const uint8_t* entry(int32_t n) const { return map_ + static_cast<size_t>(n) * entry_size_; }
  uint8_t* entry(int32_t n) { return map_ + static_cast<size_t>(n) * entry_size_; }
  void truncate_entries(int32_t n) { entries_ = n; }
  result<void, storage_error> reserve_through(int64_t end_byte);
  void add_entry() { ++entries_; }

  fs::path path_;
  offset_t base_offset_;
  int32_t max_index_bytes_;
  int entry_size_;
  bool open_ = false;  // between open() and close()/remove()
  uint8_t* map_ = nullptr;
  int64_t length_ = 0;
  int32_t entries_ = 0;
  int32_t max_entries_ = 0;
  // Bytes from the start known to have blocks (written entries, or fallocated); 0 with a
  // file system without fallocate, where reserving is skipped.
  int64_t reserved_bytes_ = 0;
  bool fallocate_unsupported_ = false;
};

class offset_index : public index_file {
 public:
  static constexpr int entry_size = 8;
  // Opens `<dir>/<20-digit base>.index`; a length that is not a multiple of 8 is `corrupt`.
  static result<std::unique_ptr<offset_index>, storage_error> open(const fs::path& path,
                                                                   offset_t base_offset,
                                                                   int32_t max_index_bytes,
                                                                   bool writable);
  // Appends (offset, position). Offsets must increase (Kafka's InvalidOffsetException).
  result<void, storage_error> append(offset_t offset, int32_t position);
  // The entry with the largest offset <= target, or (base_offset, 0).
  offset_position lookup(offset_t target) const;
  // The entry with the largest position <= `position`, or (base_offset, 0).
  offset_position lookup_by_position(int64_t position) const;
  offset_position entry_at(int32_t n) const;
  offset_t last_offset() const;  // base_offset when empty
  // Removes entries with offset >= `offset`.
  void truncate_to(offset_t offset);
  // Whether offset - base fits the 4-byte relative offset.
  bool can_append_offset(offset_t offset) const;
  // Entries strictly increasing in offset and position, positions inside a log of `log_size`
  // bytes: every entry when `thorough`, else the first and last (Kafka checks only the last).
  // Stricter than Kafka's sanityCheck so a garbled file is rebuilt.
  result<void, storage_error> sanity_check(int64_t log_size, bool thorough) const;

 private:
  using index_file::index_file;
};

class time_index : public index_file {
 public:
  static constexpr int entry_size = 12;
  static result<std::unique_ptr<time_index>, storage_error> open(const fs::path& path,
                                                                 offset_t base_offset,
                                                                 int32_t max_index_bytes,
                                                                 bool writable);
  // Kafka's TimeIndex.maybeAppend: appends only when `timestamp` is greater than the last
  // entry's; an offset or timestamp going backwards is an error. `skip_full_check` lets the
  // final entry on roll/close go in even when the index is full.
  result<void, storage_error> maybe_append(timestamp_ms timestamp, offset_t offset,
                                           bool skip_full_check = false);
  // The entry with the largest timestamp <= target, or (no_timestamp, base_offset).
  timestamp_offset lookup(timestamp_ms target) const;
  timestamp_offset entry_at(int32_t n) const;
  timestamp_offset last_entry() const;  // (no_timestamp, base_offset) when empty
  // Removes entries with offset >= `offset`.
  void truncate_to(offset_t offset);
  // Same as offset_index::sanity_check for (timestamp, offset) entries.
  result<void, storage_error> sanity_check(bool thorough) const;

 private:
  using index_file::index_file;
};

}  // namespace tarn::storage
