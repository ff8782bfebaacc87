// `tarn consume --group` and `tarn groups` end to end, against `tarn serve` and against Apache
// Kafka 4.4.0 (scripts/kafka-ref, when java and its jars are there) with the same assertions, so
// the assertions are shown right on Kafka:
//   - records produced to a topic are read by `tarn consume --group G --from-beginning
//     --max-messages N`, which commits them: `tarn groups --describe` shows LAG 0;
//     `--reset-offsets --to-earliest` prints the plan and changes nothing, with `--execute` the
//     LAG is N; consuming again reads the N records again; `--delete` removes the group;
//   - Kafka's own kafka-consumer-groups (ConsumerGroupCommand from the 4.4.0 jars) prints, for
//     --list, --list --state, --describe (offsets, --members, --state), --reset-offsets (dry run
//     and --execute), --delete-offsets and --delete, byte for byte what `tarn groups` prints,
//     stdout and stderr (the Java stack traces aside);
//   - two `tarn consume --group` members share the partitions (--describe --members), read every
//     record between them, and leave the group empty with LAG 0; while a member is active the
//     offsets cannot be reset nor the group deleted, and SIGTERM ends the member cleanly.
// GCC 12's -Wrestrict misfires on std::string operator+ with literals (GCC bug 105329).
#pragma GCC diagnostic ignored "-Wrestrict"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "kafka_ref_broker.h"
#include "test_util.h"
#include "tool_output.h"

namespace tarn::test {
namespace {

// ---- The brokers: tarn, one per test; Kafka, one per process (started on first use).

class groups_cli : public ::testing::TestWithParam<broker_kind> {
 protected:
  void SetUp() override {
#ifdef TARN_SANITIZED_BUILD
    // Kafka's consumer-group tool and console consumer, a JVM a command: what they print is the
    // release suite's to check; the group APIs they call have hand-built and client tests
    // (groups_hostile, groups) that the sanitizer trees run.
    GTEST_SKIP() << "kafka-consumer-groups.sh's tests run in the release build only";
#endif
    if (auto skip =
            start_test_broker(GetParam(), {"group.initial.rebalance.delay.ms=0"}, tarn_, port_);
        !skip.empty()) {
      GTEST_SKIP() << skip;
    }
    ASSERT_NE(port_, 0);
    prefix_ = test_name_prefix();
  }
  void TearDown() override {
    if (tarn_) tarn_->stop();
  }

  std::string bootstrap() const { return "127.0.0.1:" + std::to_string(port_); }
  std::string topic() const { return prefix_ + "topic"; }
  std::string group(const std::string& g = "group") const { return prefix_ + g; }

  std::string tarn(const std::string& args) const {
    return std::string("timeout 120 ") + TARN_BINARY + " " + args;
  }
  split_output groups(const std::string& args) const {
    return run_split(tarn("groups --bootstrap-server " + bootstrap() + " " + args));
  }
  split_output kafka_groups(const std::string& args) const {
    return run_split("timeout 180 java -cp '" + kafka_libs() +
                     "/*' org.apache.kafka.tools.consumer.group.ConsumerGroupCommand "
                     "--bootstrap-server " +
                     bootstrap() + " " + args);
  }

  // Kafka's tool and tarn's print the same for `args` (when the jars are there).
  void expect_same_as_kafka_tool(const std::string& args) const {
    if (kafka_libs().empty()) return;
    auto theirs = kafka_groups(args);
    auto ours = groups(args);
    EXPECT_EQ(ours.out, theirs.out) << "tarn groups " << args;
    EXPECT_EQ(ours.err, without_traces(theirs.err)) << "tarn groups " << args;
  }

  void create_topic(int partitions) const {
    auto [rc, out] =
        run_command(tarn("topics --bootstrap-server " + bootstrap() + " --create --topic " +
                         topic() + " --partitions " + std::to_string(partitions)));
    ASSERT_EQ(rc, 0) << out;
  }

