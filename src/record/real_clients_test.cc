// Segments Apache Kafka 4.4.0 wrote for records from three real clients (the Java producer,
// librdkafka's kcat and confluent-kafka-python) in every codec, from
// tests/fixtures/real-clients: tarn finds the same batches, validates them, and decodes every
// record to what the client sent (.records.json); the damaged copies fail where Kafka's
// DumpLogSegments says they do.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "record/record_batch.h"

namespace tarn::record {
namespace {

// ---- a minimal JSON reader, enough for .records.json ----

struct json {
  enum kind_t { null, boolean, number, string, array, object } kind = null;
  double num = 0;
  std::string str;
  std::vector<json> items;
  std::map<std::string, json> fields;
  const json& operator[](const std::string& k) const { return fields.at(k); }
};

class json_parser {
 public:
  explicit json_parser(const std::string& text) : s_(text) {}
  json parse() {
    ws();
    json v;
    const char c = s_.at(i_);
    if (c == '{') {
      v.kind = json::object;
      ++i_;
      ws();
      if (s_[i_] == '}') return ++i_, v;
      while (true) {
        ws();
        std::string key = parse().str;
        ws();
        ++i_;  // ':'
        v.fields[key] = parse();
        ws();
        if (s_[i_++] == '}') return v;
      }
    }
    if (c == '[') {
      v.kind = json::array;
      ++i_;
      ws();
      if (s_[i_] == ']') return ++i_, v;
      while (true) {
        v.items.push_back(parse());
        ws();
        if (s_[i_++] == ']') return v;
      }
    }
    if (c == '"') {
      v.kind = json::string;
      ++i_;
      while (s_[i_] != '"') {
        if (s_[i_] == '\\') ++i_;  // the fixtures escape nothing but quotes and backslashes
        v.str += s_[i_++];
      }
      ++i_;
      return v;
    }
    if (s_.compare(i_, 4, "null") == 0) return i_ += 4, v;
    if (s_.compare(i_, 4, "true") == 0) return i_ += 4, v.kind = json::boolean, v.num = 1, v;
    if (s_.compare(i_, 5, "false") == 0) return i_ += 5, v.kind = json::boolean, v;
    v.kind = json::number;
    size_t used = 0;
    v.num = std::stod(s_.substr(i_, 32), &used);
    i_ += used;
    return v;
  }

