// log_config: Kafka 4.4's defaults, broker fallbacks, and validation messages.
#include "storage/log_config.h"

#include <gtest/gtest.h>

namespace tarn::storage {
namespace {

TEST(LogConfig, TableIsSortedAndDefaultsParse) {
  auto defs = topic_config_definitions();
  ASSERT_GT(defs.size(), 30u);
  for (size_t i = 0; i < defs.size(); ++i) {
    if (i > 0) {
      EXPECT_LT(defs[i - 1].name, defs[i].name);
    }
    EXPECT_TRUE(parse_config_value(defs[i], defs[i].default_value)) << defs[i].name;
    EXPECT_EQ(find_topic_config(defs[i].name), &defs[i]);
    EXPECT_FALSE(defs[i].sensitive);
  }
  EXPECT_EQ(find_topic_config("no.such.config"), nullptr);
}

TEST(LogConfig, KafkaDefaults) {
  auto c = resolve_log_config({}, {});
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->cleanup_delete);
  EXPECT_FALSE(c->cleanup_compact);
  EXPECT_EQ(c->compression_type, broker_compression::producer);
  EXPECT_EQ(c->max_message_bytes, 1048588);
  EXPECT_EQ(c->segment_bytes, 1073741824);
  EXPECT_EQ(c->segment_ms, 604800000);
  EXPECT_EQ(c->segment_index_bytes, 10485760);
  EXPECT_EQ(c->index_interval_bytes, 4096);
  EXPECT_EQ(c->flush_messages, INT64_MAX);
  EXPECT_EQ(c->flush_ms, INT64_MAX);
  EXPECT_EQ(c->retention_ms, 604800000);
  EXPECT_EQ(c->retention_bytes, -1);
  EXPECT_EQ(c->message_timestamp_type, timestamp_type::create_time);
  EXPECT_EQ(c->message_timestamp_after_max_ms, 3600000);
  EXPECT_EQ(c->message_timestamp_before_max_ms, INT64_MAX);
  EXPECT_EQ(c->min_insync_replicas, 1);
}

TEST(LogConfig, TopicOverridesBeatBrokerPropsWhichBeatDefaults) {
  config_map broker = {
      {"log.segment.bytes", "2097152"}, {"log.retention.hours", "1"},
      {"log.roll.ms", "5000"},          {"log.roll.hours", "9"},
      {"message.max.bytes", "2000000"}, {"log.message.timestamp.type", "LogAppendTime"},
      {"log.cleanup.policy", "compact"}};
  auto c = resolve_log_config({{"segment.bytes", "3145728"}, {"compression.type", "zstd"}}, broker);
  ASSERT_TRUE(c);
  EXPECT_EQ(c->segment_bytes, 3145728);
  EXPECT_EQ(c->retention_ms, 3600000);
  EXPECT_EQ(c->segment_ms, 5000);  // log.roll.ms wins over log.roll.hours
  EXPECT_EQ(c->max_message_bytes, 2000000);
  EXPECT_EQ(c->message_timestamp_type, timestamp_type::log_append_time);
  EXPECT_TRUE(c->cleanup_compact);
  EXPECT_FALSE(c->cleanup_delete);
  EXPECT_EQ(c->compression_type, broker_compression::zstd);

  auto minutes =
      resolve_log_config({}, {{"log.retention.minutes", "2"}, {"log.retention.hours", "5"}});
  ASSERT_TRUE(minutes);
  EXPECT_EQ(minutes->retention_ms, 120000);
  auto unlimited = resolve_log_config({}, {{"log.retention.ms", "-5"}});
  ASSERT_TRUE(unlimited);
  EXPECT_EQ(unlimited->retention_ms, -1);
  auto bad_broker = resolve_log_config({}, {{"log.segment.bytes", "12"}});
  ASSERT_FALSE(bad_broker);
  EXPECT_EQ(bad_broker.error().message,
            "Invalid value 12 for configuration log.segment.bytes: Value must be at least 1048576");
}

TEST(LogConfig, ValidationMessagesUseKafkasWording) {
  auto msg = [](std::string_view name, std::string_view value) {
    auto r = validate_topic_config(name, value);
    EXPECT_FALSE(r) << name << "=" << value;
    if (!r) {
      EXPECT_EQ(r.error().code, storage_errc::invalid_config);
    }
    return r ? std::string() : r.error().message;
  };
  EXPECT_EQ(msg("segment.bytes", "abc"),
            "Invalid value abc for configuration segment.bytes: Not a number of type INT");
  EXPECT_EQ(msg("segment.bytes", "1000"),
            "Invalid value 1000 for configuration segment.bytes: Value must be at least 1048576");
  EXPECT_EQ(msg("retention.ms", "-2"),
            "Invalid value -2 for configuration retention.ms: Value must be at least -1");
  EXPECT_EQ(msg("flush.messages", "9223372036854775808"),
            "Invalid value 9223372036854775808 for configuration flush.messages: Not a number of "
            "type LONG");
  EXPECT_EQ(msg("compression.type", "none"),
            "Invalid value none for configuration compression.type: String must be one of: "
            "uncompressed, zstd, lz4, snappy, gzip, producer");
  EXPECT_EQ(msg("cleanup.policy", "delete,remove"),
            "Invalid value remove for configuration cleanup.policy: String must be one of: "
            "compact, delete");
  EXPECT_EQ(msg("message.timestamp.type", "createtime"),
            "Invalid value createtime for configuration message.timestamp.type: String must be "
            "one of: CreateTime, LogAppendTime");
  EXPECT_EQ(msg("compression.gzip.level", "10"),
            "Invalid value 10 for configuration compression.gzip.level: Value must be between 1 "
            "and 9 or equal to -1");
  EXPECT_EQ(msg("min.cleanable.dirty.ratio", "1.5"),
            "Invalid value 1.5 for configuration min.cleanable.dirty.ratio: Value must be no "
            "more than 1");
  EXPECT_EQ(msg("preallocate", "yes"),
            "Invalid value yes for configuration preallocate: Expected value to be either true "
            "or false");
  EXPECT_EQ(msg("segmentbytes", "1"), "Unknown topic config name: segmentbytes");
  EXPECT_EQ(msg("leader.replication.throttled.replicas", "1-2"),
            "Invalid value 1-2 for configuration leader.replication.throttled.replicas: "
            "leader.replication.throttled.replicas must be the literal '*' or a list of replicas "
            "in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...");

  EXPECT_TRUE(validate_topic_config("segment.bytes", " 1048576 "));
  EXPECT_TRUE(validate_topic_config("cleanup.policy", "compact, delete"));
  EXPECT_TRUE(validate_topic_config("cleanup.policy", ""));
  EXPECT_TRUE(validate_topic_config("compression.gzip.level", "-1"));
  EXPECT_TRUE(validate_topic_config("preallocate", "TRUE"));
  EXPECT_TRUE(validate_topic_config("retention.bytes", "-100"));
  EXPECT_TRUE(validate_topic_config("leader.replication.throttled.replicas", "0:1,1:2"));
  EXPECT_TRUE(validate_topic_config("follower.replication.throttled.replicas", "*"));
}

TEST(LogConfig, CrossChecks) {
  auto r =
      validate_topic_configs({{"min.compaction.lag.ms", "10"}, {"max.compaction.lag.ms", "5"}});
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().message,
            "conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)");
  EXPECT_FALSE(validate_topic_configs({{"remote.storage.enable", "true"}}));
  EXPECT_TRUE(validate_topic_configs({{"remote.storage.enable", "false"}}));
}

