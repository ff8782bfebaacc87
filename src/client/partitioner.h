// Kafka's built-in partitioning (KIP-794): keyed records go to murmur2(key) as the Java client
// computes it, keyless records stick to one partition until batch.size bytes went to it.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <random>
#include <span>
#include <vector>

#include "base/strong_types.h"

namespace tarn::client {

// org.apache.kafka.common.utils.Utils.murmur2: MurmurHash2, seed 0x9747b28c, little-endian
// 4-byte blocks, the tail read the way Java reads it. Returns the hash as Java's signed int.
int32_t murmur2(std::span<const uint8_t> data);

// Utils.toPositive: clears the sign bit (not abs(), so INT32_MIN maps to 0).
constexpr int32_t to_positive(int32_t n) { return n & 0x7fffffff; }

// BuiltInPartitioner.partitionForKey. num_partitions must be > 0.
partition_id partition_for_key(std::span<const uint8_t> key, int32_t num_partitions);

// KIP-794's adaptive partitioning (BuiltInPartitioner.updatePartitionLoadStats): from the queue
// sizes (batches waiting) of a topic's partitions, a cumulative frequency table in which each
// partition weighs (largest queue + 1 - its queue), so partitions whose brokers drain slowly are
// drawn less often. `queue_sizes` and `partition_ids` hold the partitions with a leader, of which
// the first `length` are still available (the rest were excluded by
// partitioner.availability.timeout.ms). nullopt, meaning "draw uniformly", when there are fewer
// than two partitions, none available, or every queue has the same size and none was excluded.
struct partition_load {
  std::vector<int32_t> cumulative_frequency;  // ascending; the last entry is the total weight
  std::vector<partition_id> partition_ids;    // same length
  bool operator==(const partition_load&) const = default;
};
std::optional<partition_load> partition_load_from_queue_sizes(
    std::span<const int32_t> queue_sizes, std::span<const partition_id> partition_ids,
    size_t length);

// The sticky half of Kafka's BuiltInPartitioner for one topic: every keyless record goes to the
// current partition; after batch.size bytes were produced to it, the next time a new batch
// would be started there (enable_switch) a new partition is drawn at random: weighted by the
// partition load when the accumulator reported one (set_load), else uniformly from the
// available ones. At twice batch.size the switch happens regardless, bounding the skew when
// batches never fill (e.g. linger.ms sends them early).
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

  // The latest load of the topic's partitions (nullopt: draw uniformly). Thread: the sender.
  void set_load(std::optional<partition_load> load);

 private:
  // Draws a partition and publishes it in current_.
  partition_id draw_locked(int32_t num_partitions, std::span<const partition_id> available);
  partition_id choose_locked(int32_t num_partitions, std::span<const partition_id> available);
  static constexpr uint64_t pack(int32_t num_partitions, partition_id partition) {
    return uint64_t{static_cast<uint32_t>(num_partitions)} << 32 | static_cast<uint32_t>(partition);
  }
  static constexpr uint64_t no_current = ~uint64_t{0};

  const int32_t batch_size_;
  // Draws and the load under the mutex; what every record reads and counts in atomics.
  mutable std::mutex mutex_;
  std::minstd_rand random_;
  partition_id partition_ = -1;
  int32_t num_partitions_ = 0;
  std::optional<partition_load> load_;
  std::atomic<uint64_t> current_{no_current};  // pack(num_partitions_, partition_) once drawn
  std::atomic<int64_t> produced_bytes_{0};
};

}  // namespace tarn::client
