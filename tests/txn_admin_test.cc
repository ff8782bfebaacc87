// The transaction admin APIs against the real `tarn serve`: Kafka 4.4.0's own
// kafka-transactions.sh (TransactionsCommand: list, describe, describe-producers, find-hanging,
// abort) while a confluent-kafka producer (tests/python/txn_clients.py) holds a transaction open;
// hand-built DescribeTransactions, ListTransactions, DescribeProducers and WriteTxnMarkers
// requests for their error branches; and transactional.id.expiration.ms with small values (the
// tombstone outlives a restart). Kafka 4.4.0's answers to the same requests are compared field by
// field in `make interop` (scripts/interop_lib/txn_admin_scenarios.py).
#include <gtest/gtest.h>

#include <chrono>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "kafka_conn.h"
#include "kafka_ref_broker.h"
#include "protocol/messages/create_topics_request.h"
#include "protocol/messages/create_topics_response.h"
#include "protocol/messages/describe_producers_request.h"
#include "protocol/messages/describe_producers_response.h"
#include "protocol/messages/describe_transactions_request.h"
#include "protocol/messages/describe_transactions_response.h"
#include "protocol/messages/init_producer_id_request.h"
#include "protocol/messages/init_producer_id_response.h"
#include "protocol/messages/list_transactions_request.h"
#include "protocol/messages/list_transactions_response.h"
#include "protocol/messages/write_txn_markers_request.h"
#include "protocol/messages/write_txn_markers_response.h"
#include "test_util.h"

