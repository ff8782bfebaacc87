// The consumer protocol's subscription and assignment bytes against Kafka 4.4.0's own
// ConsumerProtocol (tests/fixtures/client/consumer_protocol.txt, written by
// tests/java/ConsumerProtocolVectors.java): every case at every version encodes to Kafka's bytes
// and decodes back to the fields that version carries; newer versions read as version 3; every
// strict prefix fails.
#include "client/consumer_protocol.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

namespace tarn::client {
namespace {

std::vector<uint8_t> unhex(const std::string& s) {
  std::vector<uint8_t> out;
  if (s == "-") return out;
  for (size_t i = 0; i + 1 < s.size(); i += 2) {
    out.push_back(static_cast<uint8_t>(std::stoi(s.substr(i, 2), nullptr, 16)));
  }
  return out;
}

std::vector<uint8_t> bytes(std::string_view s) { return {s.begin(), s.end()}; }

// The cases of ConsumerProtocolVectors.java, at their highest version.
std::map<std::string, consumer_subscription> subscriptions() {
  std::map<std::string, consumer_subscription> out;
  out["empty"] = {};
  out["one_topic"] = {{"orders"}, std::nullopt, {}, -1, std::nullopt};
  out["full"] = {{"t1", "t2"}, bytes("hello"), {{"t1", {0, 1}}, {"t2", {2}}}, 5, "rack-a"};
  out["empty_user_data"] = {{"a"}, std::vector<uint8_t>{}, {}, -1, std::nullopt};
  return out;
}

std::map<std::string, consumer_assignment> assignments() {
  std::map<std::string, consumer_assignment> out;
  out["empty"] = {};
  out["two_topics"] = {{{"t1", {0, 2}}, {"t2", {1}}}, std::nullopt};
  out["user_data"] = {{{"orders", {3}}}, bytes("\xc3\xa9t\xc3\xa9")};
  return out;
}

// What a version carries of a subscription.
consumer_subscription at_version(consumer_subscription s, int16_t v) {
  if (v < 1) s.owned_partitions.clear();
  if (v < 2) s.generation_id = -1;
  if (v < 3) s.rack_id.reset();
  return s;
}

struct vector_line {
  std::string kind, name;
  int16_t version;
  std::vector<uint8_t> bytes;
};

std::vector<vector_line> load(const std::string& kind) {
  std::ifstream in(TARN_SOURCE_DIR "/tests/fixtures/client/consumer_protocol.txt");
  EXPECT_TRUE(in) << "missing golden file";
  std::vector<vector_line> out;
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream f(line);
    vector_line v;
    std::string hex;
    int version = 0;
    f >> v.kind >> v.name >> version >> hex;
    if (v.kind != kind) continue;
    v.version = static_cast<int16_t>(version);
    v.bytes = unhex(hex);
    out.push_back(std::move(v));
  }
  return out;
}

TEST(consumer_protocol, subscriptions_match_kafka) {
  auto cases = subscriptions();
  auto lines = load("subscription");
  ASSERT_EQ(lines.size(), cases.size() * 4);
  for (const auto& l : lines) {
    SCOPED_TRACE(l.name + " v" + std::to_string(l.version));
    ASSERT_TRUE(cases.count(l.name));
    const auto& s = cases[l.name];
    EXPECT_EQ(encode_subscription(s, l.version), l.bytes);
    auto decoded = decode_subscription(l.bytes);
    ASSERT_TRUE(decoded.has_value()) << decoded.error();
    EXPECT_EQ(*decoded, at_version(s, l.version));
    for (size_t n = 0; n < l.bytes.size(); ++n) {
      EXPECT_FALSE(decode_subscription(std::span(l.bytes).first(n)).has_value()) << n;
    }
  }
}

TEST(consumer_protocol, assignments_match_kafka) {
  auto cases = assignments();
  auto lines = load("assignment");
  ASSERT_EQ(lines.size(), cases.size() * 4);
  for (const auto& l : lines) {
    SCOPED_TRACE(l.name + " v" + std::to_string(l.version));
    ASSERT_TRUE(cases.count(l.name));
    const auto& a = cases[l.name];
    EXPECT_EQ(encode_assignment(a, l.version), l.bytes);
    auto decoded = decode_assignment(l.bytes);
    ASSERT_TRUE(decoded.has_value()) << decoded.error();
    EXPECT_EQ(*decoded, a);
    // The empty prefix is the "no assignment" case; every other prefix is broken.
    for (size_t n = 1; n < l.bytes.size(); ++n) {
      EXPECT_FALSE(decode_assignment(std::span(l.bytes).first(n)).has_value()) << n;
    }
  }
}

TEST(consumer_protocol, newer_versions_read_as_the_highest) {
  // A v7 subscription from a future consumer: v3's fields, then fields we do not know.
  auto s = subscriptions()["full"];
  auto v3 = encode_subscription(s, 3);
  auto v7 = v3;
  v7[1] = 7;
  v7.insert(v7.end(), {0xde, 0xad, 0xbe, 0xef});
  auto decoded = decode_subscription(v7);
  ASSERT_TRUE(decoded.has_value()) << decoded.error();
  EXPECT_EQ(*decoded, s);

  auto a = assignments()["two_topics"];
  auto av = encode_assignment(a, 3);
  av[1] = 9;
  auto da = decode_assignment(av);
  ASSERT_TRUE(da.has_value()) << da.error();
  EXPECT_EQ(*da, a);
}

TEST(consumer_protocol, refuses_negative_versions_and_reads_no_bytes_as_no_assignment) {
  std::vector<uint8_t> negative = {0xff, 0xff, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff};
  EXPECT_FALSE(decode_subscription(negative).has_value());
  EXPECT_FALSE(decode_assignment(negative).has_value());
  auto none = decode_assignment({});
  ASSERT_TRUE(none.has_value());
  EXPECT_TRUE(none->partitions.empty());
  EXPECT_FALSE(decode_subscription({}).has_value());
}

}  // namespace
}  // namespace tarn::client
