// A partition log: see log.h. Kafka's UnifiedLog, LocalLog and LogLoader are the models.
#include "storage/log.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <random>

#include "fmt/format.h"
#include "record/batch_builder.h"
#include "record/record.h"
#include "record/record_batch.h"
#include "record/record_stream.h"

namespace tarn::storage {

segment_options segment_options_for(const log_config& c) {
  segment_options o;
  o.index_interval_bytes = c.index_interval_bytes;
  o.max_index_bytes = c.segment_index_bytes;
  o.preallocate_bytes = c.preallocate ? c.segment_bytes : 0;
  // LogConfig.randomSegmentJitter: drawn per segment from [0, min(jitter, segment.ms)).
  if (c.segment_jitter_ms > 0) {
    static thread_local std::mt19937_64 rng{std::random_device{}()};
    o.roll_jitter_ms = static_cast<int64_t>(
        rng() % static_cast<uint64_t>(std::min(c.segment_jitter_ms, c.max_segment_ms())));
  }
  return o;
}

namespace {

// A transaction marker batch is one small control record; a larger "marker" is not read whole on
// a replay.
constexpr int64_t max_marker_batch_bytes = 4096;

segment_options options_for(const log_config& c) { return segment_options_for(c); }

// The base offset in a "<20 digits>.<anything>" name (LogFileUtils.offsetFromFile), or nullopt.
std::optional<offset_t> offset_prefix(std::string_view name) {
  if (name.size() < 21 || name[20] != '.') return std::nullopt;
  return parse_segment_file_name(name.substr(0, 20), "");
}

bool is_segment_file(std::string_view name) {
  for (std::string_view kind : {".log", ".index", ".timeindex", ".txnindex"}) {
    if (name.size() == 20 + kind.size() && name.ends_with(kind) && offset_prefix(name)) return true;
  }
  return false;
}

// LogLoader.removeTempFilesAndCollectSwapFiles and the swap passes of LogLoader.load: what a
// cleaning interrupted by a crash left is undone (.cleaned files: the old segments are intact)
// or completed (.swap files: the old segments are deleted, the .swap renamed in their place).
result<void, storage_error> complete_interrupted_swaps(const fs::path& dir,
                                                       const segment_options& options,
                                                       timestamp_ms now, recovery_report& report) {
  std::error_code ec;
  std::vector<fs::path> cleaned, swaps;
  offset_t min_cleaned = INT64_MAX;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (!entry.is_regular_file()) continue;
    const std::string name = entry.path().filename().string();
    if (name.ends_with(".deleted")) {
      fs::remove(entry.path(), ec);
      report.swap_recovery.push_back("deleted " + name);
    } else if (name.ends_with(".cleaned")) {
      if (auto base = offset_prefix(name)) min_cleaned = std::min(min_cleaned, *base);
      cleaned.push_back(entry.path());
    } else if (name.ends_with(".swap")) {
      swaps.push_back(entry.path());
    }
  }
  if (ec) return fail(io_error("list directory", dir, ec.value()));
  if (cleaned.empty() && swaps.empty()) return {};
  // KAFKA-6264: a .swap at or above a .cleaned file belongs to an unfinished operation.
  std::vector<fs::path> valid;
  for (const fs::path& p : swaps) {
    auto base = offset_prefix(p.filename().string());
    if (!base || *base >= min_cleaned) {
      fs::remove(p, ec);
      report.swap_recovery.push_back("deleted " + p.filename().string());
    } else {
      valid.push_back(p);
    }
  }
  for (const fs::path& p : cleaned) {
    fs::remove(p, ec);
    report.swap_recovery.push_back("deleted " + p.filename().string());
  }
  // The offsets the swapped-in segments cover: the segments there were already cleaned into them.
  offset_t min_swap = INT64_MAX;
  offset_t max_swap = INT64_MIN;
  for (const fs::path& p : valid) {
    const std::string name = p.filename().string();
    if (!name.ends_with(".log.swap")) continue;
    auto base = offset_prefix(name);
    auto seg = log_segment::open(dir, *base, options, now, /*thorough=*/true, ".swap");
    if (!seg) return fail(seg.error());
    if ((*seg)->index_rebuild_needed()) {
      auto r = (*seg)->recover();
      if (!r) return fail(r.error());
    }
    min_swap = std::min(min_swap, (*seg)->base_offset());
    max_swap = std::max(max_swap, (*seg)->next_offset());
    auto c = (*seg)->close();
    if (!c) return c;
  }
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    if (!entry.is_regular_file()) continue;
    const std::string name = entry.path().filename().string();
    if (!is_segment_file(name)) continue;
    offset_t base = *offset_prefix(name);
    if (base >= min_swap && base < max_swap) {
      fs::remove(entry.path(), ec);
      report.swap_recovery.push_back("deleted " + name);
    }
  }
  // Listed again: recovering a .log.swap may have created its index files.
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_regular_file() || !name.ends_with(".swap")) continue;
    fs::path target = entry.path();
    target.replace_extension();
    fs::rename(entry.path(), target, ec);
    if (ec) return fail(io_error("rename", entry.path(), ec.value()));
    report.swap_recovery.push_back("renamed " + name);
  }
  return fsync_directory(dir);
}

}  // namespace

log::log(const log_options& options)
    : tp_(options.tp), dir_(options.dir), config_(options.config) {}

log::~log() {
  if (!closed_) (void)close();
}

result<std::unique_ptr<log>, storage_error> log::open(const log_options& options,
                                                      recovery_report* report) {
  std::unique_ptr<log> l(new log(options));
  recovery_report local;
  recovery_report& r = report != nullptr ? *report : local;
  r = recovery_report{};
  r.tp = options.tp;
  auto loaded = l->load(options, r);
  if (!loaded) return fail(loaded.error());
  return l;
}

