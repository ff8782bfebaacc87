// Transactions end to end with confluent-kafka (librdkafka 2.0, tests/python/txn_clients.py),
// against the real `tarn serve` and against Apache Kafka 4.4.0 (scripts/kafka-ref) with the same
// expectations:
//   - a transactional producer commits and aborts; a read_committed consumer sees exactly the
//     committed records at the offsets Kafka gives them (the markers take one offset each), a
//     read_uncommitted one sees all of them;
//   - a second producer with the same transactional.id fences the first (its commit fails,
//     fatal _FENCED), its open transaction is aborted, the second commits;
//   - a producer SIGKILLed inside a transaction: the broker aborts it after
//     transaction.timeout.ms, and a later committed record becomes readable;
//   - consume-transform-produce (send_offsets_to_transaction: AddOffsetsToTxn, TxnOffsetCommit):
//     the group's offsets move only when the transaction commits; the same with the Java
//     KafkaProducer/KafkaConsumer 4.4.0 (tests/java/TxnCheck.java);
//   - InitProducerId with a timeout above transaction.max.timeout.ms: INVALID_TRANSACTION_TIMEOUT.
// And tarn only: committed, aborted and open transactions survive a SIGKILL of the broker
// (__transaction_state, the producer state, .txnindex), and so do offsets committed by a
// transaction (pending TxnOffsetCommit records and their marker in __consumer_offsets).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "kafka_conn.h"
#include "kafka_ref_broker.h"
#include "protocol/messages/add_offsets_to_txn_request.h"
#include "protocol/messages/add_offsets_to_txn_response.h"
#include "protocol/messages/end_txn_request.h"
#include "protocol/messages/end_txn_response.h"
#include "protocol/messages/find_coordinator_request.h"
#include "protocol/messages/find_coordinator_response.h"
#include "protocol/messages/init_producer_id_request.h"
#include "protocol/messages/init_producer_id_response.h"
#include "protocol/messages/offset_fetch_request.h"
#include "protocol/messages/offset_fetch_response.h"
#include "protocol/messages/txn_offset_commit_request.h"
#include "protocol/messages/txn_offset_commit_response.h"
#include "test_util.h"

