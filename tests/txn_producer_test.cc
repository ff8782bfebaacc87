// tarn's producer library with transactions (include/tarn/producer.h: transactional.id,
// init_transactions, begin/commit/abort_transaction, send_offsets_to_transaction) against the
// real `tarn serve`, read back by kcat with isolation.level=read_committed and read_uncommitted:
//   - committed records are visible, aborted ones are not (and read_uncommitted sees both);
//   - a second producer with the same transactional.id fences the first: its commit fails
//     fatal (PRODUCER_FENCED or INVALID_PRODUCER_EPOCH) and its open transaction is aborted;
//   - send_offsets_to_transaction moves the group's offset when the transaction commits only;
//   - a record the broker refuses (MESSAGE_TOO_LARGE for one record) makes the transaction
//     abortable: commit fails, abort succeeds and the next transaction commits;
//   - calls out of order fail with invalid_state, a producer without transactional.id refuses
//     the transaction calls.
// And once against Apache Kafka 4.4.0 (scripts/kafka-ref): commits, an abort and offsets over
// several transactions of one producer, read back the same way (Kafka 4.4 runs transactions v2
// for a client that sends EndTxn v5: the client stays at v1, so its second transaction is not
// fenced).
// kcat is needed (installed by scripts/install-deps); the tests skip without it.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "client/group_admin.h"
#include "kafka_ref_broker.h"
#include "protocol/error_codes.h"
#include "tarn/consumer.h"
#include "tarn/producer.h"
#include "test_util.h"

namespace tarn::test {
namespace {

using client::producer;
using client::producer_errc;
using client::producer_record;
using protocol::error_code;

std::string address(uint16_t port) { return "127.0.0.1:" + std::to_string(port); }

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

class txn_producer : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!have_program("kcat")) GTEST_SKIP() << "kcat not installed";
    broker_ = std::make_unique<broker_process>(
        std::vector<std::string>{"--override", "transaction.state.log.num.partitions=2",
                                 "--override", "offsets.topic.num.partitions=2"});
    ASSERT_NE(broker_->port(), 0) << broker_->output();
  }
  void TearDown() override {
    if (broker_) broker_->stop();
  }

  void create_topic(const std::string& topic, int partitions,
                    const std::vector<std::string>& configs = {}) {
    std::string command = std::string(TARN_BINARY) + " topics --bootstrap-server " +
                          address(broker_->port()) + " --create --topic " + topic +
                          " --partitions " + std::to_string(partitions);
    for (const auto& c : configs) command += " --config " + c;
    auto [rc, out] = run_command("timeout 30 " + command);
    ASSERT_EQ(rc, 0) << command << ": " << out;
  }

  std::unique_ptr<producer> make(const std::string& transactional_id,
                                 std::vector<std::pair<std::string, std::string>> props = {}) {
    props.insert(props.begin(), {"bootstrap.servers", address(broker_->port())});
    if (!transactional_id.empty()) props.emplace_back("transactional.id", transactional_id);
    props.emplace_back("max.block.ms", "20000");
    auto p = producer::create(props);
    EXPECT_TRUE(p) << (p ? "" : p.error().message);
    return p ? std::move(*p) : nullptr;
  }

  // "PARTITION OFFSET VALUE" per record, sorted, with the isolation level given.
  std::vector<std::string> read(const std::string& topic, const std::string& isolation) {
    auto [rc, out] = run_command("timeout 60 kcat -C -q -e -b " + address(broker_->port()) +
                                 " -X isolation.level=" + isolation + " -t " + topic +
                                 " -o beginning -f '%p %o %s\\n'");
    EXPECT_EQ(rc, 0) << out;
    auto lines = lines_of(out);
    std::sort(lines.begin(), lines.end());
    return lines;
  }

  // The same lines read with tarn's own consumer (include/tarn/consumer.h), until a second
  // passes without a record.
  std::vector<std::string> read_with_library(const std::string& topic, int32_t partitions,
                                             const std::string& isolation) {
    auto c = client::consumer::create(
        {{"bootstrap.servers", address(broker_->port())}, {"isolation.level", isolation}});
    EXPECT_TRUE(c);
    if (!c) return {};
    std::vector<client::topic_partition> tps;
    for (int32_t p = 0; p < partitions; ++p) tps.push_back({topic, p});
    (*c)->assign(tps);
    for (const auto& tp : tps) (*c)->seek(tp, client::offset_beginning);
    std::vector<std::string> lines;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    auto idle_since = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() < deadline &&
           std::chrono::steady_clock::now() - idle_since < std::chrono::seconds(1)) {
      auto records = (*c)->poll(std::chrono::milliseconds(200));
      EXPECT_TRUE(records) << records.error().message;
      if (!records) break;
      for (const auto& r : *records) {
        lines.push_back(std::to_string(r.partition) + " " + std::to_string(r.offset) + " " +
                        r.value.value_or(""));
      }
      if (!records->empty()) idle_since = std::chrono::steady_clock::now();
    }
    EXPECT_TRUE((*c)->close());
    std::sort(lines.begin(), lines.end());
    return lines;
  }

  static producer_record record(const std::string& topic, int32_t partition,
                                const std::string& value) {
    producer_record r;
    r.topic = topic;
    r.partition = partition;
    r.value = value;
    return r;
  }

  std::unique_ptr<broker_process> broker_;
};

