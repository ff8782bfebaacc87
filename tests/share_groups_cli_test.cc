// `tarn share-groups` and Kafka 4.4.0's own share-group tools against `tarn serve`:
//   - `tarn share-groups` prints what kafka-share-groups.sh prints (the texts below are what Kafka
//     4.4.0's ShareGroupCommand printed against tarn for the same state, checked when this test
//     was written): --list (with --state), --describe (offsets, --members, --state, --verbose), a
//     missing group, --reset-offsets refused for a group with members, then --to-earliest /
//     --to-offset / --to-latest / --to-datetime as a dry run and with --execute, --delete-offsets
//     (and of a topic that does not exist), --delete (and of a group that is not a share group);
//   - Kafka's kafka-console-share-consumer.sh reads a topic's records with a share group that
//     `tarn share-groups --reset-offsets --execute` started at the earliest offset; then Kafka's
//     kafka-share-groups.sh --reset-offsets --execute, --delete-offsets and --delete change
//     tarn's share group and print what `tarn share-groups` prints for the same commands.
// Share groups are made with hand-built ShareGroupHeartbeat and ShareFetch requests.
// GCC 12's -Wrestrict misfires on std::string operator+ with literals (GCC bug 105329).
#pragma GCC diagnostic ignored "-Wrestrict"

#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "kafka_conn.h"
#include "kafka_ref_broker.h"
#include "produce_util.h"
#include "protocol/messages/share_fetch_request.h"
#include "protocol/messages/share_fetch_response.h"
#include "protocol/messages/share_group_heartbeat_request.h"
#include "protocol/messages/share_group_heartbeat_response.h"
#include "test_util.h"
#include "tool_output.h"

namespace tarn::test {
namespace {

class share_groups_cli : public ::testing::Test {
 protected:
  void SetUp() override {
    // The records' timestamps are from 2023: no retention, or the log would drop them mid-test.
    broker_ = std::make_unique<broker_process>(
        std::vector<std::string>{"--override", "log.retention.ms=-1"});
    ASSERT_NE(broker_->port(), 0) << broker_->output();
    ASSERT_EQ(create_topic(broker_->port(), "q", 1), 0);
    raw_client c(broker_->port());
    for (int i = 0; i < 3; ++i) {
      ASSERT_EQ(produce_one(c, i + 1, "q", 0, value_batch("v" + std::to_string(i))).error_code, 0);
    }
    conn_ = std::make_unique<kafka_conn>(broker_->port(), nullptr);
  }
  void TearDown() override {
    conn_.reset();
    if (broker_) broker_->stop();
  }

  std::string bootstrap() const { return "127.0.0.1:" + std::to_string(broker_->port()); }
  // `tarn share-groups args`; with TARN_SHARE_TOOL_ORACLE=1 in the environment Kafka's
  // ShareGroupCommand runs the same arguments first (same state: only views and dry runs are
  // checked so) and must print the same (a JVM each: how the texts here were checked, kept out
  // of the default run for CI time).
  split_output tool(const std::string& args, bool oracle_checks = true) const {
    auto ours = run_split("timeout 60 " + std::string(TARN_BINARY) +
                          " share-groups --bootstrap-server " + bootstrap() + " " + args);
    const char* oracle = std::getenv("TARN_SHARE_TOOL_ORACLE");
    if (oracle_checks && oracle != nullptr && std::string(oracle) == "1" && !kafka_libs().empty() &&
        args.find("--execute") == std::string::npos && !args.starts_with("--delete")) {
      auto theirs = kafka_tool("org.apache.kafka.tools.consumer.group.ShareGroupCommand", args);
      EXPECT_EQ(ours.out, theirs.out) << args;
      EXPECT_EQ(ours.err, without_traces(theirs.err)) << args;
    }
    return ours;
  }
  split_output kafka_tool(const std::string& main_class, const std::string& args) const {
    return run_split("timeout 90 java -cp '" + kafka_libs() + "/*' " + main_class +
                     " --bootstrap-server " + bootstrap() + " " + args);
  }

