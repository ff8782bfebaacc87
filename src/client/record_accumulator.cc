// The record accumulator: per-partition batch queues, readiness, draining per broker, sequence
// numbers, buffer.memory and delivery timeouts. See record_accumulator.h for the rules and the
// lock order.
#include "client/record_accumulator.h"

#include <fmt/format.h>

#include <algorithm>
#include <cassert>
#include <limits>
#include <mutex>

namespace tarn::client {
namespace {

std::string name_of(const topic_partition& tp) {
  return fmt::format("{}-{}", tp.topic, tp.partition);
}

int32_t level_for(const producer_config& c) {
  switch (c.compression_type) {
    case record::compression_type::gzip:
      return c.compression_gzip_level;
    case record::compression_type::lz4:
      return c.compression_lz4_level;
    case record::compression_type::zstd:
      return c.compression_zstd_level;
    default:
      return -1;
  }
}

}  // namespace

accumulator_config accumulator_config::from(const producer_config& c) {
  return accumulator_config{
      .batch_size = c.batch_size,
      .linger = milliseconds(c.linger_ms),
      .buffer_memory = c.buffer_memory,
      .max_block = milliseconds(c.max_block_ms),
      .delivery_timeout = milliseconds(c.delivery_timeout_ms),
      .retry_backoff = milliseconds(c.retry_backoff_ms),
      .retry_backoff_max = milliseconds(c.retry_backoff_max_ms),
      .max_request_size = c.max_request_size,
      .compression = c.compression_type,
      .compression_level = level_for(c),
      .idempotence = c.enable_idempotence,
      .transactional = c.transactional_id.has_value(),
      .max_in_flight_requests_per_connection = c.max_in_flight_requests_per_connection,
      .adaptive_partitioning = c.partitioner_adaptive_partitioning_enable,
      .partitioner_availability_timeout = milliseconds(c.partitioner_availability_timeout_ms),
  };
}

size_t record_accumulator::tp_hash::operator()(const topic_partition& tp) const {
  return std::hash<std::string>()(tp.topic) * 31 + static_cast<size_t>(tp.partition);
}

namespace {

std::atomic<uint64_t> next_accumulator_id{1};

// The queue the calling thread appended to last: send() after send() to one partition finds it
// with a string compare, where the map lookup took the shared lock, hashed the topic and first
// copied it into a topic_partition (a malloc and a free for a topic name past 15 characters):
// together about a tenth of the application thread's time at 100 B records.
struct queue_hint {
  uint64_t accumulator = 0;
  partition_id partition = -1;
  std::string topic;
  void* queue = nullptr;
};
thread_local queue_hint last_queue;

}  // namespace

record_accumulator::record_accumulator(const accumulator_config& config)
    : config_(config),
      id_(next_accumulator_id.fetch_add(1)),
      pool_(config.buffer_memory, config.batch_size) {}

record_accumulator::~record_accumulator() = default;

record_accumulator::partition_queue* record_accumulator::find_queue(
    const topic_partition& tp) const {
  std::shared_lock lock(queues_mutex_);
  auto it = queues_.find(tp);
  return it == queues_.end() ? nullptr : it->second.get();
}

record_accumulator::partition_queue& record_accumulator::queue_for(const topic_partition& tp) {
  if (auto* q = find_queue(tp)) return *q;
  std::unique_lock lock(queues_mutex_);
  auto& slot = queues_[tp];
  if (!slot) {
    slot = std::make_unique<partition_queue>(tp);
    auto& ratio = ratio_estimates_[tp.topic];
    if (!ratio) ratio = std::make_unique<compression_ratio_estimator>();
    slot->ratio = ratio.get();
    queue_order_.push_back(slot.get());
  }
  return *slot;
}

record_accumulator::partition_queue& record_accumulator::queue_through_hint(
    std::string_view topic, partition_id partition) {
  queue_hint& hint = last_queue;
  if (hint.accumulator == id_ && hint.partition == partition && hint.topic == topic) {
    return *static_cast<partition_queue*>(hint.queue);
  }
  partition_queue& q = queue_for({std::string(topic), partition});
  hint.accumulator = id_;
  hint.partition = partition;
  hint.topic.assign(topic);
  hint.queue = &q;
  return q;
}

uint64_t record_accumulator::start_batch_id() {
  const uint64_t id = next_batch_id_.fetch_add(1);
  std::lock_guard lock(incomplete_mutex_);
  incomplete_.insert(id);
  return id;
}

namespace {

producer_error too_large_to_encode(const topic_partition& tp) {
  return producer_error{producer_errc::invalid_record, 0, false,
                        fmt::format("A record for {} is too large to encode", name_of(tp))};
}

}  // namespace

// Appends to the open batch of `q` if it has room. Returns false when a new batch is needed
// (then the open batch, if any, has been sealed). Called with q.mutex held.
// A sealed batch is built (compressed, checksummed) by the drain on the sender thread, outside
// the partition's lock, not by the append that sealed it as Java's closeForRecordAppends does:
// on the 2-core machine, with kafka-producer-perf-test's random payloads, compressing every
// batch on the application thread made it the bottleneck (1 KiB lz4, acks=1: 380-430k
// records/s and 1.9-2.2 us of CPU a record, against 480-530k and 1.7-1.85 us built on drain).
// Only when the sender is behind does the appending thread build (claim_build_if_behind).
bool record_accumulator::try_append_open(partition_queue& q, timestamp_ms timestamp,
                                         std::optional<record::bytes_view> key,
                                         std::optional<record::bytes_view> value,
                                         std::span<const record::record_header> headers,
                                         delivery_callback&& callback, append_outcome& outcome,
                                         std::optional<producer_error>& error) {
  if (q.batches.empty() || q.batches.back()->sealed()) return false;
  producer_batch& open = *q.batches.back();
  auto appended =
      open.try_append(timestamp, key, value, headers, std::move(callback), outcome.appended_bytes);
  if (appended == record::append_result::batch_full) {
    open.seal();  // the size the batch would have is over batch.size
    return false;
  }
  if (appended == record::append_result::too_large) error = too_large_to_encode(q.tp);
  return true;
}

void record_accumulator::seal_if_full(partition_queue& q, append_outcome& outcome) const {
  if (!q.batches.empty() && !q.batches.back()->sealed() &&
      q.batches.back()->estimated_size_bytes() >= static_cast<size_t>(config_.batch_size)) {
    q.batches.back()->seal();  // exactly full: no record can follow
  }
  outcome.batch_full = q.batches.empty() || q.batches.back()->sealed();
}

// The sender builds the batches it drains, but when an append seals a batch with another queued
// ahead of it the sender is behind (at max.in.flight, or busy building): the appending thread
// builds the sealed batch itself, after releasing the queue's lock, so the compression runs on
// the application's core alongside the sender's instead of after it. On the 2-core machine the
// sender and the broker's event loop share one core (each wakes the other), so what the sender
// does not do is what lets that core take the next request sooner.
record_accumulator::claimed_build record_accumulator::claim_build_if_behind(
    partition_queue& q) const {
  if (config_.compression == record::compression_type::none) return {};
  if (q.batches.size() < 2 || !q.batches.back()->sealed()) return {};
  producer_batch* batch = q.batches.back().get();
  return {batch, batch->claim_build()};
}

bool record_accumulator::claimed_build::run() {
  if (!lock) return false;
  batch->build_records();
  lock.unlock();  // the batch may be drained, sent and freed from here on
  return true;
}

result<append_outcome, producer_error> record_accumulator::append(
    std::string_view topic, partition_id partition, timestamp_ms timestamp,
    std::optional<record::bytes_view> key, std::optional<record::bytes_view> value,
    std::span<const record::record_header> headers, delivery_callback&& callback, append_time now,
    bool abort_on_new_batch) {
  if (closed_) {
    return fail(producer_error{producer_errc::producer_closed, 0, false,
                               "Cannot perform operation after producer has been closed"});
  }
  // An upper bound of the batch this record alone would make, whatever its deltas turn out to
  // be (Java's estimateSizeInBytesUpperBound).
  auto upper_bound = [&] {
    const record::record_data bound{.timestamp_delta = std::numeric_limits<int64_t>::min(),
                                    .offset_delta = std::numeric_limits<int32_t>::max(),
                                    .key = key,
                                    .value = value,
                                    .headers = headers};
    return record::record_batch_overhead + record::encoded_record_size(bound);
  };
  // The exact bound is needed only near the limits (and when the record opens a batch): below,
  // a cruder one that a few additions give (every varint at its longest) proves it fits. Encoding
  // the record's size twice a record was a twentieth of the application thread's time at 100 B.
  size_t crude = record::record_batch_overhead + 5 + 1 + 10 + 5 + 5 + 5 + 5;
  if (key) crude += key->size();
  if (value) crude += value->size();
  for (const auto& h : headers) crude += 10 + h.key.size() + (h.value ? h.value->size() : 0);
  const auto limit =
      static_cast<size_t>(std::min<int64_t>(config_.max_request_size, config_.buffer_memory));
  if (crude > limit) {
    const size_t upper = upper_bound();
    if (upper > static_cast<size_t>(config_.max_request_size)) {
      return fail(producer_error{
          producer_errc::record_too_large, 0, false,
          fmt::format("The message is {} bytes when serialized which is larger than {}, which "
                      "is the value of the max.request.size configuration.",
                      upper, config_.max_request_size)});
    }
    if (upper > static_cast<size_t>(config_.buffer_memory)) {
      return fail(producer_error{
          producer_errc::record_too_large, 0, false,
          fmt::format("The message is {} bytes when serialized which is larger than the total "
                      "memory buffer you have configured with the buffer.memory configuration "
                      "({}).",
                      upper, config_.buffer_memory)});
    }
  }

  partition_queue& q = queue_through_hint(topic, partition);
  const topic_partition& tp = q.tp;
  append_outcome outcome;
  std::optional<producer_error> error;
  claimed_build claim;
  {
    // Most records go into the open batch, which already holds its memory.
    std::unique_lock lock(q.mutex);
    const bool appended =
        try_append_open(q, timestamp, key, value, headers, std::move(callback), outcome, error);
    if (appended && error) return fail(std::move(*error));
    if (appended) seal_if_full(q, outcome);
    if (outcome.batch_full || !appended) claim = claim_build_if_behind(q);  // it sealed one
    lock.unlock();
    outcome.built_sealed_batch = claim.run();
    if (appended) return outcome;
  }
  if (abort_on_new_batch) {
    outcome.aborted_for_new_batch = true;
    outcome.batch_full = true;
    return outcome;
  }

  // A compressed batch counts its records at the topic's estimated ratio (Java's
  // CompressionRatioEstimator), so it holds more than batch.size of records before the codec
  // runs; at most max.request.size of them.
  const bool compressed = config_.compression != record::compression_type::none;
  const record::batch_builder_config builder{
      .batch_size = static_cast<size_t>(config_.batch_size),
      .compression = config_.compression,
      .compression_level = config_.compression_level,
      .estimated_compression_ratio = compressed ? q.ratio->estimation() : 1.0,
      .transactional = config_.transactional,
      .max_uncompressed_bytes =
          compressed ? static_cast<size_t>(config_.max_request_size) : SIZE_MAX};
  // A new batch takes what its builder will hold of buffer.memory: batch.size (Java's default
  // "full" allocation), more when its records compress well, or the record's size if larger;
  // capped at buffer.memory. Reserved without any lock held: this is where send() blocks, up to
  // max.block.ms.
  const auto capacity =
      static_cast<int64_t>(record::batch_builder::expected_capacity_bytes(builder));
  const auto upper = static_cast<int64_t>(upper_bound());
  const auto reserved = std::min<int64_t>(
      std::max({static_cast<int64_t>(config_.batch_size), capacity, upper}), config_.buffer_memory);
  if (!pool_.reserve(reserved, std::chrono::steady_clock::now() + config_.max_block)) {
    return fail(producer_error{
        producer_errc::buffer_exhausted, 0, true,
        fmt::format("Failed to allocate {} bytes within the configured max blocking time {} ms "
                    "(buffer.memory {} bytes, {} available)",
                    reserved, config_.max_block.count(), pool_.total_bytes(),
                    pool_.available_bytes())});
  }
  {
    std::unique_lock lock(q.mutex);
    // Another thread may have opened a batch meanwhile: use it and give the memory back.
    if (try_append_open(q, timestamp, key, value, headers, std::move(callback), outcome, error)) {
      seal_if_full(q, outcome);
    } else {
      auto batch =
          std::make_unique<producer_batch>(tp, builder, now.get(), start_batch_id(), q.ratio);
      // The first record of a batch always goes in, whatever batch.size says.
      auto appended = batch->try_append(timestamp, key, value, headers, std::move(callback),
                                        outcome.appended_bytes);
      if (appended != record::append_result::appended) {
        error = too_large_to_encode(tp);
        std::lock_guard incomplete_lock(incomplete_mutex_);
        incomplete_.erase(incomplete_.find(batch->id()));
      } else {
        outcome.new_batch = true;
        outcome.appended_bytes += record::record_batch_overhead;
        batch->memory_bytes = reserved;
        q.batches.push_back(std::move(batch));
        seal_if_full(q, outcome);
        if (outcome.batch_full) claim = claim_build_if_behind(q);
        lock.unlock();
        outcome.built_sealed_batch = outcome.built_sealed_batch || claim.run();
        return outcome;
      }
    }
  }
  pool_.release(reserved);
  if (error) return fail(std::move(*error));
  return outcome;
}

std::chrono::nanoseconds record_accumulator::retry_backoff_for(const producer_batch& batch) const {
  // Java 4.x: retry.backoff.ms * 2^(attempts-1), capped at retry.backoff.max.ms. (Java adds
  // +-20% jitter; tarn leaves it out so retries stay reproducible.)
  if (batch.attempts <= 0) return std::chrono::nanoseconds(0);
  auto backoff = std::chrono::duration_cast<std::chrono::nanoseconds>(config_.retry_backoff);
  const auto cap = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::max(config_.retry_backoff_max, config_.retry_backoff));
  for (int32_t i = 1; i < batch.attempts && backoff < cap; ++i) backoff *= 2;
  return std::min(backoff, cap);
}