TEST(LogConfig, DescribeReportsSourcesAndSynonyms) {
  auto described = describe_topic_configs(
      {{"retention.ms", "1000"}}, {{"log.retention.hours", "2"}, {"log.segment.bytes", "2097152"}});
  auto find = [&](std::string_view name) -> const described_config& {
    for (const auto& d : described) {
      if (d.definition->name == name) return d;
    }
    ADD_FAILURE() << name;
    return described.front();
  };
  const auto& retention = find("retention.ms");
  EXPECT_EQ(retention.value, "1000");
  EXPECT_EQ(retention.source, config_source::topic_config);
  ASSERT_EQ(retention.synonyms.size(), 3u);
  EXPECT_EQ(retention.synonyms[1].name, "log.retention.hours");
  EXPECT_EQ(retention.synonyms[1].value, "7200000");
  EXPECT_EQ(retention.synonyms[2].source, config_source::default_config);
  const auto& segment = find("segment.bytes");
  EXPECT_EQ(segment.value, "2097152");
  EXPECT_EQ(segment.source, config_source::static_broker_config);
  const auto& flush = find("flush.ms");
  EXPECT_EQ(flush.value, "9223372036854775807");
  EXPECT_EQ(flush.source, config_source::default_config);
  EXPECT_EQ(config_type_name(flush.definition->type), "long");
}

}  // namespace
}  // namespace tarn::storage
