// In a cluster, a group coordinator's write is answered only once it is committed: the wait for
// the high watermark of the group's partition of __consumer_offsets (docs/cluster.md,
// "Coordinators"), in the waiting room acks=all produces use (fetch_waiters).
#pragma once

#include <asio/awaitable.hpp>
#include <cstdint>
#include <string>
#include <string_view>

#include "broker/handler.h"
#include "protocol/error_codes.h"

namespace tarn::broker {

// After the coordinator answered a request that wrote to the group's partition: waits until the
// partition's high watermark reaches the log end offset it has now (everything written so far,
// the request's records included), as Kafka's coordinator runtime appends with acks=-1 and
// answers when the high watermark passes the batch. NONE at once on a single node and for a
// partition of one replica; NOT_COORDINATOR when this broker stops leading the partition
// meanwhile, COORDINATOR_NOT_AVAILABLE after offsets.commit.timeout.ms or when the ISR that
// moved the high watermark is below min.insync.replicas (Kafka's mapping of
// NOT_LEADER_OR_FOLLOWER, REQUEST_TIMED_OUT and NOT_ENOUGH_REPLICAS for the group APIs,
// CoordinatorOperationExceptionHelper.handleOperationException). Every group API that writes
// (group_handler_util.h, serve_group_write_request) and the share coordinator's group records
// wait here; what waits for nothing it wrote returns as soon as earlier writes are committed,
// as Kafka's runtime holds an answer behind the writes before it.
asio::awaitable<protocol::error_code> await_group_write_committed(request_context& request,
                                                                  std::string_view group_id);

// The same wait for any coordinator's partition (the transaction coordinator's of
// __transaction_state), bounded by `timeout_ms`.
asio::awaitable<protocol::error_code> await_coordinator_write_committed(request_context& request,
                                                                        std::string topic,
                                                                        int32_t partition,
                                                                        int64_t timeout_ms);

}  // namespace tarn::broker
