// ElectLeaders (key 43): preferred or unclean leader election (kafka-leader-election.sh,
// Admin.electLeaders), answered as a one-broker Kafka 4.4 cluster answers: every partition's
// only replica is its leader, so no election is ever needed.
//
// Versions served: 0-2 (Kafka 4.4's range; v2 flexible). Behaviour, as Kafka 4.4's controller
// (ReplicationControlManager.electLeaders / electLeader) answers a broker's forwarded request:
//   - ElectionType (v1+) 0 PREFERRED or 1 UNCLEAN; any other: Kafka's InvalidRequestException
//     "Unknown election type N", i.e. top-level INVALID_REQUEST (v1+) and every asked partition
//     INVALID_REQUEST with that message.
//   - An asked partition: an unknown topic UNKNOWN_TOPIC_OR_PARTITION "No such topic as <t>",
//     an unknown index "No such partition as <t>-<p>"; else ELECTION_NOT_NEEDED with Kafka's
//     message (the preferred replica leads; for UNCLEAN: there is a leader). In request order,
//     duplicates included.
//   - TopicPartitions null: every topic, each with no partition results (Kafka leaves out the
//     partitions whose election was not needed). Topics sorted by name (Kafka: hash order).
//   - Top-level ErrorCode NONE; TimeoutMs ignored (nothing to wait for).
//   - A body that does not decode closes the connection.
// Authorization: ALTER on the cluster (CLUSTER_AUTHORIZATION_FAILED at the top and on each asked
// partition).
// Not supported: quotas.
#include <spdlog/spdlog.h>

#include <deque>
#include <string>

#include "broker/authorization.h"
#include "broker/handler.h"
#include "broker/topic_handler_util.h"
#include "broker/topic_manager.h"
#include "protocol/error_codes.h"
#include "protocol/messages/elect_leaders_request.h"
#include "protocol/messages/elect_leaders_response.h"

namespace tarn::broker {

namespace {

using protocol::error_code;
using election_result = protocol::elect_leaders_response::partition_result_data;

constexpr int8_t election_preferred = 0;  // org.apache.kafka.common.ElectionType
constexpr int8_t election_unclean = 1;

asio::awaitable<handler_outcome> handle_elect_leaders(request_context& request) {
  const int16_t version = request.header.api_version;
  protocol::reader r(request.body());
  auto decoded = protocol::elect_leaders_request::decode(r, version);
  if (!decoded) {
    spdlog::warn("connection {} from {}: ElectLeaders v{} body does not decode: {}",
                 request.connection.id, request.connection.peer, version,
                 protocol::describe(decoded.error().code));
    co_return close_connection{"bad ElectLeaders request"};
  }
  const auto& req = *decoded;
  // As Kafka: ALTER on the cluster, else CLUSTER_AUTHORIZATION_FAILED at the top and on every
  // asked partition (ElectLeadersRequest.getErrorResponse).
  if (request.services.authorizer != nullptr &&
      !authorize_cluster(request, security::acl_operation::alter)) {
    const auto e = error_code::cluster_authorization_failed;
    protocol::elect_leaders_response denied;
    denied.error_code = code(e);
    if (req.topic_partitions) {
      for (const auto& t : *req.topic_partitions) {
        auto& out = denied.replica_election_results.emplace_back();
        out.topic = t.topic;
        for (int32_t p : t.partitions) {
          out.partition_result.push_back({p, code(e), protocol::describe(e).message});
        }
      }
    }
    co_return encode_response(denied, version);
  }
  protocol::elect_leaders_response reply;
  std::deque<std::string> messages;  // the error messages the reply points to

  if (req.election_type != election_preferred && req.election_type != election_unclean) {
    const std::string& message =
        messages.emplace_back("Unknown election type " + std::to_string(req.election_type));
    reply.error_code = code(error_code::invalid_request);
    if (req.topic_partitions) {
      for (const auto& t : *req.topic_partitions) {
        auto& out = reply.replica_election_results.emplace_back();
        out.topic = t.topic;
        for (int32_t p : t.partitions) {
          out.partition_result.push_back({p, code(error_code::invalid_request), message});
        }
      }
    }
    co_return encode_response(reply, version);
  }

  topic_manager& topics = *request.services.topics;
  auto guard = topics.control_lock();
  storage::log_manager& logs = topics.logs();
  if (!req.topic_partitions) {
    for (const storage::topic_info* t : logs.topics()) {
      reply.replica_election_results.emplace_back().topic = t->name;
    }
    std::sort(reply.replica_election_results.begin(), reply.replica_election_results.end(),
              [](const auto& a, const auto& b) { return a.topic < b.topic; });
  } else {
    const std::string_view not_needed = protocol::describe(error_code::election_not_needed).message;
    for (const auto& t : *req.topic_partitions) {
      auto& out = reply.replica_election_results.emplace_back();
      out.topic = t.topic;
      const storage::topic_info* info = logs.find_topic(t.topic);
      for (int32_t p : t.partitions) {
        election_result e{p, code(error_code::election_not_needed), not_needed};
        if (info == nullptr) {
          e.error_code = code(error_code::unknown_topic_or_partition);
          e.error_message = messages.emplace_back("No such topic as " + std::string(t.topic));
        } else if (p < 0 || p >= info->partitions) {
          e.error_code = code(error_code::unknown_topic_or_partition);
          e.error_message = messages.emplace_back("No such partition as " + std::string(t.topic) +
                                                  "-" + std::to_string(p));
        }
        out.partition_result.push_back(e);
      }
    }
  }
  // Encoded under the lock: the names of an all-topics answer point into the topic map.
  response out = encode_response(reply, version);
  guard.unlock();
  co_return out;
}

}  // namespace

void register_elect_leaders_handler(handler_registry& registry) {
  registry.register_handler(protocol::elect_leaders_request::api_key,
                            protocol::elect_leaders_request::min_version,
                            protocol::elect_leaders_request::max_version, handle_elect_leaders);
}

}  // namespace tarn::broker
