// __transaction_state records as Kafka's dump tool prints them (see txn_log_json.h).
#include "txn/txn_log_json.h"

#include <fmt/format.h>

#include "protocol/messages/transaction_log_key.h"
#include "protocol/messages/transaction_log_value.h"
#include "protocol/reader.h"
#include "txn/txn_state.h"

namespace tarn::txn {

namespace {

// A JSON string as Jackson writes it: UTF-8 as is, '"' and '\' escaped, control characters as
// \b \t \n \f \r or \u00XX (upper-case hex).
std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\b':
        out += "\\b";
        break;
      case '\t':
        out += "\\t";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\f':
        out += "\\f";
        break;
      case '\r':
        out += "\\r";
        break;
      default:
        if (c < 0x20) {
          out += fmt::format("\\u{:04X}", c);
        } else {
          out += ch;
        }
    }
  }
  out += '"';
  return out;
}

// A string field's bytes as the caller decodes them, then as JSON.
std::string json_text(text_decoder text, std::string_view raw) {
  return json_string(
      text(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(raw.data()), raw.size())));
}

std::string value_json(const protocol::transaction_log_value& v, int16_t version,
                       text_decoder text) {
  std::string d = fmt::format("{{\"producerId\":{}", v.producer_id);
  // Tagged fields (version 1) are written only when they are not their default.
  if (version >= 1 && v.previous_producer_id != -1) {
    d += fmt::format(",\"previousProducerId\":{}", v.previous_producer_id);
  }
  if (version >= 1 && v.next_producer_id != -1) {
    d += fmt::format(",\"nextProducerId\":{}", v.next_producer_id);
  }
  d += fmt::format(",\"producerEpoch\":{}", v.producer_epoch);
  if (version >= 1 && v.next_producer_epoch != -1) {
    d += fmt::format(",\"nextProducerEpoch\":{}", v.next_producer_epoch);
  }
  d += fmt::format(",\"transactionTimeoutMs\":{}", v.transaction_timeout_ms);
  // TransactionLogMessageParser puts the state's name in place of its id (the id as text when
  // Kafka knows no such state).
  const std::string status =
      valid_state_id(v.transaction_status)
          ? std::string(state_name(static_cast<txn_state>(v.transaction_status)))
          : std::to_string(v.transaction_status);
  d += ",\"transactionStatus\":" + json_string(status);
  d += ",\"transactionPartitions\":";
  if (!v.transaction_partitions) {
    d += "null";
  } else {
    d += "[";
    bool first = true;
    for (const auto& p : *v.transaction_partitions) {
      if (!first) d += ",";
      first = false;
      d += "{\"topic\":" + json_text(text, p.topic) + ",\"partitionIds\":[";
      for (size_t i = 0; i < p.partition_ids.size(); ++i) {
        if (i > 0) d += ",";
        d += std::to_string(p.partition_ids[i]);
      }
      d += "]}";
    }
    d += "]";
  }
  d += fmt::format(",\"transactionLastUpdateTimestampMs\":{}",
                   v.transaction_last_update_timestamp_ms);
  d += fmt::format(",\"transactionStartTimestampMs\":{}", v.transaction_start_timestamp_ms);
  if (version >= 1 && v.client_transaction_version != 0) {
    d += fmt::format(",\"clientTransactionVersion\":{}", v.client_transaction_version);
  }
  d += "}";
  return fmt::format("{{\"version\":\"{}\",\"data\":{}}}", version, d);
}

}  // namespace

decoded_record decode_transaction_log_record(int64_t offset,
                                             std::optional<std::span<const uint8_t>> key,
                                             std::optional<std::span<const uint8_t>> value,
                                             text_decoder text) {
  auto skipped = [offset](std::string_view why) {
    return decoded_record{fmt::format("Error at offset {}, skipping. {}", offset, why),
                          std::nullopt};
  };
  if (!key) {
    // Kafka throws here, which ends its dump; tarn prints Kafka's message and goes on.
    return {fmt::format("Failed to decode message at offset {} using the specified decoder "
                        "(message had a missing key)",
                        offset),
            std::nullopt};
  }
  protocol::reader kr(*key);
  const int16_t type = kr.read_int16();
  if (!kr.ok()) return skipped("the key is shorter than its type");
  if (type != 0) {
    return {fmt::format("Unknown record type {} at offset {}, skipping.", type, offset),
            std::nullopt};
  }
  auto k = protocol::transaction_log_key::decode(kr, 0);
  if (!k) return skipped(protocol::describe(k.error().code));
  decoded_record out;
  out.key =
      "{\"type\":\"0\",\"data\":{\"transactionalId\":" + json_text(text, k->transactional_id) +
      "}}";
  if (!value) {
    out.payload = "<DELETE>";
    return out;
  }
  protocol::reader vr(*value);
  const int16_t version = vr.read_int16();
  if (!vr.ok() || version < protocol::transaction_log_value::min_version ||
      version > protocol::transaction_log_value::max_version) {
    return skipped(fmt::format("unknown transaction log value version {}", version));
  }
  auto v = protocol::transaction_log_value::decode(vr, version);
  if (!v) return skipped(protocol::describe(v.error().code));
  out.payload = value_json(*v, version, text);
  return out;
}

}  // namespace tarn::txn
