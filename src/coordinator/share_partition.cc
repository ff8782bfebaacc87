// The share-partition state machine (share_partition.h): acquisition, acknowledgement, lock
// expiry and the SPSO's advance, as Kafka 4.4's SharePartition.
#include "coordinator/share_partition.h"

#include <algorithm>

namespace tarn::coordinator {

using protocol::error_code;

error_code validate_acknowledgement_batches(std::span<const acknowledgement_batch> batches,
                                            int8_t max_type) {
  int64_t previous_last = -1;
  for (const acknowledgement_batch& b : batches) {
    if (b.first_offset > b.last_offset || b.first_offset < previous_last) {
      return error_code::invalid_request;
    }
    if (b.acknowledge_types.empty()) return error_code::invalid_request;
    // Unsigned: a hostile range (INT64_MIN to INT64_MAX) must not overflow.
    const uint64_t span =
        static_cast<uint64_t>(b.last_offset) - static_cast<uint64_t>(b.first_offset);
    if (b.acknowledge_types.size() > 1 && span != b.acknowledge_types.size() - 1) {
      return error_code::invalid_request;
    }
    for (int8_t t : b.acknowledge_types) {
      if (t < 0 || t > max_type) return error_code::invalid_request;
    }
    previous_last = b.last_offset;
  }
  return error_code::none;
}

void share_partition::begin_change() { journal_ = change_journal{start_offset_, end_offset(), {}}; }

void share_partition::undo() {
  if (!journal_) return;
  change_journal j = std::move(*journal_);
  journal_.reset();
  // Back to the window [SPSO, SPEO) of begin_change(): records added since are cut off, records
  // dropped from the front come back (as placeholders the journal then fills in).
  if (start_offset_ >= j.end_offset) {
    records_.clear();
    start_offset_ = j.end_offset;
  }
  while (end_offset() > j.end_offset) records_.pop_back();
  while (start_offset_ > j.start_offset) {
    records_.emplace_front();
    --start_offset_;
  }
  // Newest first, so a record changed twice ends with its first saved value.
  for (auto it = j.saved.rbegin(); it != j.saved.rend(); ++it) {
    records_[static_cast<size_t>(it->first - start_offset_)] = std::move(it->second);
  }
  // Records came back as they were: any may be Available or Acquired with any deadline.
  available_from_ = start_offset_;
  earliest_deadline_ = INT64_MIN;
  deadline_exact_ = false;
  dirty_ = true;
}

share_partition::in_flight_record& share_partition::mutable_record(size_t i) {
  const int64_t offset = start_offset_ + static_cast<int64_t>(i);
  if (journal_ && offset < journal_->end_offset) journal_->saved.emplace_back(offset, records_[i]);
  dirty_ = true;
  return records_[i];
}

void share_partition::pop_front_record() {
  if (journal_ && start_offset_ < journal_->end_offset) {
    journal_->saved.emplace_back(start_offset_, std::move(records_.front()));
  }
  if (records_.front().state == record_state::acquired) lock_released();
  records_.pop_front();
  ++start_offset_;
  dirty_ = true;
}

void share_partition::give_back(int64_t offset, in_flight_record& r) {
  // Kafka archives a record released (or timed out) once it was delivered the limit's times.
  r.state = r.delivery_count >= config_.delivery_count_limit ? record_state::archived
                                                             : record_state::available;
  r.holder.reset();
  r.lock_deadline_ms = 0;
  lock_released();
  if (r.state == record_state::available) available_from_ = std::min(available_from_, offset);
}

void share_partition::advance_start() {
  while (!records_.empty() && (records_.front().state == record_state::acknowledged ||
                               records_.front().state == record_state::archived)) {
    pop_front_record();
  }
}

void share_partition::expire_locks(int64_t now_ms) {
  if (earliest_deadline_ > now_ms) return;  // no lock is due
  bool changed = false;
  int64_t earliest = INT64_MAX;
  for (size_t i = 0; i < records_.size(); ++i) {
    const in_flight_record& r = records_[i];
    if (r.state != record_state::acquired) continue;
    if (r.lock_deadline_ms <= now_ms) {
      give_back(start_offset_ + static_cast<int64_t>(i), mutable_record(i));
      changed = true;
    } else {
      earliest = std::min(earliest, r.lock_deadline_ms);
    }
  }
  earliest_deadline_ = earliest;
  deadline_exact_ = true;
  if (changed) advance_start();
}

std::optional<int64_t> share_partition::next_lock_deadline() const {
  if (!deadline_exact_) {
    int64_t earliest = INT64_MAX;
    for (const in_flight_record& r : records_) {
      if (r.state == record_state::acquired) earliest = std::min(earliest, r.lock_deadline_ms);
    }
    earliest_deadline_ = earliest;
    deadline_exact_ = true;
  }
  if (earliest_deadline_ == INT64_MAX) return std::nullopt;
  return earliest_deadline_;
}

std::optional<int64_t> share_partition::next_fetch_offset(int64_t now_ms) {
  expire_locks(now_ms);
  for (int64_t o = std::max(available_from_, start_offset_); o < end_offset(); ++o) {
    if (records_[static_cast<size_t>(o - start_offset_)].state == record_state::available) {
      available_from_ = o;
      return o;
    }
  }
  available_from_ = end_offset();
  if (records_.size() < static_cast<size_t>(std::max(config_.max_record_locks, 0))) {
    return end_offset();
  }
  return std::nullopt;
}

int64_t share_partition::acquirable_from(int64_t offset) const {
  int64_t n = 0;
  for (int64_t o = std::max({offset, available_from_, start_offset_}); o < end_offset(); ++o) {
    if (records_[static_cast<size_t>(o - start_offset_)].state == record_state::available) ++n;
  }
  const int64_t locks_left =
      std::max<int64_t>(config_.max_record_locks, 0) - static_cast<int64_t>(records_.size());
  return n + std::max<int64_t>(locks_left, 0);
}

std::vector<acquired_range> share_partition::acquire(std::string_view member_id,
                                                     std::span<const fetched_batch> batches,
                                                     int32_t max_records, int64_t now_ms,
                                                     share_acquire_mode mode) {
  expire_locks(now_ms);
  std::vector<acquired_range> out;
  int32_t taken = 0;
  const int64_t deadline = now_ms + config_.record_lock_duration_ms;
  std::shared_ptr<const std::string> holder;  // made at the first record taken
  auto take = [&](int64_t offset, in_flight_record& r) {
    if (!holder) holder = std::make_shared<const std::string>(member_id);
    r.state = record_state::acquired;
    ++r.delivery_count;
    r.holder = holder;
    r.lock_deadline_ms = deadline;
    earliest_deadline_ = std::min(earliest_deadline_, deadline);
    ++taken;
    if (!out.empty() && out.back().last_offset + 1 == offset &&
        out.back().delivery_count == r.delivery_count) {
      out.back().last_offset = offset;
    } else {
      out.push_back({offset, offset, r.delivery_count});
    }
  };
  const auto lock_limit = static_cast<size_t>(std::max(config_.max_record_locks, 0));
  // batch_optimized: the last offset of the log batch whose new records this call began; up to
  // it neither limit stops the walk.
  int64_t finishing_until = -1;
  // Kafka 4.4's throttling of records near the delivery-count limit (SharePartition, KAFKA-17541),
  // so that one bad record does not take the records delivered with it to the limit too. A log
  // batch holding an Available record delivered throttle_limit times or more (half the limit
  // rounded up, at least 2) is acquired alone: not after other records, and nothing after it.
  // Within it, from its first such record, at most its length >> (delivery count - throttle_limit
  // + 1) records (at least one), and a record on its last delivery is handed out by itself.
  const int32_t max_deliveries = config_.delivery_count_limit;
  const int32_t throttle_limit = std::max(2, (max_deliveries + 1) / 2);
  auto throttled = [&](const fetched_batch& b) {
    const int64_t to = std::min(b.last_offset, end_offset() - 1);
    for (int64_t o = std::max(b.base_offset, start_offset_); o <= to; ++o) {
      const in_flight_record& r = records_[static_cast<size_t>(o - start_offset_)];
      if (r.state == record_state::available && r.delivery_count >= throttle_limit) return true;
    }
    return false;
  };
  auto walk = [&] {
    for (const fetched_batch& b : batches) {
      const bool throttling = !b.never_delivered() && throttled(b);
      if (throttling && taken > 0) return;
      int64_t throttle_cap = -1;  // set at the batch's first record at or past throttle_limit
      for (int64_t o = std::max(b.base_offset, start_offset_); o <= b.last_offset; ++o) {
        const bool finishing = o <= finishing_until;
        if (taken >= max_records && !finishing) return;
        if (o < end_offset()) {
          const auto i = static_cast<size_t>(o - start_offset_);
          if (records_[i].state != record_state::available) continue;
          in_flight_record& r = mutable_record(i);
          if (b.never_delivered()) {
            r.state = record_state::archived;
            continue;
          }
          if (throttling) {
            if (max_deliveries > 2 && r.delivery_count == max_deliveries - 1 && taken > 0) return;
            if (r.delivery_count >= throttle_limit && throttle_cap < 0) {
              const int shift = std::min(r.delivery_count - throttle_limit + 1, 62);
              throttle_cap = std::max<int64_t>(1, (b.last_offset - b.base_offset + 1) >> shift);
            }
          }
          take(o, r);
          // batch_optimized: records given back are taken to their log batch's end too, as
          // Kafka takes an Available in-flight batch whole.
          if (mode == share_acquire_mode::batch_optimized) {
            finishing_until = std::max(finishing_until, b.last_offset);
          }
          if (throttling && ((max_deliveries > 2 && r.delivery_count == max_deliveries) ||
                             (throttle_cap > 0 && taken >= throttle_cap))) {
            return;
          }
          continue;
        }
        // Past the SPEO: offsets the log does not hold (compaction) are archived on the way, but
        // only between batches given here. Batches that start past the SPEO (a later chunk of a
        // read whose first chunk could not be acquired, the record locks being full then) say
        // nothing of the offsets before them: archiving those would lose records never delivered.
        if (end_offset() < o && end_offset() < batches.front().base_offset) return;
        if (throttling && taken > 0) return;  // Kafka acquires nothing new after throttled ones
        while (end_offset() < o && (records_.size() < lock_limit || finishing)) {
          records_.push_back({record_state::archived, 0, 0, {}});
          dirty_ = true;
        }
        if (records_.size() >= lock_limit && !finishing) return;
        records_.push_back({});
        dirty_ = true;
        if (mode == share_acquire_mode::batch_optimized) finishing_until = b.last_offset;
        if (b.never_delivered()) {
          records_.back().state = record_state::archived;
          continue;
        }
        take(o, records_.back());
      }
    }
  };
  walk();
  advance_start();
  return out;
}

aborted_batch_filter::aborted_batch_filter(std::vector<aborted_transaction> aborted)
    : pending_(std::move(aborted)) {
  std::stable_sort(pending_.begin(), pending_.end(),
                   [](const auto& a, const auto& b) { return a.first_offset < b.first_offset; });
}

bool aborted_batch_filter::aborted(int64_t base_offset, int64_t producer_id, bool is_transactional,
                                   bool is_control) {
  while (next_ < pending_.size() && pending_[next_].first_offset <= base_offset) {
    open_.push_back(pending_[next_++].producer_id);
  }
  auto it = std::find(open_.begin(), open_.end(), producer_id);
  if (it == open_.end() || !is_transactional) return false;
  if (is_control) {
    open_.erase(it);  // the ABORT marker ends the aborted transaction
    return false;
  }
  return true;
}

error_code share_partition::acknowledge(std::string_view member_id,
                                        std::span<const acknowledgement_batch> batches,
                                        int64_t now_ms) {
  expire_locks(now_ms);
  auto type_of = [](const acknowledgement_batch& b, int64_t offset) {
    return static_cast<acknowledge_type>(
        b.acknowledge_types.size() == 1
            ? b.acknowledge_types.front()
            : b.acknowledge_types[static_cast<size_t>(offset - b.first_offset)]);
  };
  // Validate everything first: Kafka rolls back a partially applied acknowledgement.
  for (const acknowledgement_batch& b : batches) {
    if (b.first_offset < start_offset_ || b.last_offset >= end_offset()) {
      return error_code::invalid_record_state;
    }
    for (int64_t o = b.first_offset; o <= b.last_offset; ++o) {
      const in_flight_record& r = records_[static_cast<size_t>(o - start_offset_)];
      if (r.state != record_state::acquired || !r.held_by(member_id)) {
        return error_code::invalid_record_state;
      }
      if (!config_.renew_acknowledge_enabled && type_of(b, o) == acknowledge_type::renew) {
        return error_code::invalid_record_state;
      }
    }
  }
  for (const acknowledgement_batch& b : batches) {
    for (int64_t o = b.first_offset; o <= b.last_offset; ++o) {
      in_flight_record& r = mutable_record(static_cast<size_t>(o - start_offset_));
      switch (type_of(b, o)) {
        case acknowledge_type::accept:
          r.state = record_state::acknowledged;
          r.holder.reset();
          lock_released();
          break;
        case acknowledge_type::release:
          give_back(o, r);
          break;
        case acknowledge_type::gap:
        case acknowledge_type::reject:
          r.state = record_state::archived;
          r.holder.reset();
          lock_released();
          break;
        case acknowledge_type::renew:
          r.lock_deadline_ms = now_ms + config_.record_lock_duration_ms;
          lock_released();  // the earliest deadline may have moved later
          break;
      }
    }
  }
  advance_start();
  return error_code::none;
}

bool share_partition::release_member(std::string_view member_id, int64_t now_ms) {
  expire_locks(now_ms);
  bool released = false;
  for (size_t i = 0; i < records_.size(); ++i) {
    const in_flight_record& r = records_[i];
    if (r.state == record_state::acquired && r.held_by(member_id)) {
      give_back(start_offset_ + static_cast<int64_t>(i), mutable_record(i));
      released = true;
    }
  }
  advance_start();
  return released;
}

void share_partition::reset_start_offset(int64_t offset) {
  while (!records_.empty() && start_offset_ < offset) pop_front_record();
  if (start_offset_ < offset) {
    start_offset_ = offset;
    dirty_ = true;
  }
  advance_start();
}

share_partition share_partition::restore(share_partition_config config, int64_t start_offset,
                                         std::span<const state_batch> batches) {
  share_partition p(config, start_offset);
  for (const state_batch& b : batches) {
    if (b.last_offset < p.end_offset() || b.first_offset > b.last_offset) continue;
    const int64_t last = std::min(b.last_offset, start_offset + max_restored_records - 1);
    while (p.end_offset() < b.first_offset && p.end_offset() <= last) p.records_.push_back({});
    while (p.end_offset() <= last) {
      in_flight_record r;
      // Acquired is never persisted; an unknown state id is taken as Available (delivered again
      // rather than lost).
      r.state = b.delivery_state == static_cast<int8_t>(record_state::acknowledged)
                    ? record_state::acknowledged
                : b.delivery_state == static_cast<int8_t>(record_state::archived)
                    ? record_state::archived
                    : record_state::available;
      r.delivery_count = b.delivery_count;
      p.records_.push_back(std::move(r));
    }
  }
  p.advance_start();
  return p;
}

std::vector<state_batch> share_partition::persisted_batches() const {
  std::vector<state_batch> out;
  for (size_t i = 0; i < records_.size(); ++i) {
    const in_flight_record& r = records_[i];
    const int64_t offset = start_offset_ + static_cast<int64_t>(i);
    const auto state =
        static_cast<int8_t>(r.state == record_state::acquired ? record_state::available : r.state);
    if (!out.empty() && out.back().delivery_state == state &&
        out.back().delivery_count == r.delivery_count) {
      out.back().last_offset = offset;
    } else {
      out.push_back({offset, offset, state, r.delivery_count});
    }
  }
  return out;
}

std::optional<share_partition::record_view> share_partition::record(int64_t offset) const {
  if (offset < start_offset_ || offset >= end_offset()) return std::nullopt;
  const in_flight_record& r = records_[static_cast<size_t>(offset - start_offset_)];
  return record_view{r.state, r.delivery_count, r.holder ? *r.holder : std::string(),
                     r.lock_deadline_ms};
}

size_t share_partition::acquired_count() const {
  return static_cast<size_t>(std::count_if(records_.begin(), records_.end(), [](const auto& r) {
    return r.state == record_state::acquired;
  }));
}

size_t share_partition::finished_count() const {
  return static_cast<size_t>(std::count_if(records_.begin(), records_.end(), [](const auto& r) {
    return r.state == record_state::acknowledged || r.state == record_state::archived;
  }));
}

}  // namespace tarn::coordinator
