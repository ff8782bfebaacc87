// ReadShareGroupState (key 84): a share-partition leader reads the share-partition's state from the
// share coordinator (KIP-932). Versions served: 0, as Kafka 4.4 (listener: broker).
//
// Behaviour, as Kafka 4.4's ShareCoordinatorShard.readStateAndMaybeUpdateLeaderEpoch, per
// share-partition: a negative partition or leader epoch is INVALID_REQUEST, a share-partition
// without state INVALID_REQUEST ("Read operation on uninitialized share partition not
// allowed."), a leader epoch below the recorded one FENCED_LEADER_EPOCH, an unknown topic or
// partition UNKNOWN_TOPIC_OR_PARTITION; else the state epoch, SPSO and state batches, and a leader
// epoch above the recorded one is written (a ShareUpdate), fencing the leaders before it.
// Request-level checks and authorization (CLUSTER_ACTION): share_state_rpc_util.h.
#include "broker/share_state_rpc_util.h"
#include "broker/topic_manager.h"
#include "protocol/messages/read_share_group_state_request.h"
#include "protocol/messages/read_share_group_state_response.h"

namespace tarn::broker {

namespace {

using response_t = protocol::read_share_group_state_response;

asio::awaitable<handler_outcome> handle_read_share_group_state(request_context& request) {
  co_return co_await serve_share_state<protocol::read_share_group_state_request, response_t>(
      request, "ReadShareGroupState",
      [](coordinator::share_coordinator& shares, std::string_view group_id,
         const coordinator::share_topic_partition& tp, const auto& p, auto& result,
         std::deque<std::string>& texts) {
        const auto answer = shares.read_state(group_id, tp, p.leader_epoch, wall_clock_ms());
        set_state_error(result, answer, texts);
        if (answer.error != protocol::error_code::none) {
          // Kafka's toErrorResponseData: no state.
          result.state_epoch = 0;
          result.start_offset = 0;
          return;
        }
        result.state_epoch = answer.state.state_epoch;
        result.start_offset = answer.state.start_offset;
        for (const auto& b : answer.state.state_batches) {
          result.state_batches.push_back(
              {b.first_offset, b.last_offset, b.delivery_state, b.delivery_count});
        }
      });
}

}  // namespace

void register_read_share_group_state_handler(handler_registry& registry) {
  registry.register_handler(protocol::read_share_group_state_request::api_key,
                            protocol::read_share_group_state_request::min_version,
                            protocol::read_share_group_state_request::max_version,
                            handle_read_share_group_state);
}

}  // namespace tarn::broker
