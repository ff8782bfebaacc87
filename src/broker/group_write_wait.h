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
// meanwhile, COORDINATOR_NOT_AVAILABLE after offsets.commit.timeout.ms (Kafka's mapping of
// NOT_LEADER_OR_FOLLOWER and REQUEST_TIMED_OUT for the group APIs).
asio::awaitable<protocol::error_code> await_group_write_committed(request_context& request,
                                                                  std::string_view group_id);

// The same wait for any coordinator's partition (the transaction coordinator's of
// __transaction_state), bounded by `timeout_ms`.
asio::awaitable<protocol::error_code> await_coordinator_write_committed(request_context& request,
                                                                        std::string topic,
                                                                        int32_t partition,
                                                                        int64_t timeout_ms);

}  // namespace tarn::broker