ready_result record_accumulator::ready(const leader_lookup& leader_of, steady_time now,
                                       const partition_count_lookup& partitions_of) {
  ready_result out;
  const bool exhausted = pool_.has_waiters();
  const bool send_all = exhausted || closed_ || flushes_in_progress_ > 0;
  const bool adaptive = config_.adaptive_partitioning && partitions_of && load_listener_;
  for (auto& [topic, load] : topic_loads_) {
    load.queue_sizes.clear();
    load.partition_ids.clear();
    load.length = 0;
  }
  std::shared_lock queues_lock(queues_mutex_);
  for (partition_queue* q : queue_order_) {
    auto leader = leader_of(q->tp);
    topic_load* load = nullptr;
    if (adaptive) {
      auto it = topic_loads_.find(q->tp.topic);
      if (it == topic_loads_.end()) it = topic_loads_.emplace(q->tp.topic, topic_load{}).first;
      load = &it->second;
    }
    std::lock_guard lock(q->mutex);
    const auto queue_size = static_cast<int32_t>(q->batches.size());
    if (load && leader) {
      load->queue_sizes.push_back(0);
      load->partition_ids.push_back(0);
      load->queue_sizes[load->length] = queue_size;
      load->partition_ids[load->length] = q->tp.partition;
      ++load->length;
    } else if (load) {
      load->queue_sizes.push_back(0);  // a queue without a leader: counted, never drawn
      load->partition_ids.push_back(-1);
    }
    if (q->batches.empty()) continue;
    const steady_time created = q->batches.front()->created();
    if (!out.oldest_batch_created || created < *out.oldest_batch_created) {
      out.oldest_batch_created = created;
    }
    if (!leader) {
      out.unknown_leader_topics.insert(q->tp.topic);
      continue;
    }
    if (load && config_.partitioner_availability_timeout.count() > 0) {
      auto stats = node_latency_.find(*leader);
      if (stats != node_latency_.end() && stats->second.ready_time - stats->second.drain_time >
                                              config_.partitioner_availability_timeout) {
        --load->length;  // the broker has not taken data for too long: leave the partition out
      }
    }
    if (q->muted || out.ready_nodes.contains(*leader)) continue;
    const producer_batch& first = *q->batches.front();
    const auto backoff = retry_backoff_for(first);
    const bool backing_off = first.attempts > 0 && now < first.last_attempt + backoff;
    const auto waited = now - (first.attempts > 0 ? first.last_attempt : first.created());
    const std::chrono::nanoseconds time_to_wait =
        backing_off ? backoff : std::chrono::nanoseconds(config_.linger);
    const bool full = q->batches.size() > 1 || first.sealed();
    const bool expired = waited >= time_to_wait;
    if ((full || expired || send_all) && !backing_off) {
      out.ready_nodes.insert(*leader);
    } else {
      auto left = std::chrono::ceil<milliseconds>(time_to_wait - waited);
      if (!out.next_ready_check || left < *out.next_ready_check) out.next_ready_check = left;
    }
  }
  queues_lock.unlock();
  if (!adaptive) return out;
  for (auto& [topic, load] : topic_loads_) {
    // Java starts adaptive partitioning only once every partition of the topic has a queue (a
    // partition without one would never be drawn), and never for a single partition.
    std::optional<partition_load> computed;
    if (load.queue_sizes.size() >= 2) {
      const int32_t count = partitions_of(topic);
      if (count > 0 && load.queue_sizes.size() >= static_cast<size_t>(count)) {
        computed =
            partition_load_from_queue_sizes(load.queue_sizes, load.partition_ids, load.length);
      }
    }
    // The partitioner hears only of changes: most passes find the same queue sizes.
    if (load.reported && load.last == computed) continue;
    load.reported = true;
    load.last = computed;
    load_listener_(topic, std::move(computed));
  }
  return out;
}

