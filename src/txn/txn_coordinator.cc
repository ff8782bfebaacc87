// The transaction coordinator (see txn_coordinator.h).
#include "txn/txn_coordinator.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <limits>

#include "base/regex.h"
#include "txn/txn_records.h"

namespace tarn::txn {

namespace {

using protocol::error_code;

// Java's String.hashCode over the UTF-16 code units of a UTF-8 string (invalid bytes count as
// one unit each).
int32_t java_string_hash(std::string_view s) {
  uint32_t h = 0;
  auto add = [&h](uint32_t unit) { h = 31 * h + unit; };
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    uint32_t cp = c;
    size_t n = 1;
    if (c >= 0xf0 && i + 3 < s.size()) {
      cp = ((c & 0x07u) << 18) | ((static_cast<unsigned char>(s[i + 1]) & 0x3fu) << 12) |
           ((static_cast<unsigned char>(s[i + 2]) & 0x3fu) << 6) |
           (static_cast<unsigned char>(s[i + 3]) & 0x3fu);
      n = 4;
    } else if (c >= 0xe0 && i + 2 < s.size()) {
      cp = ((c & 0x0fu) << 12) | ((static_cast<unsigned char>(s[i + 1]) & 0x3fu) << 6) |
           (static_cast<unsigned char>(s[i + 2]) & 0x3fu);
      n = 3;
    } else if (c >= 0xc0 && i + 1 < s.size()) {
      cp = ((c & 0x1fu) << 6) | (static_cast<unsigned char>(s[i + 1]) & 0x3fu);
      n = 2;
    }
    if (cp >= 0x10000) {
      cp -= 0x10000;
      add(0xd800 + (cp >> 10));
      add(0xdc00 + (cp & 0x3ff));
    } else {
      add(cp);
    }
    i += n;
  }
  return static_cast<int32_t>(h);
}

}  // namespace

int32_t partition_for(std::string_view transactional_id, int32_t partitions) {
  const int32_t h = java_string_hash(transactional_id);
  const int32_t abs = h == std::numeric_limits<int32_t>::min() ? 0 : std::abs(h);
  return partitions > 0 ? abs % partitions : 0;
}

txn_coordinator::txn_coordinator(const txn_config& config, txn_log& log, txn_markers& markers,
                                 producer_id_source next_producer_id,
                                 transaction_version_source transaction_version)
    : config_(config),
      log_(log),
      markers_(markers),
      next_producer_id_(std::move(next_producer_id)),
      transaction_version_(std::move(transaction_version)) {}

int16_t txn_coordinator::transaction_version() const {
  return transaction_version_ ? transaction_version_() : int16_t{0};
}

txn_metadata* txn_coordinator::find(std::string_view transactional_id) {
  auto it = txns_.find(std::string(transactional_id));
  return it == txns_.end() ? nullptr : &it->second;
}

const txn_metadata* txn_coordinator::find(std::string_view transactional_id) const {
  auto it = txns_.find(std::string(transactional_id));
  return it == txns_.end() ? nullptr : &it->second;
}

const txn_metadata* txn_coordinator::find_by_producer(producer_id_t producer_id) const {
  auto it = by_producer_.find(producer_id);
  return it == by_producer_.end() ? nullptr : find(it->second);
}

result<void, std::string> txn_coordinator::replay_partition(
    int32_t p, std::unordered_map<std::string, txn_metadata>& out) {
  std::string problem;
  auto r = log_.replay(p, [&](const txn_log_record& rec) {
    if (!problem.empty()) return;
    auto id = decode_txn_key(rec.key);
    if (!id) {
      problem = fmt::format("__transaction_state-{} offset {}: {}", p, rec.offset, id.error());
      return;
    }
    if (!rec.value) {
      out.erase(*id);
      return;
    }
    auto m = decode_txn_value(*rec.value);
    if (!m) {
      problem = fmt::format("__transaction_state-{} offset {}: {}", p, rec.offset, m.error());
      return;
    }
    m->transactional_id = *id;
    out[*id] = std::move(*m);
  });
  if (!r) return fail(r.error());
  if (!problem.empty()) return fail(problem);
  return {};
}

