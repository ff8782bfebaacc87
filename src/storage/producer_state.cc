// Idempotent-producer state and Kafka's .snapshot files (see producer_state.h).
#include "storage/producer_state.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <system_error>

#include "record/crc32c.h"
#include "storage/io.h"
#include "storage/log_segment.h"

namespace tarn::storage {

namespace {

// Kafka's inSequence: the next sequence follows the last, wrapping from INT32_MAX to 0.
bool in_sequence(sequence_t last_seq, sequence_t next_seq) {
  return int64_t{next_seq} == int64_t{last_seq} + 1 ||
         (next_seq == 0 && last_seq == std::numeric_limits<int32_t>::max());
}

// Snapshot layout (ProducerStateManager): version int16 = 1, crc uint32 (CRC-32C of everything
// after it), entries int32 count, then per producer: producerId int64, epoch int16,
// lastSequence int32, lastOffset int64, offsetDelta int32, timestamp int64, coordinatorEpoch
// int32, currentTxnFirstOffset int64. Big-endian.
constexpr int16_t snapshot_version = 1;
constexpr size_t entries_offset = 6;
constexpr size_t entry_size = 8 + 2 + 4 + 8 + 4 + 8 + 4 + 8;

void put16(std::vector<uint8_t>& out, uint16_t v) {
  out.push_back(static_cast<uint8_t>(v >> 8));
  out.push_back(static_cast<uint8_t>(v));
}
void put32(std::vector<uint8_t>& out, uint32_t v) {
  put16(out, static_cast<uint16_t>(v >> 16));
  put16(out, static_cast<uint16_t>(v));
}
void put64(std::vector<uint8_t>& out, uint64_t v) {
  put32(out, static_cast<uint32_t>(v >> 32));
  put32(out, static_cast<uint32_t>(v));
}
uint16_t get16(const uint8_t* p) { return static_cast<uint16_t>((p[0] << 8) | p[1]); }
uint32_t get32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | p[3];
}
uint64_t get64(const uint8_t* p) { return (uint64_t{get32(p)} << 32) | get32(p + 4); }

}  // namespace

std::string snapshot_file_name(offset_t offset) { return segment_file_name(offset, ".snapshot"); }

const producer_entry* producer_state_manager::find(producer_id_t producer_id) const {
  auto it = producers_.find(producer_id);
  return it == producers_.end() ? nullptr : &it->second;
}

result<std::optional<producer_batch>, producer_error> producer_state_manager::check(
    const producer_append& batch, offset_t offset) const {
  const producer_entry* entry = find(batch.producer_id);
  if (entry == nullptr) return std::optional<producer_batch>{};  // a new producer: any sequence

  // A retry of one of the last batches (ProducerStateEntry.findDuplicateBatch).
  if (batch.epoch == entry->epoch) {
    for (const auto& b : entry->batches) {
      if (b.first_seq == batch.first_seq && b.last_seq == batch.last_seq) {
        return std::optional<producer_batch>{b};
      }
    }
  }
  // ProducerAppendInfo.checkProducerEpoch.
  if (batch.epoch < entry->epoch) {
    return fail(producer_error{
        producer_errc::invalid_producer_epoch,
        fmt::format("Epoch of producer {} at offset {} in {} is {}, which is smaller than the last "
                    "seen epoch {}",
                    batch.producer_id, offset, topic_partition_, batch.epoch, entry->epoch)});
  }
  // ProducerAppendInfo.checkSequence.
  if (batch.epoch != entry->epoch) {
    if (batch.first_seq != 0 && entry->epoch != -1) {
      return fail(producer_error{
          producer_errc::out_of_order_sequence,
          fmt::format("Invalid sequence number for new epoch of producer {}at offset {} in "
                      "partition {}: {} (request epoch), {} (seq. number), {} (current producer "
                      "epoch)",
                      batch.producer_id, offset, topic_partition_, batch.epoch, batch.first_seq,
                      entry->epoch)});
    }
    return std::optional<producer_batch>{};
  }
  const sequence_t last_seq = entry->last_seq();
  if (entry->epoch != -1 && !in_sequence(last_seq, batch.first_seq)) {
    return fail(producer_error{
        producer_errc::out_of_order_sequence,
        fmt::format("Out of order sequence number for producer {} at offset {} in partition {}: "
                    "{} (incoming seq. number), {} (current end sequence number)",
                    batch.producer_id, offset, topic_partition_, batch.first_seq, last_seq)});
  }
  return std::optional<producer_batch>{};
}

