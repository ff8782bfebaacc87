// ListOffsets (key 2): the offset of a partition for a timestamp or one of the special targets.
//
// Versions served: 1-11 (Kafka 4.4's range). Behaviour, as Kafka 4.4's ReplicaManager.fetchOffset
// and UnifiedLog.fetchOffsetByTimestamp answer for a topic without tiered storage:
//   - -2 EARLIEST: the log start offset, timestamp -1, leader epoch of the earliest epoch entry if
//     it starts at or before the log start offset (a partition without records: epoch 0, as
//     Kafka's cache holds the entry written when the broker became leader).
//   - -1 LATEST: the high watermark for consumers (READ_UNCOMMITTED) or the last stable offset
//     (READ_COMMITTED: the first offset of the oldest open transaction), the LEO for any
//     other ReplicaId than -1 (-2 debugging, or a follower's broker id: Kafka's KafkaApis takes
//     the isolation level only from a consumer's request; a follower asks it to learn how far
//     the leader's log goes); timestamp -1; the partition's leader epoch (as Metadata says: 0 on
//     a single node, the state's in a cluster).
//   - -3 MAX_TIMESTAMP (v7+): the first record carrying the largest timestamp, its batch's epoch.
//   - -4 EARLIEST_LOCAL (v8+): the log start offset (all of the log is local).
//   - -5 LATEST_TIERED (v9+) and -6 EARLIEST_PENDING_UPLOAD (v11+): offset -1, timestamp -1,
//     epoch -1 (no tiered storage).
//   - t >= 0: the first record with timestamp >= t, found through the .timeindex, with its
//     timestamp and its batch's leader epoch; offset -1 when none exists below the high watermark.
//   - A negative target unknown or above the request version: UNSUPPORTED_VERSION. A partition
//     listed twice: INVALID_REQUEST. Unknown topic or partition index: UNKNOWN_TOPIC_OR_PARTITION;
//     a partition of a known topic without a loaded log, or one this broker does not serve as
//     leader in a cluster: NOT_LEADER_OR_FOLLOWER. CurrentLeaderEpoch (v4+) below the partition's
//     leader epoch: FENCED_LEADER_EPOCH, above: UNKNOWN_LEADER_EPOCH. KIP-207: a consumer's LATEST
//     (or a timestamp found at or past the high watermark) on a new leader whose high watermark
//     is still below the start of its leader epoch: OFFSET_NOT_AVAILABLE (retriable).
//   - LeaderEpoch in the response only from v4.
// A body that does not decode closes the connection.
#include <spdlog/spdlog.h>

#include <map>
#include <mutex>
#include <set>

#include "broker/authorization.h"
#include "broker/handler.h"
#include "broker/replica_manager.h"
#include "broker/topic_handler_util.h"
#include "broker/topic_manager.h"
#include "protocol/error_codes.h"
#include "protocol/messages/list_offsets_request.h"
#include "protocol/messages/list_offsets_response.h"

