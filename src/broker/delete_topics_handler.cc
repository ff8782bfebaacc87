// DeleteTopics (key 20): deletes topics and their data.
//
// Versions served: 1-6 (Kafka 4.4 serves 1-6). The body is decoded with
// protocol::delete_topics_request.
// Behaviour:
//   - v1-v5 name topics in TopicNames; v6 in Topics, each by name or by topic id.
//   - A deleted topic is gone when the answer is sent: forgotten in the topic metadata file (the
//     commit point), each partition directory renamed to "<dir>.<uuid>-delete" as Kafka does,
//     then removed from disk.
//   - Errors, with Kafka's messages (v5+ carry ErrorMessage): delete.topic.enable=false
//     TOPIC_DELETION_DISABLED; a name or id given twice INVALID_REQUEST; v6 with both a name and
//     an id INVALID_REQUEST; an unknown name UNKNOWN_TOPIC_OR_PARTITION; an unknown id
//     UNKNOWN_TOPIC_ID; a failed file operation KAFKA_STORAGE_ERROR.
//   - The group coordinator is told the deleted topics once they are gone, and deletes the
//     groups' committed offsets of them (Kafka's onPartitionsDeleted), before the answer.
//   - A body that does not decode closes the connection.
//   - The client's controller_mutation_rate quota, one permit a partition of the topic, once
//     the topic is found: strict from v5 (THROTTLING_QUOTA_EXCEEDED with a null message while
//     in debt, the topic kept), permissive before; ThrottleTimeMs the time until it is paid.
// Not supported: timeout_ms (deletion is synchronous).
#include <spdlog/spdlog.h>

#include <deque>
#include <map>

#include "broker/authorization.h"
#include "broker/handler.h"
#include "broker/replica_manager.h"
#include "broker/throttle.h"
#include "broker/topic_handler_util.h"
#include "broker/topic_manager.h"
#include "coordinator/group_coordinator.h"
#include "protocol/error_codes.h"
#include "protocol/messages/delete_topics_request.h"
#include "protocol/messages/delete_topics_response.h"

