// Small pieces the handlers share: encoding a response body, this broker's advertised listener
// for a connection, converting topic ids between storage's and the wire's representation, and
// the wire code of a config type.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/strong_types.h"
#include "broker/handler.h"
#include "cluster/cluster_membership.h"
#include "protocol/error_codes.h"
#include "protocol/reader.h"
#include "protocol/writer.h"
#include "storage/log.h"
#include "storage/log_config.h"
#include "storage/topic_metadata.h"

namespace tarn::broker {

// Whether `key`'s override differs between two override maps (added, removed or another value):
// when Kafka's controller writes a topic's ConfigRecord for it.
inline bool override_changed(const storage::config_map& before, const storage::config_map& after,
                             std::string_view key) {
  auto b = before.find(key);
  auto a = after.find(key);
  if ((b == before.end()) != (a == after.end())) return true;
  return b != before.end() && b->second != a->second;
}

// The leader epoch of every partition on this single broker: stamped into every batch it writes
// and what Metadata, ListOffsets and Fetch report and check.
inline constexpr leader_epoch_t local_leader_epoch = 0;

// A partition's leader epoch cache as Kafka's leader would hold it. Kafka writes (leader epoch,
// log end offset) into leader-epoch-checkpoint when the broker becomes the partition's leader;
// tarn only when the first batch of the epoch is appended, so a cache whose newest epoch is below
// `current_epoch` (the partition's leader epoch: local_leader_epoch on a single node, the state's
// in a cluster) reads as if that entry were there, starting at the log end offset (what
// ListOffsets EARLIEST, OffsetForLeaderEpoch and a follower's DivergingEpoch answer for an epoch
// without a batch yet). The caller holds the log's mutex.
inline std::vector<storage::epoch_entry> leader_epoch_cache_of(
    const storage::log& log, leader_epoch_t current_epoch = local_leader_epoch) {
  std::vector<storage::epoch_entry> out = log.epoch_entries();
  if (out.empty() || out.back().epoch < current_epoch) {
    out.push_back({current_epoch, log.log_end_offset()});
  }
  return out;
}

// Kafka's check of a request's CurrentLeaderEpoch against the partition's leader epoch
// (Partition.localLogWithEpochOrThrow): -1 is not checked; an older one is FENCED_LEADER_EPOCH
// (the client's metadata is stale), a newer one UNKNOWN_LEADER_EPOCH (this broker's is).
inline protocol::error_code check_current_leader_epoch(int32_t requested, int32_t current) {
  if (requested == -1) return protocol::error_code::none;
  if (requested < current) return protocol::error_code::fenced_leader_epoch;
  if (requested > current) return protocol::error_code::unknown_leader_epoch;
  return protocol::error_code::none;
}

// The advertised listener of the listener a request came on (the first one if none matches):
// the host and port Metadata and FindCoordinator report for this broker.
inline const listener_endpoint& advertised_listener_for(const broker_services& services,
                                                        const connection_info& connection) {
  for (const auto& l : services.advertised_listeners) {
    if (l.name == connection.listener) return l;
  }
  return services.advertised_listeners.front();
}

// A broker as Metadata and DescribeCluster list it: its endpoint on the listener the request came
// on. On a single node, this broker; in a cluster, every live registered broker that has that
// listener (Kafka leaves out the others), in node id order.
struct listed_broker {
  int32_t node_id = 0;
  std::string host;
  int32_t port = 0;
  std::optional<std::string> rack;
};
struct listed_cluster {
  std::vector<listed_broker> brokers;
  int32_t controller_id = -1;
  bool live(int32_t node_id) const {
    for (const auto& b : brokers) {
      if (b.node_id == node_id) return true;
    }
    return false;
  }
};
inline listed_cluster cluster_as_listed(const broker_services& services,
                                        const connection_info& connection) {
  listed_cluster out;
  if (services.membership == nullptr) {
    const listener_endpoint& advertised = advertised_listener_for(services, connection);
    out.brokers.push_back({services.config.node_id, advertised.host, advertised.port, {}});
    out.controller_id = services.config.node_id;
    return out;
  }
  for (const auto& b : services.membership->live_brokers()) {
    const cluster::broker_endpoint* e = b.endpoint(connection.listener);
    if (e == nullptr) continue;
    out.brokers.push_back({b.node_id, e->host, e->port, b.rack});
  }
  out.controller_id = services.membership->controller_id();
  return out;
}

template <class Message>
response encode_response(const Message& m, int16_t version) {
  response out;
  out.body.reserve(m.encoded_size(version));
  protocol::writer w(out.body);
  m.encode(w, version);
  return out;
}

inline protocol::uuid to_wire(const storage::uuid& id) {
  protocol::uuid out;
  for (int i = 0; i < 8; ++i) {
    out.bytes[static_cast<size_t>(i)] =
        static_cast<uint8_t>(id.most_significant_bits >> (56 - 8 * i));
    out.bytes[static_cast<size_t>(8 + i)] =
        static_cast<uint8_t>(id.least_significant_bits >> (56 - 8 * i));
  }
  return out;
}

inline storage::uuid from_wire(const protocol::uuid& id) {
  storage::uuid out;
  for (size_t i = 0; i < 8; ++i) {
    out.most_significant_bits = (out.most_significant_bits << 8) | id.bytes[i];
    out.least_significant_bits = (out.least_significant_bits << 8) | id.bytes[8 + i];
  }
  return out;
}

// DescribeConfigsResponse.ConfigType: UNKNOWN 0, BOOLEAN 1, STRING 2, INT 3, SHORT 4, LONG 5,
// DOUBLE 6, LIST 7, CLASS 8, PASSWORD 9.
inline int8_t wire_config_type(storage::config_type t) {
  switch (t) {
    case storage::config_type::boolean:
      return 1;
    case storage::config_type::string:
      return 2;
    case storage::config_type::int32:
      return 3;
    case storage::config_type::int64:
      return 5;
    case storage::config_type::float64:
      return 6;
    case storage::config_type::list:
      return 7;
  }
  return 0;
}

// Kafka's resource types (org.apache.kafka.common.resource.ResourceType / ConfigResource.Type).
inline constexpr int8_t resource_type_topic = 2;
inline constexpr int8_t resource_type_broker = 4;
inline constexpr int8_t resource_type_broker_logger = 8;
inline constexpr int8_t resource_type_group = 32;

// A type that is none of Kafka 4.4's ConfigResource.Type ids (TOPIC, BROKER, BROKER_LOGGER,
// CLIENT_METRICS 16, GROUP 32): Kafka reads it as UNKNOWN, and its alter APIs answer "Unknown
// resource type N".
inline bool unknown_config_resource_type(int8_t type) {
  return type != resource_type_topic && type != resource_type_broker &&
         type != resource_type_broker_logger && type != 16 && type != 32;
}

// For each resource of an AlterConfigs or IncrementalAlterConfigs request, whether another names
// the same type and name: Kafka 4.4 (ConfigAdminManager.preprocess) answers every such entry
// INVALID_REQUEST "Each resource must appear at most once." before anything else, authorization
// included, and alters none of them.
template <typename Resources>
std::vector<bool> duplicate_config_resources(const Resources& resources) {
  std::map<std::pair<int8_t, std::string_view>, int> seen;
  for (const auto& r : resources) ++seen[{r.resource_type, std::string_view(r.resource_name)}];
  std::vector<bool> out;
  out.reserve(resources.size());
  for (const auto& r : resources) {
    out.push_back(seen[{r.resource_type, std::string_view(r.resource_name)}] > 1);
  }
  return out;
}
inline constexpr std::string_view duplicate_config_resource_message =
    "Each resource must appear at most once.";

// Topic-level AclOperations a client may perform when no authorizer is configured (Kafka reports
// every operation the resource type supports): READ 3, WRITE 4, CREATE 5, DELETE 6, ALTER 7,
// DESCRIBE 8, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11.
inline constexpr int32_t all_topic_operations =
    (1 << 3) | (1 << 4) | (1 << 5) | (1 << 6) | (1 << 7) | (1 << 8) | (1 << 10) | (1 << 11);

}  // namespace tarn::broker
