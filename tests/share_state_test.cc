// Share-partition state across a broker crash (__share_group_state, docs/share-groups.md):
//   - hand-built ShareFetch/ShareAcknowledge (share_util.h) accept, reject and release records and
//   hold others
//     acquired; the broker is SIGKILLed and restarted on the same log.dirs; a new member's
//     fetches never see an accepted or rejected record again, get the held ones back with their
//     delivery counted, and every record ends accepted or rejected once (a checker over every
//     delivery of both runs);
//   - Kafka 4.4.0's own `kafka-dump-log.sh --share-group-state-decoder` decodes the segments tarn
//     wrote and shows that state (skipped without java and the Kafka jars);
//   - the share group itself (epochs, members, assignments, initialized share-partitions) is in
//     __consumer_offsets: it survives a SIGKILL, a member found in the log goes on with its epoch,
//     DeleteGroups' tombstones make it gone after a restart, and Kafka 4.4.0's
//     `kafka-dump-log.sh --offsets-decoder` decodes those records.
#include <gtest/gtest.h>

#include <csignal>
#include <filesystem>
#include <map>

#include "kafka_conn.h"
#include "kafka_ref_broker.h"
#include "protocol/error_codes.h"
#include "protocol/messages/delete_groups_request.h"
#include "protocol/messages/delete_groups_response.h"
#include "protocol/messages/share_group_describe_request.h"
#include "protocol/messages/share_group_describe_response.h"
#include "share_util.h"
#include "test_util.h"

namespace tarn::test {
namespace {

namespace fs = std::filesystem;
using protocol::code;

constexpr int8_t accept_type = share_accept;
constexpr int8_t release_type = share_release;
constexpr int8_t reject_type = share_reject;

// The brokers' args: share groups are kept in __consumer_offsets, and these one-group tests need
// one partition of it, not 50 to create and close.
// group.share.assignment.interval.ms=0: a member that joins after the restart gets its target
// at its join (with Kafka's default, 1000 ms, the restarted group's last target is less than a
// second old and the member would get it at a later heartbeat).
const std::vector<std::string> one_offsets_partition = {
    "--override", "offsets.topic.num.partitions=1", "--override",
    "group.share.assignment.interval.ms=0"};

// Every delivery of every record in both runs, and how each ended.
struct delivery_checker {
  std::map<int64_t, std::vector<int16_t>> deliveries;
  std::map<int64_t, int8_t> ended;  // accept or reject, once

