// Tests of the producer's configuration. The accept/refuse cases and messages mirror what
// kafka-clients 4.4.0's ProducerConfig and KafkaProducer constructor do with the same input
// (probed with the real jar; see docs/producer.md#configuration).
#include "client/producer_config.h"

#include <gtest/gtest.h>

namespace tarn::client {
namespace {

std::vector<property> with_bootstrap(std::vector<property> props) {
  props.insert(props.begin(), {"bootstrap.servers", "127.0.0.1:9092"});
  return props;
}

producer_config ok(std::vector<property> props) {
  auto parsed = parse_producer_config(with_bootstrap(std::move(props)));
  EXPECT_TRUE(parsed.has_value()) << (parsed ? "" : parsed.error().message);
  return parsed ? *parsed : producer_config{};
}

config_error bad(std::vector<property> props) {
  auto parsed = parse_producer_config(with_bootstrap(std::move(props)));
  EXPECT_FALSE(parsed.has_value());
  return parsed ? config_error{} : parsed.error();
}

TEST(producer_config, java_defaults) {
  auto c = ok({});
  EXPECT_EQ(c.bootstrap_servers, (std::vector<broker_address>{{"127.0.0.1", 9092}}));
  EXPECT_EQ(c.acks, -1);
  EXPECT_EQ(c.batch_size, 16384);
  EXPECT_EQ(c.linger_ms, 5);
  EXPECT_EQ(c.buffer_memory, 33554432);
  EXPECT_EQ(c.max_block_ms, 60000);
  EXPECT_EQ(c.compression_type, record::compression_type::none);
  EXPECT_EQ(c.compression_gzip_level, -1);
  EXPECT_EQ(c.compression_lz4_level, 9);
  EXPECT_EQ(c.compression_zstd_level, 3);
  EXPECT_TRUE(c.enable_idempotence);
  EXPECT_EQ(c.max_in_flight_requests_per_connection, 5);
  EXPECT_EQ(c.retries, 2147483647);
  EXPECT_EQ(c.delivery_timeout_ms, 120000);
  EXPECT_EQ(c.request_timeout_ms, 30000);
  EXPECT_EQ(c.retry_backoff_ms, 100);
  EXPECT_EQ(c.retry_backoff_max_ms, 1000);
  EXPECT_EQ(c.max_request_size, 1048576);
  EXPECT_EQ(c.metadata_max_age_ms, 300000);
  EXPECT_FALSE(c.partitioner_ignore_keys);
  EXPECT_TRUE(c.partitioner_adaptive_partitioning_enable);
  EXPECT_EQ(c.partitioner_availability_timeout_ms, 0);
}

TEST(producer_config, bootstrap_servers_required_and_parsed) {
  auto missing = parse_producer_config({});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.error().key, "bootstrap.servers");
  EXPECT_NE(missing.error().message.find("Missing required configuration"), std::string::npos);

  auto c = ok({{"bootstrap.servers", " a.example:1, ,[::1]:9093,b_c-d:65535 "}});
  EXPECT_EQ(c.bootstrap_servers,
            (std::vector<broker_address>{{"a.example", 1}, {"::1", 9093}, {"b_c-d", 65535}}));

