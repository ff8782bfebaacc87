// ListGroups (key 16): every group of this broker, filtered by state (v4+) and type (v5+):
// classic and consumer groups from the group coordinator, share groups (type and protocol type
// "share", state Empty or Stable) from the share coordinator.
//
// Versions served: the schema's, 0-5 (as Kafka 4.4). The body is decoded with
// protocol::list_groups_request and handed to the group coordinator; its answer is encoded at
// the request's version.
// A body that does not decode closes the connection.
// Authorization: as Kafka's KafkaApis (see the handler).
// Not supported: quotas.
#include "broker/group_handler_util.h"
#include "broker/topic_manager.h"
#include "coordinator/share_coordinator.h"
#include "protocol/messages/list_groups_request.h"
#include "protocol/messages/list_groups_response.h"

namespace tarn::broker {

namespace {

asio::awaitable<handler_outcome> handle_list_groups(request_context& request) {
  coordinator::group_coordinator& groups = *request.services.groups;
  co_return co_await serve_group_request<protocol::list_groups_request>(
      request, "ListGroups", [&](const protocol::list_groups_request& req, int16_t version) {
        auto reply = groups.list_groups(req, version);
        if (request.services.shares != nullptr) {
          auto lower = [](std::string_view s) {
            std::string out(s);
            for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            return out;
          };
          bool type_ok = version < 5 || req.types_filter.empty();
          for (auto t : req.types_filter) type_ok = type_ok || lower(t) == "share";
          for (auto& [id, state] : request.services.shares->list_groups()) {
            bool state_ok = version < 4 || req.states_filter.empty();
            for (auto st : req.states_filter) state_ok = state_ok || lower(st) == lower(state);
            if (!type_ok || !state_ok) continue;
            auto& lg = reply.message.groups.emplace_back();
            lg.group_id = reply.arena.keep(id);
            lg.protocol_type = "share";
            lg.group_state = reply.arena.keep(state);
            lg.group_type = "share";
          }
        }
        // As Kafka: every group with DESCRIBE on the cluster, else those the principal may
        // DESCRIBE (no denial logged: a filter, not a request for the group).
        if (request.services.authorizer != nullptr &&
            !authorize_cluster(request, security::acl_operation::describe, false)) {
          std::erase_if(reply.message.groups, [&](const auto& g) {
            return !authorize(request, security::acl_operation::describe,
                              security::resource_type::group, g.group_id, 1, true, false);
          });
        }
        return reply;
      });
}

}  // namespace

void register_list_groups_handler(handler_registry& registry) {
  registry.register_handler(protocol::list_groups_request::api_key,
                            protocol::list_groups_request::min_version,
                            protocol::list_groups_request::max_version, handle_list_groups);
}

}  // namespace tarn::broker
