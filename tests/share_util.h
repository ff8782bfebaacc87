// A share-group member by hand-built requests, for the integration tests of share-partition state
// (share_state_test.cc, cluster_share_state_test.cc): ShareGroupHeartbeat, a share session's
// ShareFetch and ShareAcknowledge on one partition of one topic, and the records a test produces.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "kafka_conn.h"
#include "produce_util.h"
#include "protocol/messages/describe_share_group_offsets_request.h"
#include "protocol/messages/describe_share_group_offsets_response.h"
#include "protocol/messages/share_acknowledge_request.h"
#include "protocol/messages/share_acknowledge_response.h"
#include "protocol/messages/share_fetch_request.h"
#include "protocol/messages/share_fetch_response.h"
#include "protocol/messages/share_group_heartbeat_request.h"
#include "protocol/messages/share_group_heartbeat_response.h"
#include "test_util.h"

namespace tarn::test {

inline constexpr int8_t share_accept = 1;
inline constexpr int8_t share_release = 2;
inline constexpr int8_t share_reject = 3;

// offset -> delivery count, for [first, last] with one count.
inline std::map<int64_t, int16_t> share_offsets(int64_t first, int64_t last, int16_t count) {
  std::map<int64_t, int16_t> out;
  for (int64_t o = first; o <= last; ++o) out[o] = count;
  return out;
}

// Records "v<from>" ... "v<to - 1>" produced to partition 0 of `topic`, one batch each.
inline void produce_values(uint16_t port, int from, int to, const std::string& topic = "q") {
  raw_client c(port);
  for (int i = from; i < to; ++i) {
    ASSERT_EQ(produce_one(c, i + 1, topic, 0, value_batch("v" + std::to_string(i))).error_code, 0);
  }
}

// One member of share group "g" on partition 0 of topic "q" of the broker at `port`.
class share_member {
 public:
  struct fetched {
    int16_t error_code = -1;
    int16_t partition_error = 0;
    std::map<int64_t, int16_t> acquired;  // offset -> delivery count
  };

  share_member(uint16_t port, std::string member_id, int32_t max_wait_ms = 200)
      : conn_(port, nullptr), id_(std::move(member_id)), max_wait_ms_(max_wait_ms) {}

  // Joins (ShareGroupHeartbeat epoch 0 on this broker) and opens a share session with the
  // partition; what the opening ShareFetch acquired is in `opened`.
  bool join() {
    protocol::share_group_heartbeat_request r;
    r.group_id = "g";
    r.member_id = id_;
    r.member_epoch = 0;
    r.subscribed_topic_names = topics_;
    auto joined = conn_.call<protocol::share_group_heartbeat_response>(r, 1);
    if (!joined || joined->error_code != 0 || !joined->assignment ||
        joined->assignment->topic_partitions.empty()) {
      return false;
    }
    member_epoch = joined->member_epoch;
    topic_id_ = joined->assignment->topic_partitions[0].topic_id;
    opened = fetch();
    return opened.error_code == 0;
  }
  fetched opened;

  // For a member that joined elsewhere (the group's coordinator is another broker).
  void set_topic_id(const protocol::uuid& id) { topic_id_ = id; }

  // Opens the session (epoch 0) when it has none, else fetches at the session's next epoch.
  fetched fetch() {
    protocol::share_fetch_request r;
    r.group_id = "g";
    r.member_id = id_;
    r.share_session_epoch = epoch_;
    r.max_wait_ms = max_wait_ms_;
    r.min_bytes = 1;
    r.max_records = 500;
    r.batch_size = 500;
    if (epoch_ == 0) {
      auto& t = r.topics.emplace_back();
      t.topic_id = topic_id_;
      t.partitions.emplace_back().partition_index = 0;
    }
    fetched out;
    auto got = conn_.call<protocol::share_fetch_response>(r, 1);
    if (!got) return out;
    ++epoch_;
    out.error_code = got->error_code;
    for (const auto& t : got->responses) {
      for (const auto& p : t.partitions) {
        out.partition_error = p.error_code;
        for (const auto& a : p.acquired_records) {
          for (int64_t o = a.first_offset; o <= a.last_offset; ++o) {
            out.acquired[o] = a.delivery_count;
          }
        }
      }
    }
    return out;
  }

  // Fetches until something is acquired (a new leader reads the state first).
  fetched fetch_some(std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    fetched f = fetch();
    while (f.acquired.empty() && std::chrono::steady_clock::now() < deadline) f = fetch();
    return f;
  }

  // ShareAcknowledge of [first, last] with one type: the partition's error code (the top-level
  // one when set, -1 without an answer).
  int16_t acknowledge(int64_t first, int64_t last, int8_t type) {
    protocol::share_acknowledge_request r;
    r.group_id = "g";
    r.member_id = id_;
    r.share_session_epoch = epoch_;
    auto& t = r.topics.emplace_back();
    t.topic_id = topic_id_;
    auto& p = t.partitions.emplace_back();
    p.partition_index = 0;
    const std::vector<int8_t> types = {type};
    p.acknowledgement_batches = {{first, last, types}};
    auto got = conn_.call<protocol::share_acknowledge_response>(r, 1);
    if (!got) return -1;
    ++epoch_;
    if (got->error_code != 0) return got->error_code;
    return got->responses.at(0).partitions.at(0).error_code;
  }

  // ShareGroupHeartbeat with the member's epoch (-1 leaves); the error code, and the epoch
  // answered kept in member_epoch.
  int16_t heartbeat(bool leave = false) {
    protocol::share_group_heartbeat_request r;
    r.group_id = "g";
    r.member_id = id_;
    r.member_epoch = leave ? -1 : member_epoch;
    auto got = conn_.call<protocol::share_group_heartbeat_response>(r, 1);
    if (!got) return -1;
    if (got->error_code == 0) member_epoch = got->member_epoch;
    return got->error_code;
  }
  int32_t member_epoch = 0;

  // The share-partition's SPSO by DescribeShareGroupOffsets (-1 when none is described).
  int64_t start_offset() {
    protocol::describe_share_group_offsets_request r;
    r.groups.emplace_back().group_id = "g";
    auto got = conn_.call<protocol::describe_share_group_offsets_response>(r, 1);
    if (!got || got->groups.empty() || got->groups[0].topics.empty()) return -1;
    return got->groups[0].topics[0].partitions.at(0).start_offset;
  }

 private:
  kafka_conn conn_;
  std::string id_;
  int32_t max_wait_ms_;
  std::vector<std::string_view> topics_ = {"q"};
  protocol::uuid topic_id_{};
  int32_t epoch_ = 0;
};

}  // namespace tarn::test