void log::set_log_end_offset(offset_t leo) {
  log_end_offset_.store(leo, std::memory_order_release);
  if (replicated_.load(std::memory_order_acquire)) {
    // Replicated: the ISR moves it (set_high_watermark); a shorter log bounds it.
    if (high_watermark() > leo) high_watermark_.store(leo, std::memory_order_release);
    return;
  }
  // One replica: everything appended is replicated to the whole ISR at once.
  high_watermark_.store(leo, std::memory_order_release);
}

void log::set_replicated(offset_t high_watermark) {
  replicated_.store(true, std::memory_order_release);
  high_watermark_.store(std::min(high_watermark, log_end_offset()), std::memory_order_release);
}

void log::set_high_watermark(offset_t high_watermark) {
  const offset_t hw = std::min(high_watermark, log_end_offset());
  offset_t current = high_watermark_.load(std::memory_order_acquire);
  while (hw > current && !high_watermark_.compare_exchange_weak(current, hw)) {
  }
}

result<void, storage_error> log::append_as_follower(std::span<const uint8_t> batches,
                                                    timestamp_ms now) {
  // Checked whole before anything is written, so a bad fetch leaves the log as it was.
  std::span<const uint8_t> rest = batches;
  offset_t expected = log_end_offset();
  while (!rest.empty()) {
    auto h = read_batch_header(rest);
    if (!h) return fail(storage_error{storage_errc::corrupt, h.error().message});
    const int64_t size = h->size_in_bytes();
    if (h->batch_length < batch_header_size - log_overhead ||
        size > static_cast<int64_t>(rest.size())) {
      return fail(storage_error{
          storage_errc::corrupt,
          fmt::format("batch of {} bytes in a follower append of {} bytes", size, rest.size())});
    }
    const auto one = rest.first(static_cast<size_t>(size));
    if (!record::record_batch_view(one).crc_matches()) {
      return fail(storage_error{storage_errc::corrupt,
                                fmt::format("batch at offset {} for {} fails its CRC",
                                            h->base_offset, partition_dir_name(tp_))});
    }
    if (h->base_offset != expected) {
      return fail(
          storage_error{storage_errc::invalid_argument,
                        fmt::format("follower append to {} at log end offset {} got a batch at {}",
                                    partition_dir_name(tp_), expected, h->base_offset)});
    }
    expected = h->next_offset();
    rest = rest.subspan(static_cast<size_t>(size));
  }
  auto appended = append(batches, now);
  // The producer state follows what was written, as the leader's did (Kafka's appendAsFollower:
  // analyzeAndValidateProducerState with origin REPLICATION, which takes the batches without
  // checking their sequences): after a fail-over this replica answers an idempotent producer's
  // retry with the original offsets and takes its next sequence.
  const offset_t written_end = log_end_offset();
  rest = batches;
  while (!rest.empty()) {
    auto h = read_batch_header(rest);
    if (!h || h->base_offset >= written_end) break;
    const auto one = rest.first(static_cast<size_t>(h->size_in_bytes()));
    auto u = update_producers(one);
    if (!u) return u;
    rest = rest.subspan(one.size());
  }
  return appended;
}

result<bool, storage_error> log::truncate_to(offset_t offset, timestamp_ms now) {
  if (offset < 0) {
    return fail(storage_error{
        storage_errc::invalid_argument,
        fmt::format("cannot truncate {} to offset {}", partition_dir_name(tp_), offset)});
  }
  if (offset >= log_end_offset()) return false;
  std::error_code txn_ec;
  auto drop_segment = [&](log_segment& seg) -> result<void, storage_error> {
    fs::remove(dir_ / segment_file_name(seg.base_offset(), ".txnindex"), txn_ec);
    return seg.remove();
  };
  if (offset <= segments_.front()->base_offset()) {
    // UnifiedLog.truncateFullyAndStartAt: nothing below the offset is kept.
    for (auto& seg : segments_) {
      auto rm = drop_segment(*seg);
      if (!rm) return fail(rm.error());
    }
    segments_.clear();
    auto seg = log_segment::create(dir_, offset, options_for(config_), now);
    if (!seg) return fail(seg.error());
    segments_.push_back(std::move(*seg));
    segments_created_ = true;
    log_start_offset_.store(offset, std::memory_order_release);
  } else {
    // LocalLog.truncateTo: the segments after the one holding the offset go, that one is cut at
    // the batch holding the offset and becomes the active segment again.
    while (segments_.back()->base_offset() > offset) {
      auto rm = drop_segment(*segments_.back());
      if (!rm) return fail(rm.error());
      segments_.pop_back();
    }
    auto cut = active().truncate_to(offset);
    if (!cut) return fail(cut.error());
  }
  set_log_end_offset(active().next_offset());
  const offset_t leo = log_end_offset();
  if (recovery_point() > leo) recovery_point_.store(leo, std::memory_order_release);
  // The epoch cache forgets the epochs that start at or after the new end (truncateFromEnd).
  size_t keep = epochs_.size();
  while (keep > 0 && epochs_[keep - 1].start_offset >= leo) --keep;
  if (keep != epochs_.size()) {
    epochs_.resize(keep);
    auto w = write_epoch_checkpoint(dir_ / leader_epoch_checkpoint_name, epochs_);
    if (!w) return fail(w.error());
  }
  // Aborted transactions and producer state as if the log had always ended here: the .txnindex
  // entries past the end go, the producer state is rebuilt from the newest snapshot at or below
  // the end (those above it are deleted) and the batches after it.
  auto txns = load_txn_indexes();
  if (!txns) return fail(txns.error());
  auto producers = load_producer_state();
  if (!producers) return fail(producers.error());
  return true;
}

