// The broker's configuration: Kafka's server.properties keys with Kafka 4.4's defaults and
// validation, typed. Built from a .properties file plus `--override key=value` pairs; an unknown
// key or a bad value is an error naming the key and the value. docs/broker.md lists every key
// and what it means for tarn.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "base/result.h"
#include "broker/properties.h"
#include "coordinator/group_config.h"
#include "coordinator/share_config.h"
#include "security/security_config.h"
#include "txn/txn_coordinator.h"

namespace tarn::broker {

enum class timestamp_type { create_time, log_append_time };

// One entry of `listeners` / `advertised.listeners`: NAME://host:port. An empty host means every
// interface (when binding) or "not given" (when advertising).
struct listener_endpoint {
  std::string name;
  std::string host;
  uint16_t port = 0;

  std::string to_string() const;
  bool operator==(const listener_endpoint&) const = default;
};

// What one listener speaks (listener.security.protocol.map) and its TLS and SASL settings, each
// ssl.* / sasl.* key resolved for it (listener.name.<name>.<key> first, then the bare key).
struct listener_security {
  std::string name;
  security::security_protocol protocol = security::security_protocol::plaintext;
  security::ssl_config ssl;    // used by SSL and SASL_SSL
  security::sasl_config sasl;  // used by SASL_PLAINTEXT and SASL_SSL
};

// The replica.selector.class values tarn serves: Kafka's two ReplicaSelector classes.
inline constexpr const char* rack_aware_replica_selector =
    "org.apache.kafka.common.replica.RackAwareReplicaSelector";
inline constexpr const char* leader_replica_selector =
    "org.apache.kafka.common.replica.LeaderReplicaSelector";

// A configuration value as Kafka's ConfigDef types it; monostate is Kafka's null.
using config_value =
    std::variant<std::monostate, bool, int64_t, double, std::string, std::vector<std::string>>;

struct broker_config {
  // Network and threading (see docs/broker.md for what the thread counts mean in tarn).
  std::vector<listener_endpoint> listeners;             // the ones tarn binds
  std::vector<listener_endpoint> advertised_listeners;  // same order as listeners
  std::vector<listener_security> security_by_listener;  // same order as listeners
  // inter.broker.listener.name, or the listener named after security.inter.broker.protocol
  // (validated as Kafka does; kept for a cluster).
  std::string inter_broker_listener_name = "PLAINTEXT";
  int32_t num_network_threads = 0;  // event loops; 0 = one per available core
  int32_t num_io_threads = 8;       // blocking-work pool (fsync, file deletion)
  int32_t socket_request_max_bytes = 104857600;
  int32_t socket_send_buffer_bytes = 102400;  // -1 = OS default
  int32_t socket_receive_buffer_bytes = -1;   // -1 = OS default (autotuning); Kafka: 102400
  int32_t max_connections = INT32_MAX;
  int32_t max_connections_per_ip = INT32_MAX;
  std::map<std::string, int32_t> max_connections_per_ip_overrides;
  int64_t connections_max_idle_ms = 600000;
  int32_t queued_max_requests = 500;      // per connection: requests read but not yet answered
  int64_t queued_max_request_bytes = -1;  // broker-wide bytes of such requests; <= 0 unbounded
  int32_t fetch_max_bytes = 57671680;     // caps a Fetch's MaxBytes
  // Authorization: authorizer.class.name set (to Kafka's StandardAuthorizer, the only one
  // accepted), super.users (parsed), allow.everyone.if.no.acl.found.
  bool authorizer_enabled = false;
  std::vector<std::string> super_users;
  bool allow_everyone_if_no_acl_found = false;
  // Client quotas: rates over quota.window.num windows of quota.window.size.seconds.
  int32_t quota_window_num = 11;
  int32_t quota_window_size_seconds = 1;
  int32_t controller_quota_window_num = 11;
  // Replication throttles (leader./follower.replication.throttled.rate, dynamic broker configs):
  // rates over replication.quota.window.num windows of replication.quota.window.size.seconds.
  int32_t replication_quota_window_num = 11;
  int32_t replication_quota_window_size_seconds = 1;
  int32_t controller_quota_window_size_seconds = 1;
  int32_t max_incremental_fetch_session_cache_slots = 1000;

  // Identity and storage.
  int32_t node_id = 1;
  std::vector<std::string> log_dirs;

  // A cluster on etcd (docs/cluster.md): etcd.connect's endpoints (empty: single node on the
  // local metadata log), the session's bounds and this broker's rack.
  std::vector<std::string> etcd_connect;
  int32_t broker_session_timeout_ms = 9000;
  int32_t broker_heartbeat_interval_ms = 2000;
  std::optional<std::string> broker_rack;
  // replica.selector.class is Kafka's RackAwareReplicaSelector (KIP-392, docs/cluster.md
  // "Follower fetching"): the leader sends a consumer with a client.rack to an in-sync replica in
  // its rack. Otherwise (null, the default, or LeaderReplicaSelector) consumers read the leader.
  bool rack_aware_replica_selection = false;
  // Replication (docs/cluster.md, "Replication"): Kafka's keys and defaults.
  int64_t replica_lag_time_max_ms = 30000;
  int32_t replica_fetch_max_bytes = 1048576;
  int32_t replica_fetch_wait_max_ms = 500;
  int32_t replica_fetch_min_bytes = 1;
  int32_t replica_fetch_backoff_ms = 1000;
  int32_t replica_socket_timeout_ms = 30000;
  int32_t num_replica_fetchers = 1;
  // Leadership moved on purpose (docs/cluster.md): Kafka's keys and defaults.
  bool controlled_shutdown_enable = true;
  bool auto_leader_rebalance_enable = true;
  int64_t leader_imbalance_check_interval_seconds = 300;
  // Checkpoints (storage::log_manager::start_checkpoints): replication-offset-checkpoint and
  // recovery-point-offset-checkpoint, every this many ms (<= 0: only at open and clean shutdown).
  int64_t replica_high_watermark_checkpoint_interval_ms = 5000;
  int32_t log_flush_offset_checkpoint_interval_ms = 60000;

