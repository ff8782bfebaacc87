// The log cleaner's key -> last offset map (Kafka's SkimpyOffsetMap): a fixed block of memory
// holding, per slot, a 16-byte hash of a record key and the last offset seen for it, with open
// addressing. Memory never grows with the log: the cleaner stops adding keys once
// size() reaches slots() x log.cleaner.io.buffer.load.factor and cleans in several passes.
// A hash collision makes the cleaner drop the older of two different keys, as in Kafka (a
// 128-bit hash makes that vanishingly rare).
//
// The table in use starts at 65,536 slots (1.5 MiB) and grows, rehashed, each time it is half
// full: doubling while that stays within a quarter of slots(), then to slots() at once (a rehash
// holds both tables: at most 1.25 x the buffer). A cleaning of a log with few keys touches a few
// MiB, which stay in the CPU caches, instead of spreading its keys over the whole configured
// buffer (Kafka's map always uses all of it). At slots() the map fills to the same load factor as
// Kafka's, so the passes of a cleaning end at the same offsets. Two anonymous mappings of the full
// size (the table and the one it is rehashed into) are reserved at creation, so growth never fails;
// untouched pages cost no resident memory, and clear() and growth hand touched ones back instead of
// writing zeros. Not thread-safe: each cleaner thread owns one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

#include "base/result.h"
#include "base/strong_types.h"
#include "storage/storage_error.h"

namespace tarn::storage {

class offset_map {
 public:
  static constexpr size_t hash_bytes = 16;
  static constexpr size_t entry_bytes = hash_bytes + 8;  // hash, then the big-endian offset

  // `memory_bytes` / 24 slots (at least one); io_error when the mapping cannot be made.
  static result<std::unique_ptr<offset_map>, storage_error> create(size_t memory_bytes);
  offset_map(const offset_map&) = delete;
  offset_map& operator=(const offset_map&) = delete;
  ~offset_map();

  // The capacity: memory_bytes / 24, whatever the table in use holds now.
  int64_t slots() const { return slots_; }
  int64_t table_slots() const { return table_slots_; }
  int64_t size() const { return entries_; }
  double utilization() const { return static_cast<double>(entries_) / static_cast<double>(slots_); }

  // Records `offset` as the latest for `key` (it replaces an earlier one) and as latest_offset().
  void put(std::span<const uint8_t> key, offset_t offset);
  // The offset recorded for `key`, or -1.
  offset_t get(std::span<const uint8_t> key) const;
  // The highest offset the map covers: keys at or below it not found in the map are older
  // versions; records above it were not looked at and are kept.
  offset_t latest_offset() const { return latest_offset_; }
  void update_latest_offset(offset_t offset) { latest_offset_ = offset; }

  void clear();

  // Probes made and probes that met another key (for the cleaner's log line).
  int64_t lookups() const { return lookups_; }
  int64_t probes() const { return probes_; }

 private:
  offset_map() = default;
  struct key_hash {
    uint8_t bytes[hash_bytes];
  };
  static key_hash hash_of(std::span<const uint8_t> key);
  size_t position_of(const key_hash& hash, int64_t attempt) const;
  bool is_empty(size_t position) const;
  // The slot of `hash` in the table: its own, or the empty one where it goes.
  uint8_t* find_slot(const key_hash& hash);
  // Grows the table (see above), moving every entry into the other mapping.
  void grow();

  static constexpr int64_t initial_table_slots = int64_t{1} << 16;
  uint8_t* slots_memory_ = nullptr;  // the table in use: table_slots_ x entry_bytes
  uint8_t* spare_memory_ = nullptr;  // the other mapping, empty, where grow() rehashes into
  size_t mapped_bytes_ = 0;          // of each mapping
  int64_t slots_ = 0;
  int64_t table_slots_ = 0;
  int64_t entries_ = 0;
  offset_t latest_offset_ = -1;
  mutable int64_t lookups_ = 0;
  mutable int64_t probes_ = 0;
};

}  // namespace tarn::storage