namespace tarn::broker {

namespace {

using protocol::error_code;
using partition_response = protocol::list_offsets_response::list_offsets_partition_response;

constexpr int64_t earliest_timestamp = -2;
constexpr int64_t latest_timestamp = -1;
constexpr int64_t max_timestamp = -3;
constexpr int64_t earliest_local_timestamp = -4;
constexpr int64_t latest_tiered_timestamp = -5;
constexpr int64_t earliest_pending_upload_timestamp = -6;
constexpr int32_t consumer_replica_id = -1;
// Every partition's leader epoch: tarn is a single leader that never changes (Metadata says 0).

// ReplicaManager.timestampMinSupportedVersion (4.4).
bool timestamp_unsupported(int64_t timestamp, int16_t version) {
  if (timestamp >= 0) return false;
  switch (timestamp) {
    case earliest_timestamp:
    case latest_timestamp:
      return false;
    case max_timestamp:
      return version < 7;
    case earliest_local_timestamp:
      return version < 8;
    case latest_tiered_timestamp:
      return version < 9;
    case earliest_pending_upload_timestamp:
      return version < 11;
    default:
      return true;
  }
}

struct found_offset {
  int64_t timestamp = -1;
  int64_t offset = -1;
  int32_t leader_epoch = -1;
};

partition_response error_response(int32_t partition, error_code e) {
  partition_response p;
  p.partition_index = partition;
  p.error_code = code(e);
  return p;
}

partition_response list_one(const storage::log& log, int32_t partition, int64_t timestamp,
                            int32_t replica_id, int8_t isolation_level, int16_t version,
                            int32_t leader_epoch) {
  partition_response p;
  p.partition_index = partition;
  constexpr int8_t read_committed = 1;
  const int64_t last_fetchable = replica_id != consumer_replica_id   ? log.log_end_offset()
                                 : isolation_level == read_committed ? log.last_stable_offset()
                                                                     : log.high_watermark();
  found_offset found;
  bool check_fetchable = false;
  switch (timestamp) {
    case earliest_timestamp:
    case earliest_local_timestamp: {
      found.offset = log.log_start_offset();
      const auto epochs = leader_epoch_cache_of(log, leader_epoch);
      if (!epochs.empty() && epochs.front().start_offset <= found.offset) {
        found.leader_epoch = epochs.front().epoch;
      }
      break;
    }
    case latest_timestamp:
      found.offset = last_fetchable;
      found.leader_epoch = leader_epoch;
      break;
    case latest_tiered_timestamp:
    case earliest_pending_upload_timestamp:
      break;  // -1, -1, -1: nothing is tiered
    default: {
      check_fetchable = true;
      auto s = timestamp == max_timestamp
                   ? log.max_timestamp_offset()
                   : log.find_offset_by_timestamp(timestamp, log.log_start_offset());
      if (!s) {
        spdlog::error("ListOffsets {}-{} timestamp {}: {}", log.tp().topic, partition, timestamp,
                      s.error().message);
        return error_response(partition, error_code::kafka_storage_error);
      }
      if (!*s) return p;
      found = {(*s)->timestamp, (*s)->offset, (*s)->leader_epoch.value_or(-1)};
    }
  }
  // KIP-207: a new leader whose high watermark has not reached the start of its epoch yet
  // (its ISR has not caught up) answers LATEST, and a timestamp found past what is fetchable,
  // with OFFSET_NOT_AVAILABLE, so that the client asks again rather than take an offset that
  // is about to move (Kafka's Partition.fetchOffsetForTimestamp, for consumers only).
  if (replica_id == consumer_replica_id && (timestamp == latest_timestamp || check_fetchable)) {
    const auto epochs = leader_epoch_cache_of(log, leader_epoch);
    const int64_t epoch_start = epochs.back().start_offset;
    if (epochs.back().epoch == leader_epoch && epoch_start > log.high_watermark() &&
        (timestamp == latest_timestamp || found.offset >= last_fetchable)) {
      return error_response(partition, error_code::offset_not_available);
    }
  }
  if (check_fetchable && found.offset >= last_fetchable) return p;
  p.timestamp = found.timestamp;
  p.offset = found.offset;
  if (version >= 4) p.leader_epoch = found.leader_epoch;
  return p;
}

asio::awaitable<handler_outcome> handle_list_offsets(request_context& request) {
  const int16_t version = request.header.api_version;
  protocol::reader r(request.body());
  auto decoded = protocol::list_offsets_request::decode(r, version);
  if (!decoded) {
    spdlog::warn("connection {} from {}: ListOffsets v{} body does not decode: {}",
                 request.connection.id, request.connection.peer, version,
                 protocol::describe(decoded.error().code));
    co_return close_connection{"bad ListOffsets request"};
  }
  const auto& req = *decoded;
  std::set<std::pair<std::string_view, int32_t>> seen, duplicates;
  for (const auto& t : req.topics) {
    for (const auto& p : t.partitions) {
      if (!seen.insert({t.name, p.partition_index}).second) {
        duplicates.insert({t.name, p.partition_index});
      }
    }
  }

  // DESCRIBE on each topic (Kafka's partitionSeqByAuthorized): the others answer
  // TOPIC_AUTHORIZATION_FAILED on every partition, after the rest.
  std::set<std::string_view> denied;
  if (request.services.authorizer != nullptr) {
    std::map<std::string_view, int32_t> refs;
    for (const auto& t : req.topics) ++refs[t.name];
    for (const auto& [name, count] : refs) {
      if (!authorize(request, security::acl_operation::describe, security::resource_type::topic,
                     name, count)) {
        denied.insert(name);
      }
    }
  }
  protocol::list_offsets_response reply;
  std::vector<protocol::list_offsets_response::list_offsets_topic_response> unauthorized;
  topic_manager& topics = *request.services.topics;
  auto guard = topics.read_lock();
  storage::log_manager& logs = topics.logs();
  for (const auto& t : req.topics) {
    if (!denied.empty() && denied.contains(t.name)) {
      auto& out = unauthorized.emplace_back();
      out.name = t.name;
      for (const auto& p : t.partitions) {
        out.partitions.push_back(
            error_response(p.partition_index, error_code::topic_authorization_failed));
      }
      continue;
    }
    auto& out = reply.topics.emplace_back();
    out.name = t.name;
    const storage::topic_info* info = logs.find_topic(t.name);
    for (const auto& p : t.partitions) {
      const int32_t index = p.partition_index;
      if (duplicates.contains({t.name, index})) {
        out.partitions.push_back(error_response(index, error_code::invalid_request));
      } else if (timestamp_unsupported(p.timestamp, version)) {
        out.partitions.push_back(error_response(index, error_code::unsupported_version));
      } else if (info == nullptr || index < 0 || index >= info->partitions) {
        out.partitions.push_back(error_response(index, error_code::unknown_topic_or_partition));
      } else if (const storage::log* log = logs.get_log(t.name, index); log == nullptr) {
        out.partitions.push_back(error_response(index, error_code::not_leader_or_follower));
      } else if (const leadership lead = leadership_of(request.services.replicas, t.name, index,
                                                       request.services.config.node_id);
                 !lead.serving) {
        // Not the leader of a replicated partition (docs/cluster.md, "Replication").
        out.partitions.push_back(error_response(index, error_code::not_leader_or_follower));
      } else if (auto e = check_current_leader_epoch(p.current_leader_epoch, lead.leader_epoch);
                 e != error_code::none) {
        out.partitions.push_back(error_response(index, e));
      } else {
        std::lock_guard log_lock(log->mutex());
        out.partitions.push_back(list_one(*log, index, p.timestamp, req.replica_id,
                                          req.isolation_level, version, lead.leader_epoch));
      }
    }
  }
  for (auto& t : unauthorized) reply.topics.push_back(std::move(t));
  co_return encode_response(reply, version);
}

}  // namespace

void register_list_offsets_handler(handler_registry& registry) {
  registry.register_handler(protocol::list_offsets_request::api_key,
                            protocol::list_offsets_request::min_version,
                            protocol::list_offsets_request::max_version, handle_list_offsets);
}

}  // namespace tarn::broker
