// Test helpers of the log cleaner's tests (batch_filter_test.cc, log_cleaner_test.cc,
// log_cleaner_manager_test.cc): keyed batches, a compacted log, reading it back, one cleaning.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fmt/format.h"
#include "record/batch_builder.h"
#include "record/record_batch.h"
#include "storage/log.h"
#include "storage/log_cleaner.h"

namespace tarn::storage::cleaner_testing {

inline record::bytes_view bytes_of(const std::string& s) { return record::as_bytes(s); }

struct kv {
  std::string key;
  std::optional<std::string> value;  // nullopt: tombstone
};

struct batch_spec {
  offset_t base_offset = 0;
  timestamp_ms base_timestamp = 1000;
  producer_id_t producer_id = -1;
  producer_epoch_t producer_epoch = -1;
  sequence_t base_sequence = -1;
  record::compression_type compression = record::compression_type::none;
  record::timestamp_type timestamp_type = record::timestamp_type::create_time;
  leader_epoch_t leader_epoch = 0;
  bool transactional = false;
};

inline std::vector<uint8_t> keyed_batch(const batch_spec& spec, const std::vector<kv>& records) {
  record::batch_builder_config config;
  config.batch_size = 1 << 30;
  config.base_offset = spec.base_offset;
  config.partition_leader_epoch = spec.leader_epoch;
  config.producer_id = spec.producer_id;
  config.producer_epoch = spec.producer_epoch;
  config.base_sequence = spec.base_sequence;
  config.compression = spec.compression;
  config.timestamp_type = spec.timestamp_type;
  config.transactional = spec.transactional;
  if (spec.timestamp_type == record::timestamp_type::log_append_time) {
    config.log_append_time = spec.base_timestamp + 500;
  }
  record::batch_builder builder(config);
  int64_t i = 0;
  for (const kv& r : records) {
    std::optional<record::bytes_view> value;
    if (r.value) value = bytes_of(*r.value);
    builder.try_append(spec.base_timestamp + i++, bytes_of(r.key), value);
  }
  auto built = builder.build();
  return built ? std::move(*built) : std::vector<uint8_t>{};
}

struct decoded {
  offset_t offset;
  timestamp_ms timestamp;
  std::string key;
  std::optional<std::string> value;
};

inline std::vector<decoded> records_of(const record::record_batch_view& batch) {
  std::vector<decoded> out;
  auto section = record::batch_records::open(batch, 1 << 30);
  EXPECT_TRUE(section);
  if (!section) return out;
  auto reader = section->reader();
  record::record_view r;
  const bool lat = batch.timestamp_type() == record::timestamp_type::log_append_time;
  while (reader.next(r)) {
    decoded d;
    d.offset = batch.base_offset() + r.offset_delta;
    d.timestamp = lat ? batch.max_timestamp() : batch.base_timestamp() + r.timestamp_delta;
    d.key = r.key ? std::string(record::as_string(*r.key)) : "";
    if (r.value) d.value = std::string(record::as_string(*r.value));
    out.push_back(d);
  }
  EXPECT_FALSE(reader.error());
  return out;
}

inline log_config compact_config() {
  log_config c;
  c.cleanup_compact = true;
  c.cleanup_delete = false;
  c.segment_bytes = 2048;
  c.index_interval_bytes = 256;
  c.segment_index_bytes = 4096;
  c.delete_retention_ms = 1000;
  return c;
}

inline log_options options_in(const fs::path& dir, const log_config& c) {
  log_options o;
  o.dir = dir / "t-0";
  o.tp = {"t", 0};
  o.config = c;
  o.had_clean_shutdown = true;
  o.now = 1000;
  return o;
}

// Appends one batch of `records` at the LEO; returns its base offset.
inline offset_t append(log& l, const std::vector<kv>& records, batch_spec spec = {}) {
  spec.base_offset = l.log_end_offset();
  auto b = keyed_batch(spec, records);
  auto r = l.append(b, 1000);
  EXPECT_TRUE(r) << (r ? "" : r.error().message);
  return spec.base_offset;
}

// Calls on_batch(view) for every stored batch of `l` from its start to its high watermark, each
// one checked as stored batches must be.
template <typename OnBatch>
void for_each_batch(const log& l, OnBatch on_batch) {
  offset_t next = l.log_start_offset();
  while (next < l.high_watermark()) {
    auto r = l.read(next, 1 << 20, true);
    EXPECT_TRUE(r) << (r ? "" : r.error().message);
    if (!r || !r->slice || r->slice->length == 0) break;
    std::vector<uint8_t> bytes(static_cast<size_t>(r->slice->length));
    EXPECT_TRUE(read_slice(*r->slice, bytes));
    record::batch_reader reader(bytes);
    record::record_batch_view batch;
    while (reader.next(batch)) {
      EXPECT_TRUE(record::validate_batch(batch, record::offset_rule::stored));
      on_batch(batch);
      next = batch.next_offset();
    }
  }
}

inline std::vector<decoded> read_log(const log& l) {
  std::vector<decoded> out;
  for_each_batch(l, [&](const record::record_batch_view& batch) {
    for (auto& d : records_of(batch)) out.push_back(d);
  });
  return out;
}

struct cleaning {
  clean_result result;
  int swaps = 0;
};

// One cleaning of `l` as the cleaner thread does it, the swap made directly on the log.
inline cleaning clean_once(log& l, cleaner& c, std::optional<offset_t> checkpoint,
                           timestamp_ms now) {
  cleaning out;
  log_to_clean target = make_log_to_clean(l, checkpoint, now);
  auto r = c.clean(
      target, now,
      [&](cleaned_group g) {
        ++out.swaps;
        return l.replace_segments(std::move(g.segment), g.replaces);
      },
      [] { return false; });
  EXPECT_TRUE(r) << (r ? "" : r.error().message);
  if (r) out.result = *r;
  return out;
}

inline std::unique_ptr<cleaner> make_cleaner(size_t map_bytes = 1 << 20) {
  auto c = cleaner::create(0, map_bytes, 0.9, 4096, nullptr);
  EXPECT_TRUE(c) << (c ? "" : c.error().message);
  return c ? std::move(*c) : nullptr;
}

// Writes `versions` versions of `keys` keys, 10 records a batch, value "<key>@<offset>".
inline std::map<std::string, offset_t> write_versions(log& l, int keys, int versions) {
  std::map<std::string, offset_t> latest;
  std::vector<kv> batch;
  offset_t next = l.log_end_offset();
  for (int v = 0; v < versions; ++v) {
    for (int k = 0; k < keys; ++k) {
      std::string key = fmt::format("k{}", k);
      batch.push_back({key, fmt::format("{}@{}", key, next)});
      latest[key] = next++;
      if (batch.size() == 10) {
        append(l, batch);
        batch.clear();
      }
    }
  }
  if (!batch.empty()) append(l, batch);
  return latest;
}

}  // namespace tarn::storage::cleaner_testing
