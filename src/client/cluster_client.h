// Blocking connections to the brokers of one cluster, for group_admin and group_consumer: the
// bootstrap broker, any broker by node id (learned from Metadata, connected on first use), and
// the coordinator of a group or a transactional id (FindCoordinator, key type 0 or 1), retried
// while the coordinator is loading or not yet available. Each connection has negotiated its API
// versions.
//
// Thread: one thread at a time (group_consumer's heartbeat thread has its own connection).
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/uuid.h"
#include "client/blocking_client.h"
#include "client/topic_partition.h"
#include "protocol/error_codes.h"
#include "protocol/reader.h"

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

// ListOffsets specs: a timestamp, or one of these.
inline constexpr int64_t latest_offset_spec = -1;
inline constexpr int64_t earliest_offset_spec = -2;

// Topic ids between the wire's 16 bytes and base's uuid (most significant byte first).
inline uuid uuid_from_wire(const protocol::uuid& id) {
  uuid out;
  for (int i = 0; i < 8; ++i) {
    out.most_significant_bits = (out.most_significant_bits << 8) | id.bytes[i];
    out.least_significant_bits = (out.least_significant_bits << 8) | id.bytes[8 + i];
  }
  return out;
}
inline protocol::uuid uuid_to_wire(const uuid& id) {
  protocol::uuid out;
  for (int i = 0; i < 8; ++i) {
    out.bytes[i] = static_cast<uint8_t>(id.most_significant_bits >> (56 - 8 * i));
    out.bytes[8 + i] = static_cast<uint8_t>(id.least_significant_bits >> (56 - 8 * i));
  }
  return out;
}

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
  uuid topic_id;                             // zero before Metadata v10
  int16_t error_code = 0;                    // UNKNOWN_TOPIC_OR_PARTITION for a missing topic
  std::vector<partition_layout> partitions;  // by partition id
};

class cluster_client {
 public:
  // Connects to the first reachable broker of a comma-separated host:port list.
  static result<std::unique_ptr<cluster_client>, client_error> connect(
      const std::string& bootstrap, std::string client_id,
      std::chrono::milliseconds request_timeout = std::chrono::seconds(30),
      const security_config& security = {});

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

  // FindCoordinator for the key (a group, or a transactional id with key_type
  // transaction_key_type), retried until `deadline` while the error is retriable.
  result<broker_info, client_error> find_coordinator(const std::string& key,
                                                     std::chrono::steady_clock::time_point deadline,
                                                     int8_t key_type = group_key_type);
  // The connection to the key's coordinator (found once, then kept until forgotten).
  result<blocking_client*, client_error> coordinator(const std::string& key,
                                                     std::chrono::steady_clock::time_point deadline,
                                                     int8_t key_type = group_key_type);
  // The coordinator found for the key, if it is known.
  std::optional<broker_info> known_coordinator(const std::string& key,
                                               int8_t key_type = group_key_type) const;
  // After NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE or a connection error.
  void forget_coordinator(const std::string& key, int8_t key_type = group_key_type);

  static constexpr int8_t group_key_type = 0;
  static constexpr int8_t transaction_key_type = 1;
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
  security_config security_;  // for every connection it opens later
  std::map<int32_t, broker_info> brokers_;
  std::map<int32_t, std::unique_ptr<blocking_client>> nodes_;
  std::map<std::pair<int8_t, std::string>, broker_info> coordinators_;  // by key type and key
};

// Sleeps for the retry backoff, at most until the deadline; false when the deadline has passed.
bool backoff_until(std::chrono::steady_clock::time_point deadline,
                   std::chrono::milliseconds backoff = std::chrono::milliseconds(100));

// --- What group_admin and group_consumer share ------------------------------------------------

// OffsetCommit and OffsetFetch v10 name topics by id; the clients still name them.
inline constexpr int16_t offset_commit_max_version = 9;
inline constexpr int16_t offset_fetch_max_version = 9;

// The errors after which the group's coordinator is looked up again.
inline bool is_coordinator_error(int16_t c) {
  using protocol::error_code;
  return c == code(error_code::not_coordinator) ||
         c == code(error_code::coordinator_not_available) ||
         c == code(error_code::coordinator_load_in_progress);
}

// A connection or decode failure (code -1).
inline client_error transport_error(std::string message) {
  return client_error{-1, std::move(message)};
}

// The version of `Request` to send on `c` (at most `our_max`), or UNSUPPORTED_VERSION.
template <typename Request>
result<int16_t, client_error> version_or_fail(const blocking_client& c,
                                              int16_t our_max = Request::max_version) {
  const int16_t v = c.version_for<Request>(our_max);
  if (v < 0) {
    return fail(client_error{
        code(protocol::error_code::unsupported_version),
        fmt::format("the broker serves no {} version tarn speaks", Request::kafka_name)});
  }
  return v;
}

// Partitions grouped by topic, topics and partitions ascending, each once.
inline std::map<std::string, std::vector<int32_t>> by_topic(
    const std::vector<topic_partition>& tps) {
  std::map<std::string, std::vector<int32_t>> out;
  for (const auto& tp : tps) out[tp.topic].push_back(tp.partition);
  for (auto& [t, ps] : out) {
    std::sort(ps.begin(), ps.end());
    ps.erase(std::unique(ps.begin(), ps.end()), ps.end());
  }
  return out;
}

}  // namespace tarn::client
