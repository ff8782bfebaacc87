// OffsetDelete (key 47): deletes committed offsets of partitions a group no longer consumes.
//
// Versions served: the schema's, 0 (as Kafka 4.4). The body is decoded with
// protocol::offset_delete_request and handed to the group coordinator, which decides every
// error and writes the tombstones; its answer is encoded at the request's version, in a cluster
// once they are committed (serve_group_write_request, group_handler_util.h).
// A body that does not decode closes the connection.
// Authorization: as Kafka's KafkaApis (see the handler).
// Not supported: quotas.
#include "broker/group_handler_util.h"
#include "broker/topic_manager.h"
#include "protocol/messages/offset_delete_request.h"
#include "protocol/messages/offset_delete_response.h"

namespace tarn::broker {

namespace {

asio::awaitable<handler_outcome> handle_offset_delete(request_context& request) {
  coordinator::group_coordinator& groups = *request.services.groups;
  co_return co_await serve_group_write_request<protocol::offset_delete_request>(
      request, "OffsetDelete", [&](const protocol::offset_delete_request& req, int16_t version) {
        if (request.services.authorizer == nullptr) {
          return groups.offset_delete(req, version, wall_clock_ms());
        }
        // As Kafka: DELETE on the group (else GROUP_AUTHORIZATION_FAILED), READ on each topic
        // (else its partitions TOPIC_AUTHORIZATION_FAILED, after the others).
        if (!authorize_group(request, security::acl_operation::delete_, req.group_id)) {
          coordinator::owned_message<protocol::offset_delete_response> m;
          m.message.error_code = protocol::code(protocol::error_code::group_authorization_failed);
          return m;
        }
        protocol::offset_delete_request allowed = req;
        std::vector<protocol::offset_delete_request::offset_delete_request_topic> denied;
        std::erase_if(allowed.topics, [&](const auto& t) {
          if (authorize(request, security::acl_operation::read, security::resource_type::topic,
                        t.name, static_cast<int32_t>(t.partitions.size()))) {
            return false;
          }
          denied.push_back(t);
          return true;
        });
        auto reply = groups.offset_delete(allowed, version, wall_clock_ms());
        for (const auto& t : denied) {
          auto& rt = reply.message.topics.emplace_back();
          rt.name = t.name;
          for (const auto& p : t.partitions) {
            auto& rp = rt.partitions.emplace_back();
            rp.partition_index = p.partition_index;
            rp.error_code = protocol::code(protocol::error_code::topic_authorization_failed);
          }
        }
        return reply;
      });
}

}  // namespace

void register_offset_delete_handler(handler_registry& registry) {
  registry.register_handler(protocol::offset_delete_request::api_key,
                            protocol::offset_delete_request::min_version,
                            protocol::offset_delete_request::max_version, handle_offset_delete);
}

}  // namespace tarn::broker
