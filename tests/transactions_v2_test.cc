// Transactions v2 (KIP-890 part 2) with hand-built requests, against the real `tarn serve` and
// against Apache Kafka 4.4.0 (scripts/kafka-ref) with the same expectations:
//   - ApiVersions finalizes transaction.version 2 (supported 0-2);
//   - Produce v12+ of a transactional batch adds its partition to the transaction (no
//     AddPartitionsToTxn), TxnOffsetCommit v5/v6 adds the group's partition (no AddOffsetsToTxn;
//     v6 names topics by id);
//     Produce v11 and older only verify: TRANSACTION_ABORTABLE (v11) / INVALID_TXN_STATE;
//   - EndTxn v5 bumps the epoch of every transaction, writes its markers with the bumped epoch
//     and answers it; a retried EndTxn gets the same answer; the old epoch is fenced;
//   - a read_committed reader sees what was committed only, the group's offset moves with the
//     commit.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "kafka_conn.h"
#include "kafka_ref_broker.h"
#include "produce_util.h"
#include "protocol/messages/api_versions_request.h"
#include "protocol/messages/api_versions_response.h"
#include "protocol/messages/describe_configs_request.h"
#include "protocol/messages/describe_configs_response.h"
#include "protocol/messages/end_txn_request.h"
#include "protocol/messages/end_txn_response.h"
#include "protocol/messages/find_coordinator_request.h"
#include "protocol/messages/find_coordinator_response.h"
#include "protocol/messages/incremental_alter_configs_request.h"
#include "protocol/messages/incremental_alter_configs_response.h"
#include "protocol/messages/init_producer_id_request.h"
#include "protocol/messages/init_producer_id_response.h"
#include "protocol/messages/metadata_request.h"
#include "protocol/messages/metadata_response.h"
#include "protocol/messages/offset_fetch_request.h"
#include "protocol/messages/offset_fetch_response.h"
#include "protocol/messages/produce_request.h"
#include "protocol/messages/produce_response.h"
#include "protocol/messages/txn_offset_commit_request.h"
#include "protocol/messages/txn_offset_commit_response.h"
#include "test_util.h"

namespace tarn::test {
namespace {

using namespace std::chrono_literals;

// Retriable coordinator answers: LOAD_IN_PROGRESS, NOT_AVAILABLE, NOT_COORDINATOR, CONCURRENT.
bool retriable(int16_t e) { return e == 14 || e == 15 || e == 16 || e == 51; }

// Calls `once` until it gives something but a retriable coordinator error (bounded: 30 s).
template <class F>
int16_t retry(F once) {
  int16_t e = -1;
  for (int i = 0; i < 300; ++i) {
    e = once();
    if (!retriable(e)) break;
    std::this_thread::sleep_for(100ms);
  }
  return e;
}

class transactions_v2 : public ::testing::TestWithParam<broker_kind> {
 protected:
  void SetUp() override {
    if (auto skip = start_test_broker(GetParam(), {}, tarn_, port_); !skip.empty()) {
      GTEST_SKIP() << skip;
    }
    ASSERT_NE(port_, 0);
    prefix_ = "v2-" + test_name_prefix();
    conn_ = std::make_unique<kafka_conn>(port_, nullptr);
    ASSERT_TRUE(conn_->connected());
  }
  void TearDown() override {
    conn_.reset();
    if (tarn_) tarn_->stop();
  }

  std::string name(const std::string& n) const { return prefix_ + n; }

  void find_coordinator(const std::string& key, int8_t type) {
    protocol::find_coordinator_request find;
    find.key = key;
    find.key_type = type;
    ASSERT_EQ(retry([&] {
                auto r = conn_->call<protocol::find_coordinator_response>(find, 3);
                return r ? r->error_code : int16_t{-2};
              }),
              0);
  }

