// The records of __transaction_state in Kafka's format (TransactionLog): the key is an int16
// version (0) and TransactionLogKey v0 (the transactional id); the value an int16 version and
// TransactionLogValue (version 0 when the finalized transaction.version is 0, version 1 with its
// tagged fields from transaction.version 1 on, as Kafka 4.4's TransactionLog.valueToBytes), or no
// value at all (a tombstone) once the transactional id expired. Format: docs/transactions.md.
// Checked against Kafka's own TransactionLog in txn_records_test.cc.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"
#include "txn/txn_state.h"

namespace tarn::txn {

inline constexpr int16_t txn_log_key_version = 0;

// The value version Kafka writes at a finalized transaction.version
// (TransactionVersion.transactionLogValueVersion).
inline int16_t txn_log_value_version(int16_t transaction_version) {
  return transaction_version >= 1 ? 1 : 0;
}

std::vector<uint8_t> encode_txn_key(std::string_view transactional_id);
std::vector<uint8_t> encode_txn_value(const txn_metadata& m, int16_t value_version);

// The transactional id of a key; an error text for an unknown version or a short key.
result<std::string, std::string> decode_txn_key(std::span<const uint8_t> bytes);
// The metadata of a value (versions 0 and 1); its transactional_id is left empty.
result<txn_metadata, std::string> decode_txn_value(std::span<const uint8_t> bytes);

// One uncompressed v2 batch (base offset 0, no producer id) holding one record, what the
// coordinator appends for every state change. `value` nullopt is a tombstone.
std::vector<uint8_t> build_txn_batch(std::span<const uint8_t> key,
                                     std::optional<std::span<const uint8_t>> value,
                                     timestamp_ms now);

}  // namespace tarn::txn