result<void, std::string> txn_coordinator::load(timestamp_ms now) {
  std::lock_guard guard(mu_);
  owns_all_ = true;
  txns_.clear();
  by_producer_.clear();
  const std::optional<int32_t> partitions = log_.partitions();
  if (!partitions) return {};
  for (int32_t p = 0; p < *partitions; ++p) {
    if (auto r = replay_partition(p, txns_); !r) return fail(r.error());
  }
  for (auto& [id, m] : txns_) by_producer_[m.producer_id] = id;
  // A crash between PrepareX and CompleteX: the decision is durable, the markers are written
  // again (a marker written twice is harmless: the second closes nothing).
  for (auto& [id, m] : txns_) {
    if (m.state == txn_state::prepare_commit || m.state == txn_state::prepare_abort) {
      (void)complete(m, m.state == txn_state::prepare_commit, now);
    }
  }
  return {};
}

void txn_coordinator::start_unowned() {
  std::lock_guard guard(mu_);
  owns_all_ = false;
  owned_.clear();
  txns_.clear();
  by_producer_.clear();
  markers_in_flight_.clear();
}

bool txn_coordinator::load_partition(int32_t partition, int32_t coordinator_epoch,
                                     timestamp_ms now) {
  uint64_t generation = 0;
  {
    std::lock_guard guard(mu_);
    generation = ++generation_;
    owned_[partition] = partition_ownership{false, coordinator_epoch, generation};
  }
  // Replayed without the lock: the other partitions' ids are served meanwhile, and this
  // partition's answer COORDINATOR_LOAD_IN_PROGRESS.
  std::unordered_map<std::string, txn_metadata> loaded;
  auto replayed = replay_partition(partition, loaded);
  std::lock_guard guard(mu_);
  auto it = owned_.find(partition);
  if (it == owned_.end() || it->second.generation != generation) return false;  // overtaken
  if (!replayed) {
    owned_.erase(it);
    return false;
  }
  const int32_t count = partition_count();
  std::erase_if(txns_, [&](const auto& kv) {
    if (partition_for(kv.first, count) != partition) return false;
    markers_in_flight_.erase(kv.first);
    return true;
  });
  std::erase_if(by_producer_, [&](const auto& kv) { return !txns_.contains(kv.second); });
  for (auto& [id, m] : loaded) {
    if (partition_for(id, count) != partition) continue;  // not this partition's (never written so)
    by_producer_[m.producer_id] = id;
    txns_[id] = std::move(m);
  }
  it->second.loaded = true;
  // The previous coordinator decided these; their markers go out again at this coordinator's
  // epoch with the same producer epoch (TransactionCoordinator.onElection).
  for (auto& [id, m] : txns_) {
    if (partition_for(id, count) != partition) continue;
    if (m.state == txn_state::prepare_commit || m.state == txn_state::prepare_abort) {
      (void)complete(m, m.state == txn_state::prepare_commit, now);
    }
  }
  return true;
}

void txn_coordinator::unload_partition(int32_t partition) {
  std::lock_guard guard(mu_);
  ++generation_;
  owned_.erase(partition);
  if (owns_all_) return;
  const int32_t count = partition_count();
  std::erase_if(txns_, [&](const auto& kv) {
    if (partition_for(kv.first, count) != partition) return false;
    markers_in_flight_.erase(kv.first);
    return true;
  });
  std::erase_if(by_producer_, [&](const auto& kv) { return !txns_.contains(kv.second); });
}

void txn_coordinator::set_marker_queue(txn_marker_queue* queue) {
  std::lock_guard guard(mu_);
  marker_queue_ = queue;
}

int32_t txn_coordinator::partition_count() const {
  return log_.partitions().value_or(config_.state_log_num_partitions);
}

int32_t txn_coordinator::txn_partition(std::string_view transactional_id) const {
  return partition_for(transactional_id, partition_count());
}

error_code txn_coordinator::owner_error_locked(std::string_view transactional_id) const {
  if (owns_all_) return error_code::none;
  auto it = owned_.find(partition_for(transactional_id, partition_count()));
  if (it == owned_.end()) return error_code::not_coordinator;
  return it->second.loaded ? error_code::none : error_code::coordinator_load_in_progress;
}

error_code txn_coordinator::owner_error(std::string_view transactional_id) const {
  std::lock_guard guard(mu_);
  return owner_error_locked(transactional_id);
}

