// Broker configuration: Kafka 4.4's defaults, types, ranges, enums and the derived values.
#include "broker/config.h"

#include <gtest/gtest.h>

namespace tarn::broker {
namespace {

broker_config make_ok(const properties& file, const properties& overrides = {}) {
  auto r = make_broker_config(file, overrides);
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error());
  return r ? *r : broker_config{};
}

std::string make_error(const properties& file) {
  auto r = make_broker_config(file, {});
  EXPECT_FALSE(r.has_value());
  return r ? "" : r.error();
}

TEST(broker_config, defaults_are_kafkas_except_listener_and_data_dir) {
  auto c = make_ok({});
  ASSERT_EQ(c.listeners.size(), 1u);
  EXPECT_EQ(c.listeners[0], (listener_endpoint{"PLAINTEXT", "127.0.0.1", 9092}));
  EXPECT_EQ(c.advertised_listeners, c.listeners);
  EXPECT_EQ(c.log_dirs, std::vector<std::string>{"./data"});
  EXPECT_EQ(c.node_id, 1);
  EXPECT_EQ(c.num_partitions, 1);
  EXPECT_EQ(c.default_replication_factor, 1);
  EXPECT_TRUE(c.auto_create_topics_enable);
  EXPECT_EQ(c.log_segment_bytes, 1073741824);
  EXPECT_EQ(c.log_index_interval_bytes, 4096);
  EXPECT_EQ(c.log_index_size_max_bytes, 10485760);
  EXPECT_EQ(c.message_max_bytes, 1048588);
  EXPECT_EQ(c.socket_request_max_bytes, 104857600);
  EXPECT_EQ(c.compression_type, "producer");
  EXPECT_EQ(c.min_insync_replicas, 1);
  EXPECT_EQ(c.log_message_timestamp_type, timestamp_type::create_time);
  EXPECT_EQ(c.log_message_timestamp_before_max_ms, INT64_MAX);
  EXPECT_EQ(c.log_message_timestamp_after_max_ms, 3600000);
  EXPECT_EQ(c.log_flush_interval_messages, INT64_MAX);
  EXPECT_EQ(c.log_flush_interval_ms, INT64_MAX);
  EXPECT_EQ(c.log_retention_ms, 168LL * 3600000);
  EXPECT_EQ(c.log_roll_ms, 168LL * 3600000);
  EXPECT_EQ(c.num_network_threads, 0);
  EXPECT_EQ(c.num_io_threads, 8);
  EXPECT_EQ(c.max_connections, INT32_MAX);
  EXPECT_EQ(c.max_connections_per_ip, INT32_MAX);
  EXPECT_EQ(c.queued_max_requests, 500);
  EXPECT_EQ(c.connections_max_idle_ms, 600000);
  EXPECT_TRUE(c.explicitly_set.empty());
  EXPECT_TRUE(c.ignored_keys.empty());
}

TEST(broker_config, typed_values_and_overrides_win) {
  auto c = make_ok({{"num.partitions", " 3 "},
                    {"auto.create.topics.enable", "FALSE"},
                    {"log.message.timestamp.type", "LogAppendTime"},
                    {"compression.type", "zstd"},
                    {"log.dirs", "/tmp/x"},
                    {"node.id", "7"}},
                   {{"num.partitions", "5"}, {"compression.type", "uncompressed"}});
  EXPECT_EQ(c.num_partitions, 5);
  EXPECT_FALSE(c.auto_create_topics_enable);
  EXPECT_EQ(c.log_message_timestamp_type, timestamp_type::log_append_time);
  EXPECT_EQ(c.compression_type, "uncompressed");
  EXPECT_EQ(c.log_dirs, std::vector<std::string>{"/tmp/x"});
  EXPECT_EQ(c.node_id, 7);
  EXPECT_EQ(c.explicitly_set.at("num.partitions"), "5");
}

TEST(broker_config, every_compression_type_kafka_accepts) {
  for (const char* t : {"uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"}) {
    EXPECT_EQ(make_ok({{"compression.type", t}}).compression_type, t);
  }
  auto e = make_error({{"compression.type", "brotli"}});
  EXPECT_NE(e.find("compression.type"), std::string::npos) << e;
  EXPECT_NE(e.find("brotli"), std::string::npos) << e;
}

TEST(broker_config, errors_name_key_and_value) {
  struct bad_case {
    const char* key;
    const char* value;
  };
  for (auto [key, value] : std::initializer_list<bad_case>{
           {"num.partitions", "0"},
           {"num.partitions", "many"},
           {"num.partitions", "2147483648"},
           {"log.segment.bytes", "1048575"},
           {"message.max.bytes", "-1"},
           {"socket.request.max.bytes", "0"},
           {"auto.create.topics.enable", "yes"},
           {"log.message.timestamp.type", "createtime"},
           {"log.message.timestamp.after.max.ms", "-5"},
           {"log.flush.interval.messages", "0"},
           {"compression.gzip.level", "0"},
           {"compression.lz4.level", "18"},
           {"compression.zstd.level", "23"},
           {"min.insync.replicas", "0"},
           {"num.network.threads", "0"},
           {"queued.max.requests", "0"},
           {"log.cleanup.policy", "delete,shred"},
           {"listeners", "localhost:9092"},
           {"listeners", "PLAINTEXT://localhost:70000"},
           {"listeners", "SSL://localhost:9093,SSL://localhost:9094"},
           {"listeners", "OTHER://localhost:9093"},
           {"node.id", "-1"},
           {"log.dirs", "/a,/b"},
           {"max.connections.per.ip.overrides", "hostonly"},
       }) {
    auto e = make_error({{key, value}});
    EXPECT_NE(e.find(key), std::string::npos) << key << "=" << value << ": " << e;
    EXPECT_NE(e.find(value), std::string::npos) << key << "=" << value << ": " << e;
  }
}

TEST(broker_config, http_listener_default_empty_and_bad_values) {
  auto d = make_ok({});
  EXPECT_TRUE(d.http_enabled);
  EXPECT_EQ(d.http_host, "127.0.0.1");
  EXPECT_EQ(d.http_port, 9644);
  EXPECT_EQ(d.http_metrics_max_partitions, 1000);
  EXPECT_FALSE(d.http_console_read_only);
  EXPECT_TRUE(make_ok({{"http.console.read.only", "true"}}).http_console_read_only);
  EXPECT_TRUE(d.http_metrics_request_path_enabled);
  EXPECT_FALSE(
      make_ok({{"http.metrics.request.path.enabled", "false"}}).http_metrics_request_path_enabled);
  EXPECT_EQ(make_error({{"http.console.read.only", "maybe"}}),
            "Invalid value maybe for configuration http.console.read.only: Expected value to be "
            "either true or false");
  auto off = make_ok({{"http.listener", ""}});
  EXPECT_FALSE(off.http_enabled);
  auto any = make_ok({{"http.listener", " :0 "}, {"http.metrics.max.partitions", "0"}});
  EXPECT_TRUE(any.http_enabled);
  EXPECT_EQ(any.http_host, "");
  EXPECT_EQ(any.http_port, 0);
  EXPECT_EQ(any.http_metrics_max_partitions, 0);
  auto v6 = make_ok({{"http.listener", "[::1]:9645"}});
  EXPECT_EQ(v6.http_host, "::1");
  EXPECT_EQ(v6.http_port, 9645);
  EXPECT_EQ(make_error({{"http.listener", "localhost"}}),
            "Invalid value localhost for configuration http.listener: Expected host:port or an "
            "empty value");
  EXPECT_EQ(make_error({{"http.listener", "h:70000"}}),
            "Invalid value h:70000 for configuration http.listener: Expected host:port or an "
            "empty value");
  EXPECT_EQ(make_error({{"http.metrics.max.partitions", "-1"}}),
            "Invalid value -1 for configuration http.metrics.max.partitions: Value must be at "
            "least 0");
}

TEST(broker_config, replica_selector_class_is_one_of_kafkas_two) {
  EXPECT_FALSE(make_ok({}).rack_aware_replica_selection);  // null: the leader only
  EXPECT_TRUE(make_ok({{"replica.selector.class",
                        "org.apache.kafka.common.replica.RackAwareReplicaSelector"}})
                  .rack_aware_replica_selection);
  EXPECT_FALSE(
      make_ok({{"replica.selector.class", "org.apache.kafka.common.replica.LeaderReplicaSelector"}})
          .rack_aware_replica_selection);
  const std::string e = make_error({{"replica.selector.class", "com.example.NearestReplica"}});
  EXPECT_NE(e.find("Invalid value com.example.NearestReplica for configuration "
                   "replica.selector.class: Class com.example.NearestReplica cannot be found"),
            std::string::npos)
      << e;
}

TEST(broker_config, unknown_key_is_refused) {
  auto e = make_error({{"num.partition", "3"}});
  EXPECT_NE(e.find("Unknown configuration num.partition"), std::string::npos) << e;
  EXPECT_NE(e.find("3"), std::string::npos) << e;
  auto r = make_broker_config({}, {{"no.such.key", "x"}});
  ASSERT_FALSE(r.has_value());
  EXPECT_NE(r.error().find("no.such.key"), std::string::npos);
}

TEST(broker_config, retention_and_roll_precedence) {
  EXPECT_EQ(make_ok({{"log.retention.hours", "1"}}).log_retention_ms, 3600000);
  EXPECT_EQ(
      make_ok({{"log.retention.hours", "1"}, {"log.retention.minutes", "2"}}).log_retention_ms,
      120000);
  EXPECT_EQ(make_ok({{"log.retention.minutes", "2"}, {"log.retention.ms", "5"}}).log_retention_ms,
            5);
  EXPECT_EQ(make_ok({{"log.retention.ms", "-1"}}).log_retention_ms, -1);
  EXPECT_EQ(make_ok({{"log.retention.hours", "-1"}}).log_retention_ms, -1);
  EXPECT_EQ(make_ok({{"log.roll.hours", "2"}}).log_roll_ms, 7200000);
  EXPECT_EQ(make_ok({{"log.roll.hours", "2"}, {"log.roll.ms", "10"}}).log_roll_ms, 10);
  EXPECT_EQ(make_ok({{"log.flush.scheduler.interval.ms", "100"}}).log_flush_interval_ms, 100);
  EXPECT_EQ(make_ok({{"log.flush.interval.ms", "7"}}).log_flush_interval_ms, 7);
}

TEST(broker_config, listeners_and_advertised_listeners) {
  auto c = make_ok({{"listeners", "PLAINTEXT://:0,CONTROLLER://127.0.0.1:9093"},
                    {"controller.listener.names", "CONTROLLER"},
                    {"listener.security.protocol.map", "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"},
                    {"advertised.listeners", "PLAINTEXT://broker.example:19092"}});
  ASSERT_EQ(c.listeners.size(), 1u);
  EXPECT_EQ(c.listeners[0], (listener_endpoint{"PLAINTEXT", "", 0}));
  EXPECT_EQ(c.advertised_listeners[0], (listener_endpoint{"PLAINTEXT", "broker.example", 19092}));

  auto v6 = make_ok({{"listeners", "PLAINTEXT://[::1]:9092"}});
  EXPECT_EQ(v6.listeners[0].host, "::1");
  EXPECT_EQ(v6.listeners[0].to_string(), "PLAINTEXT://[::1]:9092");

  auto e = make_error({{"advertised.listeners", "OTHER://h:1"}});
  EXPECT_NE(e.find("advertised.listeners"), std::string::npos) << e;
}

TEST(broker_config, named_listeners_with_their_protocols_and_per_listener_security) {
  auto c = make_ok(
      {{"listeners",
        "PLAINTEXT://127.0.0.1:9092,SSL://:9093,sasl_ssl://:9094,CLIENT://:9095,"
        "CONTROLLER://:9096"},
       {"controller.listener.names", "CONTROLLER"},
       {"listener.security.protocol.map",
        "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL,client:sasl_plaintext,CONTROLLER:PLAINTEXT"},
       {"ssl.keystore.location", "/global.p12"},
       {"ssl.keystore.type", "PKCS12"},
       {"listener.name.sasl_ssl.ssl.keystore.location", "/per-listener.pem"},
       {"listener.name.sasl_ssl.ssl.keystore.type", "PEM"},
       {"ssl.client.auth", "required"},
       {"sasl.enabled.mechanisms", "PLAIN"},
       {"listener.name.sasl_ssl.sasl.enabled.mechanisms", "SCRAM-SHA-512,PLAIN"},
       {"listener.name.client.plain.sasl.jaas.config", "x.PlainLoginModule required;"},
       {"sasl.jaas.config", "y.PlainLoginModule required;"},
       {"connections.max.reauth.ms", "60000"}});
  ASSERT_EQ(c.listeners.size(), 4u);
  ASSERT_EQ(c.security_by_listener.size(), 4u);
  EXPECT_EQ(c.listeners[2].name, "SASL_SSL") << "listener names are case-insensitive";
  using security::security_protocol;
  EXPECT_EQ(c.security_by_listener[0].protocol, security_protocol::plaintext);
  EXPECT_EQ(c.security_by_listener[1].protocol, security_protocol::ssl);
  EXPECT_EQ(c.security_by_listener[1].ssl.keystore_location, "/global.p12");
  EXPECT_EQ(c.security_by_listener[1].ssl.keystore_type, "PKCS12");
  EXPECT_EQ(c.security_by_listener[1].ssl.client_auth, security::ssl_client_auth::required);
  EXPECT_EQ(c.security_by_listener[2].protocol, security_protocol::sasl_ssl);
  EXPECT_EQ(c.security_by_listener[2].ssl.keystore_location, "/per-listener.pem");
  EXPECT_EQ(c.security_by_listener[2].ssl.keystore_type, "PEM");
  EXPECT_EQ(c.security_by_listener[2].sasl.enabled_mechanisms,
            (std::vector<std::string>{"SCRAM-SHA-512", "PLAIN"}));
  EXPECT_EQ(c.security_by_listener[2].sasl.jaas_config.at("PLAIN"), "y.PlainLoginModule required;");
  EXPECT_EQ(c.security_by_listener[3].protocol, security_protocol::sasl_plaintext);
  EXPECT_EQ(c.security_by_listener[3].sasl.jaas_config.at("PLAIN"), "x.PlainLoginModule required;");
  EXPECT_EQ(c.security_by_listener[3].sasl.connections_max_reauth_ms, 60000);
  EXPECT_EQ(c.inter_broker_listener_name, "PLAINTEXT");
  // Passwords are sensitive in DescribeConfigs.
  EXPECT_EQ(describe_broker_config_key("ssl.keystore.password")->type,
            broker_config_type::password);
}

TEST(broker_config, oauthbearer_keys_per_listener_and_mechanism) {
  auto c =
      make_ok({{"listeners", "A://:9094,B://:9095"},
               {"listener.security.protocol.map", "A:SASL_SSL,B:SASL_PLAINTEXT"},
               {"inter.broker.listener.name", "B"},
               {"sasl.enabled.mechanisms", "OAUTHBEARER"},
               {"sasl.oauthbearer.expected.audience", "tarn,kafka"},
               {"sasl.oauthbearer.jwks.endpoint.url", "file:/global.json"},
               {"listener.name.a.oauthbearer.sasl.oauthbearer.jwks.endpoint.url", "file:/a.json"},
               {"listener.name.a.oauthbearer.sasl.server.callback.handler.class",
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"},
               {"listener.name.b.sasl.oauthbearer.clock.skew.seconds", "5"}});
  ASSERT_EQ(c.security_by_listener.size(), 2u);
  const auto& a = c.security_by_listener[0].sasl.oauthbearer;
  const auto& b = c.security_by_listener[1].sasl.oauthbearer;
  EXPECT_EQ(a.jwks_endpoint_url, "file:/a.json");
  EXPECT_TRUE(a.server_callback_handler_class);
  EXPECT_EQ(a.expected_audience, (std::vector<std::string>{"tarn", "kafka"}));
  EXPECT_EQ(a.clock_skew_seconds, 30);
  EXPECT_EQ(a.jwks_endpoint_refresh_ms, 3600000);
  EXPECT_EQ(b.jwks_endpoint_url, "file:/global.json");
  EXPECT_FALSE(b.server_callback_handler_class);
  EXPECT_EQ(b.clock_skew_seconds, 5);
  EXPECT_EQ(b.sub_claim_name, "sub");
}

TEST(broker_config, inter_broker_listener_checked_as_kafka_does) {
  EXPECT_EQ(make_ok({{"listeners", "SSL://:9093,INTERNAL://:9094"},
                     {"listener.security.protocol.map", "SSL:SSL,INTERNAL:PLAINTEXT"},
                     {"inter.broker.listener.name", "internal"}})
                .inter_broker_listener_name,
            "INTERNAL");
  EXPECT_EQ(make_ok({{"listeners", "SSL://:9093"}, {"security.inter.broker.protocol", "SSL"}})
                .inter_broker_listener_name,
            "SSL");
  auto both = make_error({{"listeners", "SSL://:9093"},
                          {"security.inter.broker.protocol", "SSL"},
                          {"inter.broker.listener.name", "SSL"}});
  EXPECT_EQ(both,
            "Only one of inter.broker.listener.name and security.inter.broker.protocol should be "
            "set.");
  auto missing = make_error({{"listeners", "SSL://:9093"}});
  EXPECT_NE(missing.find("inter.broker.listener.name must be a listener name defined in "
                         "advertised.listeners. The valid options based on currently configured "
                         "listeners are SSL"),
            std::string::npos)
      << missing;
  auto unmapped = make_error({{"listeners", "PLAINTEXT://:9092,CLIENT://:9093"}});
  EXPECT_NE(unmapped.find("No security protocol defined for listener CLIENT"), std::string::npos);
  auto bad_protocol = make_error({{"listener.security.protocol.map", "PLAINTEXT:TLS"}});
  EXPECT_NE(bad_protocol.find("SecurityProtocol.TLS"), std::string::npos) << bad_protocol;
  auto bad_prefixed = make_error({{"listener.name.ssl.ssl.client.auth", "sometimes"}});
  EXPECT_NE(bad_prefixed.find("listener.name.ssl.ssl.client.auth"), std::string::npos)
      << bad_prefixed;
  auto unknown_prefixed = make_error({{"listener.name.ssl.no.such.key", "1"}});
  EXPECT_NE(unknown_prefixed.find("Unknown configuration"), std::string::npos);
}

TEST(broker_config, kafka_sample_server_properties_is_accepted) {
  // Kafka 4.x's config/server.properties, trimmed of comments.
  auto c =
      make_ok({{"process.roles", "broker,controller"},
               {"node.id", "1"},
               {"controller.quorum.bootstrap.servers", "localhost:9093"},
               {"listeners", "PLAINTEXT://:9092,CONTROLLER://:9093"},
               {"inter.broker.listener.name", "PLAINTEXT"},
               {"advertised.listeners", "PLAINTEXT://localhost:9092,CONTROLLER://localhost:9093"},
               {"controller.listener.names", "CONTROLLER"},
               {"listener.security.protocol.map",
                "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,"
                "SASL_SSL:SASL_SSL"},
               {"num.network.threads", "3"},
               {"num.io.threads", "8"},
               {"socket.send.buffer.bytes", "102400"},
               {"socket.receive.buffer.bytes", "102400"},
               {"socket.request.max.bytes", "104857600"},
               {"log.dirs", "/tmp/kraft-combined-logs"},
               {"num.partitions", "1"},
               {"num.recovery.threads.per.data.dir", "1"},
               {"offsets.topic.replication.factor", "1"},
               {"share.coordinator.state.topic.replication.factor", "1"},
               {"share.coordinator.state.topic.min.isr", "1"},
               {"transaction.state.log.replication.factor", "1"},
               {"transaction.state.log.min.isr", "1"},
               {"log.retention.hours", "168"},
               {"log.segment.bytes", "1073741824"},
               {"log.retention.check.interval.ms", "300000"}});
  EXPECT_EQ(c.num_network_threads, 3);
  ASSERT_EQ(c.listeners.size(), 1u);
  EXPECT_EQ(c.advertised_listeners[0].host, "localhost");
  EXPECT_FALSE(c.ignored_keys.empty());
}

TEST(broker_config, transaction_keys_reach_the_transaction_coordinator) {
  const broker_config d = make_ok({});
  EXPECT_EQ(d.txn.max_timeout_ms, 900000);
  EXPECT_EQ(d.txn.state_log_num_partitions, 50);
  EXPECT_EQ(d.txn.state_log_segment_bytes, 104857600);
  EXPECT_EQ(d.txn.abort_timed_out_interval_ms, 10000);
  EXPECT_EQ(d.txn.transactional_id_expiration_ms, 604800000);
  EXPECT_EQ(d.txn.remove_expired_interval_ms, 3600000);
  const broker_config c =
      make_ok({{"transaction.max.timeout.ms", "60000"},
               {"transaction.state.log.num.partitions", "3"},
               {"transaction.state.log.segment.bytes", "1048576"},
               {"transaction.abort.timed.out.transaction.cleanup.interval.ms", "500"},
               {"transactional.id.expiration.ms", "2000"},
               {"transaction.remove.expired.transaction.cleanup.interval.ms", "250"}});
  EXPECT_EQ(c.txn.max_timeout_ms, 60000);
  EXPECT_EQ(c.txn.state_log_num_partitions, 3);
  EXPECT_EQ(c.txn.state_log_segment_bytes, 1048576);
  EXPECT_EQ(c.txn.abort_timed_out_interval_ms, 500);
  EXPECT_EQ(c.txn.transactional_id_expiration_ms, 2000);
  EXPECT_EQ(c.txn.remove_expired_interval_ms, 250);
  EXPECT_NE(make_error({{"transaction.state.log.num.partitions", "0"}})
                .find("transaction.state.log.num.partitions"),
            std::string::npos);
}

TEST(broker_config, share_coordinator_keys_reach_the_share_coordinator) {
  const broker_config d = make_ok({});
  EXPECT_EQ(d.share.share_coordinator_state_topic_num_partitions, 50);
  EXPECT_EQ(d.share.share_coordinator_state_topic_segment_bytes, 104857600);
  EXPECT_EQ(d.share.share_coordinator_snapshot_update_records_per_snapshot, 500);
  EXPECT_EQ(d.share.share_coordinator_state_topic_prune_interval_ms, 300000);
  EXPECT_EQ(d.share.share_coordinator_cold_partition_snapshot_interval_ms, 300000);
  const broker_config c =
      make_ok({{"share.coordinator.state.topic.num.partitions", "3"},
               {"share.coordinator.state.topic.segment.bytes", "1048576"},
               {"share.coordinator.snapshot.update.records.per.snapshot", "0"},
               {"share.coordinator.state.topic.prune.interval.ms", "1000"},
               {"share.coordinator.cold.partition.snapshot.interval.ms", "2000"}});
  EXPECT_EQ(c.share.share_coordinator_state_topic_num_partitions, 3);
  EXPECT_EQ(c.share.share_coordinator_state_topic_segment_bytes, 1048576);
  EXPECT_EQ(c.share.share_coordinator_snapshot_update_records_per_snapshot, 0);
  EXPECT_EQ(c.share.share_coordinator_state_topic_prune_interval_ms, 1000);
  EXPECT_EQ(c.share.share_coordinator_cold_partition_snapshot_interval_ms, 2000);
  // Kafka's range: between 0 and 500 updates per snapshot.
  EXPECT_NE(make_error({{"share.coordinator.snapshot.update.records.per.snapshot", "501"}})
                .find("share.coordinator.snapshot.update.records.per.snapshot"),
            std::string::npos);
}

TEST(broker_config, process_roles_must_include_broker) {
  auto e = make_error({{"process.roles", "controller"}});
  EXPECT_NE(e.find("process.roles"), std::string::npos) << e;
}

TEST(broker_config, broker_id_must_match_node_id) {
  make_ok({{"broker.id", "1"}});
  auto e = make_error({{"broker.id", "2"}});
  EXPECT_NE(e.find("broker.id"), std::string::npos) << e;
}

TEST(broker_config, queued_max_request_bytes_is_unbounded_or_at_least_one_request) {
  EXPECT_EQ(make_ok({}).queued_max_request_bytes, -1);
  EXPECT_EQ(make_ok({{"queued.max.request.bytes", "104857600"}}).queued_max_request_bytes,
            104857600);
  EXPECT_EQ(make_ok({{"queued.max.request.bytes", "0"}}).queued_max_request_bytes, 0);
  // KafkaConfig: it must be larger or equal to socket.request.max.bytes.
  std::string e = make_error({{"queued.max.request.bytes", "104857599"}});
  EXPECT_NE(e.find("queued.max.request.bytes must be larger or equal to socket.request.max.bytes"),
            std::string::npos)
      << e;
  EXPECT_EQ(make_ok({{"queued.max.request.bytes", "1000"}, {"socket.request.max.bytes", "1000"}})
                .queued_max_request_bytes,
            1000);
}

TEST(broker_config, flush_scheduler_interval_is_kept) {
  broker_config c = make_ok({{"log.flush.scheduler.interval.ms", "2000"}});
  EXPECT_EQ(c.log_flush_scheduler_interval_ms, 2000);
  EXPECT_EQ(c.log_flush_interval_ms, 2000);  // log.flush.interval.ms is null: the scheduler's
  c = make_ok({{"log.flush.interval.ms", "300"}});
  EXPECT_EQ(c.log_flush_interval_ms, 300);
  EXPECT_EQ(c.log_flush_scheduler_interval_ms, INT64_MAX);
}

TEST(broker_config, group_coordinator_keys_default_to_kafkas) {
  const coordinator::group_config g = make_ok({}).group;
  const coordinator::group_config kafka;  // the header's defaults are Kafka 4.4's
  EXPECT_EQ(g.group_min_session_timeout_ms, 6000);
  EXPECT_EQ(g.group_max_session_timeout_ms, 1800000);
  EXPECT_EQ(g.group_initial_rebalance_delay_ms, 3000);
  EXPECT_EQ(g.group_max_size, INT32_MAX);
  EXPECT_EQ(g.group_consumer_session_timeout_ms, 45000);
  EXPECT_EQ(g.group_consumer_min_session_timeout_ms, 45000);
  EXPECT_EQ(g.group_consumer_max_session_timeout_ms, 60000);
  EXPECT_EQ(g.group_consumer_heartbeat_interval_ms, 5000);
  EXPECT_EQ(g.group_consumer_min_heartbeat_interval_ms, 5000);
  EXPECT_EQ(g.group_consumer_max_heartbeat_interval_ms, 15000);
  EXPECT_EQ(g.group_consumer_max_size, INT32_MAX);
  EXPECT_EQ(g.group_consumer_assignment_interval_ms, 1000);
  EXPECT_EQ(g.group_consumer_assignors, (std::vector<std::string>{"uniform", "range"}));
  EXPECT_EQ(g.group_consumer_migration_policy, "bidirectional");
  EXPECT_EQ(g.offset_metadata_max_bytes, 4096);
  EXPECT_EQ(g.offsets_retention_minutes, 10080);
  EXPECT_EQ(g.offsets_retention_check_interval_ms, 600000);
  EXPECT_EQ(g.offsets_topic_num_partitions, 50);
  EXPECT_EQ(g.offsets_topic_segment_bytes, 104857600);
  EXPECT_EQ(g.offsets_commit_timeout_ms, 5000);
  EXPECT_EQ(g.group_consumer_assignors, kafka.group_consumer_assignors);
  EXPECT_EQ(g.offsets_topic_num_partitions, kafka.offsets_topic_num_partitions);
}

TEST(broker_config, group_coordinator_keys_are_parsed_and_used) {
  broker_config c = make_ok({{"group.initial.rebalance.delay.ms", "0"},
                             {"group.min.session.timeout.ms", "10"},
                             {"group.max.size", "7"},
                             {"group.consumer.session.timeout.ms", "50000"},
                             {"group.consumer.assignors", "range"},
                             {"group.consumer.migration.policy", "UpGrade"},
                             {"offsets.topic.num.partitions", "3"},
                             {"offsets.retention.minutes", "1"},
                             {"offsets.retention.check.interval.ms", "1000"},
                             {"offset.metadata.max.bytes", "10"},
                             {"offsets.topic.segment.bytes", "2097152"},
                             {"offsets.commit.timeout.ms", "100"}});
  EXPECT_EQ(c.group.group_initial_rebalance_delay_ms, 0);
  EXPECT_EQ(c.group.group_min_session_timeout_ms, 10);
  EXPECT_EQ(c.group.group_max_size, 7);
  EXPECT_EQ(c.group.group_consumer_session_timeout_ms, 50000);
  EXPECT_EQ(c.group.group_consumer_assignors, std::vector<std::string>{"range"});
  EXPECT_EQ(c.group.group_consumer_migration_policy, "upgrade");
  EXPECT_EQ(c.group.offsets_topic_num_partitions, 3);
  EXPECT_EQ(c.group.offsets_retention_minutes, 1);
  EXPECT_EQ(c.group.offsets_retention_check_interval_ms, 1000);
  EXPECT_EQ(c.group.offset_metadata_max_bytes, 10);
  EXPECT_EQ(c.group.offsets_topic_segment_bytes, 2097152);
  EXPECT_EQ(c.group.offsets_commit_timeout_ms, 100);
  // They take effect now: not logged as ignored.
  EXPECT_TRUE(c.ignored_keys.empty());
  // Kafka's class names of its built-in assignors name the same assignors.
  c = make_ok({{"group.consumer.assignors",
                "org.apache.kafka.coordinator.group.assignor.RangeAssignor, uniform"}});
  EXPECT_EQ(c.group.group_consumer_assignors, (std::vector<std::string>{"range", "uniform"}));
}

TEST(broker_config, group_coordinator_keys_are_validated_as_kafka_does) {
  auto has = [](const std::string& e, const std::string& part) {
    return e.find(part) != std::string::npos;
  };
  std::string e = make_error({{"offsets.topic.num.partitions", "0"}});
  EXPECT_TRUE(has(e,
                  "Invalid value 0 for configuration offsets.topic.num.partitions: Value must "
                  "be at least 1"))
      << e;
  e = make_error({{"group.max.size", "0"}});
  EXPECT_TRUE(has(e, "group.max.size")) << e;
  e = make_error({{"offsets.retention.check.interval.ms", "0"}});
  EXPECT_TRUE(has(e, "offsets.retention.check.interval.ms")) << e;
  e = make_error({{"offsets.commit.timeout.ms", "x"}});
  EXPECT_TRUE(has(e, "Not a number of type INT")) << e;
  // Unchecked in Kafka too: any INT.
  EXPECT_EQ(make_ok({{"group.min.session.timeout.ms", "-5"}}).group.group_min_session_timeout_ms,
            -5);
  e = make_error({{"group.consumer.migration.policy", "sideways"}});
  EXPECT_TRUE(has(e, "group.consumer.migration.policy")) << e;
  e = make_error({{"group.consumer.assignors", ""}});
  EXPECT_TRUE(has(e, "must not be empty")) << e;
  e = make_error({{"group.consumer.assignors", "range,range"}});
  EXPECT_TRUE(has(e, "must not be duplicated")) << e;
  e = make_error({{"group.consumer.assignors", "com.example.MyAssignor"}});
  EXPECT_TRUE(has(e, "Class com.example.MyAssignor cannot be found")) << e;
  // GroupCoordinatorConfig's checks across keys.
  e = make_error({{"group.consumer.min.heartbeat.interval.ms", "20000"}});
  EXPECT_TRUE(has(e,
                  "group.consumer.max.heartbeat.interval.ms must be greater than or equal to "
                  "group.consumer.min.heartbeat.interval.ms"))
      << e;
  e = make_error({{"group.consumer.heartbeat.interval.ms", "16000"}});
  EXPECT_TRUE(has(e,
                  "group.consumer.heartbeat.interval.ms must be less than or equal to "
                  "group.consumer.max.heartbeat.interval.ms"))
      << e;
  e = make_error({{"group.consumer.session.timeout.ms", "70000"}});
  EXPECT_TRUE(has(e,
                  "group.consumer.session.timeout.ms must be less than or equal to "
                  "group.consumer.max.session.timeout.ms"))
      << e;
  e = make_error({{"group.consumer.session.timeout.ms", "10000"}});
  EXPECT_TRUE(has(e,
                  "group.consumer.session.timeout.ms must be greater than or equal to "
                  "group.consumer.min.session.timeout.ms"))
      << e;
  // KIP-1263's assignment intervals within their bounds (Kafka 4.4's messages; a dynamic change
  // beyond the max is refused with the same one).
  e = make_error({{"group.consumer.assignment.interval.ms", "20000"}});
  EXPECT_TRUE(has(e,
                  "group.consumer.assignment.interval.ms must be less than or equal to "
                  "group.consumer.max.assignment.interval.ms"))
      << e;
  e = make_error({{"group.share.assignment.interval.ms", "20000"}});
  EXPECT_TRUE(has(e,
                  "group.share.assignment.interval.ms must be less than or equal to "
                  "group.share.max.assignment.interval.ms"))
      << e;
  e = make_error({{"group.consumer.min.assignment.interval.ms", "2000"}});
  EXPECT_TRUE(has(e,
                  "group.consumer.assignment.interval.ms must be greater than or equal to "
                  "group.consumer.min.assignment.interval.ms"))
      << e;
  {
    const broker_config c = make_ok({{"group.consumer.max.assignment.interval.ms", "30000"},
                                     {"group.consumer.assignor.offload.enable", "false"},
                                     {"group.share.assignor.offload.enable", "false"}});
    EXPECT_EQ(c.group.group_consumer_min_assignment_interval_ms, 0);
    EXPECT_EQ(c.group.group_consumer_max_assignment_interval_ms, 30000);
    EXPECT_FALSE(c.group.group_consumer_assignor_offload_enable);
    EXPECT_FALSE(c.share.group_share_assignor_offload_enable);
    EXPECT_TRUE(make_ok({}).group.group_consumer_assignor_offload_enable);
  }
  e = make_error({{"group.consumer.min.session.timeout.ms", "5000"},
                  {"group.consumer.session.timeout.ms", "5000"}});
  EXPECT_TRUE(has(e,
                  "group.consumer.heartbeat.interval.ms must be less than "
                  "group.consumer.session.timeout.ms"))
      << e;
  // The share group bounds hold the broker's own values (ShareGroupConfig).
  e = make_error({{"group.share.delivery.count.limit", "11"}});
  EXPECT_TRUE(has(e,
                  "group.share.delivery.count.limit must be less than or equal to "
                  "group.share.max.delivery.count.limit"))
      << e;
  e = make_error({{"group.share.min.partition.max.record.locks", "3000"}});
  EXPECT_TRUE(has(e,
                  "group.share.partition.max.record.locks must be greater than or equal to "
                  "group.share.min.partition.max.record.locks"))
      << e;
  // Each of the share group's bounded keys, each of the three checks once.
  e = make_error({{"group.share.min.heartbeat.interval.ms", "20000"}});
  EXPECT_TRUE(has(e,
                  "group.share.max.heartbeat.interval.ms must be greater than or equal to "
                  "group.share.min.heartbeat.interval.ms"))
      << e;
  e = make_error({{"group.share.session.timeout.ms", "40000"}});
  EXPECT_TRUE(has(e,
                  "group.share.session.timeout.ms must be greater than or equal to "
                  "group.share.min.session.timeout.ms"))
      << e;
  e = make_error({{"group.share.record.lock.duration.ms", "70000"}});
  EXPECT_TRUE(has(e,
                  "group.share.record.lock.duration.ms must be less than or equal to "
                  "group.share.max.record.lock.duration.ms"))
      << e;
  e = make_error(
      {{"group.share.min.session.timeout.ms", "5000"}, {"group.share.session.timeout.ms", "5000"}});
  EXPECT_TRUE(has(e,
                  "group.share.heartbeat.interval.ms must be less than "
                  "group.share.session.timeout.ms"))
      << e;
  EXPECT_EQ(make_ok({{"group.share.max.delivery.count.limit", "12"},
                     {"group.share.delivery.count.limit", "11"}})
                .share.group_share_max_delivery_count_limit,
            12);
}

TEST(parse_override, key_value) {
  auto r = parse_override("log.dirs=/a=b");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->first, "log.dirs");
  EXPECT_EQ(r->second, "/a=b");
  EXPECT_FALSE(parse_override("novalue").has_value());
  EXPECT_FALSE(parse_override("=x").has_value());
}

}  // namespace
}  // namespace tarn::broker