result<void, storage_error> log::truncate_fully_and_start_at(offset_t offset, timestamp_ms now) {
  if (offset < 0) {
    return fail(storage_error{
        storage_errc::invalid_argument,
        fmt::format("cannot start {} over at offset {}", partition_dir_name(tp_), offset)});
  }
  std::error_code ec;
  for (auto& seg : segments_) {
    fs::remove(dir_ / segment_file_name(seg->base_offset(), ".txnindex"), ec);
    auto rm = seg->remove();
    if (!rm) return fail(rm.error());
  }
  segments_.clear();
  // The snapshots describe producers of the log that is gone (load_producer_state would take
  // the newest one at or below the new end).
  for (offset_t snapshot : producer_state_manager::list_snapshots(dir_)) {
    fs::remove(dir_ / segment_file_name(snapshot, ".snapshot"), ec);
  }
  auto seg = log_segment::create(dir_, offset, options_for(config_), now);
  if (!seg) return fail(seg.error());
  segments_.push_back(std::move(*seg));
  segments_created_ = true;
  log_start_offset_.store(offset, std::memory_order_release);
  set_log_end_offset(offset);
  high_watermark_.store(offset, std::memory_order_release);
  recovery_point_.store(offset, std::memory_order_release);
  epochs_.clear();
  auto w = write_epoch_checkpoint(dir_ / leader_epoch_checkpoint_name, epochs_);
  if (!w) return fail(w.error());
  auto txns = load_txn_indexes();
  if (!txns) return fail(txns.error());
  producers_ = producer_state_manager(partition_dir_name(tp_));
  return {};
}

result<void, storage_error> log::load(const log_options& options, recovery_report& report) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) return fail(io_error("create directory", dir_, ec.value()));
  auto swapped = complete_interrupted_swaps(dir_, options_for(config_), options.now, report);
  if (!swapped) return swapped;

  // Segment files present, and index files without a .log (Kafka deletes those).
  std::vector<offset_t> bases;
  for (const auto& entry : fs::directory_iterator(dir_, ec)) {
    if (!entry.is_regular_file()) continue;
    std::string name = entry.path().filename().string();
    if (auto base = parse_segment_file_name(name, ".log")) {
      bases.push_back(*base);
    } else if (name.ends_with(".index") || name.ends_with(".timeindex") ||
               name.ends_with(".txnindex")) {
      std::string_view suffix = name.ends_with(".index")       ? ".index"
                                : name.ends_with(".timeindex") ? ".timeindex"
                                                               : ".txnindex";
      auto base = parse_segment_file_name(name, suffix);
      if (base && !fs::exists(dir_ / segment_file_name(*base, ".log"), ec)) {
        fs::remove(entry.path(), ec);
      }
    }
  }
  if (ec) return fail(io_error("list directory", dir_, ec.value()));
  std::sort(bases.begin(), bases.end());

  segment_options seg_options = options_for(config_);
  for (offset_t base : bases) {
    auto seg = log_segment::open(dir_, base, seg_options, options.now, base == bases.back());
    if (!seg) return fail(seg.error());
    segments_.push_back(std::move(*seg));
  }
  auto epochs = read_epoch_checkpoint(dir_ / leader_epoch_checkpoint_name);
  if (epochs) epochs_ = *epochs;

  // LogLoader.recoverLog: without a clean shutdown, every segment from the one holding the
  // recovery point on is scanned, and the first one that loses bytes ends the log there.
  // loadSegmentFiles: a segment with a missing or corrupt index is scanned whatever the
  // shutdown was (its lost bytes, below the recovery point, do not end the log).
  size_t first_unflushed = segments_.size();
  if (!options.had_clean_shutdown) {
    report.ran_recovery = true;
    first_unflushed = 0;
    while (first_unflushed + 1 < segments_.size() &&
           segments_[first_unflushed + 1]->base_offset() <= options.recovery_point) {
      ++first_unflushed;
    }
  }
  for (size_t i = 0; i < segments_.size(); ++i) {
    log_segment& seg = *segments_[i];
    bool unflushed = i >= first_unflushed;
    if (seg.index_rebuild_needed()) {
      report.indexes_rebuilt.push_back(
          fmt::format("{}: {}", segment_file_name(seg.base_offset(), ""), seg.index_problem()));
    } else if (!unflushed) {
      continue;
    }
    auto rec = seg.recover();
    if (!rec) return fail(rec.error());
    if (unflushed) ++report.segments_recovered;
    for (const epoch_entry& e : rec->epochs_seen) {
      if (epochs_.empty() || e.epoch > epochs_.back().epoch) epochs_.push_back(e);
    }
    if (rec->truncated_bytes == 0) continue;
    report.truncated_bytes += rec->truncated_bytes;
    report.truncated_segment = seg.base_offset();
    report.truncation_reason = rec->reason;
    if (unflushed) {
      for (size_t j = i + 1; j < segments_.size(); ++j) {
        report.deleted_segments.push_back(segments_[j]->base_offset());
        auto rm = segments_[j]->remove();
        if (!rm) return rm;
      }
      segments_.resize(i + 1);
      break;
    }
  }

  offset_t log_start = options.log_start_offset;
  // deleteSegmentsIfLogStartGreaterThanLogEnd: files were lost; start over at the log start.
  if (!segments_.empty() && segments_.back()->next_offset() < log_start) {
    for (auto& seg : segments_) {
      report.deleted_segments.push_back(seg->base_offset());
      auto rm = seg->remove();
      if (!rm) return rm;
    }
    segments_.clear();
  }
  if (segments_.empty()) {
    auto seg = log_segment::create(dir_, log_start, seg_options, options.now);
    if (!seg) return fail(seg.error());
    segments_.push_back(std::move(*seg));
  }
  for (size_t i = 0; i + 1 < segments_.size(); ++i) {
    auto t = segments_[i]->on_become_inactive();
    if (!t) return t;
  }
  auto a = active().make_active();
  if (!a) return a;

  offset_t leo = active().next_offset();
  log_start = std::max(log_start, segments_.front()->base_offset());
  log_start_offset_.store(log_start, std::memory_order_release);
  set_log_end_offset(leo);
  offset_t recovery_point =
      options.had_clean_shutdown ? leo : std::min(options.recovery_point, leo);
  recovery_point_.store(recovery_point, std::memory_order_release);
  last_flush_ms_ = options.now;

  // The epoch cache never names offsets the log does not hold. Written only when it changed
  // (each write is an fsync).
  size_t keep = epochs_.size();
  while (keep > 0 && epochs_[keep - 1].start_offset >= leo) --keep;
  epochs_.resize(keep);
  if (!epochs || *epochs != epochs_) {
    auto w = write_epoch_checkpoint(dir_ / leader_epoch_checkpoint_name, epochs_);
    if (!w) return w;
  }
  report.log_end_offset = leo;
  report.recovery_point = recovery_point;
  auto txns = load_txn_indexes();
  if (!txns) return txns;
  return load_producer_state();
}

