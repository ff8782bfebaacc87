// DescribeLogDirs (key 35): the log directory, its partitions' sizes and the volume's space
// (kafka-log-dirs.sh --describe, Admin.describeLogDirs / describeReplicaLogDirs).
//
// Versions served: 1-5 (Kafka 4.4's range; v2+ flexible). Behaviour, as Kafka 4.4's
// KafkaApis.handleDescribeLogDirsRequest and ReplicaManager.describeLogDirs:
//   - One result: the log directory's absolute path, ErrorCode NONE. Topics null means every
//     partition; else the asked ones that exist here (unknown ones are left out, a topic left
//     without partitions too). Topics sorted by name, partitions by index (Kafka: hash order).
//   - Each partition: PartitionSize = the bytes of its .log segment files (UnifiedLog.size, no
//     indexes), OffsetLag = max(high watermark - log end offset, 0) = 0, IsFutureKey false.
//   - TotalBytes / UsableBytes (v4+): statvfs of the directory, f_blocks and f_bavail times
//     f_frsize, as Java's FileStore.getTotalSpace / getUsableSpace; IsCordoned (v5) false.
//     statvfs failing: KAFKA_STORAGE_ERROR for the directory, without topics.
//   - Top-level ErrorCode (v3+) NONE (no authorizer: never CLUSTER_AUTHORIZATION_FAILED).
//   - A body that does not decode closes the connection.
// Not supported: several log directories, future logs (AlterReplicaLogDirs), quotas.
#include <spdlog/spdlog.h>
#include <sys/statvfs.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "broker/authorization.h"
#include "broker/handler.h"
#include "broker/topic_handler_util.h"
#include "broker/topic_manager.h"
#include "protocol/error_codes.h"
#include "protocol/messages/describe_log_dirs_request.h"
#include "protocol/messages/describe_log_dirs_response.h"

namespace tarn::broker {

namespace {

using protocol::error_code;
using log_dirs_response = protocol::describe_log_dirs_response;

asio::awaitable<handler_outcome> handle_describe_log_dirs(request_context& request) {
  const int16_t version = request.header.api_version;
  protocol::reader r(request.body());
  auto decoded = protocol::describe_log_dirs_request::decode(r, version);
  if (!decoded) {
    spdlog::warn("connection {} from {}: DescribeLogDirs v{} body does not decode: {}",
                 request.connection.id, request.connection.peer, version,
                 protocol::describe(decoded.error().code));
    co_return close_connection{"bad DescribeLogDirs request"};
  }
  // As Kafka: DESCRIBE on the cluster, else CLUSTER_AUTHORIZATION_FAILED.
  if (auto denied = cluster_denied<protocol::describe_log_dirs_response>(
          request, security::acl_operation::describe)) {
    co_return std::move(*denied);
  }
  // The asked partitions (a set, as Kafka's), or every one.
  std::set<std::pair<std::string_view, int32_t>> asked;
  const bool all = !decoded->topics.has_value();
  if (!all) {
    for (const auto& t : *decoded->topics) {
      for (int32_t p : t.partitions) asked.insert({t.topic, p});
    }
  }

  topic_manager& topics = *request.services.topics;
  log_dirs_response reply;
  auto guard = topics.read_lock();
  storage::log_manager& logs = topics.logs();
  const std::string dir = std::filesystem::absolute(logs.log_dir()).string();
  auto& result = reply.results.emplace_back();
  result.log_dir = dir;
  struct statvfs vfs {};
  if (::statvfs(dir.c_str(), &vfs) != 0) {
    spdlog::error("DescribeLogDirs: statvfs {}: {}", dir, std::strerror(errno));
    result.error_code = code(error_code::kafka_storage_error);
    response out = encode_response(reply, version);
    co_return out;
  }
  result.total_bytes = static_cast<int64_t>(vfs.f_blocks) * static_cast<int64_t>(vfs.f_frsize);
  result.usable_bytes = static_cast<int64_t>(vfs.f_bavail) * static_cast<int64_t>(vfs.f_frsize);
  // all_logs() is in topic-partition order: one response topic per run of a topic.
  for (const auto& [tp, log] : logs.all_logs()) {
    if (!all && !asked.contains({tp.topic, tp.partition})) continue;
    if (result.topics.empty() || result.topics.back().name != tp.topic) {
      result.topics.emplace_back().name = log->tp().topic;
    }
    auto& p = result.topics.back().partitions.emplace_back();
    p.partition_index = tp.partition;
    {
      std::lock_guard log_lock(log->mutex());
      p.partition_size = log->size_bytes();
    }
    p.offset_lag = std::max<int64_t>(log->high_watermark() - log->log_end_offset(), 0);
    p.is_future_key = false;
  }
  // Encoded under the lock: the topic names point into the logs.
  response out = encode_response(reply, version);
  guard.unlock();
  co_return out;
}

}  // namespace

void register_describe_log_dirs_handler(handler_registry& registry) {
  registry.register_handler(protocol::describe_log_dirs_request::api_key,
                            protocol::describe_log_dirs_request::min_version,
                            protocol::describe_log_dirs_request::max_version,
                            handle_describe_log_dirs);
}

}  // namespace tarn::broker
