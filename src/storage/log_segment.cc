// A log segment: see log_segment.h. Kafka's LogSegment is the model; the differences (whole
// batches in reads, stricter index checks) are listed in docs/storage.md.
#include "storage/log_segment.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>

#include "fmt/format.h"
#include "record/record_batch.h"

namespace tarn::storage {
namespace {

storage_error invalid_argument(std::string message) {
  return {storage_errc::invalid_argument, std::move(message)};
}

// Read-only mapping of a whole .log file, for recovery's single pass.
class read_mapping {
 public:
  read_mapping() = default;
  ~read_mapping() {
    if (data_ != nullptr) ::munmap(data_, size_);
  }
  read_mapping(const read_mapping&) = delete;
  read_mapping& operator=(const read_mapping&) = delete;

  result<void, storage_error> map(int fd, size_t size, const fs::path& path) {
    if (size == 0) return {};
    void* p = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) return fail(io_error("mmap", path, errno));
    data_ = p;
    size_ = size;
    return {};
  }
  std::span<const uint8_t> bytes() const { return {static_cast<const uint8_t*>(data_), size_}; }

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace

std::string segment_file_name(offset_t base_offset, std::string_view suffix) {
  return fmt::format("{:020d}{}", base_offset, suffix);
}

std::optional<offset_t> parse_segment_file_name(std::string_view name, std::string_view suffix) {
  if (name.size() != 20 + suffix.size() || name.substr(20) != suffix) return std::nullopt;
  offset_t v = 0;
  for (char c : name.substr(0, 20)) {
    if (c < '0' || c > '9') return std::nullopt;
    if (v > (INT64_MAX - (c - '0')) / 10) return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

result<void, storage_error> read_slice(const file_slice& slice, std::span<uint8_t> out) {
  if (!slice.file || out.size() != static_cast<size_t>(slice.length)) {
    return fail(invalid_argument("read_slice: buffer size differs from the slice length"));
  }
  return pread_exact(slice.file->fd.get(), out, slice.position, slice.file->path);
}

log_segment::log_segment(offset_t base_offset, const segment_options& options, timestamp_ms now,
                         std::string_view suffix)
    : base_offset_(base_offset),
      options_(options),
      suffix_(suffix),
      next_offset_(base_offset),
      offset_of_max_timestamp_so_far_(base_offset),
      created_ms_(now) {}

log_segment::~log_segment() {
  if (!closed_) (void)close();
}

result<std::unique_ptr<log_segment>, storage_error> log_segment::create(
    const fs::path& dir, offset_t base_offset, const segment_options& options, timestamp_ms now,
    std::string_view suffix) {
  std::unique_ptr<log_segment> seg(new log_segment(base_offset, options, now, suffix));
  auto r = seg->open_files(dir, /*create=*/true, /*thorough=*/true);
  if (r && options.preallocate_bytes > 0) r = seg->preallocate(options.preallocate_bytes);
  if (!r) {
    // Out of space or inodes after the .log was created (by us: O_EXCL): leave nothing
    // behind, so that a retry can create the segment again.
    seg->closed_ = true;
    const bool created = seg->file_ != nullptr;
    seg->offset_index_.reset();
    seg->time_index_.reset();
    seg->file_.reset();
    if (created) {
      for (const char* kind : {".log", ".index", ".timeindex"}) {
        ::unlink((dir / (segment_file_name(base_offset, kind) + seg->suffix_)).c_str());
      }
    }
    return fail(r.error());
  }
  return seg;
}

result<std::unique_ptr<log_segment>, storage_error> log_segment::open(
    const fs::path& dir, offset_t base_offset, const segment_options& options, timestamp_ms now,
    bool thorough, std::string_view suffix) {
  std::unique_ptr<log_segment> seg(new log_segment(base_offset, options, now, suffix));
  auto r = seg->open_files(dir, /*create=*/false, thorough);
  if (!r) return fail(r.error());
  if (!seg->index_rebuild_needed_) {
    auto l = seg->load_state();
    if (!l) return fail(l.error());
  }
  return seg;
}

result<void, storage_error> log_segment::open_files(const fs::path& dir, bool create,
                                                    bool thorough) {
  auto file = std::make_shared<segment_file>();
  file->path = dir / (segment_file_name(base_offset_, ".log") + suffix_);
  int flags = O_RDWR | O_CLOEXEC | O_CREAT | (create ? O_EXCL : 0);
  file->fd = unique_fd(::open(file->path.c_str(), flags, 0644));
  if (!file->fd.valid()) return fail(io_error(create ? "create" : "open", file->path, errno));
  struct stat st {};
  if (::fstat(file->fd.get(), &st) != 0) return fail(io_error("stat", file->path, errno));
  size_ = st.st_size;
  file_length_ = st.st_size;
  file_ = std::move(file);

  fs::path index_path = dir / (segment_file_name(base_offset_, ".index") + suffix_);
  fs::path time_index_path = dir / (segment_file_name(base_offset_, ".timeindex") + suffix_);
  std::error_code ec;
  if (!create && (!fs::exists(index_path, ec) || !fs::exists(time_index_path, ec))) {
    index_rebuild_needed_ = true;
    index_problem_ = "index file missing";
  }
  auto oi = offset_index::open(index_path, base_offset_, options_.max_index_bytes, create);
  auto ti = time_index::open(time_index_path, base_offset_, options_.max_index_bytes, create);
  if (oi && ti && !create && !index_rebuild_needed_) {
    auto c1 = (*oi)->sanity_check(size_, thorough);
    auto c2 = (*ti)->sanity_check(thorough);
    if (!c1 || !c2) {
      index_rebuild_needed_ = true;
      index_problem_ = !c1 ? c1.error().message : c2.error().message;
    }
  }
  // A file of the wrong length cannot even be mapped: recreate it empty.
  if (!oi) {
    if (oi.error().code != storage_errc::corrupt) return fail(oi.error());
    index_rebuild_needed_ = true;
    index_problem_ = oi.error().message;
    ::unlink(index_path.c_str());
    oi = offset_index::open(index_path, base_offset_, options_.max_index_bytes, false);
    if (!oi) return fail(oi.error());
  }
  if (!ti) {
    if (ti.error().code != storage_errc::corrupt) return fail(ti.error());
    index_rebuild_needed_ = true;
    index_problem_ = ti.error().message;
    ::unlink(time_index_path.c_str());
    ti = time_index::open(time_index_path, base_offset_, options_.max_index_bytes, false);
    if (!ti) return fail(ti.error());
  }
  offset_index_ = std::move(*oi);
  time_index_ = std::move(*ti);
  if (index_rebuild_needed_) {
    auto r1 = offset_index_->reset();
    if (!r1) return r1;
    auto r2 = time_index_->reset();
    if (!r2) return r2;
  }
  return {};
}

result<void, storage_error> log_segment::load_state() {
  // The max timestamp is the time index's last entry (a closed segment always ends with it),
  // then whatever batches follow that entry's offset.
  timestamp_offset last = time_index_->last_entry();
  max_timestamp_so_far_ = last.timestamp;
  offset_of_max_timestamp_so_far_ = last.offset;
  int64_t position = offset_index_->lookup(last.offset).position;
  next_offset_ = base_offset_;
  while (true) {
    auto h = header_at(position);
    if (!h) {
      index_rebuild_needed_ = true;
      index_problem_ = h.error().message;
      return {};
    }
    if (!*h) break;
    const stored_batch_header& hdr = (*h)->header;
    if (hdr.max_timestamp > max_timestamp_so_far_) {
      max_timestamp_so_far_ = hdr.max_timestamp;
      offset_of_max_timestamp_so_far_ = hdr.last_offset();
    }
    next_offset_ = hdr.next_offset();
    position += hdr.size_in_bytes();
  }
  if (position != size_) {
    index_rebuild_needed_ = true;
    index_problem_ = fmt::format("{} bytes after the last whole batch", size_ - position);
  }
  return {};
}

result<void, storage_error> log_segment::preallocate(int64_t bytes) {
  const int fd = file_->fd.get();
  int rc = 0;
  do {
    rc = ::fallocate(fd, 0, 0, bytes);
  } while (rc != 0 && errno == EINTR);
  if (rc == 0) {
    file_length_ = bytes;
    return {};
  }
  const int err = errno;
  if (err == EOPNOTSUPP || err == ENOSYS) {
    // What Kafka gets from RandomAccessFile.setLength: a sparse file of that length.
    if (::ftruncate(fd, bytes) != 0) return fail(io_error("truncate", file_->path, errno));
    file_length_ = bytes;
    return {};
  }
  if (err == ENOSPC || err == EDQUOT || err == EFBIG) {
    // Less free space than a whole segment: it grows with its appends instead, as without
    // preallocation, and a full disk fails the append that meets it. A partial allocation goes.
    if (::ftruncate(fd, 0) != 0) return fail(io_error("truncate", file_->path, errno));
    file_length_ = 0;
    return {};
  }
  return fail(io_error("fallocate", file_->path, err));
}

result<void, storage_error> log_segment::trim() {
  if (file_length_ <= size_) return {};
  if (::ftruncate(file_->fd.get(), size_) != 0) {
    return fail(io_error("truncate", file_->path, errno));
  }
  file_length_ = size_;
  return {};
}

result<std::optional<batch_position>, storage_error> log_segment::header_at(
    int64_t position) const {
  // FileLogInputStream.nextBatch: a tail shorter than the header up to magic, or a batch that
  // does not fit before the end, is the end of the segment; a size below the minimum is corrupt.
  if (position > size_ - header_size_up_to_magic) return std::optional<batch_position>{};
  std::array<uint8_t, batch_header_size> buf{};
  size_t n = static_cast<size_t>(std::min<int64_t>(batch_header_size, size_ - position));
  auto r = pread_exact(file_->fd.get(), std::span(buf.data(), n), position, file_->path);
  if (!r) return fail(r.error());
  int32_t length = static_cast<int32_t>((uint32_t{buf[8]} << 24) | (uint32_t{buf[9]} << 16) |
                                        (uint32_t{buf[10]} << 8) | uint32_t{buf[11]});
  if (length < batch_header_size - log_overhead) {
    return fail(storage_error{
        storage_errc::corrupt,
        fmt::format("Found record size {} smaller than the batch header in file {} at position {}",
                    length, file_->path.string(), position)});
  }
  if (position > size_ - log_overhead - length) return std::optional<batch_position>{};
  auto h = read_batch_header(buf);
  if (!h) return fail(h.error());
  return std::optional<batch_position>(batch_position{*h, position});
}

timestamp_ms log_segment::largest_timestamp() const {
  if (max_timestamp_so_far_ >= 0) return max_timestamp_so_far_;
  return last_modified();
}

timestamp_ms log_segment::last_modified() const {
  struct stat st {};
  if (!file_ || ::fstat(file_->fd.get(), &st) != 0) return 0;
  return int64_t{st.st_mtim.tv_sec} * 1000 + st.st_mtim.tv_nsec / 1000000;
}

result<void, storage_error> log_segment::set_last_modified(timestamp_ms ms) {
  struct timespec times[2];
  times[0].tv_sec = 0;
  times[0].tv_nsec = UTIME_OMIT;  // access time unchanged
  times[1].tv_sec = ms / 1000;
  times[1].tv_nsec = (ms % 1000) * 1000000;
  if (::futimens(file_->fd.get(), times) != 0)
    return fail(io_error("futimens", file_->path, errno));
  return {};
}

result<void, storage_error> log_segment::change_file_suffixes(std::string_view old_suffix,
                                                              std::string_view new_suffix) {
  if (suffix_ != old_suffix) {
    return fail(invalid_argument(
        fmt::format("segment {} has suffix '{}', not '{}'", base_offset_, suffix_, old_suffix)));
  }
  const fs::path dir = file_->path.parent_path();
  auto name = [&](std::string_view kind) {
    return dir / (segment_file_name(base_offset_, kind) + std::string(new_suffix));
  };
  // A new shared file object rather than a changed path: slices other threads hold keep theirs.
  auto renamed = std::make_shared<segment_file>();
  renamed->path = name(".log");
  renamed->fd = unique_fd(::fcntl(file_->fd.get(), F_DUPFD_CLOEXEC, 0));
  if (!renamed->fd.valid()) return fail(io_error("dup", file_->path, errno));
  if (::rename(file_->path.c_str(), renamed->path.c_str()) != 0) {
    return fail(io_error("rename", file_->path, errno));
  }
  file_ = std::move(renamed);
  suffix_ = std::string(new_suffix);
  auto r1 = offset_index_->rename_to(name(".index"));
  if (!r1) return r1;
  auto r2 = time_index_->rename_to(name(".timeindex"));
  if (!r2) return r2;
  // Kafka's TransactionIndex.renameTo: only a file that exists moves (it is created with its
  // first entry).
  const fs::path txn_from =
      dir / (segment_file_name(base_offset_, ".txnindex") + std::string(old_suffix));
  if (::rename(txn_from.c_str(), name(".txnindex").c_str()) != 0 && errno != ENOENT) {
    return fail(io_error("rename", txn_from, errno));
  }
  return {};
}

result<void, storage_error> log_segment::read_bytes(int64_t position,
                                                    std::span<uint8_t> out) const {
  return pread_exact(file_->fd.get(), out, position, file_->path);
}

result<void, storage_error> log_segment::append(std::span<const uint8_t> batch,
                                                const batch_info& info) {
  if (batch.empty()) return {};
  if (info.base_offset < base_offset_ || !offset_index_->can_append_offset(info.last_offset) ||
      info.last_offset < info.base_offset) {
    return fail(invalid_argument(fmt::format("batch offsets [{}, {}] do not fit segment {}",
                                             info.base_offset, info.last_offset, base_offset_)));
  }
  if (offset_index_->full() || time_index_->full() ||
      size_ + static_cast<int64_t>(batch.size()) > INT32_MAX) {
    return fail(invalid_argument(
        fmt::format("segment {} is full; the log must roll before appending", base_offset_)));
  }
  const int64_t physical_position = size_;
  // Every way this append can fail on a full disk fails before the segment changes: index
  // blocks are allocated first, and a short write is cut back to the last whole batch.
  if (bytes_since_last_index_entry_ > options_.index_interval_bytes) {
    auto r1 = offset_index_->reserve_next_entry();
    if (!r1) return r1;
    auto r2 = time_index_->reserve_next_entry();
    if (!r2) return r2;
  }
  auto w = pwrite_all(file_->fd.get(), batch, size_, file_->path);
  if (!w) {
    if (::ftruncate(file_->fd.get(), physical_position) != 0) {
      // The bytes past size_ are overwritten by the next append, or cut by recovery.
      file_length_ = std::max(file_length_, physical_position + static_cast<int64_t>(batch.size()));
      return fail(storage_error{
          w.error().code, fmt::format("{}; truncating back to {} failed: {}", w.error().message,
                                      physical_position, std::strerror(errno))});
    }
    file_length_ = physical_position;  // a preallocated tail goes with the torn bytes
    return w;
  }
  size_ += static_cast<int64_t>(batch.size());
  file_length_ = std::max(file_length_, size_);
  if (physical_position == 0) rolling_based_timestamp_ = info.max_timestamp;
  if (info.max_timestamp > max_timestamp_so_far_) {
    max_timestamp_so_far_ = info.max_timestamp;
    offset_of_max_timestamp_so_far_ = info.last_offset;
  }
  // KAFKA-806: one decision per batch. The entry maps the batch's last offset to its start.
  if (bytes_since_last_index_entry_ > options_.index_interval_bytes) {
    auto a = offset_index_->append(info.last_offset, static_cast<int32_t>(physical_position));
    if (!a) return a;
    auto t = time_index_->maybe_append(max_timestamp_so_far_, offset_of_max_timestamp_so_far_);
    if (!t) return t;
    bytes_since_last_index_entry_ = 0;
  }
  bytes_since_last_index_entry_ += static_cast<int32_t>(batch.size());
  next_offset_ = info.last_offset + 1;
  return {};
}

int64_t log_segment::time_waited_for_roll(timestamp_ms now, timestamp_ms message_timestamp) {
  if (!rolling_based_timestamp_ && size_ > 0) {
    auto h = header_at(0);
    if (h && *h) rolling_based_timestamp_ = (*h)->header.max_timestamp;
  }
  timestamp_ms ts = rolling_based_timestamp_.value_or(-1);
  if (ts >= 0) return message_timestamp - ts;
  return now - created_ms_;
}

bool log_segment::should_roll(const roll_params& p) {
  bool reached_roll_ms = time_waited_for_roll(p.now, p.max_timestamp_in_messages) >
                         p.max_segment_ms - options_.roll_jitter_ms;
  return size_ > int64_t{p.max_segment_bytes} - p.messages_size || (size_ > 0 && reached_roll_ms) ||
         offset_index_->full() || time_index_->full() ||
         !offset_index_->can_append_offset(p.max_offset_in_messages);
}

result<std::optional<batch_position>, storage_error> log_segment::translate_offset(
    offset_t offset, int64_t starting_position) const {
  int64_t position = std::max<int64_t>(offset_index_->lookup(offset).position, starting_position);
  while (true) {
    auto h = header_at(position);
    if (!h || !*h) return h;
    if ((*h)->header.last_offset() >= offset) return h;
    position += (*h)->header.size_in_bytes();
  }
}

result<std::optional<file_slice>, storage_error> log_segment::read(offset_t start_offset,
                                                                   int32_t max_bytes,
                                                                   int64_t max_position,
                                                                   bool min_one_batch) const {
  if (max_bytes < 0) {
    return fail(invalid_argument(fmt::format("Invalid max size {} for log read", max_bytes)));
  }
  auto start = translate_offset(start_offset);
  if (!start) return fail(start.error());
  if (!*start) return std::optional<file_slice>{};
  const int64_t start_position = (*start)->position;
  const int64_t first_size = (*start)->header.size_in_bytes();
  max_position = std::min(max_position, size_);
  const int64_t limit = std::min(max_position, start_position + int64_t{max_bytes});
  // Whole batches only: jump to the last indexed batch start at or before the limit, then walk
  // the few batch headers after it.
  int64_t end = start_position;
  int64_t indexed = offset_index_->lookup_by_position(limit).position;
  if (indexed > end) end = indexed;
  while (true) {
    auto h = header_at(end);
    if (!h) return fail(h.error());
    if (!*h || end + (*h)->header.size_in_bytes() > limit) break;
    end += (*h)->header.size_in_bytes();
  }
  if (end == start_position && min_one_batch && start_position + first_size <= max_position) {
    end = start_position + first_size;
  }
  return std::optional<file_slice>(
      file_slice{file_, start_position, static_cast<int32_t>(end - start_position)});
}

result<std::optional<batch_position>, storage_error> log_segment::find_batch_by_timestamp(
    timestamp_ms timestamp, offset_t starting_offset) const {
  timestamp_offset entry = time_index_->lookup(timestamp);
  int64_t position = offset_index_->lookup(std::max(entry.offset, starting_offset)).position;
  while (true) {
    auto h = header_at(position);
    if (!h || !*h) return h;
    const stored_batch_header& hdr = (*h)->header;
    if (hdr.max_timestamp >= timestamp && hdr.last_offset() >= starting_offset) return h;
    position += hdr.size_in_bytes();
  }
}

result<segment_recovery, storage_error> log_segment::recover() {
  auto r1 = offset_index_->reset();
  if (!r1) return fail(r1.error());
  auto r2 = time_index_->reset();
  if (!r2) return fail(r2.error());
  segment_recovery out;
  read_mapping mapping;
  auto m = mapping.map(file_->fd.get(), static_cast<size_t>(size_), file_->path);
  if (!m) return fail(m.error());
  std::span<const uint8_t> bytes = mapping.bytes();

  int64_t valid = 0;
  int64_t last_index_entry = 0;
  timestamp_ms max_ts = no_timestamp;
  offset_t offset_of_max_ts = base_offset_;
  offset_t next = base_offset_;
  record::batch_reader reader(bytes);
  record::record_batch_view view;
  while (reader.next(view)) {
    auto h = validate_stored_batch(view.bytes());
    if (!h) {
      out.reason = fmt::format("batch at position {}: {}", valid, h.error().message);
      break;
    }
    if (h->base_offset < next || !offset_index_->can_append_offset(h->last_offset())) {
      out.reason = fmt::format("batch at position {} has offsets [{}, {}], expected {} or more",
                               valid, h->base_offset, h->last_offset(), next);
      break;
    }
    if (h->partition_leader_epoch >= 0 &&
        (out.epochs_seen.empty() || h->partition_leader_epoch > out.epochs_seen.back().epoch)) {
      out.epochs_seen.push_back({h->partition_leader_epoch, h->base_offset});
    }
    if (h->max_timestamp > max_ts) {
      max_ts = h->max_timestamp;
      offset_of_max_ts = h->last_offset();
    }
    if (valid - last_index_entry > options_.index_interval_bytes) {
      auto a = offset_index_->append(h->last_offset(), static_cast<int32_t>(valid));
      if (!a) return fail(a.error());
      auto t = time_index_->maybe_append(max_ts, offset_of_max_ts);
      if (!t) return fail(t.error());
      last_index_entry = valid;
    }
    valid += h->size_in_bytes();
    next = h->next_offset();
    ++out.valid_batches;
  }
  if (out.reason.empty() && reader.stop() != record::batch_stop::end) {
    out.reason = fmt::format("{} bytes at position {}: {}", size_ - valid, valid,
                             record::to_string(reader.stop()));
  }
  out.valid_bytes = valid;
  out.truncated_bytes = size_ - valid;
  if (out.truncated_bytes > 0) {
    if (::ftruncate(file_->fd.get(), valid) != 0)
      return fail(io_error("truncate", file_->path, errno));
    size_ = valid;
    file_length_ = valid;
  }
  next_offset_ = next;
  max_timestamp_so_far_ = max_ts;
  offset_of_max_timestamp_so_far_ = offset_of_max_ts;
  rolling_based_timestamp_.reset();
  bytes_since_last_index_entry_ = 0;
  auto t1 = offset_index_->trim_to_valid_size();
  if (!t1) return fail(t1.error());
  // A closed segment always ends with its largest timestamp; recovery writes it too.
  auto t2 = time_index_->maybe_append(max_ts, offset_of_max_ts, /*skip_full_check=*/true);
  if (!t2) return fail(t2.error());
  auto t3 = time_index_->trim_to_valid_size();
  if (!t3) return fail(t3.error());
  index_rebuild_needed_ = false;
  index_problem_.clear();
  return out;
}

result<int64_t, storage_error> log_segment::truncate_to(offset_t offset) {
  auto mapping = translate_offset(offset);
  if (!mapping) return fail(mapping.error());
  offset_index_->truncate_to(offset);
  time_index_->truncate_to(offset);
  auto r1 = offset_index_->resize(options_.max_index_bytes);
  if (!r1) return fail(r1.error());
  auto r2 = time_index_->resize(options_.max_index_bytes);
  if (!r2) return fail(r2.error());
  int64_t truncated = 0;
  if (*mapping) {
    int64_t position = (*mapping)->position;
    truncated = size_ - position;
    // A preallocated tail goes too, as Kafka's FileRecords.truncateTo cuts the channel.
    if (::ftruncate(file_->fd.get(), position) != 0) {
      return fail(io_error("truncate", file_->path, errno));
    }
    size_ = position;
    file_length_ = position;
  }
  if (size_ == 0) rolling_based_timestamp_.reset();
  bytes_since_last_index_entry_ = 0;
  auto l = load_state();
  if (!l) return fail(l.error());
  return truncated;
}

result<void, storage_error> log_segment::on_become_inactive() {
  auto t = time_index_->maybe_append(max_timestamp_so_far_, offset_of_max_timestamp_so_far_,
                                     /*skip_full_check=*/true);
  if (!t) return t;
  auto r1 = offset_index_->trim_to_valid_size();
  if (!r1) return r1;
  auto r2 = time_index_->trim_to_valid_size();
  if (!r2) return r2;
  return trim();
}

result<void, storage_error> log_segment::make_active() {
  auto r1 = offset_index_->resize(options_.max_index_bytes);
  if (!r1) return r1;
  return time_index_->resize(options_.max_index_bytes);
}

result<void, storage_error> log_segment::flush() {
  if (::fdatasync(file_->fd.get()) != 0) return fail(io_error("fdatasync", file_->path, errno));
  auto r1 = offset_index_->flush();
  if (!r1) return r1;
  return time_index_->flush();
}

result<void, storage_error> log_segment::close() {
  if (closed_) return {};
  closed_ = true;
  auto t = time_index_->maybe_append(max_timestamp_so_far_, offset_of_max_timestamp_so_far_,
                                     /*skip_full_check=*/true);
  auto r1 = offset_index_->close();
  auto r2 = time_index_->close();
  // UnifiedLog.close makes the active segment inactive first, which trims the .log: after a
  // clean shutdown the files are Kafka's byte for byte, preallocated or not.
  auto l = trim();
  file_.reset();
  if (!t) return t;
  if (!r1) return r1;
  if (!r2) return r2;
  return l;
}

result<void, storage_error> log_segment::remove() {
  fs::path log_path = file_ ? file_->path : fs::path();
  closed_ = true;
  auto r1 = offset_index_->remove();
  auto r2 = time_index_->remove();
  file_.reset();
  if (!log_path.empty() && ::unlink(log_path.c_str()) != 0 && errno != ENOENT) {
    return fail(io_error("unlink", log_path, errno));
  }
  if (!log_path.empty()) {
    const fs::path txn_path =
        log_path.parent_path() / (segment_file_name(base_offset_, ".txnindex") + suffix_);
    if (::unlink(txn_path.c_str()) != 0 && errno != ENOENT) {
      return fail(io_error("unlink", txn_path, errno));
    }
  }
  if (!r1) return r1;
  return r2;
}

}  // namespace tarn::storage