void record_accumulator::update_node_latency(node_id node, steady_time now, bool can_drain) {
  if (config_.partitioner_availability_timeout.count() <= 0) return;
  auto [it, inserted] = node_latency_.try_emplace(node, node_latency{now, now});
  it->second.ready_time = now;
  if (can_drain) it->second.drain_time = now;
}

std::map<node_id, std::vector<std::unique_ptr<producer_batch>>> record_accumulator::drain(
    const leader_lookup& leader_of, const std::set<node_id>& nodes, int32_t max_request_size,
    steady_time now) {
  std::map<node_id, std::vector<std::unique_ptr<producer_batch>>> out;
  const producer_identity identity = this->identity();
  if (config_.idempotence && !identity.valid()) return out;  // InitProducerId first
  std::vector<std::pair<std::unique_ptr<producer_batch>, producer_error>> failed;
  {
    std::shared_lock queues_lock(queues_mutex_);
    const size_t n = queue_order_.size();
    for (node_id node : nodes) {
      if (n == 0) break;
      auto& batches = out[node];
      size_t size = 0;
      const size_t start = drain_index_[node] % n;
      size_t next_start = start;
      for (size_t i = 0; i < n; ++i) {
        const size_t index = (start + i) % n;
        partition_queue* q = queue_order_[index];
        auto leader = leader_of(q->tp);
        if (!leader || *leader != node) continue;
        std::unique_lock lock(q->mutex);
        if (q->batches.empty() || q->muted) continue;
        producer_batch& first = *q->batches.front();
        if (first.attempts > 0 && now < first.last_attempt + retry_backoff_for(first)) continue;
        if (!batches.empty() &&
            size + first.estimated_size_bytes() > static_cast<size_t>(max_request_size)) {
          next_start = index;  // this partition goes first next time
          break;
        }
        // A retried batch waits until it is the first in flight of its partition, so the
        // broker sees sequences in order.
        if (config_.idempotence && first.has_sequence() && !q->in_flight_sequences.empty() &&
            q->in_flight_sequences.front() != first.base_sequence()) {
          continue;
        }
        if (config_.idempotence && !first.drained() && q->identity != identity) {
          // After an epoch bump: the old identity's batches finish first, then the partition
          // starts over at sequence 0.
          if (!q->in_flight_sequences.empty()) continue;
          q->identity = identity;
          q->next_sequence = 0;
          q->last_acked = record::no_sequence;
        }
        // A partition's first batch under an identity goes alone: a broker with no state for
        // the producer accepts any sequence (Kafka's checkSequence), so batches pipelined
        // behind a first batch that fails (NOT_LEADER_OR_FOLLOWER from a leader still creating
        // the partition) would be written ahead of it. Once one is acknowledged the broker
        // checks every sequence and the pipeline opens to max.in.flight.
        if (config_.idempotence && q->last_acked == record::no_sequence &&
            !q->in_flight_sequences.empty() &&
            !(first.has_sequence() && q->in_flight_sequences.front() == first.base_sequence())) {
          continue;  // (the first batch's own retry may go)
        }
        auto batch = std::move(q->batches.front());
        q->batches.pop_front();
        if (!batch->drained()) {
          const sequence_t sequence = config_.idempotence ? q->next_sequence : record::no_sequence;
          // Compressing (a batch drained before it filled) takes a while: appends to the
          // partition go on meanwhile. The batch is out of the queue, and only this (the sender)
          // thread changes the sequence state.
          lock.unlock();
          auto built = batch->stamp(config_.idempotence ? identity : producer_identity{}, sequence);
          if (!built) {
            failed.emplace_back(std::move(batch), built.error());
            continue;
          }
          // Without sequences or muting nothing of the queue changes after the build: the lock
          // is not taken again (each time the sender takes it, the appending thread may wait).
          if (config_.idempotence || config_.max_in_flight_requests_per_connection == 1) {
            lock.lock();
          }
          if (config_.idempotence) {
            q->next_sequence = increment_sequence(q->next_sequence, batch->record_count());
            q->in_flight_sequences.push_back(sequence);
          }
        }
        if (config_.max_in_flight_requests_per_connection == 1) q->muted = true;
        size += batch->bytes().size();
        batches.push_back(std::move(batch));
        next_start = index + 1;
      }
      drain_index_[node] = next_start % n;
      if (batches.empty()) out.erase(node);
    }
  }
  for (auto& [batch, error] : failed) fail_batch(std::move(batch), error);
  return out;
}

