// Kafka's built-in partitioning (KIP-794): keyed records go to murmur2(key) as the Java client
// computes it, keyless records stick to one partition until batch.size bytes went to it.
#pragma once

#include <cstdint>
#include <mutex>
#include <random>
#include <span>

#include "base/strong_types.h"

namespace tarn::client {

// org.apache.kafka.common.utils.Utils.murmur2: MurmurHash2, seed 0x9747b28c, little-endian
// 4-byte blocks, the tail read the way Java reads it. Returns the hash as Java's signed int.
int32_t murmur2(std::span<const uint8_t> data);

// Utils.toPositive: clears the sign bit (not abs(), so INT32_MIN maps to 0).
constexpr int32_t to_positive(int32_t n) { return n & 0x7fffffff; }

// BuiltInPartitioner.partitionForKey. num_partitions must be > 0.
partition_id partition_for_key(std::span<const uint8_t> key, int32_t num_partitions);

// The sticky half of Kafka's BuiltInPartitioner for one topic: every keyless record goes to the
// current partition; after batch.size bytes were produced to it, the next time a new batch
// would be started there (enable_switch) a new partition is drawn uniformly at random from the
// available ones. At twice batch.size the switch happens regardless, bounding the skew when
// batches never fill (e.g. linger.ms sends them early).
//
// Not implemented: the adaptive part (weighting partitions by their brokers' queue sizes) and
// partitioner.availability.timeout.ms; tarn always draws uniformly.
//
// Thread-safe: a mutex guards the state; callers may race, and an update naming a partition
// that is no longer current is ignored (as Java ignores a stale StickyPartitionInfo).
class sticky_partitioner {
 public:
  sticky_partitioner(int32_t batch_size, uint64_t seed);

  // The current partition, drawn on first use or after the partition count changed.
  // `available` holds the partitions with a leader; empty means all of 0..num_partitions-1.
  partition_id current(int32_t num_partitions, std::span<const partition_id> available = {});

  // Records that `appended_bytes` went to `partition`. enable_switch is true when the
  // partition has no open batch with room (Java's allBatchesFull), so switching does not
  // leave a half-filled batch behind.
  void update(partition_id partition, int32_t appended_bytes, bool enable_switch,
              int32_t num_partitions, std::span<const partition_id> available = {});

  int32_t produced_bytes() const;

 private:
  partition_id draw_locked(int32_t num_partitions, std::span<const partition_id> available);

  const int32_t batch_size_;
  mutable std::mutex mutex_;
  std::minstd_rand random_;
  partition_id partition_ = -1;
  int32_t num_partitions_ = 0;
  int32_t produced_bytes_ = 0;
};

}  // namespace tarn::client