  // InitProducerId v5 for `txn` (after FindCoordinator): {producer id, epoch}.
  std::pair<int64_t, int16_t> init(const std::string& txn) {
    find_coordinator(txn, 1);
    protocol::init_producer_id_request req;
    req.transactional_id = std::string_view(txn);
    req.transaction_timeout_ms = 60000;
    std::pair<int64_t, int16_t> out{-1, -1};
    EXPECT_EQ(retry([&] {
                auto r = conn_->call<protocol::init_producer_id_response>(req, 5);
                if (!r) return int16_t{-2};
                out = {r->producer_id, r->producer_epoch};
                return r->error_code;
              }),
              0);
    return out;
  }

  // Produce at `version` of one transactional record `value` (sequence `seq`): the error code.
  int16_t produce(int16_t version, const std::string& txn, const std::string& topic,
                  int32_t partition, int64_t pid, int16_t epoch, int32_t seq,
                  const std::string& value) {
    const std::vector<uint8_t> batch = transactional_batch(pid, epoch, seq, value);
    const protocol::produce_request req =
        transactional_produce(txn, topic, partition, batch, 30000);
    // A topic Kafka has just created may not have its leader on the broker yet
    // (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION for a moment): asked again then.
    int16_t e = -1;
    for (int i = 0; i < 100; ++i) {
      e = retry([&] {
        auto r = conn_->call<protocol::produce_response>(req, version);
        if (!r || r->responses.size() != 1 || r->responses[0].partition_responses.size() != 1) {
          return int16_t{-2};
        }
        return r->responses[0].partition_responses[0].error_code;
      });
      if (e != 6 && e != 3) break;
      std::this_thread::sleep_for(100ms);
    }
    return e;
  }

  struct end_answer {
    int16_t error_code = -2;
    int64_t producer_id = -2;
    int16_t producer_epoch = -2;
    bool operator==(const end_answer&) const = default;
  };
  end_answer end_txn(int16_t version, const std::string& txn, int64_t pid, int16_t epoch,
                     bool commit) {
    protocol::end_txn_request req;
    req.transactional_id = txn;
    req.producer_id = pid;
    req.producer_epoch = epoch;
    req.committed = commit;
    end_answer a;
    retry([&] {
      auto r = conn_->call<protocol::end_txn_response>(req, version);
      if (!r) return int16_t{-2};
      a = {r->error_code, r->producer_id, r->producer_epoch};
      return r->error_code;
    });
    return a;
  }

  // TxnOffsetCommit of topic-0 (v6: by `topic_id`): the partition's error code.
  int16_t txn_offset_commit(int16_t version, const std::string& txn, const std::string& group,
                            int64_t pid, int16_t epoch, const std::string& topic, int64_t offset,
                            const protocol::uuid& topic_id = {}) {
    protocol::txn_offset_commit_request req;
    req.transactional_id = txn;
    req.group_id = group;
    req.producer_id = pid;
    req.producer_epoch = epoch;
    req.topics.emplace_back();
    req.topics[0].name = topic;
    req.topics[0].topic_id = topic_id;
    req.topics[0].partitions.emplace_back();
    req.topics[0].partitions[0].partition_index = 0;
    req.topics[0].partitions[0].committed_offset = offset;
    return retry([&] {
      auto r = conn_->call<protocol::txn_offset_commit_response>(req, version);
      if (!r || r->topics.size() != 1 || r->topics[0].partitions.size() != 1) return int16_t{-2};
      if (version >= 6 && r->topics[0].topic_id != topic_id) return int16_t{-3};
      return r->topics[0].partitions[0].error_code;
    });
  }

  protocol::uuid topic_id_of(const std::string& topic) {
    protocol::metadata_request req;
    req.topics.emplace();
    req.topics->push_back({{}, topic});
    req.allow_auto_topic_creation = false;
    auto r = conn_->call<protocol::metadata_response>(req, 12);
    if (!r || r->topics.empty()) return {};
    return r->topics[0].topic_id;
  }

