// The group handlers in-process: a real connection on a loop thread, the real handlers, the real
// group coordinator over __consumer_offsets in a temporary log directory (offsets_topic.h), and a
// poller thread standing in for the server's 100 ms timer. JoinGroup waits for the rebalance
// without holding up the connection, answers in request order, and a connection closed while
// it waits leaves nothing behind.
#include <gtest/gtest.h>
#include <unistd.h>

#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/read.hpp>
#include <asio/write.hpp>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

#include "broker/connection.h"
#include "broker/group_handler_util.h"
#include "broker/offsets_topic.h"
#include "broker/topic_manager.h"
#include "coordinator/group_coordinator.h"
#include "protocol/messages/heartbeat_request.h"
#include "protocol/messages/heartbeat_response.h"
#include "protocol/messages/join_group_request.h"
#include "protocol/messages/join_group_response.h"
#include "protocol/messages/offset_commit_request.h"
#include "protocol/messages/offset_commit_response.h"
#include "protocol/messages/offset_fetch_request.h"
#include "protocol/messages/offset_fetch_response.h"
#include "protocol/messages/sync_group_request.h"
#include "protocol/messages/sync_group_response.h"
#include "storage/test_batches.h"

namespace tarn::broker {
namespace {

using protocol::error_code;
using namespace std::chrono_literals;

using storage::testing::temp_dir;

// A request frame: size, header v1 (v2 when flexible) with client id "test-client", body.
template <class Request>
std::vector<uint8_t> request_frame(const Request& req, int16_t version, int32_t correlation_id) {
  std::vector<uint8_t> out(4);
  protocol::writer w(out);
  w.write_int16(Request::api_key);
  w.write_int16(version);
  w.write_int32(correlation_id);
  w.write_string("test-client", false);
  const bool flexible = Request::flexible_from >= 0 && version >= Request::flexible_from;
  if (flexible) w.write_unsigned_varint(0);
  req.encode(w, version);
  const auto size = static_cast<uint32_t>(out.size() - 4);
  for (int i = 0; i < 4; ++i)
    out[static_cast<size_t>(i)] = static_cast<uint8_t>(size >> (24 - 8 * i));
  return out;
}

// The loop, one connection, the coordinator and its poller.
class group_harness {
 public:
  explicit group_harness(const properties& props)
      : config_(*make_broker_config(props, {})),
        topics_(topic_manager::open(config_, dir_.path()).value()),
        offsets_(*topics_, config_.group),
        view_(*topics_),
        groups_(config_.group, offsets_, view_),
        services_{config_, registry_, {listener_endpoint{"PLAINTEXT", "127.0.0.1", 9092}}},
        acceptor_(loop_, asio::ip::tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0)),
        client_(client_context_) {
    register_all_handlers(registry_);
    services_.topics = topics_.get();
    services_.groups = &groups_;
    groups_.load(wall_clock_ms());
    client_.connect(acceptor_.local_endpoint());
    asio::ip::tcp::socket server_side = acceptor_.accept();
    auto c = std::make_shared<connection>(std::move(server_side),
                                          connection_info{1, "127.0.0.1:5555", "PLAINTEXT"},
                                          services_, [this](connection&) { closed_ = true; });
    c->start();
    loop_thread_ = std::thread([this] { loop_.run(); });
    poller_ = std::thread([this] {
      while (!stop_) {
        groups_.poll(wall_clock_ms());
        std::this_thread::sleep_for(10ms);
      }
    });
  }
  ~group_harness() {
    stop_ = true;
    poller_.join();
    asio::error_code ec;
    client_.close(ec);
    loop_.stop();
    loop_thread_.join();
  }

  template <class Request>
  void send(const Request& req, int16_t version, int32_t correlation_id) {
    auto frame = request_frame(req, version, correlation_id);
    asio::write(client_, asio::buffer(frame));
  }
  void send_bytes(const std::vector<uint8_t>& bytes) { asio::write(client_, asio::buffer(bytes)); }
  void close_client() { client_.close(); }

  // The next response: correlation id and the body after the response header (v0), or nullopt
  // at end of stream.
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
    return std::pair{correlation_id, std::move(body)};
  }

