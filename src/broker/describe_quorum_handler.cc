// DescribeQuorum (key 55): the metadata quorum (kafka-metadata-quorum.sh describe --status and
// --replication, Admin.describeMetadataQuorum).
//
// Versions served: 0-2 (Kafka 4.4's range; every version is flexible). tarn answers as a
// single-node KRaft Kafka 4.4 (process.roles=broker,controller, a static voter set) answers:
// its broker forwards the request to its controller, whose KafkaRaftClient answers
// (handleDescribeQuorumRequest, RaftUtil.singletonDescribeQuorumResponse):
//   - A request that is not exactly one topic `__cluster_metadata` with exactly partition 0:
//     every topic and partition asked about answered UNKNOWN_TOPIC_OR_PARTITION with Kafka's
//     message, top-level error 0 (an empty topic list: an empty answer).
//   - Otherwise `__cluster_metadata` partition 0: this node the leader and the only voter, no
//     observers (a combined node's broker is the voter itself, not an observer).
//       LeaderEpoch 1: the epoch a single voter's first election gives. tarn holds no elections,
//       so it stays 1 (Kafka's grows by one each restart, when the voter elects itself again).
//       HighWatermark and the voter's LogEndOffset: the metadata log's end offset, the offset
//       its next change gets. Kafka's high watermark is exclusive (the offset after the last
//       committed record) and a single voter commits what it appends, so Kafka reports the same
//       number for both; every tarn change is durable (fsynced) when appended, so its end offset
//       is committed in the same sense. A tarn offset counts changes (one entry each), Kafka's
//       counts records, so the two grow at different speeds (docs/metadata.md).
//       The leader's LastFetchTimestamp and LastCaughtUpTimestamp (v1+): now, as Kafka reports
//       for the leader. ReplicaDirectoryId (v2): zero, Kafka's for a static quorum (kraft.version
//       0, no directory ids).
//       Nodes (v2): this node with its advertised listeners (Kafka lists the voters' controller
//       listeners; tarn has no separate controller listener: its metadata is served on these).
//   - A body that does not decode closes the connection.
// No ThrottleTimeMs in this response: a request-quota throttle only mutes the connection.
#include <spdlog/spdlog.h>

#include <string_view>

#include "broker/authorization.h"
#include "broker/handler.h"
#include "broker/topic_handler_util.h"
#include "broker/topic_manager.h"
#include "protocol/error_codes.h"
#include "protocol/messages/describe_quorum_request.h"
#include "protocol/messages/describe_quorum_response.h"

namespace tarn::broker {

namespace {

using protocol::error_code;

constexpr std::string_view metadata_topic = "__cluster_metadata";
constexpr int32_t metadata_partition = 0;
constexpr int32_t single_voter_epoch = 1;

// Kafka's RaftUtil.hasValidTopicPartition: one topic, the metadata topic, one partition, 0.
bool asks_for_metadata_partition(const protocol::describe_quorum_request& req) {
  return req.topics.size() == 1 && req.topics[0].topic_name == metadata_topic &&
         req.topics[0].partitions.size() == 1 &&
         req.topics[0].partitions[0].partition_index == metadata_partition;
}

asio::awaitable<handler_outcome> handle_describe_quorum(request_context& request) {
  using response_type = protocol::describe_quorum_response;
  const int16_t version = request.header.api_version;
  protocol::reader r(request.body());
  auto decoded = protocol::describe_quorum_request::decode(r, version);
  if (!decoded) {
    spdlog::warn("connection {} from {}: DescribeQuorum v{} body does not decode: {}",
                 request.connection.id, request.connection.peer, version,
                 protocol::describe(decoded.error().code));
    co_return close_connection{"bad DescribeQuorum request"};
  }
  // As Kafka: DESCRIBE on the cluster, else CLUSTER_AUTHORIZATION_FAILED.
  if (auto denied = cluster_denied<protocol::describe_quorum_response>(
          request, security::acl_operation::describe)) {
    co_return std::move(*denied);
  }
  response_type reply;
  if (!asks_for_metadata_partition(*decoded)) {
    // DescribeQuorumRequest.getPartitionLevelErrorResponse: the request echoed, each partition
    // with the error.
    const error_code unknown = error_code::unknown_topic_or_partition;
    for (const auto& t : decoded->topics) {
      auto& rt = reply.topics.emplace_back();
      rt.topic_name = t.topic_name;
      for (const auto& p : t.partitions) {
        auto& rp = rt.partitions.emplace_back();
        rp.partition_index = p.partition_index;
        rp.error_code = code(unknown);
        rp.error_message = protocol::describe(unknown).message;
      }
    }
    co_return encode_response(reply, version);
  }
  const int32_t node_id = request.services.config.node_id;
  const int64_t end_offset = request.services.topics->metadata().end_offset();
  const int64_t now = wall_clock_ms();
  auto& topic = reply.topics.emplace_back();
  topic.topic_name = metadata_topic;
  auto& partition = topic.partitions.emplace_back();
  partition.partition_index = metadata_partition;
  partition.leader_id = node_id;
  partition.leader_epoch = single_voter_epoch;
  partition.high_watermark = end_offset;
  auto& voter = partition.current_voters.emplace_back();
  voter.replica_id = node_id;
  voter.log_end_offset = end_offset;
  voter.last_fetch_timestamp = now;
  voter.last_caught_up_timestamp = now;
  auto& node = reply.nodes.emplace_back();
  node.node_id = node_id;
  for (const auto& l : request.services.advertised_listeners) {
    node.listeners.push_back({l.name, l.host, l.port});
  }
  co_return encode_response(reply, version);
}

}  // namespace

void register_describe_quorum_handler(handler_registry& registry) {
  registry.register_handler(protocol::describe_quorum_request::api_key,
                            protocol::describe_quorum_request::min_version,
                            protocol::describe_quorum_request::max_version, handle_describe_quorum);
}

}  // namespace tarn::broker
