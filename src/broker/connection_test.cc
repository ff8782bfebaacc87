// Connection in-process, with test handlers that complete out of order, answer nothing or close:
// responses must still go out in request order, and a closed connection cancels its handlers.
#include "broker/connection.h"

#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/io_context.hpp>
#include <asio/read.hpp>
#include <asio/redirect_error.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/write.hpp>
#include <atomic>
#include <system_error>
#include <thread>
#include <tuple>

namespace tarn::broker {
namespace {

constexpr int16_t test_api = 100;
constexpr int16_t echo_api = 101;  // answers with its body, whatever its size
enum class kind : uint8_t { respond = 0, none = 1, close = 2 };
std::atomic<int> cancelled_handlers{0};

// Test API body: int32 delay_ms, int8 kind. A response echoes the body.
asio::awaitable<handler_outcome> test_handler(request_context& request) {
  auto body = request.body();
  if (body.size() != 5) co_return close_connection{"bad test body"};
  int32_t delay_ms = (body[0] << 24) | (body[1] << 16) | (body[2] << 8) | body[3];
  auto k = static_cast<kind>(body[4]);
  asio::steady_timer timer(co_await asio::this_coro::executor);
  timer.expires_after(std::chrono::milliseconds(delay_ms));
  try {
    co_await timer.async_wait(asio::use_awaitable);
  } catch (const std::system_error&) {  // the connection closed: terminal cancellation
    ++cancelled_handlers;
    throw;
  }
  if (k == kind::none) co_return no_response{};
  if (k == kind::close) co_return close_connection{"asked to"};
  co_return response{std::vector<uint8_t>(body.begin(), body.end())};
}

asio::awaitable<handler_outcome> echo_handler(request_context& request) {
  auto body = request.body();
  co_return response{std::vector<uint8_t>(body.begin(), body.end())};
}

std::vector<uint8_t> test_request(int32_t correlation_id, int32_t delay_ms, kind k) {
  std::vector<uint8_t> out = {0, 0, 0, 0};
  auto put16 = [&](int16_t v) {
    out.push_back(static_cast<uint8_t>(v >> 8));
    out.push_back(static_cast<uint8_t>(v));
  };
  auto put32 = [&](int32_t v) {
    for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(v >> s));
  };
  put16(test_api);
  put16(0);
  put32(correlation_id);
  put16(-1);  // null client_id
  put32(delay_ms);
  out.push_back(static_cast<uint8_t>(k));
  uint32_t size = static_cast<uint32_t>(out.size() - 4);
  for (int i = 0; i < 4; ++i)
    out[static_cast<size_t>(i)] = static_cast<uint8_t>(size >> (24 - 8 * i));
  return out;
}

// A broker loop on a thread serving one accepted connection, and a blocking client socket.
class connection_harness {
 public:
  connection_harness()
      : config_(*make_broker_config({}, {})),
        services_{config_, registry_, {}},
        acceptor_(loop_, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)),
        client_(client_context_) {
    registry_.register_handler(test_api, 0, 0, test_handler);
    registry_.register_handler(echo_api, 0, 0, echo_handler);
    // spdlog's registry is created on first use inside the (uninstrumented) library: made here,
    // before the loop thread starts, so two harnesses' threads never race to create it (TSan).
    spdlog::default_logger_raw();
    client_.connect(acceptor_.local_endpoint());
    asio::ip::tcp::socket server_side = acceptor_.accept();
    auto c = std::make_shared<connection>(std::move(server_side), connection_info{1, "test", "T"},
                                          services_, [this](connection&) { closed_ = true; });
    c->start();
    thread_ = std::thread([this] { loop_.run(); });
  }
  ~connection_harness() {
    asio::error_code ec;
    client_.close(ec);
    loop_.stop();
    thread_.join();
  }

  void send(const std::vector<uint8_t>& bytes) { asio::write(client_, asio::buffer(bytes)); }
  void close_client() { client_.close(); }

