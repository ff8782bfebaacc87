// The share consumer's configuration (share_group_consumer.h): KafkaShareConsumer's names and
// checks, without a broker.
#include "client/share_group_consumer.h"

#include <gtest/gtest.h>

namespace tarn::client {
namespace {

TEST(share_consumer_config, kafka_share_consumer_names) {
  share_consumer_config c;
  EXPECT_TRUE(c.set("bootstrap.servers", "127.0.0.1:9092"));
  EXPECT_TRUE(c.set("group.id", "workers"));
  EXPECT_TRUE(c.set("share.acknowledgement.mode", "explicit"));
  EXPECT_TRUE(c.set("fetch.max.wait.ms", "50"));
  EXPECT_TRUE(c.set("max.poll.records", "7"));
  EXPECT_TRUE(c.set("key.deserializer", "ByteArrayDeserializer"));  // accepted, unused
  EXPECT_EQ(c.group_id, "workers");
  EXPECT_TRUE(c.explicit_acknowledgement);
  EXPECT_EQ(c.fetch_max_wait_ms, 50);
  EXPECT_EQ(c.max_poll_records, 7);
}

TEST(share_consumer_config, bad_values_are_refused_with_kafkas_words) {
  share_consumer_config c;
  auto mode = c.set("share.acknowledgement.mode", "sometimes");
  ASSERT_FALSE(mode);
  EXPECT_NE(mode.error().find("The value must either be 'implicit' or 'explicit'"),
            std::string::npos)
      << mode.error();
  EXPECT_FALSE(c.set("max.poll.records", "0"));
  EXPECT_FALSE(c.set("fetch.max.bytes", "lots"));
  EXPECT_FALSE(c.set("security.protocol", "carrier-pigeon"));
}

}  // namespace
}  // namespace tarn::client
