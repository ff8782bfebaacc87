// The record library on segments written by Apache Kafka 4.4.0 for real clients (the Java
// producer, kcat and confluent-kafka-python, each with every codec): every batch validates and
// its records decode to exactly what the client sent (tests/fixtures/real-clients/*.records.json).
#include <gtest/gtest.h>

#include <cctype>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "record/record_batch.h"

namespace tarn::record {
namespace {

// ---- A minimal JSON reader for the fixture format (objects, arrays, strings, integers, null) --

struct json {
  enum kind_t { null, boolean, number, string, array, object } kind = null;
  bool flag = false;
  int64_t integer = 0;
  std::string text;
  std::vector<json> items;
  std::map<std::string, json> fields;

  const json& operator[](const std::string& key) const {
    auto it = fields.find(key);
    if (it == fields.end()) {
      ADD_FAILURE() << "no field " << key;
      static const json missing;
      return missing;
    }
    return it->second;
  }
};

class json_parser {
 public:
  explicit json_parser(const std::string& text) : s_(text) {}

  json parse() {
    json v = value();
    skip_space();
    if (at_ != s_.size()) fail("trailing characters");
    return v;
  }
  bool failed() const { return failed_; }

 private:
  void fail(const char* what) {
    if (!failed_) ADD_FAILURE() << "json: " << what << " at " << at_;
    failed_ = true;
    at_ = s_.size();
  }
  void skip_space() {
    while (at_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[at_]))) ++at_;
  }
  bool take(char c) {
    skip_space();
    if (at_ < s_.size() && s_[at_] == c) {
      ++at_;
      return true;
    }
    return false;
  }
  bool take_word(const char* word) {
    const std::string w(word);
    if (s_.compare(at_, w.size(), w) != 0) return false;
    at_ += w.size();
    return true;
  }

  json value() {
    json v;
    skip_space();
    if (at_ >= s_.size()) {
      fail("unexpected end");
      return v;
    }
    const char c = s_[at_];
    if (c == '{') {
      v.kind = json::object;
      ++at_;
      if (take('}')) return v;
      do {
        skip_space();
        std::string key = string_literal();
        if (!take(':')) fail("expected ':'");
        v.fields[key] = value();
      } while (take(','));
      if (!take('}')) fail("expected '}'");
    } else if (c == '[') {
      v.kind = json::array;
      ++at_;
      if (take(']')) return v;
      do {
        v.items.push_back(value());
      } while (take(','));
      if (!take(']')) fail("expected ']'");
    } else if (c == '"') {
      v.kind = json::string;
      v.text = string_literal();
    } else if (take_word("null")) {
      v.kind = json::null;
    } else if (take_word("true") || take_word("false")) {
      v.kind = json::boolean;
      v.flag = s_[at_ - 1] == 'e' && s_[at_ - 2] == 'u';
    } else if (c == '-' || std::isdigit(static_cast<unsigned char>(c))) {
      v.kind = json::number;
      size_t end = at_ + 1;
      while (end < s_.size() && std::isdigit(static_cast<unsigned char>(s_[end]))) ++end;
      v.integer = std::stoll(s_.substr(at_, end - at_));
      at_ = end;
    } else {
      fail("unexpected character");
    }
    return v;
  }

  // The fixture's strings are base64 or ASCII names; \uXXXX escapes below 0x80 are enough.
  std::string string_literal() {
    std::string out;
    if (at_ >= s_.size() || s_[at_] != '"') {
      fail("expected a string");
      return out;
    }
    ++at_;
    while (at_ < s_.size() && s_[at_] != '"') {
      char c = s_[at_++];
      if (c == '\\' && at_ < s_.size()) {
        const char e = s_[at_++];
        switch (e) {
          case 'n':
            c = '\n';
            break;
          case 't':
            c = '\t';
            break;
          case 'u': {
            const unsigned long code = std::strtoul(s_.substr(at_, 4).c_str(), nullptr, 16);
            if (code >= 0x80) fail("non-ASCII \\u escape");
            c = static_cast<char>(code);
            at_ += 4;
            break;
          }
          default:
            c = e;
        }
      }
      out.push_back(c);
    }
    if (!take('"')) fail("unterminated string");
    return out;
  }

  const std::string s_;
  size_t at_ = 0;
  bool failed_ = false;
};

std::vector<uint8_t> base64_decode(const std::string& in) {
  auto sextet = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  std::vector<uint8_t> out;
  uint32_t bits = 0;
  int count = 0;
  for (char c : in) {
    if (c == '=') break;
    const int v = sextet(c);
    EXPECT_GE(v, 0) << "bad base64 character in " << in;
    if (v < 0) return out;
    bits = (bits << 6) | static_cast<uint32_t>(v);
    count += 6;
    if (count >= 8) {
      count -= 8;
      out.push_back(static_cast<uint8_t>(bits >> count));
    }
  }
  return out;
}

std::optional<std::vector<uint8_t>> bytes_or_null(const json& v) {
  if (v.kind == json::null) return std::nullopt;
  EXPECT_EQ(v.kind, json::string);
  return base64_decode(v.text);
}

