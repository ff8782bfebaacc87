// OffsetFetch (key 9): a group's committed offsets (from v8 for several groups at once).
//
// Versions served: the schema's, 1-10 (as Kafka 4.4; v10 names topics by id). The body is
// decoded with protocol::offset_fetch_request and handed to the group coordinator, which
// answers from its state; its answer is encoded at the request's version.
// A body that does not decode closes the connection.
// Authorization (as Kafka): DESCRIBE on each group, else the group answers only
// GROUP_AUTHORIZATION_FAILED (v1: on each partition asked); DESCRIBE on each topic: a topic
// asked by name or id the client may not describe answers TOPIC_AUTHORIZATION_FAILED on its
// partitions (offset -1), an all-topics fetch leaves it out.
// Not supported: quotas.
#include "broker/group_handler_util.h"
#include "broker/topic_manager.h"
#include "protocol/messages/offset_fetch_request.h"
#include "protocol/messages/offset_fetch_response.h"

namespace tarn::broker {

namespace {

using offset_fetch_reply = protocol::offset_fetch_response;

// The topic's name in a response entry (v10: by id).
template <class Topic>
std::string topic_name(const request_context& request, const Topic& t) {
  if constexpr (requires { t.topic_id; }) {
    if (t.name.empty()) return topic_name_of(request, from_wire(t.topic_id));
  }
  return std::string(t.name);
}

// Applies DESCRIBE on the topics of one group's answer: `all_topics` (the request asked for
// every topic) drops what may not be described, else its partitions fail.
template <class Topic>
void authorize_topics(const request_context& request, std::vector<Topic>& topics, bool all_topics) {
  std::erase_if(topics, [&](Topic& t) {
    const std::string name = topic_name(request, t);
    if (name.empty() ||
        authorize(request, security::acl_operation::describe, security::resource_type::topic, name,
                  static_cast<int32_t>(t.partitions.size()), true, !all_topics)) {
      return false;
    }
    if (all_topics) return true;
    for (auto& p : t.partitions) {
      p.committed_offset = -1;
      p.committed_leader_epoch = -1;
      p.metadata = "";
      p.error_code = protocol::code(protocol::error_code::topic_authorization_failed);
    }
    return false;
  });
}

void authorize_reply(const request_context& request, const protocol::offset_fetch_request& req,
                     int16_t version, offset_fetch_reply& reply) {
  const auto gaf = protocol::code(protocol::error_code::group_authorization_failed);
  if (version < 8) {
    if (!authorize_group(request, security::acl_operation::describe, req.group_id)) {
      if (version >= 2) {
        reply.error_code = gaf;
        reply.topics.clear();
      } else {
        for (auto& t : reply.topics) {
          for (auto& p : t.partitions) {
            p.committed_offset = -1;
            p.metadata = "";
            p.error_code = gaf;
          }
        }
      }
      return;
    }
    authorize_topics(request, reply.topics, !req.topics.has_value());
    return;
  }
  for (size_t i = 0; i < reply.groups.size() && i < req.groups.size(); ++i) {
    auto& g = reply.groups[i];
    if (!authorize_group(request, security::acl_operation::describe, g.group_id)) {
      g.topics.clear();
      g.error_code = gaf;
      continue;
    }
    authorize_topics(request, g.topics, !req.groups[i].topics.has_value());
  }
}

asio::awaitable<handler_outcome> handle_offset_fetch(request_context& request) {
  coordinator::group_coordinator& groups = *request.services.groups;
  co_return co_await serve_group_request<protocol::offset_fetch_request>(
      request, "OffsetFetch", [&](const protocol::offset_fetch_request& req, int16_t version) {
        auto reply = groups.offset_fetch(req, version, wall_clock_ms());
        if (request.services.authorizer != nullptr)
          authorize_reply(request, req, version, reply.message);
        return reply;
      });
}

}  // namespace

void register_offset_fetch_handler(handler_registry& registry) {
  registry.register_handler(protocol::offset_fetch_request::api_key,
                            protocol::offset_fetch_request::min_version,
                            protocol::offset_fetch_request::max_version, handle_offset_fetch);
}

}  // namespace tarn::broker