void record_accumulator::reenqueue(std::unique_ptr<producer_batch> batch, steady_time now) {
  batch->attempts += 1;
  batch->last_attempt = now;
  partition_queue& q = queue_for(batch->tp());
  std::lock_guard lock(q.mutex);
  q.muted = false;
  insert_in_sequence_order(q, std::move(batch));
}

// Called with q.mutex held.
void record_accumulator::insert_in_sequence_order(partition_queue& q,
                                                  std::unique_ptr<producer_batch> batch) {
  if (config_.idempotence && batch->has_sequence()) {
    // Java's insertInSequenceOrder: retried batches sit at the head ordered by sequence; the
    // order is the drain order kept in in_flight_sequences (robust to the INT32_MAX wrap).
    auto rank = [&](sequence_t s) {
      auto it = std::find(q.in_flight_sequences.begin(), q.in_flight_sequences.end(), s);
      return std::distance(q.in_flight_sequences.begin(), it);
    };
    const auto mine = rank(batch->base_sequence());
    auto at = q.batches.begin();
    while (at != q.batches.end() && (*at)->has_sequence() && rank((*at)->base_sequence()) < mine) {
      ++at;
    }
    q.batches.insert(at, std::move(batch));
  } else {
    q.batches.push_front(std::move(batch));
  }
}