TEST_F(txn_producer, read_committed_sees_committed_records_and_not_aborted_ones) {
  create_topic("t", 2);
  auto p = make("tx-1");
  ASSERT_TRUE(p);
  ASSERT_TRUE(p->init_transactions());

  ASSERT_TRUE(p->begin_transaction());
  auto a = p->send(record("t", 0, "c0"));
  auto b = p->send(record("t", 1, "c1"));
  ASSERT_TRUE(p->commit_transaction());
  ASSERT_TRUE(a.get());
  ASSERT_TRUE(b.get());

  ASSERT_TRUE(p->begin_transaction());
  auto aborted = p->send(record("t", 0, "a0"));
  p->flush();  // in the log before the ABORT marker
  ASSERT_TRUE(aborted.get());
  p->send(record("t", 1, "a1"));  // maybe sent, maybe failed by the abort: invisible either way
  ASSERT_TRUE(p->abort_transaction());

  ASSERT_TRUE(p->begin_transaction());
  p->send(record("t", 0, "c2"));
  ASSERT_TRUE(p->commit_transaction());
  p->close();

  // Partition 0: c0 (0), COMMIT (1), a0 (2), ABORT (3), c2 (4), COMMIT (5).
  EXPECT_EQ(read("t", "read_committed"), (std::vector<std::string>{"0 0 c0", "0 4 c2", "1 0 c1"}));
  const auto all = read("t", "read_uncommitted");
  EXPECT_TRUE(std::find(all.begin(), all.end(), "0 2 a0") != all.end());
  // tarn's consumer: the aborted transaction's records are left out as librdkafka leaves them.
  EXPECT_EQ(read_with_library("t", 2, "read_committed"),
            (std::vector<std::string>{"0 0 c0", "0 4 c2", "1 0 c1"}));
  EXPECT_EQ(read_with_library("t", 2, "read_uncommitted"), all);
}

TEST_F(txn_producer, an_empty_transaction_commits_and_aborts_without_the_coordinator) {
  auto p = make("tx-empty");
  ASSERT_TRUE(p);
  ASSERT_TRUE(p->init_transactions());
  ASSERT_TRUE(p->begin_transaction());
  EXPECT_TRUE(p->commit_transaction());
  ASSERT_TRUE(p->begin_transaction());
  EXPECT_TRUE(p->abort_transaction());
}

TEST_F(txn_producer, a_second_instance_fences_the_first) {
  create_topic("f", 1);
  auto first = make("tx-f");
  ASSERT_TRUE(first);
  ASSERT_TRUE(first->init_transactions());
  ASSERT_TRUE(first->begin_transaction());
  auto sent = first->send(record("f", 0, "fenced-a"));
  first->flush();
  ASSERT_TRUE(sent.get());

  auto second = make("tx-f");
  ASSERT_TRUE(second);
  ASSERT_TRUE(second->init_transactions());  // fences the first, aborting its transaction

  auto commit = first->commit_transaction();
  ASSERT_FALSE(commit);
  EXPECT_EQ(commit.error().code, producer_errc::fatal) << commit.error().message;
  const int16_t code = commit.error().kafka_error_code;
  EXPECT_TRUE(code == static_cast<int16_t>(error_code::producer_fenced) ||
              code == static_cast<int16_t>(error_code::invalid_producer_epoch))
      << commit.error().message;
  // Fatal for good: nothing else works on the fenced instance.
  EXPECT_EQ(first->begin_transaction().error().code, producer_errc::fatal);
  EXPECT_EQ(first->abort_transaction().error().code, producer_errc::fatal);

  ASSERT_TRUE(second->begin_transaction());
  second->send(record("f", 0, "fenced-b"));
  ASSERT_TRUE(second->commit_transaction());
  // fenced-a (0) aborted by the fence (ABORT at 1), fenced-b at 2.
  EXPECT_EQ(read("f", "read_committed"), std::vector<std::string>{"0 2 fenced-b"});
}

