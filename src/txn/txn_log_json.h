// __transaction_state records as JSON, as Kafka 4.4's DumpLogSegments TransactionLogMessageParser
// prints them (`tarn dump-log --transaction-log-decoder`). Here beside txn_records.h, which owns
// the format; the tool only prints what this returns.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace tarn::txn {

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
// `text` turns a string field's bytes into what the caller prints (dump-log: Java's UTF-8
// decoding, malformed bytes replaced).
using text_decoder = std::string (*)(std::span<const uint8_t>);
decoded_record decode_transaction_log_record(int64_t offset,
                                             std::optional<std::span<const uint8_t>> key,
                                             std::optional<std::span<const uint8_t>> value,
                                             text_decoder text);

}  // namespace tarn::txn
