// What a group's state machine sees while it handles one request or one timer: the time, the
// configuration, the broker's topics, a way to persist records to the group's partition of
// __consumer_offsets, and the callbacks to run once the shard's lock is released.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "coordinator/group_config.h"
#include "coordinator/metadata_view.h"
#include "protocol/error_codes.h"

namespace tarn::coordinator {

// One record of __consumer_offsets: key and value bytes as Kafka frames them (an int16 version
// before each struct, records.h); no value is a tombstone.
struct coordinator_record {
  std::vector<uint8_t> key;
  std::optional<std::vector<uint8_t>> value;
};

struct group_context {
  int64_t now_ms = 0;
  const group_config& config;
  const metadata_view& metadata;
  // Appends the records as one batch to the group's partition, synchronously: NONE once they
  // are in the log, else the produce path's error (the state change must not be acknowledged).
  std::function<protocol::error_code(std::vector<coordinator_record>)> write;
  // Completion callbacks (JoinGroup/SyncGroup answers) run after the shard's lock is released.
  std::vector<std::function<void()>>& deferred;
  // TxnOffsetCommit: write() appends a transactional batch of this producer (-1: a plain one).
  int64_t txn_producer_id = -1;
  int16_t txn_producer_epoch = -1;
  // ... and the markers of that producer its partition had when the transaction was checked
  // (offsets_log::append refuses the batch if the transaction ended since).
  std::optional<uint32_t> txn_markers_before = std::nullopt;
};

}  // namespace tarn::coordinator