namespace tarn::test {
namespace {

using namespace std::chrono_literals;

const char* python = "/usr/bin/python3";  // Debian's, with confluent_kafka

std::string script() { return std::string(TARN_SOURCE_DIR) + "/tests/python/txn_clients.py"; }

bool have_confluent_kafka() {
  return run_command(std::string(python) + " -c 'import confluent_kafka'").first == 0;
}

// The whitespace-separated fields of the first line of `out` whose first field is `first`.
std::vector<std::string> row(const std::string& out, const std::string& first) {
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::vector<std::string> fields;
    for (std::string w; words >> w;) fields.push_back(w);
    if (!fields.empty() && fields[0] == first) return fields;
  }
  return {};
}

// kafka-transactions.sh against `port`.
std::pair<int, std::string> transactions_tool(uint16_t port, const std::string& args) {
  return run_command("timeout 60 " + std::string(TARN_SOURCE_DIR) +
                     "/scripts/kafka-ref tool org.apache.kafka.tools.TransactionsCommand "
                     "--bootstrap-server 127.0.0.1:" +
                     std::to_string(port) + " " + args + " 2>&1");
}

TEST(txn_admin, kafka_transactions_tool_lists_describes_and_aborts_an_open_transaction) {
  if (!have_confluent_kafka()) GTEST_SKIP() << "confluent_kafka not installed";
  if (kafka_libs().empty()) GTEST_SKIP() << "java or the Kafka 4.4.0 jars are missing";
  broker_process broker({"--override", "transaction.state.log.num.partitions=4"});
  ASSERT_NE(broker.port(), 0) << broker.output();
  const std::string bootstrap = "127.0.0.1:" + std::to_string(broker.port());
  auto [rc, out] = run_command("timeout 60 " + std::string(python) + " " + script() + " setup " +
                               bootstrap + " t 1 2>&1");
  ASSERT_EQ(rc, 0) << out;
  // Three records in an open transaction at offsets 0-2 (a 10-minute transaction timeout).
  child_process hung({python, script(), "hang", bootstrap, "t", "hung", "3", "600000"});
  ASSERT_TRUE(hung.wait_for_output("open", 60s)) << hung.output();

  std::tie(rc, out) = transactions_tool(broker.port(), "list");
  ASSERT_EQ(rc, 0) << out;
  // TransactionalId Coordinator ProducerId TransactionState
  auto listed = row(out, "hung");
  ASSERT_EQ(listed.size(), 4u) << out;
  EXPECT_EQ(listed[1], "1");
  EXPECT_EQ(listed[3], "Ongoing");
  const std::string producer_id = listed[2];

  std::tie(rc, out) = transactions_tool(broker.port(), "describe --transactional-id hung");
  ASSERT_EQ(rc, 0) << out;
  // CoordinatorId TransactionalId ProducerId ProducerEpoch TransactionState TransactionTimeoutMs
  // CurrentTransactionStartTimeMs TransactionDurationMs TopicPartitions
  auto described = row(out, "1");
  ASSERT_EQ(described.size(), 9u) << out;
  EXPECT_EQ(described[1], "hung");
  EXPECT_EQ(described[2], producer_id);
  EXPECT_EQ(described[3], "0");
  EXPECT_EQ(described[4], "Ongoing");
  EXPECT_EQ(described[5], "600000");
  EXPECT_GT(std::stoll(described[6]), 0);
  EXPECT_EQ(described[8], "t-0");

  // ProducerId ProducerEpoch LatestCoordinatorEpoch LastSequence LastTimestamp
  // CurrentTransactionStartOffset
  std::tie(rc, out) =
      transactions_tool(broker.port(), "describe-producers --topic t --partition 0");
  ASSERT_EQ(rc, 0) << out;
  auto producer = row(out, producer_id);
  ASSERT_EQ(producer.size(), 6u) << out;
  EXPECT_EQ(producer[1], "0");
  EXPECT_EQ(producer[2], "-1");  // no marker yet
  EXPECT_EQ(producer[3], "2");
  EXPECT_GT(std::stoll(producer[4]), 0);
  EXPECT_EQ(producer[5], "0");

  // The coordinator still knows the transaction as Ongoing with this partition: not hanging
  // (the header "Topic Partition ProducerId ..." and no row).
  std::tie(rc, out) = transactions_tool(
      broker.port(), "find-hanging --broker-id 1 --max-transaction-timeout 0 --topic t");
  ASSERT_EQ(rc, 0) << out;
  EXPECT_EQ(row(out, "Topic").size(), 8u) << out;
  EXPECT_EQ(row(out, "t"), std::vector<std::string>{}) << out;

  // The producer dies; the admin aborts its transaction in the partition (DescribeProducers,
  // then WriteTxnMarkers with its producer id and epoch): the ABORT marker at offset 3.
  hung.send_signal(SIGKILL);
  hung.wait_exit(10s);
  std::tie(rc, out) =
      transactions_tool(broker.port(), "abort --topic t --partition 0 --start-offset 0");
  ASSERT_EQ(rc, 0) << out;
  std::tie(rc, out) =
      transactions_tool(broker.port(), "describe-producers --topic t --partition 0");
  ASSERT_EQ(rc, 0) << out;
  producer = row(out, producer_id);
  ASSERT_EQ(producer.size(), 6u) << out;
  EXPECT_EQ(producer[2], "0");     // the marker's coordinator epoch
  EXPECT_EQ(producer[5], "None");  // no open transaction left
}

TEST(txn_admin, hand_built_requests_answer_kafkas_errors) {
  broker_process broker({"--override", "transaction.state.log.num.partitions=4"});
  ASSERT_NE(broker.port(), 0) << broker.output();
  kafka_conn c(broker.port(), nullptr);
  ASSERT_TRUE(c.connected());
  {
    protocol::create_topics_request req;
    protocol::create_topics_request::creatable_topic t;
    t.name = "t";
    t.num_partitions = 1;
    t.replication_factor = 1;
    req.topics.push_back(t);
    auto r = c.call<protocol::create_topics_response>(req, 7);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->topics.at(0).error_code, 0);
  }
  {
    protocol::init_producer_id_request req;
    req.transactional_id = std::string_view("tx");
    req.transaction_timeout_ms = 60000;
    auto r = c.call<protocol::init_producer_id_response>(req, 4);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->error_code, 0);
  }
  {
    protocol::describe_transactions_request req;
    req.transactional_ids = {"tx", "", "unknown"};
    auto r = c.call<protocol::describe_transactions_response>(req, 0);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->transaction_states.size(), 3u);
    EXPECT_EQ(r->transaction_states[0].error_code, 0);
    EXPECT_EQ(r->transaction_states[0].transaction_state, "Empty");
    EXPECT_EQ(r->transaction_states[0].producer_epoch, 0);
    EXPECT_EQ(r->transaction_states[0].transaction_timeout_ms, 60000);
    EXPECT_EQ(r->transaction_states[0].transaction_start_time_ms, -1);
    EXPECT_EQ(r->transaction_states[1].error_code, 42);   // INVALID_REQUEST
    EXPECT_EQ(r->transaction_states[2].error_code, 105);  // TRANSACTIONAL_ID_NOT_FOUND
    EXPECT_EQ(r->transaction_states[2].transactional_id, "unknown");
    EXPECT_EQ(r->transaction_states[2].transaction_state, "");
  }
  for (int16_t v = 0; v <= 2; ++v) {
    protocol::list_transactions_request req;
    req.state_filters = {"Empty", "Nope"};
    auto r = c.call<protocol::list_transactions_response>(req, v);
    ASSERT_TRUE(r) << v;
    EXPECT_EQ(r->error_code, 0);
    EXPECT_EQ(r->unknown_state_filters, std::vector<std::string_view>{"Nope"});
    ASSERT_EQ(r->transaction_states.size(), 1u);
    EXPECT_EQ(r->transaction_states[0].transactional_id, "tx");
  }
  {
    protocol::list_transactions_request req;
    req.transactional_id_pattern = std::string_view("t(");
    auto r = c.call<protocol::list_transactions_response>(req, 2);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->error_code, 128);  // INVALID_REGULAR_EXPRESSION
    EXPECT_TRUE(r->transaction_states.empty());
  }
  {
    // A 30000-byte transactional id and patterns that a backtracking engine would overflow its
    // stack or run for hours on: RE2 (as Kafka's re2j) matches them in linear time.
    const std::string long_id(30000, 't');
    protocol::init_producer_id_request init;
    init.transactional_id = std::string_view(long_id);
    init.transaction_timeout_ms = 60000;
    auto created = c.call<protocol::init_producer_id_response>(init, 4);
    ASSERT_TRUE(created);
    ASSERT_EQ(created->error_code, 0);
    protocol::list_transactions_request req;
    req.transactional_id_pattern = std::string_view("t.*");
    auto r = c.call<protocol::list_transactions_response>(req, 2);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->error_code, 0);
    ASSERT_EQ(r->transaction_states.size(), 2u);
    EXPECT_EQ(r->transaction_states[0].transactional_id, long_id);
    EXPECT_EQ(r->transaction_states[1].transactional_id, "tx");
    req.transactional_id_pattern = std::string_view("(t*)*x");
    r = c.call<protocol::list_transactions_response>(req, 2);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->error_code, 0);
    ASSERT_EQ(r->transaction_states.size(), 1u);
    EXPECT_EQ(r->transaction_states[0].transactional_id, "tx");
  }
  {
    // Running longer than a day: none (v1's DurationFilter); the Empty id's start is -1.
    protocol::list_transactions_request req;
    req.state_filters = {"Ongoing"};
    req.duration_filter = 86400000;
    auto r = c.call<protocol::list_transactions_response>(req, 1);
    ASSERT_TRUE(r);
    EXPECT_TRUE(r->transaction_states.empty());
  }
  ASSERT_TRUE(c.raw().connected());
  {
    protocol::describe_producers_request req;
    req.topics.push_back({"bad name!", {0}});
    req.topics.push_back({"missing", {0, 1}});
    req.topics.push_back({"t", {0, 9}});
    auto r = c.call<protocol::describe_producers_response>(req, 0);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->topics.size(), 3u);
    EXPECT_EQ(r->topics[0].partitions[0].error_code, 17);  // INVALID_TOPIC_EXCEPTION
    EXPECT_TRUE(r->topics[0].partitions[0].error_message.has_value());
    ASSERT_EQ(r->topics[1].partitions.size(), 2u);
    EXPECT_EQ(r->topics[1].partitions[1].error_code, 3);  // UNKNOWN_TOPIC_OR_PARTITION
    EXPECT_EQ(r->topics[1].partitions[1].error_message,
              std::optional<std::string_view>("This server does not host this topic-partition."));
    EXPECT_EQ(r->topics[2].partitions[0].error_code, 0);
    EXPECT_TRUE(r->topics[2].partitions[0].active_producers.empty());
    EXPECT_EQ(r->topics[2].partitions[1].error_code, 3);  // no such partition: no message
    EXPECT_FALSE(r->topics[2].partitions[1].error_message.has_value());
  }
  for (int16_t v = 1; v <= 2; ++v) {
    // A COMMIT for producer 77 into t-0 (no transaction of it there: a marker all the same), one
    // for a partition that does not exist, then an older producer epoch and an older
    // coordinator epoch for the same producer.
    protocol::write_txn_markers_request req;
    protocol::write_txn_markers_request::writable_txn_marker m;
    m.producer_id = 77;
    m.producer_epoch = 3;
    m.transaction_result = true;
    m.coordinator_epoch = 5 + v;
    m.topics.push_back({"t", {0}});
    m.topics.push_back({"missing", {2}});
    req.markers.push_back(m);
    auto r = c.call<protocol::write_txn_markers_response>(req, v);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->markers.size(), 1u);
    EXPECT_EQ(r->markers[0].producer_id, 77);
    ASSERT_EQ(r->markers[0].topics.size(), 2u);  // by name
    EXPECT_EQ(r->markers[0].topics[0].name, "missing");
    EXPECT_EQ(r->markers[0].topics[0].partitions[0].error_code, 3);  // UNKNOWN_TOPIC_OR_PARTITION
    EXPECT_EQ(r->markers[0].topics[1].name, "t");
    EXPECT_EQ(r->markers[0].topics[1].partitions[0].error_code, 0);
    req.markers[0].topics.pop_back();
    req.markers[0].producer_epoch = 2;
    r = c.call<protocol::write_txn_markers_response>(req, v);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->markers[0].topics[0].partitions[0].error_code, 47);  // INVALID_PRODUCER_EPOCH
    req.markers[0].producer_epoch = 3;
    req.markers[0].coordinator_epoch = 4;
    r = c.call<protocol::write_txn_markers_response>(req, v);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->markers[0].topics[0].partitions[0].error_code,
              52);  // TRANSACTION_COORDINATOR_FENCED
  }
  {
    protocol::describe_producers_request req;
    req.topics.push_back({"t", {0}});
    auto r = c.call<protocol::describe_producers_response>(req, 0);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->topics[0].partitions[0].active_producers.size(), 1u);
    const auto& p = r->topics[0].partitions[0].active_producers[0];
    EXPECT_EQ(p.producer_id, 77);
    EXPECT_EQ(p.producer_epoch, 3);
    EXPECT_EQ(p.coordinator_epoch, 7);  // the v2 marker's
    EXPECT_EQ(p.last_sequence, -1);
    EXPECT_EQ(p.current_txn_start_offset, -1);
  }
}