  // The group's committed offset of topic-0 (OffsetFetch v8 with RequireStable: waits out a
  // marker still on its way), -1 if none.
  int64_t committed_offset(const std::string& group, const std::string& topic) {
    protocol::offset_fetch_request req;
    req.require_stable = true;
    req.groups.emplace_back();
    req.groups[0].group_id = group;
    req.groups[0].topics.emplace();
    req.groups[0].topics->emplace_back();
    req.groups[0].topics->back().name = topic;
    req.groups[0].topics->back().partition_indexes = {0};
    for (int i = 0; i < 100; ++i) {
      auto r = conn_->call<protocol::offset_fetch_response>(req, 8);
      if (!r || r->groups.size() != 1 || r->groups[0].topics.size() != 1) return -2;
      const auto& p = r->groups[0].topics[0].partitions.at(0);
      if (p.error_code == 0) return p.committed_offset;
      std::this_thread::sleep_for(100ms);
    }
    return -3;
  }

  uint16_t port_ = 0;
  std::unique_ptr<broker_process> tarn_;
  std::unique_ptr<kafka_conn> conn_;
  std::string prefix_;
};

TEST_P(transactions_v2, api_versions_finalizes_transaction_version_2) {
  protocol::api_versions_request req;
  req.client_software_name = "tarn-test";
  req.client_software_version = "1";
  auto r = conn_->call<protocol::api_versions_response>(req, 4);  // v4: min 0 listed
  ASSERT_TRUE(r);
  bool supported = false, finalized = false;
  for (const auto& f : r->supported_features) {
    if (f.name == "transaction.version") {
      supported = true;
      EXPECT_EQ(f.min_version, 0);
      EXPECT_EQ(f.max_version, 2);
    }
  }
  for (const auto& f : r->finalized_features) {
    if (f.name == "transaction.version") {
      finalized = true;
      EXPECT_EQ(f.min_version_level, 2);
      EXPECT_EQ(f.max_version_level, 2);
    }
  }
  EXPECT_TRUE(supported);
  EXPECT_TRUE(finalized);
}

TEST_P(transactions_v2, produce_adds_partitions_and_every_end_txn_bumps_the_epoch) {
  const std::string topic = name("t"), group = name("g"), txn = name("tx");
  ASSERT_EQ(create_topic(port_, topic, 2), 0);
  find_coordinator(group, 0);
  auto [pid, e0] = init(txn);
  ASSERT_GE(pid, 0);

  // Transaction 1: partition 0 by Produce v12 alone, the group's offset by TxnOffsetCommit v5.
  EXPECT_EQ(produce(12, txn, topic, 0, pid, e0, 0, "c1"), 0);
  EXPECT_EQ(txn_offset_commit(5, txn, group, pid, e0, topic, 7), 0);
  // Produce v11 only verifies: partition 1 is not in the transaction.
  EXPECT_EQ(produce(11, txn, topic, 1, pid, e0, 0, "x"), 120);  // TRANSACTION_ABORTABLE
  EXPECT_EQ(produce(9, txn, topic, 1, pid, e0, 0, "x"), 48);    // INVALID_TXN_STATE
  const end_answer committed{0, pid, static_cast<int16_t>(e0 + 1)};
  EXPECT_EQ(end_txn(5, txn, pid, e0, true), committed);
  EXPECT_EQ(end_txn(5, txn, pid, e0, true), committed);  // a retry: the same answer
  EXPECT_EQ(committed_offset(group, topic), 7);

  // Transaction 2 with the bumped epoch, sequences from 0 again; the old epoch is fenced.
  EXPECT_EQ(produce(12, txn, topic, 0, pid, e0, 1, "stale"), 47);  // INVALID_PRODUCER_EPOCH
  EXPECT_EQ(produce(12, txn, topic, 0, pid, e0 + 1, 0, "a2"), 0);
  EXPECT_EQ(txn_offset_commit(5, txn, group, pid, e0 + 1, topic, 9), 0);
  EXPECT_EQ(end_txn(5, txn, pid, e0 + 1, false),
            (end_answer{0, pid, static_cast<int16_t>(e0 + 2)}));
  EXPECT_EQ(committed_offset(group, topic), 7);
  EXPECT_EQ(end_txn(5, txn, pid, e0, true).error_code, 90);  // PRODUCER_FENCED

  // Transaction 3: TxnOffsetCommit v6 names the topic by id (an unknown id: UNKNOWN_TOPIC_ID).
  const protocol::uuid id = topic_id_of(topic);
  protocol::uuid unknown = id;
  unknown.bytes[0] ^= 0x5a;
  EXPECT_EQ(txn_offset_commit(6, txn, group, pid, e0 + 2, topic, 11, unknown), 100);
  EXPECT_EQ(txn_offset_commit(6, txn, group, pid, e0 + 2, topic, 11, id), 0);
  EXPECT_EQ(end_txn(5, txn, pid, e0 + 2, true), (end_answer{0, pid, static_cast<int16_t>(e0 + 3)}));
  EXPECT_EQ(committed_offset(group, topic), 11);

  // Partition 0 holds c1, COMMIT (epoch e0+1), a2, ABORT (epoch e0+2) (transaction 3 did not
  // touch it).
  auto batches = fetch_all(port_, topic, 0);
  ASSERT_EQ(batches.size(), 4u);
  std::vector<std::pair<bool, int16_t>> seen;  // {control, producer epoch}
  for (const auto& [offset, b] : batches) {
    seen.emplace_back((get_int16(b, 21) & 0x20) != 0, get_int16(b, 51));
  }
  EXPECT_EQ(seen, (std::vector<std::pair<bool, int16_t>>{{false, e0},
                                                         {true, static_cast<int16_t>(e0 + 1)},
                                                         {false, static_cast<int16_t>(e0 + 1)},
                                                         {true, static_cast<int16_t>(e0 + 2)}}));
}

// transaction.partition.verification.enable is a dynamic broker config (Kafka 4.4's
// ReplicaManager and ProducerStateManagerConfig read it at each request): set to false for the
// cluster (IncrementalAlterConfigs, the default resource ""), a Produce v11 batch to a partition
// never added goes in unverified (the transaction hangs there, what verification prevents),
// while Produce v12 still adds its partition; set back to true, the next one is refused again.
TEST_P(transactions_v2, partition_verification_is_a_dynamic_broker_config) {
  const std::string topic = name("t"), txn = name("tx");
  ASSERT_EQ(create_topic(port_, topic, 3), 0);
  auto [pid, e0] = init(txn);
  ASSERT_GE(pid, 0);
  std::string node;  // the broker's id, its resource name
  {
    protocol::metadata_request req;
    req.topics.emplace();
    auto r = conn_->call<protocol::metadata_response>(req, 12);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->brokers.size(), 1u);
    node = std::to_string(r->brokers[0].node_id);
  }
  // Set for the cluster, then waited for in DescribeConfigs: Kafka's broker applies a dynamic
  // config when the controller's record reaches it, a moment after the answer.
  auto set_verification = [&](const std::string& value) {
    protocol::incremental_alter_configs_request req;
    req.resources.push_back({4, "", {{"transaction.partition.verification.enable", 0, value}}});
    auto r = conn_->call<protocol::incremental_alter_configs_response>(req, 1);
    ASSERT_TRUE(r);
    ASSERT_EQ(r->responses.size(), 1u);
    EXPECT_EQ(r->responses[0].error_code, 0) << r->responses[0].error_message.value_or("");
    protocol::describe_configs_request d;
    d.resources.push_back(
        {4, node, std::vector<std::string_view>{"transaction.partition.verification.enable"}});
    std::string now;
    for (int i = 0; i < 200 && now != value; ++i) {
      auto dr = conn_->call<protocol::describe_configs_response>(d, 4);
      ASSERT_TRUE(dr);
      ASSERT_EQ(dr->results.size(), 1u);
      ASSERT_EQ(dr->results[0].configs.size(), 1u);
      now = std::string(dr->results[0].configs[0].value.value_or(""));
      if (now != value) std::this_thread::sleep_for(50ms);
    }
    EXPECT_EQ(now, value);
  };
  EXPECT_EQ(produce(12, txn, topic, 0, pid, e0, 0, "added"), 0);
  EXPECT_EQ(produce(11, txn, topic, 1, pid, e0, 0, "x"), 120);  // TRANSACTION_ABORTABLE
  set_verification("false");
  if (HasFatalFailure()) return;
  EXPECT_EQ(produce(11, txn, topic, 1, pid, e0, 0, "unverified"), 0);
  EXPECT_EQ(produce(12, txn, topic, 2, pid, e0, 0, "added-too"), 0);
  set_verification("true");
  if (HasFatalFailure()) return;
  const end_answer committed{0, pid, static_cast<int16_t>(e0 + 1)};
  EXPECT_EQ(end_txn(5, txn, pid, e0, true), committed);
  // Kafka answers EndTxn before its markers are written: meanwhile its leader maps the
  // coordinator's CONCURRENT_TRANSACTIONS to NOT_ENOUGH_REPLICAS for Produce v11, which a
  // client retries.
  int16_t e = 19;
  for (int i = 0; i < 100 && e == 19; ++i) {
    e = produce(11, txn, topic, 0, pid, e0 + 1, 0, "y");
    if (e == 19) std::this_thread::sleep_for(50ms);
  }
  EXPECT_EQ(e, 120);
}

// The __transaction_state segments this broker wrote (tarn's v1 values, or Kafka's) print the
// same with `tarn dump-log --transaction-log-decoder` as with Kafka's kafka-dump-log.sh, and show
// the transaction's states with the client's transaction version.
TEST_P(transactions_v2, dump_log_decodes_the_transaction_log_as_kafka_does) {
  if (kafka_libs().empty()) GTEST_SKIP() << "java or the Kafka 4.4.0 jars are missing";
  const std::string topic = name("t"), txn = name("tx");
  ASSERT_EQ(create_topic(port_, topic, 1), 0);
  auto [pid, e0] = init(txn);
  ASSERT_EQ(produce(12, txn, topic, 0, pid, e0, 0, "v"), 0);
  ASSERT_EQ(end_txn(5, txn, pid, e0, true).error_code, 0);
  const std::filesystem::path data =
      GetParam() == broker_kind::tarn ? tarn_->data_dir() : kafka_broker::instance().data_dir();
  std::string files;
  for (const auto& dir : std::filesystem::directory_iterator(data)) {
    if (!dir.path().filename().string().starts_with("__transaction_state-")) continue;
    for (const auto& f : std::filesystem::directory_iterator(dir.path())) {
      if (f.path().extension() != ".log" || std::filesystem::file_size(f.path()) == 0) continue;
      files += (files.empty() ? "" : ",") + f.path().string();
    }
  }
  ASSERT_FALSE(files.empty());
  // Kafka writes CompleteCommit a moment after EndTxn answers (tarn before it answers): the
  // dump is taken once it is there.
  std::pair<int, std::string> tarn_dump;
  for (int i = 0; i < 100; ++i) {
    tarn_dump = run_command(std::string(TARN_BINARY) +
                            " dump-log --transaction-log-decoder --files " + files);
    if (tarn_dump.second.find("\"CompleteCommit\"") != std::string::npos) break;
    std::this_thread::sleep_for(100ms);
  }
  auto [trc, tarn_out] = tarn_dump;
  auto [krc, kafka_out] =
      run_command("timeout 120 " + std::string(TARN_SOURCE_DIR) +
                  "/scripts/kafka-ref tool dump-log --transaction-log-decoder --files " + files +
                  " 2>/dev/null");
  EXPECT_EQ(trc, 0) << tarn_out;
  EXPECT_EQ(krc, 0) << kafka_out;
  EXPECT_EQ(tarn_out, kafka_out);
  for (const char* status : {"Empty", "Ongoing", "PrepareCommit", "CompleteCommit"}) {
    EXPECT_NE(tarn_out.find("\"transactionStatus\":\"" + std::string(status) + "\""),
              std::string::npos)
        << status << "\n"
        << tarn_out;
  }
  EXPECT_NE(tarn_out.find("{\"transactionalId\":\"" + txn + "\"}"), std::string::npos);
  EXPECT_NE(tarn_out.find("\"clientTransactionVersion\":2"), std::string::npos);
}

INSTANTIATE_TEST_SUITE_P(brokers, transactions_v2,
                         ::testing::Values(broker_kind::tarn, broker_kind::kafka), kind_name);

}  // namespace
}  // namespace tarn::test