  // Member m1 joins share group g subscribed to q; its first ShareFetch starts the share-partition
  // at the high watermark (share.auto.offset.reset latest): start offset 3, lag 0.
  int32_t join_and_fetch() {
    protocol::share_group_heartbeat_request h;
    h.group_id = "g";
    h.member_id = "m1";
    h.member_epoch = 0;
    std::vector<std::string_view> topics = {"q"};
    h.subscribed_topic_names = topics;
    auto joined = conn_->call<protocol::share_group_heartbeat_response>(h, 1);
    EXPECT_TRUE(joined && joined->error_code == 0 && joined->assignment);
    if (!joined || !joined->assignment) return -1;
    protocol::share_fetch_request f;
    f.group_id = "g";
    f.member_id = "m1";
    f.share_session_epoch = 0;
    f.max_records = 10;
    f.batch_size = 10;
    f.max_bytes = 1 << 20;
    f.topics.emplace_back().topic_id = joined->assignment->topic_partitions.at(0).topic_id;
    f.topics.back().partitions.emplace_back().partition_index = 0;
    auto fetched = conn_->call<protocol::share_fetch_response>(f, 2);
    EXPECT_TRUE(fetched && fetched->error_code == 0);
    return joined->member_epoch;
  }
  void leave(int32_t) {
    protocol::share_group_heartbeat_request h;
    h.group_id = "g";
    h.member_id = "m1";
    h.member_epoch = -1;
    auto left = conn_->call<protocol::share_group_heartbeat_response>(h, 1);
    ASSERT_TRUE(left);
    ASSERT_EQ(left->error_code, 0);
  }