 private:
  void ws() {
    while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
  }
  const std::string& s_;
  size_t i_ = 0;
};

std::optional<std::string> base64(const json& v) {
  if (v.kind == json::null) return std::nullopt;
  static const std::string alphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (char c : v.str) {
    if (c == '=') break;
    acc = (acc << 6) | static_cast<uint32_t>(alphabet.find(c));
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  return out;
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << path;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::vector<uint8_t> read_bytes(const std::string& path) {
  const std::string s = read_text(path);
  return {s.begin(), s.end()};
}

const std::string dir = std::string(TARN_SOURCE_DIR) + "/tests/fixtures/real-clients/";

class real_client_segment : public ::testing::TestWithParam<std::string> {};

TEST_P(real_client_segment, batches_and_records_match_what_was_sent) {
  const std::string name = GetParam();
  const auto segment = read_bytes(dir + name + ".log");
  const std::string text = read_text(dir + name + ".records.json");
  const json sent = json_parser(text).parse();

  batch_reader reader(segment);
  record_batch_view batch;
  size_t batch_index = 0, record_index = 0;
  while (true) {
    const size_t position = reader.position();
    if (!reader.next(batch)) break;
    ASSERT_LT(batch_index, sent["batches"].items.size());
    const json& expected_batch = sent["batches"].items[batch_index];
    EXPECT_EQ(position, static_cast<size_t>(expected_batch["position"].num));
    EXPECT_EQ(batch.size_bytes(), static_cast<size_t>(expected_batch["size"].num));
    EXPECT_EQ(batch.compression_id() == 0, name.ends_with("-none")) << name;
    // Written by producers, so the produce path's rule holds too.
    auto summary = validate_batch_full(batch, offset_rule::producer, 16 << 20);
    ASSERT_TRUE(summary) << name << " batch " << batch_index << ": " << summary.error().message;
    EXPECT_TRUE(summary->offsets_in_order);
    EXPECT_EQ(summary->max_timestamp, batch.max_timestamp());

    auto records = batch_records::open(batch, 16 << 20);
    ASSERT_TRUE(records) << records.error().message;
    record_reader rr = records->reader();
    record_view r;
    while (rr.next(r)) {
      ASSERT_LT(record_index, sent["records"].items.size());
      const json& e = sent["records"].items[record_index];
      EXPECT_EQ(batch.base_offset() + r.offset_delta, static_cast<int64_t>(e["offset"].num));
      EXPECT_EQ(batch.base_timestamp() + r.timestamp_delta,
                static_cast<int64_t>(e["timestamp"].num))
          << name << " offset " << record_index;
      const auto key = base64(e["key"]);
      const auto value = base64(e["value"]);
      ASSERT_EQ(r.key.has_value(), key.has_value()) << name << " offset " << record_index;
      if (key) {
        EXPECT_EQ(as_string(*r.key), *key);
      }
      ASSERT_EQ(r.value.has_value(), value.has_value()) << name << " offset " << record_index;
      if (value) {
        EXPECT_EQ(as_string(*r.value), *value);
      }
      const auto& headers = e["headers"].items;
      ASSERT_EQ(r.header_count, static_cast<int32_t>(headers.size()));
      size_t h = 0;
      for (const record_header& got : r.headers()) {
        EXPECT_EQ(as_string(got.key), headers[h]["key"].str);
        const auto hv = base64(headers[h]["value"]);
        ASSERT_EQ(got.value.has_value(), hv.has_value()) << name << " offset " << record_index;
        if (hv) {
          EXPECT_EQ(as_string(*got.value), *hv);
        }
        ++h;
      }
      ++record_index;
    }
    EXPECT_FALSE(rr.error());
    ++batch_index;
  }
  EXPECT_EQ(reader.stop(), batch_stop::end);
  EXPECT_EQ(reader.position(), segment.size());
  EXPECT_EQ(batch_index, sent["batches"].items.size());
  EXPECT_EQ(record_index, 20u);
}

INSTANTIATE_TEST_SUITE_P(all, real_client_segment,
                         ::testing::Values("java-none", "java-gzip", "java-snappy", "java-lz4",
                                           "java-zstd", "kcat-none", "kcat-gzip", "kcat-snappy",
                                           "kcat-lz4", "kcat-zstd", "python-none", "python-gzip",
                                           "python-snappy", "python-lz4", "python-zstd"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (char& c : n) c = c == '-' ? '_' : c;
                           return n;
                         });

// "Found <N> invalid bytes at the end": N is the segment size minus where the reader stopped.
TEST(real_client_damaged, truncated_segments_stop_where_kafka_says) {
  for (const std::string name : {"java-none-truncated", "java-none-truncated-header"}) {
    const auto segment = read_bytes(dir + name + ".log");
    const std::string dump = read_text(dir + name + ".dump.txt");
    batch_reader reader(segment);
    record_batch_view batch;
    int n = 0;
    while (reader.next(batch)) {
      EXPECT_TRUE(validate_batch_full(batch, offset_rule::producer, 1 << 20)) << name;
      ++n;
    }
    EXPECT_EQ(n, 2) << name;
    EXPECT_EQ(reader.stop(), batch_stop::truncated) << name;
    const std::string expected = "Found " + std::to_string(segment.size() - reader.position()) +
                                 " invalid bytes at the end of 00000000000000000000.log";
    EXPECT_NE(dump.find(expected), std::string::npos) << name << ": " << expected;
  }
}

TEST(real_client_damaged, bad_crc_is_found_in_the_damaged_batch_only) {
  for (const std::string name : {"java-none-badcrc", "java-gzip-badcrc"}) {
    const auto segment = read_bytes(dir + name + ".log");
    batch_reader reader(segment);
    record_batch_view batch;
    std::vector<bool> valid;
    while (reader.next(batch))
      valid.push_back(validate_batch(batch, offset_rule::stored).has_value());
    EXPECT_EQ(reader.stop(), batch_stop::end);
    EXPECT_EQ(valid, (std::vector<bool>{true, false, true})) << name;
  }
}

}  // namespace
}  // namespace tarn::record