int32_t txn_coordinator::coordinator_epoch_of(std::string_view transactional_id) const {
  if (owns_all_) return 0;
  auto it = owned_.find(partition_for(transactional_id, partition_count()));
  return it == owned_.end() ? 0 : it->second.coordinator_epoch;
}

void txn_coordinator::markers_written(const pending_markers& entry, bool ok, timestamp_ms now) {
  std::lock_guard guard(mu_);
  // Unloaded meanwhile (its flag went with it), or loaded again at a newer epoch whose own
  // entry is in flight now: this one is stale.
  if (owner_error_locked(entry.transactional_id) != error_code::none) return;
  if (coordinator_epoch_of(entry.transactional_id) != entry.marker.coordinator_epoch) return;
  markers_in_flight_.erase(entry.transactional_id);
  if (!ok) return;
  txn_metadata* m = find(entry.transactional_id);
  const txn_state prepare =
      entry.marker.commit ? txn_state::prepare_commit : txn_state::prepare_abort;
  if (m == nullptr || m->state != prepare || m->producer_id != entry.marker.producer_id ||
      m->producer_epoch != entry.marker.producer_epoch) {
    return;
  }
  finish(*m, entry.marker.commit, now);
}

error_code txn_coordinator::find_coordinator() {
  auto t = log_.ensure_topic();
  return t ? error_code::none : t.error();
}

error_code txn_coordinator::persist(const txn_metadata& m, timestamp_ms now) {
  auto topic = log_.ensure_topic();
  if (!topic) return topic.error();
  const std::vector<uint8_t> key = encode_txn_key(m.transactional_id);
  const std::vector<uint8_t> value =
      encode_txn_value(m, txn_log_value_version(transaction_version()));
  auto appended = log_.append(partition_for(m.transactional_id, *topic),
                              build_txn_batch(key, std::span<const uint8_t>(value), now));
  if (!appended) {
    // TransactionStateManager.appendTransactionToLog's mapping of append errors.
    switch (appended.error()) {
      case error_code::unknown_topic_or_partition:
      case error_code::not_enough_replicas:
      case error_code::not_enough_replicas_after_append:
      case error_code::request_timed_out:
      case error_code::kafka_storage_error:
        return error_code::coordinator_not_available;
      case error_code::not_leader_or_follower:
        return error_code::not_coordinator;
      default:
        return error_code::unknown_server_error;
    }
  }
  last_persisted_offset_ = *appended;
  return error_code::none;
}

error_code txn_coordinator::transition(txn_metadata& m, txn_state to, timestamp_ms now,
                                       const std::function<void(txn_metadata&)>& change) {
  if (!valid_transition(m.state, to)) return error_code::invalid_txn_state;
  txn_metadata next = m;
  next.state = to;
  next.txn_last_update_timestamp = now;
  if (to == txn_state::complete_commit || to == txn_state::complete_abort ||
      to == txn_state::empty) {
    next.partitions.clear();
  }
  // Kafka's TxnTransitMetadata records the producer id before the transition as the previous
  // one (PreviousProducerId equals ProducerId unless the transition changed it).
  next.previous_producer_id = m.producer_id;
  if (change) change(next);
  if (auto e = persist(next, now); e != error_code::none) return e;
  if (next.producer_id != m.producer_id) {
    by_producer_.erase(m.producer_id);
    by_producer_[next.producer_id] = next.transactional_id;
  }
  m = std::move(next);
  return error_code::none;
}

