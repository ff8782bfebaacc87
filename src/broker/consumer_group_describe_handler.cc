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
        return groups.consumer_group_describe(req, version);
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