  // Records "key-i:value-i", i from `first`, keyed so they spread over the partitions.
  void produce(int first, int count) const {
    std::string lines;
    for (int i = first; i < first + count; ++i) {
      lines += "key-" + std::to_string(i) + ":value-" + std::to_string(i) + "\n";
    }
    temp_dir dir;
    auto input = dir.write_file("records.txt", lines);
    auto [rc, out] =
        run_command(tarn("produce --bootstrap-server " + bootstrap() + " --topic " + topic() +
                         " --property parse.key=true --property key.separator=: "
                         "--timeout 5 <" +
                         input.string()));
    ASSERT_EQ(rc, 0) << out;
  }

  std::unique_ptr<broker_process> tarn_;
  uint16_t port_ = 0;
  std::string prefix_;
};

// One row of `--describe` (offsets): the columns by name.
using row = std::map<std::string, std::string>;

std::vector<row> table(const std::string& text) {
  std::vector<row> rows;
  std::istringstream in(text);
  std::string line;
  std::vector<std::string> header;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::vector<std::string> f;
    std::string w;
    while (fields >> w) f.push_back(w);
    if (f.empty()) continue;
    if (f[0] == "GROUP") {
      header = f;
      // "COORDINATOR (ID)" is one column in two words.
      for (size_t i = 0; i + 1 < header.size(); ++i) {
        if (header[i] == "COORDINATOR" && header[i + 1] == "(ID)") {
          header[i] = "COORDINATOR (ID)";
          header.erase(header.begin() + static_cast<long>(i) + 1);
        }
      }
      continue;
    }
    if (header.empty()) continue;
    // The coordinator's value is two words too ("host:port  (id)").
    if (std::find(header.begin(), header.end(), "COORDINATOR (ID)") != header.end()) {
      for (size_t i = 0; i + 1 < f.size(); ++i) {
        if (f[i + 1].starts_with("(") && f[i + 1].ends_with(")")) {
          f[i] += "  " + f[i + 1];
          f.erase(f.begin() + static_cast<long>(i) + 1);
          break;
        }
      }
    }
    row r;
    for (size_t i = 0; i < f.size() && i < header.size(); ++i) r[header[i]] = f[i];
    rows.push_back(std::move(r));
  }
  return rows;
}

int64_t sum(const std::vector<row>& rows, const std::string& column) {
  int64_t total = 0;
  for (const auto& r : rows) {
    auto it = r.find(column);
    if (it != r.end() && it->second != "-") total += std::stoll(it->second);
  }
  return total;
}

// The "value-i" lines a console consumer printed.
std::multiset<std::string> values(const std::string& out) {
  std::multiset<std::string> v;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("value-")) v.insert(line);
  }
  return v;
}

std::multiset<std::string> expected_values(int first, int count) {
  std::multiset<std::string> v;
  for (int i = first; i < first + count; ++i) v.insert("value-" + std::to_string(i));
  return v;
}

constexpr int records = 30;