  void delivered(const std::map<int64_t, int16_t>& acquired) {
    for (const auto& [o, count] : acquired) {
      EXPECT_FALSE(ended.contains(o)) << "offset " << o << " delivered after it was finished";
      deliveries[o].push_back(count);
    }
  }
  void finished(int64_t first, int64_t last, int8_t type) {
    for (int64_t o = first; o <= last; ++o) {
      EXPECT_TRUE(ended.emplace(o, type).second) << "offset " << o << " finished twice";
    }
  }
};

TEST(share_state, sigkill_keeps_acknowledgements_and_brings_acquired_records_back) {
  temp_dir dir;
  const fs::path data = dir.path() / "data";
  delivery_checker check;
  {
    broker_process broker(one_offsets_partition, data);
    ASSERT_NE(broker.port(), 0) << broker.output();
    ASSERT_EQ(create_topic(broker.port(), "q", 1), 0);
    share_member m1(broker.port(), "m1");
    ASSERT_TRUE(m1.join());  // the share-partition starts at the high watermark: 0
    EXPECT_TRUE(m1.opened.acquired.empty());
    produce_values(broker.port(), 0, 10);
    auto first = m1.fetch();
    ASSERT_EQ(first.error_code, 0);
    ASSERT_EQ(first.acquired.size(), 10u);
    check.delivered(first.acquired);
    // Out of order, so Acknowledged and Archived batches are written before the SPSO moves.
    ASSERT_EQ(m1.acknowledge(1, 3, accept_type), 0);
    check.finished(1, 3, accept_type);
    ASSERT_EQ(m1.acknowledge(4, 4, reject_type), 0);
    check.finished(4, 4, reject_type);
    ASSERT_EQ(m1.acknowledge(0, 0, accept_type), 0);
    check.finished(0, 0, accept_type);
    ASSERT_EQ(m1.acknowledge(5, 5, release_type), 0);
    auto again = m1.fetch();  // 5 comes back to m1 with delivery count 2
    EXPECT_EQ(again.acquired, (std::map<int64_t, int16_t>{{5, 2}}));
    check.delivered(again.acquired);
    EXPECT_EQ(m1.start_offset(), 5);
    // 5..9 are acquired by m1 when the broker dies.
    broker.process().send_signal(SIGKILL);
    ASSERT_TRUE(broker.process().wait_exit(10s).has_value());
  }
  broker_process broker(one_offsets_partition, data);
  ASSERT_NE(broker.port(), 0) << broker.output();
  EXPECT_NE(broker.output().find("share coordinator loaded 1 share group(s), 1 share-partition(s)"),
            std::string::npos)
      << broker.output();
  share_member m2(broker.port(), "m2");
  ASSERT_TRUE(m2.join());  // its opening ShareFetch may already acquire the held records
  check.delivered(m2.opened.acquired);
  std::map<int64_t, int16_t> after = m2.opened.acquired;
  EXPECT_EQ(m2.start_offset(), 5);
  produce_values(broker.port(), 10, 13);
  for (int i = 0; i < 5 && after.size() < 8; ++i) {
    auto got = m2.fetch();
    ASSERT_EQ(got.error_code, 0);
    check.delivered(got.acquired);
    after.insert(got.acquired.begin(), got.acquired.end());
  }
  // The held records come back with the delivery under way counted; new ones are first
  // deliveries; nothing finished is delivered again (the checker).
  EXPECT_EQ(after, (std::map<int64_t, int16_t>{
                       {5, 3}, {6, 2}, {7, 2}, {8, 2}, {9, 2}, {10, 1}, {11, 1}, {12, 1}}));
  ASSERT_EQ(m2.acknowledge(5, 12, accept_type), 0);
  check.finished(5, 12, accept_type);
  EXPECT_TRUE(m2.fetch().acquired.empty());
  EXPECT_EQ(m2.start_offset(), 13);
  // Nothing lost: every offset produced ended once, and its deliveries were counted 1, 2, ...
  for (int64_t o = 0; o < 13; ++o) {
    EXPECT_TRUE(check.ended.contains(o)) << o;
    const auto& d = check.deliveries[o];
    for (size_t i = 0; i < d.size(); ++i) EXPECT_EQ(d[i], static_cast<int16_t>(i + 1)) << o;
  }

  // Kafka 4.4.0's dump tool decodes what tarn wrote.
  if (kafka_libs().empty()) GTEST_SKIP() << "java or the Kafka 4.4.0 jars are missing";
  std::string files;
  for (const auto& e : fs::directory_iterator(data)) {
    if (e.path().filename().string().rfind("__share_group_state-", 0) != 0) continue;
    for (const auto& f : fs::directory_iterator(e.path())) {
      if (f.path().extension() == ".log" && fs::file_size(f.path()) > 0) {
        files += (files.empty() ? "" : ",") + f.path().string();
      }
    }
  }
  ASSERT_FALSE(files.empty());
  auto [rc, out] = run_command("timeout 120 " + std::string(TARN_SOURCE_DIR) +
                               "/scripts/kafka-ref tool dump-log "
                               "--share-group-state-decoder --files " +
                               files + " 2>&1");
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(out.find("Exception"), std::string::npos) << out;
  EXPECT_EQ(out.find("Unknown"), std::string::npos) << out;
  // The first snapshot (SPSO 0, nothing in flight) and the last write (SPSO 13).
  EXPECT_NE(out.find("\"type\":\"0\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"groupId\":\"g\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"startOffset\":13"), std::string::npos) << out;
  EXPECT_NE(out.find("\"deliveryState\":2"), std::string::npos) << out;
  EXPECT_NE(out.find("\"deliveryState\":4"), std::string::npos) << out;
}

// What ShareGroupDescribe says of group "g": epochs, then each member's id, epoch and partitions.
struct described {
  int16_t error_code = -1;
  int32_t group_epoch = -1;
  int32_t assignment_epoch = -1;
  std::map<std::string, std::pair<int32_t, std::vector<int32_t>>> members;
  bool operator==(const described&) const = default;
};
described describe_group(uint16_t port) {
  kafka_conn conn(port, nullptr);
  protocol::share_group_describe_request r;
  r.group_ids = {"g"};
  described out;
  auto got = conn.call<protocol::share_group_describe_response>(r, 1);
  if (!got || got->groups.empty()) return out;
  const auto& g = got->groups[0];
  out.error_code = g.error_code;
  out.group_epoch = g.group_epoch;
  out.assignment_epoch = g.assignment_epoch;
  for (const auto& m : g.members) {
    std::vector<int32_t> parts;
    for (const auto& tp : m.assignment.topic_partitions) {
      parts.insert(parts.end(), tp.partitions.begin(), tp.partitions.end());
    }
    out.members[std::string(m.member_id)] = {m.member_epoch, parts};
  }
  return out;
}

TEST(share_state, the_group_survives_a_sigkill_and_delete_groups_survives_a_restart) {
  temp_dir dir;
  const fs::path data = dir.path() / "data";
  described before;
  {
    broker_process broker(one_offsets_partition, data);
    ASSERT_NE(broker.port(), 0) << broker.output();
    ASSERT_EQ(create_topic(broker.port(), "q", 1), 0);
    share_member m1(broker.port(), "m1");
    share_member m2(broker.port(), "m2");
    ASSERT_TRUE(m1.join());  // its ShareFetch initializes share-partition q-0
    ASSERT_TRUE(m2.join());
    ASSERT_EQ(m1.heartbeat(), 0);  // m1 catches up with the epoch m2's join made
    ASSERT_EQ(m1.member_epoch, m2.member_epoch);
    before = describe_group(broker.port());
    ASSERT_EQ(before.error_code, 0);
    EXPECT_EQ(before.group_epoch, m2.member_epoch);
    ASSERT_EQ(before.members.size(), 2u);
    broker.process().send_signal(SIGKILL);
    ASSERT_TRUE(broker.process().wait_exit(10s).has_value());
  }
  {
    broker_process broker(one_offsets_partition, data);
    ASSERT_NE(broker.port(), 0) << broker.output();
    EXPECT_NE(
        broker.output().find("share coordinator loaded 1 share group(s), 1 share-partition(s)"),
        std::string::npos)
        << broker.output();
    // The same group: epochs, members, their epochs and assignments.
    EXPECT_EQ(describe_group(broker.port()), before);
    // Members found in the log go on with the epoch they had (Kafka's onLoaded), then leave.
    share_member m1(broker.port(), "m1");
    share_member m2(broker.port(), "m2");
    m1.member_epoch = before.members["m1"].first;
    m2.member_epoch = before.members["m2"].first;
    EXPECT_EQ(m1.heartbeat(), 0);
    EXPECT_EQ(m1.member_epoch, before.group_epoch);
    EXPECT_EQ(m1.heartbeat(true), 0);
    EXPECT_EQ(m2.heartbeat(true), 0);
    kafka_conn conn(broker.port(), nullptr);
    protocol::delete_groups_request del;
    del.groups_names = {"g"};
    auto deleted = conn.call<protocol::delete_groups_response>(del, 2);
    ASSERT_TRUE(deleted);
    ASSERT_EQ(deleted->results.size(), 1u);
    EXPECT_EQ(deleted->results[0].error_code, 0);
  }
  broker_process broker(one_offsets_partition, data);
  ASSERT_NE(broker.port(), 0) << broker.output();
  EXPECT_NE(broker.output().find("share coordinator loaded 0 share group(s), 0 share-partition(s)"),
            std::string::npos)
      << broker.output();
  EXPECT_EQ(describe_group(broker.port()).error_code,
            code(protocol::error_code::group_id_not_found));

  // Kafka 4.4.0's dump tool decodes the share-group records tarn wrote to __consumer_offsets.
  if (kafka_libs().empty()) GTEST_SKIP() << "java or the Kafka 4.4.0 jars are missing";
  std::string files;
  for (const auto& e : fs::directory_iterator(data)) {
    if (e.path().filename().string().rfind("__consumer_offsets-", 0) != 0) continue;
    for (const auto& f : fs::directory_iterator(e.path())) {
      if (f.path().extension() == ".log" && fs::file_size(f.path()) > 0) {
        files += (files.empty() ? "" : ",") + f.path().string();
      }
    }
  }
  ASSERT_FALSE(files.empty());
  auto [rc, out] =
      run_command("timeout 120 " + std::string(TARN_SOURCE_DIR) +
                  "/scripts/kafka-ref tool dump-log --offsets-decoder --files " + files + " 2>&1");
  EXPECT_EQ(rc, 0) << out;
  EXPECT_EQ(out.find("Exception"), std::string::npos) << out;
  EXPECT_EQ(out.find("Unknown"), std::string::npos) << out;
  // Every share-group record type, with its fields as Kafka names them, and the tombstones.
  for (int type = 10; type <= 15; ++type) {
    EXPECT_NE(out.find("\"type\":\"" + std::to_string(type) + "\""), std::string::npos)
        << type << "\n"
        << out;
  }
  EXPECT_NE(out.find("\"subscribedTopicNames\":[\"q\"]"), std::string::npos) << out;
  EXPECT_NE(out.find("\"initializedTopics\":[{"), std::string::npos) << out;
  EXPECT_NE(out.find("<DELETE>"), std::string::npos) << out;
}

}  // namespace
}  // namespace tarn::test