void producer_state_manager::update(const producer_append& batch, offset_t first_offset,
                                    offset_t last_offset, timestamp_ms max_timestamp,
                                    bool transactional) {
  producer_entry& entry = producers_[batch.producer_id];
  entry.producer_id = batch.producer_id;
  if (entry.epoch != batch.epoch) {
    // A new epoch starts a new history (ProducerStateEntry.maybeUpdateProducerEpoch).
    entry.batches.clear();
    entry.epoch = batch.epoch;
  }
  entry.batches.push_back({batch.first_seq, batch.last_seq, last_offset,
                           static_cast<int32_t>(last_offset - first_offset), max_timestamp});
  while (entry.batches.size() > producer_batches_to_retain) entry.batches.pop_front();
  entry.last_timestamp = max_timestamp;
  if (transactional && entry.current_txn_first_offset < 0) {
    entry.current_txn_first_offset = first_offset;
    ongoing_txns_[first_offset] = batch.producer_id;
  }
}

result<void, producer_error> producer_state_manager::check_marker(const txn_marker& marker) const {
  const producer_entry* entry = find(marker.producer_id);
  if (entry != nullptr && marker.epoch < entry->epoch) {
    return fail(producer_error{
        producer_errc::invalid_producer_epoch,
        fmt::format(
            "Epoch of producer {} in {} is {}, which is smaller than the last seen epoch {}",
            marker.producer_id, topic_partition_, marker.epoch, entry->epoch)});
  }
  if (entry != nullptr && entry->coordinator_epoch > marker.coordinator_epoch) {
    return fail(producer_error{
        producer_errc::coordinator_fenced,
        fmt::format("Invalid coordinator epoch for {}: {} (zombie), {} (current)", topic_partition_,
                    marker.coordinator_epoch, entry->coordinator_epoch)});
  }
  return {};
}

std::optional<aborted_txn> producer_state_manager::complete_txn(const txn_marker& marker,
                                                                offset_t offset,
                                                                timestamp_ms timestamp) {
  producer_entry& entry = producers_[marker.producer_id];
  entry.producer_id = marker.producer_id;
  if (entry.epoch != marker.epoch) {
    entry.batches.clear();
    entry.epoch = marker.epoch;
  }
  entry.coordinator_epoch = marker.coordinator_epoch;
  entry.last_timestamp = timestamp;
  ++entry.markers_written;
  const offset_t first = entry.current_txn_first_offset;
  entry.current_txn_first_offset = -1;
  if (first < 0) return std::nullopt;  // no data in this partition: nothing to index
  ongoing_txns_.erase(first);
  if (marker.commit) return std::nullopt;
  const offset_t lso = ongoing_txns_.empty() ? offset + 1 : ongoing_txns_.begin()->first;
  return aborted_txn{marker.producer_id, first, offset, lso};
}

std::optional<offset_t> producer_state_manager::first_unstable_offset() const {
  if (ongoing_txns_.empty()) return std::nullopt;
  return ongoing_txns_.begin()->first;
}

std::vector<uint8_t> producer_state_manager::encode_snapshot() const {
  std::vector<uint8_t> out;
  out.reserve(entries_offset + 4 + producers_.size() * entry_size);
  put16(out, static_cast<uint16_t>(snapshot_version));
  put32(out, 0);  // crc, filled below
  // Sorted by producer id, so equal states give equal files.
  std::vector<const producer_entry*> entries;
  entries.reserve(producers_.size());
  for (const auto& [id, e] : producers_) entries.push_back(&e);
  std::sort(entries.begin(), entries.end(),
            [](const auto* a, const auto* b) { return a->producer_id < b->producer_id; });
  put32(out, static_cast<uint32_t>(entries.size()));
  for (const producer_entry* e : entries) {
    const producer_batch last = e->batches.empty() ? producer_batch{} : e->batches.back();
    put64(out, static_cast<uint64_t>(e->producer_id));
    put16(out, static_cast<uint16_t>(e->epoch));
    put32(out, static_cast<uint32_t>(last.last_seq));
    put64(out, static_cast<uint64_t>(last.last_offset));
    put32(out, static_cast<uint32_t>(last.offset_delta));
    put64(out, static_cast<uint64_t>(e->last_timestamp));
    put32(out, static_cast<uint32_t>(e->coordinator_epoch));
    put64(out, static_cast<uint64_t>(e->current_txn_first_offset));
  }
  const uint32_t crc = record::crc32c(std::span<const uint8_t>(out).subspan(entries_offset));
  for (int i = 0; i < 4; ++i) out[2 + i] = static_cast<uint8_t>(crc >> (24 - 8 * i));
  return out;
}

