// One client connection, owned by one event loop (all of its coroutines run on that loop's
// thread, so its state needs no locks). It reads 4-byte length-prefixed request frames, starts
// a handler coroutine per request, and writes the responses back in request order however the
// handlers finish. On an SSL or SASL_SSL listener the bytes pass through an Asio ssl stream over
// the same socket (one branch per read or write call, none per byte); on a SASL listener the
// connection's sasl_authenticator decides which requests are read before authentication. See
// docs/broker.md for the flow and docs/security.md for the security layer.
#pragma once

#include <array>
#include <asio/awaitable.hpp>
#include <asio/cancellation_signal.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/ssl/context.hpp>
#include <asio/ssl/stream.hpp>
#include <asio/steady_timer.hpp>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <string>

#include "broker/handler.h"
#include "broker/request_memory.h"
#include "security/sasl_authenticator.h"
#include "security/ssl_principal_mapper.h"

namespace tarn::broker {

// A one-shot-per-wait wake-up for coroutines on one thread: wait() suspends until notify().
// A notify() with nobody waiting is dropped, so waiters re-check their condition in a loop.
class wakeup {
 public:
  explicit wakeup(const asio::any_io_executor& executor);
  asio::awaitable<void> wait();
  void notify();

 private:
  asio::steady_timer timer_;
};

// What a listener's connections share, built once at startup: its protocol, the TLS context (SSL
// and SASL_SSL; replaced whole when the keystore or truststore file changes, connections keep the
// one they began with), the DN-to-principal rules and the SASL settings.
struct listener_runtime {
  listener_security security;
  // Null for PLAINTEXT and SASL_PLAINTEXT. Read and replaced on loop 0 only (the acceptor hands
  // each new connection the current one).
  std::shared_ptr<asio::ssl::context> tls;
  // For the reload: when the files were last looked at, and what they looked like then.
  std::chrono::steady_clock::time_point tls_files_checked_at{};
  std::string tls_files_stamp;
  std::optional<security::ssl_principal_mapper> principal_mapper;
  std::shared_ptr<const security::sasl_settings> sasl;  // null unless SASL_*
  security::scram_credential_lookup scram_credentials;  // the metadata log's
};

class connection : public std::enable_shared_from_this<connection> {
 public:
  // `tls` is the listener's TLS context when it speaks TLS (null otherwise).
  connection(asio::ip::tcp::socket socket, connection_info info, broker_services& services,
             std::function<void(connection&)> on_closed, const listener_runtime* listener = nullptr,
             std::shared_ptr<asio::ssl::context> tls = nullptr);
  connection(const connection&) = delete;
  connection& operator=(const connection&) = delete;

  // Starts serving on the socket's executor. The connection's coroutines hold it alive until
  // it closes, so the caller need not keep a reference.
  void start();

  // Clean shutdown: read no further requests, answer those already read, then close.
  void stop_reading();
  // Closes now; requests in flight are cancelled and their responses dropped.
  void close(const std::string& reason);

  const connection_info& info() const { return info_; }
  bool closed() const { return closed_; }

 private:
  // A request read but not yet answered. Slots leave the queue only once done and written.
  struct slot {
    int32_t correlation_id = 0;
    uint8_t response_header_version = 0;
    bool done = false;
    handler_outcome outcome;
    std::array<uint8_t, 9> head{};  // size prefix + response header, filled when written
    asio::cancellation_signal cancel;
    request_memory_lease memory;  // the request's bytes, given back once answered
    int32_t throttle_ms = 0;      // the handler's quota throttle: mute reading once written
    bool raw = false;             // a SASL token after SaslHandshake v0: no response header
    bool close_after = false;     // close once written (a failed authentication)
    // For RequestMetrics: the API (-1: answered without a handler) and when the request was read,
    // its handler started and finished.
    int16_t api_key = -1;
    int16_t api_version = 0;
    std::chrono::steady_clock::time_point read_at, started_at, done_at;
  };