void record_accumulator::split_and_reenqueue(std::unique_ptr<producer_batch> batch) {
  const size_t half = (record::record_batch_overhead + batch->uncompressed_records_bytes()) / 2;
  auto parts = batch->split(std::min(static_cast<size_t>(config_.batch_size), half));
  if (!parts) return fail_batch(std::move(batch), parts.error());
  {
    std::lock_guard lock(incomplete_mutex_);
    for (size_t i = 0; i < parts->size(); ++i) incomplete_.insert(batch->id());
  }
  (*parts)[0]->memory_bytes = batch->memory_bytes;
  batch->memory_bytes = 0;
  partition_queue& q = queue_for(batch->tp());
  {
    std::lock_guard lock(q.mutex);
    q.muted = false;
    if (batch->has_sequence()) {
      // The parts take the batch's place in the drain order.
      auto at = std::find(q.in_flight_sequences.begin(), q.in_flight_sequences.end(),
                          batch->base_sequence());
      if (at != q.in_flight_sequences.end()) at = q.in_flight_sequences.erase(at);
      for (const auto& part : *parts) {
        at = std::next(q.in_flight_sequences.insert(at, part->base_sequence()));
      }
    }
    for (auto it = parts->rbegin(); it != parts->rend(); ++it) {
      insert_in_sequence_order(q, std::move(*it));
    }
  }
  // The batch itself is gone; its parts hold its callbacks and its place in incomplete_.
  std::lock_guard lock(incomplete_mutex_);
  incomplete_.erase(incomplete_.find(batch->id()));
}