  // Topic creation and produce validation (broker-wide defaults of the topic configs).
  int32_t num_partitions = 1;
  int32_t default_replication_factor = 1;
  bool auto_create_topics_enable = true;
  bool delete_topic_enable = true;
  int32_t message_max_bytes = 1048588;
  std::string compression_type = "producer";
  int32_t compression_gzip_level = -1;
  int32_t compression_lz4_level = 9;
  int32_t compression_zstd_level = 3;
  int32_t min_insync_replicas = 1;
  timestamp_type log_message_timestamp_type = timestamp_type::create_time;
  int64_t log_message_timestamp_before_max_ms = INT64_MAX;
  int64_t log_message_timestamp_after_max_ms = 3600000;

  // The log. The *_ms fields are the effective values after Kafka's ms/minutes/hours rules.
  int32_t log_segment_bytes = 1073741824;
  int64_t log_roll_ms = 604800000;
  int64_t log_roll_jitter_ms = 0;
  int32_t log_index_interval_bytes = 4096;
  int32_t log_index_size_max_bytes = 10485760;
  int64_t log_retention_ms = 604800000;  // -1 = unlimited
  int64_t log_retention_bytes = -1;
  int64_t log_retention_check_interval_ms = 300000;
  int64_t log_segment_delete_delay_ms = 60000;
  int64_t log_flush_interval_messages = INT64_MAX;
  int64_t log_flush_interval_ms = INT64_MAX;
  int64_t log_flush_scheduler_interval_ms = INT64_MAX;  // how often flush.ms is checked
  std::vector<std::string> log_cleanup_policy = {"delete"};
  bool log_preallocate = false;
  // The log cleaner (log.cleaner.*; the topic-level cleaner keys reach storage's log_config).
  bool log_cleaner_enable = true;
  int32_t log_cleaner_threads = 1;
  int64_t log_cleaner_dedupe_buffer_size = 134217728;
  double log_cleaner_io_buffer_load_factor = 0.9;
  int32_t log_cleaner_io_buffer_size = 524288;
  double log_cleaner_io_max_bytes_per_second = 1.7976931348623157e308;
  int64_t log_cleaner_backoff_ms = 15000;

  // The HTTP listener of src/observe (tarn's own keys; docs/http-api.md): http.listener as host
  // and port (http_enabled false when the value is empty), http.metrics.max.partitions,
  // http.console.read.only (the console's JSON API answers every change 403),
  // http.metrics.request.path.enabled (false: the handlers and connections record no metrics).
  bool http_enabled = true;
  std::string http_host = "127.0.0.1";
  uint16_t http_port = 9644;
  int32_t http_metrics_max_partitions = 1000;
  bool http_console_read_only = false;
  bool http_metrics_request_path_enabled = true;

  // The group coordinator: group.*, offset.metadata.max.bytes, offsets.* (the replication
  // factor aside).
  coordinator::group_config group;
  // Share groups (KIP-932): group.share.* (coordinator/share_config.h).
  coordinator::share_config share;
  // The transaction coordinator: transaction.max.timeout.ms, transaction.state.log.*,
  // transaction.abort.timed.out.transaction.cleanup.interval.ms.
  txn::txn_config txn;
  // transaction.partition.verification.enable (KIP-890; dynamic, read from topic_manager's
  // effective config): false lets a transactions v1 batch (Produce v11 and older, TxnOffsetCommit
  // v4 and older) in without asking the coordinator; transactions v2 requests still add their
  // partition through the leader, as Kafka 4.4's ReplicaManager does.
  bool transaction_partition_verification_enable = true;

  // Every key tarn knows, with its effective value (default or set) and whether it was set
  // explicitly. DescribeConfigs and the topic-config defaults read this.
  std::map<std::string, config_value> values;
  std::map<std::string, std::string> explicitly_set;  // key -> value as written
  // listener.name.<listener>.<key> settings as written (ssl.*, sasl.*,
  // <mechanism>.sasl.jaas.config).
  std::map<std::string, std::string> listener_prefixed;
  // Keys that were set but have no effect in tarn (a single-node broker without a controller
  // quorum); the server logs them at startup.
  std::vector<std::string> ignored_keys;
};

// Builds the configuration from file properties and overrides (overrides win). Every key is
// checked; the first error is returned, naming the key and the value.
result<broker_config, std::string> make_broker_config(const properties& file,
                                                      const properties& overrides);

// Parses `key=value` as given to --override.
result<std::pair<std::string, std::string>, std::string> parse_override(const std::string& arg);

// The text form of a value as Kafka prints it in DescribeConfigs (null -> nullopt, lists
// comma-separated).
std::optional<std::string> config_value_to_string(const config_value& v);

// Names of all broker keys tarn accepts, sorted.
std::vector<std::string> known_broker_config_keys();

// Kafka's ConfigDef type of a broker key and its default as text (nullopt: Kafka's null), for
// DescribeConfigs on the broker resource (a password is sensitive: never shown). nullopt for an
// unknown key.
enum class broker_config_type { boolean, short_int, int32, int64, float64, string, list, password };
struct broker_config_key_info {
  broker_config_type type;
  std::optional<std::string> default_value;
};
std::optional<broker_config_key_info> describe_broker_config_key(const std::string& key);

}  // namespace tarn::broker
