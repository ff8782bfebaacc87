// Plain aliases for Kafka's domain integers, named as Kafka names them. Kept as aliases (not
// wrapper classes) so the wire codecs stay simple; the names carry the meaning.
#pragma once

#include <cstdint>

namespace tarn {

using offset_t = int64_t;          // a record's position in a partition
using partition_id = int32_t;      // partition index within a topic
using producer_id_t = int64_t;     // -1 when the producer is not idempotent
using producer_epoch_t = int16_t;  // -1 when the producer is not idempotent
using sequence_t = int32_t;        // per-partition record sequence of an idempotent producer
using leader_epoch_t = int32_t;    // partitionLeaderEpoch
using timestamp_ms = int64_t;      // milliseconds since the Unix epoch

}  // namespace tarn