void record_accumulator::finish(std::unique_ptr<producer_batch> batch) {
  // Only a batch with a sequence, or one that muted its partition (max.in.flight 1), changed its
  // queue when drained: the others leave it alone (no lock the appending thread may wait on).
  const bool touches_queue =
      batch->has_sequence() || config_.max_in_flight_requests_per_connection == 1;
  if (auto* q = touches_queue ? find_queue(batch->tp()) : nullptr) {
    std::lock_guard lock(q->mutex);
    q->muted = false;
    if (batch->has_sequence()) {
      auto it = std::find(q->in_flight_sequences.begin(), q->in_flight_sequences.end(),
                          batch->base_sequence());
      if (it != q->in_flight_sequences.end()) q->in_flight_sequences.erase(it);
    }
  }
  pool_.release(batch->memory_bytes);
  const uint64_t id = batch->id();
  batch.reset();
  std::lock_guard lock(incomplete_mutex_);
  if (auto it = incomplete_.find(id); it != incomplete_.end()) incomplete_.erase(it);
  // Wake flush() only when the oldest flush waiting can return: a flush waiting on thousands of
  // queued batches is not woken once per batch.
  if (!flush_waits_.empty() &&
      (incomplete_.empty() || *incomplete_.begin() > *flush_waits_.begin())) {
    incomplete_changed_.notify_all();
  }
}

