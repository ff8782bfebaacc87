// The share-state persister's client (share_state_client.h) without sockets: its network is the
// test's, which records each request (the coordinator broker, the RPC, the group, the
// share-partitions) and answers it, and may hold a broker's requests as a request that is out
// holds them. Writes queued for a coordinator while a request to it is out go as one
// WriteShareGroupState per group; one call is out per share-partition, in order; coordinators are
// sent to in parallel; a moved coordinator is found again; a summary's fields come back.
#include "broker/share_state_client.h"

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "coordinator/wire_ids.h"
#include "protocol/messages/read_share_group_state_summary_request.h"
#include "protocol/messages/read_share_group_state_summary_response.h"
#include "protocol/messages/write_share_group_state_request.h"
#include "protocol/messages/write_share_group_state_response.h"
#include "protocol/reader.h"
#include "protocol/writer.h"

namespace tarn::broker {
namespace {

using namespace std::chrono_literals;
using coordinator::share_partition_key;
using coordinator::share_state_answer;
using protocol::error_code;

coordinator::topic_uuid topic(uint8_t n) {
  coordinator::topic_uuid id{};
  id[15] = n;
  return id;
}

// One request as the test's network saw it.
struct seen_request {
  int32_t node = -1;
  int16_t api_key = 0;
  std::string group;
  std::vector<std::pair<uint8_t, int32_t>> partitions;  // (topic's last byte, partition)
  bool operator==(const seen_request&) const = default;
};

class fake_network {
 public:
  share_state_client::network network() {
    return {[this](const share_partition_key& key) -> std::optional<int32_t> {
              std::lock_guard lock(mu_);
              auto it = coordinators_.find(key.partition);
              if (it == coordinators_.end()) return std::nullopt;
              return it->second;
            },
            [this](broker_link& link, int16_t api_key, int16_t version,
                   std::span<const uint8_t> body, int64_t, const std::function<bool()>& abandon)
                -> result<std::span<const uint8_t>, std::string> {
              return exchange(link, api_key, version, body, abandon);
            },
            [](const coordinator::topic_uuid&, int32_t) -> std::optional<int32_t> { return 1; }};
  }

  // Partition p's state is kept by broker `node` (every group, every topic).
  void place(int32_t partition, int32_t node) {
    std::lock_guard lock(mu_);
    coordinators_[partition] = node;
  }
  void hold(int32_t node) {
    std::lock_guard lock(mu_);
    held_[node] = true;
  }
  void open(int32_t node) {
    std::lock_guard lock(mu_);
    held_.erase(node);
    cv_.notify_all();
  }
  // The next answer broker `node` gives partition p: `e`, then the coordinator moves to `to`.
  void refuse_once(int32_t node, int32_t partition, error_code e, int32_t to) {
    std::lock_guard lock(mu_);
    refusals_[{node, partition}] = {e, to};
  }
  std::vector<seen_request> wait_requests(size_t n) {
    std::unique_lock lock(mu_);
    EXPECT_TRUE(cv_.wait_for(lock, 10s, [&] { return requests_.size() >= n; }))
        << requests_.size() << " requests, not " << n;
    return requests_;
  }
  size_t request_count() {
    std::lock_guard lock(mu_);
    return requests_.size();
  }

 private:
  result<std::span<const uint8_t>, std::string> exchange(broker_link& link, int16_t api_key,
                                                         int16_t version,
                                                         std::span<const uint8_t> body,
                                                         const std::function<bool()>& abandon) {
    std::unique_lock lock(mu_);
    seen_request seen{link.node, api_key, {}, {}};
    link.buffer.clear();
    if (api_key == protocol::write_share_group_state_request::api_key) {
      answer<protocol::write_share_group_state_request, protocol::write_share_group_state_response>(
          link, body, version, seen, [](auto&) {});
    } else if (api_key == protocol::read_share_group_state_summary_request::api_key) {
      answer<protocol::read_share_group_state_summary_request,
             protocol::read_share_group_state_summary_response>(
          link, body, version, seen, [](auto& pr) {
            pr.start_offset = pr.partition * 10;
            pr.state_epoch = 2;
            pr.leader_epoch = 3;
            pr.delivery_complete_count = pr.partition;
          });
    } else {
      ADD_FAILURE() << "unexpected API " << api_key;
    }
    requests_.push_back(seen);
    cv_.notify_all();
    while (held_.contains(link.node)) {
      if (abandon()) return fail(std::string("abandoned"));
      cv_.wait_for(lock, 10ms);
    }
    return std::span<const uint8_t>(link.buffer);
  }