TEST_P(groups_cli, consume_commits_and_reset_rewinds) {
  create_topic(3);
  produce(0, records);
  const std::string consume = "consume --bootstrap-server " + bootstrap() + " --topic " + topic() +
                              " --group " + group() + " --from-beginning --max-messages " +
                              std::to_string(records) + " --timeout-ms 60000";
  auto first = run_split(tarn(consume));
  ASSERT_EQ(first.code, 0) << first.out << first.err;
  EXPECT_EQ(values(first.out), expected_values(0, records));
  EXPECT_NE(first.err.find("Processed a total of 30 messages"), std::string::npos) << first.err;

  auto described = groups("--describe --group " + group());
  ASSERT_EQ(described.code, 0) << described.out << described.err;
  auto rows = table(described.out);
  ASSERT_EQ(rows.size(), 3u) << described.out;
  for (const auto& r : rows) {
    EXPECT_EQ(r.at("GROUP"), group());
    EXPECT_EQ(r.at("TOPIC"), topic());
    EXPECT_EQ(r.at("LAG"), "0") << described.out;
    EXPECT_EQ(r.at("CURRENT-OFFSET"), r.at("LOG-END-OFFSET"));
    EXPECT_EQ(r.at("CONSUMER-ID"), "-");  // the consumer left the group
  }
  EXPECT_EQ(sum(rows, "CURRENT-OFFSET"), records);
  EXPECT_EQ(described.err, "\nConsumer group '" + group() + "' has no active members.\n");
  expect_same_as_kafka_tool("--describe --group " + group());
  expect_same_as_kafka_tool("--describe --group " + group() + " --members");
  expect_same_as_kafka_tool("--describe --group " + group() + " --state");
  expect_same_as_kafka_tool("--list --state");

  auto listed = groups("--list");
  ASSERT_EQ(listed.code, 0) << listed.err;
  EXPECT_NE(("\n" + listed.out).find("\n" + group() + "\n"), std::string::npos) << listed.out;

  // The dry run prints the plan and changes nothing.
  auto plan =
      groups("--reset-offsets --group " + group() + " --topic " + topic() + " --to-earliest");
  ASSERT_EQ(plan.code, 0) << plan.out << plan.err;
  auto planned = table(plan.out);
  ASSERT_EQ(planned.size(), 3u) << plan.out;
  for (const auto& r : planned) EXPECT_EQ(r.at("NEW-OFFSET"), "0");
  EXPECT_NE(plan.err.find("WARN: No action will be performed"), std::string::npos);
  EXPECT_EQ(sum(table(groups("--describe --group " + group()).out), "LAG"), 0);
  expect_same_as_kafka_tool("--reset-offsets --group " + group() + " --topic " + topic() +
                            " --to-earliest");

  auto executed = groups("--reset-offsets --group " + group() + " --topic " + topic() +
                         " --to-earliest --execute");
  ASSERT_EQ(executed.code, 0) << executed.out << executed.err;
  EXPECT_EQ(executed.out, plan.out);
  EXPECT_EQ(executed.err, "");
  auto rewound = table(groups("--describe --group " + group()).out);
  ASSERT_EQ(rewound.size(), 3u);
  EXPECT_EQ(sum(rewound, "LAG"), records);
  EXPECT_EQ(sum(rewound, "CURRENT-OFFSET"), 0);

  // Consuming again reads everything again, from the reset offsets.
  auto second = run_split(tarn(consume));
  ASSERT_EQ(second.code, 0) << second.out << second.err;
  EXPECT_EQ(values(second.out), expected_values(0, records));
  EXPECT_EQ(sum(table(groups("--describe --group " + group()).out), "LAG"), 0);

  // Shift back by 2 on one partition, to an offset on another, with Kafka's tool doing one.
  auto shifted = groups("--reset-offsets --group " + group() + " --topic " + topic() +
                        ":0 --shift-by -2 --execute");
  ASSERT_EQ(shifted.code, 0) << shifted.out << shifted.err;
  if (!kafka_libs().empty()) {
    auto k = kafka_groups("--reset-offsets --group " + group() + " --topic " + topic() +
                          ":1 --to-offset 1 --execute");
    ASSERT_EQ(k.code, 0) << k.out << k.err;
  } else {
    ASSERT_EQ(groups("--reset-offsets --group " + group() + " --topic " + topic() +
                     ":1 --to-offset 1 --execute")
                  .code,
              0);
  }
  auto after = table(groups("--describe --group " + group()).out);
  ASSERT_EQ(after.size(), 3u);
  std::map<std::string, row> by_partition;
  for (const auto& r : after) by_partition[r.at("PARTITION")] = r;
  EXPECT_EQ(std::stoll(by_partition["0"].at("LAG")),
            std::min<int64_t>(2, std::stoll(by_partition["0"].at("LOG-END-OFFSET"))));
  EXPECT_EQ(by_partition["1"].at("CURRENT-OFFSET"), "1");
  EXPECT_EQ(by_partition["2"].at("LAG"), "0");
  expect_same_as_kafka_tool("--describe --group " + group() + " --verbose");
  expect_same_as_kafka_tool("--reset-offsets --group " + group() + " --all-topics --to-latest");
  expect_same_as_kafka_tool("--reset-offsets --group " + group() + " --topic " + topic() +
                            " --to-datetime 2020-01-01T00:00:00.000");

  // Offsets of a topic deleted from the group, then the group itself.
  expect_same_as_kafka_tool("--delete-offsets --group " + group() + " --topic " + topic() +
                            ":2 --topic " + prefix_ + "no-such-topic");
  auto deleted = groups("--delete --group " + group());
  ASSERT_EQ(deleted.code, 0) << deleted.out << deleted.err;
  EXPECT_EQ(deleted.out,
            "Deletion of requested consumer groups ('" + group() + "') was successful.\n");
  listed = groups("--list");
  EXPECT_EQ(("\n" + listed.out).find("\n" + group() + "\n"), std::string::npos) << listed.out;
  auto gone = groups("--describe --group " + group());
  EXPECT_EQ(gone.code, 1);
  EXPECT_NE(gone.out.find("GroupIdNotFoundException"), std::string::npos) << gone.out;
  expect_same_as_kafka_tool("--describe --group " + group());
  expect_same_as_kafka_tool("--delete --group " + group());
}

