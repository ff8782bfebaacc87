// FindCoordinator against the real `tarn serve`: a group key is answered with this broker (node
// id, the listener's host and port) at every version, creating __consumer_offsets (internal in
// Metadata); a transaction key likewise, creating __transaction_state; a bad key type is
// INVALID_REQUEST; and the API is advertised, which is what makes librdkafka compress with LZ4
// (tests/produce_clients_test.cc checks the stored codec).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "protocol/messages/find_coordinator_request.h"
#include "protocol/messages/find_coordinator_response.h"
#include "protocol/messages/metadata_request.h"
#include "protocol/messages/metadata_response.h"
#include "test_util.h"

namespace tarn::test {
namespace {

constexpr int16_t find_coordinator_key = 10;
constexpr int16_t metadata_key = 3;
constexpr int16_t coordinator_not_available = 15;
constexpr int16_t invalid_request = 42;

// The decoded response borrows `frame` (strings are views), so both travel together.
struct answer {
  std::vector<uint8_t> frame;
  protocol::find_coordinator_response r;
};

answer ask(raw_client& c, int16_t version, int8_t key_type, std::vector<std::string_view> keys) {
  protocol::find_coordinator_request req;
  if (!keys.empty()) req.key = keys.front();
  req.key_type = key_type;
  req.coordinator_keys = keys;
  std::vector<uint8_t> body;
  protocol::writer w(body);
  req.encode(w, version);
  const bool flexible = version >= protocol::find_coordinator_request::flexible_from;
  EXPECT_TRUE(c.send_request(find_coordinator_key, version, 700 + version, body, flexible));
  answer out;
  auto frame = c.read_frame();
  EXPECT_TRUE(frame.has_value()) << "v" << version;
  if (!frame) return out;
  out.frame = std::move(*frame);  // moving keeps the bytes where they are
  EXPECT_EQ(get_int32(out.frame, 0), 700 + version);
  // Response header v1 (flexible versions) adds an empty tagged-field section.
  protocol::reader r(std::span<const uint8_t>(out.frame).subspan(flexible ? 5 : 4));
  auto decoded = protocol::find_coordinator_response::decode(r, version);
  EXPECT_TRUE(decoded.has_value()) << "v" << version;
  EXPECT_EQ(r.remaining(), 0u) << "trailing bytes after FindCoordinator v" << version;
  if (decoded) out.r = *decoded;
  return out;
}

// A few partitions keep the broker's creation of __consumer_offsets quick.
std::vector<std::string> small_offsets_topic() {
  return {"--override", "offsets.topic.num.partitions=3"};
}

TEST(find_coordinator, a_group_key_is_answered_with_this_broker_at_every_version) {
  broker_process broker(small_offsets_topic());
  ASSERT_NE(broker.port(), 0) << broker.output();
  raw_client c(broker.port());
  for (int16_t v = 0; v <= 3; ++v) {
    const answer a = ask(c, v, 0, {"my-group"});
    const auto& r = a.r;
    EXPECT_EQ(r.error_code, 0) << "v" << v;
    EXPECT_EQ(r.node_id, 1) << "v" << v;
    EXPECT_EQ(r.host, "127.0.0.1");
    EXPECT_EQ(r.port, broker.port());
    if (v >= 1) {
      EXPECT_EQ(r.error_message, "NONE") << "Kafka's Errors.NONE.message()";
    }
  }
  for (int16_t v = 4; v <= 6; ++v) {
    const answer a = ask(c, v, 0, {"g1", "g2", "g3"});
    const auto& r = a.r;
    ASSERT_EQ(r.coordinators.size(), 3u) << "v" << v;
    const char* keys[] = {"g1", "g2", "g3"};
    for (size_t i = 0; i < 3; ++i) {
      EXPECT_EQ(r.coordinators[i].key, keys[i]);
      EXPECT_EQ(r.coordinators[i].error_code, 0);
      EXPECT_EQ(r.coordinators[i].node_id, 1);
      EXPECT_EQ(r.coordinators[i].host, "127.0.0.1");
      EXPECT_EQ(r.coordinators[i].port, broker.port());
      // Kafka 4.4 leaves a found coordinator's v4+ message empty (v1-3 say "NONE"; make
      // interop's group-find-coordinator compares them).
      EXPECT_EQ(r.coordinators[i].error_message, "");
    }
  }
}

TEST(find_coordinator, a_transaction_key_is_answered_with_this_broker_creating_transaction_state) {
  broker_process broker({"--override", "offsets.topic.num.partitions=3", "--override",
                         "transaction.state.log.num.partitions=4"});
  ASSERT_NE(broker.port(), 0) << broker.output();
  raw_client c(broker.port());
  for (int16_t v = 1; v <= 3; ++v) {
    const answer a = ask(c, v, 1, {"my-txn"});
    const auto& r = a.r;
    EXPECT_EQ(r.error_code, 0) << "v" << v;
    EXPECT_EQ(r.node_id, 1);
    EXPECT_EQ(r.host, "127.0.0.1");
    EXPECT_EQ(r.port, broker.port());
    EXPECT_EQ(r.error_message, "NONE");
  }
  for (int16_t v = 4; v <= 6; ++v) {
    const answer a = ask(c, v, 1, {"t1", "t2"});
    const auto& r = a.r;
    ASSERT_EQ(r.coordinators.size(), 2u) << "v" << v;
    for (const auto& co : r.coordinators) {
      EXPECT_EQ(co.error_code, 0);
      EXPECT_EQ(co.node_id, 1);
      EXPECT_EQ(co.port, broker.port());
      EXPECT_EQ(co.error_message, "");
    }
  }
  // __transaction_state now exists with its 4 partitions.
  for (int p = 0; p < 4; ++p) {
    EXPECT_TRUE(std::filesystem::is_directory(broker.data_dir() /
                                              ("__transaction_state-" + std::to_string(p))))
        << p;
  }
}

TEST(find_coordinator, the_first_group_key_creates_consumer_offsets_internal_in_metadata) {
  broker_process broker(small_offsets_topic());
  ASSERT_NE(broker.port(), 0) << broker.output();
  raw_client c(broker.port());
  EXPECT_EQ(ask(c, 3, 0, {"g"}).r.error_code, 0);
  // Metadata v1 for every topic: __consumer_offsets is listed, with IsInternal, as Kafka lists it.
  protocol::metadata_request req;
  req.topics = std::nullopt;
  std::vector<uint8_t> body;
  protocol::writer w(body);
  req.encode(w, 1);
  ASSERT_TRUE(c.send_request(metadata_key, 1, 99, body));
  auto frame = c.read_frame();
  ASSERT_TRUE(frame.has_value());
  protocol::reader r(std::span<const uint8_t>(*frame).subspan(4));
  auto decoded = protocol::metadata_response::decode(r, 1);
  ASSERT_TRUE(decoded.has_value());
  bool found = false;
  for (const auto& t : decoded->topics) {
    if (t.name != "__consumer_offsets") continue;
    found = true;
    EXPECT_TRUE(t.is_internal);
    EXPECT_EQ(t.partitions.size(), 3u);
  }
  EXPECT_TRUE(found);
}

TEST(find_coordinator, an_unknown_key_type_is_invalid_request) {
  broker_process broker(small_offsets_topic());
  ASSERT_NE(broker.port(), 0) << broker.output();
  raw_client c(broker.port());
  EXPECT_EQ(ask(c, 1, 7, {"g"}).r.error_code, invalid_request);
  EXPECT_EQ(ask(c, 3, -1, {"g"}).r.error_code, invalid_request);
  // SHARE (2) exists from v6 only.
  const answer a5 = ask(c, 5, 2, {"g:topic:0"});
  const auto& v5 = a5.r;
  ASSERT_EQ(v5.coordinators.size(), 1u);
  EXPECT_EQ(v5.coordinators[0].error_code, invalid_request);
  const answer a6 = ask(c, 6, 2, {"g:topic:0"});
  const auto& v6 = a6.r;
  ASSERT_EQ(v6.coordinators.size(), 1u);
  EXPECT_EQ(v6.coordinators[0].error_code, coordinator_not_available);
}

TEST(find_coordinator, a_truncated_body_closes_only_that_connection) {
  broker_process broker(small_offsets_topic());
  ASSERT_NE(broker.port(), 0) << broker.output();
  raw_client bad(broker.port());
  const std::vector<uint8_t> truncated = {0x00, 0x10, 'g'};  // Key claims 16 bytes, has 1
  ASSERT_TRUE(bad.send_request(find_coordinator_key, 1, 1, truncated));
  EXPECT_TRUE(bad.wait_closed(event_timeout));
  raw_client good(broker.port());
  EXPECT_EQ(ask(good, 1, 0, {"g"}).r.error_code, 0);
}

}  // namespace
}  // namespace tarn::test