  template <class Response>
  Response decode(const std::vector<uint8_t>& body, int16_t version, size_t header_extra = 0) {
    protocol::reader r(std::span<const uint8_t>(body).subspan(header_extra));
    auto d = Response::decode(r, version);
    EXPECT_TRUE(d.has_value());
    return d ? *d : Response{};
  }

  topic_manager& topics() { return *topics_; }
  std::atomic<bool> closed_{false};

 private:
  temp_dir dir_;
  broker_config config_;
  std::unique_ptr<topic_manager> topics_;
  offsets_topic offsets_;
  topic_metadata_view view_;
  coordinator::group_coordinator groups_;
  handler_registry registry_;
  broker_services services_;
  asio::io_context loop_;
  asio::ip::tcp::acceptor acceptor_;
  asio::io_context client_context_;
  asio::ip::tcp::socket client_;
  std::thread loop_thread_;
  std::thread poller_;
  std::atomic<bool> stop_{false};
};

const properties small_groups = {{"offsets.topic.num.partitions", "2"},
                                 {"group.initial.rebalance.delay.ms", "300"}};

protocol::join_group_request join(std::string_view member_id) {
  static const uint8_t metadata[] = {0, 1, 2};
  protocol::join_group_request req;
  req.group_id = "g";
  req.session_timeout_ms = 10000;
  req.rebalance_timeout_ms = 10000;
  req.member_id = member_id;
  req.protocol_type = "consumer";
  req.protocols.push_back({"range", protocol::bytes_view(metadata)});
  return req;
}

TEST(group_handlers, join_waits_for_the_rebalance_then_sync_heartbeat_and_offsets) {
  group_harness h(small_groups);
  constexpr int16_t v = 5;  // non-flexible, member id required (KIP-394)

  h.send(join(""), v, 1);
  auto first = h.read_response();
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->first, 1);
  auto required = h.decode<protocol::join_group_response>(first->second, v);
  EXPECT_EQ(required.error_code, static_cast<int16_t>(error_code::member_id_required));
  const std::string member(required.member_id);
  ASSERT_FALSE(member.empty());

  // The join waits for the initial rebalance delay; a heartbeat pipelined behind it is served
  // meanwhile and answered after it, in request order.
  const auto start = std::chrono::steady_clock::now();
  h.send(join(member), v, 2);
  protocol::heartbeat_request hb;
  hb.group_id = "g";
  hb.generation_id = 1;
  hb.member_id = member;
  h.send(hb, 3, 3);
  auto joined = h.read_response();
  ASSERT_TRUE(joined.has_value());
  EXPECT_EQ(joined->first, 2);
  EXPECT_GE(std::chrono::steady_clock::now() - start, 250ms);
  auto j = h.decode<protocol::join_group_response>(joined->second, v);
  EXPECT_EQ(j.error_code, 0);
  EXPECT_EQ(j.generation_id, 1);
  EXPECT_EQ(j.leader, member);
  EXPECT_EQ(j.member_id, member);
  ASSERT_EQ(j.members.size(), 1u);
  EXPECT_EQ(j.protocol_name, "range");
  auto hb_answer = h.read_response();
  ASSERT_TRUE(hb_answer.has_value());
  EXPECT_EQ(hb_answer->first, 3);

  static const uint8_t assignment[] = {9, 8, 7};
  protocol::sync_group_request sync;
  sync.group_id = "g";
  sync.generation_id = 1;
  sync.member_id = member;
  sync.assignments.push_back({member, protocol::bytes_view(assignment)});
  h.send(sync, 3, 4);
  auto synced = h.read_response();
  ASSERT_TRUE(synced.has_value());
  EXPECT_EQ(synced->first, 4);
  auto s = h.decode<protocol::sync_group_response>(synced->second, 3);
  EXPECT_EQ(s.error_code, 0);
  EXPECT_EQ(std::vector<uint8_t>(s.assignment.begin(), s.assignment.end()),
            std::vector<uint8_t>({9, 8, 7}));

  h.send(hb, 3, 5);
  auto beat = h.read_response();
  ASSERT_TRUE(beat.has_value());
  EXPECT_EQ(h.decode<protocol::heartbeat_response>(beat->second, 3).error_code, 0);

  // A commit of a topic that exists, read back.
  {
    auto guard = h.topics().control_lock();
    ASSERT_TRUE(h.topics().logs().create_topic("orders", 1, {}, wall_clock_ms()).has_value());
  }
  protocol::offset_commit_request commit;
  commit.group_id = "g";
  commit.generation_id_or_member_epoch = 1;
  commit.member_id = member;
  auto& topic = commit.topics.emplace_back();
  topic.name = "orders";
  auto& part = topic.partitions.emplace_back();
  part.partition_index = 0;
  part.committed_offset = 42;
  h.send(commit, 7, 6);
  auto committed = h.read_response();
  ASSERT_TRUE(committed.has_value());
  auto c = h.decode<protocol::offset_commit_response>(committed->second, 7);
  ASSERT_EQ(c.topics.size(), 1u);
  ASSERT_EQ(c.topics[0].partitions.size(), 1u);
  EXPECT_EQ(c.topics[0].partitions[0].error_code, 0);

  protocol::offset_fetch_request fetch;
  fetch.group_id = "g";
  fetch.topics.emplace();
  auto& ft = fetch.topics->emplace_back();
  ft.name = "orders";
  ft.partition_indexes = {0};
  h.send(fetch, 5, 7);
  auto fetched = h.read_response();
  ASSERT_TRUE(fetched.has_value());
  auto f = h.decode<protocol::offset_fetch_response>(fetched->second, 5);
  ASSERT_EQ(f.topics.size(), 1u);
  ASSERT_EQ(f.topics[0].partitions.size(), 1u);
  EXPECT_EQ(f.topics[0].partitions[0].committed_offset, 42);
}