  // Decodes a `Request`, notes what it names and answers every partition NONE (or a refusal),
  // `fill` setting the rest; the response body goes to link.buffer.
  template <class Request, class Response, class Fill>
  void answer(broker_link& link, std::span<const uint8_t> body, int16_t version, seen_request& seen,
              Fill fill) {
    protocol::reader r(body);
    auto req = Request::decode(r, version);
    ASSERT_TRUE(req.has_value());
    seen.group = std::string(req->group_id);
    Response resp;
    for (const auto& t : req->topics) {
      auto& tr = resp.results.emplace_back();
      tr.topic_id = t.topic_id;
      for (const auto& p : t.partitions) {
        seen.partitions.emplace_back(t.topic_id.bytes[15], p.partition);
        auto& pr = tr.partitions.emplace_back();
        pr.partition = p.partition;
        fill(pr);
        if (auto it = refusals_.find({link.node, p.partition}); it != refusals_.end()) {
          pr.error_code = protocol::code(it->second.first);
          coordinators_[p.partition] = it->second.second;
          refusals_.erase(it);
        }
      }
    }
    protocol::writer w(link.buffer);
    resp.encode(w, version);
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::map<int32_t, int32_t> coordinators_;
  std::map<int32_t, bool> held_;
  std::map<std::pair<int32_t, int32_t>, std::pair<error_code, int32_t>> refusals_;
  std::vector<seen_request> requests_;
};

// The answers the client's callbacks got, by name, in the order they came.
class answers {
 public:
  coordinator::share_state_callback callback(std::string name) {
    return [this, name](share_state_answer a) {
      std::lock_guard lock(mu_);
      got_.emplace_back(name, std::move(a));
      cv_.notify_all();
    };
  }
  std::vector<std::pair<std::string, share_state_answer>> wait(size_t n,
                                                               std::chrono::seconds limit = 10s) {
    std::unique_lock lock(mu_);
    EXPECT_TRUE(cv_.wait_for(lock, limit, [&] { return got_.size() >= n; }))
        << got_.size() << " answers, not " << n;
    return got_;
  }
  std::vector<std::string> names(size_t n) {
    std::vector<std::string> out;
    for (const auto& [name, a] : wait(n)) out.push_back(name);
    return out;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::pair<std::string, share_state_answer>> got_;
};

coordinator::share_state_write some_write(int64_t start) {
  coordinator::share_state_write w;
  w.start_offset = start;
  w.batches.push_back({start, start + 1, 0, 1});
  return w;
}

constexpr int16_t write_key = protocol::write_share_group_state_request::api_key;
constexpr int16_t summary_key = protocol::read_share_group_state_summary_request::api_key;

TEST(share_state_client, writes_queued_while_one_is_out_go_as_one_request_per_group) {
  fake_network net;
  for (int32_t p = 0; p < 4; ++p) net.place(p, 2);
  share_state_client client(net.network());
  answers got;
  net.hold(2);
  client.write({"g", topic(1), 0}, some_write(0), got.callback("g-1-0"));
  net.wait_requests(1);  // out, and held
  client.write({"g", topic(1), 1}, some_write(0), got.callback("g-1-1"));
  client.write({"g", topic(1), 2}, some_write(0), got.callback("g-1-2"));
  client.write({"h", topic(1), 3}, some_write(0), got.callback("h-1-3"));
  client.write({"g", topic(2), 0}, some_write(0), got.callback("g-2-0"));
  // A second write of a share-partition whose first is not answered yet waits for it.
  client.write({"g", topic(1), 1}, some_write(5), got.callback("g-1-1 again"));
  std::this_thread::sleep_for(30ms);
  EXPECT_EQ(net.request_count(), 1u);  // nothing more goes while the first is out
  net.open(2);
  const auto requests = net.wait_requests(4);
  ASSERT_EQ(requests.size(), 4u);
  EXPECT_EQ(requests[0], (seen_request{2, write_key, "g", {{1, 0}}}));
  // The queued writes: one request for group g (its topics together), one for h.
  EXPECT_EQ(requests[1], (seen_request{2, write_key, "g", {{1, 1}, {1, 2}, {2, 0}}}));
  EXPECT_EQ(requests[2], (seen_request{2, write_key, "h", {{1, 3}}}));
  EXPECT_EQ(requests[3], (seen_request{2, write_key, "g", {{1, 1}}}));
  EXPECT_EQ(got.names(6),
            (std::vector<std::string>{"g-1-0", "g-1-1", "g-1-2", "g-2-0", "h-1-3", "g-1-1 again"}));
  for (const auto& [name, a] : got.wait(6)) EXPECT_EQ(a.error, error_code::none) << name;
  client.stop();
}

TEST(share_state_client, coordinators_are_sent_to_in_parallel) {
  fake_network net;
  net.place(0, 1);
  net.place(1, 2);
  share_state_client client(net.network());
  answers got;
  net.hold(1);
  client.write({"g", topic(1), 0}, some_write(0), got.callback("at 1"));
  net.wait_requests(1);
  // Broker 1 answers nothing; broker 2's write goes and is answered meanwhile.
  client.write({"g", topic(1), 1}, some_write(0), got.callback("at 2"));
  EXPECT_EQ(got.names(1), (std::vector<std::string>{"at 2"}));
  net.open(1);
  EXPECT_EQ(got.names(2), (std::vector<std::string>{"at 2", "at 1"}));
}

TEST(share_state_client, a_moved_coordinator_is_found_again) {
  fake_network net;
  net.place(0, 1);
  share_state_client client(net.network());
  answers got;
  // Broker 1 answers NOT_COORDINATOR (the partition of __share_group_state moved to broker 3):
  // the write goes to broker 3 after the backoff.
  net.refuse_once(1, 0, error_code::not_coordinator, 3);
  client.write({"g", topic(1), 0}, some_write(0), got.callback("w"));
  const auto answered = got.wait(1);
  EXPECT_EQ(answered[0].second.error, error_code::none);
  const auto requests = net.wait_requests(2);
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[0].node, 1);
  EXPECT_EQ(requests[1].node, 3);
}

TEST(share_state_client, summaries_are_batched_and_read) {
  fake_network net;
  for (int32_t p = 0; p < 3; ++p) net.place(p, 2);
  share_state_client client(net.network());
  answers got;
  net.hold(2);
  client.read_summary({"g", topic(1), 0}, got.callback("0"));
  net.wait_requests(1);
  client.read_summary({"g", topic(1), 1}, got.callback("1"));
  client.read_summary({"g", topic(1), 2}, got.callback("2"));
  net.open(2);
  const auto answered = got.wait(3);
  const auto requests = net.wait_requests(2);
  ASSERT_EQ(requests.size(), 2u);
  EXPECT_EQ(requests[1], (seen_request{2, summary_key, "g", {{1, 1}, {1, 2}}}));
  for (const auto& [name, a] : answered) {
    const int32_t p = std::stoi(name);
    EXPECT_EQ(a.error, error_code::none);
    EXPECT_EQ(a.state.start_offset, p * 10);
    EXPECT_EQ(a.state.state_epoch, 2);
    EXPECT_EQ(a.state.leader_epoch, 3);
    EXPECT_EQ(a.state.delivery_complete_count, p);
  }
}

TEST(share_state_client, a_call_without_a_coordinator_gives_up_after_its_time) {
  fake_network net;  // no partition placed: no coordinator known
  share_state_client client(net.network());
  answers got;
  const auto asked = std::chrono::steady_clock::now();
  client.write({"g", topic(1), 0}, some_write(0), got.callback("w"));
  const auto answered = got.wait(1, 20s);
  ASSERT_EQ(answered.size(), 1u);
  EXPECT_EQ(answered[0].second.error, error_code::coordinator_not_available);
  EXPECT_GE(std::chrono::steady_clock::now() - asked,
            std::chrono::milliseconds(share_state_client::call_timeout_ms -
                                      share_state_client::retry_backoff_ms));
  EXPECT_EQ(net.request_count(), 0u);
}

TEST(share_state_client, stop_drops_what_is_out_and_queued) {
  fake_network net;
  net.place(0, 1);
  answers got;
  {
    share_state_client client(net.network());
    net.hold(1);
    client.write({"g", topic(1), 0}, some_write(0), got.callback("out"));
    net.wait_requests(1);
    client.write({"g", topic(1), 0}, some_write(1), got.callback("behind"));
    client.stop();  // gives the held request up
    client.write({"g", topic(1), 1}, some_write(0), got.callback("after"));
  }
  std::this_thread::sleep_for(50ms);
  // The request given up is retried no more; nothing else is answered or sent.
  EXPECT_EQ(net.request_count(), 1u);
}

}  // namespace
}  // namespace tarn::broker