error_code txn_coordinator::complete(txn_metadata& m, bool commit, timestamp_ms now) {
  const txn_state prepare = commit ? txn_state::prepare_commit : txn_state::prepare_abort;
  offset_t prepare_offset = -1;
  if (m.state != prepare) {
    if (auto e = transition(m, prepare, now); e != error_code::none) return e;
    prepare_offset = last_persisted_offset_;
  }
  if (markers_in_flight_.contains(m.transactional_id)) return error_code::none;  // sender has them
  const marker_request marker{m.producer_id, m.producer_epoch,
                              coordinator_epoch_of(m.transactional_id), commit};
  if (marker_queue_ != nullptr) {
    // In a cluster every marker goes through the sender, this broker's own partitions' too: it
    // waits until PrepareX is committed, then writes each at its leader of the moment; CompleteX
    // once all are written (markers_written).
    pending_markers entry{
        m.transactional_id, partition_for(m.transactional_id, partition_count()), marker,
        std::vector<std::pair<std::string, int32_t>>(m.partitions.begin(), m.partitions.end()),
        prepare_offset};
    markers_in_flight_.insert(m.transactional_id);
    marker_queue_->enqueue(std::move(entry));
    return error_code::none;
  }
  for (const auto& [topic, partition] : m.partitions) {
    const error_code e = markers_.write_marker(topic, partition, marker);
    // A partition that no longer exists is not an error for the transaction (Kafka drops it
    // too). Otherwise the decision is durable: a marker that could not be written is retried by
    // the next abort_timed_out tick (Kafka's marker channel retries until it is written).
    if (e != error_code::none && e != error_code::unknown_topic_or_partition) {
      return error_code::none;
    }
  }
  finish(m, commit, now);
  return error_code::none;
}

void txn_coordinator::finish(txn_metadata& m, bool commit, timestamp_ms now) {
  // An epoch bump that ran out of epochs hands the next producer id over now that the markers
  // are written (TransactionMetadata.prepareComplete).
  (void)transition(m, commit ? txn_state::complete_commit : txn_state::complete_abort, now,
                   [](txn_metadata& next) {
                     if (next.client_transaction_version < 2 || next.next_producer_id < 0) return;
                     next.previous_producer_id = next.producer_id;
                     next.producer_id = next.next_producer_id;
                     next.next_producer_id = -1;
                     next.last_producer_epoch = next.producer_epoch;
                     next.producer_epoch = 0;
                   });
}

result<producer_id_and_epoch, error_code> txn_coordinator::init_producer_id(
    std::string_view transactional_id, int32_t timeout_ms, producer_id_t expected_producer_id,
    producer_epoch_t expected_epoch, timestamp_ms now) {
  if (transactional_id.empty()) return fail(error_code::invalid_request);
  if (timeout_ms <= 0 || timeout_ms > config_.max_timeout_ms) {
    return fail(error_code::invalid_transaction_timeout);
  }
  std::lock_guard guard(mu_);
  if (auto e = owner_error_locked(transactional_id); e != error_code::none) return fail(e);
  txn_metadata* m = find(transactional_id);
  bool created = false;
  if (m == nullptr) {
    created = true;
    auto id = next_producer_id_();
    if (!id) return fail(id.error());
    txn_metadata fresh;
    fresh.transactional_id = std::string(transactional_id);
    fresh.producer_id = *id;
    fresh.producer_epoch = -1;
    fresh.timeout_ms = timeout_ms;
    fresh.state = txn_state::empty;
    fresh.txn_last_update_timestamp = now;
    m = &txns_.emplace(fresh.transactional_id, std::move(fresh)).first->second;
    by_producer_[m->producer_id] = m->transactional_id;
  }
  // KIP-360: a producer that says who it was must still be that producer (or its epoch
  // before the last bump, a retry).
  if (expected_producer_id >= 0) {
    const bool same =
        m->producer_id == expected_producer_id &&
        (expected_epoch == m->producer_epoch || expected_epoch == m->last_producer_epoch);
    const bool previous =
        m->previous_producer_id == expected_producer_id && expected_epoch >= max_producer_epoch;
    if (!same && !previous) return fail(error_code::producer_fenced);
    // A retry of the InitProducerId that made the current epoch: answered with it again.
    if (m->producer_id == expected_producer_id && expected_epoch == m->last_producer_epoch &&
        m->state == txn_state::empty) {
      return producer_id_and_epoch{m->producer_id, m->producer_epoch};
    }
  }
  switch (m->state) {
    case txn_state::prepare_commit:
    case txn_state::prepare_abort:
    case txn_state::prepare_epoch_fence:
      return fail(error_code::concurrent_transactions);
    case txn_state::ongoing: {
      // Fence the current producer: bump its epoch and abort its transaction with it; the
      // client retries and then gets the next epoch (TransactionCoordinator's
      // PrepareEpochFence path).
      txn_metadata& t = *m;
      if (t.producer_epoch < max_producer_epoch) {
        t.last_producer_epoch = t.producer_epoch;
        ++t.producer_epoch;
      }
      t.client_transaction_version = transaction_version();  // not the client's: the server's
      (void)complete(t, false, now);
      return fail(error_code::concurrent_transactions);
    }
    case txn_state::empty:
    case txn_state::complete_commit:
    case txn_state::complete_abort:
    case txn_state::dead:
      break;
  }
  txn_metadata next = *m;
  if (next.producer_epoch >= max_producer_epoch) {
    auto id = next_producer_id_();
    if (!id) return fail(id.error());
    next.previous_producer_id = next.producer_id;
    next.producer_id = *id;
    next.producer_epoch = 0;
    next.last_producer_epoch = -1;
  } else {
    next.previous_producer_id = next.producer_id;  // as every transition records it
    next.last_producer_epoch = next.producer_epoch;
    ++next.producer_epoch;
  }
  next.timeout_ms = timeout_ms;
  next.state = txn_state::empty;
  next.partitions.clear();
  next.txn_start_timestamp = -1;
  next.txn_last_update_timestamp = now;
  if (auto e = persist(next, now); e != error_code::none) {
    if (created) {  // never written: forgotten again
      by_producer_.erase(m->producer_id);
      txns_.erase(std::string(transactional_id));
    }
    return fail(e);
  }
  by_producer_.erase(m->producer_id);
  *m = std::move(next);
  by_producer_[m->producer_id] = m->transactional_id;
  return producer_id_and_epoch{m->producer_id, m->producer_epoch};
}

