// One blocking client connection from this broker to another (a replica fetcher to its leader,
// the transaction marker sender to a partition's leader): POSIX sockets with poll() timeouts, so
// a paused peer costs at most the caller's timeout, and `abandon` is noticed within 100 ms.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"

namespace tarn::cluster {
class cluster_membership;
}

namespace tarn::broker {

struct broker_config;

// The largest response a broker accepts from another (a fetch of many partitions).
inline constexpr int32_t max_replica_response_bytes = 64 * 1024 * 1024;

class broker_connection {
 public:
  explicit broker_connection(std::string client_id = "tarn-replica-fetcher")
      : client_id_(std::move(client_id)) {}
  broker_connection(const broker_connection&) = delete;
  broker_connection& operator=(const broker_connection&) = delete;
  ~broker_connection() { close_connection(); }

  bool connected() const { return fd_ >= 0; }
  const std::string& target() const { return target_; }
  const std::string& client_id() const { return client_id_; }

  result<void, std::string> connect_to(const std::string& host, int32_t port);
  void close_connection();

  // Sends one request and returns the response body (after its header). `abandon` is asked
  // every 100 ms while it waits: true gives the request up (and the connection with it).
  result<std::span<const uint8_t>, std::string> round_trip(int16_t api_key, int16_t api_version,
                                                           std::span<const uint8_t> body,
                                                           std::vector<uint8_t>& buffer,
                                                           int64_t timeout_ms,
                                                           const std::function<bool()>& abandon);

 private:
  result<void, std::string> io(uint8_t* data, size_t n, bool sending, int64_t deadline_ms,
                               const std::function<bool()>& abandon);

  int fd_ = -1;
  int32_t next_correlation_id_ = 1;
  std::string target_;
  std::string client_id_;
};

// Connects `conn` (when it is not connected) to live broker `node_id` on this broker's first
// advertised listener's name (else the broker's first listener), as the cluster registered it.
// False when the broker is not live or does not answer: the caller retries later.
bool connect_to_broker(broker_connection& conn, const broker_config& config,
                       const cluster::cluster_membership& membership, int32_t node_id);

}  // namespace tarn::broker
