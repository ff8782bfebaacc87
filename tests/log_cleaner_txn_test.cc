// The log cleaner on transactional data, end to end: the real `tarn serve` and confluent-kafka
// (tests/python/txn_clients.py).
//   - A compacted topic written by transactional producers (committed and aborted transactions
//     on the same keys, committed tombstones, a transaction left open by a killed producer):
//     the cleaner stops at the open transaction's segment; once cleaned, read_committed sees
//     exactly the latest committed value per key and read_uncommitted no aborted record below
//     the cleaned offset; after the open transaction is aborted the rest is cleaned too, and a
//     restart reads the same.
//   - __consumer_offsets holding offsets committed by transactions (TxnOffsetCommit), some
//     aborted, cleaned; the group coordinator's reload after a SIGKILL gives the committed
//     offsets only.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cleaner_util.h"
#include "test_util.h"

namespace tarn::test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

const char* python = "/usr/bin/python3";  // Debian's, with confluent_kafka

std::string script() { return std::string(TARN_SOURCE_DIR) + "/tests/python/txn_clients.py"; }

bool have_confluent_kafka() {
  return run_command(std::string(python) + " -c 'import confluent_kafka'").first == 0;
}

std::pair<int, std::string> client(uint16_t port, const std::string& mode, const std::string& rest,
                                   int timeout_s = 90) {
  return run_command(fmt::format("timeout {} {} {} {} 127.0.0.1:{} {} 2>&1", timeout_s, python,
                                 script(), mode, port, rest));
}

struct read_back {
  std::vector<std::tuple<int64_t, std::string, std::string>> records;  // offset, key, value
  std::map<std::string, std::string> last;                             // key -> last value
};

// Reads kv to its end: its high watermark, or `end` while a transaction is open on purpose
// (txn_clients.py's at_end; 3 s without a record bounds it).
read_back consume(uint16_t port, const std::string& isolation, int64_t end = -1) {
  read_back r;
  auto [rc, out] = client(port, "kconsume",
                          "kv " + isolation + " 3000" + (end < 0 ? "" : fmt::format(" {}", end)));
  EXPECT_EQ(rc, 0) << out;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.starts_with("record ")) continue;
    std::istringstream fields(line.substr(7));
    int64_t offset = -1;
    std::string key, value;
    fields >> offset >> key >> value;
    r.records.emplace_back(offset, key, value);
    r.last[key] = value;
  }
  return r;
}

// k0..k4 -> "null" (tombstones), k5..k49 -> `value`.
std::map<std::string, std::string> expected(const std::string& value) {
  std::map<std::string, std::string> m;
  for (int k = 0; k < 50; ++k) m[fmt::format("k{}", k)] = k < 5 ? "null" : value;
  return m;
}

// Below `cleaned`: each key once, no aborted or never-committed value; offsets increasing.
void expect_clean_below(const read_back& r, int64_t cleaned) {
  std::map<std::string, int> seen;
  int64_t previous = -1;
  for (const auto& [offset, key, value] : r.records) {
    EXPECT_GT(offset, previous);
    previous = offset;
    if (offset >= cleaned) continue;
    EXPECT_FALSE(value.ends_with("-a") || value.starts_with("hang-")) << offset << " " << value;
    EXPECT_EQ(++seen[key], 1) << key << " twice below " << cleaned;
  }
}

std::vector<std::string> broker_args() {
  return {"--override", "log.cleaner.backoff.ms=100",
          "--override", "transaction.state.log.num.partitions=1",
          "--override", "offsets.topic.num.partitions=1",
          "--override", "log.cleaner.min.cleanable.ratio=0.01",
          "--override", "log.roll.ms=300"};
}

