// broker_connection against a minimal broker on a loopback socket: corked requests leave in one
// write, and the request timeout follows the oldest request still unanswered.
#include "client/connection.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "client/wire.h"
#include "protocol/messages/api_versions_request.h"
#include "protocol/messages/api_versions_response.h"
#include "protocol/messages/metadata_request.h"

namespace tarn::client {
namespace {

using namespace std::chrono_literals;
namespace proto = tarn::protocol;

// Accepts one connection and reads its requests on a thread of its own. Answers ApiVersions
// (every version as v0 would: the key ranges tarn's producer needs), never anything else. For
// each request it notes how many bytes were already waiting behind it.
class minimal_broker {
 public:
  minimal_broker() : acceptor_(io_, {asio::ip::make_address("127.0.0.1"), 0}) {
    thread_ = std::thread([this] { serve(); });
  }
  ~minimal_broker() {
    std::error_code ignored;
    acceptor_.close(ignored);
    {
      std::lock_guard lock(mutex_);
      if (socket_) socket_->shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
    }
    thread_.join();
  }
  broker_address address() const { return {"127.0.0.1", acceptor_.local_endpoint().port()}; }
  struct seen_request {
    int16_t api_key;
    size_t waiting_behind_bytes;  // in the socket after this request was read
  };
  std::vector<seen_request> seen() {
    std::lock_guard lock(mutex_);
    return seen_;
  }

 private:
  void serve() {
    std::error_code ec;
    auto socket = std::make_shared<asio::ip::tcp::socket>(io_);
    acceptor_.accept(*socket, ec);
    if (ec) return;
    {
      std::lock_guard lock(mutex_);
      socket_ = socket;
    }
    for (;;) {
      uint8_t size_bytes[4];
      if (asio::read(*socket, asio::buffer(size_bytes), ec); ec) return;
      const uint32_t size = uint32_t{size_bytes[0]} << 24 | uint32_t{size_bytes[1]} << 16 |
                            uint32_t{size_bytes[2]} << 8 | size_bytes[3];
      std::vector<uint8_t> body(size);
      if (asio::read(*socket, asio::buffer(body), ec); ec) return;
      const size_t waiting = socket->available(ec);
      proto::reader r(body);
      auto header = proto::decode_request_header(r);
      if (!header) return;
      {
        std::lock_guard lock(mutex_);
        seen_.push_back({header->request_api_key, waiting});
      }
      if (header->request_api_key != 18) continue;  // left unanswered
      proto::api_versions_response response;
      for (auto [key, min, max] :
           std::vector<std::tuple<int16_t, int16_t, int16_t>>{{0, 3, 12}, {3, 1, 12}, {18, 0, 3}}) {
        proto::api_versions_response::api_version v;
        v.api_key = key;
        v.min_version = min;
        v.max_version = max;
        response.api_keys.push_back(v);
      }
      std::vector<uint8_t> out(4);
      proto::writer w(out);
      proto::response_header h;
      h.correlation_id = header->correlation_id;
      h.encode(w, 0);  // ApiVersions answers with header v0 at every version
      response.encode(w, header->request_api_version);
      const auto n = static_cast<uint32_t>(out.size() - 4);
      for (int i = 0; i < 4; ++i) out[i] = static_cast<uint8_t>(n >> (24 - 8 * i));
      if (asio::write(*socket, asio::buffer(out), ec); ec) return;
    }
  }

  asio::io_context io_;
  asio::ip::tcp::acceptor acceptor_;
  std::thread thread_;
  std::mutex mutex_;
  std::shared_ptr<asio::ip::tcp::socket> socket_;
  std::vector<seen_request> seen_;
};

// Runs `io` until `done` holds, for at most 30 s.
template <typename Predicate>
bool run_until(asio::io_context& io, Predicate done) {
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    io.restart();
    io.run_for(10ms);
  }
  return true;
}

std::shared_ptr<broker_connection> connected(asio::io_context& io, const minimal_broker& broker,
                                             std::chrono::milliseconds request_timeout) {
  auto c =
      std::make_shared<broker_connection>(io, 1, broker.address(), "test", request_timeout, 30s);
  bool done = false;
  std::string error;
  c->connect([&](const std::string* e) {
    done = true;
    if (e) error = *e;
  });
  EXPECT_TRUE(run_until(io, [&] { return done; }));
  EXPECT_EQ(error, "");
  EXPECT_TRUE(c->ready());
  return c;
}

std::function<std::vector<uint8_t>(int32_t)> api_versions_request() {
  return [](int32_t correlation_id) {
    proto::api_versions_request request;
    request.client_software_name = "test";
    request.client_software_version = "1";
    return frame_request(request, 3, correlation_id, "test");
  };
}

TEST(broker_connection, corked_requests_leave_in_one_write) {
  minimal_broker broker;
  asio::io_context io;
  auto c = connected(io, broker, 30s);
  const size_t request_bytes = api_versions_request()(7).size();
  int answered = 0;
  auto count = [&](result<std::span<const uint8_t>, std::string> response) {
    EXPECT_TRUE(response) << response.error();
    ++answered;
  };
  const uint64_t writes_before = c->writes();
  c->cork();
  for (int i = 0; i < 3; ++i) c->send(api_versions_request(), true, count);
  io.restart();
  io.poll();
  EXPECT_EQ(c->writes(), writes_before);  // nothing written while corked
  EXPECT_EQ(answered, 0);
  EXPECT_EQ(c->in_flight(), 3u);
  c->uncork();
  ASSERT_TRUE(run_until(io, [&] { return answered == 3; }));
  EXPECT_EQ(c->writes(), writes_before + 1);
  // The connect's ApiVersions, then the three: one write, so when the broker has read the first
  // of them the other two are already in its socket.
  auto seen = broker.seen();
  ASSERT_EQ(seen.size(), 4u);
  EXPECT_GE(seen[1].waiting_behind_bytes, 2 * request_bytes);
  EXPECT_GE(seen[2].waiting_behind_bytes, request_bytes);
}

TEST(broker_connection, the_timeout_follows_the_oldest_unanswered_request) {
  // request.timeout.ms 400: an answered request's deadline passing must not time out a request
  // sent after it, which gets its own full 400 ms; an unanswered one does time out.
  minimal_broker broker;
  asio::io_context io;
  auto c = connected(io, broker, 400ms);
  bool first_answered = false;
  c->send(api_versions_request(), true,
          [&](result<std::span<const uint8_t>, std::string> response) {
            EXPECT_TRUE(response);
            first_answered = true;
          });
  ASSERT_TRUE(run_until(io, [&] { return first_answered; }));
  // Inside the first request's 400 ms (150 ms on), a Metadata request the broker never answers:
  // timing out at the first one's deadline would fail it about 250 ms after it was sent.
  std::this_thread::sleep_for(150ms);
  std::optional<std::string> second_error;
  const auto second_sent = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point second_failed;
  c->send(
      [](int32_t correlation_id) {
        return frame_request(proto::metadata_request{}, 12, correlation_id, "test");
      },
      true,
      [&](result<std::span<const uint8_t>, std::string> response) {
        ASSERT_FALSE(response);
        second_error = response.error();
        second_failed = std::chrono::steady_clock::now();
      });
  ASSERT_TRUE(run_until(io, [&] { return second_error.has_value(); }));
  EXPECT_NE(second_error->find("request.timeout.ms"), std::string::npos) << *second_error;
  EXPECT_GE(second_failed - second_sent, 400ms);
  EXPECT_TRUE(c->closed());
}

}  // namespace
}  // namespace tarn::client