std::optional<std::vector<uint8_t>> copy(const std::optional<bytes_view>& b) {
  if (!b) return std::nullopt;
  return std::vector<uint8_t>(b->begin(), b->end());
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << path;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

const std::string fixtures = std::string(TARN_SOURCE_DIR) + "/tests/fixtures/real-clients/";

TEST(json_reader, reads_the_fixture_format) {
  json_parser parser(R"({"a": [1, -2, null, "x\"y"], "b": {"c": true}, "d": ""})");
  const json v = parser.parse();
  EXPECT_FALSE(parser.failed());
  EXPECT_EQ(v["a"].items.size(), 4u);
  EXPECT_EQ(v["a"].items[1].integer, -2);
  EXPECT_EQ(v["a"].items[2].kind, json::null);
  EXPECT_EQ(v["a"].items[3].text, "x\"y");
  EXPECT_TRUE(v["b"]["c"].flag);
  EXPECT_EQ(v["d"].text, "");
  EXPECT_EQ(base64_decode("AP8JCg=="), (std::vector<uint8_t>{0x00, 0xff, 0x09, 0x0a}));
}

class real_client_segment : public testing::TestWithParam<std::string> {};

TEST_P(real_client_segment, every_batch_validates_and_decodes_to_what_was_sent) {
  const std::string text = read_text(fixtures + GetParam() + ".log");
  const std::span<const uint8_t> segment(reinterpret_cast<const uint8_t*>(text.data()),
                                         text.size());
  json_parser parser(read_text(fixtures + GetParam() + ".records.json"));
  const json sent = parser.parse();
  ASSERT_FALSE(parser.failed());
  const std::vector<json>& expected_batches = sent["batches"].items;
  const std::vector<json>& expected = sent["records"].items;
  ASSERT_EQ(expected.size(), 20u);

  compression_type codec{};
  ASSERT_TRUE(parse_compression_name(sent["codec"].text, codec));

  batch_reader reader(segment);
  record_batch_view batch;
  size_t batch_index = 0;
  size_t record_index = 0;
  while (reader.next(batch)) {
    SCOPED_TRACE("batch " + std::to_string(batch_index));
    ASSERT_LT(batch_index, expected_batches.size());
    EXPECT_EQ(reader.position() - batch.size_bytes(),
              static_cast<size_t>(expected_batches[batch_index]["position"].integer));
    EXPECT_EQ(batch.size_bytes(),
              static_cast<size_t>(expected_batches[batch_index]["size"].integer));
    ++batch_index;

    // What the broker checks on append and on recovery, and then every record.
    EXPECT_TRUE(validate_batch(batch, offset_rule::producer).has_value());
    EXPECT_TRUE(batch.crc_matches());
    EXPECT_EQ(batch.magic(), magic_v2);
    EXPECT_EQ(batch.compression(), codec);
    EXPECT_EQ(batch.timestamp_type(), timestamp_type::create_time);
    EXPECT_FALSE(batch.is_transactional());
    EXPECT_FALSE(batch.is_control());
    auto summary = validate_records(batch, 64 * 1024 * 1024);
    ASSERT_TRUE(summary.has_value()) << summary.error().message;
    EXPECT_EQ(summary->count, batch.records_count());
    EXPECT_TRUE(summary->offsets_in_order);
    EXPECT_EQ(summary->max_timestamp, batch.max_timestamp());

    auto records = batch_records::open(batch, 64 * 1024 * 1024);
    ASSERT_TRUE(records.has_value()) << records.error().message;
    record_reader rr = records->reader();
    record_view r;
    int32_t in_batch = 0;
    int64_t max_timestamp = no_timestamp;
    while (rr.next(r)) {
      ASSERT_LT(record_index, expected.size());
      const json& want = expected[record_index++];
      SCOPED_TRACE("offset " + std::to_string(want["offset"].integer));
      EXPECT_EQ(r.offset_delta, in_batch++);
      EXPECT_EQ(wrapping_add(batch.base_offset(), r.offset_delta), want["offset"].integer);
      const int64_t timestamp = wrapping_add(batch.base_timestamp(), r.timestamp_delta);
      EXPECT_EQ(timestamp, want["timestamp"].integer);
      max_timestamp = std::max(max_timestamp, timestamp);
      EXPECT_EQ(copy(r.key), bytes_or_null(want["key"]));
      EXPECT_EQ(copy(r.value), bytes_or_null(want["value"]));

      const std::vector<json>& want_headers = want["headers"].items;
      size_t h = 0;
      for (const record_header& header : r.headers()) {
        ASSERT_LT(h, want_headers.size());
        EXPECT_EQ(std::string(as_string(header.key)), want_headers[h]["key"].text);
        EXPECT_EQ(copy(header.value), bytes_or_null(want_headers[h]["value"]));
        ++h;
      }
      EXPECT_EQ(h, want_headers.size());
      EXPECT_EQ(r.header_count, static_cast<int32_t>(want_headers.size()));
    }
    EXPECT_FALSE(rr.error().has_value()) << describe(*rr.error());
    EXPECT_TRUE(rr.at_end());
    EXPECT_EQ(in_batch, batch.records_count());
    EXPECT_EQ(batch.last_offset_delta(), in_batch - 1);
    EXPECT_EQ(max_timestamp, batch.max_timestamp());
  }
  EXPECT_EQ(reader.stop(), batch_stop::end);
  EXPECT_EQ(batch_index, expected_batches.size());
  EXPECT_EQ(record_index, expected.size());
}