result<void, storage_error> log::load_txn_indexes() {
  aborted_txns_.clear();
  const offset_t leo = log_end_offset();
  for (const auto& seg : segments_) {
    const fs::path path = dir_ / segment_file_name(seg->base_offset(), ".txnindex");
    auto entries = read_txn_index(path);
    if (!entries) return fail(entries.error());
    std::vector<aborted_txn> kept;
    for (const aborted_txn& t : *entries) {
      if (t.last_offset < leo && t.last_offset >= seg->base_offset()) kept.push_back(t);
    }
    if (kept.size() != entries->size()) {
      // Entries of truncated offsets: the file is rewritten without them (a replay re-adds
      // those whose markers survived).
      std::string bytes;
      for (const aborted_txn& t : kept) {
        auto e = encode_txn_index_entry(t);
        bytes.append(reinterpret_cast<const char*>(e.data()), e.size());
      }
      auto w = write_file_atomic(path, bytes);
      if (!w) return w;
    }
    aborted_txns_.insert(aborted_txns_.end(), kept.begin(), kept.end());
  }
  return {};
}

result<void, storage_error> log::index_aborted_txn(const aborted_txn& txn) {
  for (auto it = aborted_txns_.rbegin(); it != aborted_txns_.rend(); ++it) {
    if (*it == txn) return {};  // already indexed (a replay of an indexed marker)
    if (it->last_offset < txn.last_offset) break;
  }
  auto seg = std::upper_bound(segments_.begin(), segments_.end(), txn.last_offset,
                              [](offset_t o, const auto& s) { return o < s->base_offset(); });
  if (seg != segments_.begin()) --seg;
  auto w = append_txn_index(dir_ / segment_file_name((*seg)->base_offset(), ".txnindex"), txn);
  if (!w) return w;
  auto pos = std::upper_bound(aborted_txns_.begin(), aborted_txns_.end(), txn.last_offset,
                              [](offset_t o, const aborted_txn& t) { return o < t.last_offset; });
  aborted_txns_.insert(pos, txn);
  return {};
}

offset_t log::last_stable_offset() const {
  const offset_t hw = high_watermark();
  const std::optional<offset_t> first = producers_.first_unstable_offset();
  return first ? std::min(*first, hw) : hw;
}

std::vector<aborted_txn> log::collect_aborted_txns(offset_t start_offset,
                                                   offset_t upper_bound_offset) const {
  std::vector<aborted_txn> out;
  auto it = std::lower_bound(aborted_txns_.begin(), aborted_txns_.end(), start_offset,
                             [](const aborted_txn& t, offset_t o) { return t.last_offset < o; });
  for (; it != aborted_txns_.end(); ++it) {
    if (it->first_offset < upper_bound_offset) out.push_back(*it);
  }
  return out;
}

result<offset_t, storage_error> log::append_txn_marker(const txn_marker& marker,
                                                       leader_epoch_t leader_epoch,
                                                       timestamp_ms now) {
  const offset_t offset = log_end_offset();
  record::batch_builder_config cfg;
  cfg.base_offset = offset;
  cfg.partition_leader_epoch = leader_epoch;
  cfg.producer_id = marker.producer_id;
  cfg.producer_epoch = marker.epoch;
  cfg.transactional = true;
  cfg.control = true;
  record::batch_builder builder(cfg);
  // EndTransactionMarker: key = version 0, type (0 ABORT, 1 COMMIT); value = version 0,
  // coordinator epoch.
  const uint8_t key[4] = {0, 0, 0, static_cast<uint8_t>(marker.commit ? 1 : 0)};
  const auto ce = static_cast<uint32_t>(marker.coordinator_epoch);
  const uint8_t value[6] = {0,
                            0,
                            static_cast<uint8_t>(ce >> 24),
                            static_cast<uint8_t>(ce >> 16),
                            static_cast<uint8_t>(ce >> 8),
                            static_cast<uint8_t>(ce)};
  builder.try_append(now, record::bytes_view(key, sizeof key),
                     record::bytes_view(value, sizeof value));
  auto batch = builder.build();
  if (!batch) {
    return fail(storage_error{storage_errc::invalid_argument, "cannot build a marker batch"});
  }
  auto a = append(*batch, now);
  if (!a) return fail(a.error());
  if (auto aborted = producers_.complete_txn(marker, offset, now)) {
    auto w = index_aborted_txn(*aborted);
    if (!w) return fail(w.error());
  }
  return offset;
}

result<void, storage_error> log::load_producer_state() {
  producers_ = producer_state_manager(partition_dir_name(tp_));
  auto loaded = producers_.load_latest(dir_, log_end_offset());
  if (!loaded) return fail(loaded.error());
  const offset_t from = loaded->value_or(log_start_offset());
  // Kafka's UnifiedLog.rebuildProducerState: every data batch with a producer id after the
  // snapshot updates the state, as its append did.
  std::array<uint8_t, batch_header_size> header{};
  std::vector<uint8_t> whole;
  for (const auto& seg : segments_) {
    if (seg->next_offset() <= from) continue;
    int64_t position = 0;
    while (position + batch_header_size <= seg->size()) {
      auto r = seg->read_bytes(position, header);
      if (!r) return r;
      record::record_batch_view batch(header);
      const int64_t size = int64_t{batch.batch_length()} + log_overhead;
      if (size < batch_header_size) break;
      if (batch.last_offset() >= from && batch.has_producer_id()) {
        std::span<const uint8_t> bytes = header;
        // A transaction marker is read whole (its record says commit or abort).
        if (batch.is_control() && size <= max_marker_batch_bytes) {
          whole.resize(static_cast<size_t>(size));
          auto rb = seg->read_bytes(position, whole);
          if (!rb) return rb;
          bytes = whole;
        }
        auto u = update_producers(bytes);
        if (!u) return u;
      }
      position += size;
    }
  }
  return {};
}

