// ShareGroupDescribe (key 77): share groups, their members and assignments (KIP-932). Versions
// served: 1, as Kafka 4.4. A group that is not a share group is GROUP_ID_NOT_FOUND.
//
// Authorization, as Kafka 4.4's KafkaApis.handleShareGroupDescribe: DESCRIBE on each group, else
// its entry is GROUP_AUTHORIZATION_FAILED (refused groups come first, as Kafka adds them before
// it asks the coordinator); with an authorizer, a described group whose members are assigned a
// topic the principal may not DESCRIBE is answered TOPIC_AUTHORIZATION_FAILED without members.
// IncludeAuthorizedOperations sets AuthorizedOperations of the groups described without error.
// A body that does not decode closes the connection.
// Not supported: quotas.
#include <set>

#include "broker/group_handler_util.h"
#include "coordinator/share_coordinator.h"
#include "protocol/messages/share_group_describe_request.h"
#include "protocol/messages/share_group_describe_response.h"

namespace tarn::broker {

namespace {

using protocol::error_code;
using described_group = protocol::share_group_describe_response::described_group;

asio::awaitable<handler_outcome> handle_share_group_describe(request_context& request) {
  coordinator::share_coordinator& shares = *request.services.shares;
  co_return co_await serve_group_request<protocol::share_group_describe_request>(
      request, "ShareGroupDescribe",
      [&](const protocol::share_group_describe_request& req, int16_t) {
        protocol::share_group_describe_request allowed = req;
        std::vector<std::string_view> denied;
        std::erase_if(allowed.group_ids, [&](std::string_view g) {
          if (authorize_group(request, security::acl_operation::describe, g)) return false;
          denied.push_back(g);
          return true;
        });
        auto reply = shares.describe(allowed);
        std::vector<described_group> all;
        for (std::string_view g : denied) {
          auto& d = all.emplace_back();
          d.group_id = g;
          d.error_code = protocol::code(error_code::group_authorization_failed);
        }
        for (auto& g : reply.message.groups) {
          if (req.include_authorized_operations && g.error_code == 0) {
            g.authorized_operations =
                authorized_operations(request, security::resource_type::group, g.group_id);
          }
          all.push_back(std::move(g));
        }
        if (request.services.authorizer != nullptr) {
          // Clients are not shown assignments of topics they may not DESCRIBE (each topic asked
          // once).
          std::set<std::string_view> names;
          for (const auto& g : all) {
            for (const auto& m : g.members) {
              for (const auto& tp : m.assignment.topic_partitions) names.insert(tp.topic_name);
            }
          }
          std::set<std::string_view> refused;
          for (std::string_view t : names) {
            if (!authorize(request, security::acl_operation::describe,
                           security::resource_type::topic, t)) {
              refused.insert(t);
            }
          }
          for (auto& g : all) {
            bool hidden = false;
            for (const auto& m : g.members) {
              for (const auto& tp : m.assignment.topic_partitions) {
                hidden = hidden || refused.count(tp.topic_name) > 0;
              }
            }
            if (!hidden) continue;
            described_group d;
            d.group_id = g.group_id;
            d.error_code = protocol::code(error_code::topic_authorization_failed);
            d.error_message =
                "The group has described topic(s) that the client is not authorized to describe.";
            g = std::move(d);
          }
        }
        reply.message.groups = std::move(all);
        return reply;
      });
}

}  // namespace

void register_share_group_describe_handler(handler_registry& registry) {
  registry.register_handler(protocol::share_group_describe_request::api_key,
                            protocol::share_group_describe_request::min_version,
                            protocol::share_group_describe_request::max_version,
                            handle_share_group_describe);
}

}  // namespace tarn::broker