TEST(txn_admin, an_idle_transactional_id_expires_and_stays_expired_after_a_restart) {
  temp_dir dir;
  const std::vector<std::string> args = {
      "--override", "transaction.state.log.num.partitions=4",
      "--override", "transactional.id.expiration.ms=1000",
      "--override", "transaction.remove.expired.transaction.cleanup.interval.ms=200"};
  auto describe = [](kafka_conn& c) {
    protocol::describe_transactions_request req;
    req.transactional_ids = {"idle"};
    auto r = c.call<protocol::describe_transactions_response>(req, 0);
    EXPECT_TRUE(r);
    return r ? r->transaction_states.at(0).error_code : int16_t{-1};
  };
  {
    broker_process broker(args, dir.path() / "data");
    ASSERT_NE(broker.port(), 0) << broker.output();
    kafka_conn c(broker.port(), nullptr);
    protocol::init_producer_id_request req;
    req.transactional_id = std::string_view("idle");
    req.transaction_timeout_ms = 60000;
    auto r = c.call<protocol::init_producer_id_response>(req, 4);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->error_code, 0);
    EXPECT_EQ(describe(c), 0);
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (describe(c) == 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(100ms);
    }
    EXPECT_EQ(describe(c), 105);  // TRANSACTIONAL_ID_NOT_FOUND
    // The broker's log reaches this process through a pipe a moment after the removal shows.
    EXPECT_TRUE(broker.process().wait_for_output("removed 1 transactional id(s)", 10s))
        << broker.output();
    broker.process().send_signal(SIGKILL);
    broker.process().wait_exit(15s);
  }
  // The tombstone in __transaction_state keeps it gone after a restart.
  broker_process again(args, dir.path() / "data");
  ASSERT_NE(again.port(), 0) << again.output();
  kafka_conn c(again.port(), nullptr);
  EXPECT_EQ(describe(c), 105);
}

}  // namespace
}  // namespace tarn::test