TEST_F(txn_producer, send_offsets_to_transaction_commits_the_offsets_with_the_transaction) {
  create_topic("in", 1);  // offsets of a topic that does not exist: UNKNOWN_TOPIC_OR_PARTITION
  create_topic("out", 1);
  auto p = make("tx-ctp");
  ASSERT_TRUE(p);
  ASSERT_TRUE(p->init_transactions());
  auto admin = client::group_admin::connect(address(broker_->port()));
  ASSERT_TRUE(admin) << admin.error().message;
  auto committed = [&]() -> int64_t {
    auto offsets = (*admin)->fetch_offsets("g");
    EXPECT_TRUE(offsets) << offsets.error().message;
    if (!offsets) return -2;
    auto it = offsets->find({"in", 0});
    return it == offsets->end() ? -1 : it->second.offset;
  };
  const client::consumer_group_metadata group{"g"};

  ASSERT_TRUE(p->begin_transaction());
  p->send(record("out", 0, "aborted"));
  // Written before the abort (abort_transaction drops what is still unsent, as Java's does,
  // which would make the offsets below depend on timing).
  p->flush();
  auto sent = p->send_offsets_to_transaction({{"in", 0, 5}}, group);
  ASSERT_TRUE(sent) << sent.error().message;
  ASSERT_TRUE(p->abort_transaction());
  EXPECT_EQ(committed(), -1) << "an aborted transaction's offsets are not committed";

  ASSERT_TRUE(p->begin_transaction());
  p->send(record("out", 0, "committed"));
  ASSERT_TRUE(p->send_offsets_to_transaction({{"in", 0, 7, "meta"}}, group));
  EXPECT_EQ(committed(), -1) << "pending until the transaction commits";
  ASSERT_TRUE(p->commit_transaction());
  EXPECT_EQ(committed(), 7);

  // Offsets alone (no record) make a transaction too.
  ASSERT_TRUE(p->begin_transaction());
  ASSERT_TRUE(p->send_offsets_to_transaction({{"in", 0, 9}}, group));
  ASSERT_TRUE(p->commit_transaction());
  EXPECT_EQ(committed(), 9);
  EXPECT_EQ(read("out", "read_committed"), std::vector<std::string>{"0 2 committed"});
}

TEST_F(txn_producer, a_refused_record_makes_the_transaction_abortable) {
  create_topic("small", 1, {"max.message.bytes=1000"});
  auto p = make("tx-abortable");
  ASSERT_TRUE(p);
  ASSERT_TRUE(p->init_transactions());
  ASSERT_TRUE(p->begin_transaction());
  auto ok = p->send(record("small", 0, "fits"));
  auto too_large = p->send(record("small", 0, std::string(5000, 'x')));
  auto commit = p->commit_transaction();
  ASSERT_FALSE(commit);
  EXPECT_EQ(commit.error().code, producer_errc::abortable) << commit.error().message;
  auto failed = too_large.get();
  ASSERT_FALSE(failed);
  // Only abort is allowed now.
  auto send = p->send(record("small", 0, "refused")).get();
  ASSERT_FALSE(send);
  EXPECT_EQ(send.error().code, producer_errc::abortable);
  EXPECT_EQ(p->begin_transaction().error().code, producer_errc::abortable);
  ASSERT_TRUE(p->abort_transaction());

  ASSERT_TRUE(p->begin_transaction());
  auto after = p->send(record("small", 0, "after"));
  ASSERT_TRUE(p->commit_transaction());
  ASSERT_TRUE(after.get());
  const auto seen = read("small", "read_committed");
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_TRUE(seen[0].ends_with(" after")) << seen[0];
}

