// ReadShareGroupStateSummary (key 87): a share-partition's epochs, SPSO and delivery-complete count
// without its batches (KIP-932; Kafka's group coordinator reads it for DescribeShareGroupOffsets).
// Versions served: 0-1, as Kafka 4.4 (listener: broker; v1 answers DeliveryCompleteCount).
//
// Behaviour, as Kafka 4.4's ShareCoordinatorShard.readStateSummary, per share-partition: a
// negative partition is INVALID_REQUEST, an unknown topic or partition
// UNKNOWN_TOPIC_OR_PARTITION; a share-partition without state is NONE with SPSO -1,
// DeliveryCompleteCount -1 and epochs 0; the request's leader epoch is not checked (Kafka's
// neither). Request-level checks and authorization (CLUSTER_ACTION): share_state_rpc_util.h.
#include "broker/share_state_rpc_util.h"
#include "protocol/messages/read_share_group_state_summary_request.h"
#include "protocol/messages/read_share_group_state_summary_response.h"

namespace tarn::broker {

namespace {

asio::awaitable<handler_outcome> handle_read_share_group_state_summary(request_context& request) {
  co_return co_await serve_share_state<protocol::read_share_group_state_summary_request,
                                       protocol::read_share_group_state_summary_response>(
      request, "ReadShareGroupStateSummary",
      [](coordinator::share_coordinator& shares, std::string_view group_id,
         const coordinator::share_topic_partition& tp, const auto&, auto& result,
         std::deque<std::string>& texts) {
        const auto answer = shares.read_state_summary(group_id, tp);
        set_state_error(result, answer, texts);
        if (answer.error != protocol::error_code::none) return;
        result.state_epoch = answer.state.state_epoch;
        result.leader_epoch = answer.state.leader_epoch;
        result.start_offset = answer.state.start_offset;
        result.delivery_complete_count = answer.state.delivery_complete_count;
      });
}

}  // namespace

void register_read_share_group_state_summary_handler(handler_registry& registry) {
  registry.register_handler(protocol::read_share_group_state_summary_request::api_key,
                            protocol::read_share_group_state_summary_request::min_version,
                            protocol::read_share_group_state_summary_request::max_version,
                            handle_read_share_group_state_summary);
}

}  // namespace tarn::broker
