// __transaction_state records with the generated codecs (see txn_records.h).
#include "txn/txn_records.h"

#include <fmt/format.h>

#include <map>

#include "protocol/messages/transaction_log_key.h"
#include "protocol/messages/transaction_log_value.h"
#include "protocol/reader.h"
#include "protocol/writer.h"
#include "record/batch_builder.h"

namespace tarn::txn {

std::vector<uint8_t> encode_txn_key(std::string_view transactional_id) {
  protocol::transaction_log_key key;
  key.transactional_id = transactional_id;
  std::vector<uint8_t> out;
  out.reserve(2 + key.encoded_size(txn_log_key_version));
  protocol::writer w(out);
  w.write_int16(txn_log_key_version);
  key.encode(w, txn_log_key_version);
  return out;
}

std::vector<uint8_t> encode_txn_value(const txn_metadata& m, int16_t value_version) {
  protocol::transaction_log_value v;
  v.producer_id = m.producer_id;
  v.previous_producer_id = m.previous_producer_id;
  v.next_producer_id = m.next_producer_id;
  v.producer_epoch = m.producer_epoch;
  v.transaction_timeout_ms = m.timeout_ms;
  v.transaction_status = static_cast<int8_t>(m.state);
  // Partitions grouped by topic in name order; as TransactionLog.valueToBytes writes them: no
  // list at all (null) for Empty, an empty list for the other states when there are none.
  std::map<std::string_view, std::vector<int32_t>> by_topic;
  for (const auto& [topic, partition] : m.partitions) by_topic[topic].push_back(partition);
  if (m.state != txn_state::empty) {
    auto& list = v.transaction_partitions.emplace();
    for (auto& [topic, ids] : by_topic) list.push_back({topic, std::move(ids)});
  }
  v.transaction_last_update_timestamp_ms = m.txn_last_update_timestamp;
  v.transaction_start_timestamp_ms = m.txn_start_timestamp;
  v.client_transaction_version = m.client_transaction_version;
  std::vector<uint8_t> out;
  out.reserve(2 + v.encoded_size(value_version));
  protocol::writer w(out);
  w.write_int16(value_version);
  v.encode(w, value_version);
  return out;
}

result<std::string, std::string> decode_txn_key(std::span<const uint8_t> bytes) {
  protocol::reader r(bytes);
  const int16_t version = r.read_int16();
  if (!r.ok()) return fail(std::string("transaction log key shorter than its version"));
  if (version != txn_log_key_version) {
    return fail(fmt::format("transaction log key version {} is unknown", version));
  }
  auto key = protocol::transaction_log_key::decode(r, version);
  if (!key) {
    return fail(fmt::format("transaction log key: {}", protocol::describe(key.error().code)));
  }
  return std::string(key->transactional_id);
}

result<txn_metadata, std::string> decode_txn_value(std::span<const uint8_t> bytes) {
  protocol::reader r(bytes);
  const int16_t version = r.read_int16();
  if (!r.ok()) return fail(std::string("transaction log value shorter than its version"));
  if (version < protocol::transaction_log_value::min_version ||
      version > protocol::transaction_log_value::max_version) {
    return fail(fmt::format("transaction log value version {} is unknown", version));
  }
  auto v = protocol::transaction_log_value::decode(r, version);
  if (!v) {
    return fail(fmt::format("transaction log value: {}", protocol::describe(v.error().code)));
  }
  if (!valid_state_id(v->transaction_status)) {
    return fail(fmt::format("transaction log value: unknown status {}", v->transaction_status));
  }
  txn_metadata m;
  m.producer_id = v->producer_id;
  m.previous_producer_id = v->previous_producer_id;
  m.next_producer_id = v->next_producer_id;
  m.producer_epoch = v->producer_epoch;
  m.timeout_ms = v->transaction_timeout_ms;
  m.state = static_cast<txn_state>(v->transaction_status);
  if (v->transaction_partitions) {
    for (const auto& p : *v->transaction_partitions) {
      for (int32_t id : p.partition_ids) m.partitions.emplace(std::string(p.topic), id);
    }
  }
  m.txn_last_update_timestamp = v->transaction_last_update_timestamp_ms;
  m.txn_start_timestamp = v->transaction_start_timestamp_ms;
  m.client_transaction_version = v->client_transaction_version;
  return m;
}

std::vector<uint8_t> build_txn_batch(std::span<const uint8_t> key,
                                     std::optional<std::span<const uint8_t>> value,
                                     timestamp_ms now) {
  record::batch_builder_config bc;
  bc.batch_size = record::record_batch_overhead + 64 + key.size() + (value ? value->size() : 0);
  record::batch_builder builder(bc);
  builder.try_append(now, record::bytes_view(key),
                     value ? std::optional<record::bytes_view>(*value) : std::nullopt);
  auto built = builder.build();
  return built ? std::move(*built) : std::vector<uint8_t>{};
}

}  // namespace tarn::txn
