// DescribeGroups (key 15): the state, protocol and members of groups.
//
// Versions served: the schema's, 0-6 (as Kafka 4.4). The body is decoded with
// protocol::describe_groups_request and handed to the group coordinator; its answer is encoded
// at the request's version.
// A body that does not decode closes the connection.
// Not supported: quotas; authorization (AuthorizedOperations as the coordinator reports them).
#include "broker/group_handler_util.h"
#include "broker/topic_manager.h"
#include "protocol/messages/describe_groups_request.h"
#include "protocol/messages/describe_groups_response.h"

namespace tarn::broker {

namespace {

asio::awaitable<handler_outcome> handle_describe_groups(request_context& request) {
  coordinator::group_coordinator& groups = *request.services.groups;
  co_return co_await serve_group_request<protocol::describe_groups_request>(
      request, "DescribeGroups",
      [&](const protocol::describe_groups_request& req, int16_t version) {
        return groups.describe_groups(req, version);
      });
}

}  // namespace

void register_describe_groups_handler(handler_registry& registry) {
  registry.register_handler(protocol::describe_groups_request::api_key,
                            protocol::describe_groups_request::min_version,
                            protocol::describe_groups_request::max_version, handle_describe_groups);
}

}  // namespace tarn::broker
