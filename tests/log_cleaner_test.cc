// Log compaction end to end (issue 21): the real `tarn serve` with its cleaner threads, a
// compacted topic written by librdkafka (kcat) with many versions per key and some tombstones,
// read back by kcat: the latest value of every key, each key once in the cleaned part of the log,
// offsets strictly increasing. Then SIGKILLs at random moments while the cleaner works, each
// restart recovering the swap files it left: still the latest value of every key, nothing
// acknowledged lost.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <sstream>
#include <thread>

#include "cleaner_util.h"
#include "test_util.h"

namespace tarn::test {
namespace {

namespace fs = std::filesystem;
constexpr int keys = 200;

std::vector<std::string> broker_args() {
  return {"--override", "log.cleaner.backoff.ms=100", "--override",
          "log.cleaner.dedupe.buffer.size=65536"};  // 2730 slots: several passes
}

bool create_topic(uint16_t port) {
  auto [rc, out] = run_command(fmt::format(
      "timeout 60 {} topics --bootstrap-server 127.0.0.1:{} --create --topic kv --partitions 1 "
      "--config cleanup.policy=compact --config segment.ms=300 "
      "--config min.cleanable.dirty.ratio=0.01",
      TARN_BINARY, port));
  EXPECT_EQ(rc, 0) << out;
  return rc == 0;
}

// One round: every key gets the value "r<round>"; `tombstones` keys (k0, k1, ...) are deleted
// after it. Updates `expected` (key -> value, "" for a tombstone).
void produce_round(uint16_t port, const fs::path& dir, int round, int tombstones,
                   std::map<std::string, std::string>& expected) {
  const fs::path input = dir / "input.txt";
  {
    std::ofstream out(input, std::ios::trunc);
    for (int k = 0; k < keys; ++k) {
      out << "k" << k << ":r" << round << "-" << std::string(40, 'x') << "\n";
      expected[fmt::format("k{}", k)] = fmt::format("r{}-{}", round, std::string(40, 'x'));
    }
  }
  auto [rc, out] = run_command(
      fmt::format("timeout 60 kcat -P -b 127.0.0.1:{} -t kv -K: -z lz4 -X linger.ms=5 -l {}", port,
                  input.string()));
  ASSERT_EQ(rc, 0) << out;
  if (tombstones > 0) {
    std::ofstream t(input, std::ios::trunc);
    for (int k = 0; k < tombstones; ++k) {
      t << "k" << k << ":\n";
      expected[fmt::format("k{}", k)] = "";
    }
    t.close();
    auto [rc2, out2] = run_command(
        fmt::format("timeout 60 kcat -P -b 127.0.0.1:{} -t kv -K: -Z -l {}", port, input.string()));
    ASSERT_EQ(rc2, 0) << out2;
  }
}

struct read_back {
  std::vector<std::pair<int64_t, std::string>> keys;  // (offset, key), in order
  std::map<std::string, std::string> last;            // key -> last value read
};

read_back consume(uint16_t port) {
  read_back r;
  auto [rc, out] = run_command(
      fmt::format("timeout 60 kcat -C -b 127.0.0.1:{} -t kv -e -q -f '%o %k %s\\n'", port));
  EXPECT_EQ(rc, 0) << out;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    int64_t offset = -1;
    std::string key, value;
    fields >> offset >> key >> value;
    if (offset < 0 || key.empty()) continue;
    r.keys.emplace_back(offset, key);
    r.last[key] = value;
  }
  return r;
}

void expect_compacted(const read_back& r, const std::map<std::string, std::string>& expected,
                      int64_t cleaned_to) {
  EXPECT_EQ(r.last, expected);
  int64_t previous = -1;
  std::map<std::string, int> below;
  for (const auto& [offset, key] : r.keys) {
    EXPECT_GT(offset, previous);
    previous = offset;
    if (offset < cleaned_to && ++below[key] > 1)
      ADD_FAILURE() << key << " twice below " << cleaned_to;
  }
}

TEST(LogCleaner, CompactedTopicReadsBackTheLatestValuePerKey) {
  if (!have_program("kcat")) GTEST_SKIP() << "kcat not installed";
  broker_process broker(broker_args());
  ASSERT_NE(broker.port(), 0) << broker.output();
  ASSERT_TRUE(create_topic(broker.port()));
  temp_dir work;
  std::map<std::string, std::string> expected;
  const int rounds = 12;
  for (int round = 0; round < rounds; ++round) {
    produce_round(broker.port(), work.path(), round, round == rounds - 2 ? 10 : 0, expected);
    std::this_thread::sleep_for(std::chrono::milliseconds(350));  // > segment.ms: next round rolls
  }
  // Everything but the last round is in rolled segments: wait for the cleaner to pass it.
  const int64_t produced = int64_t{rounds} * keys + 10;
  ASSERT_TRUE(wait_cleaned_to(broker.data_dir(), "kv", produced - keys, 60s)) << broker.output();
  read_back r = consume(broker.port());
  expect_compacted(r, expected, cleaner_checkpoint(broker.data_dir(), "kv"));
  EXPECT_LT(static_cast<int64_t>(r.keys.size()), produced / 3);
  EXPECT_NE(broker.output().find("Log cleaner thread 0 cleaned log kv-0 (dirty section = [0, "),
            std::string::npos)
      << broker.output();
  EXPECT_NE(broker.output().find("% size reduction"), std::string::npos);
}

TEST(LogCleaner, SigkillWhileCleaningLosesNothing) {
  if (!have_program("kcat")) GTEST_SKIP() << "kcat not installed";
  temp_dir work;
  const fs::path data = work.path() / "data";
  std::map<std::string, std::string> expected;
  std::mt19937 rng(21);
  int round = 0;
  {
    broker_process broker(broker_args(), data);
    ASSERT_NE(broker.port(), 0) << broker.output();
    ASSERT_TRUE(create_topic(broker.port()));
    for (; round < 4; ++round) {
      produce_round(broker.port(), work.path(), round, 0, expected);
      std::this_thread::sleep_for(std::chrono::milliseconds(350));
    }
    broker.process().send_signal(SIGKILL);
    broker.process().wait_exit(std::chrono::seconds(10));
  }
  int recovered_swaps = 0;  // restarts that found a cleaning interrupted
  for (int kill = 0; kill < 4; ++kill) {
    broker_process broker(broker_args(), data);
    ASSERT_NE(broker.port(), 0) << broker.output();
    if (broker.output().find("interrupted cleaning recovered") != std::string::npos) {
      ++recovered_swaps;
    }
    read_back r = consume(broker.port());
    EXPECT_EQ(r.last, expected) << "after kill " << kill;
    produce_round(broker.port(), work.path(), round++, 5, expected);
    std::this_thread::sleep_for(std::chrono::milliseconds(350));
    produce_round(broker.port(), work.path(), round++, 0, expected);
    // Somewhere in the cleaning that starts now (backoff 100 ms) or in the next.
    std::this_thread::sleep_for(
        std::chrono::milliseconds(std::uniform_int_distribution(0, 400)(rng)));
    broker.process().send_signal(SIGKILL);
    broker.process().wait_exit(std::chrono::seconds(10));
  }
  broker_process broker(broker_args(), data);
  ASSERT_NE(broker.port(), 0) << broker.output();
  if (broker.output().find("interrupted cleaning recovered") != std::string::npos) {
    ++recovered_swaps;
  }
  // Timing decides whether a kill lands inside a swap; the unit tests cover every file state.
  std::printf("restarts that recovered an interrupted cleaning: %d of 5\n", recovered_swaps);
  produce_round(broker.port(), work.path(), round++, 0, expected);  // rolls the last round
  std::this_thread::sleep_for(std::chrono::milliseconds(350));
  produce_round(broker.port(), work.path(), round++, 0, expected);
  read_back before = consume(broker.port());
  ASSERT_FALSE(before.keys.empty());
  ASSERT_TRUE(wait_cleaned_to(data, "kv", before.keys.back().first + 1 - keys, 60s))
      << broker.output();
  read_back r = consume(broker.port());
  expect_compacted(r, expected, cleaner_checkpoint(data, "kv"));
  for (const auto& e : fs::directory_iterator(data / "kv-0")) {
    const std::string name = e.path().filename().string();
    EXPECT_FALSE(name.ends_with(".cleaned") || name.ends_with(".swap")) << name;
  }
}

}  // namespace
}  // namespace tarn::test
