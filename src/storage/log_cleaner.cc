// Compaction of one log: see log_cleaner.h. Kafka's Cleaner (LogCleaner.scala) and
// LogCleanerManager.cleanableOffsets are the models.
#include "storage/log_cleaner.h"

#include <unistd.h>

#include <algorithm>
#include <thread>

#include "fmt/format.h"
#include "record/record_batch.h"
#include "storage/batch_filter.h"
#include "storage/io.h"
#include "storage/txn_index.h"

namespace tarn::storage {
namespace {

int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

storage_error corrupt_segment(const segment_snapshot& seg, int64_t position, std::string what) {
  return {storage_errc::corrupt,
          fmt::format("{} at position {}: {}", seg.file->path.string(), position, std::move(what))};
}

// Calls f(batch) for each whole batch of `seg` from its start, reading `buffer`-sized chunks
// (grown to hold a larger batch) until f returns false. f returns result<bool, storage_error>.
template <typename F>
result<void, storage_error> for_each_batch(const segment_snapshot& seg,
                                           std::vector<uint8_t>& buffer, throttler* throttle,
                                           F&& f) {
  int64_t position = 0;
  while (position < seg.size) {
    const size_t want = static_cast<size_t>(
        std::min<int64_t>(static_cast<int64_t>(buffer.size()), seg.size - position));
    auto r =
        pread_exact(seg.file->fd.get(), std::span(buffer.data(), want), position, seg.file->path);
    if (!r) return r;
    if (throttle != nullptr) throttle->maybe_throttle(static_cast<int64_t>(want));
    record::batch_reader reader(std::span<const uint8_t>(buffer.data(), want));
    record::record_batch_view batch;
    size_t consumed = 0;
    while (reader.next(batch)) {
      if (batch.magic() != record::magic_v2) {
        return fail(corrupt_segment(seg, position + static_cast<int64_t>(consumed),
                                    fmt::format("magic {}", batch.magic())));
      }
      auto go_on = f(batch);
      if (!go_on) return fail(go_on.error());
      if (!*go_on) return {};
      consumed = reader.position();
    }
    if (consumed == 0) {
      // The next batch does not fit the buffer: grow it to that batch (bounded by the segment).
      if (want < record::log_overhead || reader.stop() == record::batch_stop::invalid_length) {
        return fail(corrupt_segment(seg, position, "no whole batch"));
      }
      const record::record_batch_view head(std::span<const uint8_t>(buffer.data(), want));
      const int64_t size = int64_t{head.batch_length()} + record::log_overhead;
      if (size <= static_cast<int64_t>(want) || size > seg.size - position) {
        return fail(corrupt_segment(seg, position, fmt::format("batch of {} bytes", size)));
      }
      buffer.resize(static_cast<size_t>(size));
      continue;
    }
    position += static_cast<int64_t>(consumed);
  }
  return {};
}

// Kafka's logCleanerFilter (Cleaner.cleanInto): batches of aborted transactions go whole, a
// marker goes once no batch of its transaction is left before it and its delete horizon passed,
// the last batch of a live producer and the round's last batch keep at least their header.
class cleaner_filter final : public record_filter {
 public:
  cleaner_filter(timestamp_ms now, int64_t delete_retention_ms, const offset_map& map,
                 const std::map<producer_id_t, producer_last_record>& producers,
                 offset_t upper_bound_offset, cleaned_txn_metadata& txns,
                 size_t max_uncompressed_bytes, cleaner_stats& stats)
      : record_filter(now, delete_retention_ms),
        map_(map),
        producers_(producers),
        upper_bound_offset_(upper_bound_offset),
        txns_(txns),
        max_uncompressed_bytes_(max_uncompressed_bytes),
        stats_(stats) {}

  // A control record that did not decode: the cleaning fails (Kafka throws).
  const std::optional<storage_error>& error() const { return error_; }