  EXPECT_EQ(bad({{"bootstrap.servers", ""}}).message,
            "Configuration 'bootstrap.servers' must not be empty. Valid values include: any "
            "non-empty value");
  EXPECT_EQ(bad({{"bootstrap.servers", "nohostport"}}).message,
            "Invalid url in bootstrap.servers: nohostport");
  EXPECT_EQ(bad({{"bootstrap.servers", "h:70000"}}).message,
            "Invalid url in bootstrap.servers: h:70000");
  EXPECT_EQ(bad({{"bootstrap.servers", "::1:9092"}}).message,
            "Invalid url in bootstrap.servers: ::1:9092");
}

TEST(producer_config, acks_values) {
  EXPECT_EQ(ok({{"acks", "all"}}).acks, -1);
  EXPECT_EQ(ok({{"acks", "-1"}}).acks, -1);
  EXPECT_EQ(ok({{"acks", " all "}}).acks, -1);
  EXPECT_EQ(ok({{"acks", "0"}}).acks, 0);
  EXPECT_EQ(ok({{"acks", "1"}}).acks, 1);
  for (const char* v : {"ALL", "2", "x", ""}) {
    auto e = bad({{"acks", v}});
    EXPECT_EQ(e.key, "acks");
    EXPECT_EQ(e.value, v);
    EXPECT_EQ(e.message, std::string("Invalid value ") + v +
                             " for configuration acks: String must be one of: all, -1, 0, 1");
  }
}

TEST(producer_config, numbers_are_typed_and_ranged) {
  EXPECT_EQ(ok({{"batch.size", " 100 "}}).batch_size, 100);
  EXPECT_EQ(ok({{"batch.size", "0"}}).batch_size, 0);
  EXPECT_EQ(ok({{"linger.ms", "+7"}}).linger_ms, 7);
  EXPECT_EQ(bad({{"batch.size", "-1"}}).message,
            "Invalid value -1 for configuration batch.size: Value must be at least 0");
  EXPECT_EQ(bad({{"batch.size", "abc"}}).message,
            "Invalid value abc for configuration batch.size: Not a number of type INT");
  EXPECT_EQ(bad({{"batch.size", "2147483648"}}).message,
            "Invalid value 2147483648 for configuration batch.size: Not a number of type INT");
  EXPECT_EQ(bad({{"linger.ms", "1.5"}}).message,
            "Invalid value 1.5 for configuration linger.ms: Not a number of type LONG");
  EXPECT_EQ(bad({{"linger.ms", "+-1"}}).message,
            "Invalid value +-1 for configuration linger.ms: Not a number of type LONG");
  EXPECT_EQ(bad({{"max.block.ms", "-1"}}).message,
            "Invalid value -1 for configuration max.block.ms: Value must be at least 0");
  EXPECT_EQ(bad({{"max.in.flight.requests.per.connection", "0"}}).message,
            "Invalid value 0 for configuration max.in.flight.requests.per.connection: Value must "
            "be at least 1");
  EXPECT_EQ(bad({{"compression.gzip.level", "0"}}).message,
            "Invalid value 0 for configuration compression.gzip.level: Value must be between 1 and "
            "9 or equal to -1");
  EXPECT_EQ(bad({{"compression.zstd.level", "23"}}).message,
            "Invalid value 23 for configuration compression.zstd.level: Value must be no more "
            "than 22");
  EXPECT_EQ(ok({{"buffer.memory", "0"}}).buffer_memory, 0);
}

TEST(producer_config, booleans_and_compression) {
  EXPECT_TRUE(ok({{"enable.idempotence", "TRUE"}}).enable_idempotence);
  EXPECT_EQ(bad({{"enable.idempotence", "yes"}}).message,
            "Invalid value yes for configuration enable.idempotence: Expected value to be either "
            "true or false");
  EXPECT_EQ(ok({{"compression.type", "zstd"}}).compression_type, record::compression_type::zstd);
  EXPECT_EQ(ok({{"compression.type", "lz4"}}).compression_type, record::compression_type::lz4);
  EXPECT_EQ(bad({{"compression.type", "GZIP"}}).message,
            "Invalid value GZIP for configuration compression.type: String must be one of: none, "
            "gzip, snappy, lz4, zstd");
  EXPECT_EQ(bad({{"compression.type", "brotli"}}).key, "compression.type");
}

TEST(producer_config, unknown_and_unsupported_keys_are_refused) {
  auto unknown = bad({{"bogus.key", "1"}});
  EXPECT_EQ(unknown.key, "bogus.key");
  EXPECT_EQ(unknown.message, "Unknown configuration bogus.key (value 1): not a producer setting");
  auto unsupported = bad({{"transaction.two.phase.commit.enable", "true"}});
  EXPECT_EQ(unsupported.key, "transaction.two.phase.commit.enable");
  EXPECT_EQ(unsupported.message,
            "Configuration transaction.two.phase.commit.enable is a Kafka producer setting tarn "
            "does not support");
  EXPECT_EQ(bad({{"ssl.keystore.location", "/x"}}).key, "ssl.keystore.location");
  EXPECT_TRUE(ok({{"security.protocol", "plaintext"}}).bootstrap_servers.size() == 1);
  EXPECT_EQ(bad({{"security.protocol", "TLS"}}).key, "security.protocol");
  EXPECT_EQ(bad({{"sasl.mechanism", "GSSAPI"}}).key, "sasl.mechanism");
  EXPECT_EQ(
      ok({{"partitioner.availability.timeout.ms", "100"}}).partitioner_availability_timeout_ms,
      100);
  EXPECT_EQ(bad({{"partitioner.availability.timeout.ms", "-1"}}).key,
            "partitioner.availability.timeout.ms");
}

TEST(producer_config, security_settings_use_librdkafka_names) {
  auto c = ok({{"security.protocol", "SASL_SSL"},
               {"sasl.mechanisms", "SCRAM-SHA-512"},
               {"sasl.username", "alice"},
               {"sasl.password", "pw"},
               {"ssl.ca.location", "/ca.pem"}});
  EXPECT_EQ(c.security.protocol, security_protocol::sasl_ssl);
  EXPECT_EQ(c.security.mechanism, sasl_mechanism::scram_sha_512);
  EXPECT_EQ(c.security.sasl_username, "alice");
  EXPECT_EQ(c.security.ssl_ca_location, "/ca.pem");
  EXPECT_TRUE(c.security.ssl_endpoint_identification);
  EXPECT_EQ(ok({{"security.protocol", "ssl"}}).security.protocol, security_protocol::ssl);
  // SASL without sasl.username is refused at creation, not at the first connection.
  auto no_user = bad({{"security.protocol", "SASL_PLAINTEXT"}});
  EXPECT_EQ(no_user.key, "security.protocol");
  EXPECT_NE(no_user.message.find("sasl.username"), std::string::npos);
  EXPECT_EQ(bad({{"ssl.endpoint.identification.algorithm", "dns"}}).key,
            "ssl.endpoint.identification.algorithm");
}

TEST(producer_config, later_duplicate_wins) {
  EXPECT_EQ(ok({{"batch.size", "1"}, {"batch.size", "2"}}).batch_size, 2);
}

// The idempotence rules, each checked against kafka-clients 4.4.0.
TEST(producer_config, idempotence_default_yields_to_conflicts) {
  auto acks1 = ok({{"acks", "1"}});
  EXPECT_FALSE(acks1.enable_idempotence);
  EXPECT_EQ(acks1.acks, 1);
  EXPECT_FALSE(ok({{"acks", "0"}}).enable_idempotence);
  EXPECT_TRUE(ok({{"acks", "-1"}}).enable_idempotence);
  EXPECT_FALSE(ok({{"retries", "0"}}).enable_idempotence);
  auto off = ok({{"enable.idempotence", "false"}, {"max.in.flight.requests.per.connection", "6"}});
  EXPECT_FALSE(off.enable_idempotence);
  EXPECT_EQ(off.max_in_flight_requests_per_connection, 6);
}

TEST(producer_config, idempotence_explicit_conflicts_are_errors) {
  auto acks = bad({{"acks", "1"}, {"enable.idempotence", "true"}});
  EXPECT_EQ(acks.key, "acks");
  EXPECT_EQ(acks.message,
            "Must set acks to all in order to use the idempotent producer. Otherwise we cannot "
            "guarantee idempotence.");
  auto retries = bad({{"retries", "0"}, {"enable.idempotence", "true"}});
  EXPECT_EQ(retries.key, "retries");
  EXPECT_EQ(retries.message, "Must set retries to non-zero when using the idempotent producer.");
}

TEST(producer_config, more_than_five_in_flight_refused_even_when_idempotence_is_default) {
  const char* message =
      "To use the idempotent producer, max.in.flight.requests.per.connection must be set to at "
      "most 5. Current value is 6.";
  EXPECT_EQ(bad({{"max.in.flight.requests.per.connection", "6"}}).message, message);
  // Java 4.4 checks in-flight before it applies the acks downgrade.
  EXPECT_EQ(bad({{"max.in.flight.requests.per.connection", "6"}, {"acks", "1"}}).message, message);
}

TEST(producer_config, delivery_timeout_against_linger_plus_request_timeout) {
  auto e = bad({{"delivery.timeout.ms", "1000"}});
  EXPECT_EQ(e.key, "delivery.timeout.ms");
  EXPECT_EQ(e.message,
            "delivery.timeout.ms should be equal to or larger than linger.ms + "
            "request.timeout.ms (1000 < 5 + 30000)");
  EXPECT_EQ(ok({{"delivery.timeout.ms", "30005"}}).delivery_timeout_ms, 30005);
  // Not set explicitly: raised to linger.ms + request.timeout.ms.
  EXPECT_EQ(ok({{"linger.ms", "200000"}}).delivery_timeout_ms, 230000);
  EXPECT_EQ(ok({{"request.timeout.ms", "200000"}}).delivery_timeout_ms, 200005);
}

TEST(producer_config, properties_text) {
  auto props = parse_properties_text(
      "# comment\n! also comment\n\nacks=1\r\nlinger.ms : 20\nclient.id   my id\n"
      "batch.size = 100\nempty=\n");
  ASSERT_TRUE(props);
  EXPECT_EQ(*props, (std::vector<property>{{"acks", "1"},
                                           {"linger.ms", "20"},
                                           {"client.id", "my id"},
                                           {"batch.size", "100"},
                                           {"empty", ""}}));
  auto continued = parse_properties_text("a=b\\\n c\n");
  ASSERT_FALSE(continued);
  EXPECT_NE(continued.error().message.find("line 1"), std::string::npos);
}

TEST(producer_config, transactional_id_implies_idempotence) {
  auto c = ok({{"transactional.id", "tx-1"}, {"transaction.timeout.ms", "30000"}});
  ASSERT_TRUE(c.transactional_id.has_value());
  EXPECT_EQ(*c.transactional_id, "tx-1");
  EXPECT_EQ(c.transaction_timeout_ms, 30000);
  EXPECT_TRUE(c.enable_idempotence);
  EXPECT_EQ(ok({}).transaction_timeout_ms, 60000);
  EXPECT_FALSE(ok({}).transactional_id.has_value());
  auto off = bad({{"transactional.id", "tx"}, {"enable.idempotence", "false"}});
  EXPECT_EQ(off.key, "transactional.id");
  EXPECT_EQ(off.message, "Cannot set a transactional.id without also enabling idempotence.");
  // acks=1 downgrades a default idempotence, which transactions cannot do without.
  EXPECT_EQ(bad({{"transactional.id", "tx"}, {"acks", "1"}}).key, "transactional.id");
  EXPECT_EQ(bad({{"transactional.id", ""}}).key, "transactional.id");
}

}  // namespace
}  // namespace tarn::client