error_code txn_coordinator::add_partitions(std::string_view transactional_id,
                                           producer_id_t producer_id, producer_epoch_t epoch,
                                           const std::vector<topic_partition_key>& partitions,
                                           timestamp_ms now) {
  std::lock_guard guard(mu_);
  if (auto e = owner_error_locked(transactional_id); e != error_code::none) return e;
  txn_metadata* m = find(transactional_id);
  if (m == nullptr || m->producer_id != producer_id) return error_code::invalid_producer_id_mapping;
  if (m->producer_epoch != epoch) return error_code::producer_fenced;
  if (m->state == txn_state::prepare_commit || m->state == txn_state::prepare_abort ||
      m->state == txn_state::prepare_epoch_fence) {
    return error_code::concurrent_transactions;
  }
  if (m->state == txn_state::dead) return error_code::invalid_txn_state;
  bool all_in = m->state == txn_state::ongoing;
  for (const auto& p : partitions) all_in = all_in && m->partitions.contains(p);
  if (all_in) return error_code::none;
  txn_metadata next = *m;
  for (const auto& p : partitions) next.partitions.insert(p);
  if (next.state != txn_state::ongoing) next.txn_start_timestamp = now;
  next.state = txn_state::ongoing;
  next.txn_last_update_timestamp = now;
  if (auto e = persist(next, now); e != error_code::none) return e;
  *m = std::move(next);
  return error_code::none;
}

error_code txn_coordinator::verify_partition(std::string_view transactional_id,
                                             producer_id_t producer_id, producer_epoch_t epoch,
                                             const topic_partition_key& partition) const {
  std::lock_guard guard(mu_);
  if (auto e = owner_error_locked(transactional_id); e != error_code::none) return e;
  const txn_metadata* m = find(transactional_id);
  if (m == nullptr || m->producer_id != producer_id) return error_code::invalid_producer_id_mapping;
  if (m->producer_epoch != epoch) return error_code::producer_fenced;
  if (m->state == txn_state::prepare_commit || m->state == txn_state::prepare_abort) {
    return error_code::concurrent_transactions;
  }
  // Whatever the state otherwise: the append itself checks the transaction again.
  return m->partitions.contains(partition) ? error_code::none : error_code::transaction_abortable;
}

bool txn_coordinator::in_transaction(producer_id_t producer_id, producer_epoch_t epoch,
                                     const topic_partition_key& partition) const {
  std::lock_guard guard(mu_);
  const txn_metadata* m = find_by_producer(producer_id);
  return m != nullptr && m->producer_epoch == epoch && m->state == txn_state::ongoing &&
         m->partitions.contains(partition);
}