  // The next response's correlation id and body, or nullopt at end of stream.
  std::optional<std::pair<int32_t, std::vector<uint8_t>>> read_response() {
    uint8_t head[8];
    asio::error_code ec;
    asio::read(client_, asio::buffer(head), ec);
    if (ec) return std::nullopt;
    uint32_t size = (uint32_t{head[0]} << 24) | (head[1] << 16) | (head[2] << 8) | head[3];
    int32_t correlation_id = (head[4] << 24) | (head[5] << 16) | (head[6] << 8) | head[7];
    std::vector<uint8_t> body(size - 4);
    asio::read(client_, asio::buffer(body), ec);
    if (ec) return std::nullopt;
    return std::pair{correlation_id, body};
  }

  std::atomic<bool> closed_{false};

 private:
  broker_config config_;
  handler_registry registry_;
  broker_services services_;
  asio::io_context loop_;
  asio::ip::tcp::acceptor acceptor_;
  asio::io_context client_context_;
  asio::ip::tcp::socket client_;
  std::thread thread_;
};

TEST(connection, out_of_order_completion_is_answered_in_request_order) {
  connection_harness h;
  std::vector<uint8_t> all;
  for (int i = 0; i < 10; ++i) {
    auto r = test_request(i, 100 - 10 * i, kind::respond);  // the last finishes first
    all.insert(all.end(), r.begin(), r.end());
  }
  h.send(all);
  for (int i = 0; i < 10; ++i) {
    auto r = h.read_response();
    ASSERT_TRUE(r.has_value());
    EXPECT_EQ(r->first, i);
    ASSERT_EQ(r->second.size(), 5u);
    EXPECT_EQ(r->second[3], static_cast<uint8_t>(100 - 10 * i));
  }
}

TEST(connection, a_frame_larger_than_the_read_buffer_arriving_in_pieces_is_read_whole) {
  connection_harness h;
  // An echo request of 300 KiB (the read buffer holds 64 KiB), then a small request behind it
  // in the last piece: the frame is allocated once its size is read and filled as bytes come.
  std::vector<uint8_t> big = {0, 0, 0, 0, 0, echo_api, 0, 0, 0, 0, 0, 7, 0xff, 0xff};
  for (size_t i = 0; i < 300 * 1024; ++i) big.push_back(static_cast<uint8_t>(i * 131 + 7));
  const auto size = static_cast<uint32_t>(big.size() - 4);
  for (int i = 0; i < 4; ++i)
    big[static_cast<size_t>(i)] = static_cast<uint8_t>(size >> (24 - 8 * i));
  auto small = test_request(8, 0, kind::respond);
  big.insert(big.end(), small.begin(), small.end());
  const size_t cuts[] = {3, 40 * 1024, 200 * 1024, big.size()};
  size_t from = 0;
  for (size_t to : cuts) {
    h.send(std::vector<uint8_t>(big.begin() + static_cast<std::ptrdiff_t>(from),
                                big.begin() + static_cast<std::ptrdiff_t>(to)));
    from = to;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  auto r = h.read_response();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->first, 7);
  ASSERT_EQ(r->second.size(), 300u * 1024);
  EXPECT_TRUE(std::equal(r->second.begin(), r->second.end(), big.begin() + 14));
  r = h.read_response();
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->first, 8);
}

// An echo request whose body is `body_bytes` bytes of a pattern seeded by `correlation_id`.
std::vector<uint8_t> echo_request(int32_t correlation_id, size_t body_bytes) {
  std::vector<uint8_t> out = {0, 0, 0, 0, 0, echo_api, 0, 0};
  for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(correlation_id >> s));
  out.push_back(0xff);  // null client_id
  out.push_back(0xff);
  for (size_t i = 0; i < body_bytes; ++i) {
    out.push_back(static_cast<uint8_t>(i * 131 + static_cast<size_t>(correlation_id)));
  }
  const auto size = static_cast<uint32_t>(out.size() - 4);
  for (int i = 0; i < 4; ++i)
    out[static_cast<size_t>(i)] = static_cast<uint8_t>(size >> (24 - 8 * i));
  return out;
}

