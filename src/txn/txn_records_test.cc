// __transaction_state records and the state transitions against Kafka 4.4.0's own transaction
// coordinator (tests/java/TransactionLogGolden.java -> tests/fixtures/transaction-log/).
#include "txn/txn_records.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "txn/txn_state.h"

namespace tarn::txn {
namespace {

std::vector<uint8_t> golden(const std::string& name) {
  std::ifstream in(std::string(TARN_SOURCE_DIR) + "/tests/fixtures/transaction-log/" + name,
                   std::ios::binary);
  EXPECT_TRUE(in.good()) << "missing golden file " << name;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// What TransactionLogGolden.java gave Kafka: producer 42, epoch 3, timeout 60000, started at 100,
// updated at 200.
txn_metadata kafkas(txn_state state, bool one_partition, int16_t client_version = 0) {
  txn_metadata m;
  m.client_transaction_version = client_version;
  m.producer_id = 42;
  m.producer_epoch = 3;
  m.timeout_ms = 60000;
  m.state = state;
  if (one_partition) m.partitions = {{"topic-a", 7}};
  m.txn_start_timestamp = 100;
  m.txn_last_update_timestamp = 200;
  return m;
}

TEST(txn_records_golden, KeyIsKafkas) {
  EXPECT_EQ(encode_txn_key("my-txn"), golden("key.bin"));
  EXPECT_EQ(*decode_txn_key(golden("key.bin")), "my-txn");
}

TEST(txn_records_golden, VersionZeroValuesAreKafkasBytes) {
  EXPECT_EQ(encode_txn_value(kafkas(txn_state::prepare_commit, true), 0),
            golden("prepare_commit.value.bin"));
  EXPECT_EQ(encode_txn_value(kafkas(txn_state::complete_commit, false), 0),
            golden("complete_commit.value.bin"));
}

// What tarn writes with transaction.version 1 or 2 finalized (its default is 2, as Kafka 4.4's).
TEST(txn_records_golden, VersionOneValuesAreKafkasBytes) {
  EXPECT_EQ(txn_log_value_version(0), 0);
  EXPECT_EQ(txn_log_value_version(1), 1);
  EXPECT_EQ(txn_log_value_version(2), 1);
  EXPECT_EQ(encode_txn_value(kafkas(txn_state::ongoing, true, 1), 1), golden("ongoing.value.bin"));
  EXPECT_EQ(encode_txn_value(kafkas(txn_state::complete_abort, false, 1), 1),
            golden("complete_abort.value.bin"));
  EXPECT_EQ(encode_txn_value(kafkas(txn_state::empty, false, 1), 1), golden("empty.value.bin"));
  EXPECT_EQ(encode_txn_value(kafkas(txn_state::ongoing, true, 2), 1),
            golden("ongoing_tv2.value.bin"));
}

TEST(txn_records_golden, EveryValueKafkaWritesDecodes) {
  struct want {
    const char* file;
    txn_state state;
    bool one_partition;
    int16_t client_version;
  };
  for (const want& w : {want{"prepare_commit.value.bin", txn_state::prepare_commit, true, 0},
                        want{"complete_commit.value.bin", txn_state::complete_commit, false, 0},
                        want{"ongoing.value.bin", txn_state::ongoing, true, 1},
                        want{"complete_abort.value.bin", txn_state::complete_abort, false, 1},
                        want{"empty.value.bin", txn_state::empty, false, 1},
                        want{"ongoing_tv2.value.bin", txn_state::ongoing, true, 2}}) {
    auto m = decode_txn_value(golden(w.file));
    ASSERT_TRUE(m) << w.file << ": " << m.error();
    EXPECT_EQ(*m, kafkas(w.state, w.one_partition, w.client_version)) << w.file;
  }
}

TEST(txn_records_golden, TransitionsAreKafkasTable) {
  std::ifstream in(std::string(TARN_SOURCE_DIR) +
                   "/tests/fixtures/transaction-log/transitions.txt");
  ASSERT_TRUE(in.good());
  int from = 0, to = 0, pairs = 0;
  std::string valid;
  while (in >> from >> to >> valid) {
    EXPECT_EQ(valid_transition(static_cast<txn_state>(from), static_cast<txn_state>(to)),
              valid == "true")
        << state_name(static_cast<txn_state>(from)) << " -> "
        << state_name(static_cast<txn_state>(to));
    ++pairs;
  }
  EXPECT_EQ(pairs, 64);
}

}  // namespace
}  // namespace tarn::txn
