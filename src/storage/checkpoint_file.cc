// Kafka's checkpoint file format: see checkpoint_file.h.
#include "storage/checkpoint_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <fstream>
#include <iterator>

#include "base/text.h"
#include "fmt/format.h"

namespace tarn::storage {
namespace {

constexpr int kCheckpointVersion = 0;

storage_error malformed(std::string_view location, std::string_view line) {
  return {storage_errc::corrupt,
          fmt::format("Malformed line in checkpoint file [{}]: {}", location, line)};
}

// Whitespace-separated fields (Kafka splits entries on "\\s+").
std::vector<std::string_view> fields(std::string_view line) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t')) ++i;
    size_t j = i;
    while (j < line.size() && line[j] != ' ' && line[j] != '\t') ++j;
    if (j > i) out.push_back(line.substr(i, j - i));
    i = j;
  }
  return out;
}

template <typename T>
bool parse_int(std::string_view s, T& out) {
  if (!s.empty() && s.front() == '+') s.remove_prefix(1);
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size() && !s.empty();
}

// Checks the version and count lines; returns the entry lines.
result<std::vector<std::string_view>, storage_error> entry_lines(std::string_view text,
                                                                 std::string_view location) {
  std::vector<std::string_view> lines = split_lines(text);
  if (lines.empty()) return std::vector<std::string_view>{};
  int version = 0;
  if (!parse_int(lines[0], version)) return fail(malformed(location, lines[0]));
  if (version != kCheckpointVersion) {
    return fail(storage_error{
        storage_errc::corrupt,
        fmt::format("Unrecognised version:{}, expected version: {} in checkpoint file at: {}",
                    version, kCheckpointVersion, location)});
  }
  if (lines.size() < 2) return std::vector<std::string_view>{};
  int32_t count = 0;
  if (!parse_int(lines[1], count)) return fail(malformed(location, lines[1]));
  std::vector<std::string_view> entries(lines.begin() + 2, lines.end());
  if (static_cast<int64_t>(entries.size()) != count) {
    return fail(storage_error{storage_errc::corrupt,
                              fmt::format("Expected [{}] entries in checkpoint file [{}], but "
                                          "found only [{}]",
                                          count, location, entries.size())});
  }
  return entries;
}

}  // namespace

std::string partition_dir_name(const topic_partition& tp) {
  return fmt::format("{}-{}", tp.topic, tp.partition);
}

std::string encode_offset_checkpoint(const std::vector<partition_offset>& entries) {
  std::string out = fmt::format("{}\n{}\n", kCheckpointVersion, entries.size());
  for (const partition_offset& e : entries) {
    out += fmt::format("{} {} {}\n", e.tp.topic, e.tp.partition, e.offset);
  }
  return out;
}

std::string encode_epoch_checkpoint(const std::vector<epoch_entry>& entries) {
  std::string out = fmt::format("{}\n{}\n", kCheckpointVersion, entries.size());
  for (const epoch_entry& e : entries) out += fmt::format("{} {}\n", e.epoch, e.start_offset);
  return out;
}

result<std::vector<partition_offset>, storage_error> decode_offset_checkpoint(
    std::string_view text, std::string_view location) {
  auto lines = entry_lines(text, location);
  if (!lines) return fail(lines.error());
  std::vector<partition_offset> out;
  out.reserve(lines->size());
  for (std::string_view line : *lines) {
    auto f = fields(line);
    partition_offset e;
    if (f.size() != 3 || !parse_int(f[1], e.tp.partition) || !parse_int(f[2], e.offset)) {
      return fail(malformed(location, line));
    }
    e.tp.topic = std::string(f[0]);
    out.push_back(std::move(e));
  }
  return out;
}

result<std::vector<epoch_entry>, storage_error> decode_epoch_checkpoint(std::string_view text,
                                                                        std::string_view location) {
  auto lines = entry_lines(text, location);
  if (!lines) return fail(lines.error());
  std::vector<epoch_entry> out;
  out.reserve(lines->size());
  for (std::string_view line : *lines) {
    auto f = fields(line);
    epoch_entry e;
    if (f.size() != 2 || !parse_int(f[0], e.epoch) || !parse_int(f[1], e.start_offset)) {
      return fail(malformed(location, line));
    }
    out.push_back(e);
  }
  return out;
}

result<void, storage_error> write_offset_checkpoint(const fs::path& path,
                                                    const std::vector<partition_offset>& entries) {
  return write_file_atomic(path, encode_offset_checkpoint(entries));
}

result<std::vector<partition_offset>, storage_error> read_offset_checkpoint(const fs::path& path) {
  auto text = read_small_file(path);
  if (!text) {
    if (text.error().code == storage_errc::not_found) return std::vector<partition_offset>{};
    return fail(text.error());
  }
  return decode_offset_checkpoint(*text, path.string());
}

result<void, storage_error> write_epoch_checkpoint(const fs::path& path,
                                                   const std::vector<epoch_entry>& entries) {
  return write_file_atomic(path, encode_epoch_checkpoint(entries));
}

result<std::vector<epoch_entry>, storage_error> read_epoch_checkpoint(const fs::path& path) {
  auto text = read_small_file(path);
  if (!text) {
    if (text.error().code == storage_errc::not_found) return std::vector<epoch_entry>{};
    return fail(text.error());
  }
  return decode_epoch_checkpoint(*text, path.string());
}

result<void, storage_error> write_clean_shutdown_marker(const fs::path& log_dir,
                                                        int64_t broker_epoch) {
  // Kafka writes the file in place (no rename) and fsyncs it; its content is Jackson's
  // encoding of {version, brokerEpoch}.
  fs::path path = log_dir / clean_shutdown_file_name;
  std::string body = fmt::format("{{\"version\":0,\"brokerEpoch\":{}}}", broker_epoch);
  unique_fd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  if (!fd.valid()) return fail(io_error("create", path, errno));
  auto w = pwrite_all(
      fd.get(), std::span(reinterpret_cast<const uint8_t*>(body.data()), body.size()), 0, path);
  if (!w) return w;
  if (::fsync(fd.get()) != 0) return fail(io_error("fsync", path, errno));
  return fsync_directory(log_dir);
}

bool has_clean_shutdown_marker(const fs::path& log_dir) {
  std::error_code ec;
  return fs::exists(log_dir / clean_shutdown_file_name, ec);
}

int64_t clean_shutdown_marker_broker_epoch(const fs::path& log_dir) {
  std::ifstream in(log_dir / clean_shutdown_file_name);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  constexpr std::string_view key = "\"brokerEpoch\":";
  const size_t at = text.find(key);
  if (at == std::string::npos) return -1;
  size_t from = at + key.size();
  while (from < text.size() && text[from] == ' ') ++from;
  int64_t epoch = -1;
  const auto [end, ec] = std::from_chars(text.data() + from, text.data() + text.size(), epoch);
  return ec == std::errc() ? epoch : -1;
}

result<void, storage_error> remove_clean_shutdown_marker(const fs::path& log_dir) {
  fs::path path = log_dir / clean_shutdown_file_name;
  if (::unlink(path.c_str()) != 0 && errno != ENOENT) return fail(io_error("unlink", path, errno));
  return fsync_directory(log_dir);
}

}  // namespace tarn::storage