result<void, storage_error> log::update_producers(std::span<const uint8_t> bytes) {
  record::record_batch_view batch(bytes);
  if (!batch.has_producer_id()) return {};
  if (!batch.is_control()) {
    producer_append a{batch.producer_id(), batch.producer_epoch(), batch.base_sequence(),
                      batch.last_sequence()};
    producers_.update(a, batch.base_offset(), batch.last_offset(), batch.max_timestamp(),
                      batch.is_transactional());
    return {};
  }
  // A transaction marker (UnifiedLog's replay of an EndTransactionMarker): closes the producer's
  // transaction; an abort is indexed in .txnindex (again, if its entry was lost).
  const int64_t size = int64_t{batch.batch_length()} + log_overhead;
  if (size > static_cast<int64_t>(bytes.size())) return {};
  auto rec = record::decode_record(bytes.subspan(record::record_batch_overhead));
  if (!rec || !rec->key || rec->key->size() < 4) return {};
  const auto& k = *rec->key;
  const int16_t type = static_cast<int16_t>((k[2] << 8) | k[3]);
  int32_t coordinator_epoch = -1;
  if (rec->value && rec->value->size() >= 6) {
    const auto& v = *rec->value;
    coordinator_epoch = static_cast<int32_t>((uint32_t{v[2]} << 24) | (uint32_t{v[3]} << 16) |
                                             (uint32_t{v[4]} << 8) | v[5]);
  }
  txn_marker m{batch.producer_id(), batch.producer_epoch(), coordinator_epoch, type == 1};
  if (auto aborted = producers_.complete_txn(m, batch.base_offset(), batch.max_timestamp())) {
    return index_aborted_txn(*aborted);
  }
  return {};
}

result<void, storage_error> log::maybe_assign_epoch(leader_epoch_t epoch, offset_t start_offset) {
  if (epoch < 0 || (!epochs_.empty() && epoch <= epochs_.back().epoch)) return {};
  epochs_.push_back({epoch, start_offset});
  return write_epoch_checkpoint(dir_ / leader_epoch_checkpoint_name, epochs_);
}

result<void, storage_error> log::append(std::span<const uint8_t> batches, timestamp_ms now) {
  const offset_t leo_before = log_end_offset();
  auto r = append_batches(batches, now);
  // Partial appends (a later batch refused) still woke nobody otherwise; notify on any growth.
  if (append_listener_ && log_end_offset() != leo_before) append_listener_(tp_);
  return r;
}

result<void, storage_error> log::append_batches(std::span<const uint8_t> batches,
                                                timestamp_ms now) {
  offset_t expected = log_end_offset();
  while (!batches.empty()) {
    auto h = read_batch_header(batches);
    if (!h) return fail(storage_error{storage_errc::corrupt, h.error().message});
    int64_t size = h->size_in_bytes();
    if (h->batch_length < batch_header_size - log_overhead ||
        size > static_cast<int64_t>(batches.size())) {
      return fail(storage_error{
          storage_errc::corrupt,
          fmt::format("batch of {} bytes in an append of {} bytes", size, batches.size())});
    }
    if (h->base_offset < expected || h->last_offset_delta < 0) {
      return fail(storage_error{
          storage_errc::invalid_argument,
          fmt::format("Out of order offsets: batch [{}, {}] appended to {} at log end offset {}",
                      h->base_offset, h->last_offset(), partition_dir_name(tp_), expected)});
    }
    if (size > config_.segment_bytes) {
      return fail(storage_error{
          storage_errc::record_too_large,
          fmt::format("The size of this batch ({}) is larger than the configured segment size ({})",
                      size, config_.segment_bytes)});
    }
    roll_params params;
    params.max_segment_ms = config_.max_segment_ms();
    params.max_segment_bytes = config_.segment_bytes;
    params.max_timestamp_in_messages = h->max_timestamp;
    params.max_offset_in_messages = h->last_offset();
    params.messages_size = static_cast<int32_t>(size);
    params.now = now;
    if (active().should_roll(params)) {
      auto r = roll_at(h->base_offset, now);
      if (!r) return r;
    }
    auto e = maybe_assign_epoch(h->partition_leader_epoch, h->base_offset);
    if (!e) return e;
    auto w = active().append(batches.first(static_cast<size_t>(size)),
                             batch_info{h->base_offset, h->last_offset(), h->max_timestamp});
    if (!w) return w;
    expected = h->next_offset();
    set_log_end_offset(expected);
    batches = batches.subspan(static_cast<size_t>(size));
  }
  if (log_end_offset() - recovery_point() >= config_.flush_messages) return flush(now);
  return {};
}