  batch_retention_result check_batch_retention(const record::record_batch_view& batch) override {
    bool can_discard = false;
    if (batch.is_control()) {
      auto d = txns_.on_control_batch_read(batch, max_uncompressed_bytes_);
      if (!d) error_ = d.error();
      can_discard = d && *d;
      // Markers ride on the tombstone rule: the first cleaning that may drop one sets its
      // batch's delete horizon, a cleaning past the horizon drops it.
      discard_batch_records_ =
          can_discard && batch.has_delete_horizon() && batch.base_timestamp() <= current_time();
    } else {
      can_discard = txns_.on_batch_read(batch);
      discard_batch_records_ = can_discard;
    }
    batch_retention_result r;
    if (batch.has_producer_id() && is_last_batch_of_producer(batch)) {
      // The batch holds the producer's last sequence (or, a marker, its last epoch).
      r.retention = batch_retention::retain_empty;
    } else if (batch.next_offset() == upper_bound_offset_) {
      // The last batch of the cleaning round stays, so the log's end offset information does.
      r.retention = batch_retention::retain_empty;
    } else if (discard_batch_records_) {
      r.retention = batch_retention::remove;
    } else {
      r.retention = batch_retention::remove_empty;
    }
    r.contains_marker_for_empty_txn = can_discard && batch.is_control();
    return r;
  }

  bool should_retain_record(const record::record_batch_view& batch,
                            const filtered_record& rec) override {
    // The batch stays only for its producer's sequence and epoch; its records go.
    if (discard_batch_records_) return false;
    if (batch.is_control()) return true;
    if (rec.offset > map_.latest_offset()) return true;  // not looked at by this round's map
    if (!rec.record->key) {
      ++stats_.invalid_messages_read;
      return false;
    }
    const bool latest_for_key = rec.offset >= map_.get(*rec.record->key);
    const bool retain_deletes =
        !batch.has_delete_horizon() || current_time() < batch.base_timestamp();
    return latest_for_key && (rec.record->value.has_value() || retain_deletes);
  }

 private:
  bool is_last_batch_of_producer(const record::record_batch_view& batch) const {
    auto it = producers_.find(batch.producer_id());
    if (it == producers_.end()) return false;
    if (it->second.last_data_offset >= 0) return batch.last_offset() == it->second.last_data_offset;
    return batch.is_control() && batch.producer_epoch() == it->second.epoch;
  }