  // Each coroutine holds `self` so the connection outlives it.
  asio::awaitable<void> read_loop(std::shared_ptr<connection> self);
  asio::awaitable<void> write_loop(std::shared_ptr<connection> self);
  asio::awaitable<void> idle_watchdog(std::shared_ptr<connection> self);
  // Writes a response with file regions: header and body bytes with writev, regions with
  // sendfile. False when the connection failed.
  asio::awaitable<bool> write_with_regions(slot& s);
  asio::awaitable<bool> send_file_region(const file_region& region);
  // Under TLS file regions cannot be sent with sendfile: their bytes are read and written
  // through the ssl stream in chunks.
  asio::awaitable<bool> send_file_region_tls(const file_region& region);
  // Reads and writes through TLS. The plain socket's calls stay inline at their call sites, so
  // PLAINTEXT pays one branch per call and no extra coroutine frame.
  asio::awaitable<size_t> tls_read_some(asio::mutable_buffer buffer, asio::error_code& ec);
  // Gathers `buffers` into one TLS write (a TLS record per buffer would waste bytes and calls).
  asio::awaitable<void> tls_write_all(std::span<const asio::const_buffer> buffers,
                                      asio::error_code& ec);
  // The TLS handshake and the client certificate's principal; false when it failed.
  asio::awaitable<bool> tls_handshake();
  // Before authentication: answer nothing more and close after the failed-authentication delay.
  void close_after_delay(const std::string& reason);
  // A SASL token framed raw after SaslHandshake v0.
  void dispatch_raw_token(frame_buffer frame);
  asio::awaitable<void> run_handler(std::shared_ptr<connection> self, const handler_entry* entry,
                                    request_context request, slot* s);
  // Reads the next frame; nullopt at end of stream or on an error (the connection is then
  // closed or half-closed).
  asio::awaitable<std::optional<frame_buffer>> read_frame();
  asio::awaitable<bool> fill(size_t min_bytes);
  // Waits until queued.max.request.bytes admits a request of `bytes` and takes them into
  // next_lease_; false when the connection stopped reading meanwhile.
  asio::awaitable<bool> reserve_request_memory(int64_t bytes);
  // Queues an answer that needs no handler (the ApiVersions version fallback, a close).
  void push_done(int32_t correlation_id, uint8_t header_version, handler_outcome outcome);
  void dispatch(frame_buffer frame);
  // RequestMetrics for the first `count` slots, just written.
  void record_written(size_t count);

  asio::ip::tcp::socket socket_;
  std::shared_ptr<asio::ssl::context> tls_context_;
  std::unique_ptr<asio::ssl::stream<asio::ip::tcp::socket&>> tls_;  // null: plain socket
  std::vector<uint8_t> tls_write_buffer_;  // gathers a write's buffers into one TLS write
  const listener_runtime* listener_ = nullptr;
  std::unique_ptr<security::sasl_authenticator> sasl_;  // SASL listeners only
  connection_info info_;
  broker_services& services_;
  std::function<void(connection&)> on_closed_;

  std::deque<std::unique_ptr<slot>> slots_;
  wakeup writer_wakeup_;
  wakeup reader_wakeup_;
  asio::steady_timer idle_timer_;
  // Quota throttling (KIP-219): after a throttled answer is written, no request is read from
  // this client until mute_until_ (the client also backs off by the ThrottleTimeMs it got).
  asio::steady_timer mute_timer_;
  std::chrono::steady_clock::time_point mute_until_{};
  std::chrono::steady_clock::time_point last_activity_;

  // Bytes read from the socket but not yet consumed: [read_begin_, read_end_).
  std::unique_ptr<uint8_t[]> read_buffer_;
  size_t read_begin_ = 0;
  size_t read_end_ = 0;

  request_memory_lease next_lease_;  // taken by read_frame, handed to the request's slot

  bool reading_done_ = false;  // no more requests will be read
  bool draining_ = false;      // stop_reading() was called: answer what was read, then close
  bool closed_ = false;
};

}  // namespace tarn::broker