namespace tarn::broker {

namespace {

using protocol::error_code;
using deletable_topic_result = protocol::delete_topics_response::deletable_topic_result;

// The wire error of a storage failure while deleting a topic.
error_code delete_topics_error(const storage::storage_error& e) {
  switch (e.code) {
    case storage::storage_errc::not_found:
      return error_code::unknown_topic_or_partition;
    case storage::storage_errc::io_error:
    case storage::storage_errc::corrupt:
      return error_code::kafka_storage_error;
    default:
      return error_code::unknown_server_error;
  }
}

struct wanted {
  std::optional<std::string_view> name;
  storage::uuid id;  // zero when asked by name
};

asio::awaitable<handler_outcome> handle_delete_topics(request_context& request) {
  const int16_t version = request.header.api_version;
  protocol::reader r(request.body());
  auto decoded = protocol::delete_topics_request::decode(r, version);
  if (!decoded) {
    spdlog::warn("connection {} from {}: DeleteTopics v{} body does not decode: {}",
                 request.connection.id, request.connection.peer, version,
                 protocol::describe(decoded.error().code));
    co_return close_connection{"bad DeleteTopics request"};
  }
  std::vector<wanted> asked;
  if (version >= 6) {
    for (const auto& t : decoded->topics) asked.push_back({t.name, from_wire(t.topic_id)});
  } else {
    for (std::string_view n : decoded->topic_names) asked.push_back({n, {}});
  }
  std::map<std::string_view, int> name_count;
  std::map<storage::uuid, int> id_count;
  for (const auto& w : asked) {
    if (w.name) ++name_count[*w.name];
    if (!w.id.is_zero()) ++id_count[w.id];
  }

  topic_manager& topics = *request.services.topics;
  protocol::delete_topics_response reply;
  std::deque<std::string> strings;  // backing store of the views in `reply`
  std::vector<std::string> deleted;
  controller_mutation_quota quota(request, 5);
  // Authorization as Kafka's ControllerApis.deleteTopics: DELETE on the cluster allows all;
  // else a name the client may not DESCRIBE is TOPIC_AUTHORIZATION_FAILED before anything says
  // whether it exists, and one it may describe but not DELETE too; by id, a topic it may not
  // delete is TOPIC_AUTHORIZATION_FAILED, named only if it may describe it.
  const bool authorizing = request.services.authorizer != nullptr;
  const bool cluster_delete =
      !authorizing ||
      authorize(request, security::acl_operation::delete_, security::resource_type::cluster,
                security::cluster_resource_name, 1, true, false);
  auto may = [&](security::acl_operation op, std::string_view name) {
    return cluster_delete || authorize(request, op, security::resource_type::topic, name);
  };
  auto guard = topics.control_lock();
  storage::log_manager& logs = topics.logs();
  for (const auto& w : asked) {
    deletable_topic_result result;
    result.name = w.name;
    result.topic_id = to_wire(w.id);
    auto set_error = [&](error_code code, std::string message) {
      result.error_code = static_cast<int16_t>(code);
      result.error_message = strings.emplace_back(std::move(message));
    };
    const storage::topic_info* topic = nullptr;
    if (w.name && !w.id.is_zero()) {
      set_error(error_code::invalid_request, "You may not specify both topic name and topic id.");
    } else if ((w.name && name_count[*w.name] > 1) || (!w.id.is_zero() && id_count[w.id] > 1)) {
      set_error(error_code::invalid_request,
                w.name ? "Duplicate topic name." : "Duplicate topic id.");
    } else if (!request.services.config.delete_topic_enable) {
      set_error(error_code::topic_deletion_disabled,
                std::string(protocol::describe(error_code::topic_deletion_disabled).message));
    } else if (w.name && !may(security::acl_operation::describe, *w.name)) {
      result.error_code = static_cast<int16_t>(error_code::topic_authorization_failed);
      result.error_message = std::nullopt;
    } else if (w.name) {
      topic = logs.find_topic(*w.name);
      // A follower's copy of a replicated topic: only its leader deletes it (docs/cluster.md).
      if (topic != nullptr && request.services.replicas != nullptr &&
          request.services.replicas->follows(topic->name, 0)) {
        topic = nullptr;
      }
      if (topic != nullptr && !may(security::acl_operation::delete_, *w.name)) {
        result.error_code = static_cast<int16_t>(error_code::topic_authorization_failed);
        result.error_message = std::nullopt;
        topic = nullptr;
      } else if (topic == nullptr) {
        set_error(error_code::unknown_topic_or_partition,
                  std::string(protocol::describe(error_code::unknown_topic_or_partition).message));
      }
    } else {
      for (const storage::topic_info* t : logs.topics()) {
        if (t->topic_id == w.id) topic = t;
      }
      if (topic != nullptr && request.services.replicas != nullptr &&
          request.services.replicas->follows(topic->name, 0)) {
        topic = nullptr;
      }
      if (topic == nullptr) {
        set_error(error_code::unknown_topic_id,
                  std::string(protocol::describe(error_code::unknown_topic_id).message));
      } else if (!may(security::acl_operation::delete_, topic->name)) {
        if (may(security::acl_operation::describe, topic->name)) {
          result.name = strings.emplace_back(topic->name);
        }
        result.error_code = static_cast<int16_t>(error_code::topic_authorization_failed);
        result.error_message = std::nullopt;
        topic = nullptr;
      }
    }
    if (topic != nullptr && !quota.record(topic->partitions)) {
      result.name = strings.emplace_back(topic->name);
      result.topic_id = to_wire(topic->topic_id);
      result.error_code = static_cast<int16_t>(error_code::throttling_quota_exceeded);
      result.error_message = std::nullopt;  // Kafka leaves out the code's own message
      topic = nullptr;
    }
    if (topic != nullptr) {
      std::string& name = strings.emplace_back(topic->name);
      result.name = name;
      result.topic_id = to_wire(topic->topic_id);
      const storage::uuid topic_id = topic->topic_id;
      if (auto d = logs.delete_topic(name); d) {
        spdlog::info("deleted topic {} for {}", name, request.connection.peer);
        if (request.services.replicas != nullptr) {
          // Its followers drop their copies when the states go (replica_manager.h).
          if (auto r = request.services.replicas->delete_partition_states(topic_id); !r) {
            spdlog::error("topic {}: partition states not deleted: {}", name, r.error());
          }
        }
        deleted.push_back(name);
        result.error_message = std::nullopt;
      } else {
        spdlog::error("deleting topic {} failed: {}", name, d.error().message);
        set_error(delete_topics_error(d.error()), d.error().message);
      }
    }
    reply.responses.push_back(std::move(result));
  }
  guard.unlock();
  // The deleted topics' committed offsets go too (Kafka's onPartitionsDeleted). After the lock:
  // the coordinator appends the tombstones to __consumer_offsets, which takes it again.
  if (!deleted.empty() && request.services.groups != nullptr) {
    request.services.groups->on_topics_deleted(deleted, wall_clock_ms());
  }
  request.throttle_ms = quota.throttle_ms();
  reply.throttle_time_ms = request.throttle_ms;
  co_return encode_response(reply, version);
}

}  // namespace

void register_delete_topics_handler(handler_registry& registry) {
  registry.register_handler(protocol::delete_topics_request::api_key,
                            protocol::delete_topics_request::min_version,
                            protocol::delete_topics_request::max_version, handle_delete_topics);
}

}  // namespace tarn::broker