TEST(connection, large_and_small_frames_back_to_back_are_read_whole_wherever_the_reads_end) {
  connection_harness h;
  // Large frames read their last bytes together with at most the next frame's 4-byte size: the
  // pieces end inside a size, right after one, inside a large frame and inside a small one.
  const std::vector<std::pair<int32_t, size_t>> requests = {
      {0, 100 * 1024}, {1, 70 * 1024}, {2, 10}, {3, 200 * 1024}, {4, 64 * 1024}, {5, 3}, {6, 0}};
  std::vector<uint8_t> all;
  std::vector<size_t> starts;
  for (auto [id, bytes] : requests) {
    starts.push_back(all.size());
    auto r = echo_request(id, bytes);
    all.insert(all.end(), r.begin(), r.end());
  }
  const size_t cuts[] = {starts[1] + 2, starts[2] + 4, starts[3] + 1, starts[3] + 5000,
                         starts[4] + 3, starts[5] + 4, starts[6] - 2, all.size()};
  size_t from = 0;
  for (size_t to : cuts) {
    h.send(std::vector<uint8_t>(all.begin() + static_cast<std::ptrdiff_t>(from),
                                all.begin() + static_cast<std::ptrdiff_t>(to)));
    from = to;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  for (size_t i = 0; i < requests.size(); ++i) {
    auto r = h.read_response();
    ASSERT_TRUE(r.has_value()) << "response " << i;
    EXPECT_EQ(r->first, requests[i].first);
    ASSERT_EQ(r->second.size(), requests[i].second);
    EXPECT_TRUE(std::equal(r->second.begin(), r->second.end(),
                           all.begin() + static_cast<std::ptrdiff_t>(starts[i] + 14)))
        << "response " << i;
  }
  // And all of them in one write: whatever the reads return.
  connection_harness h2;
  h2.send(all);
  for (size_t i = 0; i < requests.size(); ++i) {
    auto r = h2.read_response();
    ASSERT_TRUE(r.has_value()) << "response " << i;
    EXPECT_EQ(r->first, requests[i].first);
    ASSERT_EQ(r->second.size(), requests[i].second);
  }
}

TEST(connection, no_response_outcome_sends_nothing_for_that_request) {
  connection_harness h;
  std::vector<uint8_t> all;
  for (auto [id, k] :
       {std::pair{0, kind::respond}, {1, kind::none}, {2, kind::none}, {3, kind::respond}}) {
    auto r = test_request(id, 30 - 10 * id, k);
    all.insert(all.end(), r.begin(), r.end());
  }
  h.send(all);
  auto first = h.read_response();
  auto second = h.read_response();
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->first, 0);
  EXPECT_EQ(second->first, 3);
}

TEST(connection, close_outcome_answers_earlier_requests_then_closes) {
  connection_harness h;
  std::vector<uint8_t> all;
  for (auto [id, delay, k] :
       {std::tuple{0, 50, kind::respond}, {1, 0, kind::close}, {2, 0, kind::respond}}) {
    auto r = test_request(id, delay, k);
    all.insert(all.end(), r.begin(), r.end());
  }
  h.send(all);
  auto first = h.read_response();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->first, 0);
  EXPECT_FALSE(h.read_response().has_value()) << "request 2 must not be answered";
  // The client can see end-of-stream a moment before the connection's close callback has run on
  // the server's thread: wait for it, bounded.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!h.closed_ && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_TRUE(h.closed_);
}

TEST(connection, client_close_cancels_handlers_in_flight) {
  connection_harness h;
  const int before = cancelled_handlers.load();
  h.send(test_request(0, 60'000, kind::respond));  // would wait a minute
  h.send(test_request(1, 60'000, kind::respond));
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  h.close_client();
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while ((!h.closed_ || cancelled_handlers.load() < before + 2) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_TRUE(h.closed_);
  EXPECT_EQ(cancelled_handlers.load(), before + 2);
}

}  // namespace
}  // namespace tarn::broker