result<void, storage_error> producer_state_manager::decode_snapshot(
    std::span<const uint8_t> bytes) {
  auto corrupt = [](std::string what) {
    return storage_error{storage_errc::corrupt, "producer snapshot: " + std::move(what)};
  };
  if (bytes.size() < entries_offset + 4) return fail(corrupt("shorter than its header"));
  const auto version = static_cast<int16_t>(get16(bytes.data()));
  if (version != snapshot_version) {
    return fail(corrupt(fmt::format("unknown version {}", version)));
  }
  const uint32_t stored = get32(bytes.data() + 2);
  const uint32_t computed = record::crc32c(bytes.subspan(entries_offset));
  if (stored != computed) {
    return fail(corrupt(fmt::format("CRC mismatch: stored {} computed {}", stored, computed)));
  }
  const int64_t count = static_cast<int32_t>(get32(bytes.data() + entries_offset));
  const size_t body = bytes.size() - entries_offset - 4;
  if (count < 0 || static_cast<size_t>(count) * entry_size != body) {
    return fail(corrupt(fmt::format("{} entries do not fill {} bytes", count, body)));
  }
  std::unordered_map<producer_id_t, producer_entry> loaded;
  const uint8_t* p = bytes.data() + entries_offset + 4;
  for (int64_t i = 0; i < count; ++i, p += entry_size) {
    producer_entry e;
    e.producer_id = static_cast<int64_t>(get64(p));
    e.epoch = static_cast<int16_t>(get16(p + 8));
    producer_batch b;
    b.last_seq = static_cast<int32_t>(get32(p + 10));
    b.last_offset = static_cast<int64_t>(get64(p + 14));
    b.offset_delta = static_cast<int32_t>(get32(p + 22));
    b.timestamp = static_cast<int64_t>(get64(p + 26));
    e.coordinator_epoch = static_cast<int32_t>(get32(p + 34));
    e.current_txn_first_offset = static_cast<int64_t>(get64(p + 38));
    e.last_timestamp = b.timestamp;
    // BatchMetadata.firstSeq: lastSeq - offsetDelta, wrapping below 0 as sequences do.
    const int64_t first = int64_t{b.last_seq} - b.offset_delta;
    b.first_seq =
        static_cast<int32_t>(first < 0 ? first + std::numeric_limits<int32_t>::max() + 1 : first);
    if (b.last_offset >= 0) e.batches.push_back(b);
    loaded[e.producer_id] = std::move(e);
  }
  producers_ = std::move(loaded);
  ongoing_txns_.clear();
  for (const auto& [id, e] : producers_) {
    if (e.current_txn_first_offset >= 0) ongoing_txns_[e.current_txn_first_offset] = id;
  }
  return {};
}

std::vector<offset_t> producer_state_manager::list_snapshots(const fs::path& dir) {
  std::vector<offset_t> out;
  std::error_code ec;
  for (const auto& f : fs::directory_iterator(dir, ec)) {
    auto off = parse_segment_file_name(f.path().filename().string(), ".snapshot");
    if (off) out.push_back(*off);
  }
  std::sort(out.begin(), out.end());
  return out;
}

result<void, storage_error> producer_state_manager::take_snapshot(const fs::path& dir,
                                                                  offset_t offset,
                                                                  size_t keep) const {
  const std::vector<uint8_t> bytes = encode_snapshot();
  const fs::path path = dir / snapshot_file_name(offset);
  if (auto w = write_file_atomic(
          path, std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()));
      !w) {
    return w;
  }
  std::vector<offset_t> existing = list_snapshots(dir);
  std::error_code ec;
  size_t kept = 0;
  for (auto it = existing.rbegin(); it != existing.rend(); ++it) {
    if (*it > offset || (*it < offset && ++kept >= keep)) {
      fs::remove(dir / snapshot_file_name(*it), ec);
    }
  }
  return {};
}

result<std::optional<offset_t>, storage_error> producer_state_manager::load_latest(
    const fs::path& dir, offset_t max_offset) {
  clear();
  std::vector<offset_t> existing = list_snapshots(dir);
  std::error_code ec;
  for (auto it = existing.rbegin(); it != existing.rend(); ++it) {
    const fs::path path = dir / snapshot_file_name(*it);
    if (*it > max_offset) {
      fs::remove(path, ec);  // written before a truncation: describes offsets that are gone
      continue;
    }
    auto text = read_small_file(path, 64 << 20);
    if (text) {
      auto ok = decode_snapshot(
          std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text->data()), text->size()));
      if (ok) return std::optional<offset_t>{*it};
    }
    fs::remove(path, ec);  // unreadable: fall back to an older one (or a full replay)
  }
  clear();
  return std::optional<offset_t>{};
}

}  // namespace tarn::storage