INSTANTIATE_TEST_SUITE_P(fixtures, real_client_segment,
                         testing::Values("java-none", "java-gzip", "java-snappy", "java-lz4",
                                         "java-zstd", "kcat-none", "kcat-gzip", "kcat-snappy",
                                         "kcat-lz4", "kcat-zstd", "python-none", "python-gzip",
                                         "python-snappy", "python-lz4", "python-zstd"),
                         [](const auto& info) {
                           std::string name = info.param;
                           std::replace(name.begin(), name.end(), '-', '_');
                           return name;
                         });

// The real clients' own features as the fixtures' README describes them, so a fixture
// regenerated without them fails here rather than silently testing less.
TEST(real_client_segment, fixtures_cover_null_and_empty_fields_headers_and_binary) {
  for (const std::string client : {"java", "kcat", "python"}) {
    json_parser parser(read_text(fixtures + client + "-none.records.json"));
    const json sent = parser.parse();
    const auto& records = sent["records"].items;
    ASSERT_EQ(records.size(), 20u);
    EXPECT_EQ(records[3]["key"].kind, json::null) << client;
    EXPECT_EQ(records[5]["value"].text, "") << client;
    EXPECT_EQ(records[18]["value"].kind, json::null) << client;
    bool null_header = false, empty_header = false, repeated = false;
    for (const auto& r : records) {
      std::map<std::string, int> seen;
      for (const auto& h : r["headers"].items) {
        null_header |= h["value"].kind == json::null;
        empty_header |= h["value"].kind == json::string && h["value"].text.empty();
        repeated |= ++seen[h["key"].text] > 1;
      }
    }
    EXPECT_TRUE(null_header && empty_header && repeated) << client;
    if (client != "kcat") {
      const auto binary = bytes_or_null(records[11]["value"]);
      ASSERT_TRUE(binary.has_value());
      EXPECT_NE(std::find(binary->begin(), binary->end(), 0xff), binary->end()) << client;
    }
  }
}

}  // namespace
}  // namespace tarn::record

namespace tarn::record {
namespace {

// Found by fuzz/record_batch_fuzz: a batch whose header holds recordsCount -1 and no records
// passed validate_records with a count of 0. Kafka's record iterator throws ("Found invalid
// record count -1"); validate_records now refuses it too.
TEST(real_client_segment, validate_records_refuses_a_negative_count) {
  std::string text = read_text(fixtures + "java-none.log");
  std::vector<uint8_t> batch(text.begin(), text.begin() + record_batch_overhead);
  store32(batch.data() + batch_layout::batch_length,
          static_cast<uint32_t>(record_batch_overhead - log_overhead));
  store32(batch.data() + batch_layout::records_count, 0xffffffffu);
  mutable_record_batch_view view(batch);
  view.update_crc();
  auto summary = validate_records(view, 1024);
  ASSERT_FALSE(summary.has_value());
  EXPECT_EQ(summary.error().code, batch_errc::invalid_record_count);
  store32(batch.data() + batch_layout::records_count, 0);  // zero records, none present: fine
  view.update_crc();
  summary = validate_records(view, 1024);
  ASSERT_TRUE(summary.has_value());
  EXPECT_EQ(summary->count, 0);
}

// Found by fuzz/record_batch_fuzz (UBSan): last_sequence overflowed int32 on a corrupt
// lastOffsetDelta. Kafka's incrementSequence wraps in Java int arithmetic; so does tarn now.
TEST(real_client_segment, last_sequence_wraps_as_java_ints_do) {
  std::string text = read_text(fixtures + "java-none.log");
  std::vector<uint8_t> bytes(text.begin(), text.begin() + record_batch_overhead);
  const record_batch_view view(bytes);
  auto last_sequence = [&](int32_t base, int32_t delta) {
    store32(bytes.data() + batch_layout::base_sequence, static_cast<uint32_t>(base));
    store32(bytes.data() + batch_layout::last_offset_delta, static_cast<uint32_t>(delta));
    return view.last_sequence();
  };
  // Expected values from Java: DefaultRecordBatch.incrementSequence on the same ints.
  EXPECT_EQ(last_sequence(0, 6), 6);
  EXPECT_EQ(last_sequence(-1, 6), -1);
  EXPECT_EQ(last_sequence(2147483647, 1), 0);
  EXPECT_EQ(last_sequence(2147483640, 10), 2);
  EXPECT_EQ(last_sequence(5, -10), 2147483643);
  EXPECT_EQ(last_sequence(-1422752598, 2147483647), 724731049);
  EXPECT_EQ(last_sequence(-2147483647 - 1, -2147483647 - 1), 0);
}

}  // namespace
}  // namespace tarn::record