TEST(group_handlers, a_connection_closed_while_join_waits_leaves_nothing_behind) {
  {
    group_harness h(small_groups);
    h.send(join(""), 5, 1);
    auto first = h.read_response();
    ASSERT_TRUE(first.has_value());
    const std::string member(h.decode<protocol::join_group_response>(first->second, 5).member_id);
    h.send(join(member), 5, 2);
    std::this_thread::sleep_for(50ms);
    h.close_client();
    auto deadline = std::chrono::steady_clock::now() + 5s;
    while (!h.closed_ && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(5ms);
    }
    EXPECT_TRUE(h.closed_);
    // The rebalance completes after the connection is gone: the callback's answer lands in the
    // orphaned state.
    std::this_thread::sleep_for(500ms);
  }
  SUCCEED();
}

// A member's client host, as Java's InetAddress prints the peer (Kafka 4.4 shows
// "/0:0:0:0:0:0:0:1" for a client on ::1).
TEST(group_handlers, client_host_is_javas_form_of_the_address) {
  EXPECT_EQ(java_host_address("127.0.0.1"), "127.0.0.1");
  EXPECT_EQ(java_host_address("::1"), "0:0:0:0:0:0:0:1");
  EXPECT_EQ(java_host_address("::"), "0:0:0:0:0:0:0:0");
  EXPECT_EQ(java_host_address("2001:DB8::0a:ff00"), "2001:db8:0:0:0:0:a:ff00");
  EXPECT_EQ(java_host_address("fd00::2"), "fd00:0:0:0:0:0:0:2");
  EXPECT_EQ(java_host_address("fe80::1%7"), "fe80:0:0:0:0:0:0:1%7");
  EXPECT_EQ(java_host_address("::ffff:10.1.2.3"), "10.1.2.3");  // Java: an Inet4Address
  EXPECT_EQ(java_host_address("not an address"), "not an address");
}

TEST(group_handlers, a_body_that_does_not_decode_closes_the_connection) {
  group_harness h(small_groups);
  std::vector<uint8_t> frame = {0, 0, 0, 0};
  protocol::writer w(frame);
  w.write_int16(protocol::heartbeat_request::api_key);
  w.write_int16(0);
  w.write_int32(9);
  w.write_int16(-1);  // null client id
  w.write_int16(40);  // GroupId claims 40 bytes
  w.write_raw(protocol::bytes_view(reinterpret_cast<const uint8_t*>("g"), 1));
  const auto size = static_cast<uint32_t>(frame.size() - 4);
  for (int i = 0; i < 4; ++i)
    frame[static_cast<size_t>(i)] = static_cast<uint8_t>(size >> (24 - 8 * i));
  h.send_bytes(frame);
  EXPECT_FALSE(h.read_response().has_value());
}

}  // namespace
}  // namespace tarn::broker
