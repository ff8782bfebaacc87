// DescribeGroups (key 15): the state, protocol and members of groups.
//
// Versions served: the schema's, 0-6 (as Kafka 4.4). The body is decoded with
// protocol::describe_groups_request and handed to the group coordinator; its answer is encoded
// at the request's version.
// A share group (which the share coordinator holds, not the group coordinator) is answered as
// Kafka 4.4's GroupMetadataManager.describeGroups answers any group that is not classic: state
// Dead and, from v6, GROUP_ID_NOT_FOUND "Group <id> is not a classic group.".
// A body that does not decode closes the connection.
// Not supported: quotas; authorization (AuthorizedOperations as the coordinator reports them).
#include "broker/group_handler_util.h"
#include "broker/topic_manager.h"
#include "coordinator/share_coordinator.h"
#include "protocol/messages/describe_groups_request.h"
#include "protocol/messages/describe_groups_response.h"

namespace tarn::broker {

namespace {

using describe_reply = coordinator::owned_message<protocol::describe_groups_response>;

// The group coordinator's answer with its share groups' entries as Kafka's.
describe_reply describe(const request_context& request,
                        const protocol::describe_groups_request& req, int16_t version) {
  describe_reply reply = request.services.groups->describe_groups(req, version);
  const coordinator::share_coordinator* shares = request.services.shares;
  if (shares == nullptr || version < 6) return reply;
  for (auto& g : reply.message.groups) {
    if (g.error_code == protocol::code(protocol::error_code::group_id_not_found) &&
        shares->has_group(g.group_id)) {
      g.error_message =
          reply.arena.keep("Group " + std::string(g.group_id) + " is not a classic group.");
    }
  }
  return reply;
}

asio::awaitable<handler_outcome> handle_describe_groups(request_context& request) {
  co_return co_await serve_group_request<protocol::describe_groups_request>(
      request, "DescribeGroups",
      [&](const protocol::describe_groups_request& req, int16_t version) {
        if (request.services.authorizer == nullptr) return describe(request, req, version);
        // As Kafka: DESCRIBE on each group, else GROUP_AUTHORIZATION_FAILED.
        protocol::describe_groups_request allowed = req;
        std::vector<std::string_view> denied;
        std::erase_if(allowed.groups, [&](std::string_view g) {
          if (authorize_group(request, security::acl_operation::describe, g)) return false;
          denied.push_back(g);
          return true;
        });
        auto reply = describe(request, allowed, version);
        // The refused groups come first (Kafka adds them before it asks the coordinator), and
        // only described groups get their authorized operations.
        std::vector<protocol::describe_groups_response::described_group> all;
        for (std::string_view g : denied) {
          auto& d = all.emplace_back();
          d.group_id = g;
          d.error_code = protocol::code(protocol::error_code::group_authorization_failed);
          if (version >= 6) {
            d.error_message =
                protocol::describe(protocol::error_code::group_authorization_failed).message;
          }
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

void register_describe_groups_handler(handler_registry& registry) {
  registry.register_handler(protocol::describe_groups_request::api_key,
                            protocol::describe_groups_request::min_version,
                            protocol::describe_groups_request::max_version, handle_describe_groups);
}

}  // namespace tarn::broker