void record_accumulator::complete(std::unique_ptr<producer_batch> batch, offset_t base_offset,
                                  timestamp_ms log_append_time) {
  if (batch->has_sequence()) {
    if (auto* q = find_queue(batch->tp())) {
      std::lock_guard lock(q->mutex);
      if (q->identity == batch->identity()) {
        q->last_acked = increment_sequence(batch->base_sequence(), batch->record_count() - 1);
      }
    }
  }
  batch->complete(base_offset, log_append_time);
  finish(std::move(batch));
}

void record_accumulator::fail_batch(std::unique_ptr<producer_batch> batch,
                                    const producer_error& error) {
  batch->fail(error);
  finish(std::move(batch));
}

std::vector<std::unique_ptr<producer_batch>> record_accumulator::expired_batches(steady_time now) {
  std::vector<std::unique_ptr<producer_batch>> out;
  std::shared_lock queues_lock(queues_mutex_);
  for (partition_queue* q : queue_order_) {
    std::lock_guard lock(q->mutex);
    while (!q->batches.empty() && now - q->batches.front()->created() >= config_.delivery_timeout) {
      q->batches.front()->seal();
      out.push_back(std::move(q->batches.front()));
      q->batches.pop_front();
    }
  }
  return out;
}

void record_accumulator::set_producer_identity(producer_identity identity) {
  std::lock_guard lock(identity_mutex_);
  identity_ = identity;
}

producer_identity record_accumulator::identity() const {
  std::lock_guard lock(identity_mutex_);
  return identity_;
}

