// A Kafka Streams 4.4.0 application with processing.guarantee=exactly_once_v2 against the real
// `tarn serve` and against Apache Kafka 4.4.0 (scripts/kafka-ref), with the same expectations:
// the word count of tests/java/StreamsWordCount.java (a repartition topic, a state store with
// its compacted changelog, transactions over two stream threads) is crashed mid-run (the JVM
// halted with transactions open), restarted on the same state directory with more input, and
// must still have counted every line exactly once: the restarted instance fences the dead one's
// transactional ids, its read_committed consumers skip the aborted output, and its store is
// restored from the changelog. The counts are computed here, so both brokers are held to one
// answer.
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "kafka_ref_broker.h"
#include "test_util.h"

namespace tarn::test {
namespace {

enum class broker_kind { tarn, kafka };

std::string kind_name(const ::testing::TestParamInfo<broker_kind>& info) {
  return info.param == broker_kind::tarn ? "tarn" : "kafka";
}

// Kafka Streams' jars (with RocksDB's), fetched apart from the broker's; "" without java.
const std::string& streams_libs() {
  static const std::string libs = [] {
    if (!have_program("java")) return std::string();
    auto [rc, out] = run_command("timeout 600 " + std::string(TARN_SOURCE_DIR) +
                                 "/scripts/kafka-ref streams-libs");
    while (!out.empty() && (out.back() == '\n' || out.back() == ' ')) out.pop_back();
    const std::string dir = out.substr(out.rfind('\n') + 1);  // its last line
    return rc == 0 && std::filesystem::exists(dir) ? dir : std::string();
  }();
  return libs;
}

// The "count WORD N" lines StreamsWordCount prints for lines 0..to-1, sorted as it sorts them.
std::vector<std::string> expected_counts(int to) {
  std::map<std::string, long> counts;
  for (int i = 0; i < to; ++i) {
    for (int m : {7, 11, 13}) ++counts["w" + std::to_string(i % m)];
  }
  std::vector<std::string> lines;
  for (const auto& [word, n] : counts) lines.push_back("count " + word + " " + std::to_string(n));
  return lines;
}

class streams : public ::testing::TestWithParam<broker_kind> {
 protected:
  void SetUp() override {
#ifdef TARN_SANITIZED_BUILD
    // A minute of JVM work per half: the release build runs it; the sanitizer trees cover the
    // same broker paths with the transactions*, txn_* and groups tests (CI's time budget).
    GTEST_SKIP() << "the Kafka Streams application runs in the release build only";
#endif
    if (streams_libs().empty()) GTEST_SKIP() << "java or the Kafka Streams 4.4.0 jars are missing";
    if (GetParam() == broker_kind::kafka) {
      if (kafka_libs().empty()) GTEST_SKIP() << "java or the Kafka 4.4.0 jars are missing";
      ASSERT_EQ(kafka_broker::instance().start(), "");
      port_ = kafka_broker::instance().port();
    } else {
      // kafka-ref's broker runs with group.initial.rebalance.delay.ms=0; so does this one.
      tarn_ = std::make_unique<broker_process>(
          std::vector<std::string>{"--override", "group.initial.rebalance.delay.ms=0"});
      ASSERT_NE(tarn_->port(), 0) << tarn_->output();
      port_ = tarn_->port();
    }
  }
  void TearDown() override {
    if (tarn_) tarn_->stop();
  }

  std::string bootstrap() const { return "127.0.0.1:" + std::to_string(port_); }

  // One run of the application over lines from..to-1 (halting at `halt_at` committed words).
  std::pair<int, std::string> run_app(const std::string& app, int from, int to,
                                      long halt_at = -1) const {
    std::string cmd = "timeout 200 java -cp '" + streams_libs() + "/*' " +
                      std::string(TARN_SOURCE_DIR) + "/tests/java/StreamsWordCount.java " +
                      bootstrap() + " " + app + " " + app + "-in " + app + "-out " +
                      (state_.path() / "state").string() + " " + std::to_string(from) + " " +
                      std::to_string(to);
    if (halt_at >= 0) cmd += " " + std::to_string(halt_at);
    return run_command(cmd + " 2>&1");
  }

  uint16_t port_ = 0;
  std::unique_ptr<broker_process> tarn_;
  temp_dir state_;
};

TEST_P(streams, word_count_stays_exactly_once_over_a_crash_of_the_application) {
  const std::string app = GetParam() == broker_kind::tarn ? "wc-tarn" : "wc-kafka";
  // 100,000 lines, halted once a third of their 300,000 words are counted and committed: the
  // stream threads are mid-transaction then (they commit every 100 ms).
  auto [rc, out] = run_app(app, 0, 100000, 100000);
  ASSERT_EQ(rc, 3) << out;  // halted, not finished or failed
  ASSERT_EQ(lines_with(out, "halting at ").size(), 1u) << out;
  EXPECT_TRUE(lines_with(out, "uncaught ").empty()) << out;

  // The same application and state directory, 50,000 more lines.
  std::tie(rc, out) = run_app(app, 100000, 150000);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_EQ(lines_with(out, "count "), expected_counts(150000)) << out;
  EXPECT_EQ(lines_with(out, "total "), std::vector<std::string>{"total 450000"}) << out;
  // Each word's counts, read committed, only ever grow: nothing counted twice and then undone.
  EXPECT_TRUE(lines_with(out, "not increasing ").empty()) << out;
  EXPECT_TRUE(lines_with(out, "uncaught ").empty()) << out;

  // The store's changelog was created by Streams as a compacted topic.
  if (!kafka_libs().empty()) {
    auto [trc, tout] =
        run_command("timeout 60 " + std::string(TARN_SOURCE_DIR) +
                    "/scripts/kafka-ref tool topics --bootstrap-server " + bootstrap() +
                    " --describe --topic " + app + "-counts-changelog 2>&1");
    EXPECT_EQ(trc, 0) << tout;
    EXPECT_NE(tout.find("cleanup.policy=compact"), std::string::npos) << tout;
  }
}

INSTANTIATE_TEST_SUITE_P(brokers, streams, ::testing::Values(broker_kind::tarn, broker_kind::kafka),
                         kind_name);

}  // namespace
}  // namespace tarn::test
