// Memory-mapped offset and time indexes: see log_index.h.
#include "storage/log_index.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "fmt/format.h"

namespace tarn::storage {
namespace {

uint32_t load32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}
uint64_t load64(const uint8_t* p) { return (uint64_t{load32(p)} << 32) | load32(p + 4); }
void store32(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 24);
  p[1] = static_cast<uint8_t>(v >> 16);
  p[2] = static_cast<uint8_t>(v >> 8);
  p[3] = static_cast<uint8_t>(v);
}
void store64(uint8_t* p, uint64_t v) {
  store32(p, static_cast<uint32_t>(v >> 32));
  store32(p + 4, static_cast<uint32_t>(v));
}

constexpr int64_t reserve_unit_bytes = 4096;

int64_t round_up(int64_t n, int64_t unit) { return (n + unit - 1) / unit * unit; }

// The last of `entries` slots whose entry satisfies `at_most_target` (entries are sorted, so the
// predicate holds for a prefix), or -1 when none does: the one binary search of both indexes.
// (Not std::ranges::partition_point over an iota view: clang before 16 cannot compile
// libstdc++'s ranges, and the fuzzers build with clang.)
template <typename predicate>
int32_t last_slot_where(int32_t entries, predicate at_most_target) {
  int32_t lo = 0, hi = entries;  // the first slot failing the predicate lies in [lo, hi]
  while (lo < hi) {
    const int32_t mid = lo + (hi - lo) / 2;
    if (at_most_target(mid)) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo - 1;
}

}  // namespace

index_file::index_file(fs::path path, offset_t base_offset, int32_t max_index_bytes, int entry_size)
    : path_(std::move(path)),
      base_offset_(base_offset),
      max_index_bytes_(max_index_bytes),
      entry_size_(entry_size) {}

index_file::~index_file() { unmap(); }

void index_file::unmap() {
  if (map_ != nullptr) ::munmap(map_, static_cast<size_t>(length_));
  map_ = nullptr;
}

result<unique_fd, storage_error> index_file::open_file() const {
  unique_fd fd(::open(path_.c_str(), O_RDWR | O_CLOEXEC));
  if (!fd.valid()) return fail(io_error("open", path_, errno));
  return fd;
}

result<void, storage_error> index_file::map(int64_t length, int fd) {
  unmap();
  length_ = length;
  max_entries_ = static_cast<int32_t>(length / entry_size_);
  if (length == 0) return {};
  void* p = ::mmap(nullptr, static_cast<size_t>(length), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) {
    length_ = 0;
    max_entries_ = 0;
    return fail(io_error("mmap", path_, errno));
  }
  // Entries are read by binary search and written one at a time, never in sequence, and the
  // preallocated length past them is a hole: the kernel's read-around on a fault would fill up to
  // read_ahead_kb (8 MiB on this project's machines) of page cache with zeroed pages for each
  // index of each segment, a few milliseconds of memset each. MADV_RANDOM faults in the one page.
  // Advice only: a refusal changes nothing but that.
  (void)::madvise(p, static_cast<size_t>(length), MADV_RANDOM);
  map_ = static_cast<uint8_t*>(p);
  return {};
}