// Called with q.mutex held and nothing of q in flight.
void record_accumulator::restamp_from_zero(partition_queue& q, producer_identity identity) {
  sequence_t sequence = 0;
  q.in_flight_sequences.clear();
  for (auto& batch : q.batches) {
    if (!batch->drained()) break;  // drained ones (retries) are at the head
    batch->rewrite_producer_state(identity, sequence);
    q.in_flight_sequences.push_back(sequence);
    sequence = increment_sequence(sequence, batch->record_count());
  }
  q.identity = identity;
  q.next_sequence = sequence;
  q.last_acked = record::no_sequence;
}

void record_accumulator::bump_epoch(producer_identity identity,
                                    const std::vector<topic_partition>& partitions) {
  set_producer_identity(identity);
  for (const auto& tp : partitions) {
    if (auto* q = find_queue(tp)) {
      std::lock_guard lock(q->mutex);
      restamp_from_zero(*q, identity);
    }
  }
}

void record_accumulator::reset_producer_state(producer_identity identity) {
  set_producer_identity(identity);
  std::shared_lock queues_lock(queues_mutex_);
  for (partition_queue* q : queue_order_) {
    std::lock_guard lock(q->mutex);
    restamp_from_zero(*q, identity);
  }
}

bool record_accumulator::is_next_sequence(const producer_batch& batch) const {
  auto* q = find_queue(batch.tp());
  if (!q) return false;
  std::lock_guard lock(q->mutex);
  if (q->identity != batch.identity()) return false;
  const sequence_t next =
      q->last_acked == record::no_sequence ? 0 : increment_sequence(q->last_acked, 1);
  return batch.base_sequence() == next;
}

bool record_accumulator::acknowledged_past(const producer_batch& batch) const {
  auto* q = find_queue(batch.tp());
  if (!q) return false;
  std::lock_guard lock(q->mutex);
  if (q->identity != batch.identity() || q->last_acked == record::no_sequence) return false;
  // Sequences wrap from INT32_MAX to 0, so compare on the circle of 2^31: the batch is behind
  // when its distance from the next expected sequence is more than half way round (the
  // sequences of one partition in flight span at most a few thousand).
  constexpr int64_t circle = int64_t{INT32_MAX} + 1;
  const int64_t next = increment_sequence(q->last_acked, 1);
  const int64_t ahead = ((int64_t{batch.base_sequence()} - next) % circle + circle) % circle;
  return ahead >= circle / 2;
}

sequence_t record_accumulator::next_sequence(const topic_partition& tp) const {
  auto* q = find_queue(tp);
  if (!q) return 0;
  std::lock_guard lock(q->mutex);
  return q->next_sequence;
}

uint64_t record_accumulator::begin_flush() {
  flushes_in_progress_.fetch_add(1);
  return next_batch_id_.load() - 1;  // every batch started so far
}

void record_accumulator::await_flush_completion(uint64_t flush) {
  {
    std::unique_lock lock(incomplete_mutex_);
    const auto wait = flush_waits_.insert(flush);
    incomplete_changed_.wait(lock,
                             [&] { return incomplete_.empty() || *incomplete_.begin() > flush; });
    flush_waits_.erase(wait);
  }
  flushes_in_progress_.fetch_sub(1);
}

void record_accumulator::close() { closed_ = true; }

size_t record_accumulator::abort_undrained(const producer_error& error) {
  std::vector<std::unique_ptr<producer_batch>> aborted;
  size_t with_sequence = 0;
  {
    std::shared_lock queues_lock(queues_mutex_);
    for (partition_queue* q : queue_order_) {
      std::lock_guard lock(q->mutex);
      for (auto& batch : q->batches) aborted.push_back(std::move(batch));
      q->batches.clear();
    }
  }
  for (auto& batch : aborted) {
    if (batch->has_sequence()) ++with_sequence;
    fail_batch(std::move(batch), error);
  }
  return with_sequence;
}

bool record_accumulator::has_undrained() const {
  std::shared_lock queues_lock(queues_mutex_);
  for (partition_queue* q : queue_order_) {
    std::lock_guard lock(q->mutex);
    if (!q->batches.empty()) return true;
  }
  return false;
}

size_t record_accumulator::incomplete_batches() const {
  std::lock_guard lock(incomplete_mutex_);
  return incomplete_.size();
}

}  // namespace tarn::client