result<log_read_result, storage_error> log::read(offset_t offset, int32_t max_bytes,
                                                 bool min_one_batch,
                                                 std::optional<offset_t> max_offset,
                                                 bool to_log_end) const {
  log_read_result out;
  out.log_end_offset = log_end_offset();
  out.high_watermark = high_watermark();
  out.log_start_offset = log_start_offset();
  out.last_stable_offset = last_stable_offset();
  const offset_t end = to_log_end ? out.log_end_offset : out.high_watermark;
  if (offset < out.log_start_offset || offset > out.log_end_offset) {
    return fail(storage_error{
        storage_errc::offset_out_of_range,
        fmt::format("Received request for offset {} for partition {}, but we only have log "
                    "segments from offset {} up to {}.",
                    offset, partition_dir_name(tp_), out.log_start_offset, out.log_end_offset)});
  }
  // Between the high watermark and the log end (a new leader whose ISR has not caught up yet):
  // nothing to read yet, as Kafka's LocalLog.read answers.
  if (offset >= end) return out;
  // Nor any batch at or past it (Kafka's LocalLog.read bounds maxPosition with the high
  // watermark's position): those are not on the whole ISR yet, and a leader that loses its role
  // truncates them; a consumer given them would have read records that never were (the soak of
  // 2026-12-07 read a paused leader's tail, appended from requests queued during the pause).
  if (end < out.log_end_offset) max_offset = std::min(max_offset.value_or(end), end);
  if (max_offset && offset >= *max_offset) return out;
  // The segment holding `offset`, then later ones if it holds nothing at or after it.
  auto it = std::upper_bound(segments_.begin(), segments_.end(), offset,
                             [](offset_t o, const auto& seg) { return o < seg->base_offset(); });
  if (it != segments_.begin()) --it;
  for (; it != segments_.end(); ++it) {
    int64_t max_position = (*it)->size();
    if (max_offset) {
      if ((*it)->base_offset() >= *max_offset) return out;
      // LogSegment.read's maxPosition: the start of the batch holding max_offset.
      auto at = (*it)->translate_offset(*max_offset);
      if (!at) return fail(at.error());
      if (*at) max_position = (*at)->position;
    }
    auto slice = (*it)->read(offset, max_bytes, max_position, min_one_batch);
    if (!slice) return fail(slice.error());
    if (*slice) {
      out.slice = std::move(*slice);
      return out;
    }
  }
  return out;
}

namespace {

// Decodes the records of the batch at `where` and returns the first one `match` accepts.
template <typename Match>
result<std::optional<timestamp_and_offset>, storage_error> search_batch(const log_segment& seg,
                                                                        const batch_position& where,
                                                                        size_t max_uncompressed,
                                                                        Match match) {
  std::vector<uint8_t> bytes(static_cast<size_t>(where.header.size_in_bytes()));
  auto r = seg.read_bytes(where.position, bytes);
  if (!r) return fail(r.error());
  record::record_batch_view batch(bytes);
  // Streamed with keys and values skipped, as Kafka's iterator: a stored compressed batch (a
  // valid one may inflate ~1000x) is never inflated whole; max.decompressed.message.bytes bounds
  // each record, as in Kafka.
  record::record_stream records(batch.compression(), batch.records_bytes(), max_uncompressed);
  bool log_append_time = batch.timestamp_type() == record::timestamp_type::log_append_time;
  record::partial_record rec;
  while (records.next(rec)) {
    // Kafka's DefaultRecordBatch: with LogAppendTime every record reports the batch's time.
    timestamp_ms ts =
        log_append_time ? batch.max_timestamp() : batch.base_timestamp() + rec.timestamp_delta;
    offset_t offset = batch.base_offset() + rec.offset_delta;
    if (match(ts, offset)) {
      timestamp_and_offset out{ts, offset, std::nullopt};
      if (batch.partition_leader_epoch() >= 0) out.leader_epoch = batch.partition_leader_epoch();
      return std::optional<timestamp_and_offset>(out);
    }
  }
  // A record that does not decode ends the search (as before); a codec failure or an oversized
  // record is corruption.
  if (records.error() && records.error()->code != record::batch_errc::bad_record) {
    return fail(storage_error{storage_errc::corrupt,
                              fmt::format("{} at position {}: {}", seg.log_path().string(),
                                          where.position, records.error()->message)});
  }
  return std::optional<timestamp_and_offset>{};
}

}  // namespace

result<std::optional<timestamp_and_offset>, storage_error> log::find_offset_by_timestamp(
    timestamp_ms timestamp, offset_t starting_offset) const {
  starting_offset = std::max(starting_offset, log_start_offset());
  auto match = [&](timestamp_ms ts, offset_t offset) {
    return ts >= timestamp && offset >= starting_offset;
  };
  for (const auto& seg : segments_) {
    if (seg->next_offset() <= starting_offset || seg->size() == 0) continue;
    if (seg->max_timestamp_so_far() < timestamp) continue;
    // FileRecords.searchForTimestamp: batch after batch whose max timestamp reaches the target.
    offset_t from = starting_offset;
    while (true) {
      auto batch = seg->find_batch_by_timestamp(timestamp, from);
      if (!batch) return fail(batch.error());
      if (!*batch) break;
      auto found = search_batch(*seg, **batch,
                                static_cast<size_t>(config_.max_decompressed_message_bytes), match);
      if (!found || *found) return found;
      from = (*batch)->header.next_offset();
    }
  }
  return std::optional<timestamp_and_offset>{};
}

result<std::optional<timestamp_and_offset>, storage_error> log::max_timestamp_offset() const {
  // UnifiedLog.fetchOffsetByTimestamp(MAX_TIMESTAMP): the segment with the largest timestamp,
  // then the first record there carrying it.
  const log_segment* best = nullptr;
  for (const auto& seg : segments_) {
    if (seg->size() > 0 &&
        (best == nullptr || seg->max_timestamp_so_far() > best->max_timestamp_so_far())) {
      best = seg.get();
    }
  }
  if (best == nullptr || best->max_timestamp_so_far() < 0)
    return std::optional<timestamp_and_offset>{};
  timestamp_ms max_ts = best->max_timestamp_so_far();
  auto batch = best->translate_offset(best->offset_of_max_timestamp_so_far());
  if (!batch) return fail(batch.error());
  if (!*batch) return std::optional<timestamp_and_offset>{};
  return search_batch(*best, **batch, static_cast<size_t>(config_.max_decompressed_message_bytes),
                      [&](timestamp_ms ts, offset_t) { return ts == max_ts; });
}

result<void, storage_error> log::roll(timestamp_ms now) { return roll_at(log_end_offset(), now); }