  std::unique_ptr<broker_process> broker_;
  std::unique_ptr<kafka_conn> conn_;
};

TEST_F(share_groups_cli, tarn_share_groups_prints_what_kafka_share_groups_prints) {
  const int32_t epoch = join_and_fetch();
  ASSERT_GT(epoch, 0);
  auto list = tool("--list");
  EXPECT_EQ(list.code, 0) << list.err;
  EXPECT_EQ(list.out, "g\n");
  EXPECT_EQ(tool("--list --state").out, "GROUP           STATE\ng               Stable\n");
  EXPECT_EQ(tool("--list --state empty").out, "GROUP           STATE\n");

  auto offsets = tool("--describe --group g");
  EXPECT_EQ(offsets.code, 0) << offsets.err;
  EXPECT_EQ(offsets.out,
            "\nGROUP           TOPIC           PARTITION  START-OFFSET  LAG"
            "\ng               q               0          3             0\n");
  EXPECT_EQ(tool("--describe --group g --verbose").out,
            "\nGROUP           TOPIC           PARTITION  LEADER-EPOCH  START-OFFSET  LAG"
            "\ng               q               0          0             3             0\n");
  auto members = tool("--describe --group g --members");
  EXPECT_EQ(members.code, 0) << members.err;
  EXPECT_EQ(members.out,
            "\nGROUP           CONSUMER-ID     HOST            CLIENT-ID       #PARTITIONS  "
            "ASSIGNMENT"
            "\ng               m1              /127.0.0.1      hostile         1            q:0\n");
  const std::string coordinator = bootstrap() + "  (1)";
  const std::string padded =
      coordinator + std::string(coordinator.size() < 25 ? 25 - coordinator.size() : 0, ' ');
  EXPECT_EQ(tool("--describe --group g --state").out,
            "\nGROUP           COORDINATOR (ID)          STATE           #MEMBERS"
            "\ng               " +
                padded + " Stable          1\n");
  auto missing = tool("--describe --group nope");
  EXPECT_EQ(missing.code, 1);
  EXPECT_EQ(missing.out,
            "\nError: Executing share group command failed due to "
            "org.apache.kafka.common.errors.GroupIdNotFoundException: Group nope not found.\n");

  // Offsets are reset only in a group without members.
  auto busy = tool("--reset-offsets --group g --topic q --to-earliest --execute");
  EXPECT_EQ(busy.code, 1);
  EXPECT_EQ(busy.err, "Share group 'g' is not empty.\n");
  leave(epoch);
  EXPECT_EQ(tool("--describe --group g --members").err,
            "\nShare group 'g' has no active members.\n");

  // Kafka's tool prints its usage after this line.
  auto no_mode = tool("--reset-offsets --group g --topic q --to-earliest", false);
  EXPECT_EQ(no_mode.code, 1);
  EXPECT_EQ(no_mode.err, "Option [reset-offsets] takes the option: [execute] or [dry-run]\n");
  const std::string plan_head = "\nGROUP           TOPIC           PARTITION  NEW-OFFSET";
  auto dry = tool("--reset-offsets --group g --topic q --to-earliest --dry-run");
  EXPECT_EQ(dry.code, 0) << dry.out << dry.err;
  EXPECT_EQ(dry.out, plan_head + "\ng               q               0          0\n");
  EXPECT_EQ(tool("--describe --group g").out,
            "\nGROUP           TOPIC           PARTITION  START-OFFSET  LAG"
            "\ng               q               0          3             0\n");
  auto executed = tool("--reset-offsets --group g --topic q:0 --to-offset 1 --execute");
  EXPECT_EQ(executed.code, 0) << executed.out << executed.err;
  EXPECT_EQ(executed.out, plan_head + "\ng               q               0          1\n");
  EXPECT_EQ(tool("--describe --group g").out,
            "\nGROUP           TOPIC           PARTITION  START-OFFSET  LAG"
            "\ng               q               0          1             2\n");
  EXPECT_EQ(tool("--reset-offsets --group g --all-topics --to-latest --dry-run").out,
            plan_head + "\ng               q               0          3\n");
  EXPECT_EQ(tool("--reset-offsets --group g --topic q --to-offset 99 --dry-run").out,
            plan_head + "\ng               q               0          3\n");  // clamped
  EXPECT_EQ(
      tool("--reset-offsets --group g --topic q --to-datetime 2000-01-01T00:00:00.000Z --dry-run")
          .out,
      plan_head + "\ng               q               0          0\n");
  EXPECT_EQ(tool("--reset-offsets --group g --topic q --to-current --export --dry-run").out,
            "q,0,1\n\n");

  auto deleted_offsets = tool("--delete-offsets --group g --topic q");
  EXPECT_EQ(deleted_offsets.code, 0) << deleted_offsets.err;
  EXPECT_EQ(deleted_offsets.out, "\nTOPIC           STATUS\nq               Successful\n");
  EXPECT_EQ(tool("--describe --group g").out, "\nShare group 'g' has no offset information.\n");
  auto unknown_topic = tool("--delete-offsets --group g --topic nope");
  EXPECT_EQ(unknown_topic.code, 1);
  EXPECT_EQ(unknown_topic.out,
            "\nTOPIC           STATUS\nnope            Error: This server does not host this "
            "topic-partition.\n");

  auto not_share = tool("--delete --group nope");
  EXPECT_EQ(not_share.code, 1);
  EXPECT_EQ(not_share.out,
            "\nError: Deletion of some share groups failed:\n* Group 'nope' could not be deleted "
            "due to: java.lang.IllegalArgumentException: Group 'nope' is not a share group.\n");
  auto removed = tool("--delete --group g");
  EXPECT_EQ(removed.code, 0) << removed.out;
  EXPECT_EQ(removed.out, "Deletion of requested share groups ('g') was successful.\n");
  EXPECT_EQ(tool("--list").out, "");
}

// Kafka 4.4.0's console share consumer and kafka-share-groups.sh against tarn (four JVMs).
TEST_F(share_groups_cli, kafka_share_tools_work_against_tarn) {
  if (kafka_libs().empty()) GTEST_SKIP() << "java or the Kafka 4.4.0 jars are not available";
  // The group starts at the earliest offset, so the console consumer reads the three records.
  auto started = tool("--reset-offsets --group g --topic q --to-earliest --execute");
  ASSERT_EQ(started.code, 0) << started.out << started.err;
  auto consumed = kafka_tool("org.apache.kafka.tools.consumer.ConsoleShareConsumer",
                             "--topic q --group g --max-messages 3 --timeout-ms 30000");
  EXPECT_EQ(consumed.code, 0) << consumed.err;
  EXPECT_EQ(consumed.out, "v0\nv1\nv2\n") << consumed.err;
  // The consumer accepted them and left.
  EXPECT_EQ(tool("--describe --group g").out,
            "\nGROUP           TOPIC           PARTITION  START-OFFSET  LAG"
            "\ng               q               0          3             0\n");

  const std::string share_groups = "org.apache.kafka.tools.consumer.group.ShareGroupCommand";
  const std::string reset = "--reset-offsets --group g --topic q --to-offset 1";
  auto ours = tool(reset + " --dry-run");
  auto theirs = kafka_tool(share_groups, reset + " --execute");
  EXPECT_EQ(theirs.code, 0) << theirs.err;
  EXPECT_EQ(theirs.out, ours.out);
  EXPECT_EQ(tool("--describe --group g").out,
            "\nGROUP           TOPIC           PARTITION  START-OFFSET  LAG"
            "\ng               q               0          1             2\n");

  auto their_delete_offsets = kafka_tool(share_groups, "--delete-offsets --group g --topic q");
  EXPECT_EQ(their_delete_offsets.code, 0) << their_delete_offsets.err;
  EXPECT_EQ(their_delete_offsets.out, "\nTOPIC           STATUS\nq               Successful\n");
  EXPECT_EQ(tool("--describe --group g").out, "\nShare group 'g' has no offset information.\n");

  auto their_delete = kafka_tool(share_groups, "--delete --group g");
  EXPECT_EQ(their_delete.code, 0) << their_delete.err;
  EXPECT_EQ(their_delete.out, "Deletion of requested share groups ('g') was successful.\n");
  EXPECT_EQ(tool("--list").out, "");
}

}  // namespace
}  // namespace tarn::test