TEST(LogCleanerTxn, CompactedTopicOfTransactionsKeepsTheLatestCommittedValuePerKey) {
  if (!have_confluent_kafka()) GTEST_SKIP() << "confluent_kafka not installed";
  temp_dir work;
  const fs::path data = work.path() / "data";
  broker_process broker(broker_args(), data);
  ASSERT_NE(broker.port(), 0) << broker.output();
  const uint16_t port = broker.port();
  auto [rc, out] = run_command(fmt::format(
      "timeout 60 {} topics --bootstrap-server 127.0.0.1:{} --create --topic kv --partitions 1 "
      "--config cleanup.policy=compact --config segment.ms=300 "
      "--config min.cleanable.dirty.ratio=0.01",
      TARN_BINARY, port));
  ASSERT_EQ(rc, 0) << out;
  // 50 keys a transaction, each with its marker: c 0-50, a 51-101, c 102-152, a 153-203,
  // c 204-254, d (tombstones k0-k4) 255-260, a 261-311; each in a segment of its own.
  std::tie(rc, out) = client(port, "keyed", "kv a 50 c,a,c,a,c,d,a 350");
  ASSERT_EQ(rc, 0) << out;
  // A transaction left open (k0-k2 at 312-314) by a producer killed: the last stable offset.
  std::this_thread::sleep_for(400ms);  // > segment.ms: it starts a segment
  {
    child_process hung({python, script(), "hang", "127.0.0.1:" + std::to_string(port), "kv", "hung",
                        "3", "600000"});
    ASSERT_TRUE(hung.wait_for_output("open", 60s)) << hung.output();
    hung.send_signal(SIGKILL);
    hung.wait_exit(10s);
  }
  // Committed and aborted data past it (315-416), which the cleaner must not reach.
  std::tie(rc, out) = client(port, "keyed", "kv b 50 c,a 350");
  ASSERT_EQ(rc, 0) << out;
  ASSERT_TRUE(wait_cleaned_to(data, "kv", 312, 60s)) << broker.output();
  std::this_thread::sleep_for(1s);  // several cleaner rounds (backoff 100 ms)
  EXPECT_EQ(cleaner_checkpoint(data, "kv"), 312);

  read_back committed = consume(port, "read_committed", 312);  // the last stable offset
  EXPECT_EQ(committed.last, expected("a-4-c"));
  EXPECT_EQ(committed.records.size(), 50u);  // below the LSO, once each
  read_back all = consume(port, "read_uncommitted");
  expect_clean_below(all, 312);
  int below = 0, past = 0;
  for (const auto& [offset, key, value] : all.records) (offset < 312 ? below : past)++;
  EXPECT_EQ(below, 50);
  EXPECT_EQ(past, 3 + 50 + 50);  // the open transaction and everything after it, untouched

  // The hung producer's id again: its InitProducerId aborts the open transaction (ABORT at
  // 417); its commit 418-468; tombstones 469-474 start a segment, so all before is cleanable.
  std::tie(rc, out) = client(port, "keyed", "kv hung 50 c 350");
  ASSERT_EQ(rc, 0) << out;
  std::tie(rc, out) = client(port, "keyed", "kv z 50 d 350");
  ASSERT_EQ(rc, 0) << out;
  ASSERT_TRUE(wait_cleaned_to(data, "kv", 469, 60s)) << broker.output();
  committed = consume(port, "read_committed");
  EXPECT_EQ(committed.last, expected("hung-0-c"));
  expect_clean_below(committed, 469);
  all = consume(port, "read_uncommitted");
  expect_clean_below(all, 469);
  EXPECT_EQ(all.last, expected("hung-0-c"));

  // Restarted (clean shutdown), the same: the cleaned segments' .txnindex and markers reload.
  ASSERT_TRUE(broker.stop());
  broker_process again(broker_args(), data);
  ASSERT_NE(again.port(), 0) << again.output();
  read_back after = consume(again.port(), "read_committed");
  EXPECT_EQ(after.records, committed.records);
}

TEST(LogCleanerTxn, ConsumerOffsetsOfAbortedTransactionsStayGoneAfterCleaningAndReload) {
  if (!have_confluent_kafka()) GTEST_SKIP() << "confluent_kafka not installed";
  temp_dir work;
  const fs::path data = work.path() / "data";
  const std::string offsets = "__consumer_offsets";
  std::string committed_line;
  {
    broker_process broker(broker_args(), data);
    ASSERT_NE(broker.port(), 0) << broker.output();
    const uint16_t port = broker.port();
    for (const char* t : {"in 1", "out 1"}) {
      auto [rc, out] = client(port, "setup", t);
      ASSERT_EQ(rc, 0) << out;
    }
    // Rounds of 5 input records: committed, aborted, committed, aborted, committed, aborted;
    // each transaction's TxnOffsetCommit and marker in __consumer_offsets, rolled apart.
    for (int round = 0; round < 6; ++round) {
      auto [rc, out] = client(port, "produce", "in 5");
      ASSERT_EQ(rc, 0) << out;
      std::this_thread::sleep_for(350ms);
      std::tie(rc, out) =
          client(port, "ctp", fmt::format("in out g tx {}", round % 2 == 0 ? "commit" : "abort"));
      ASSERT_EQ(rc, 0) << out;
    }
    auto [rc, out] = client(port, "committed", "in g");
    ASSERT_EQ(rc, 0) << out;
    EXPECT_NE(out.find("committed 0 "), std::string::npos) << out;
    committed_line = out.substr(out.find("committed 0 "));
    committed_line = committed_line.substr(0, committed_line.find('\n'));
    // Each committed round consumed everything up to then; the aborted ones start again
    // from the last committed offset.
    EXPECT_EQ(committed_line, "committed 0 25") << out;
    ASSERT_TRUE(wait_cleaned_to(data, offsets, 1, 60s)) << broker.output();
    EXPECT_NE(broker.output().find("cleaned log __consumer_offsets-0"), std::string::npos)
        << broker.output();
    broker.process().send_signal(SIGKILL);
    broker.process().wait_exit(15s);
  }
  // The coordinator rebuilds the group's offsets from the cleaned partition.
  broker_process again(broker_args(), data);
  ASSERT_NE(again.port(), 0) << again.output();
  auto [rc, out] = client(again.port(), "committed", "in g");
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find(committed_line), std::string::npos) << out;
}

}  // namespace
}  // namespace tarn::test
