// ShareGroupDescribe (key 77): share groups, their members and assignments (KIP-932). Versions
// served: 1, as Kafka 4.4. A group that is not a share group is GROUP_ID_NOT_FOUND.
// A body that does not decode closes the connection.
// Not supported: quotas, IncludeAuthorizedOperations (AuthorizedOperations stays Kafka's
// "not requested" value), authorization (DESCRIBE on the group is not checked).
#include "broker/group_handler_util.h"
#include "coordinator/share_coordinator.h"
#include "protocol/messages/share_group_describe_request.h"
#include "protocol/messages/share_group_describe_response.h"

namespace tarn::broker {

namespace {

asio::awaitable<handler_outcome> handle_share_group_describe(request_context& request) {
  coordinator::share_coordinator& shares = *request.services.shares;
  co_return co_await serve_group_request<protocol::share_group_describe_request>(
      request, "ShareGroupDescribe",
      [&](const protocol::share_group_describe_request& req, int16_t) {
        return shares.describe(req);
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
