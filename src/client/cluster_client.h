// Blocking connections to the brokers of one cluster, for group_admin and group_consumer: the
// bootstrap broker, any broker by node id (learned from Metadata, connected on first use), and
// the coordinator of a group (FindCoordinator, key type 0), retried while the coordinator is
// loading or not yet available. Each connection has negotiated its API versions.
//
// Thread: one thread at a time (group_consumer's heartbeat thread has its own connection).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "client/blocking_client.h"

namespace tarn::client {

// A failed request: Kafka's error code and message (the broker's, else Kafka's default text for
// the code), or code -1 (UNKNOWN_SERVER_ERROR) with the reason for a connection or decode error.
struct client_error {
  int16_t code = -1;
  std::string message;
};

// Kafka's error for `code`, with the broker's message when it sent one.
client_error kafka_error(int16_t code, std::optional<std::string_view> message = std::nullopt);
// Kafka's name of the error code (e.g. GROUP_ID_NOT_FOUND), or "UNKNOWN(code)".
std::string error_name(int16_t code);
bool is_retriable(int16_t code);

struct topic_partition {
  std::string topic;
  int32_t partition = 0;
  auto operator<=>(const topic_partition&) const = default;
};

// ListOffsets specs: a timestamp, or one of these.
inline constexpr int64_t latest_offset_spec = -1;
inline constexpr int64_t earliest_offset_spec = -2;

struct broker_info {
  int32_t node_id = -1;
  std::string host;
  int32_t port = 0;
};

struct partition_layout {
  int32_t partition = 0;
  int32_t leader = -1;  // -1: no leader now
  int16_t error_code = 0;
};

struct topic_layout {
  std::string name;
  int16_t error_code = 0;                    // UNKNOWN_TOPIC_OR_PARTITION for a missing topic
  std::vector<partition_layout> partitions;  // by partition id
};

class cluster_client {
 public:
  // Connects to the first reachable broker of a comma-separated host:port list.
  static result<std::unique_ptr<cluster_client>, client_error> connect(
      const std::string& bootstrap, std::string client_id,
      std::chrono::milliseconds request_timeout = std::chrono::seconds(30));

  // The bootstrap broker's connection (reconnected if an error closed it); valid until the next
  // call on this object.
  result<blocking_client*, client_error> bootstrap();
  const std::string& client_id() const { return client_id_; }
  std::chrono::milliseconds request_timeout() const { return request_timeout_; }

  // Metadata for the topics (every topic when nullopt); also learns the brokers.
  result<std::map<std::string, topic_layout>, client_error> metadata(
      const std::optional<std::vector<std::string>>& topics);

  // The connection to a broker (the bootstrap broker's own when it is that node).
  result<blocking_client*, client_error> node(int32_t node_id);
  std::optional<broker_info> broker(int32_t node_id) const;
  // The brokers the last Metadata named, by id.
  std::vector<int32_t> broker_ids() const;

  // FindCoordinator for the group, retried until `deadline` while the error is retriable.
  result<broker_info, client_error> find_coordinator(
      const std::string& group, std::chrono::steady_clock::time_point deadline);
  // The connection to the group's coordinator (found once, then kept until forgotten).
  result<blocking_client*, client_error> coordinator(
      const std::string& group, std::chrono::steady_clock::time_point deadline);
  // The coordinator found for the group, if it is known.
  std::optional<broker_info> known_coordinator(const std::string& group) const;
  // After NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE or a connection error.
  void forget_coordinator(const std::string& group);
  // Closes the connection to a broker after an error on it (reconnected on next use).
  void drop(int32_t node_id);

 private:
  cluster_client(std::unique_ptr<blocking_client> bootstrap, std::string client_id,
                 std::chrono::milliseconds request_timeout)
      : bootstrap_(std::move(bootstrap)),
        client_id_(std::move(client_id)),
        request_timeout_(request_timeout) {}

  // Reconnects the bootstrap connection after an error closed it.
  result<void, client_error> ensure_bootstrap();

  std::unique_ptr<blocking_client> bootstrap_;
  std::string client_id_;
  std::chrono::milliseconds request_timeout_;
  std::map<int32_t, broker_info> brokers_;
  std::map<int32_t, std::unique_ptr<blocking_client>> nodes_;
  std::map<std::string, broker_info> coordinators_;
};

// Sleeps for the retry backoff, at most until the deadline; false when the deadline has passed.
bool backoff_until(std::chrono::steady_clock::time_point deadline,
                   std::chrono::milliseconds backoff = std::chrono::milliseconds(100));

}  // namespace tarn::client
