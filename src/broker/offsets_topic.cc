// __consumer_offsets over the topic manager's logs, and the topic map as the coordinator sees it
// (see offsets_topic.h).
#include "broker/offsets_topic.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <set>

#include "broker/replica_manager.h"
#include "broker/topic_handler_util.h"
#include "broker/topic_placement.h"
#include "cluster/cluster_membership.h"
#include "coordinator/share_state.h"
#include "record/record_batch.h"
#include "storage/log_validator.h"
#include "storage/producer_state.h"

namespace tarn::broker {

namespace {

using protocol::error_code;

// At most one line a second, as produce_handler.cc logs storage failures: a coordinator retrying
// against a full disk must not flood the log.
void log_rate_limited(std::string_view what, std::string_view detail) {
  static std::atomic<int64_t> last_logged_ms{0};
  static std::atomic<int64_t> suppressed{0};
  const int64_t now = wall_clock_ms();
  int64_t last = last_logged_ms.load(std::memory_order_relaxed);
  if (now - last < 1000 || !last_logged_ms.compare_exchange_strong(last, now)) {
    suppressed.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  spdlog::error("{}: {} ({} more since)", what, detail, suppressed.exchange(0));
}

// The produce path's wire errors (produce_handler.cc's to_failure).
error_code append_error(const storage::validation_error& e) {
  switch (e.code) {
    case storage::validation_errc::invalid_record:
      return error_code::invalid_record;
    case storage::validation_errc::record_too_large:
      return error_code::message_too_large;
    case storage::validation_errc::corrupt_record:
      return error_code::corrupt_message;
    case storage::validation_errc::invalid_timestamp:
      return error_code::invalid_timestamp;
  }
  return error_code::invalid_record;
}

error_code append_error(const storage::producer_error& e) {
  return e.code == storage::producer_errc::out_of_order_sequence
             ? error_code::out_of_order_sequence_number
             : error_code::invalid_producer_epoch;
}

error_code append_error(const storage::storage_error& e) {
  switch (e.code) {
    case storage::storage_errc::record_too_large:
      return error_code::record_list_too_large;
    case storage::storage_errc::not_found:
      return error_code::unknown_topic_or_partition;
    default:
      return error_code::kafka_storage_error;
  }
}

coordinator::topic_description describe(const storage::topic_info& t) {
  return {t.name, to_wire(t.topic_id).bytes, t.partitions};
}

coordinator::topic_description describe(const remote_topic& t) {
  return {t.name, to_wire(t.topic_id).bytes, t.partitions};
}

}  // namespace

bool is_internal_topic(std::string_view name) {
  return name == coordinator::offsets_topic_name || name == "__transaction_state" ||
         name == "__share_group_state";
}

storage::config_map offsets_topic_overrides(const coordinator::group_config& config) {
  return {{"cleanup.policy", "compact"},
          {"compression.type", "producer"},
          {"segment.bytes", std::to_string(config.offsets_topic_segment_bytes)}};
}

result<const storage::topic_info*, storage::storage_error> create_offsets_topic(
    storage::log_manager& logs, const coordinator::group_config& config, int64_t now_ms) {
  auto created =
      logs.create_topic(coordinator::offsets_topic_name, config.offsets_topic_num_partitions,
                        offsets_topic_overrides(config), now_ms);
  if (created) {
    spdlog::info("created {} with {} partition(s)", coordinator::offsets_topic_name,
                 config.offsets_topic_num_partitions);
  }
  return created;
}

storage::config_map share_group_state_topic_overrides(const coordinator::share_config& config,
                                                      bool cluster) {
  storage::config_map out{
      {"cleanup.policy", "delete"},
      {"compression.type", "producer"},
      {"segment.bytes", std::to_string(config.share_coordinator_state_topic_segment_bytes)},
      {"retention.ms", "-1"}};
  if (cluster) {
    out["min.insync.replicas"] = std::to_string(config.share_coordinator_state_topic_min_isr);
  }
  return out;
}

result<const storage::topic_info*, storage::storage_error> create_share_group_state_topic(
    storage::log_manager& logs, const coordinator::share_config& config, int64_t now_ms,
    bool cluster) {
  auto created = logs.create_topic(coordinator::share_group_state_topic_name,
                                   config.share_coordinator_state_topic_num_partitions,
                                   share_group_state_topic_overrides(config, cluster), now_ms);
  if (created) {
    spdlog::info("created {} with {} partition(s)", coordinator::share_group_state_topic_name,
                 config.share_coordinator_state_topic_num_partitions);
  }
  return created;
}

offsets_topic::offsets_topic(topic_manager& topics, const coordinator::group_config& config,
                             int32_t load_buffer_bytes)
    : offsets_topic(
          topics, std::string(coordinator::offsets_topic_name),
          [config](storage::log_manager& logs, int64_t now_ms) {
            return create_offsets_topic(logs, config, now_ms);
          },
          load_buffer_bytes) {}

result<int32_t, error_code> offsets_topic::ensure_topic() {
  if (auto n = partitions()) return *n;
  auto guard = topics_.control_lock();  // creation changes the maps
  storage::log_manager& logs = topics_.logs();
  if (const storage::topic_info* t = logs.find_topic(topic_)) return t->partitions;
  std::vector<int32_t> live;
  if (cluster_) {
    // Another broker made it (its name is taken cluster-wide); this broker opens its replicas'
    // logs when the states name it.
    if (auto remote = topics_.find_remote_topic(topic_)) return remote->partitions;
    for (const auto& b : cluster_->membership->live_brokers()) live.push_back(b.node_id);
    std::sort(live.begin(), live.end());
    if (static_cast<int32_t>(live.size()) < cluster_->replication_factor) {
      // Kafka's controller refuses the creation (INVALID_REPLICATION_FACTOR) and its broker
      // answers FindCoordinator COORDINATOR_NOT_AVAILABLE until enough brokers are live.
      log_rate_limited(
          fmt::format("Auto topic creation failed for {} with error 'INVALID_REPLICATION_FACTOR'",
                      topic_),
          replication_factor_error(cluster_->replication_factor,
                                   static_cast<int32_t>(live.size())));
      return fail(error_code::coordinator_not_available);
    }
  }
  // Not in Metadata answers until its partition states are written (being_created).
  topic_manager::creation_mark creating(topics_, topic_);
  auto created = create_(logs, wall_clock_ms());
  if (!created) {
    // Kafka answers FindCoordinator COORDINATOR_NOT_AVAILABLE while its internal topic cannot be
    // created (a retriable error: the client keeps asking).
    log_rate_limited(fmt::format("cannot create {}", topic_), created.error().message);
    return fail(error_code::coordinator_not_available);
  }
  const storage::topic_info& t = **created;
  if (cluster_) {
    // Its partition states: the creator leads every partition first (the interim placement
    // rule, docs/cluster.md "Replication"); the controller moves them when a leader dies.
    auto states = cluster_->replicas->create_partition_states(
        t.topic_id, t.name,
        place_partitions(cluster_->node_id, live, 0, t.partitions, cluster_->replication_factor));
    if (!states) {
      spdlog::error("{}: partition states not written: {}", topic_, states.error());
      return fail(error_code::coordinator_not_available);
    }
  }
  return t.partitions;
}

std::optional<int32_t> offsets_topic::partitions() const {
  {
    auto guard = topics_.read_lock();
    if (const storage::topic_info* t = topics_.logs().find_topic(topic_)) return t->partitions;
  }
  if (cluster_) {
    if (auto remote = topics_.find_remote_topic(topic_)) return remote->partitions;
  }
  return std::nullopt;
}

result<offset_t, error_code> offsets_topic::append(int32_t partition, std::vector<uint8_t> batch,
                                                   std::optional<uint32_t> txn_markers_before) {
  const std::string& topic = topic_;
  storage::log_config config;
  {
    auto guard = topics_.read_lock();
    const storage::topic_info* t = topics_.logs().find_topic(topic);
    if (t == nullptr || partition < 0 || partition >= t->partitions) {
      return fail(error_code::unknown_topic_or_partition);
    }
    config = t->config;
  }
  // Exactly one batch: validate_batch reads the first 12 + batchLength bytes as the batch.
  record::batch_reader reader(batch);
  record::record_batch_view view;
  if (!reader.next(view) || reader.position() != batch.size()) {
    return fail(error_code::corrupt_message);
  }
  const int64_t now = wall_clock_ms();
  const std::string tp = fmt::format("{}-{}", topic, partition);
  auto validated = storage::validate_batch(batch, {tp, &config, now});
  if (!validated) return fail(append_error(validated.error()));
  storage::validated_batch& vb = *validated;

  auto guard = topics_.read_lock();
  storage::log* log = topics_.logs().get_log(topic, partition_id{partition});
  if (log == nullptr) return fail(error_code::unknown_topic_or_partition);  // deleted since
  std::lock_guard log_lock(log->mutex());
  if (vb.transactional && txn_markers_before &&
      log->producers().markers_written(vb.producer_id) != *txn_markers_before) {
    return fail(error_code::invalid_txn_state);  // its transaction ended while it waited
  }
  // Leadership as of now, under the log's mutex (as Produce checks it): a broker that stopped
  // leading the partition appends nothing; the batch carries the leader epoch.
  const leadership lead = leadership_of(cluster_ ? cluster_->replicas : nullptr, topic, partition,
                                        cluster_ ? cluster_->node_id : -1);
  if (!lead.serving) return fail(error_code::not_leader_or_follower);
  // An ISR below min.insync.replicas could never commit the batch: refused before it is written
  // (Kafka's check of an acks=-1 append, which the transaction log's appends are; the group
  // coordinator's would time out instead, KIP-966's high watermark not passing it), so the
  // coordinator's state, changed only after its write, stays as it was.
  if (cluster_ && log->replicated() && config.min_insync_replicas > 1) {
    const int32_t isr = cluster_->replicas->isr_size(topic, partition);
    if (isr >= 0 && isr < config.min_insync_replicas) {
      return fail(error_code::not_enough_replicas);
    }
  }
  const offset_t first = log->log_end_offset();
  const offset_t last = storage::assign_offsets(vb, first, lead.leader_epoch);
  const bool idempotent = vb.producer_id != record::no_producer_id;
  storage::producer_append pa;
  if (idempotent) {
    record::record_batch_view v(vb.bytes);
    pa = {vb.producer_id, vb.producer_epoch, vb.base_sequence, v.last_sequence()};
    // A coordinator's transactional write (TxnOffsetCommit) is not a producer's retry: its
    // sequences are not checked (Kafka appends it with AppendOrigin.COORDINATOR).
    if (!vb.transactional) {
      auto check = log->producers().check(pa, first);
      if (!check) return fail(append_error(check.error()));
      if (*check) return (*check)->last_offset;  // a retry: already written
    }
  }
  if (auto a = log->append(vb.bytes, now); !a) {
    if (a.error().code == storage::storage_errc::io_error) {
      log_rate_limited(fmt::format("append to {} failed", tp), a.error().message);
    }
    return fail(append_error(a.error()));
  }
  if (idempotent) log->producers().update(pa, first, last, vb.max_timestamp, vb.transactional);
  if (cluster_ && log->replicated()) cluster_->replicas->on_leader_append(topic, partition, *log);
  return last;
}

result<void, std::string> offsets_topic::replay(
    int32_t partition, const std::function<void(const coordinator::offsets_record&)>& fn) {
  const std::string& topic = topic_;
  offset_t next = 0;
  offset_t end = 0;
  size_t max_uncompressed = 0;
  {
    auto guard = topics_.read_lock();
    const storage::topic_info* t = topics_.logs().find_topic(topic);
    const storage::log* log = topics_.logs().get_log(topic, partition_id{partition});
    if (t == nullptr || log == nullptr) {
      return fail(fmt::format("{}-{} does not exist", topic, partition));
    }
    next = log->log_start_offset();
    end = log->log_end_offset();
    max_uncompressed = static_cast<size_t>(t->config.max_decompressed_message_bytes);
  }
  std::vector<uint8_t> buffer;
  while (next < end) {
    std::optional<storage::file_slice> slice;
    {
      auto guard = topics_.read_lock();
      const storage::log* log = topics_.logs().get_log(topic, partition_id{partition});
      if (log == nullptr) return fail(fmt::format("{}-{} was deleted", topic, partition));
      std::lock_guard log_lock(log->mutex());
      // To the log end, as Kafka's coordinator loader (FetchIsolation.LOG_END): the end taken
      // above may be past the high watermark (this leader's own writes on their way to the ISR).
      auto read = log->read(next, load_buffer_bytes_, true, std::nullopt, /*to_log_end=*/true);
      if (!read) return fail(read.error().message);
      slice = std::move(read->slice);
    }
    if (!slice || slice->length <= 0) {
      return fail(fmt::format("{}-{}: nothing to read at offset {} below the end {}", topic,
                              partition, next, end));
    }
    // The bytes of a slice are immutable once appended, so they are read without the lock.
    buffer.resize(static_cast<size_t>(slice->length));
    if (auto r = storage::read_slice(*slice, buffer); !r) return fail(r.error().message);

    record::batch_reader batches(buffer);
    record::record_batch_view batch;
    const offset_t chunk_start = next;
    while (batches.next(batch)) {
      if (auto h = record::validate_batch_header(batch, record::offset_rule::stored); !h) {
        return fail(fmt::format("{}-{}: batch at offset {}: {}", topic, partition,
                                batch.base_offset(), h.error().message));
      }
      next = batch.next_offset();
      if (batch.is_control()) {
        // A transaction marker: key version int16, type int16 (0 ABORT, 1 COMMIT).
        auto records = record::batch_records::open(batch, max_uncompressed);
        if (!records) continue;
        record::record_reader reader = records->reader();
        record::record_view r;
        if (reader.next(r) && r.key && r.key->size() >= 4) {
          coordinator::offsets_record marker;
          marker.offset = batch.base_offset();
          marker.producer_id = batch.producer_id();
          marker.marker_commit = (*r.key)[3] == 1 && (*r.key)[2] == 0;
          fn(marker);
        }
        continue;
      }
      const int64_t txn_producer = batch.is_transactional() ? batch.producer_id() : -1;
      auto records = record::batch_records::open(batch, max_uncompressed);
      if (!records) {
        return fail(fmt::format("{}-{}: batch at offset {}: {}", topic, partition,
                                batch.base_offset(), records.error().message));
      }
      record::record_reader reader = records->reader();
      record::record_view r;
      while (reader.next(r)) {
        const offset_t offset = record::wrapping_add(batch.base_offset(), r.offset_delta);
        if (!r.key) {
          return fail(
              fmt::format("{}-{}: the record at offset {} has no key", topic, partition, offset));
        }
        fn(coordinator::offsets_record{offset, *r.key, r.value, txn_producer, std::nullopt});
      }
      if (reader.error()) {
        return fail(fmt::format("{}-{}: batch at offset {}: {}", topic, partition,
                                batch.base_offset(), record::describe(*reader.error())));
      }
    }
    if (next <= chunk_start) {
      return fail(fmt::format("{}-{}: no whole batch at offset {}", topic, partition, chunk_start));
    }
  }
  return {};
}

result<void, error_code> offsets_topic::delete_records_before(int32_t partition, offset_t offset) {
  auto guard = topics_.read_lock();
  storage::log* log = topics_.logs().get_log(topic_, partition_id{partition});
  if (log == nullptr) return fail(error_code::unknown_topic_or_partition);
  bool moved = false;
  {
    std::lock_guard log_lock(log->mutex());
    const offset_t before = log->log_start_offset();
    if (auto r = log->delete_records_before(offset, wall_clock_ms()); !r) {
      spdlog::error("pruning {}-{} below {}: {}", topic_, partition, offset, r.error().message);
      return fail(error_code::kafka_storage_error);
    }
    moved = log->log_start_offset() != before;
  }
  if (moved) {
    if (auto c = topics_.logs().checkpoint_log_start_offsets(); !c) {
      spdlog::error("pruning {}: writing log-start-offset-checkpoint failed: {}", topic_,
                    c.error().message);
    }
  }
  return {};
}

// In a cluster the coordinator sees every topic of the cluster: the ones this broker holds a log
// of and those only other brokers hold (a group commits offsets of topics wherever they live).
std::optional<coordinator::topic_description> topic_metadata_view::topic(
    std::string_view name) const {
  {
    auto guard = topics_.read_lock();
    if (const storage::topic_info* t = topics_.logs().find_topic(name)) return describe(*t);
  }
  if (auto r = topics_.find_remote_topic(name)) return describe(*r);
  return std::nullopt;
}

std::optional<coordinator::topic_description> topic_metadata_view::topic_by_id(
    const coordinator::topic_uuid& id) const {
  const storage::uuid wanted = from_wire(protocol::uuid{id});
  {
    auto guard = topics_.read_lock();
    for (const storage::topic_info* t : topics_.logs().topics()) {
      if (t->topic_id == wanted) return describe(*t);
    }
  }
  for (const remote_topic& r : topics_.remote_topics()) {
    if (r.topic_id == wanted) return describe(r);
  }
  return std::nullopt;
}

std::vector<coordinator::topic_description> topic_metadata_view::topics() const {
  std::vector<coordinator::topic_description> out;
  std::set<std::string, std::less<>> names;
  {
    auto guard = topics_.read_lock();
    for (const storage::topic_info* t : topics_.logs().topics()) {
      out.push_back(describe(*t));
      names.insert(t->name);
    }
  }
  for (const remote_topic& r : topics_.remote_topics()) {
    if (!names.contains(r.name)) out.push_back(describe(r));
  }
  return out;
}

}  // namespace tarn::broker
