// OffsetForLeaderEpoch (key 23): where a leader epoch ends in a partition's log, from its leader
// epoch cache (the Java consumer validates its position with it after a metadata change, KIP-320;
// franz-go and librdkafka too; followers use it to truncate).
//
// Versions served: 2-4 (Kafka 4.4's range; v4 flexible). Behaviour, as Kafka 4.4's
// ReplicaManager.lastOffsetForLeaderEpoch and Partition.lastOffsetForLeaderEpoch:
//   - An unknown topic or partition index: UNKNOWN_TOPIC_OR_PARTITION; a partition of a known
//     topic without a loaded log, or one this broker does not serve as leader in a cluster:
//     NOT_LEADER_OR_FOLLOWER.
//   - CurrentLeaderEpoch other than -1 (no check): below the partition's leader epoch (0 on a
//     single node, the state's in a cluster) FENCED_LEADER_EPOCH, above it UNKNOWN_LEADER_EPOCH.
//   - Otherwise the end offset of LeaderEpoch from the leader-epoch-checkpoint entries
//     (storage/leader_epoch_lookup.h: the latest epoch ends at the log end offset, an unknown
//     epoch as LeaderEpochFileCache.endOffsetFor answers, -1/-1 when undefined; a partition
//     without a batch of its current leader epoch as if Kafka's become-leader entry were there:
//     topic_handler_util.h's leader_epoch_cache_of).
//   - ReplicaId (v3+) changes nothing: Kafka answers consumers (-1) and brokers alike (only the
//     leader answers).
//   - Topics and partitions answered in request order, duplicates included.
//   - A body that does not decode closes the connection.
// Not supported: authorization, quotas.
#include <spdlog/spdlog.h>

#include <vector>

#include "broker/authorization.h"
#include "broker/handler.h"
#include "broker/replica_manager.h"
#include "broker/topic_handler_util.h"
#include "broker/topic_manager.h"
#include "protocol/error_codes.h"
#include "protocol/messages/offset_for_leader_epoch_request.h"
#include "protocol/messages/offset_for_leader_epoch_response.h"
#include "storage/leader_epoch_lookup.h"

namespace tarn::broker {

namespace {

using protocol::error_code;
using epoch_end_offset = protocol::offset_for_leader_epoch_response::epoch_end_offset;

epoch_end_offset end_offset_of(const storage::topic_info* info, storage::log* log,
                               int32_t partition, int32_t current_leader_epoch,
                               int32_t leader_epoch, const leadership& lead) {
  epoch_end_offset out;
  out.partition = partition;
  if (info == nullptr || partition < 0 || partition >= info->partitions) {
    out.error_code = code(error_code::unknown_topic_or_partition);
    return out;
  }
  if (log == nullptr) {
    out.error_code = code(error_code::not_leader_or_follower);
    return out;
  }
  if (!lead.serving) {  // only the leader answers (fetchOnlyFromLeader)
    out.error_code = code(error_code::not_leader_or_follower);
    return out;
  }
  out.error_code = code(check_current_leader_epoch(current_leader_epoch, lead.leader_epoch));
  if (out.error_code != 0) return out;
  std::lock_guard log_lock(log->mutex());  // the epoch cache changes with appends
  auto found = storage::end_offset_for_epoch(leader_epoch_cache_of(*log, lead.leader_epoch),
                                             leader_epoch, log->log_end_offset());
  out.leader_epoch = found.epoch;
  out.end_offset = found.end_offset;
  return out;
}

asio::awaitable<handler_outcome> handle_offset_for_leader_epoch(request_context& request) {
  const int16_t version = request.header.api_version;
  protocol::reader r(request.body());
  auto decoded = protocol::offset_for_leader_epoch_request::decode(r, version);
  if (!decoded) {
    spdlog::warn("connection {} from {}: OffsetForLeaderEpoch v{} body does not decode: {}",
                 request.connection.id, request.connection.peer, version,
                 protocol::describe(decoded.error().code));
    co_return close_connection{"bad OffsetForLeaderEpoch request"};
  }
  protocol::offset_for_leader_epoch_response reply;
  reply.topics.reserve(decoded->topics.size());
  // Authorization as Kafka: a replica's request needs CLUSTER_ACTION (else every partition
  // CLUSTER_AUTHORIZATION_FAILED); a consumer's DESCRIBE on each topic (else its partitions
  // TOPIC_AUTHORIZATION_FAILED, after the others).
  const bool authorizing = request.services.authorizer != nullptr;
  const bool cluster_denied = authorizing && decoded->replica_id >= 0 &&
                              !authorize_cluster(request, security::acl_operation::cluster_action);
  std::vector<protocol::offset_for_leader_epoch_response::offset_for_leader_topic_result> denied;
  topic_manager& topics = *request.services.topics;
  auto guard = topics.read_lock();
  storage::log_manager& logs = topics.logs();
  for (const auto& t : decoded->topics) {
    if (cluster_denied || (authorizing && !authorize(request, security::acl_operation::describe,
                                                     security::resource_type::topic, t.topic,
                                                     static_cast<int32_t>(t.partitions.size())))) {
      auto& out = (cluster_denied ? reply.topics : denied).emplace_back();
      out.topic = t.topic;
      for (const auto& p : t.partitions) {
        epoch_end_offset e;
        e.partition = p.partition;
        e.error_code = code(cluster_denied ? error_code::cluster_authorization_failed
                                           : error_code::topic_authorization_failed);
        out.partitions.push_back(e);
      }
      continue;
    }
    auto& out = reply.topics.emplace_back();
    out.topic = t.topic;
    out.partitions.reserve(t.partitions.size());
    const storage::topic_info* info = logs.find_topic(t.topic);
    for (const auto& p : t.partitions) {
      storage::log* log = info != nullptr ? logs.get_log(t.topic, p.partition) : nullptr;
      const leadership lead = leadership_of(request.services.replicas, t.topic, p.partition,
                                            request.services.config.node_id);
      out.partitions.push_back(
          end_offset_of(info, log, p.partition, p.current_leader_epoch, p.leader_epoch, lead));
    }
  }
  guard.unlock();
  for (auto& t : denied) reply.topics.push_back(std::move(t));
  co_return encode_response(reply, version);
}

}  // namespace

void register_offset_for_leader_epoch_handler(handler_registry& registry) {
  registry.register_handler(protocol::offset_for_leader_epoch_request::api_key,
                            protocol::offset_for_leader_epoch_request::min_version,
                            protocol::offset_for_leader_epoch_request::max_version,
                            handle_offset_for_leader_epoch);
}

}  // namespace tarn::broker
