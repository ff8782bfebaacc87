// The log cleaner's key -> last offset map (Kafka's SkimpyOffsetMap): a fixed block of memory
// holding, per slot, a 16-byte hash of a record key and the last offset seen for it, with open
// addressing. Memory never grows with the log: the cleaner stops adding keys once
// size() reaches slots() x log.cleaner.io.buffer.load.factor and cleans in several passes.
// A hash collision makes the cleaner drop the older of two different keys, as in Kafka (a
// 128-bit hash makes that vanishingly rare).
//
// The slots live in an anonymous mapping, so untouched slots cost no resident memory and clear()
// hands the touched pages back instead of writing zeros over the whole block.
// Not thread-safe: each cleaner thread owns one.
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

  int64_t slots() const { return slots_; }
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

  uint8_t* slots_memory_ = nullptr;
  size_t mapped_bytes_ = 0;
  int64_t slots_ = 0;
  int64_t entries_ = 0;
  offset_t latest_offset_ = -1;
  mutable int64_t lookups_ = 0;
  mutable int64_t probes_ = 0;
};

}  // namespace tarn::storage
