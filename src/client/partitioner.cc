// Keyed and sticky partitioning, matching kafka-clients 4.4.0 (golden values in
// tests/fixtures/client/murmur2.txt, produced by tests/java/Murmur2Golden.java).
#include "client/partitioner.h"

#include <algorithm>
#include <cstdint>

namespace tarn::client {

int32_t murmur2(std::span<const uint8_t> data) {
  // Unsigned arithmetic gives Java's wrapping int multiplication without signed overflow.
  constexpr uint32_t seed = 0x9747b28c;
  constexpr uint32_t m = 0x5bd1e995;
  constexpr int r = 24;
  const size_t length = data.size();
  uint32_t h = seed ^ static_cast<uint32_t>(length);
  const size_t blocks = length / 4;
  for (size_t i = 0; i < blocks; ++i) {
    const uint8_t* p = data.data() + i * 4;
    uint32_t k = static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 |
                 static_cast<uint32_t>(p[2]) << 16 | static_cast<uint32_t>(p[3]) << 24;
    k *= m;
    k ^= k >> r;
    k *= m;
    h *= m;
    h ^= k;
  }
  const uint8_t* tail = data.data() + (length & ~size_t{3});
  switch (length % 4) {
    case 3:
      h ^= static_cast<uint32_t>(tail[2]) << 16;
      [[fallthrough]];
    case 2:
      h ^= static_cast<uint32_t>(tail[1]) << 8;
      [[fallthrough]];
    case 1:
      h ^= tail[0];
      h *= m;
  }
  h ^= h >> 13;
  h *= m;
  h ^= h >> 15;
  return static_cast<int32_t>(h);
}

partition_id partition_for_key(std::span<const uint8_t> key, int32_t num_partitions) {
  return to_positive(murmur2(key)) % num_partitions;
}

sticky_partitioner::sticky_partitioner(int32_t batch_size, uint64_t seed)
    : batch_size_(batch_size), random_(static_cast<std::minstd_rand::result_type>(seed)) {}

partition_id sticky_partitioner::draw_locked(int32_t num_partitions,
                                             std::span<const partition_id> available) {
  const partition_id chosen = choose_locked(num_partitions, available);
  current_.store(pack(num_partitions, chosen), std::memory_order_release);
  return chosen;
}

partition_id sticky_partitioner::choose_locked(int32_t num_partitions,
                                               std::span<const partition_id> available) {
  // Java: toPositive(random int) % count, over the available partitions when there are any.
  const auto random = static_cast<uint32_t>(random_());
  produced_bytes_.store(0, std::memory_order_relaxed);
  num_partitions_ = num_partitions;
  if (load_ && !load_->partition_ids.empty()) {
    // The first entry of the cumulative table strictly greater than a uniform draw below the
    // total weight (Java: Arrays.binarySearch, then the insertion point past equal values).
    const auto& table = load_->cumulative_frequency;
    const auto weighted = static_cast<int32_t>(random % static_cast<uint32_t>(table.back()));
    const auto index = std::upper_bound(table.begin(), table.end(), weighted) - table.begin();
    const partition_id chosen = load_->partition_ids[static_cast<size_t>(index)];
    if (chosen < num_partitions) {  // stale stats after the partition count grew or shrank
      partition_ = chosen;
      return partition_;
    }
  }
  if (!available.empty()) {
    partition_ = available[random % available.size()];
  } else {
    partition_ = static_cast<partition_id>(random % static_cast<uint32_t>(num_partitions));
  }
  return partition_;
}

partition_id sticky_partitioner::current(int32_t num_partitions,
                                         std::span<const partition_id> available) {
  // Every record asks: no lock unless a partition must be drawn.
  const uint64_t now = current_.load(std::memory_order_acquire);
  if (now != no_current && static_cast<int32_t>(now >> 32) == num_partitions) {
    return static_cast<partition_id>(static_cast<uint32_t>(now));
  }
  std::lock_guard lock(mutex_);
  if (partition_ < 0 || num_partitions != num_partitions_) {
    return draw_locked(num_partitions, available);
  }
  return partition_;
}

void sticky_partitioner::update(partition_id partition, int32_t appended_bytes, bool enable_switch,
                                int32_t num_partitions, std::span<const partition_id> available) {
  // Every record counts its bytes: no lock unless the partition switches. (A record counted
  // while another thread switches may count towards the new partition: its next switch comes
  // at most that record's bytes early.)
  const uint64_t now = current_.load(std::memory_order_acquire);
  if (now == no_current || static_cast<partition_id>(static_cast<uint32_t>(now)) != partition) {
    return;  // another thread switched already
  }
  // 64 bits: batch.size may be near INT32_MAX and produced bytes could exceed 2x of it.
  const int64_t produced =
      produced_bytes_.fetch_add(appended_bytes, std::memory_order_relaxed) + appended_bytes;
  const int64_t batch = batch_size_;
  if (!((produced >= batch && enable_switch) || produced >= 2 * batch)) return;
  std::lock_guard lock(mutex_);
  if (partition != partition_) return;  // another thread switched first
  draw_locked(num_partitions, available);
}

void sticky_partitioner::set_load(std::optional<partition_load> load) {
  std::lock_guard lock(mutex_);
  load_ = std::move(load);
}

std::optional<partition_load> partition_load_from_queue_sizes(
    std::span<const int32_t> queue_sizes, std::span<const partition_id> partition_ids,
    size_t length) {
  if (length < 1 || length > queue_sizes.size() || queue_sizes.size() < 2 ||
      partition_ids.size() != queue_sizes.size()) {
    return std::nullopt;
  }
  int32_t max_size_plus_1 = queue_sizes[0];
  bool all_equal = true;
  for (size_t i = 1; i < length; ++i) {
    if (queue_sizes[i] != max_size_plus_1) all_equal = false;
    max_size_plus_1 = std::max(max_size_plus_1, queue_sizes[i]);
  }
  ++max_size_plus_1;
  if (all_equal && length == queue_sizes.size()) return std::nullopt;
  // Invert each size (the longest queue weighs 1) and fold into a running sum.
  partition_load load;
  load.cumulative_frequency.reserve(length);
  load.partition_ids.assign(partition_ids.begin(), partition_ids.begin() + length);
  int32_t sum = 0;
  for (size_t i = 0; i < length; ++i) {
    sum += max_size_plus_1 - queue_sizes[i];
    load.cumulative_frequency.push_back(sum);
  }
  return load;
}

int32_t sticky_partitioner::produced_bytes() const {
  return static_cast<int32_t>(
      std::min<int64_t>(produced_bytes_.load(std::memory_order_relaxed), INT32_MAX));
}

}  // namespace tarn::client
