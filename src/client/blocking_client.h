// A minimal blocking Kafka request client: one TCP connection (TLS and SASL when the security
// settings ask), one request at a time, the generated protocol codecs for bodies and headers. The
// command-line tools' admin requests (`tarn topics`), group_admin and group_consumer use it; the
// producer has its own pipelined, asynchronous broker_connection (connection.h).
//
// Thread: one thread at a time per client (callers lock around it when they share one).
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <new>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"
#include "client/client_security.h"
#include "protocol/headers.h"
#include "protocol/reader.h"
#include "protocol/writer.h"

namespace tarn::client {

// std::allocator, except that a value-less construct leaves the element uninitialised, so a
// vector's resize() does not zero bytes that a read overwrites at once.
template <typename T>
struct uninitialized_allocator : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = uninitialized_allocator<U>;
  };
  uninitialized_allocator() = default;
  template <typename U>
  uninitialized_allocator(const uninitialized_allocator<U>&) noexcept {}
  template <typename U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
// A response buffer that grows without zeroing (the consumer's fetch buffers).
using fetch_bytes = std::vector<uint8_t, uninitialized_allocator<uint8_t>>;

class blocking_client {
 public:
  // Connects to the first reachable "host:port" of a comma-separated bootstrap list. `timeout`
  // bounds every read and write (a silent broker ends in an error rather than a hang), the TLS
  // handshake and each SASL step included. With SASL, the connection is authenticated
  // (SaslHandshake v1, then SaslAuthenticate with KIP-152 framing) before connect returns.
  static result<std::unique_ptr<blocking_client>, std::string> connect(
      const std::string& bootstrap, std::chrono::milliseconds timeout = std::chrono::seconds(30),
      std::string client_id = "tarn-tools", const security_config& security = {});
  // Connects to one broker.
  static result<std::unique_ptr<blocking_client>, std::string> connect(
      const std::string& host, int32_t port, std::chrono::milliseconds timeout,
      std::string client_id, const security_config& security = {});
  ~blocking_client();
  blocking_client(const blocking_client&) = delete;
  blocking_client& operator=(const blocking_client&) = delete;

  // Sends one request (header + body) and returns the response body (after the header), which
  // borrows `buffer` (a std::vector<uint8_t> or fetch_bytes). `timeout` overrides the client's
  // for this request (a JoinGroup waits as long as the group's rebalance).
  template <typename Buffer>
  result<std::span<const uint8_t>, std::string> round_trip(int16_t api_key, int16_t api_version,
                                                           std::span<const uint8_t> body,
                                                           Buffer& buffer,
                                                           std::chrono::milliseconds timeout = {});

  // Asks the broker for its API versions (ApiVersions v3, else v0) and remembers them for
  // version_for. Without it, version_for answers -1 for everything.
  result<void, std::string> negotiate_versions();
  // The highest version of the API both sides speak (ours: [our_min, our_max]), or -1.
  int16_t version_for(int16_t api_key, int16_t our_min, int16_t our_max) const;
  template <typename Request>
  int16_t version_for(int16_t our_max = Request::max_version) const {
    return version_for(Request::api_key, Request::min_version, our_max);
  }

  // False once an error closed the connection (a timeout, a reset, a bad response).
  bool is_open() const { return fd_ >= 0; }
  const std::string& host() const { return host_; }
  int32_t port() const { return port_; }

 private:
  blocking_client(int fd, std::string host, int32_t port, std::chrono::milliseconds timeout,
                  std::string client_id)
      : fd_(fd),
        host_(std::move(host)),
        port_(port),
        timeout_(timeout),
        client_id_(std::move(client_id)) {}
  // The TLS handshake (when security.protocol asks) and the SASL exchange (likewise).
  result<void, std::string> secure(const security_config& security);
  result<void, std::string> authenticate(const security_config& security);
  void close_connection();
  template <typename Op>
  result<void, std::string> tls_io(size_t n, std::chrono::milliseconds timeout, bool writing,
                                   Op op);
  result<void, std::string> write_all(std::span<const uint8_t> bytes,
                                      std::chrono::milliseconds timeout);
  result<void, std::string> read_exact(uint8_t* out, size_t n, std::chrono::milliseconds timeout);

  int fd_ = -1;
  SSL* ssl_ = nullptr;  // set with TLS: every byte goes through it (the fd is then non-blocking)
  std::string host_;
  int32_t port_ = 0;
  std::chrono::milliseconds timeout_;
  std::string client_id_;
  int32_t next_correlation_id_ = 1;
  int rcvlowat_ = 1;  // the socket's SO_RCVLOWAT (read_exact sets it before it waits)
  std::map<int16_t, std::pair<int16_t, int16_t>> versions_;  // api key -> broker's [min, max]
};

// Sends `request` at `version` and decodes the response, which borrows `buffer` (keep it alive
// as long as the response).
template <class Response, class Request, class Buffer>
result<Response, std::string> call(blocking_client& client, const Request& request, int16_t version,
                                   Buffer& buffer, std::chrono::milliseconds timeout = {}) {
  std::vector<uint8_t> body;
  body.reserve(request.encoded_size(version));
  protocol::writer w(body);
  request.encode(w, version);
  auto bytes = client.round_trip(Request::api_key, version, body, buffer, timeout);
  if (!bytes) return fail(bytes.error());
  protocol::reader r(*bytes);
  auto decoded = Response::decode(r, version);
  if (!decoded) {
    return fail(std::string("cannot decode ") + std::string(Response::kafka_name) + ": " +
                std::string(protocol::describe(decoded.error().code)));
  }
  return std::move(*decoded);
}

}  // namespace tarn::client
