// DeleteShareGroupState (key 86): the share coordinator forgets share-partitions' state (KIP-932;
// Kafka's group coordinator sends it for DeleteGroups and DeleteShareGroupOffsets). Versions
// served: 0, as Kafka 4.4 (listener: broker).
//
// Behaviour, as Kafka 4.4's ShareCoordinatorShard.deleteState, per share-partition: a negative
// partition is INVALID_REQUEST, an unknown topic or partition UNKNOWN_TOPIC_OR_PARTITION; a
// share-partition without state is NONE and nothing is written; else tombstones in
// __share_group_state and tarn's in-memory share-partition is gone (the next fetch makes it anew
// from share.auto.offset.reset).
// Request-level checks and authorization (CLUSTER_ACTION): share_state_rpc_util.h.
#include "broker/share_state_rpc_util.h"
#include "broker/topic_manager.h"
#include "protocol/messages/delete_share_group_state_request.h"
#include "protocol/messages/delete_share_group_state_response.h"

namespace tarn::broker {

namespace {

asio::awaitable<handler_outcome> handle_delete_share_group_state(request_context& request) {
  co_return co_await serve_share_state<protocol::delete_share_group_state_request,
                                       protocol::delete_share_group_state_response>(
      request, "DeleteShareGroupState",
      [](coordinator::share_coordinator& shares, std::string_view group_id,
         const coordinator::share_topic_partition& tp, const auto&, auto& result,
         std::deque<std::string>& texts) {
        set_state_error(result, shares.delete_state(group_id, tp, wall_clock_ms()), texts);
      });
}

}  // namespace

void register_delete_share_group_state_handler(handler_registry& registry) {
  registry.register_handler(protocol::delete_share_group_state_request::api_key,
                            protocol::delete_share_group_state_request::min_version,
                            protocol::delete_share_group_state_request::max_version,
                            handle_delete_share_group_state);
}

}  // namespace tarn::broker
