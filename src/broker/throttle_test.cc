// The request quota's throttle written into an already encoded answer, whatever the API: the
// field set, every other byte as it was.
#include "broker/throttle.h"

#include <gtest/gtest.h>

#include "broker/topic_handler_util.h"
#include "protocol/messages/api_versions_response.h"
#include "protocol/messages/describe_quorum_response.h"
#include "protocol/messages/metadata_response.h"

namespace tarn::broker {
namespace {

TEST(set_throttle_time, metadata_answer_gets_it_and_keeps_the_rest) {
  protocol::metadata_response m;
  m.brokers.push_back({1, "127.0.0.1", 9092, std::nullopt});
  m.cluster_id = "cluster";
  m.controller_id = 1;
  for (int16_t v : {int16_t{1}, int16_t{3}, int16_t{12}}) {
    SCOPED_TRACE(v);
    response out = encode_response(m, v);
    const auto before = out.body;
    ASSERT_TRUE(set_throttle_time(protocol::metadata_response::api_key, v, out, 1000));
    protocol::reader r(out.body);
    auto decoded = protocol::metadata_response::decode(r, v);
    ASSERT_TRUE(decoded.has_value());
    // v0-2 have no ThrottleTimeMs: the answer is unchanged.
    EXPECT_EQ(decoded->throttle_time_ms, v >= 3 ? 1000 : 0);
    EXPECT_EQ(decoded->brokers.size(), 1u);
    EXPECT_EQ(decoded->cluster_id.value_or(""), v >= 2 ? "cluster" : "");
    protocol::metadata_response expected = m;
    expected.throttle_time_ms = 1000;
    EXPECT_EQ(out.body, encode_response(expected, v).body);
    if (v < 3) {
      EXPECT_EQ(out.body, before);
    }
  }
}

TEST(set_throttle_time, api_versions_answer_has_it_after_the_api_list) {
  protocol::api_versions_response a;
  a.api_keys.push_back({18, 0, 4});
  a.api_keys.push_back({3, 0, 12});
  response out = encode_response(a, 3);
  ASSERT_TRUE(set_throttle_time(protocol::api_versions_response::api_key, 3, out, 250));
  protocol::reader r(out.body);
  auto decoded = protocol::api_versions_response::decode(r, 3);
  ASSERT_TRUE(decoded.has_value());
  EXPECT_EQ(decoded->throttle_time_ms, 250);
  ASSERT_EQ(decoded->api_keys.size(), 2u);
  EXPECT_EQ(decoded->api_keys[1].max_version, 12);
}

TEST(set_throttle_time, an_answer_without_the_field_or_with_file_regions_is_left_alone) {
  protocol::describe_quorum_response q;
  response out = encode_response(q, 2);
  const auto before = out.body;
  EXPECT_FALSE(set_throttle_time(protocol::describe_quorum_response::api_key, 2, out, 100));
  EXPECT_EQ(out.body, before);
  response fetch;
  fetch.file_regions.push_back({});
  EXPECT_FALSE(set_throttle_time(1, 12, fetch, 100));
}

}  // namespace
}  // namespace tarn::broker