TEST_F(txn_producer, calls_out_of_order_fail_with_invalid_state) {
  create_topic("s", 1);
  auto p = make("tx-state");
  ASSERT_TRUE(p);
  EXPECT_EQ(p->begin_transaction().error().code, producer_errc::invalid_state);
  auto early = p->send(record("s", 0, "x")).get();
  ASSERT_FALSE(early);
  EXPECT_EQ(early.error().code, producer_errc::invalid_state);
  ASSERT_TRUE(p->init_transactions());
  EXPECT_EQ(p->init_transactions().error().code, producer_errc::invalid_state);
  EXPECT_EQ(p->commit_transaction().error().code, producer_errc::invalid_state);
  auto outside = p->send(record("s", 0, "x")).get();
  ASSERT_FALSE(outside);
  EXPECT_EQ(outside.error().code, producer_errc::invalid_state);
  EXPECT_EQ(outside.error().message, "Cannot call send in state READY");

  auto plain = make("");
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->init_transactions().error().code, producer_errc::invalid_state);
  EXPECT_EQ(plain->begin_transaction().error().code, producer_errc::invalid_state);
}

TEST(txn_producer_against_kafka, transactions_commit_abort_and_offsets_as_on_tarn) {
#ifdef TARN_SANITIZED_BUILD
  GTEST_SKIP() << "the Kafka 4.4.0 reference runs in the release build only";
#endif
  if (!have_program("kcat")) GTEST_SKIP() << "kcat not installed";
  if (kafka_libs().empty()) GTEST_SKIP() << "java or the Kafka 4.4.0 jars are missing";
  ASSERT_EQ(kafka_broker::instance().start(), "");
  const std::string bootstrap = address(kafka_broker::instance().port());
  for (const char* topic : {"kt", "kin"}) {
    auto [rc, out] =
        run_command("timeout 60 " + std::string(TARN_BINARY) + " topics --bootstrap-server " +
                    bootstrap + " --create --topic " + topic + " --partitions 1");
    ASSERT_EQ(rc, 0) << out;
  }
  auto created = producer::create(
      {{"bootstrap.servers", bootstrap}, {"transactional.id", "ktx"}, {"max.block.ms", "60000"}});
  ASSERT_TRUE(created) << created.error().message;
  auto& p = *created;
  auto init = p->init_transactions();
  ASSERT_TRUE(init) << init.error().message;
  auto record = [](const std::string& value) {
    producer_record r;
    r.topic = "kt";
    r.partition = 0;
    r.value = value;
    return r;
  };
  const client::consumer_group_metadata group{"kg"};
  for (int i = 0; i < 3; ++i) {  // several commits: each transaction after the first too
    ASSERT_TRUE(p->begin_transaction());
    p->send(record("c" + std::to_string(i)));
    auto offsets = p->send_offsets_to_transaction({{"kin", 0, 10 + i}}, group);
    ASSERT_TRUE(offsets) << offsets.error().message;
    auto committed = p->commit_transaction();
    ASSERT_TRUE(committed) << i << ": " << committed.error().message;
  }
  ASSERT_TRUE(p->begin_transaction());
  auto aborted = p->send(record("a"));
  p->flush();
  ASSERT_TRUE(aborted.get());
  ASSERT_TRUE(p->send_offsets_to_transaction({{"kin", 0, 99}}, group));
  ASSERT_TRUE(p->abort_transaction());
  ASSERT_TRUE(p->begin_transaction());
  p->send(record("c3"));
  ASSERT_TRUE(p->commit_transaction());
  p->close();

  auto [rc, out] = run_command("timeout 60 kcat -C -q -e -b " + bootstrap +
                               " -X isolation.level=read_committed -t kt -o beginning -f "
                               "'%p %o %s\\n'");
  ASSERT_EQ(rc, 0) << out;
  // Each record then its marker: c0 0, c1 2, c2 4, a 6 (ABORT 7), c3 8.
  EXPECT_EQ(lines_of(out), (std::vector<std::string>{"0 0 c0", "0 2 c1", "0 4 c2", "0 8 c3"}));
  auto admin = client::group_admin::connect(bootstrap);
  ASSERT_TRUE(admin) << admin.error().message;
  auto offsets = (*admin)->fetch_offsets("kg");
  ASSERT_TRUE(offsets) << offsets.error().message;
  ASSERT_TRUE(offsets->contains({"kin", 0}));
  EXPECT_EQ(offsets->at({"kin", 0}).offset, 12) << "the aborted transaction's 99 is not committed";
}

}  // namespace
}  // namespace tarn::test
