// ConsumerGroupDescribe (key 69): KIP-848 consumer groups, their members, subscriptions and
// assignments.
//
// Versions served: the schema's, 0-1 (as Kafka 4.4). The body is decoded with
// protocol::consumer_group_describe_request and handed to the group coordinator; its answer is
// encoded at the request's version.
// A body that does not decode closes the connection.
// Not supported: quotas; authorization (AuthorizedOperations as the coordinator reports them).
#include "broker/group_handler_util.h"
#include "broker/topic_manager.h"
#include "protocol/messages/consumer_group_describe_request.h"
#include "protocol/messages/consumer_group_describe_response.h"

namespace tarn::broker {

namespace {

asio::awaitable<handler_outcome> handle_consumer_group_describe(request_context& request) {
  coordinator::group_coordinator& groups = *request.services.groups;
  co_return co_await serve_group_request<protocol::consumer_group_describe_request>(
      request, "ConsumerGroupDescribe",
      [&](const protocol::consumer_group_describe_request& req, int16_t version) {
        if (request.services.authorizer == nullptr) {
          return groups.consumer_group_describe(req, version);
        }
        // As Kafka: DESCRIBE on each group, else GROUP_AUTHORIZATION_FAILED.
        protocol::consumer_group_describe_request allowed = req;
        std::vector<std::string_view> denied;
        std::erase_if(allowed.group_ids, [&](std::string_view g) {
          if (authorize_group(request, security::acl_operation::describe, g)) return false;
          denied.push_back(g);
          return true;
        });
        auto reply = groups.consumer_group_describe(allowed, version);
        // The refused groups come first here (Kafka adds them before it asks the coordinator),
        // and only described groups get their authorized operations.
        std::vector<protocol::consumer_group_describe_response::described_group> all;
        for (std::string_view g : denied) {
          auto& d = all.emplace_back();
          d.group_id = g;
          d.error_code = protocol::code(protocol::error_code::group_authorization_failed);
        }
        for (auto& g : reply.message.groups) {
          if (req.include_authorized_operations && g.error_code == 0) {
            g.authorized_operations =
                authorized_operations(request, security::resource_type::group, g.group_id);
          }
          all.push_back(std::move(g));
        }
        reply.message.groups = std::move(all);
        return reply;
      });
}

}  // namespace

void register_consumer_group_describe_handler(handler_registry& registry) {
  registry.register_handler(protocol::consumer_group_describe_request::api_key,
                            protocol::consumer_group_describe_request::min_version,
                            protocol::consumer_group_describe_request::max_version,
                            handle_consumer_group_describe);
}

}  // namespace tarn::broker