end_txn_result txn_coordinator::end_txn(std::string_view transactional_id,
                                        producer_id_t producer_id, producer_epoch_t epoch,
                                        bool commit, int16_t client_transaction_version,
                                        timestamp_ms now) {
  std::lock_guard guard(mu_);
  if (auto e = owner_error_locked(transactional_id); e != error_code::none) return {e};
  txn_metadata* m = find(transactional_id);
  if (m == nullptr) return {error_code::invalid_producer_id_mapping};
  // Transactions v2 bump the epoch at every EndTxn, so the same epoch again is the next
  // transaction's and a retry is recognized by the epoch just below the current one (or, after
  // the epoch ran out, by the previous producer id at the last epoch).
  const bool current_v2 = m->client_transaction_version >= 2;
  const bool retry_on_overflow = current_v2 && m->previous_producer_id == producer_id &&
                                 epoch == max_producer_epoch && m->producer_epoch == 0;
  const bool retry_on_bump = current_v2 && m->producer_epoch == epoch + 1;
  bool valid_epoch = epoch == m->producer_epoch;
  if (current_v2) {
    switch (m->state) {
      case txn_state::prepare_commit:
      case txn_state::prepare_abort:
        valid_epoch = retry_on_bump;
        break;
      case txn_state::complete_commit:
      case txn_state::complete_abort:
        valid_epoch = retry_on_bump || retry_on_overflow;
        break;
      default:
        break;
    }
  }
  if (m->producer_id != producer_id && !retry_on_overflow) {
    return {error_code::invalid_producer_id_mapping};
  }
  if (!valid_epoch) return {error_code::producer_fenced};
  const end_txn_result current{error_code::none, m->producer_id, m->producer_epoch};
  switch (m->state) {
    case txn_state::ongoing: {
      const txn_metadata before = *m;
      m->client_transaction_version = client_transaction_version;
      if (client_transaction_version >= 2) {
        if (m->producer_epoch >= max_producer_epoch) {
          auto id = next_producer_id_();
          if (!id) return {id.error()};
          m->next_producer_id = *id;
        }
        m->last_producer_epoch = m->producer_epoch;
        ++m->producer_epoch;
      }
      if (error_code e = complete(*m, commit, now); e != error_code::none) {
        *m = before;  // PrepareX was not written: nothing happened
        return {e};
      }
      return {error_code::none, m->producer_id, m->producer_epoch};
    }
    case txn_state::complete_commit:
      return commit ? current : end_txn_result{error_code::invalid_txn_state};
    case txn_state::complete_abort:
      return commit ? end_txn_result{error_code::invalid_txn_state} : current;
    case txn_state::prepare_commit:
      return {commit ? error_code::concurrent_transactions : error_code::invalid_txn_state};
    case txn_state::prepare_abort:
      return {commit ? error_code::invalid_txn_state : error_code::concurrent_transactions};
    case txn_state::prepare_epoch_fence:
      return {error_code::concurrent_transactions};
    case txn_state::empty:
    case txn_state::dead:
      return {error_code::invalid_txn_state};
  }
  return {error_code::invalid_txn_state};
}

int32_t txn_coordinator::abort_timed_out(timestamp_ms now) {
  std::lock_guard guard(mu_);
  int32_t aborted = 0;
  for (auto& [id, m] : txns_) {
    if (m.state == txn_state::prepare_commit || m.state == txn_state::prepare_abort) {
      (void)complete(m, m.state == txn_state::prepare_commit, now);  // markers not yet written
      continue;
    }
    if (m.state != txn_state::ongoing || m.txn_start_timestamp + m.timeout_ms > now) continue;
    if (m.producer_epoch < max_producer_epoch) {
      m.last_producer_epoch = m.producer_epoch;
      ++m.producer_epoch;
    }
    m.client_transaction_version = transaction_version();  // not the client's: the server's
    (void)complete(m, false, now);
    ++aborted;
  }
  return aborted;
}