result<void, storage_error> index_file::open(bool writable) {
  unique_fd fd(::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644));
  if (!fd.valid()) return fail(io_error("open", path_, errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return fail(io_error("stat", path_, errno));
  if (st.st_size % entry_size_ != 0) {
    return fail(corrupt(fmt::format(
        "Index file {} is corrupt, found {} bytes which is neither positive nor a multiple of {}",
        path_.string(), st.st_size, entry_size_)));
  }
  if (st.st_size > INT32_MAX) {
    return fail(corrupt(fmt::format("Index file {} is {} bytes, larger than an index can be",
                                    path_.string(), st.st_size)));
  }
  auto m = map(st.st_size, fd.get());
  if (!m) return m;
  open_ = true;
  entries_ = static_cast<int32_t>(st.st_size / entry_size_);
  // Unknown which pages have blocks (a crash can leave a sparse tail): the first reservation
  // covers the entries too; fallocate over allocated blocks changes nothing.
  reserved_bytes_ = 0;
  if (writable) return resize(max_index_bytes_);
  return {};
}

result<void, storage_error> index_file::resize(int64_t new_size) {
  int64_t rounded = new_size - new_size % entry_size_;
  if (rounded < int64_t{entries_} * entry_size_) rounded = int64_t{entries_} * entry_size_;
  if (rounded == length_) return {};
  auto fd = open_file();
  if (!fd) return fail(fd.error());
  unmap();
  if (::ftruncate(fd->get(), rounded) != 0) return fail(io_error("truncate", path_, errno));
  // Shrinking frees the blocks past the new end (all but the partial last page).
  reserved_bytes_ = std::min(reserved_bytes_, round_up(rounded, reserve_unit_bytes));
  return map(rounded, fd->get());
}

result<void, storage_error> index_file::reserve_through(int64_t end_byte) {
  if (fallocate_unsupported_ || end_byte <= reserved_bytes_) return {};
  const int64_t to = std::min(length_, round_up(end_byte, reserve_unit_bytes));
  if (to <= reserved_bytes_) return {};
  // Once per 4 KiB of entries (512 offset entries, about 2 MiB of log at the default
  // index.interval.bytes): the open and close cost little beside that.
  auto fd = open_file();
  if (!fd) return fail(fd.error());
  if (::fallocate(fd->get(), 0, reserved_bytes_, to - reserved_bytes_) != 0) {
    if (errno == EOPNOTSUPP || errno == ENOSYS) {
      fallocate_unsupported_ = true;  // nothing to do but store and hope, as Kafka does
      return {};
    }
    return fail(io_error("allocate index space in", path_, errno));
  }
  reserved_bytes_ = to;
  return {};
}

result<void, storage_error> index_file::reset() {
  entries_ = 0;
  auto fd = open_file();
  if (!fd) return fail(fd.error());
  if (::ftruncate(fd->get(), 0) != 0) return fail(io_error("truncate", path_, errno));
  unmap();
  length_ = 0;
  reserved_bytes_ = 0;
  return resize(max_index_bytes_);
}

result<void, storage_error> index_file::flush() {
  if (map_ != nullptr && entries_ > 0 &&
      ::msync(map_, static_cast<size_t>(entries_) * entry_size_, MS_SYNC) != 0) {
    return fail(io_error("msync", path_, errno));
  }
  return {};
}

result<void, storage_error> index_file::close() {
  if (!open_) return {};
  auto t = trim_to_valid_size();
  unmap();
  open_ = false;
  return t;
}

result<void, storage_error> index_file::rename_to(const fs::path& new_path) {
  if (::rename(path_.c_str(), new_path.c_str()) != 0) return fail(io_error("rename", path_, errno));
  path_ = new_path;
  return {};
}

result<void, storage_error> index_file::remove() {
  unmap();
  open_ = false;
  if (::unlink(path_.c_str()) != 0 && errno != ENOENT)
    return fail(io_error("unlink", path_, errno));
  return {};
}

// ---- offset index ----

result<std::unique_ptr<offset_index>, storage_error> offset_index::open(const fs::path& path,
                                                                        offset_t base_offset,
                                                                        int32_t max_index_bytes,
                                                                        bool writable) {
  std::unique_ptr<offset_index> idx(
      new offset_index(path, base_offset, max_index_bytes, entry_size));
  auto r = idx->index_file::open(writable);
  if (!r) return fail(r.error());
  return idx;
}

offset_position offset_index::entry_at(int32_t n) const {
  const uint8_t* p = entry(n);
  return {base_offset_ + static_cast<int32_t>(load32(p)), static_cast<int32_t>(load32(p + 4))};
}

offset_t offset_index::last_offset() const {
  return entries_ == 0 ? base_offset_ : entry_at(entries_ - 1).offset;
}

bool offset_index::can_append_offset(offset_t offset) const {
  offset_t relative = offset - base_offset_;
  return relative >= 0 && relative <= INT32_MAX;
}

result<void, storage_error> offset_index::append(offset_t offset, int32_t position) {
  if (full()) {
    return fail(
        storage_error{storage_errc::invalid_argument,
                      fmt::format("Attempt to append to a full index (size = {}).", entries_)});
  }
  if (entries_ != 0 && offset <= last_offset()) {
    return fail(storage_error{
        storage_errc::invalid_argument,
        fmt::format("Attempt to append an offset {} to position {} no larger than the last offset "
                    "appended ({}) to {}.",
                    offset, entries_, last_offset(), path_.string())});
  }
  if (!can_append_offset(offset)) {
    return fail(storage_error{
        storage_errc::invalid_argument,
        fmt::format("Offset {} does not fit the index of segment {}", offset, base_offset_)});
  }
  if (auto r = reserve_next_entry(); !r) return r;
  uint8_t* p = entry(entries_);
  store32(p, static_cast<uint32_t>(offset - base_offset_));
  store32(p + 4, static_cast<uint32_t>(position));
  add_entry();
  return {};
}

offset_position offset_index::lookup(offset_t target) const {
  const int32_t slot =
      last_slot_where(entries_, [&](int32_t n) { return entry_at(n).offset <= target; });
  if (slot < 0) return {base_offset_, 0};
  return entry_at(slot);
}

offset_position offset_index::lookup_by_position(int64_t position) const {
  const int32_t slot =
      last_slot_where(entries_, [&](int32_t n) { return entry_at(n).position <= position; });
  if (slot < 0) return {base_offset_, 0};
  return entry_at(slot);
}

void offset_index::truncate_to(offset_t offset) {
  int32_t keep = 0;
  while (keep < entries_ && entry_at(keep).offset < offset) ++keep;
  truncate_entries(keep);
}

result<void, storage_error> offset_index::sanity_check(int64_t log_size, bool thorough) const {
  for (int32_t i = 0; i < entries_; ++i) {
    if (!thorough && i > 0 && i < entries_ - 1) i = entries_ - 1;
    offset_position e = entry_at(i);
    bool bad = e.offset < base_offset_ || e.position < 0 || e.position >= log_size;
    if (i > 0) {
      offset_position prev = entry_at(thorough ? i - 1 : 0);
      bad = bad || e.offset <= prev.offset || e.position <= prev.position;
    }
    if (bad) {
      return fail(corrupt(fmt::format(
          "Corrupt index found, index file {} has entry {} (offset {}, position {}) out of order "
          "or outside the log of {} bytes",
          path_.string(), i, e.offset, e.position, log_size)));
    }
  }
  return {};
}

// ---- time index ----

result<std::unique_ptr<time_index>, storage_error> time_index::open(const fs::path& path,
                                                                    offset_t base_offset,
                                                                    int32_t max_index_bytes,
                                                                    bool writable) {
  std::unique_ptr<time_index> idx(new time_index(path, base_offset, max_index_bytes, entry_size));
  auto r = idx->index_file::open(writable);
  if (!r) return fail(r.error());
  return idx;
}

timestamp_offset time_index::entry_at(int32_t n) const {
  const uint8_t* p = entry(n);
  return {static_cast<int64_t>(load64(p)), base_offset_ + static_cast<int32_t>(load32(p + 8))};
}

timestamp_offset time_index::last_entry() const {
  return entries_ == 0 ? timestamp_offset{no_timestamp, base_offset_} : entry_at(entries_ - 1);
}

result<void, storage_error> time_index::maybe_append(timestamp_ms timestamp, offset_t offset,
                                                     bool skip_full_check) {
  if (!skip_full_check && full()) {
    return fail(storage_error{
        storage_errc::invalid_argument,
        fmt::format("Attempt to append to a full time index (size = {}).", entries_)});
  }
  timestamp_offset last = last_entry();
  if (entries_ != 0 && offset < last.offset) {
    return fail(storage_error{
        storage_errc::invalid_argument,
        fmt::format("Attempt to append an offset ({}) to slot {} no larger than the last offset "
                    "appended ({}) to {}",
                    offset, entries_, last.offset, path_.string())});
  }
  if (entries_ != 0 && timestamp < last.timestamp) {
    return fail(storage_error{
        storage_errc::invalid_argument,
        fmt::format("Attempt to append a timestamp ({}) to slot {} no larger than the last "
                    "timestamp appended ({}) to {}",
                    timestamp, entries_, last.timestamp, path_.string())});
  }
  if (timestamp <= last.timestamp) return {};
  if (entries_ >= max_entries_) {
    // Only reachable with skip_full_check: grow by one entry for the closing entry.
    auto r = resize(int64_t{entries_ + 1} * entry_size_);
    if (!r) return r;
  }
  if (auto r = reserve_next_entry(); !r) return r;
  uint8_t* p = entry(entries_);
  store64(p, static_cast<uint64_t>(timestamp));
  store32(p + 8, static_cast<uint32_t>(offset - base_offset_));
  add_entry();
  return {};
}

timestamp_offset time_index::lookup(timestamp_ms target) const {
  const int32_t slot =
      last_slot_where(entries_, [&](int32_t n) { return entry_at(n).timestamp <= target; });
  if (slot < 0) return {no_timestamp, base_offset_};
  return entry_at(slot);
}

void time_index::truncate_to(offset_t offset) {
  int32_t keep = 0;
  while (keep < entries_ && entry_at(keep).offset < offset) ++keep;
  truncate_entries(keep);
}

result<void, storage_error> time_index::sanity_check(bool thorough) const {
  for (int32_t i = 0; i < entries_; ++i) {
    if (!thorough && i > 0 && i < entries_ - 1) i = entries_ - 1;
    timestamp_offset e = entry_at(i);
    bool bad = e.offset < base_offset_ || e.timestamp < 0;
    if (i > 0) {
      timestamp_offset prev = entry_at(thorough ? i - 1 : 0);
      bad = bad || e.offset < prev.offset || e.timestamp <= prev.timestamp;
    }
    if (bad) {
      return fail(corrupt(fmt::format(
          "Corrupt time index found, time index file {} has entry {} (timestamp {}, offset {}) "
          "out of order",
          path_.string(), i, e.timestamp, e.offset)));
    }
  }
  return {};
}

}  // namespace tarn::storage
