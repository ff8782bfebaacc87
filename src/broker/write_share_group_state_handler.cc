// WriteShareGroupState (key 85): a share-partition leader writes what changed in a
// share-partition's delivery state to the share coordinator (KIP-932). Versions served: 0-1, as
// Kafka 4.4 (listener: broker; v1 carries DeliveryCompleteCount).
//
// Behaviour, as Kafka 4.4's ShareCoordinatorShard.writeState, per share-partition: a negative
// partition, leader epoch or state epoch is INVALID_REQUEST, a share-partition without state
// INVALID_REQUEST ("Write operation on uninitialized share partition not allowed."), a leader
// epoch below the recorded one FENCED_LEADER_EPOCH, then a state epoch below the recorded one
// FENCED_STATE_EPOCH, an unknown topic or partition UNKNOWN_TOPIC_OR_PARTITION; else a ShareUpdate
// (a ShareSnapshot after share.coordinator.snapshot.update.records.per.snapshot updates): the
// SPSO never moves back, the batches merge into the state (PersisterStateBatchCombiner), and
// tarn's in-memory share-partition takes the new state before the answer. State batches are
// taken as they come (overlapping ones merge, reversed ones are dropped), as Kafka takes them.
// Request-level checks and authorization (CLUSTER_ACTION): share_state_rpc_util.h.
#include "broker/share_state_rpc_util.h"
#include "broker/topic_manager.h"
#include "protocol/messages/write_share_group_state_request.h"
#include "protocol/messages/write_share_group_state_response.h"

namespace tarn::broker {

namespace {

asio::awaitable<handler_outcome> handle_write_share_group_state(request_context& request) {
  co_return co_await serve_share_state<protocol::write_share_group_state_request,
                                       protocol::write_share_group_state_response>(
      request, "WriteShareGroupState",
      [](coordinator::share_coordinator& shares, std::string_view group_id,
         const coordinator::share_topic_partition& tp, const auto& p, auto& result,
         std::deque<std::string>& texts) {
        coordinator::share_coordinator::state_write w;
        w.state_epoch = p.state_epoch;
        w.leader_epoch = p.leader_epoch;
        w.start_offset = p.start_offset;
        w.delivery_complete_count = p.delivery_complete_count;
        w.batches.reserve(p.state_batches.size());
        for (const auto& b : p.state_batches) {
          w.batches.push_back({b.first_offset, b.last_offset, b.delivery_state, b.delivery_count});
        }
        set_state_error(result, shares.write_state(group_id, tp, w, wall_clock_ms()), texts);
      });
}

}  // namespace

void register_write_share_group_state_handler(handler_registry& registry) {
  registry.register_handler(protocol::write_share_group_state_request::api_key,
                            protocol::write_share_group_state_request::min_version,
                            protocol::write_share_group_state_request::max_version,
                            handle_write_share_group_state);
}

}  // namespace tarn::broker