TEST_P(groups_cli, kafka_tool_resets_and_deletes_what_tarn_consumed) {
  if (kafka_libs().empty()) GTEST_SKIP() << "java or the Kafka 4.4.0 jars are missing";
  create_topic(2);
  produce(0, records);
  auto consumed = run_split(tarn("consume --bootstrap-server " + bootstrap() + " --topic " +
                                 topic() + " --group " + group() +
                                 " --from-beginning --max-messages 30 --timeout-ms 60000"));
  ASSERT_EQ(consumed.code, 0) << consumed.err;
  // What Kafka's tool sees of the group tarn's consumer committed.
  auto theirs = kafka_groups("--describe --group " + group());
  ASSERT_EQ(theirs.code, 0) << theirs.out << theirs.err;
  auto rows = table(theirs.out);
  ASSERT_EQ(rows.size(), 2u) << theirs.out;
  EXPECT_EQ(sum(rows, "LAG"), 0);
  EXPECT_EQ(sum(rows, "CURRENT-OFFSET"), records);
  auto listed = kafka_groups("--list");
  EXPECT_NE(("\n" + listed.out).find("\n" + group() + "\n"), std::string::npos) << listed.out;
  // Kafka's tool resets, tarn's consumer starts there.
  auto reset = kafka_groups("--reset-offsets --group " + group() +
                            " --all-topics --to-offset 5 "
                            "--execute");
  ASSERT_EQ(reset.code, 0) << reset.out << reset.err;
  EXPECT_EQ(sum(table(reset.out), "NEW-OFFSET"), 10);
  EXPECT_EQ(sum(table(groups("--describe --group " + group()).out), "LAG"), records - 10);
  auto again = run_split(tarn("consume --bootstrap-server " + bootstrap() + " --topic " + topic() +
                              " --group " + group() + " --max-messages 20 --timeout-ms 60000"));
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(values(again.out).size(), 20u);
  auto deleted = kafka_groups("--delete --group " + group());
  EXPECT_EQ(deleted.out,
            "Deletion of requested consumer groups ('" + group() + "') was successful.\n");
  EXPECT_NE(groups("--describe --group " + group()).code, 0);
}

