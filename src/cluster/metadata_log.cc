// The local metadata log: snapshot + log files, replay and torn-tail recovery (metadata_log.h).
#include "cluster/metadata_log.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "fmt/format.h"

namespace tarn::cluster {

using storage::storage_error;

result<std::unique_ptr<metadata_log>, storage_error> metadata_log::open(
    const metadata_log_options& options, metadata_recovery* recovery) {
  std::unique_ptr<metadata_log> m(new metadata_log(options));
  metadata_recovery local;
  auto loaded = m->load(recovery != nullptr ? *recovery : local);
  if (!loaded) return fail(loaded.error());
  return m;
}

result<void, storage_error> metadata_log::load(metadata_recovery& recovery) {
  recovery = metadata_recovery{};
  std::error_code ec;
  storage::fs::create_directories(options_.dir, ec);
  if (ec) return fail(storage::io_error("create directory", options_.dir, ec.value()));

  const auto snapshot_path = options_.dir / metadata_snapshot_file_name;
  if (storage::fs::exists(snapshot_path, ec)) {
    auto text = storage::read_small_file(snapshot_path, size_t{max_entry_bytes} + 64);
    if (!text) return fail(text.error());
    auto bytes = std::span(reinterpret_cast<const uint8_t*>(text->data()), text->size());
    auto d = decode_entry(bytes);
    // The snapshot is replaced atomically, so any damage is corruption, never a torn write.
    if (d.status != decode_status::ok || d.bytes != bytes.size()) {
      return fail(storage::corrupt(
          fmt::format("{}: not a valid snapshot ({})", snapshot_path.string(),
                      d.status == decode_status::incomplete ? "truncated" : d.message)));
    }
    for (const auto& r : d.entry.records) image_.apply(r);
    image_.next_offset = d.entry.offset;
    recovery.had_snapshot = true;
    empty_at_open_ = false;
  }

  const auto log_path = options_.dir / metadata_log_file_name;
  if (storage::fs::exists(log_path, ec)) {
    auto text = storage::read_small_file(log_path, size_t{1} << 30);
    if (!text) return fail(text.error());
    auto bytes = std::span(reinterpret_cast<const uint8_t*>(text->data()), text->size());
    size_t pos = 0;
    while (pos < bytes.size()) {
      auto d = decode_entry(bytes.subspan(pos));
      if (d.status == decode_status::ok) {
        if (d.entry.offset >= image_.next_offset) {
          if (d.entry.offset != image_.next_offset) {
            return fail(storage::corrupt(
                fmt::format("{}: entry at byte {} has offset {}, expected {}", log_path.string(),
                            pos, d.entry.offset, image_.next_offset)));
          }
          for (const auto& r : d.entry.records) image_.apply(r);
          image_.next_offset = d.entry.offset + 1;
          ++recovery.entries_replayed;
          ++entries_since_snapshot_;
        }  // else: already in the snapshot (a crash between snapshot and log reset)
        empty_at_open_ = false;
        pos += d.bytes;
        continue;
      }
      // A torn tail: the file ends inside this entry, or the entry claims to reach the end of
      // the file (or past it) and fails its CRC. Anything else is corruption of an acknowledged
      // change, which is not ours to drop.
      bool reaches_end = true;
      if (d.status == decode_status::corrupt && bytes.size() - pos >= entry_header_bytes) {
        uint32_t length = (uint32_t{bytes[pos]} << 24) | (uint32_t{bytes[pos + 1]} << 16) |
                          (uint32_t{bytes[pos + 2]} << 8) | bytes[pos + 3];
        reaches_end =
            length <= max_entry_bytes && pos + entry_header_bytes + length >= bytes.size();
        // zeros where the entry should be (a file extended but never written) are torn too
        bool all_zero = true;
        for (size_t i = pos; i < bytes.size() && all_zero; ++i) all_zero = bytes[i] == 0;
        reaches_end = reaches_end || all_zero;
      }
      if (!reaches_end) {
        return fail(
            storage::corrupt(fmt::format("{}: entry at byte {} is corrupt ({}) and "
                                         "valid bytes follow it",
                                         log_path.string(), pos, d.message)));
      }
      recovery.torn_bytes = static_cast<int64_t>(bytes.size() - pos);
      break;
    }
    log_size_ = static_cast<int64_t>(pos);
    if (recovery.torn_bytes > 0) {
      if (::truncate(log_path.c_str(), log_size_) != 0) {
        return fail(storage::io_error("truncate", log_path, errno));
      }
    }
  }
  return open_log_for_append();
}

result<void, storage_error> metadata_log::open_log_for_append() {
  const auto log_path = options_.dir / metadata_log_file_name;
  bool existed = storage::fs::exists(log_path);
  storage::unique_fd fd(::open(log_path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
  if (!fd.valid()) return fail(storage::io_error("open", log_path, errno));
  if (::fsync(fd.get()) != 0) return fail(storage::io_error("fsync", log_path, errno));
  if (!existed) {
    auto s = storage::fsync_directory(options_.dir);
    if (!s) return s;
  }
  log_fd_ = std::move(fd);
  return {};
}

result<void, storage_error> metadata_log::append(std::vector<metadata_record> records) {
  const auto log_path = options_.dir / metadata_log_file_name;
  metadata_entry entry{image_.next_offset, std::move(records)};
  std::vector<uint8_t> bytes = encode_entry(entry);
  if (bytes.size() - entry_header_bytes > max_entry_bytes) {
    return fail(storage_error{storage::storage_errc::invalid_argument,
                              "metadata change too large for one entry"});
  }
  auto w = storage::pwrite_all(log_fd_.get(), bytes, log_size_, log_path);
  if (w && ::fdatasync(log_fd_.get()) != 0) w = fail(storage::io_error("fsync", log_path, errno));
  if (!w) {
    (void)::ftruncate(log_fd_.get(), log_size_);  // best effort; open() cuts a torn tail anyway
    return w;
  }
  log_size_ += static_cast<int64_t>(bytes.size());
  for (const auto& r : entry.records) image_.apply(r);
  image_.next_offset = entry.offset + 1;
  if (++entries_since_snapshot_ >= options_.snapshot_every) return snapshot();
  return {};
}

result<void, storage_error> metadata_log::snapshot() {
  metadata_entry entry{image_.next_offset, image_.to_records()};
  std::vector<uint8_t> bytes = encode_entry(entry);
  auto w = storage::write_file_atomic(
      options_.dir / metadata_snapshot_file_name,
      std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
  if (!w) return w;
  // The log's entries are all below the snapshot's offset now; replay would skip them, so a
  // crash before this reset is harmless.
  auto e = storage::write_file_atomic(options_.dir / metadata_log_file_name, "");
  if (!e) return e;
  log_size_ = 0;
  entries_since_snapshot_ = 0;
  return open_log_for_append();
}

}  // namespace tarn::cluster