namespace tarn::test {
namespace {

using namespace std::chrono_literals;

const char* python = "/usr/bin/python3";  // Debian's, with confluent_kafka

std::string script() { return std::string(TARN_SOURCE_DIR) + "/tests/python/txn_clients.py"; }

bool have_confluent_kafka() {
  return run_command(std::string(python) + " -c 'import confluent_kafka'").first == 0;
}

// What both brokers are started with: timed-out transactions looked for every 500 ms.
const char* abort_interval_key = "transaction.abort.timed.out.transaction.cleanup.interval.ms";

class transactions : public ::testing::TestWithParam<broker_kind> {
 protected:
  void SetUp() override {
    if (!have_confluent_kafka()) GTEST_SKIP() << "confluent_kafka not installed";
    if (auto skip = start_test_broker(
            GetParam(),
            {std::string(abort_interval_key) + "=500", "transaction.state.log.num.partitions=4"},
            tarn_, port_);
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
  std::string name(const std::string& n) const { return prefix_ + n; }
  std::pair<int, std::string> client(const std::string& args, int timeout_s = 60) const {
    return run_command("timeout " + std::to_string(timeout_s) + " " + python + " " + script() +
                       " " + args + " 2>&1");
  }
  void create(const std::string& topic, int partitions) const {
    auto [rc, out] =
        client("setup " + bootstrap() + " " + topic + " " + std::to_string(partitions));
    ASSERT_EQ(rc, 0) << out;
  }
  std::vector<std::string> consume(const std::string& topic, int partitions,
                                   const std::string& isolation) const {
    auto [rc, out] = client("consume " + bootstrap() + " " + topic + " " +
                            std::to_string(partitions) + " " + isolation + " 3000");
    EXPECT_EQ(rc, 0) << out;
    auto records = lines_with(out, "record ");
    std::sort(records.begin(), records.end());
    return records;
  }

  uint16_t port_ = 0;
  std::unique_ptr<broker_process> tarn_;
  std::string prefix_;
};

TEST_P(transactions, read_committed_sees_exactly_the_committed_records_at_kafkas_offsets) {
  const std::string topic = name("t");
  create(topic, 2);
  auto [rc, out] = client("run " + bootstrap() + " " + topic + " " + name("tx") + " c5,a3,c2");
  ASSERT_EQ(rc, 0) << out;
  EXPECT_EQ(lines_with(out, "committed ").size(), 2u) << out;
  EXPECT_EQ(lines_with(out, "aborted ").size(), 1u) << out;
  // Round robin over two partitions: partition 0 gets 0-0,0-2,0-4 (offsets 0-2, COMMIT at 3),
  // 1-1-a (4, ABORT at 5), 2-0-c (6, COMMIT at 7); partition 1 0-1,0-3 (0-1, COMMIT at 2),
  // 1-0-a,1-2-a (3-4, ABORT at 5), 2-1-c (6, COMMIT at 7).
  const std::vector<std::string> committed = {
      "record 0 0 0-0-c", "record 0 1 0-2-c", "record 0 2 0-4-c", "record 0 6 2-0-c",
      "record 1 0 0-1-c", "record 1 1 0-3-c", "record 1 6 2-1-c"};
  EXPECT_EQ(consume(topic, 2, "read_committed"), committed);
  const auto all = consume(topic, 2, "read_uncommitted");
  EXPECT_EQ(all.size(), 10u);
  EXPECT_EQ(lines_with(out, "done").size(), 1u);
}

TEST_P(transactions, a_second_producer_with_the_same_id_fences_the_first) {
  const std::string topic = name("t");
  create(topic, 1);
  auto [rc, out] = client("fence " + bootstrap() + " " + topic + " " + name("tx"), 120);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_EQ(lines_with(out, "a-commit-failed fatal _FENCED").size(), 1u) << out;
  EXPECT_EQ(lines_with(out, "b-committed").size(), 1u) << out;
  // fenced-a (offset 0) was aborted by the fence (ABORT at 1); fenced-b at 2.
  EXPECT_EQ(consume(topic, 1, "read_committed"), std::vector<std::string>{"record 0 2 fenced-b"});
}

TEST_P(transactions, a_transaction_of_a_killed_producer_is_aborted_after_its_timeout) {
  const std::string topic = name("t");
  create(topic, 1);
  child_process hung({python, script(), "hang", bootstrap(), topic, name("hung"), "3", "2000"});
  ASSERT_TRUE(hung.wait_for_output("open", 60s)) << hung.output();
  hung.send_signal(SIGKILL);
  hung.wait_exit(10s);
  auto [rc, out] = client("run " + bootstrap() + " " + topic + " " + name("later") + " c1");
  ASSERT_EQ(rc, 0) << out;
  // The hung transaction (offsets 0-2) holds the last stable offset at 0 until the broker
  // aborts it (2 s timeout, checked every 500 ms); then the later commit is readable.
  std::vector<std::string> seen;
  const auto deadline = std::chrono::steady_clock::now() + 30s;
  while (std::chrono::steady_clock::now() < deadline) {
    seen = consume(topic, 1, "read_committed");
    if (!seen.empty()) break;
  }
  ASSERT_EQ(seen.size(), 1u);
  // The hung records 0-2, the broker's ABORT at 3 or later: the commit after them.
  EXPECT_TRUE(seen[0].starts_with("record 0 ")) << seen[0];
  EXPECT_TRUE(seen[0].ends_with(" 0-0-c")) << seen[0];
}

TEST_P(transactions, consume_transform_produce_commits_offsets_only_with_its_transaction) {
  const std::string in = name("in"), out_topic = name("out"), group = name("g");
  create(in, 1);
  create(out_topic, 1);
  auto [rc, out] = client("produce " + bootstrap() + " " + in + " 5");
  ASSERT_EQ(rc, 0) << out;
  auto committed = [&] {
    auto [c, o] = client("committed " + bootstrap() + " " + in + " " + group);
    EXPECT_EQ(c, 0) << o;
    return lines_with(o, "committed ");
  };
  auto ctp = [&](const std::string& outcome) {
    auto [c, o] = client("ctp " + bootstrap() + " " + in + " " + out_topic + " " + group + " " +
                             name("tx") + " " + outcome,
                         90);
    EXPECT_EQ(c, 0) << o;
    return o;
  };
  // An aborted round: the offsets stay uncommitted (-1001: none) and its output is invisible.
  out = ctp("abort");
  EXPECT_EQ(lines_with(out, "consumed 5").size(), 1u) << out;
  EXPECT_EQ(committed(), std::vector<std::string>{"committed 0 -1001"});
  EXPECT_TRUE(consume(out_topic, 1, "read_committed").empty());
  // A committed one: the group's offset is the end of the input, the output readable (after
  // the aborted five and their ABORT: offsets 6-10).
  out = ctp("commit");
  EXPECT_EQ(lines_with(out, "consumed 5").size(), 1u) << out;
  EXPECT_EQ(committed(), std::vector<std::string>{"committed 0 5"});
  EXPECT_EQ(consume(out_topic, 1, "read_committed"),
            (std::vector<std::string>{"record 0 10 IN-4", "record 0 6 IN-0", "record 0 7 IN-1",
                                      "record 0 8 IN-2", "record 0 9 IN-3"}));
}

TEST_P(transactions, java_consume_transform_produce_is_exactly_once) {
  if (kafka_libs().empty()) GTEST_SKIP() << "java or the Kafka 4.4.0 jars are missing";
  auto [rc, out] =
      run_command("timeout 150 java -cp '" + kafka_libs() + "/*' " + std::string(TARN_SOURCE_DIR) +
                  "/tests/java/TxnCheck.java " + bootstrap() + " " + name("in") + " " +
                  name("out") + " " + name("g") + " " + name("tx") + " 2>&1");
  ASSERT_EQ(rc, 0) << out;
  EXPECT_EQ(lines_with(out, "aborted "), std::vector<std::string>{"aborted 10"}) << out;
  EXPECT_EQ(lines_with(out, "committed "), std::vector<std::string>{"committed 10"}) << out;
  // The aborted ten at 0-9, their ABORT at 10; the committed ten at 11-20, read once each.
  std::vector<std::string> want;
  for (int i = 0; i < 10; ++i)
    want.push_back("out " + std::to_string(11 + i) + " V" + std::to_string(i));
  EXPECT_EQ(lines_with(out, "out "), want) << out;
  EXPECT_EQ(lines_with(out, "offset "), std::vector<std::string>{"offset 10"}) << out;
}

TEST_P(transactions, a_timeout_above_the_maximum_is_invalid_transaction_timeout) {
  kafka_conn c(port_, nullptr);
  ASSERT_TRUE(c.connected());
  const std::string id = name("tx");
  for (int16_t v : {0, 3, 4, 5}) {
    protocol::init_producer_id_request req;
    req.transactional_id = std::string_view(id);
    req.transaction_timeout_ms = 900001;  // transaction.max.timeout.ms is 900000
    auto r = c.call<protocol::init_producer_id_response>(req, v);
    ASSERT_TRUE(r) << "v" << v;
    EXPECT_EQ(r->error_code, 50) << "v" << v;  // INVALID_TRANSACTION_TIMEOUT
    EXPECT_EQ(r->producer_id, -1);
    EXPECT_EQ(r->producer_epoch, -1);
  }
}

// OffsetFetch with RequireStable (v7+, what Kafka Streams and the Java consumer under
// exactly-once ask): a partition whose offset an open transaction has committed answers
// UNSTABLE_OFFSET_COMMIT (retriable) until the transaction ends; without RequireStable the
// offset before the transaction. Hand-built requests, so the error is seen as the broker sends it.
TEST_P(transactions, offset_fetch_require_stable_waits_for_the_transaction) {
  const std::string topic = name("t"), group = name("g"), txn = name("tx");
  create(topic, 1);
  kafka_conn c(port_, nullptr);
  ASSERT_TRUE(c.connected());
  // Calls `once` until it gives something but a retriable coordinator error (the transaction
  // coordinator may still be loading, a marker still being written).
  auto retry = [](auto once) {
    int16_t e = -1;
    for (int i = 0; i < 300; ++i) {
      e = once();
      if (e != 14 && e != 15 && e != 16 && e != 51) break;  // LOAD_IN_PROGRESS, NOT_AVAILABLE,
      std::this_thread::sleep_for(100ms);                   // NOT_COORDINATOR, CONCURRENT
    }
    return e;
  };
  // As a producer does: FindCoordinator first (Kafka creates __transaction_state on it and
  // answers NOT_COORDINATOR to transaction requests before), for the transaction, then the group.
  for (auto [key, type] : {std::pair<std::string, int8_t>{txn, 1}, {group, 0}}) {
    protocol::find_coordinator_request find;
    find.key = key;
    find.key_type = type;
    ASSERT_EQ(retry([&] {
                auto r = c.call<protocol::find_coordinator_response>(find, 3);
                return r ? r->error_code : int16_t{-2};
              }),
              0);
  }
  protocol::init_producer_id_request init;
  init.transactional_id = std::string_view(txn);
  init.transaction_timeout_ms = 60000;
  int64_t pid = -1;
  int16_t epoch = -1;
  ASSERT_EQ(retry([&] {
              auto r = c.call<protocol::init_producer_id_response>(init, 4);
              if (!r) return int16_t{-2};
              pid = r->producer_id;
              epoch = r->producer_epoch;
              return r->error_code;
            }),
            0);
  protocol::add_offsets_to_txn_request add;
  add.transactional_id = txn;
  add.producer_id = pid;
  add.producer_epoch = epoch;
  add.group_id = group;
  ASSERT_EQ(retry([&] {
              auto r = c.call<protocol::add_offsets_to_txn_response>(add, 3);
              return r ? r->error_code : int16_t{-2};
            }),
            0);
  protocol::txn_offset_commit_request commit;
  commit.transactional_id = txn;
  commit.group_id = group;
  commit.producer_id = pid;
  commit.producer_epoch = epoch;
  commit.topics.emplace_back();
  commit.topics[0].name = topic;
  commit.topics[0].partitions.emplace_back();
  commit.topics[0].partitions[0].partition_index = 0;
  commit.topics[0].partitions[0].committed_offset = 42;
  ASSERT_EQ(retry([&] {
              auto r = c.call<protocol::txn_offset_commit_response>(commit, 3);
              if (!r || r->topics.size() != 1 || r->topics[0].partitions.size() != 1) {
                return int16_t{-2};
              }
              return r->topics[0].partitions[0].error_code;
            }),
            0);

  // {error code, offset} of the group's partition 0, asked at `version` (8: the groups layout)
  // for the partition by name, or for all of the group's partitions (`all`).
  auto fetch = [&](int16_t version, bool require_stable, bool all) -> std::pair<int, int64_t> {
    protocol::offset_fetch_request req;
    req.require_stable = require_stable;
    std::vector<int32_t> partitions = {0};
    if (version < 8) {
      req.group_id = group;
      if (!all) {
        req.topics.emplace();
        req.topics->emplace_back();
        req.topics->back().name = topic;
        req.topics->back().partition_indexes = partitions;
      }
    } else {
      req.groups.emplace_back();
      req.groups[0].group_id = group;
      if (!all) {
        req.groups[0].topics.emplace();
        req.groups[0].topics->emplace_back();
        req.groups[0].topics->back().name = topic;
        req.groups[0].topics->back().partition_indexes = partitions;
      }
    }
    auto r = c.call<protocol::offset_fetch_response>(req, version);
    if (!r) return {-2, -2};
    if (version < 8) {
      if (r->topics.empty()) return {r->error_code, -3};
      const auto& p = r->topics[0].partitions.at(0);
      return {p.error_code, p.committed_offset};
    }
    if (r->groups.size() != 1 || r->groups[0].error_code != 0) return {-4, -4};
    if (r->groups[0].topics.empty()) return {0, -3};  // nothing listed
    const auto& p = r->groups[0].topics[0].partitions.at(0);
    return {p.error_code, p.committed_offset};
  };
  // Open: stable reads are refused with UNSTABLE_OFFSET_COMMIT (88), others see no offset yet.
  EXPECT_EQ(fetch(7, true, false), (std::pair<int, int64_t>{88, -1}));
  EXPECT_EQ(fetch(8, true, false), (std::pair<int, int64_t>{88, -1}));
  EXPECT_EQ(fetch(9, true, false), (std::pair<int, int64_t>{88, -1}));
  EXPECT_EQ(fetch(8, false, false), (std::pair<int, int64_t>{0, -1}));
  EXPECT_EQ(fetch(6, true, false), (std::pair<int, int64_t>{0, -1}));  // v6 has no RequireStable
  EXPECT_EQ(fetch(8, true, true), (std::pair<int, int64_t>{0, -3}));   // all: nothing committed

  protocol::end_txn_request end;
  end.transactional_id = txn;
  end.producer_id = pid;
  end.producer_epoch = epoch;
  end.committed = true;
  ASSERT_EQ(retry([&] {
              auto r = c.call<protocol::end_txn_response>(end, 3);
              return r ? r->error_code : int16_t{-2};
            }),
            0);
  // The COMMIT marker reaches __consumer_offsets a moment after EndTxn answers (Kafka writes it
  // after PrepareCommit): stable reads turn from 88 to the offset then.
  std::pair<int, int64_t> stable;
  for (int i = 0; i < 100; ++i) {
    stable = fetch(8, true, false);
    if (stable.first != 88) break;
    std::this_thread::sleep_for(100ms);
  }
  EXPECT_EQ(stable, (std::pair<int, int64_t>{0, 42}));
  EXPECT_EQ(fetch(7, true, false), (std::pair<int, int64_t>{0, 42}));
  EXPECT_EQ(fetch(8, true, true), (std::pair<int, int64_t>{0, 42}));
}

INSTANTIATE_TEST_SUITE_P(brokers, transactions,
                         ::testing::Values(broker_kind::tarn, broker_kind::kafka), kind_name);

TEST(transactions_restart, committed_aborted_and_open_transactions_survive_a_broker_sigkill) {
  if (!have_confluent_kafka()) GTEST_SKIP() << "confluent_kafka not installed";
  temp_dir dir;
  const auto data = dir.path() / "data";
  const std::vector<std::string> args = {"--override", "transaction.state.log.num.partitions=4"};
  auto run = [](uint16_t port, const std::string& mode, const std::string& rest) {
    return run_command("timeout 60 " + std::string(python) + " " + script() + " " + mode +
                       " 127.0.0.1:" + std::to_string(port) + " " + rest + " 2>&1");
  };
  const std::vector<std::string> committed = {"record 0 0 0-0-c", "record 0 1 0-1-c"};
  {
    broker_process broker(args, data);
    ASSERT_NE(broker.port(), 0) << broker.output();
    auto [rc, out] = run(broker.port(), "setup", "t 1");
    ASSERT_EQ(rc, 0) << out;
    std::tie(rc, out) = run(broker.port(), "run", "t tx c2,a2");  // 0-1, COMMIT 2, 3-4, ABORT 5
    ASSERT_EQ(rc, 0) << out;
    // An open transaction (offsets 6-8), its producer killed; a long timeout keeps it open.
    child_process hung({python, script(), "hang", "127.0.0.1:" + std::to_string(broker.port()), "t",
                        "hung", "3", "600000"});
    ASSERT_TRUE(hung.wait_for_output("open", 60s)) << hung.output();
    hung.send_signal(SIGKILL);
    hung.wait_exit(10s);
    broker.process().send_signal(SIGKILL);
    broker.process().wait_exit(15s);
  }
  // The abort is indexed in Kafka's format: one 34-byte entry.
  EXPECT_EQ(std::filesystem::file_size(data / "t-0" / "00000000000000000000.txnindex"), 34u);
  broker_process broker(args, data);
  ASSERT_NE(broker.port(), 0) << broker.output();
  // To the end (txn_clients.py's at_end): the high watermark, or `end` while a transaction is
  // open.
  auto consume = [&](const std::string& isolation, const std::string& end = "") {
    auto [rc, out] = run(broker.port(), "consume", "t 1 " + isolation + " 3000 " + end);
    EXPECT_EQ(rc, 0) << out;
    auto records = lines_with(out, "record ");
    std::sort(records.begin(), records.end());
    return records;
  };
  // The open transaction still holds the last stable offset at 6.
  EXPECT_EQ(consume("read_committed", "6"), committed);
  EXPECT_EQ(consume("read_uncommitted").size(), 7u);
  // A new producer with the hung one's id: its InitProducerId aborts the open transaction
  // (ABORT at 9), and its own commit (10, COMMIT at 11) is readable after.
  auto [rc, out] = run(broker.port(), "run", "t hung c1");
  ASSERT_EQ(rc, 0) << out;
  auto after = committed;
  after.push_back("record 0 10 0-0-c");
  EXPECT_EQ(consume("read_committed"), after);
  EXPECT_EQ(std::filesystem::file_size(data / "t-0" / "00000000000000000000.txnindex"), 68u);

  // Offsets committed by a transaction (pending until the marker in __consumer_offsets) are
  // rebuilt by the replay after another SIGKILL; those of an aborted one are not.
  std::tie(rc, out) = run(broker.port(), "setup", "out 1");
  ASSERT_EQ(rc, 0) << out;
  std::tie(rc, out) = run(broker.port(), "ctp", "t out g ctp commit");
  ASSERT_EQ(rc, 0) << out;
  std::tie(rc, out) = run(broker.port(), "ctp", "t out g2 ctp2 abort");
  ASSERT_EQ(rc, 0) << out;
  broker.process().send_signal(SIGKILL);
  broker.process().wait_exit(15s);
  broker_process again(args, data);
  ASSERT_NE(again.port(), 0) << again.output();
  std::tie(rc, out) = run(again.port(), "committed", "t g");
  EXPECT_EQ(lines_with(out, "committed "), std::vector<std::string>{"committed 0 12"}) << out;
  std::tie(rc, out) = run(again.port(), "committed", "t g2");
  EXPECT_EQ(lines_with(out, "committed "), std::vector<std::string>{"committed 0 -1001"}) << out;
}

}  // namespace
}  // namespace tarn::test
