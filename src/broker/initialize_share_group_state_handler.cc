// InitializeShareGroupState (key 83): sets a share-partition's state epoch and start offset in the
// share coordinator (KIP-932; Kafka's group coordinator sends it before a share group uses a
// partition). Versions served: 0, as Kafka 4.4 (listener: broker).
//
// Behaviour, as Kafka 4.4's ShareCoordinatorShard.initializeState, per share-partition: a negative
// partition or state epoch is INVALID_REQUEST (with Kafka's texts), a state epoch below the
// recorded one FENCED_STATE_EPOCH, a topic or partition the broker does not have
// UNKNOWN_TOPIC_OR_PARTITION; else a new ShareSnapshot (the next snapshot epoch, leader epoch 0,
// no batches) in __share_group_state, and tarn's in-memory share-partition restarts from it.
// Request-level checks and authorization (CLUSTER_ACTION): share_state_rpc_util.h.
#include "broker/share_state_rpc_util.h"
#include "broker/topic_manager.h"
#include "protocol/messages/initialize_share_group_state_request.h"
#include "protocol/messages/initialize_share_group_state_response.h"

namespace tarn::broker {

namespace {

asio::awaitable<handler_outcome> handle_initialize_share_group_state(request_context& request) {
  co_return co_await serve_share_state<protocol::initialize_share_group_state_request,
                                       protocol::initialize_share_group_state_response>(
      request, "InitializeShareGroupState",
      [](coordinator::share_coordinator& shares, std::string_view group_id,
         const coordinator::share_topic_partition& tp, const auto& p, auto& result,
         std::deque<std::string>& texts) {
        set_state_error(
            result,
            shares.initialize_state(group_id, tp, p.state_epoch, p.start_offset, wall_clock_ms()),
            texts);
      });
}

}  // namespace

void register_initialize_share_group_state_handler(handler_registry& registry) {
  registry.register_handler(protocol::initialize_share_group_state_request::api_key,
                            protocol::initialize_share_group_state_request::min_version,
                            protocol::initialize_share_group_state_request::max_version,
                            handle_initialize_share_group_state);
}

}  // namespace tarn::broker