result<void, storage_error> log::roll_at(offset_t new_base_offset, timestamp_ms now) {
  new_base_offset = std::max(new_base_offset, log_end_offset());
  if (active().size() == 0 && active().base_offset() == new_base_offset) return {};
  // An empty active segment at a lower offset is replaced (LocalLog.roll does the same).
  const bool replace_empty = active().size() == 0;
  if (!replace_empty) {
    auto t = active().on_become_inactive();
    if (!t) return t;
  }
  auto seg = log_segment::create(dir_, new_base_offset, options_for(config_), now);
  if (!seg) {
    // The old segment stays active (its indexes grown back) and the append fails; the next
    // one tries the roll again.
    if (!replace_empty) (void)active().make_active();
    return fail(seg.error());
  }
  result<void, storage_error> removed{};
  if (replace_empty) {
    removed = active().remove();
    segments_.pop_back();
  }
  segments_.push_back(std::move(*seg));
  segments_created_ = true;
  if (!removed) return removed;
  // Kafka snapshots producer state at every roll, named by the new segment's base offset.
  return producers_.take_snapshot(dir_, new_base_offset);
}

result<void, storage_error> log::flush(timestamp_ms now) {
  offset_t leo = log_end_offset();
  offset_t rp = recovery_point();
  for (auto& seg : segments_) {
    if (seg->next_offset() <= rp && seg.get() != &active()) continue;
    auto f = seg->flush();
    if (!f) return f;
  }
  // LocalLog.flush: a segment created since the last flush is durable only once the directory
  // entry is.
  if (segments_created_) {
    auto d = fsync_directory(dir_);
    if (!d) return d;
    segments_created_ = false;
  }
  recovery_point_.store(leo, std::memory_order_release);
  last_flush_ms_ = now;
  return {};
}

result<void, storage_error> log::flush_inactive_segments(timestamp_ms now) {
  offset_t rp = recovery_point();
  offset_t upto = active().base_offset();
  if (upto <= rp) return {};
  for (size_t i = 0; i + 1 < segments_.size(); ++i) {
    if (segments_[i]->next_offset() <= rp) continue;
    auto f = segments_[i]->flush();
    if (!f) return f;
  }
  recovery_point_.store(upto, std::memory_order_release);
  last_flush_ms_ = now;
  return {};
}

result<void, storage_error> log::maybe_flush(timestamp_ms now) {
  if (log_end_offset() > recovery_point() && now - last_flush_ms_ >= config_.flush_ms) {
    return flush(now);
  }
  return {};
}

result<void, storage_error> log::delete_first_segments(size_t count, timestamp_ms now) {
  if (count == 0) return {};
  if (count >= segments_.size()) {
    // Everything expired: keep an empty active segment at the LEO (UnifiedLog.deleteSegments).
    count = segments_.size();
    if (active().size() > 0) {
      auto r = roll_at(log_end_offset(), now);
      if (!r) return r;
    } else {
      --count;
    }
  }
  std::error_code txn_ec;
  for (size_t i = 0; i < count; ++i) {
    fs::remove(dir_ / segment_file_name(segments_[i]->base_offset(), ".txnindex"), txn_ec);
    auto rm = segments_[i]->remove();
    if (!rm) return rm;
  }
  segments_.erase(segments_.begin(), segments_.begin() + static_cast<std::ptrdiff_t>(count));
  offset_t start = std::max(log_start_offset(), segments_.front()->base_offset());
  log_start_offset_.store(start, std::memory_order_release);
  if (recovery_point() < start) recovery_point_.store(start, std::memory_order_release);
  return truncate_epochs_from_start(start);
}

result<void, storage_error> log::truncate_epochs_from_start(offset_t start) {
  // The epoch cache forgets epochs wholly before the new start (truncateFromStart).
  size_t drop = 0;
  while (drop + 1 < epochs_.size() && epochs_[drop + 1].start_offset <= start) ++drop;
  if (drop > 0 || (!epochs_.empty() && epochs_.front().start_offset < start)) {
    epochs_.erase(epochs_.begin(), epochs_.begin() + static_cast<std::ptrdiff_t>(drop));
    if (!epochs_.empty()) epochs_.front().start_offset = start;
    return write_epoch_checkpoint(dir_ / leader_epoch_checkpoint_name, epochs_);
  }
  return {};
}

result<int32_t, storage_error> log::delete_old_segments(timestamp_ms now) {
  // LocalLog.deletableSegments: in order, while the predicate holds, never a segment reaching
  // past the high watermark, never the empty active segment.
  auto deletable = [&](auto predicate) {
    size_t n = 0;
    while (n < segments_.size()) {
      const log_segment& seg = *segments_[n];
      bool last = n + 1 == segments_.size();
      offset_t upper = last ? log_end_offset() : segments_[n + 1]->base_offset();
      if (high_watermark() < upper || (last && seg.size() == 0) || !predicate(seg, last)) break;
      ++n;
    }
    return n;
  };
  size_t count = 0;
  if (config_.cleanup_delete && config_.retention_ms >= 0) {
    count = std::max(count, deletable([&](const log_segment& seg, bool) {
                       return now - seg.largest_timestamp() > config_.retention_ms;
                     }));
  }
  if (config_.cleanup_delete && config_.retention_bytes >= 0) {
    int64_t diff = size_bytes() - config_.retention_bytes;
    count = std::max(count, deletable([&](const log_segment& seg, bool) {
                       if (diff - seg.size() < 0) return false;
                       diff -= seg.size();
                       return true;
                     }));
  }
  offset_t start = log_start_offset();
  // Segments wholly below the log start offset (after DeleteRecords).
  size_t below = 0;
  while (below + 1 < segments_.size() && segments_[below + 1]->base_offset() <= start) ++below;
  count = std::max(count, below);
  auto r = delete_first_segments(count, now);
  if (!r) return fail(r.error());
  return static_cast<int32_t>(count);
}