  const offset_map& map_;
  const std::map<producer_id_t, producer_last_record>& producers_;
  const offset_t upper_bound_offset_;
  cleaned_txn_metadata& txns_;
  const size_t max_uncompressed_bytes_;
  cleaner_stats& stats_;
  bool discard_batch_records_ = false;
  std::optional<storage_error> error_;
};

// UnifiedLog.collectAbortedTransactions(from, upper) over the log's aborted transactions: those
// whose marker is at or after `from` and that began before `upper`.
std::vector<aborted_txn> aborted_txns_in(const std::vector<aborted_txn>& all, offset_t from,
                                         offset_t upper) {
  std::vector<aborted_txn> out;
  for (const aborted_txn& t : all) {
    if (t.last_offset >= from && t.first_offset < upper) out.push_back(t);
  }
  return out;
}

// Kafka's LogSegments.logSegments(from, to) over the rolled segments (the last of which ends
// where the active segment begins): the segment holding `from` and those after it that start
// before `to`.
std::vector<segment_snapshot> segments_in(const std::vector<segment_snapshot>& all,
                                          offset_t active_base, offset_t from, offset_t to) {
  std::vector<segment_snapshot> out;
  for (size_t i = 0; i < all.size(); ++i) {
    const offset_t end = i + 1 < all.size() ? all[i + 1].base_offset : active_base;
    const bool holds_from = end > from;
    if (holds_from && all[i].base_offset < to) out.push_back(all[i]);
  }
  return out;
}

}  // namespace

void throttler::maybe_throttle(int64_t observed_bytes) {
  if (bytes_per_second_ >= 1.7976931348623157e308) return;
  constexpr auto check_interval = std::chrono::milliseconds(300);
  std::unique_lock lock(mu_);
  observed_so_far_ += observed_bytes;
  const auto now = std::chrono::steady_clock::now();
  const auto elapsed = now - period_start_;
  if (elapsed < check_interval || stopped_) return;
  const double elapsed_s = std::chrono::duration<double>(elapsed).count();
  const double rate = static_cast<double>(observed_so_far_) / elapsed_s;
  if (rate > bytes_per_second_) {
    const double target_s = static_cast<double>(observed_so_far_) / bytes_per_second_;
    const auto sleep = std::chrono::duration<double>(target_s - elapsed_s);
    stopped_cv_.wait_for(lock, sleep, [&] { return stopped_; });
  }
  period_start_ = std::chrono::steady_clock::now();
  observed_so_far_ = 0;
}

void throttler::stop() {
  std::lock_guard lock(mu_);
  stopped_ = true;
  stopped_cv_.notify_all();
}

void cleaned_txn_metadata::add_aborted_txns(std::span<const aborted_txn> txns) {
  for (const aborted_txn& t : txns) aborted_.push(t);
}

void cleaned_txn_metadata::consume_aborted_txns_up_to(offset_t offset) {
  while (!aborted_.empty() && aborted_.top().first_offset <= offset) {
    // A transaction added again (it spans segments) keeps what was observed of it.
    ongoing_aborted_.try_emplace(aborted_.top().producer_id,
                                 aborted_in_progress{aborted_.top(), {}});
    aborted_.pop();
  }
}

bool cleaned_txn_metadata::on_batch_read(const record::record_batch_view& batch) {
  consume_aborted_txns_up_to(batch.last_offset());
  if (!batch.is_transactional()) return false;
  auto it = ongoing_aborted_.find(batch.producer_id());
  if (it != ongoing_aborted_.end()) {
    it->second.last_observed_batch_offset = batch.last_offset();
    return true;
  }
  ongoing_committed_.insert(batch.producer_id());
  return false;
}

result<bool, storage_error> cleaned_txn_metadata::on_control_batch_read(
    const record::record_batch_view& batch, size_t max_uncompressed_bytes) {
  consume_aborted_txns_up_to(batch.last_offset());
  const auto corrupt = [&](std::string_view what) {
    return storage_error{storage_errc::corrupt,
                         fmt::format("control batch at offset {}: {}", batch.base_offset(), what)};
  };
  auto records = record::batch_records::open(batch, max_uncompressed_bytes);
  if (!records) return fail(corrupt(records.error().message));
  record::record_reader reader = records->reader();
  record::record_view rec;
  if (!reader.next(rec)) {
    if (reader.error()) return fail(corrupt(record::describe(*reader.error())));
    return true;  // emptied by an earlier cleaning: it may go
  }
  // ControlRecordType.parse: int16 version (not negative), int16 type.
  if (!rec.key || rec.key->size() < 4) return fail(corrupt("control record key too short"));
  const auto& key = *rec.key;
  const auto version = static_cast<int16_t>((key[0] << 8) | key[1]);
  if (version < 0) return fail(corrupt(fmt::format("control record key version {}", version)));
  const auto type = static_cast<int16_t>((key[2] << 8) | key[3]);
  const producer_id_t producer = batch.producer_id();
  if (type == 0) {  // ABORT: it stays (and is indexed) while a batch of its transaction does
    auto it = ongoing_aborted_.find(producer);
    if (it == ongoing_aborted_.end()) return true;
    const aborted_in_progress txn = it->second;
    ongoing_aborted_.erase(it);
    if (!txn.last_observed_batch_offset) return true;
    if (cleaned_index_ != nullptr) cleaned_index_->push_back(txn.txn);
    return false;
  }
  if (type == 1) return ongoing_committed_.erase(producer) == 0;  // COMMIT
  return false;                                                   // another control type: kept
}

log_to_clean make_log_to_clean(const log& l, std::optional<offset_t> checkpoint, timestamp_ms now) {
  log_to_clean t;
  t.tp = l.tp();
  t.dir = l.dir();
  t.config = l.config();
  t.log_start_offset = l.log_start_offset();
  t.segments = l.inactive_segments();
  t.producers = l.last_records_of_active_producers();
  // cleanableOffsets: a checkpoint outside [log start, LEO] restarts from the log start.
  const offset_t dirty = checkpoint.value_or(t.log_start_offset);
  if (dirty < t.log_start_offset || dirty > l.log_end_offset()) {
    t.first_dirty_offset = t.log_start_offset;
    t.force_update_checkpoint = true;
  } else {
    t.first_dirty_offset = dirty;
  }
  // Not past the last stable offset (an open transaction's first offset, else the high
  // watermark), the active segment, or the first dirty segment younger than
  // min.compaction.lag.ms.
  offset_t uncleanable = std::min(l.last_stable_offset(), l.active_segment_base_offset());
  const offset_t active_base = l.active_segment_base_offset();
  t.active_segment_base_offset = active_base;
  const auto dirty_segments =
      segments_in(t.segments, active_base, t.first_dirty_offset, active_base);
  const int64_t min_lag = std::max<int64_t>(t.config.min_compaction_lag_ms, 0);
  if (min_lag > 0) {
    for (const segment_snapshot& s : dirty_segments) {
      if (s.largest_timestamp > now - min_lag) {
        uncleanable = std::min(uncleanable, s.base_offset);
        break;
      }
    }
  }
  uncleanable = std::max(uncleanable, t.first_dirty_offset);
  // calculateCleanableBytes: the uncleanable bound moves down to a segment boundary.
  t.first_uncleanable_offset = active_base;
  for (const segment_snapshot& s : segments_in(t.segments, active_base, uncleanable, active_base)) {
    t.first_uncleanable_offset = s.base_offset;
    break;
  }
  for (const segment_snapshot& s : segments_in(
           t.segments, active_base, std::min(t.first_dirty_offset, t.first_uncleanable_offset),
           t.first_uncleanable_offset)) {
    t.cleanable_bytes += s.size;
  }
  for (const segment_snapshot& s : t.segments) {
    if (s.base_offset < t.first_dirty_offset) t.clean_bytes += s.size;
  }
  // maxCompactionDelay: how long the oldest dirty segment is past max.compaction.lag.ms.
  timestamp_ms earliest = INT64_MAX;
  for (const segment_snapshot& s : dirty_segments) {
    if (s.first_batch_timestamp > 0) earliest = std::min(earliest, s.first_batch_timestamp);
  }
  const int64_t max_lag = std::max<int64_t>(t.config.max_compaction_lag_ms, 0);
  const timestamp_ms clean_until = max_lag > now ? INT64_MIN : now - max_lag;
  if (earliest < clean_until) t.max_compaction_delay_ms = clean_until - earliest;
  t.need_compaction_now = t.max_compaction_delay_ms > 0;
  t.aborted_txns = l.collect_aborted_txns(t.log_start_offset, t.first_uncleanable_offset);
  return t;
}

std::vector<std::vector<segment_snapshot>> group_segments_by_size(
    const std::vector<segment_snapshot>& segments, int32_t max_size, int32_t max_index_size,
    offset_t first_uncleanable_offset) {
  std::vector<std::vector<segment_snapshot>> groups;
  size_t i = 0;
  while (i < segments.size()) {
    std::vector<segment_snapshot> group{segments[i]};
    int64_t log_size = segments[i].size;
    int64_t index_size = segments[i].offset_index_bytes;
    int64_t time_index_size = segments[i].time_index_bytes;
    ++i;
    while (i < segments.size()) {
      const segment_snapshot& next = segments[i];
      // lastOffsetForFirstSegment: the next segment's base - 1, or the uncleanable offset - 1.
      const offset_t last_offset =
          i + 1 < segments.size() ? segments[i + 1].base_offset - 1 : first_uncleanable_offset - 1;
      if (log_size + next.size > max_size ||
          index_size + next.offset_index_bytes > max_index_size ||
          time_index_size + next.time_index_bytes > max_index_size ||
          (next.size != 0 && last_offset - group.back().base_offset > INT32_MAX)) {
        break;
      }
      log_size += next.size;
      index_size += next.offset_index_bytes;
      time_index_size += next.time_index_bytes;
      group.push_back(next);
      ++i;
    }
    groups.push_back(std::move(group));
  }
  return groups;
}

result<std::unique_ptr<cleaner>, storage_error> cleaner::create(int32_t id,
                                                                size_t dedupe_buffer_bytes,
                                                                double load_factor,
                                                                size_t io_buffer_bytes,
                                                                throttler* throttle) {
  auto map = offset_map::create(dedupe_buffer_bytes);
  if (!map) return fail(map.error());
  if (static_cast<double>((*map)->slots()) * load_factor <= 1) {
    return fail(storage_error{
        storage_errc::invalid_argument,
        "offset map is too small to fit in even a single message, so log cleaning will never "
        "make progress. You can increase log.cleaner.dedupe.buffer.size or decrease "
        "log.cleaner.threads"});
  }
  std::unique_ptr<cleaner> c(new cleaner());
  c->id_ = id;
  c->map_ = std::move(*map);
  c->load_factor_ = load_factor;
  c->io_buffer_bytes_ = std::max<size_t>(io_buffer_bytes, record::record_batch_overhead);
  c->throttle_ = throttle;
  return c;
}

result<clean_result, storage_error> cleaner::clean(const log_to_clean& target, timestamp_ms now,
                                                   const swap_fn& swap, const abort_fn& aborted) {
  clean_result out;
  cleaner_stats& stats = out.stats;
  stats.start_ms = steady_ms();
  const offset_t upper = target.first_uncleanable_offset;
  auto built = build_offset_map(target, target.first_dirty_offset, upper, stats, aborted);
  if (!built) return fail(built.error());
  stats.map_complete_ms = steady_ms();
  const offset_t end_offset = std::max(map_->latest_offset() + 1, target.first_dirty_offset);
  out.next_dirty_offset = end_offset;
  if (aborted()) {
    out.aborted = true;
    return out;
  }
  std::vector<segment_snapshot> to_clean;
  for (const segment_snapshot& s : target.segments) {
    if (s.base_offset < end_offset) to_clean.push_back(s);
  }
  // One for the whole round: a transaction may span groups.
  cleaned_txn_metadata txns;
  for (const auto& group : group_segments_by_size(to_clean, target.config.segment_bytes,
                                                  target.config.segment_index_bytes, upper)) {
    auto swapped = clean_group(target, group, now, txns, stats, swap, aborted);
    if (!swapped) return fail(swapped.error());
    if (!*swapped) {
      out.aborted = true;
      break;
    }
    ++stats.segments_cleaned;
  }
  stats.buffer_utilization = map_->utilization();
  stats.end_ms = steady_ms();
  return out;
}

result<bool, storage_error> cleaner::build_offset_map(const log_to_clean& target, offset_t start,
                                                      offset_t end, cleaner_stats& stats,
                                                      const abort_fn& aborted) {
  map_->clear();
  const auto dirty = segments_in(target.segments, target.active_segment_base_offset, start, end);
  // Batches of aborted transactions add no key (the segments are read from their start, so a
  // marker before `start` in the first one is met too).
  cleaned_txn_metadata txns;
  if (!dirty.empty()) {
    txns.add_aborted_txns(aborted_txns_in(target.aborted_txns, dirty.front().base_offset, end));
  }
  for (size_t i = 0; i < dirty.size(); ++i) {
    const offset_t next_start = i + 1 < dirty.size() ? dirty[i + 1].base_offset : end;
    auto full = map_segment(target, dirty[i], start, next_start, txns, stats, aborted);
    if (!full) return full;
    if (*full) return false;
    if (aborted()) return true;
  }
  return true;
}

result<bool, storage_error> cleaner::map_segment(const log_to_clean& target,
                                                 const segment_snapshot& seg, offset_t start,
                                                 offset_t next_segment_start,
                                                 cleaned_txn_metadata& txns, cleaner_stats& stats,
                                                 const abort_fn& aborted) {
  const int64_t max_desired =
      static_cast<int64_t>(static_cast<double>(map_->slots()) * load_factor_);
  const size_t max_uncompressed = static_cast<size_t>(target.config.max_decompressed_message_bytes);
  read_buffer_.resize(io_buffer_bytes_);
  bool full = false;
  auto r = for_each_batch(
      seg, read_buffer_, throttle_,
      [&](const record::record_batch_view& batch) -> result<bool, storage_error> {
        if (aborted()) return false;
        stats.map_bytes_read += static_cast<int64_t>(batch.size_bytes());
        if (batch.is_control()) {
          auto read = txns.on_control_batch_read(batch, max_uncompressed);
          if (!read) return fail(read.error());
          ++stats.map_messages_read;
        } else if (txns.on_batch_read(batch)) {
          stats.map_messages_read += batch.records_count();  // aborted: no key from it
        } else if (batch.last_offset() >= start) {
          auto records = record::batch_records::open(batch, max_uncompressed);
          if (!records) {
            return fail(
                storage_error{storage_errc::corrupt,
                              fmt::format("{}: batch at offset {}: {}", seg.file->path.string(),
                                          batch.base_offset(), records.error().message)});
          }
          record::record_reader reader = records->reader();
          record::record_view rec;
          while (reader.next(rec)) {
            const offset_t offset = batch.base_offset() + rec.offset_delta;
            if (rec.key && offset >= start) {
              if (map_->size() >= max_desired) {
                full = true;
                return false;
              }
              map_->put(*rec.key, offset);
            }
            ++stats.map_messages_read;
          }
          if (reader.error()) {
            return fail(
                storage_error{storage_errc::corrupt,
                              fmt::format("{}: batch at offset {}: {}", seg.file->path.string(),
                                          batch.base_offset(), record::describe(*reader.error()))});
          }
        }
        if (batch.last_offset() >= start) map_->update_latest_offset(batch.last_offset());
        return true;
      });
  if (!r) return fail(r.error());
  if (full) return true;
  // A gap at the segment's end: the map covers up to the next segment.
  map_->update_latest_offset(std::max(map_->latest_offset(), next_segment_start - 1));
  return false;
}

result<bool, storage_error> cleaner::clean_group(const log_to_clean& target,
                                                 const std::vector<segment_snapshot>& group,
                                                 timestamp_ms now, cleaned_txn_metadata& txns,
                                                 cleaner_stats& stats, const swap_fn& swap,
                                                 const abort_fn& aborted) {
  const offset_t base = group.front().base_offset;
  // A .cleaned left by an aborted run (its process alive, so recovery did not remove it).
  for (const char* kind : {".log", ".index", ".timeindex", ".txnindex"}) {
    ::unlink((target.dir / (segment_file_name(base, kind) + ".cleaned")).c_str());
  }
  auto created =
      log_segment::create(target.dir, base, segment_options_for(target.config), now, ".cleaned");
  if (!created) return fail(created.error());
  std::unique_ptr<log_segment> cleaned = std::move(*created);
  const size_t max_uncompressed = static_cast<size_t>(target.config.max_decompressed_message_bytes);
  // The aborted transactions whose ABORT marker stays in this segment: its .txnindex.
  std::vector<aborted_txn> cleaned_index;
  txns.set_cleaned_index(&cleaned_index);
  cleaner_filter filter(now, target.config.delete_retention_ms, *map_, target.producers,
                        target.first_uncleanable_offset, txns, max_uncompressed, stats);
  read_buffer_.resize(io_buffer_bytes_);
  bool stopped = false;
  for (size_t i = 0; i < group.size(); ++i) {
    const segment_snapshot& seg = group[i];
    // From the whole segment's range: the cleaned segment's .txnindex is rebuilt in full.
    const offset_t upper = i + 1 < group.size() ? group[i + 1].base_offset : seg.next_offset;
    txns.add_aborted_txns(aborted_txns_in(target.aborted_txns, seg.base_offset, upper));
    auto r = for_each_batch(
        seg, read_buffer_, throttle_,
        [&](const record::record_batch_view& batch) -> result<bool, storage_error> {
          if (aborted()) {
            stopped = true;
            return false;
          }
          write_buffer_.clear();
          auto f = filter_batch(batch, filter, write_buffer_, max_uncompressed);
          if (!f) return fail(f.error());
          if (filter.error()) return fail(*filter.error());
          stats.messages_read += f->messages_read;
          stats.bytes_read += f->bytes_read;
          stats.messages_written += f->messages_retained;
          stats.bytes_written += f->bytes_retained;
          if (write_buffer_.empty()) return true;
          auto a = cleaned->append(write_buffer_,
                                   batch_info{f->base_offset, f->last_offset, f->max_timestamp});
          if (!a) return fail(a.error());
          if (throttle_ != nullptr)
            throttle_->maybe_throttle(static_cast<int64_t>(write_buffer_.size()));
          return true;
        });
    if (!r || stopped) {
      txns.set_cleaned_index(nullptr);
      (void)cleaned->remove();
      if (!r) return fail(r.error());
      return false;
    }
  }
  txns.set_cleaned_index(nullptr);
  auto inactive = cleaned->on_become_inactive();
  if (inactive && !cleaned_index.empty()) {
    // Kafka creates a .txnindex with its first entry: none when no ABORT stays.
    inactive = write_txn_index(target.dir / (segment_file_name(base, ".txnindex") + ".cleaned"),
                               cleaned_index);
  }
  if (!inactive) {
    (void)cleaned->remove();
    return fail(inactive.error());
  }
  // Durable before it replaces anything; then the time of the last segment it replaces.
  auto flushed = cleaned->flush();
  if (flushed) flushed = cleaned->set_last_modified(group.back().last_modified);
  if (!flushed) {
    (void)cleaned->remove();
    return fail(flushed.error());
  }
  return swap(cleaned_group{std::move(cleaned), group});
}

std::string format_cleaner_stats(int32_t thread_id, const topic_partition& tp, offset_t from,
                                 offset_t to, const cleaner_stats& s) {
  const auto mb = [](double bytes) { return bytes / (1024 * 1024); };
  const double elapsed = static_cast<double>(s.end_ms - s.start_ms) / 1000.0;
  const double index_elapsed = static_cast<double>(s.map_complete_ms - s.start_ms) / 1000.0;
  const double clean_elapsed = elapsed - index_elapsed;
  const auto per_s = [](double v, double secs) { return secs > 0 ? v / secs : 0.0; };
  const auto pct = [](double part, double whole) { return whole > 0 ? 100 * part / whole : 0.0; };
  const auto read = static_cast<double>(s.bytes_read);
  const auto written = static_cast<double>(s.bytes_written);
  std::string out = fmt::format(
      "\n\tLog cleaner thread {} cleaned log {} (dirty section = [{}, {}])\n"
      "\t{:.1f} MB of log processed in {:.1f} seconds ({:.1f} MB/sec).\n"
      "\tIndexed {:.1f} MB in {:.1f} seconds ({:.1f} Mb/sec, {:.1f}% of total time)\n"
      "\tBuffer utilization: {:.1f}%\n"
      "\tCleaned {:.1f} MB in {:.1f} seconds ({:.1f} Mb/sec, {:.1f}% of total time)\n"
      "\tStart size: {:.1f} MB ({} messages)\n"
      "\tEnd size: {:.1f} MB ({} messages)\n"
      "\t{:.1f}% size reduction ({:.1f}% fewer messages)\n",
      thread_id, partition_dir_name(tp), from, to, mb(read), elapsed, mb(per_s(read, elapsed)),
      mb(static_cast<double>(s.map_bytes_read)), index_elapsed,
      mb(per_s(static_cast<double>(s.map_bytes_read), index_elapsed)), pct(index_elapsed, elapsed),
      100 * s.buffer_utilization, mb(read), clean_elapsed, mb(per_s(read, clean_elapsed)),
      pct(clean_elapsed, elapsed), mb(read), s.messages_read, mb(written), s.messages_written,
      read > 0 ? 100.0 * (1.0 - written / read) : 0.0,
      s.messages_read > 0 ? 100.0 * (1.0 - static_cast<double>(s.messages_written) /
                                               static_cast<double>(s.messages_read))
                          : 0.0);
  if (s.invalid_messages_read > 0) {
    out += fmt::format("\tFound {} invalid messages during compaction.\n", s.invalid_messages_read);
  }
  return out;
}

}  // namespace tarn::storage
