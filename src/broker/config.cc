// The broker configuration table: every key with its Kafka 4.4 type, default and validator
// (read from Kafka 4.4.0's KafkaConfig.configDef()), then the derived values (retention and roll
// in ms, listeners, log directories) and the cross-key checks.
#include "broker/config.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <functional>
#include <thread>

#include "security/acl_authorizer.h"

namespace tarn::broker {

namespace {

enum class config_type { boolean, short_int, int32, int64, float64, string, list, password };

// A validator returns an error reason for a parsed (non-null) value, or nothing.
using validator = std::function<std::optional<std::string>(const config_value&)>;

struct config_key {
  const char* name;
  config_type type;
  const char* default_value;  // nullptr = Kafka's null
  validator validate;
  bool used_by_tarn = true;  // false: accepted for server.properties compatibility only
};

validator at_least(int64_t min) {
  return [min](const config_value& v) -> std::optional<std::string> {
    if (std::get<int64_t>(v) < min) return fmt::format("Value must be at least {}", min);
    return std::nullopt;
  };
}

validator between(int64_t min, int64_t max) {
  return [min, max](const config_value& v) -> std::optional<std::string> {
    int64_t x = std::get<int64_t>(v);
    if (x < min || x > max) return fmt::format("Value must be in [{}, {}]", min, max);
    return std::nullopt;
  };
}

validator one_of(std::vector<std::string> allowed) {
  return [allowed](const config_value& v) -> std::optional<std::string> {
    auto check = [&](const std::string& s) -> std::optional<std::string> {
      if (std::find(allowed.begin(), allowed.end(), s) != allowed.end()) return std::nullopt;
      return fmt::format("String must be one of: {}", fmt::join(allowed, ", "));
    };
    if (auto* s = std::get_if<std::string>(&v)) return check(*s);
    for (const auto& s : std::get<std::vector<std::string>>(v)) {
      if (auto e = check(s)) return e;
    }
    return std::nullopt;
  };
}

// replica.selector.class (KIP-392): Kafka loads any ReplicaSelector class by name; tarn has the
// two Kafka ships built in and refuses any other name at start, with Kafka's ConfigException text
// for a class that cannot be found.
validator replica_selector() {
  return [](const config_value& v) -> std::optional<std::string> {
    const auto* s = std::get_if<std::string>(&v);
    if (s == nullptr || s->empty() || *s == rack_aware_replica_selector ||
        *s == leader_replica_selector) {
      return std::nullopt;
    }
    return fmt::format("Class {} cannot be found (tarn serves {} and {})", *s,
                       rack_aware_replica_selector, leader_replica_selector);
  };
}

validator gzip_level() {
  return [](const config_value& v) -> std::optional<std::string> {
    int64_t x = std::get<int64_t>(v);
    if (x == -1 || (x >= 1 && x <= 9)) return std::nullopt;
    return std::string("Value must be in [1, 9] or -1");
  };
}

std::string lower_case(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

// ConfigDef.CaseInsensitiveValidString: `allowed` in lower case.
validator one_of_ignoring_case(std::vector<std::string> allowed) {
  return [allowed](const config_value& v) -> std::optional<std::string> {
    const std::string s = lower_case(std::get<std::string>(v));
    if (std::find(allowed.begin(), allowed.end(), s) != allowed.end()) return std::nullopt;
    return fmt::format("String must be one of (case insensitive): {}", fmt::join(allowed, ", "));
  };
}

// The server-side assignors of KIP-848 groups, by the names Kafka accepts for its built-in ones:
// the short name or the class name. Kafka would also load any other class name; tarn has no
// plugins, so another name is an error, as Kafka's for a class it cannot find.
std::optional<std::string> builtin_assignor(std::string_view name) {
  if (name == "uniform" || name == "org.apache.kafka.coordinator.group.assignor.UniformAssignor") {
    return "uniform";
  }
  if (name == "range" || name == "org.apache.kafka.coordinator.group.assignor.RangeAssignor") {
    return "range";
  }
  return std::nullopt;
}

// ConfigDef.ValidList.anyNonDuplicateValues(false, false) (at least one, no duplicates, none
// empty), then every entry a built-in assignor.
validator assignor_list() {
  return [](const config_value& v) -> std::optional<std::string> {
    const auto& names = std::get<std::vector<std::string>>(v);
    if (names.empty()) return std::string("Configuration must not be empty");
    std::vector<std::string> seen;
    for (const auto& n : names) {
      if (n.empty()) return std::string("Configuration must not contain empty values");
      if (std::find(seen.begin(), seen.end(), n) != seen.end()) {
        return std::string("Configuration values must not be duplicated");
      }
      seen.push_back(n);
      if (!builtin_assignor(n)) {
        return fmt::format("Class {} cannot be found (tarn's assignors are uniform and range)", n);
      }
    }
    return std::nullopt;
  };
}

// authorizer.class.name: empty (no authorization, as Kafka) or Kafka's KRaft authorizer, whose
// semantics src/security/acl_authorizer.h implements; any other class cannot be loaded here.
validator authorizer_class() {
  return [](const config_value& v) -> std::optional<std::string> {
    const auto& s = std::get<std::string>(v);
    if (s.empty() || s == security::standard_authorizer_class) return std::nullopt;
    return fmt::format("Class {} cannot be found: tarn's only authorizer is {}", s,
                       security::standard_authorizer_class);
  };
}

// Kafka 4.4's defaults except where noted. Keys marked `false` in the last column are accepted
// so that a Kafka server.properties starts unchanged, but do nothing in a single-node tarn.
const std::vector<config_key>& config_keys() {
  static const std::vector<config_key> keys = {
      // Listeners. Kafka's listeners default is PLAINTEXT://:9092 (every interface); tarn binds
      // loopback unless told otherwise.
      {"listeners", config_type::list, "PLAINTEXT://127.0.0.1:9092", nullptr},
      {"advertised.listeners", config_type::list, nullptr, nullptr},
      {"listener.security.protocol.map", config_type::string,
       "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT", nullptr},
      {"controller.listener.names", config_type::list, "", nullptr},
      {"inter.broker.listener.name", config_type::string, nullptr, nullptr, false},
      {"security.inter.broker.protocol", config_type::string, "PLAINTEXT",
       one_of({"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}), false},
      {"sasl.mechanism.inter.broker.protocol", config_type::string, "GSSAPI", nullptr, false},
      // TLS (Kafka's SslConfigs; docs/security.md). Each may also be set per listener as
      // listener.name.<name>.<key>.
      {"ssl.keystore.type", config_type::string, "JKS", nullptr},
      {"ssl.keystore.location", config_type::string, nullptr, nullptr},
      {"ssl.keystore.password", config_type::password, nullptr, nullptr},
      {"ssl.key.password", config_type::password, nullptr, nullptr},
      {"ssl.keystore.certificate.chain", config_type::password, nullptr, nullptr},
      {"ssl.keystore.key", config_type::password, nullptr, nullptr},
      {"ssl.truststore.type", config_type::string, "JKS", nullptr},
      {"ssl.truststore.location", config_type::string, nullptr, nullptr},
      {"ssl.truststore.password", config_type::password, nullptr, nullptr},
      {"ssl.truststore.certificates", config_type::password, nullptr, nullptr},
      {"ssl.client.auth", config_type::string, "none", one_of({"required", "requested", "none"})},
      {"ssl.enabled.protocols", config_type::list, "TLSv1.2,TLSv1.3", nullptr},
      {"ssl.cipher.suites", config_type::list, "", nullptr},
      {"ssl.principal.mapping.rules", config_type::string, "DEFAULT", nullptr},
      // JDK settings with no OpenSSL counterpart, and a client-side key.
      {"ssl.protocol", config_type::string, "TLSv1.3", nullptr, false},
      {"ssl.provider", config_type::string, nullptr, nullptr, false},
      {"ssl.keymanager.algorithm", config_type::string, "SunX509", nullptr, false},
      {"ssl.trustmanager.algorithm", config_type::string, "PKIX", nullptr, false},
      {"ssl.secure.random.implementation", config_type::string, nullptr, nullptr, false},
      {"ssl.endpoint.identification.algorithm", config_type::string, "https", nullptr, false},
      // SASL (Kafka's BrokerSecurityConfigs and SaslConfigs).
      {"sasl.enabled.mechanisms", config_type::list, "GSSAPI", nullptr},
      {"sasl.jaas.config", config_type::password, nullptr, nullptr},
      {"sasl.server.max.receive.size", config_type::int32, "524288", nullptr},
      {"connection.failed.authentication.delay.ms", config_type::int32, "100", at_least(0)},
      {"connections.max.reauth.ms", config_type::int64, "0", nullptr},
      // OAUTHBEARER (KIP-255, KIP-768; docs/security.md), read per listener as
      // listener.name.<l>.oauthbearer.<key>, listener.name.<l>.<key> or the key itself.
      {"sasl.server.callback.handler.class", config_type::string, nullptr, nullptr},
      {"sasl.oauthbearer.jwks.endpoint.url", config_type::string, nullptr, nullptr},
      {"sasl.oauthbearer.jwks.endpoint.refresh.ms", config_type::int64, "3600000", at_least(1)},
      {"sasl.oauthbearer.jwks.endpoint.retry.backoff.ms", config_type::int64, "100", at_least(0)},
      {"sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms", config_type::int64, "10000",
       at_least(0), false},
      {"sasl.oauthbearer.expected.audience", config_type::list, "", nullptr},
      {"sasl.oauthbearer.expected.issuer", config_type::string, nullptr, nullptr},
      {"sasl.oauthbearer.sub.claim.name", config_type::string, "sub", nullptr},
      {"sasl.oauthbearer.scope.claim.name", config_type::string, "scope", nullptr},
      {"sasl.oauthbearer.clock.skew.seconds", config_type::int32, "30", at_least(0)},
      {"process.roles", config_type::list, "broker,controller", one_of({"broker", "controller"})},
      {"controller.quorum.voters", config_type::list, "", nullptr, false},
      {"controller.quorum.bootstrap.servers", config_type::list, "", nullptr, false},
      // Kafka requires node.id; tarn defaults it to 1 so that `tarn serve` starts bare.
      {"node.id", config_type::int32, "1", at_least(0)},
      {"broker.id", config_type::int32, "-1", nullptr},
      // A cluster on etcd (docs/cluster.md): etcd's client endpoints, in the spirit of
      // ZooKeeper-era Kafka's zookeeper.connect; empty runs single-node on the local metadata log.
      {"etcd.connect", config_type::string, "", nullptr},
      {"broker.session.timeout.ms", config_type::int32, "9000", at_least(1)},
      {"broker.heartbeat.interval.ms", config_type::int32, "2000", at_least(1)},
      {"broker.rack", config_type::string, nullptr, nullptr},
      // Follower fetching (KIP-392, docs/cluster.md): null or LeaderReplicaSelector = leader only.
      {"replica.selector.class", config_type::string, nullptr, replica_selector()},
      // Replication in a cluster (docs/cluster.md, "Replication"): Kafka's ReplicationConfigs.
      {"replica.lag.time.max.ms", config_type::int64, "30000", at_least(1)},
      {"replica.fetch.max.bytes", config_type::int32, "1048576", at_least(0)},
      {"replica.fetch.wait.max.ms", config_type::int32, "500", at_least(0)},
      {"replica.fetch.min.bytes", config_type::int32, "1", at_least(1)},
      {"replica.fetch.backoff.ms", config_type::int32, "1000", at_least(0)},
      {"replica.socket.timeout.ms", config_type::int32, "30000", at_least(1)},
      {"num.replica.fetchers", config_type::int32, "1", at_least(1)},
      // Kafka's has no validator; <= 0 writes replication-offset-checkpoint only at open and
      // clean shutdown (Kafka's scheduler runs a task of period <= 0 once).
      {"replica.high.watermark.checkpoint.interval.ms", config_type::int64, "5000", nullptr},
      // Leadership moved on purpose (docs/cluster.md, "Controlled shutdown" and "Preferred
      // leaders"). Kafka 4.4 has no leader.imbalance.per.broker.percentage any more (the KRaft
      // controller rebalances every partition not led by its preferred replica).
      {"controlled.shutdown.enable", config_type::boolean, "true", nullptr},
      {"auto.leader.rebalance.enable", config_type::boolean, "true", nullptr},
      {"leader.imbalance.check.interval.seconds", config_type::int64, "300", at_least(1)},
      // Threads, sockets, connections.
      {"num.network.threads", config_type::int32, nullptr, at_least(1)},
      {"num.io.threads", config_type::int32, "8", at_least(1)},
      {"socket.send.buffer.bytes", config_type::int32, "102400", nullptr},
      // -1 (the kernel's autotuning) rather than Kafka's 102400: a 100 KiB SO_RCVBUF caps each
      // recv and stalls the sender, and -1 ingested 1.4-2.2x the MB/s at equal or less CPU per GB
      // (docs/benchmarks.md, broker ingest, 2026-12-06). Kafka's server.properties sets it anyway.
      {"socket.receive.buffer.bytes", config_type::int32, "-1", nullptr},
      {"socket.request.max.bytes", config_type::int32, "104857600", at_least(1)},
      {"max.connections", config_type::int32, "2147483647", at_least(0)},
      {"max.connections.per.ip", config_type::int32, "2147483647", at_least(0)},
      {"max.connections.per.ip.overrides", config_type::string, "", nullptr},
      {"connections.max.idle.ms", config_type::int64, "600000", nullptr},
      {"queued.max.requests", config_type::int32, "500", at_least(1)},
      {"queued.max.request.bytes", config_type::int64, "-1", nullptr},
      // Client quotas (QuotaConfig): the sampled windows their rates are measured over.
      {"quota.window.num", config_type::int32, "11", at_least(1)},
      {"quota.window.size.seconds", config_type::int32, "1", at_least(1)},
      {"controller.quota.window.num", config_type::int32, "11", at_least(1)},
      {"replication.quota.window.num", config_type::int32, "11", at_least(1)},
      {"replication.quota.window.size.seconds", config_type::int32, "1", at_least(1)},
      {"controller.quota.window.size.seconds", config_type::int32, "1", at_least(1)},
      // Authorization (docs/security.md#authorization): Kafka's StandardAuthorizer or none.
      {"authorizer.class.name", config_type::string, "", authorizer_class()},
      {"super.users", config_type::string, "", nullptr},
      {"allow.everyone.if.no.acl.found", config_type::boolean, "false", nullptr},
      // Fetch.
      {"fetch.max.bytes", config_type::int32, "57671680", at_least(0)},
      {"max.incremental.fetch.session.cache.slots", config_type::int32, "1000", at_least(0)},
      // Log directories. Kafka's log.dir default is /tmp/kafka-logs; tarn's is ./data.
      {"log.dir", config_type::list, "./data", nullptr},
      {"log.dirs", config_type::list, nullptr, nullptr},
      {"num.recovery.threads.per.data.dir", config_type::int32, "2", at_least(1), false},
      // Topic defaults.
      {"num.partitions", config_type::int32, "1", at_least(1)},
      {"default.replication.factor", config_type::int32, "1", nullptr},
      {"auto.create.topics.enable", config_type::boolean, "true", nullptr},
      {"delete.topic.enable", config_type::boolean, "true", nullptr},
      {"message.max.bytes", config_type::int32, "1048588", at_least(0)},
      {"max.decompressed.message.bytes", config_type::int32, "2147483639", between(1, 2147483639)},
      {"compression.type", config_type::string, "producer",
       one_of({"uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"})},
      {"compression.gzip.level", config_type::int32, "-1", gzip_level()},
      {"compression.lz4.level", config_type::int32, "9", between(1, 17)},
      {"compression.zstd.level", config_type::int32, "3", between(-131072, 22)},
      {"min.insync.replicas", config_type::int32, "1", at_least(1)},
      {"unclean.leader.election.enable", config_type::boolean, "false", nullptr},
      {"log.message.timestamp.type", config_type::string, "CreateTime",
       one_of({"CreateTime", "LogAppendTime"})},
      {"log.message.timestamp.before.max.ms", config_type::int64, "9223372036854775807",
       at_least(0)},
      {"log.message.timestamp.after.max.ms", config_type::int64, "3600000", at_least(0)},
      // The log.
      {"log.segment.bytes", config_type::int32, "1073741824", at_least(1048576)},
      {"log.roll.ms", config_type::int64, nullptr, nullptr},
      {"log.roll.hours", config_type::int32, "168", at_least(1)},
      {"log.roll.jitter.ms", config_type::int64, nullptr, nullptr},
      {"log.roll.jitter.hours", config_type::int32, "0", at_least(0)},
      {"log.index.interval.bytes", config_type::int32, "4096", at_least(0)},
      {"log.index.size.max.bytes", config_type::int32, "10485760", at_least(4)},
      {"log.retention.ms", config_type::int64, nullptr, nullptr},
      {"log.retention.minutes", config_type::int32, nullptr, nullptr},
      {"log.retention.hours", config_type::int32, "168", nullptr},
      {"log.retention.bytes", config_type::int64, "-1", nullptr},
      {"log.retention.check.interval.ms", config_type::int64, "300000", at_least(1)},
      {"log.segment.delete.delay.ms", config_type::int64, "60000", at_least(0)},
      {"log.cleanup.policy", config_type::list, "delete", one_of({"compact", "delete"})},
      {"log.preallocate", config_type::boolean, "false", nullptr},
      {"log.flush.interval.messages", config_type::int64, "9223372036854775807", at_least(1)},
      {"log.flush.interval.ms", config_type::int64, nullptr, nullptr},
      {"log.flush.scheduler.interval.ms", config_type::int64, "9223372036854775807", nullptr},
      {"log.flush.offset.checkpoint.interval.ms", config_type::int32, "60000", at_least(0)},
      {"log.flush.start.offset.checkpoint.interval.ms", config_type::int32, "60000", at_least(0),
       false},
      // The log cleaner (Kafka's CleanerConfig; storage/log_cleaner.h).
      {"log.cleaner.delete.retention.ms", config_type::int64, "86400000", at_least(0)},
      {"log.cleaner.min.compaction.lag.ms", config_type::int64, "0", at_least(0)},
      {"log.cleaner.max.compaction.lag.ms", config_type::int64, "9223372036854775807", at_least(1)},
      {"log.cleaner.min.cleanable.ratio", config_type::float64, "0.5", nullptr},
      {"log.cleaner.enable", config_type::boolean, "true", nullptr},
      {"log.cleaner.threads", config_type::int32, "1", at_least(0)},
      {"log.cleaner.dedupe.buffer.size", config_type::int64, "134217728", nullptr},
      {"log.cleaner.io.buffer.load.factor", config_type::float64, "0.9", nullptr},
      {"log.cleaner.io.buffer.size", config_type::int32, "524288", at_least(0)},
      {"log.cleaner.io.max.bytes.per.second", config_type::float64, "1.7976931348623157E308",
       nullptr},
      {"log.cleaner.backoff.ms", config_type::int64, "15000", at_least(0)},
      // Internal topics and coordinators of a Kafka cluster: replication settings that have no
      // meaning on a single node. offsets.topic.replication.factor places __consumer_offsets in
      // a cluster, transaction.state.log.* __transaction_state (docs/cluster.md, "Coordinators").
      {"offsets.topic.replication.factor", config_type::short_int, "3", at_least(1)},
      {"transaction.state.log.replication.factor", config_type::short_int, "3", at_least(1)},
      {"transaction.state.log.min.isr", config_type::int32, "2", at_least(1)},
      {"share.coordinator.state.topic.replication.factor", config_type::short_int, "3",
       at_least(1)},
      {"share.coordinator.state.topic.min.isr", config_type::short_int, "2", at_least(1)},
      // The group coordinator (Kafka 4.4's GroupCoordinatorConfig; coordinator/group_config.h).
      // Classic groups.
      {"group.min.session.timeout.ms", config_type::int32, "6000", nullptr},
      {"group.max.session.timeout.ms", config_type::int32, "1800000", nullptr},
      {"group.initial.rebalance.delay.ms", config_type::int32, "3000", nullptr},
      {"group.max.size", config_type::int32, "2147483647", at_least(1)},
      // KIP-848 consumer groups.
      {"group.consumer.session.timeout.ms", config_type::int32, "45000", at_least(1)},
      {"group.consumer.min.session.timeout.ms", config_type::int32, "45000", at_least(1)},
      {"group.consumer.max.session.timeout.ms", config_type::int32, "60000", at_least(1)},
      {"group.consumer.heartbeat.interval.ms", config_type::int32, "5000", at_least(1)},
      {"group.consumer.min.heartbeat.interval.ms", config_type::int32, "5000", at_least(1)},
      {"group.consumer.max.heartbeat.interval.ms", config_type::int32, "15000", at_least(1)},
      {"group.consumer.max.size", config_type::int32, "2147483647", at_least(1)},
      {"group.consumer.assignment.interval.ms", config_type::int32, "1000", at_least(0)},
      {"group.consumer.min.assignment.interval.ms", config_type::int32, "0", at_least(0)},
      {"group.consumer.max.assignment.interval.ms", config_type::int32, "15000", at_least(0)},
      // Accepted, as Kafka's; tarn's assignors always run inline (docs/groups.md).
      {"group.consumer.assignor.offload.enable", config_type::boolean, "true", nullptr},
      {"group.consumer.assignors", config_type::list, "uniform,range", assignor_list()},
      {"group.consumer.migration.policy", config_type::string, "bidirectional",
       one_of_ignoring_case({"disabled", "downgrade", "upgrade", "bidirectional"})},
      // KIP-932 share groups (GroupCoordinatorConfig and ShareGroupConfig; share_config.h).
      {"group.share.session.timeout.ms", config_type::int32, "45000", at_least(1)},
      {"group.share.min.session.timeout.ms", config_type::int32, "45000", at_least(1)},
      {"group.share.max.session.timeout.ms", config_type::int32, "60000", at_least(1)},
      {"group.share.heartbeat.interval.ms", config_type::int32, "5000", at_least(1)},
      {"group.share.min.heartbeat.interval.ms", config_type::int32, "5000", at_least(1)},
      {"group.share.max.heartbeat.interval.ms", config_type::int32, "15000", at_least(1)},
      {"group.share.max.size", config_type::int32, "200", at_least(1)},
      {"group.share.assignment.interval.ms", config_type::int32, "1000", at_least(0)},
      {"group.share.min.assignment.interval.ms", config_type::int32, "0", at_least(0)},
      {"group.share.max.assignment.interval.ms", config_type::int32, "15000", at_least(0)},
      {"group.share.assignor.offload.enable", config_type::boolean, "true", nullptr},
      {"group.share.record.lock.duration.ms", config_type::int32, "30000", at_least(1000)},
      {"group.share.min.record.lock.duration.ms", config_type::int32, "15000", at_least(1000)},
      {"group.share.max.record.lock.duration.ms", config_type::int32, "60000", at_least(1000)},
      {"group.share.delivery.count.limit", config_type::int32, "5", at_least(2)},
      {"group.share.partition.max.record.locks", config_type::int32, "2000", at_least(100)},
      {"group.share.min.partition.max.record.locks", config_type::int32, "100", at_least(100)},
      {"group.share.max.partition.max.record.locks", config_type::int32, "4000", at_least(100)},
      {"group.share.min.delivery.count.limit", config_type::int32, "2", at_least(2)},
      {"group.share.max.delivery.count.limit", config_type::int32, "10", at_least(2)},
      {"group.share.max.share.sessions", config_type::int32, "2000", at_least(1)},
      // The share coordinator's __share_group_state (ShareCoordinatorConfig).
      {"share.coordinator.state.topic.num.partitions", config_type::int32, "50", at_least(1)},
      {"share.coordinator.state.topic.segment.bytes", config_type::int32, "104857600", at_least(1)},
      {"share.coordinator.snapshot.update.records.per.snapshot", config_type::int32, "500",
       between(0, 500)},
      {"share.coordinator.state.topic.prune.interval.ms", config_type::int32, "300000",
       at_least(1)},
      {"share.coordinator.cold.partition.snapshot.interval.ms", config_type::int32, "300000",
       at_least(1)},
      // Committed offsets and __consumer_offsets.
      {"offset.metadata.max.bytes", config_type::int32, "4096", nullptr},
      {"offsets.retention.minutes", config_type::int32, "10080", at_least(1)},
      {"offsets.retention.check.interval.ms", config_type::int64, "600000", at_least(1)},
      {"offsets.topic.num.partitions", config_type::int32, "50", at_least(1)},
      {"offsets.topic.segment.bytes", config_type::int32, "104857600", at_least(1)},
      {"offsets.commit.timeout.ms", config_type::int32, "5000", at_least(1)},
      // The transaction coordinator (Kafka 4.4's TransactionStateManagerConfig and
      // TransactionLogConfig; txn/txn_coordinator.h).
      {"transaction.max.timeout.ms", config_type::int32, "900000", at_least(1)},
      {"transaction.state.log.num.partitions", config_type::int32, "50", at_least(1)},
      {"transaction.state.log.segment.bytes", config_type::int32, "104857600", at_least(1)},
      {"transaction.abort.timed.out.transaction.cleanup.interval.ms", config_type::int32, "10000",
       at_least(1)},
      {"transactional.id.expiration.ms", config_type::int32, "604800000", at_least(1)},
      {"transaction.partition.verification.enable", config_type::boolean, "true", nullptr},
      {"transaction.remove.expired.transaction.cleanup.interval.ms", config_type::int32, "3600000",
       at_least(1)},
      // tarn's HTTP listener (src/observe, docs/http-api.md): host:port, empty for none, and how
      // many partitions get per-partition series on /metrics.
      {"http.listener", config_type::string, "127.0.0.1:9644", nullptr},
      {"http.metrics.max.partitions", config_type::int32, "1000", at_least(0)},
      // False makes the request path's metric updates no-ops (BrokerTopicMetrics of Produce and
      // Fetch, RequestMetrics of every API): what they cost, measured by scripts/bench.
      {"http.metrics.request.path.enabled", config_type::boolean, "true", nullptr},
      // The web console's JSON API refuses every change (403) when true.
      {"http.console.read.only", config_type::boolean, "false", nullptr},
  };
  return keys;
}

const config_key* find_key(const std::string& name) {
  for (const auto& k : config_keys()) {
    if (name == k.name) return &k;
  }
  return nullptr;
}

std::string upper_case(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return out;
}

// Keys Kafka reads per listener (listener.name.<listener>.<key>): the TLS ones, and SASL's.
bool listener_scoped(const std::string& key) {
  return key.starts_with("ssl.") || key == "sasl.enabled.mechanisms" ||
         key == "sasl.server.max.receive.size" || key == "connections.max.reauth.ms" ||
         key.starts_with("sasl.oauthbearer.");
}

// Keys Kafka also reads per listener and mechanism (listener.name.<l>.<mechanism>.<key>).
bool mechanism_scoped(const std::string& key) {
  return key == "sasl.jaas.config" || key == "connections.max.reauth.ms" ||
         key == "sasl.server.callback.handler.class" || key.starts_with("sasl.oauthbearer.");
}

// The key a listener.name.<listener>.<key> or listener.name.<listener>.<mechanism>.<key>
// (sasl.jaas.config, connections.max.reauth.ms) name stands for; nullptr for anything else.
const config_key* find_listener_key(const std::string& name) {
  static const std::string prefix = "listener.name.";
  if (!name.starts_with(prefix)) return nullptr;
  const size_t dot = name.find('.', prefix.size());
  if (dot == std::string::npos || dot == prefix.size()) return nullptr;
  const std::string rest = name.substr(dot + 1);
  if (listener_scoped(rest)) return find_key(rest);
  const size_t mechanism_end = rest.find('.');
  if (mechanism_end == std::string::npos || mechanism_end == 0) return nullptr;
  const std::string tail = rest.substr(mechanism_end + 1);
  if (mechanism_scoped(tail)) return find_key(tail);
  return nullptr;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::vector<std::string> split_list(std::string_view s) {
  std::vector<std::string> out;
  s = trim(s);
  if (s.empty()) return out;
  size_t start = 0;
  while (true) {
    size_t comma = s.find(',', start);
    auto item = trim(s.substr(start, comma == std::string_view::npos ? s.npos : comma - start));
    out.emplace_back(item);
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return out;
}

// Java's Integer.parseInt / Long.parseLong: optional sign, decimal digits, nothing else.
std::optional<int64_t> parse_integer(std::string_view s, int64_t min, int64_t max) {
  if (!s.empty() && s[0] == '+') s.remove_prefix(1);
  if (s.empty() || s[0] == '+') return std::nullopt;
  int64_t v = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || ptr != s.data() + s.size() || v < min || v > max) return std::nullopt;
  return v;
}

std::string invalid(const std::string& key, const std::string& value, const std::string& why) {
  return fmt::format("Invalid value {} for configuration {}: {}", value, key, why);
}

// Parses a raw value as ConfigDef.parseType does (values trimmed first).
result<config_value, std::string> parse_value(const config_key& key, const std::string& raw) {
  std::string_view t = trim(raw);
  switch (key.type) {
    case config_type::boolean: {
      std::string lower(t);
      std::transform(lower.begin(), lower.end(), lower.begin(),
                     [](unsigned char c) { return std::tolower(c); });
      if (lower == "true") return config_value(true);
      if (lower == "false") return config_value(false);
      return fail(invalid(key.name, raw, "Expected value to be either true or false"));
    }
    case config_type::short_int:
      if (auto v = parse_integer(t, INT16_MIN, INT16_MAX)) return config_value(*v);
      return fail(invalid(key.name, raw, "Not a number of type SHORT"));
    case config_type::int32:
      if (auto v = parse_integer(t, INT32_MIN, INT32_MAX)) return config_value(*v);
      return fail(invalid(key.name, raw, "Not a number of type INT"));
    case config_type::int64:
      if (auto v = parse_integer(t, INT64_MIN, INT64_MAX)) return config_value(*v);
      return fail(invalid(key.name, raw, "Not a number of type LONG"));
    case config_type::float64: {
      std::string s(t);
      char* end = nullptr;
      double d = s.empty() ? 0 : std::strtod(s.c_str(), &end);
      if (s.empty() || end != s.c_str() + s.size()) {
        return fail(invalid(key.name, raw, "Not a number of type DOUBLE"));
      }
      return config_value(d);
    }
    case config_type::string:
    case config_type::password:
      return config_value(std::string(t));
    case config_type::list:
      return config_value(split_list(t));
  }
  return fail(invalid(key.name, raw, "unknown type"));
}

int64_t as_int(const broker_config& c, const char* key) {
  return std::get<int64_t>(c.values.at(key));
}
bool is_null(const broker_config& c, const char* key) {
  return std::holds_alternative<std::monostate>(c.values.at(key));
}

// Kafka's rule for a duration given in ms, minutes or hours: the first one set wins, in that
// order of precedence (a default counts), saturating instead of overflowing.
int64_t first_duration_ms(const broker_config& c, const char* ms_key, const char* minutes_key,
                          const char* hours_key) {
  if (!is_null(c, ms_key)) return as_int(c, ms_key);
  if (minutes_key && !is_null(c, minutes_key)) return as_int(c, minutes_key) * 60'000;
  return as_int(c, hours_key) * 3'600'000;
}

// NAME://host:port, host possibly empty or a bracketed IPv6 address.
result<listener_endpoint, std::string> parse_listener(const std::string& key,
                                                      const std::string& text) {
  auto bad = [&](const char* why) { return fail(invalid(key, text, why)); };
  size_t sep = text.find("://");
  if (sep == std::string::npos || sep == 0) return bad("Expected NAME://host:port");
  listener_endpoint l;
  l.name = upper_case(text.substr(0, sep));
  std::string rest = text.substr(sep + 3);
  size_t colon = rest.rfind(':');
  if (colon == std::string::npos) return bad("Expected NAME://host:port");
  l.host = rest.substr(0, colon);
  if (l.host.size() >= 2 && l.host.front() == '[' && l.host.back() == ']') {
    l.host = l.host.substr(1, l.host.size() - 2);
  }
  auto port = parse_integer(rest.substr(colon + 1), 0, 65535);
  if (!port) return bad("port must be a number in [0, 65535]");
  l.port = static_cast<uint16_t>(*port);
  return l;
}

result<std::map<std::string, std::string>, std::string> parse_protocol_map(
    const std::string& key, const std::string& text) {
  std::map<std::string, std::string> out;
  for (const auto& entry : split_list(text)) {
    size_t colon = entry.find(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == entry.size()) {
      return fail(invalid(key, text, "Expected NAME:PROTOCOL pairs"));
    }
    const std::string protocol = entry.substr(colon + 1);
    if (!security::parse_security_protocol(protocol)) {
      return fail(invalid(key, text,
                          fmt::format("No enum constant "
                                      "org.apache.kafka.common.security.auth.SecurityProtocol.{}",
                                      protocol)));
    }
    out[upper_case(entry.substr(0, colon))] = upper_case(protocol);
  }
  return out;
}

// Kafka's three requires on a key and its bounds (GroupCoordinatorConfig, ShareGroupConfig):
// for <prefix><name>, <prefix>min.<name> and <prefix>max.<name>, the max at least the min, then
// the value within them; the first that fails, in Kafka's words.
result<void, std::string> check_range(const broker_config& c, std::string_view prefix,
                                      std::string_view name) {
  const std::string key = fmt::format("{}{}", prefix, name);
  const std::string min_key = fmt::format("{}min.{}", prefix, name);
  const std::string max_key = fmt::format("{}max.{}", prefix, name);
  const int64_t value = as_int(c, key.c_str());
  const int64_t min = as_int(c, min_key.c_str());
  const int64_t max = as_int(c, max_key.c_str());
  auto at_least_other = [](const std::string& a, const std::string& b) {
    return fail(fmt::format("{} must be greater than or equal to {}", a, b));
  };
  if (max < min) return at_least_other(max_key, min_key);
  if (value < min) return at_least_other(key, min_key);
  if (value > max) return fail(fmt::format("{} must be less than or equal to {}", key, max_key));
  return {};
}

// Kafka's require that `key`'s value be below `other`'s (a heartbeat interval below its session
// timeout).
result<void, std::string> check_below(const broker_config& c, const char* key, const char* other) {
  if (as_int(c, key) < as_int(c, other)) return {};
  return fail(fmt::format("{} must be less than {}", key, other));
}

// The group coordinator's keys into coordinator::group_config, with the checks Kafka's
// GroupCoordinatorConfig constructor makes across them (its messages; Kafka refuses to start).
result<void, std::string> finish_group_config(broker_config& c) {
  auto i32 = [&](const char* k) { return static_cast<int32_t>(as_int(c, k)); };
  coordinator::group_config& g = c.group;
  g.group_min_session_timeout_ms = i32("group.min.session.timeout.ms");
  g.group_max_session_timeout_ms = i32("group.max.session.timeout.ms");
  g.group_initial_rebalance_delay_ms = i32("group.initial.rebalance.delay.ms");
  g.group_max_size = i32("group.max.size");
  g.group_consumer_session_timeout_ms = i32("group.consumer.session.timeout.ms");
  g.group_consumer_min_session_timeout_ms = i32("group.consumer.min.session.timeout.ms");
  g.group_consumer_max_session_timeout_ms = i32("group.consumer.max.session.timeout.ms");
  g.group_consumer_heartbeat_interval_ms = i32("group.consumer.heartbeat.interval.ms");
  g.group_consumer_min_heartbeat_interval_ms = i32("group.consumer.min.heartbeat.interval.ms");
  g.group_consumer_max_heartbeat_interval_ms = i32("group.consumer.max.heartbeat.interval.ms");
  g.group_consumer_max_size = i32("group.consumer.max.size");
  g.group_consumer_assignment_interval_ms = i32("group.consumer.assignment.interval.ms");
  g.group_consumer_min_assignment_interval_ms = i32("group.consumer.min.assignment.interval.ms");
  g.group_consumer_max_assignment_interval_ms = i32("group.consumer.max.assignment.interval.ms");
  g.group_consumer_assignor_offload_enable =
      std::get<bool>(c.values.at("group.consumer.assignor.offload.enable"));
  g.group_consumer_assignors.clear();
  for (const auto& name :
       std::get<std::vector<std::string>>(c.values.at("group.consumer.assignors"))) {
    g.group_consumer_assignors.push_back(*builtin_assignor(name));  // the validator checked it
  }
  g.group_consumer_migration_policy =
      lower_case(std::get<std::string>(c.values.at("group.consumer.migration.policy")));
  g.offset_metadata_max_bytes = i32("offset.metadata.max.bytes");
  g.offsets_retention_minutes = as_int(c, "offsets.retention.minutes");
  g.offsets_retention_check_interval_ms = as_int(c, "offsets.retention.check.interval.ms");
  g.offsets_topic_num_partitions = i32("offsets.topic.num.partitions");
  g.offsets_topic_segment_bytes = i32("offsets.topic.segment.bytes");
  g.offsets_topic_replication_factor = i32("offsets.topic.replication.factor");
  g.offsets_commit_timeout_ms = i32("offsets.commit.timeout.ms");
  coordinator::share_config& sh = c.share;
  sh.group_share_session_timeout_ms = i32("group.share.session.timeout.ms");
  sh.group_share_heartbeat_interval_ms = i32("group.share.heartbeat.interval.ms");
  sh.group_share_max_size = i32("group.share.max.size");
  sh.group_share_assignment_interval_ms = i32("group.share.assignment.interval.ms");
  sh.group_share_min_assignment_interval_ms = i32("group.share.min.assignment.interval.ms");
  sh.group_share_max_assignment_interval_ms = i32("group.share.max.assignment.interval.ms");
  sh.group_share_assignor_offload_enable =
      std::get<bool>(c.values.at("group.share.assignor.offload.enable"));
  sh.group_share_record_lock_duration_ms = i32("group.share.record.lock.duration.ms");
  sh.group_share_delivery_count_limit = i32("group.share.delivery.count.limit");
  sh.group_share_partition_max_record_locks = i32("group.share.partition.max.record.locks");
  sh.group_share_max_share_sessions = i32("group.share.max.share.sessions");
  sh.group_share_min_heartbeat_interval_ms = i32("group.share.min.heartbeat.interval.ms");
  sh.group_share_max_heartbeat_interval_ms = i32("group.share.max.heartbeat.interval.ms");
  sh.group_share_min_session_timeout_ms = i32("group.share.min.session.timeout.ms");
  sh.group_share_max_session_timeout_ms = i32("group.share.max.session.timeout.ms");
  sh.group_share_min_record_lock_duration_ms = i32("group.share.min.record.lock.duration.ms");
  sh.group_share_max_record_lock_duration_ms = i32("group.share.max.record.lock.duration.ms");
  sh.group_share_min_delivery_count_limit = i32("group.share.min.delivery.count.limit");
  sh.group_share_max_delivery_count_limit = i32("group.share.max.delivery.count.limit");
  sh.group_share_min_partition_max_record_locks = i32("group.share.min.partition.max.record.locks");
  sh.group_share_max_partition_max_record_locks = i32("group.share.max.partition.max.record.locks");
  sh.share_coordinator_state_topic_num_partitions =
      i32("share.coordinator.state.topic.num.partitions");
  sh.share_coordinator_state_topic_segment_bytes =
      i32("share.coordinator.state.topic.segment.bytes");
  sh.share_coordinator_snapshot_update_records_per_snapshot =
      i32("share.coordinator.snapshot.update.records.per.snapshot");
  sh.share_coordinator_state_topic_prune_interval_ms =
      i32("share.coordinator.state.topic.prune.interval.ms");
  sh.share_coordinator_cold_partition_snapshot_interval_ms =
      i32("share.coordinator.cold.partition.snapshot.interval.ms");
  sh.share_coordinator_state_topic_replication_factor =
      i32("share.coordinator.state.topic.replication.factor");
  sh.share_coordinator_state_topic_min_isr = i32("share.coordinator.state.topic.min.isr");
  txn::txn_config& t = c.txn;
  t.max_timeout_ms = i32("transaction.max.timeout.ms");
  t.state_log_num_partitions = i32("transaction.state.log.num.partitions");
  t.state_log_segment_bytes = i32("transaction.state.log.segment.bytes");
  t.state_log_replication_factor = i32("transaction.state.log.replication.factor");
  t.state_log_min_isr = i32("transaction.state.log.min.isr");
  t.abort_timed_out_interval_ms =
      i32("transaction.abort.timed.out.transaction.cleanup.interval.ms");
  t.transactional_id_expiration_ms = i32("transactional.id.expiration.ms");
  t.remove_expired_interval_ms = i32("transaction.remove.expired.transaction.cleanup.interval.ms");
  c.transaction_partition_verification_enable =
      std::get<bool>(c.values.at("transaction.partition.verification.enable"));

  // GroupCoordinatorConfig's requires across keys, in its order (the first that fails is the
  // message Kafka refuses to start with).
  for (const char* name : {"heartbeat.interval.ms", "session.timeout.ms"}) {
    if (auto r = check_range(c, "group.consumer.", name); !r) return r;
  }
  if (auto r = check_below(c, "group.consumer.heartbeat.interval.ms",
                           "group.consumer.session.timeout.ms");
      !r) {
    return r;
  }
  // KIP-1263's assignment interval within its bounds.
  if (auto r = check_range(c, "group.consumer.", "assignment.interval.ms"); !r) return r;
  // The same checks for share groups (GroupCoordinatorConfig, ShareGroupConfig). The bounds of
  // the group configs share.delivery.count.limit and share.partition.max.record.locks hold the
  // broker's own values too (ShareGroupConfig).
  for (const char* name : {"heartbeat.interval.ms", "session.timeout.ms", "record.lock.duration.ms",
                           "delivery.count.limit", "partition.max.record.locks"}) {
    if (auto r = check_range(c, "group.share.", name); !r) return r;
  }
  if (auto r =
          check_below(c, "group.share.heartbeat.interval.ms", "group.share.session.timeout.ms");
      !r) {
    return r;
  }
  if (auto r = check_range(c, "group.share.", "assignment.interval.ms"); !r) return r;
  return {};
}

// A key's value for one listener: listener.name.<listener>.<key> when set, else the key's own.
config_value listener_value(const broker_config& c, const std::string& listener,
                            const std::string& key) {
  auto it = c.listener_prefixed.find("listener.name." + lower_case(listener) + "." + key);
  if (it != c.listener_prefixed.end()) {
    if (auto v = parse_value(*find_key(key), it->second)) return *v;  // checked when read
  }
  return c.values.at(key);
}

std::optional<std::string> optional_string(const config_value& v) {
  if (auto* s = std::get_if<std::string>(&v)) return *s;
  return std::nullopt;
}

// The TLS and SASL settings of one listener, from its protocol and the ssl.* / sasl.* keys.
result<listener_security, std::string> listener_security_for(const broker_config& c,
                                                             const std::string& name,
                                                             const std::string& protocol_name) {
  listener_security out;
  out.name = name;
  out.protocol = *security::parse_security_protocol(protocol_name);  // the map was checked
  auto text = [&](const char* key) { return optional_string(listener_value(c, name, key)); };
  auto items = [&](const char* key) {
    return std::get<std::vector<std::string>>(listener_value(c, name, key));
  };
  security::ssl_config& ssl = out.ssl;
  ssl.keystore_type = text("ssl.keystore.type").value_or("JKS");
  ssl.keystore_location = text("ssl.keystore.location");
  ssl.keystore_password = text("ssl.keystore.password");
  ssl.key_password = text("ssl.key.password");
  ssl.keystore_certificate_chain = text("ssl.keystore.certificate.chain");
  ssl.keystore_key = text("ssl.keystore.key");
  ssl.truststore_type = text("ssl.truststore.type").value_or("JKS");
  ssl.truststore_location = text("ssl.truststore.location");
  ssl.truststore_password = text("ssl.truststore.password");
  ssl.truststore_certificates = text("ssl.truststore.certificates");
  const std::string client_auth = text("ssl.client.auth").value_or("none");
  ssl.client_auth = client_auth == "required"    ? security::ssl_client_auth::required
                    : client_auth == "requested" ? security::ssl_client_auth::requested
                                                 : security::ssl_client_auth::none;
  ssl.enabled_protocols = items("ssl.enabled.protocols");
  ssl.cipher_suites = items("ssl.cipher.suites");
  ssl.principal_mapping_rules = text("ssl.principal.mapping.rules").value_or("DEFAULT");

  security::sasl_config& sasl = out.sasl;
  sasl.enabled_mechanisms.clear();
  for (const auto& m : items("sasl.enabled.mechanisms")) sasl.enabled_mechanisms.push_back(m);
  sasl.server_max_receive_size = static_cast<int32_t>(
      std::get<int64_t>(listener_value(c, name, "sasl.server.max.receive.size")));
  sasl.failed_authentication_delay_ms =
      static_cast<int32_t>(as_int(c, "connection.failed.authentication.delay.ms"));
  sasl.connections_max_reauth_ms =
      std::get<int64_t>(listener_value(c, name, "connections.max.reauth.ms"));
  const std::string prefix = "listener.name." + lower_case(name) + ".";
  for (const auto& m : sasl.enabled_mechanisms) {
    // Kafka reads a broker's JAAS per listener and mechanism; tarn also takes the bare
    // sasl.jaas.config for every mechanism (docs/compatibility.md).
    auto jaas = c.listener_prefixed.find(prefix + lower_case(m) + ".sasl.jaas.config");
    if (jaas != c.listener_prefixed.end()) {
      sasl.jaas_config[m] = std::string(trim(jaas->second));
    } else if (auto global = optional_string(c.values.at("sasl.jaas.config"))) {
      sasl.jaas_config[m] = *global;
    }
    auto reauth = c.listener_prefixed.find(prefix + lower_case(m) + ".connections.max.reauth.ms");
    if (reauth != c.listener_prefixed.end()) {
      if (auto v = parse_integer(trim(reauth->second), INT64_MIN, INT64_MAX)) {
        sasl.connections_max_reauth_ms = *v;
      }
    }
  }
  // OAUTHBEARER's keys: listener.name.<l>.oauthbearer.<key>, else listener.name.<l>.<key>, else
  // the key (Kafka's mechanism prefix over its listener prefix).
  auto oauth = [&](const char* key) {
    auto it = c.listener_prefixed.find(prefix + "oauthbearer." + key);
    if (it != c.listener_prefixed.end()) {
      if (auto v = parse_value(*find_key(key), it->second)) return *v;  // checked when read
    }
    return listener_value(c, name, key);
  };
  security::oauthbearer_config& ob = sasl.oauthbearer;
  ob.server_callback_handler_class = optional_string(oauth("sasl.server.callback.handler.class"));
  ob.jwks_endpoint_url = optional_string(oauth("sasl.oauthbearer.jwks.endpoint.url"));
  ob.jwks_endpoint_refresh_ms =
      std::get<int64_t>(oauth("sasl.oauthbearer.jwks.endpoint.refresh.ms"));
  ob.jwks_endpoint_retry_backoff_ms =
      std::get<int64_t>(oauth("sasl.oauthbearer.jwks.endpoint.retry.backoff.ms"));
  ob.expected_audience =
      std::get<std::vector<std::string>>(oauth("sasl.oauthbearer.expected.audience"));
  ob.expected_issuer = optional_string(oauth("sasl.oauthbearer.expected.issuer"));
  ob.sub_claim_name = optional_string(oauth("sasl.oauthbearer.sub.claim.name")).value_or("sub");
  ob.scope_claim_name =
      optional_string(oauth("sasl.oauthbearer.scope.claim.name")).value_or("scope");
  ob.clock_skew_seconds = std::get<int64_t>(oauth("sasl.oauthbearer.clock.skew.seconds"));
  return out;
}

// The derived fields and the checks that span several keys.
result<void, std::string> finish(broker_config& c) {
  auto str = [&](const char* k) { return std::get<std::string>(c.values.at(k)); };
  auto list = [&](const char* k) { return std::get<std::vector<std::string>>(c.values.at(k)); };
  auto i32 = [&](const char* k) { return static_cast<int32_t>(as_int(c, k)); };

  c.node_id = i32("node.id");
  c.etcd_connect = split_list(str("etcd.connect"));
  c.broker_session_timeout_ms = i32("broker.session.timeout.ms");
  c.broker_heartbeat_interval_ms = i32("broker.heartbeat.interval.ms");
  c.replica_lag_time_max_ms = as_int(c, "replica.lag.time.max.ms");
  c.replica_fetch_max_bytes = i32("replica.fetch.max.bytes");
  c.replica_fetch_wait_max_ms = i32("replica.fetch.wait.max.ms");
  c.replica_fetch_min_bytes = i32("replica.fetch.min.bytes");
  c.replica_fetch_backoff_ms = i32("replica.fetch.backoff.ms");
  c.replica_socket_timeout_ms = i32("replica.socket.timeout.ms");
  c.num_replica_fetchers = i32("num.replica.fetchers");
  c.replica_high_watermark_checkpoint_interval_ms =
      as_int(c, "replica.high.watermark.checkpoint.interval.ms");
  c.log_flush_offset_checkpoint_interval_ms = i32("log.flush.offset.checkpoint.interval.ms");
  c.broker_rack = optional_string(c.values.at("broker.rack"));
  c.rack_aware_replica_selection =
      optional_string(c.values.at("replica.selector.class")) == rack_aware_replica_selector;
  c.controlled_shutdown_enable = std::get<bool>(c.values.at("controlled.shutdown.enable"));
  c.auto_leader_rebalance_enable = std::get<bool>(c.values.at("auto.leader.rebalance.enable"));
  c.leader_imbalance_check_interval_seconds = as_int(c, "leader.imbalance.check.interval.seconds");
  if (c.explicitly_set.count("broker.id") && i32("broker.id") != c.node_id) {
    return fail(fmt::format(
        "Invalid value {} for configuration broker.id: must equal node.id ({}) when both are set",
        i32("broker.id"), c.node_id));
  }
  auto roles = list("process.roles");
  if (std::find(roles.begin(), roles.end(), "broker") == roles.end()) {
    return fail(invalid("process.roles", c.explicitly_set["process.roles"],
                        "tarn is a broker; process.roles must include broker"));
  }

  // Listeners: every one but the controller listeners is bound, speaking the protocol
  // listener.security.protocol.map gives its name (Kafka's names are case-insensitive: upper
  // case here, as Kafka's ListenerName.normalised).
  auto protocols =
      parse_protocol_map("listener.security.protocol.map", str("listener.security.protocol.map"));
  if (!protocols) return fail(protocols.error());
  std::vector<std::string> controller_names;
  for (const auto& n : list("controller.listener.names")) controller_names.push_back(upper_case(n));
  std::string listeners_text = fmt::format("{}", fmt::join(list("listeners"), ","));
  for (const auto& text : list("listeners")) {
    auto l = parse_listener("listeners", text);
    if (!l) return fail(l.error());
    if (std::find(controller_names.begin(), controller_names.end(), l->name) !=
        controller_names.end()) {
      continue;
    }
    auto proto = protocols->find(l->name);
    if (proto == protocols->end()) {
      return fail(invalid("listeners", listeners_text,
                          fmt::format("No security protocol defined for listener {} (add it to "
                                      "listener.security.protocol.map)",
                                      l->name)));
    }
    for (const auto& other : c.listeners) {
      if (other.name == l->name) {
        return fail(
            invalid("listeners", listeners_text, "Each listener must have a different name"));
      }
      if (other.port == l->port && other.port != 0 && other.host == l->host) {
        return fail(
            invalid("listeners", listeners_text, "Each listener must have a different port"));
      }
    }
    c.listeners.push_back(*l);
    auto security = listener_security_for(c, l->name, proto->second);
    if (!security) return fail(security.error());
    c.security_by_listener.push_back(std::move(*security));
  }
  if (c.listeners.empty()) {
    return fail(invalid("listeners", listeners_text, "no listener to bind"));
  }
  // Advertised listeners default to the listeners; one given for a name replaces it.
  c.advertised_listeners = c.listeners;
  if (!is_null(c, "advertised.listeners")) {
    std::string text = fmt::format("{}", fmt::join(list("advertised.listeners"), ","));
    for (const auto& item : list("advertised.listeners")) {
      auto a = parse_listener("advertised.listeners", item);
      if (!a) return fail(a.error());
      if (std::find(controller_names.begin(), controller_names.end(), a->name) !=
          controller_names.end()) {
        continue;
      }
      auto it = std::find_if(c.advertised_listeners.begin(), c.advertised_listeners.end(),
                             [&](const listener_endpoint& x) { return x.name == a->name; });
      if (it == c.advertised_listeners.end()) {
        return fail(invalid("advertised.listeners", text,
                            fmt::format("{} is not one of the listeners", a->name)));
      }
      *it = *a;
    }
  }
  // The inter-broker listener, checked as KafkaConfig does (tarn has no other broker yet).
  const bool listener_name_set = !is_null(c, "inter.broker.listener.name");
  if (listener_name_set && c.explicitly_set.count("security.inter.broker.protocol")) {
    return fail(std::string(
        "Only one of inter.broker.listener.name and security.inter.broker.protocol should be "
        "set."));
  }
  c.inter_broker_listener_name = listener_name_set ? upper_case(str("inter.broker.listener.name"))
                                                   : str("security.inter.broker.protocol");
  if (std::none_of(
          c.advertised_listeners.begin(), c.advertised_listeners.end(),
          [&](const listener_endpoint& a) { return a.name == c.inter_broker_listener_name; })) {
    std::vector<std::string> names;
    for (const auto& a : c.advertised_listeners) names.push_back(a.name);
    return fail(fmt::format(
        "inter.broker.listener.name must be a listener name defined in advertised.listeners. The "
        "valid options based on currently configured listeners are {}",
        fmt::join(names, ",")));
  }

  c.num_network_threads = is_null(c, "num.network.threads") ? 0 : i32("num.network.threads");
  c.num_io_threads = i32("num.io.threads");
  c.socket_request_max_bytes = i32("socket.request.max.bytes");
  c.socket_send_buffer_bytes = i32("socket.send.buffer.bytes");
  c.socket_receive_buffer_bytes = i32("socket.receive.buffer.bytes");
  c.max_connections = i32("max.connections");
  c.max_connections_per_ip = i32("max.connections.per.ip");
  for (const auto& entry : split_list(str("max.connections.per.ip.overrides"))) {
    size_t colon = entry.rfind(':');
    auto n = colon == std::string::npos ? std::nullopt
                                        : parse_integer(entry.substr(colon + 1), 0, INT32_MAX);
    if (!n || colon == 0) {
      return fail(invalid("max.connections.per.ip.overrides",
                          str("max.connections.per.ip.overrides"), "Expected host:count pairs"));
    }
    c.max_connections_per_ip_overrides[entry.substr(0, colon)] = static_cast<int32_t>(*n);
  }
  c.connections_max_idle_ms = as_int(c, "connections.max.idle.ms");
  c.queued_max_requests = i32("queued.max.requests");
  c.queued_max_request_bytes = as_int(c, "queued.max.request.bytes");
  c.authorizer_enabled = !str("authorizer.class.name").empty();
  c.super_users = security::parse_super_users(str("super.users"));
  c.allow_everyone_if_no_acl_found = std::get<bool>(c.values.at("allow.everyone.if.no.acl.found"));
  c.quota_window_num = i32("quota.window.num");
  c.quota_window_size_seconds = i32("quota.window.size.seconds");
  c.controller_quota_window_num = i32("controller.quota.window.num");
  c.replication_quota_window_num = i32("replication.quota.window.num");
  c.replication_quota_window_size_seconds = i32("replication.quota.window.size.seconds");
  c.controller_quota_window_size_seconds = i32("controller.quota.window.size.seconds");
  if (c.queued_max_request_bytes > 0 && c.queued_max_request_bytes < c.socket_request_max_bytes) {
    // KafkaConfig.validateValues: a budget smaller than one request could never admit it.
    return fail(invalid("queued.max.request.bytes", std::to_string(c.queued_max_request_bytes),
                        "queued.max.request.bytes must be larger or equal to "
                        "socket.request.max.bytes"));
  }
  c.fetch_max_bytes = i32("fetch.max.bytes");
  c.max_incremental_fetch_session_cache_slots = i32("max.incremental.fetch.session.cache.slots");

  c.log_dirs = is_null(c, "log.dirs") ? list("log.dir") : list("log.dirs");
  const char* dirs_key = is_null(c, "log.dirs") ? "log.dir" : "log.dirs";
  if (c.log_dirs.size() != 1) {
    return fail(invalid(dirs_key, fmt::format("{}", fmt::join(c.log_dirs, ",")),
                        "tarn keeps its data in exactly one log directory"));
  }

  c.num_partitions = i32("num.partitions");
  c.default_replication_factor = i32("default.replication.factor");
  c.auto_create_topics_enable = std::get<bool>(c.values.at("auto.create.topics.enable"));
  c.delete_topic_enable = std::get<bool>(c.values.at("delete.topic.enable"));
  c.message_max_bytes = i32("message.max.bytes");
  c.compression_type = str("compression.type");
  c.compression_gzip_level = i32("compression.gzip.level");
  c.compression_lz4_level = i32("compression.lz4.level");
  c.compression_zstd_level = i32("compression.zstd.level");
  c.min_insync_replicas = i32("min.insync.replicas");
  c.log_message_timestamp_type = str("log.message.timestamp.type") == "LogAppendTime"
                                     ? timestamp_type::log_append_time
                                     : timestamp_type::create_time;
  c.log_message_timestamp_before_max_ms = as_int(c, "log.message.timestamp.before.max.ms");
  c.log_message_timestamp_after_max_ms = as_int(c, "log.message.timestamp.after.max.ms");

  c.log_segment_bytes = i32("log.segment.bytes");
  c.log_roll_ms = first_duration_ms(c, "log.roll.ms", nullptr, "log.roll.hours");
  if (c.log_roll_ms < 1) {
    return fail(invalid("log.roll.ms", std::to_string(c.log_roll_ms), "Value must be at least 1"));
  }
  c.log_roll_jitter_ms =
      first_duration_ms(c, "log.roll.jitter.ms", nullptr, "log.roll.jitter.hours");
  c.log_index_interval_bytes = i32("log.index.interval.bytes");
  c.log_index_size_max_bytes = i32("log.index.size.max.bytes");
  c.log_retention_ms =
      first_duration_ms(c, "log.retention.ms", "log.retention.minutes", "log.retention.hours");
  if (c.log_retention_ms < 0) c.log_retention_ms = -1;  // Kafka: any negative means unlimited
  c.log_retention_bytes = as_int(c, "log.retention.bytes");
  c.log_retention_check_interval_ms = as_int(c, "log.retention.check.interval.ms");
  c.log_segment_delete_delay_ms = as_int(c, "log.segment.delete.delay.ms");
  c.log_flush_interval_messages = as_int(c, "log.flush.interval.messages");
  c.log_flush_scheduler_interval_ms = as_int(c, "log.flush.scheduler.interval.ms");
  c.log_flush_interval_ms = is_null(c, "log.flush.interval.ms")
                                ? as_int(c, "log.flush.scheduler.interval.ms")
                                : as_int(c, "log.flush.interval.ms");
  if (c.log_flush_interval_ms < 0) {
    return fail(invalid("log.flush.interval.ms", std::to_string(c.log_flush_interval_ms),
                        "Value must be at least 0"));
  }
  c.log_cleanup_policy = list("log.cleanup.policy");
  c.log_preallocate = std::get<bool>(c.values.at("log.preallocate"));
  c.log_cleaner_enable = std::get<bool>(c.values.at("log.cleaner.enable"));
  c.log_cleaner_threads = i32("log.cleaner.threads");
  c.log_cleaner_dedupe_buffer_size = as_int(c, "log.cleaner.dedupe.buffer.size");
  c.log_cleaner_io_buffer_load_factor =
      std::get<double>(c.values.at("log.cleaner.io.buffer.load.factor"));
  c.log_cleaner_io_buffer_size = i32("log.cleaner.io.buffer.size");
  c.log_cleaner_io_max_bytes_per_second =
      std::get<double>(c.values.at("log.cleaner.io.max.bytes.per.second"));
  c.log_cleaner_backoff_ms = as_int(c, "log.cleaner.backoff.ms");

  const std::string http = str("http.listener");
  c.http_enabled = !http.empty();
  if (c.http_enabled) {
    // host:port as in `listeners` without the NAME:// part (host may be a bracketed IPv6
    // address; empty means every interface).
    auto l = parse_listener("http.listener", "HTTP://" + http);
    if (!l) return fail(invalid("http.listener", http, "Expected host:port or an empty value"));
    c.http_host = l->host;
    c.http_port = l->port;
  }
  c.http_metrics_max_partitions = i32("http.metrics.max.partitions");
  c.http_console_read_only = std::get<bool>(c.values.at("http.console.read.only"));
  c.http_metrics_request_path_enabled =
      std::get<bool>(c.values.at("http.metrics.request.path.enabled"));
  return finish_group_config(c);
}

}  // namespace

std::string listener_endpoint::to_string() const {
  bool v6 = host.find(':') != std::string::npos;
  return fmt::format("{}://{}{}{}:{}", name, v6 ? "[" : "", host, v6 ? "]" : "", port);
}

result<broker_config, std::string> make_broker_config(const properties& file,
                                                      const properties& overrides) {
  broker_config c;
  for (const auto& key : config_keys()) {
    if (key.default_value == nullptr) {
      c.values[key.name] = std::monostate{};
      continue;
    }
    auto v = parse_value(key, key.default_value);
    if (!v) return fail(v.error());  // a bad default is a tarn bug, but say so rather than crash
    c.values[key.name] = std::move(*v);
  }
  auto apply = [&](const properties& props) -> result<void, std::string> {
    for (const auto& [name, raw] : props) {
      const config_key* key = find_key(name);
      if (key == nullptr && (key = find_listener_key(name)) != nullptr) {
        // listener.name.<listener>.<key>: checked like the key itself, resolved per listener.
        auto v = parse_value(*key, raw);
        if (!v) return fail(v.error());
        if (key->validate) {
          if (auto why = key->validate(*v)) return fail(invalid(name, raw, *why));
        }
        c.listener_prefixed[name] = raw;
        continue;
      }
      if (key == nullptr) {
        return fail(
            fmt::format("Unknown configuration {} (value {}): not a broker setting "
                        "tarn knows; see docs/broker.md",
                        name, raw));
      }
      auto v = parse_value(*key, raw);
      if (!v) return fail(v.error());
      if (key->validate) {
        if (auto why = key->validate(*v)) return fail(invalid(name, raw, *why));
      }
      c.values[name] = std::move(*v);
      c.explicitly_set[name] = raw;
    }
    return {};
  };
  if (auto r = apply(file); !r) return fail(r.error());
  if (auto r = apply(overrides); !r) return fail(r.error());
  for (const auto& [name, raw] : c.explicitly_set) {
    if (!find_key(name)->used_by_tarn) c.ignored_keys.push_back(name);
  }
  if (auto r = finish(c); !r) return fail(r.error());
  return c;
}

result<std::pair<std::string, std::string>, std::string> parse_override(const std::string& arg) {
  size_t eq = arg.find('=');
  if (eq == std::string::npos || eq == 0) {
    return fail(fmt::format("Invalid override {}: expected key=value", arg));
  }
  return std::pair{arg.substr(0, eq), arg.substr(eq + 1)};
}

std::optional<std::string> config_value_to_string(const config_value& v) {
  struct visitor {
    std::optional<std::string> operator()(std::monostate) const { return std::nullopt; }
    std::optional<std::string> operator()(bool b) const { return b ? "true" : "false"; }
    std::optional<std::string> operator()(int64_t i) const { return std::to_string(i); }
    std::optional<std::string> operator()(double d) const { return fmt::format("{}", d); }
    std::optional<std::string> operator()(const std::string& s) const { return s; }
    std::optional<std::string> operator()(const std::vector<std::string>& l) const {
      return fmt::format("{}", fmt::join(l, ","));
    }
  };
  return std::visit(visitor{}, v);
}

std::vector<std::string> known_broker_config_keys() {
  std::vector<std::string> out;
  for (const auto& k : config_keys()) out.emplace_back(k.name);
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<broker_config_key_info> describe_broker_config_key(const std::string& key) {
  const config_key* k = find_key(key);
  if (k == nullptr) return std::nullopt;
  broker_config_type type = broker_config_type::string;
  switch (k->type) {
    case config_type::boolean:
      type = broker_config_type::boolean;
      break;
    case config_type::short_int:
      type = broker_config_type::short_int;
      break;
    case config_type::int32:
      type = broker_config_type::int32;
      break;
    case config_type::int64:
      type = broker_config_type::int64;
      break;
    case config_type::float64:
      type = broker_config_type::float64;
      break;
    case config_type::string:
      type = broker_config_type::string;
      break;
    case config_type::list:
      type = broker_config_type::list;
      break;
    case config_type::password:
      type = broker_config_type::password;
      break;
  }
  std::optional<std::string> default_value;
  if (k->default_value != nullptr) default_value = k->default_value;
  return broker_config_key_info{type, std::move(default_value)};
}

}  // namespace tarn::broker
