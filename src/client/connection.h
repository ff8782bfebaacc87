// One TCP connection from the producer to one broker (librdkafka's rd_kafka_broker_t, reduced):
// connect (TLS through asio's ssl::stream when security.protocol asks), learn the broker's API
// versions, authenticate (SaslHandshake v1 + SaslAuthenticate, KIP-152), then pipeline requests and
// match responses in order (Kafka answers the requests of a connection in the order they were
// sent). A request not answered within request.timeout.ms closes the connection, failing everything
// in flight, as Java's NetworkClient does.
//
// Thread: every member runs on the sender's io_context thread; nothing here is locked.
#pragma once

#include <asio.hpp>
#include <asio/ssl/context.hpp>
#include <asio/ssl/stream.hpp>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "base/result.h"
#include "client/client_security.h"
#include "client/producer_config.h"

namespace tarn::client {

// The body of a response (after the size), or why there is none.
using response_handler =
    std::function<void(result<std::span<const uint8_t>, std::string> response)>;

class broker_connection : public std::enable_shared_from_this<broker_connection> {
 public:
  broker_connection(asio::io_context& io, int32_t node, broker_address address,
                    std::string client_id, std::chrono::milliseconds request_timeout,
                    std::chrono::milliseconds connect_timeout,
                    std::shared_ptr<asio::ssl::context> tls = nullptr,
                    security_config security = {});
  ~broker_connection();

  // Resolves, connects, shakes hands (TLS), exchanges ApiVersions and authenticates (SASL);
  // `done` gets the error, if any. socket.connection.setup.timeout.ms bounds all of it.
  void connect(std::function<void(const std::string* error)> done);

  // Queues a request built by `build(correlation_id)`. With expect_response false (Produce
  // with acks=0) the handler runs once the bytes are written, with an empty response.
  void send(std::function<std::vector<uint8_t>(int32_t correlation_id)> build, bool expect_response,
            response_handler handler);

  // While corked, queued requests are not written; uncork() writes them, all in one write (the
  // sender corks a connection for the requests of one pass). Writes already under way go on.
  void cork() { ++corked_; }
  void uncork() {
    if (--corked_ == 0) write_next();
  }

  // Closes the socket and fails every request in flight with `reason`.
  void close(const std::string& reason);

  bool ready() const { return state_ == state::ready; }
  bool connecting() const { return state_ == state::connecting; }
  bool closed() const { return state_ == state::closed; }
  // The connection failed its TLS handshake or SASL authentication: retrying cannot help (Java
  // fails the producer's sends with an AuthenticationException instead).
  bool authentication_failed() const { return authentication_failed_; }
  size_t in_flight() const { return in_flight_.size() + unanswered_writes_; }
  int32_t node() const { return node_; }
  // Writes started on the socket so far (each carries every request queued when it starts).
  uint64_t writes() const { return writes_; }
  const broker_address& address() const { return address_; }

  // The version to use for an API, or -1 when the broker shares none with the producer.
  int16_t version_for(int16_t api_key, int16_t our_min, int16_t our_max) const;

 private:
  enum class state { idle, connecting, ready, closed };
  struct pending {
    int32_t correlation_id;
    std::chrono::steady_clock::time_point deadline;
    response_handler handler;
  };
  struct outgoing {
    std::vector<uint8_t> bytes;
    response_handler on_written;  // set for a request without a response
  };

  using connect_callback = std::function<void(const std::string* error)>;
  void send_api_versions(connect_callback done);
  void handshake(connect_callback done);
  void authenticate(connect_callback done);
  void sasl_step(std::shared_ptr<sasl_session> session, std::string server_message,
                 connect_callback done);
  void become_ready(const connect_callback& done);
  void fail_authentication(const std::string& why, const connect_callback& done);
  // Runs `f` on the stream bytes travel on: the TLS stream when there is one, else the socket.
  // One branch per read or write, not a virtual call per byte: PLAINTEXT stays as fast.
  template <typename F>
  void on_stream(F&& f) {
    if (tls_) {
      f(*tls_);
    } else {
      f(socket_);
    }
  }
  void write_next();
  void read_size();
  void read_body(uint32_t size);
  void arm_timer();

  asio::io_context& io_;
  const int32_t node_;
  const broker_address address_;
  const std::string client_id_;
  const std::chrono::milliseconds request_timeout_;
  const std::chrono::milliseconds connect_timeout_;
  asio::ip::tcp::socket socket_;
  std::shared_ptr<asio::ssl::context> tls_context_;  // set: TLS (shared by the producer's)
  std::optional<asio::ssl::stream<asio::ip::tcp::socket&>> tls_;
  const security_config security_;
  bool authentication_failed_ = false;
  asio::ip::tcp::resolver resolver_;
  asio::steady_timer timer_;
  state state_ = state::idle;
  int32_t next_correlation_id_ = 0;
  std::deque<outgoing> write_queue_;
  bool writing_ = false;
  bool timer_armed_ = false;  // a request-timeout wait is pending (arm_timer)
  int corked_ = 0;
  uint64_t writes_ = 0;
  size_t writes_in_progress_ = 0;  // entries of write_queue_ the current write carries
  std::vector<asio::const_buffer> write_buffers_;
  size_t unanswered_writes_ = 0;   // queued requests without a response
  std::deque<pending> in_flight_;  // awaiting a response, oldest first
  // Each response is read on its own (its size, then its body): reading all that is waiting at
  // once hands the sender several answers per pass, and a pass that then refills the pipeline in
  // one burst leaves the broker and the sender taking turns instead of overlapping (1 KiB
  // records: 565k against 700k records/s).
  uint8_t size_bytes_[4] = {};
  std::vector<uint8_t> body_;
  std::map<int16_t, std::pair<int16_t, int16_t>> broker_versions_;
};

}  // namespace tarn::client