result<void, storage_error> log::delete_records_before(offset_t offset, timestamp_ms now) {
  if (offset > high_watermark()) {
    return fail(storage_error{
        storage_errc::offset_out_of_range,
        fmt::format("Cannot increment the log start offset to {} of partition {} since it is "
                    "larger than the high watermark {}",
                    offset, partition_dir_name(tp_), high_watermark())});
  }
  if (offset < 0) {
    return fail(storage_error{storage_errc::offset_out_of_range,
                              fmt::format("The offset {} for partition {} is not valid", offset,
                                          partition_dir_name(tp_))});
  }
  if (offset <= log_start_offset()) return {};
  // UnifiedLog.maybeIncrementLogStartOffset: the start moves, the epoch cache forgets what lies
  // before it; Kafka's retention pass then deletes the segments wholly below it, tarn at once.
  log_start_offset_.store(offset, std::memory_order_release);
  if (recovery_point() < offset) recovery_point_.store(offset, std::memory_order_release);
  size_t below = 0;
  while (below + 1 < segments_.size() && segments_[below + 1]->base_offset() <= offset) ++below;
  if (below > 0) return delete_first_segments(below, now);
  return truncate_epochs_from_start(offset);
}

std::vector<segment_snapshot> log::inactive_segments() const {
  std::vector<segment_snapshot> out;
  out.reserve(segments_.size());
  for (size_t i = 0; i + 1 < segments_.size(); ++i) {
    const log_segment& seg = *segments_[i];
    segment_snapshot s;
    s.base_offset = seg.base_offset();
    s.next_offset = seg.next_offset();
    s.size = seg.size();
    s.offset_index_bytes = seg.offset_idx().file_length();
    s.time_index_bytes = seg.time_idx().file_length();
    s.largest_timestamp = seg.largest_timestamp();
    s.last_modified = seg.last_modified();
    if (seg.size() > 0) {
      auto first = seg.translate_offset(seg.base_offset());
      if (first && *first) s.first_batch_timestamp = (*first)->header.max_timestamp;
    }
    s.file = seg.file();
    out.push_back(std::move(s));
  }
  return out;
}

std::map<producer_id_t, producer_last_record> log::last_records_of_active_producers() const {
  std::map<producer_id_t, producer_last_record> out;
  producers_.for_each([&](const producer_entry& e) {
    producer_last_record r;
    r.epoch = e.epoch;
    if (!e.batches.empty()) r.last_data_offset = e.batches.back().last_offset;
    out.emplace(e.producer_id, r);
  });
  return out;
}

result<bool, storage_error> log::replace_segments(std::unique_ptr<log_segment> cleaned,
                                                  const std::vector<segment_snapshot>& old) {
  // The segments cleaned must still be these files, none of them active.
  auto first = std::find_if(segments_.begin(), segments_.end(), [&](const auto& seg) {
    return !old.empty() && seg->base_offset() == old.front().base_offset;
  });
  bool matches = first != segments_.end() && old.front().base_offset == cleaned->base_offset();
  const size_t at = static_cast<size_t>(first - segments_.begin());
  for (size_t i = 0; matches && i < old.size(); ++i) {
    matches = at + i + 1 < segments_.size() && segments_[at + i]->file() == old[i].file;
  }
  if (!matches) {
    (void)cleaned->remove();
    return false;
  }
  auto s = cleaned->change_file_suffixes(".cleaned", ".swap");
  if (!s) {
    (void)cleaned->remove();
    return fail(s.error());
  }
  // Stricter than Kafka, which fsyncs only at the end: the .swap names must be durable before
  // the old segments go, or a crash could leave neither.
  auto d = fsync_directory(dir_);
  if (!d) return fail(d.error());
  for (size_t i = 0; i < old.size(); ++i) {
    log_segment& seg = *segments_[at + i];
    // The old files are renamed .deleted first (recovery removes those), as Kafka's
    // asynchronous delete does; tarn then removes them at once (open slices keep their bytes).
    auto r = seg.change_file_suffixes("", ".deleted");
    if (!r) return fail(r.error());
    auto rm = seg.remove();
    if (!rm) return fail(rm.error());
  }
  auto f = cleaned->change_file_suffixes(".swap", "");
  if (!f) return fail(f.error());
  auto d2 = fsync_directory(dir_);
  if (!d2) return fail(d2.error());
  // The aborted transactions whose markers the replaced segments held are now the cleaned
  // segment's .txnindex (the entries the cleaner kept).
  const offset_t from = cleaned->base_offset();
  const offset_t to = segments_[at + old.size()]->base_offset();
  segments_.erase(segments_.begin() + static_cast<std::ptrdiff_t>(at),
                  segments_.begin() + static_cast<std::ptrdiff_t>(at + old.size()));
  segments_.insert(segments_.begin() + static_cast<std::ptrdiff_t>(at), std::move(cleaned));
  std::erase_if(aborted_txns_,
                [&](const aborted_txn& t) { return t.last_offset >= from && t.last_offset < to; });
  auto kept = read_txn_index(dir_ / segment_file_name(from, ".txnindex"));
  if (!kept) return fail(kept.error());
  for (const aborted_txn& t : *kept) {
    auto pos = std::upper_bound(aborted_txns_.begin(), aborted_txns_.end(), t.last_offset,
                                [](offset_t o, const aborted_txn& a) { return o < a.last_offset; });
    aborted_txns_.insert(pos, t);
  }
  return true;
}

int64_t log::size_bytes() const {
  int64_t total = 0;
  for (const auto& seg : segments_) total += seg->size();
  return total;
}

std::vector<offset_t> log::segment_base_offsets() const {
  std::vector<offset_t> out;
  out.reserve(segments_.size());
  for (const auto& seg : segments_) out.push_back(seg->base_offset());
  return out;
}

std::vector<log::segment_size> log::segment_sizes() const {
  std::vector<segment_size> out;
  out.reserve(segments_.size());
  for (const auto& seg : segments_) out.push_back({seg->base_offset(), seg->size()});
  return out;
}

result<void, storage_error> log::close() {
  if (closed_) return {};
  closed_ = true;
  result<void, storage_error> first = producers_.take_snapshot(dir_, log_end_offset());
  for (auto& seg : segments_) {
    auto c = seg->close();
    if (!c && first) first = c;
  }
  return first;
}

}  // namespace tarn::storage
