// DeleteRecords (key 21): moves partitions' log start offsets forward (kafka-delete-records.sh,
// Admin.deleteRecords).
//
// Versions served: 0-2 (Kafka 4.4 serves 0-2; v2 is flexible). The body is decoded with
// protocol::delete_records_request.
// Behaviour (KafkaApis.handleDeleteRecordsRequest, ReplicaManager.deleteRecordsOnLocalLog,
// Partition.deleteRecordsOnLeader):
//   - Offset -1 means the high watermark. The log start offset moves to the offset
//     (storage::log::delete_records_before: never backwards, segments wholly below it deleted at
//     once, the epoch cache trimmed); LowWatermark is the log start offset after the call.
//   - log-start-offset-checkpoint is rewritten before the answer, so the deletion survives a
//     crash (Kafka rewrites it every log.flush.start.offset.checkpoint.interval.ms).
//   - Errors, LowWatermark -1, checked in Kafka's order: an unknown topic or partition
//     UNKNOWN_TOPIC_OR_PARTITION; an existing internal topic (__consumer_offsets,
//     __transaction_state, __share_group_state) INVALID_TOPIC_EXCEPTION; a topic whose
//     cleanup.policy lacks "delete" POLICY_VIOLATION; an offset above the high watermark or
//     below -1 OFFSET_OUT_OF_RANGE; a failed file operation KAFKA_STORAGE_ERROR.
//   - A partition named twice is answered once with its last offset (Kafka keys a map by
//     partition). Kafka answers topics in its hash map's order; tarn in request order.
//   - A body that does not decode closes the connection.
// Authorization: DELETE on each topic (TOPIC_AUTHORIZATION_FAILED), as Kafka.
// Not supported: quotas; timeout_ms (one replica: done when answered).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "broker/authorization.h"
#include "broker/handler.h"
#include "broker/offsets_topic.h"
#include "broker/topic_handler_util.h"
#include "broker/topic_manager.h"
#include "protocol/error_codes.h"
#include "protocol/messages/delete_records_request.h"
#include "protocol/messages/delete_records_response.h"

namespace tarn::broker {

namespace {

using protocol::error_code;
using records_partition_result = protocol::delete_records_response::delete_records_partition_result;
using records_topic_result = protocol::delete_records_response::delete_records_topic_result;

constexpr int64_t high_watermark_offset = -1;  // DeleteRecordsRequest.HIGH_WATERMARK
constexpr int64_t invalid_low_watermark = -1;  // DeleteRecordsResponse.INVALID_LOW_WATERMARK

error_code delete_records_error(const storage::storage_error& e) {
  switch (e.code) {
    case storage::storage_errc::offset_out_of_range:
      return error_code::offset_out_of_range;
    case storage::storage_errc::not_found:
      return error_code::unknown_topic_or_partition;
    case storage::storage_errc::io_error:
    case storage::storage_errc::corrupt:
      return error_code::kafka_storage_error;
    default:
      return error_code::unknown_server_error;
  }
}

// One partition: the error code (NONE on success) and the low watermark to report.
records_partition_result delete_one(storage::log_manager& logs, std::string_view topic,
                                    int32_t partition, int64_t offset, bool& moved) {
  records_partition_result p;
  p.partition_index = partition;
  p.low_watermark = invalid_low_watermark;
  storage::log* log = logs.get_log(topic, partition);
  if (log == nullptr) {
    p.error_code = code(error_code::unknown_topic_or_partition);
    return p;
  }
  if (is_internal_topic(topic)) {
    p.error_code = code(error_code::invalid_topic_exception);
    return p;
  }
  if (!log->config().cleanup_delete) {
    p.error_code = code(error_code::policy_violation);
    return p;
  }
  std::lock_guard log_lock(log->mutex());
  const int64_t target = offset == high_watermark_offset ? log->high_watermark() : offset;
  const int64_t before = log->log_start_offset();
  auto r = log->delete_records_before(target, wall_clock_ms());
  if (!r) {
    if (r.error().code != storage::storage_errc::offset_out_of_range) {
      spdlog::error("DeleteRecords {}-{} to {}: {}", topic, partition, target, r.error().message);
    }
    p.error_code = code(delete_records_error(r.error()));
    return p;
  }
  if (log->log_start_offset() != before) moved = true;
  p.low_watermark = log->log_start_offset();
  return p;
}

asio::awaitable<handler_outcome> handle_delete_records(request_context& request) {
  const int16_t version = request.header.api_version;
  protocol::reader r(request.body());
  auto decoded = protocol::delete_records_request::decode(r, version);
  if (!decoded) {
    spdlog::warn("connection {} from {}: DeleteRecords v{} body does not decode: {}",
                 request.connection.id, request.connection.peer, version,
                 protocol::describe(decoded.error().code));
    co_return close_connection{"bad DeleteRecords request"};
  }
  // Partitions by topic in first-seen order, each once with the last offset asked.
  std::vector<std::pair<std::string_view, std::vector<std::pair<int32_t, int64_t>>>> asked;
  std::map<std::string_view, size_t> topic_at;
  for (const auto& t : decoded->topics) {
    auto [it, fresh] = topic_at.try_emplace(t.name, asked.size());
    if (fresh) asked.push_back({t.name, {}});
    auto& parts = asked[it->second].second;
    for (const auto& p : t.partitions) {
      auto same = std::find_if(parts.begin(), parts.end(),
                               [&](const auto& e) { return e.first == p.partition_index; });
      if (same != parts.end()) {
        same->second = p.offset;
      } else {
        parts.push_back({p.partition_index, p.offset});
      }
    }
  }

  topic_manager& topics = *request.services.topics;
  protocol::delete_records_response reply;
  reply.topics.reserve(asked.size());
  bool moved = false;
  auto guard = topics.read_lock();
  storage::log_manager& logs = topics.logs();
  for (const auto& [name, parts] : asked) {
    records_topic_result t;
    t.name = name;
    t.partitions.reserve(parts.size());
    // DELETE on the topic, before whether it exists (as Kafka).
    if (!authorize(request, security::acl_operation::delete_, security::resource_type::topic, name,
                   static_cast<int32_t>(parts.size()))) {
      for (const auto& [partition, offset] : parts) {
        records_partition_result& p = t.partitions.emplace_back();
        p.partition_index = partition;
        p.low_watermark = invalid_low_watermark;
        p.error_code = code(error_code::topic_authorization_failed);
      }
      reply.topics.push_back(std::move(t));
      continue;
    }
    for (const auto& [partition, offset] : parts) {
      t.partitions.push_back(delete_one(logs, name, partition, offset, moved));
    }
    reply.topics.push_back(std::move(t));
  }
  if (moved) {
    if (auto c = logs.checkpoint_log_start_offsets(); !c) {
      // The start offsets moved in memory and reads honour them; only a crash before the next
      // checkpoint would bring the records back. Kafka's periodic checkpoint logs and goes on too.
      spdlog::error("DeleteRecords: writing log-start-offset-checkpoint failed: {}",
                    c.error().message);
    }
  }
  guard.unlock();
  co_return encode_response(reply, version);
}

}  // namespace

void register_delete_records_handler(handler_registry& registry) {
  registry.register_handler(protocol::delete_records_request::api_key,
                            protocol::delete_records_request::min_version,
                            protocol::delete_records_request::max_version, handle_delete_records);
}

}  // namespace tarn::broker