int32_t txn_coordinator::remove_expired(timestamp_ms now) {
  std::lock_guard guard(mu_);
  // Not ensure_topic(): a broker that never saw a transactional id must not get
  // __transaction_state from this timer.
  const std::optional<int32_t> partitions = log_.partitions();
  if (!partitions || txns_.empty()) return 0;
  std::vector<std::string> expired;
  for (const auto& [id, m] : txns_) {
    const bool allowed = m.state == txn_state::empty || m.state == txn_state::complete_commit ||
                         m.state == txn_state::complete_abort;
    if (allowed && m.txn_last_update_timestamp <= now - config_.transactional_id_expiration_ms) {
      expired.push_back(id);
    }
  }
  int32_t removed = 0;
  for (const std::string& id : expired) {
    const std::vector<uint8_t> key = encode_txn_key(id);
    // Kafka moves the id to Dead while its tombstone is appended and forgets it once written;
    // under the one mutex nothing can observe it in between, so it goes straight away.
    auto appended =
        log_.append(partition_for(id, *partitions), build_txn_batch(key, std::nullopt, now));
    if (!appended) continue;  // kept, tried again at the next interval
    auto it = txns_.find(id);
    auto owner = by_producer_.find(it->second.producer_id);
    if (owner != by_producer_.end() && owner->second == id) by_producer_.erase(owner);
    txns_.erase(it);
    ++removed;
  }
  return removed;
}

result<txn_metadata, error_code> txn_coordinator::describe_transaction(
    std::string_view transactional_id) const {
  if (transactional_id.empty()) return fail(error_code::invalid_request);
  std::lock_guard guard(mu_);
  if (auto e = owner_error_locked(transactional_id); e != error_code::none) return fail(e);
  const txn_metadata* m = find(transactional_id);
  // A Dead id is being expired: Kafka answers as if it were gone already.
  if (m == nullptr || m->state == txn_state::dead) {
    return fail(error_code::transactional_id_not_found);
  }
  return *m;
}

list_txn_result txn_coordinator::list_transactions(const list_txn_filter& filter,
                                                   timestamp_ms now) const {
  list_txn_result out;
  std::vector<txn_state> states;
  for (std::string_view name : filter.states) {
    // Kafka reads the filters into a set: a name given twice is reported once.
    auto& unknown = out.unknown_state_filters;
    if (auto s = state_from_name(name)) {
      states.push_back(*s);
    } else if (std::find(unknown.begin(), unknown.end(), name) == unknown.end()) {
      unknown.emplace_back(name);
    }
  }
  // Kafka compiles the pattern with RE2 (re2j) and asks for a full match (base/regex.h). A
  // pattern that does not compile fails the whole request with only the error code set.
  std::optional<re2_regex> pattern;
  if (filter.transactional_id_pattern && !filter.transactional_id_pattern->empty()) {
    pattern = compile_re2_regex(*filter.transactional_id_pattern, nullptr);
    if (!pattern) return list_txn_result{error_code::invalid_regular_expression, {}, {}};
  }
  std::unique_lock guard(mu_);
  // Kafka's listTransactionStates: an error while any owned partition is still loading.
  for (const auto& [p, o] : owned_) {
    if (!o.loaded) return list_txn_result{error_code::coordinator_load_in_progress, {}, {}};
  }
  for (const auto& [id, m] : txns_) {
    if (m.state == txn_state::dead) continue;
    if (!filter.producer_ids.empty() &&
        std::find(filter.producer_ids.begin(), filter.producer_ids.end(), m.producer_id) ==
            filter.producer_ids.end()) {
      continue;
    }
    // As Kafka: any state filter given, even only unknown names, keeps just the known ones' states.
    if (!filter.states.empty() &&
        std::find(states.begin(), states.end(), m.state) == states.end()) {
      continue;
    }
    if (filter.duration_ms >= 0 && now - m.txn_start_timestamp <= filter.duration_ms) continue;
    out.transactions.push_back(listed_txn{id, m.producer_id, m.state});
  }
  guard.unlock();
  // Matched outside the lock: a regex match is the slow part of this and nothing else waits.
  if (pattern) {
    std::erase_if(out.transactions, [&pattern](const listed_txn& t) {
      return !regex_full_match(*pattern, t.transactional_id);
    });
  }
  std::sort(out.transactions.begin(), out.transactions.end(),
            [](const listed_txn& a, const listed_txn& b) {
              return a.transactional_id < b.transactional_id;
            });
  return out;
}

std::optional<txn_metadata> txn_coordinator::describe(std::string_view transactional_id) const {
  std::lock_guard guard(mu_);
  const txn_metadata* m = find(transactional_id);
  return m ? std::optional<txn_metadata>(*m) : std::nullopt;
}

size_t txn_coordinator::size() const {
  std::lock_guard guard(mu_);
  return txns_.size();
}

}  // namespace tarn::txn