TEST_P(groups_cli, two_members_share_the_partitions) {
  create_topic(4);
  produce(0, records);
  auto member = [&](const std::string& client_id) {
    return run_tarn({"consume", "--bootstrap-server", bootstrap(), "--topic", topic(), "--group",
                     group(), "--from-beginning", "--consumer-property", "client.id=" + client_id,
                     "--consumer-property", "auto.commit.interval.ms=200", "--consumer-property",
                     "heartbeat.interval.ms=500"});
  };
  auto a = member("member-a");
  ASSERT_TRUE(a->wait_for_output("value-", event_timeout)) << a->output();
  auto b = member("member-b");
  // Both members in one stable generation, each with two partitions.
  std::vector<row> members;
  const auto deadline = clock_type::now() + event_timeout;
  while (clock_type::now() < deadline) {
    auto d = groups("--describe --group " + group() + " --members");
    members = table(d.out);
    if (members.size() == 2 && members[0].at("#PARTITIONS") == "2" &&
        members[1].at("#PARTITIONS") == "2") {
      break;
    }
    std::this_thread::sleep_for(200ms);
  }
  ASSERT_EQ(members.size(), 2u);
  std::set<std::string> clients;
  for (const auto& m : members) {
    clients.insert(m.at("CLIENT-ID"));
    EXPECT_EQ(m.at("#PARTITIONS"), "2");
    EXPECT_TRUE(m.at("CONSUMER-ID").starts_with(m.at("CLIENT-ID") + "-")) << m.at("CONSUMER-ID");
  }
  EXPECT_EQ(clients, (std::set<std::string>{"member-a", "member-b"}));
  auto state = table(groups("--describe --group " + group() + " --state").out);
  ASSERT_EQ(state.size(), 1u);
  EXPECT_EQ(state[0].at("STATE"), "Stable");
  EXPECT_EQ(state[0].at("ASSIGNMENT-STRATEGY"), "range");
  EXPECT_EQ(state[0].at("#MEMBERS"), "2");
  expect_same_as_kafka_tool("--describe --group " + group() + " --members --verbose");

  // Records produced now are read by the member owning their partition.
  produce(records, records);
  // An active group: no reset, no delete.
  auto refused = groups("--reset-offsets --group " + group() +
                        " --all-topics --to-earliest "
                        "--execute");
  EXPECT_EQ(refused.code, 1);
  EXPECT_NE(refused.out.find("Assignments can only be reset if the group '" + group() +
                             "' is inactive, but the current state is Stable."),
            std::string::npos)
      << refused.out;
  auto not_deleted = groups("--delete --group " + group());
  EXPECT_EQ(not_deleted.code, 1);
  EXPECT_NE(not_deleted.out.find("GroupNotEmptyException: The group is not empty."),
            std::string::npos)
      << not_deleted.out;
  expect_same_as_kafka_tool("--delete --group " + group());

  // Every record read, then both members stop on SIGTERM, committing and leaving.
  const auto all = expected_values(0, 2 * records);
  const auto read_deadline = clock_type::now() + event_timeout;
  std::set<std::string> seen;
  while (clock_type::now() < read_deadline) {
    seen.clear();
    for (const auto& v : values(a->output())) seen.insert(v);
    for (const auto& v : values(b->output())) seen.insert(v);
    if (seen.size() == all.size()) break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(seen, std::set<std::string>(all.begin(), all.end()));
  a->send_signal(SIGTERM);
  b->send_signal(SIGTERM);
  auto sa = a->wait_exit(event_timeout);
  auto sb = b->wait_exit(event_timeout);
  ASSERT_TRUE(sa && sb);
  EXPECT_EQ(sa->code, 0) << a->output();
  EXPECT_EQ(sb->code, 0) << b->output();
  EXPECT_NE(a->output().find("Processed a total of"), std::string::npos);
  auto final_rows = table(groups("--describe --group " + group()).out);
  ASSERT_EQ(final_rows.size(), 4u);
  EXPECT_EQ(sum(final_rows, "LAG"), 0);
  EXPECT_EQ(sum(final_rows, "CURRENT-OFFSET"), 2 * records);
  auto empty = table(groups("--describe --group " + group() + " --state").out);
  ASSERT_EQ(empty.size(), 1u);
  EXPECT_EQ(empty[0].at("STATE"), "Empty");
  EXPECT_EQ(empty[0].at("#MEMBERS"), "0");
}

INSTANTIATE_TEST_SUITE_P(brokers, groups_cli,
                         ::testing::Values(broker_kind::tarn, broker_kind::kafka), kind_name);

}  // namespace
}  // namespace tarn::test
