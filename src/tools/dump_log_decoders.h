// The record decoders of `tarn dump-log` (Kafka's DumpLogSegments parsers): what a record's key
// and value print as instead of their raw bytes. Only the transaction log's for now
// (--transaction-log-decoder: __transaction_state records as JSON, as Kafka 4.4's
// TransactionLogMessageParser writes them).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace tarn::tools {

// What a decoder prints for one record: "key: <key>" and " payload: <payload>", each when set.
struct decoded_record {
  std::optional<std::string> key;
  std::optional<std::string> payload;
};

// A __transaction_state record (TransactionCoordinatorRecordSerde + the generated JSON
// converters): key {"type":"0","data":{"transactionalId":...}}, value {"version":"V","data":{...}}
// with transactionStatus as its state name, tagged fields only when not their default; a
// tombstone's payload is <DELETE>; an unknown key type or undecodable bytes print Kafka's
// "skipping" line as the key.
decoded_record decode_transaction_log_record(int64_t offset,
                                             std::optional<std::span<const uint8_t>> key,
                                             std::optional<std::span<const uint8_t>> value);

}  // namespace tarn::tools
