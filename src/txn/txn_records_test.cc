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
txn_metadata kafkas(txn_state state, bool one_partition) {
  txn_metadata m;
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
  EXPECT_EQ(encode_txn_value(kafkas(txn_state::prepare_commit, true)),
            golden("prepare_commit.value.bin"));
  EXPECT_EQ(encode_txn_value(kafkas(txn_state::complete_commit, false)),
            golden("complete_commit.value.bin"));
}

TEST(txn_records_golden, EveryValueKafkaWritesDecodes) {
  struct want {
    const char* file;
    txn_state state;
    bool one_partition;
  };
  for (const want& w : {want{"prepare_commit.value.bin", txn_state::prepare_commit, true},
                        want{"complete_commit.value.bin", txn_state::complete_commit, false},
                        want{"ongoing.value.bin", txn_state::ongoing, true},
                        want{"complete_abort.value.bin", txn_state::complete_abort, false},
                        want{"empty.value.bin", txn_state::empty, false},
                        want{"ongoing_tv2.value.bin", txn_state::ongoing, true}}) {
    auto m = decode_txn_value(golden(w.file));
    ASSERT_TRUE(m) << w.file << ": " << m.error();
    EXPECT_EQ(*m, kafkas(w.state, w.one_partition)) << w.file;
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
