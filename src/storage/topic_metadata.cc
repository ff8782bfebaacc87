// Topic IDs, names, partition.metadata and tarn-topics: see topic_metadata.h.
#include "storage/topic_metadata.h"

#include <array>
#include <charconv>

#include "fmt/format.h"

namespace tarn::storage {
namespace {

template <typename T>
bool parse_int(std::string_view s, T& out) {
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return !s.empty() && ec == std::errc() && p == s.data() + s.size();
}

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    lines.push_back(text.substr(0, nl));
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return lines;
}

}  // namespace

result<void, storage_error> validate_topic_name(std::string_view name) {
  auto invalid = [](std::string reason) {
    return fail(storage_error{storage_errc::invalid_topic, "Topic name is invalid: " + reason});
  };
  if (name.empty()) return invalid("the empty string is not allowed");
  if (name == ".") return invalid("'.' is not allowed");
  if (name == "..") return invalid("'..' is not allowed");
  if (name.size() > max_topic_name_length) {
    return invalid(fmt::format("the length of '{}' is longer than the max allowed length {}", name,
                               max_topic_name_length));
  }
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-';
    if (!ok) {
      return invalid(fmt::format(
          "'{}' contains one or more characters other than ASCII alphanumerics, '.', '_' and '-'",
          name));
    }
  }
  return {};
}

bool topics_collide(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i] == '.' ? '_' : a[i];
    char y = b[i] == '.' ? '_' : b[i];
    if (x != y) return false;
  }
  return true;
}

std::string encode_partition_metadata(const uuid& topic_id) {
  return "version: 0\ntopic_id: " + topic_id.to_string();
}

result<uuid, storage_error> decode_partition_metadata(std::string_view text,
                                                      std::string_view location) {
  // PartitionMetadataReadBuffer: "version: N" (N >= 0), then "topic_id: <uuid>", split on ":\s+".
  auto lines = split_lines(text);
  auto value_of = [](std::string_view line,
                     std::string_view key) -> std::optional<std::string_view> {
    if (!line.starts_with(key) || line.size() <= key.size() + 1 || line[key.size()] != ':') {
      return std::nullopt;
    }
    std::string_view rest = line.substr(key.size() + 1);
    size_t spaces = 0;
    while (spaces < rest.size() && (rest[spaces] == ' ' || rest[spaces] == '\t')) ++spaces;
    if (spaces == 0) return std::nullopt;
    rest.remove_prefix(spaces);
    while (!rest.empty() && (rest.back() == '\r' || rest.back() == ' ')) rest.remove_suffix(1);
    return rest;
  };
  auto malformed = [&](std::string_view line) {
    return fail(corrupt(fmt::format("Malformed line in checkpoint file [{}]: {}", location, line)));
  };
  if (lines.size() < 2) return malformed(lines.empty() ? "" : lines[0]);
  auto version = value_of(lines[0], "version");
  int v = 0;
  if (!version || !parse_int(*version, v)) return malformed(lines[0]);
  if (v < 0) {
    return fail(corrupt(
        fmt::format("Unrecognized version of partition metadata file + ({}): {}", location, v)));
  }
  auto id_text = value_of(lines[1], "topic_id");
  if (!id_text) return malformed(lines[1]);
  auto id = uuid::parse(*id_text);
  if (!id) return malformed(lines[1]);
  if (id->is_zero()) {
    return fail(corrupt(fmt::format("Invalid topic ID in partition metadata file ({})", location)));
  }
  return *id;
}

result<void, storage_error> write_partition_metadata(const fs::path& partition_dir,
                                                     const uuid& topic_id) {
  return write_file_atomic(partition_dir / partition_metadata_file_name,
                           encode_partition_metadata(topic_id));
}

result<uuid, storage_error> read_partition_metadata(const fs::path& partition_dir) {
  fs::path path = partition_dir / partition_metadata_file_name;
  auto text = read_small_file(path, 4096);
  if (!text) return fail(text.error());
  return decode_partition_metadata(*text, path.string());
}

std::string encode_topic_records(const std::vector<topic_record>& topics) {
  std::string out = fmt::format("0\n{}\n", topics.size());
  for (const topic_record& t : topics) {
    out += fmt::format("{} {} {} {}\n", t.name, t.topic_id.to_string(), t.partitions,
                       t.overrides.size());
    for (const auto& [key, value] : t.overrides) out += fmt::format("{}={}\n", key, value);
  }
  return out;
}

result<std::vector<topic_record>, storage_error> decode_topic_records(std::string_view text,
                                                                      std::string_view location) {
  auto lines = split_lines(text);
  if (!lines.empty() && lines.back().empty()) lines.pop_back();  // the final '\n'
  size_t i = 0;
  auto bad = [&](std::string_view why) {
    return fail(corrupt(fmt::format("{} line {}: {}", location, i + 1, why)));
  };
  int version = -1;
  if (lines.size() < 2 || !parse_int(lines[0], version) || version != 0) {
    return bad("expected version 0");
  }
  size_t count = 0;
  i = 1;
  if (!parse_int(lines[1], count)) return bad("expected the topic count");
  if (count > lines.size()) return bad("topic count larger than the file");
  std::vector<topic_record> out;
  out.reserve(count);
  i = 2;
  for (size_t t = 0; t < count; ++t) {
    if (i >= lines.size()) return bad("file ends before all topics");
    std::string_view line = lines[i];
    std::vector<std::string_view> f;
    while (!line.empty()) {
      size_t sp = line.find(' ');
      f.push_back(line.substr(0, sp));
      if (sp == std::string_view::npos) break;
      line.remove_prefix(sp + 1);
    }
    topic_record rec;
    size_t overrides = 0;
    if (f.size() != 4 || !validate_topic_name(f[0]) || !parse_int(f[2], rec.partitions) ||
        rec.partitions <= 0 || !parse_int(f[3], overrides) || overrides > lines.size()) {
      return bad("expected \"<topic> <topic_id> <partitions> <override count>\"");
    }
    auto id = uuid::parse(f[1]);
    if (!id) return bad("invalid topic id");
    rec.name = std::string(f[0]);
    rec.topic_id = *id;
    ++i;
    for (size_t c = 0; c < overrides; ++c, ++i) {
      if (i >= lines.size()) return bad("file ends before all overrides");
      size_t eq = lines[i].find('=');
      if (eq == std::string_view::npos) return bad("expected \"<key>=<value>\"");
      rec.overrides.emplace(std::string(lines[i].substr(0, eq)),
                            std::string(lines[i].substr(eq + 1)));
    }
    out.push_back(std::move(rec));
  }
  if (i != lines.size()) return bad("unexpected lines after the last topic");
  return out;
}

result<void, storage_error> write_topic_records(const fs::path& log_dir,
                                                const std::vector<topic_record>& topics) {
  return write_file_atomic(log_dir / topic_metadata_file_name, encode_topic_records(topics));
}

result<std::vector<topic_record>, storage_error> read_topic_records(const fs::path& log_dir) {
  fs::path path = log_dir / topic_metadata_file_name;
  auto text = read_small_file(path);
  if (!text) {
    if (text.error().code == storage_errc::not_found) return std::vector<topic_record>{};
    return fail(text.error());
  }
  return decode_topic_records(*text, path.string());
}

}  // namespace tarn::storage
