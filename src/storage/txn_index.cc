// Kafka's .txnindex files (see txn_index.h).
#include "storage/txn_index.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <system_error>

#include "storage/io.h"

namespace tarn::storage {

namespace {

void put(uint8_t* p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) p[i] = static_cast<uint8_t>(v >> (8 * (bytes - 1 - i)));
}
uint64_t get(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

std::array<uint8_t, txn_index_entry_size> encode_txn_index_entry(const aborted_txn& txn) {
  std::array<uint8_t, txn_index_entry_size> out{};
  put(out.data(), static_cast<uint16_t>(txn_index_version), 2);
  put(out.data() + 2, static_cast<uint64_t>(txn.producer_id), 8);
  put(out.data() + 10, static_cast<uint64_t>(txn.first_offset), 8);
  put(out.data() + 18, static_cast<uint64_t>(txn.last_offset), 8);
  put(out.data() + 26, static_cast<uint64_t>(txn.last_stable_offset), 8);
  return out;
}

result<std::vector<aborted_txn>, storage_error> decode_txn_index(std::span<const uint8_t> bytes) {
  std::vector<aborted_txn> out;
  out.reserve(bytes.size() / txn_index_entry_size);
  for (size_t pos = 0; pos + txn_index_entry_size <= bytes.size(); pos += txn_index_entry_size) {
    const uint8_t* p = bytes.data() + pos;
    const auto version = static_cast<int16_t>(get(p, 2));
    if (version != txn_index_version) {
      return fail(storage_error{
          storage_errc::corrupt,
          fmt::format("transaction index entry at {} has unknown version {}", pos, version)});
    }
    out.push_back({static_cast<int64_t>(get(p + 2, 8)), static_cast<int64_t>(get(p + 10, 8)),
                   static_cast<int64_t>(get(p + 18, 8)), static_cast<int64_t>(get(p + 26, 8))});
  }
  return out;
}

result<std::vector<aborted_txn>, storage_error> read_txn_index(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return std::vector<aborted_txn>{};
  auto text = read_small_file(path, 1 << 30);
  if (!text) return fail(text.error());
  return decode_txn_index(
      std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text->data()), text->size()));
}

namespace {

// Writes `entries` to `path` opened with `flags`, then fsyncs it.
result<void, storage_error> write_entries(const std::filesystem::path& path, int flags,
                                          std::span<const aborted_txn> entries) {
  unique_fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | flags, 0644));
  if (fd.get() < 0) return fail(io_error("open", path, errno));
  std::vector<uint8_t> bytes;
  bytes.reserve(entries.size() * txn_index_entry_size);
  for (const aborted_txn& t : entries) {
    const auto entry = encode_txn_index_entry(t);
    bytes.insert(bytes.end(), entry.begin(), entry.end());
  }
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return fail(io_error("write", path, errno));
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd.get()) != 0) return fail(io_error("fsync", path, errno));
  return {};
}

}  // namespace

result<void, storage_error> append_txn_index(const std::filesystem::path& path,
                                             const aborted_txn& txn) {
  return write_entries(path, O_APPEND, std::span<const aborted_txn>(&txn, 1));
}

result<void, storage_error> write_txn_index(const std::filesystem::path& path,
                                            std::span<const aborted_txn> entries) {
  return write_entries(path, O_TRUNC, entries);
}

}  // namespace tarn::storage
