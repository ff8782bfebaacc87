// The log cleaner beside Apache Kafka 4.4.0's (issue 21): the same compacted-topic input (many
// versions per key, tombstones, ~5000 records in 1 MiB segments) produced as the same
// hand-built batches to tarn and to Kafka, cleaned by each broker's own cleaner, then read whole
// by the Java consumer 4.4.0 and by librdkafka (kcat). Each broker must give exactly the
// (offset, key, value) list a model of Kafka's cleaner computes from the input, so the two
// brokers give the same list: below the cleaned point the latest record of every key,
// tombstones kept or removed per delete.retention.ms, and everything above it untouched.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "cleaner_util.h"
#include "kafka_ref_broker.h"
#include "produce_util.h"

namespace tarn::test {
namespace {

namespace fs = std::filesystem;

enum class broker_kind { tarn, kafka };

struct cleaner_case {
  broker_kind broker;
  bool short_retention;  // delete.retention.ms short (tombstones go) or a day (they stay)
};

std::string case_name(const ::testing::TestParamInfo<cleaner_case>& info) {
  // The Kafka half's name says "against_kafka" (tests/kafka_tests.regex: it runs in make interop).
  return std::string(info.param.short_retention ? "short_delete_retention_"
                                                : "long_delete_retention_") +
         (info.param.broker == broker_kind::tarn ? "on_tarn" : "against_kafka");
}

constexpr int32_t segment_bytes = 1048576;  // the least segment.bytes Kafka 4.4 accepts
constexpr int64_t short_retention_ms = 500;
constexpr int64_t long_retention_ms = 86400000;
constexpr int keys = 200;
constexpr int versions = 12;
constexpr size_t records_per_batch = 8;

struct input_record {
  int64_t offset;
  std::string key;
  std::optional<std::string> value;  // nullopt: a tombstone
};

// The base offset of the partition's active segment: its highest <base>.log file.
int64_t active_segment_base(const fs::path& partition_dir) {
  int64_t base = -1;
  for (const auto& e : fs::directory_iterator(partition_dir)) {
    if (e.path().extension() != ".log") continue;
    base = std::max<int64_t>(base, std::stoll(e.path().stem().string()));
  }
  return base;
}

// Produces batches to partition 0 of a topic and keeps the model of what the broker stores:
// the offsets it assigns and where it rolls the active segment (Kafka's LogSegment.shouldRoll:
// before a batch that would take a non-empty segment past segment.bytes).
class modelled_producer {
 public:
  modelled_producer(uint16_t port, std::string topic) : client_(port), topic_(std::move(topic)) {}

  // Sends one batch of the records and returns whether the model rolled before it.
  bool send(const std::vector<std::pair<std::string, std::optional<std::string>>>& records) {
    record::batch_builder_config config;
    config.batch_size = 64 << 20;
    record::batch_builder b(config);
    for (const auto& [key, value] : records) {
      std::optional<record::bytes_view> v;
      if (value) v = record::as_bytes(*value);
      b.try_append(1'700'000'000'000, record::as_bytes(key), v);
    }
    const std::vector<uint8_t> batch = *b.build();
    const bool rolled = segment_size_ > 0 && segment_size_ + batch.size() > size_t{segment_bytes};
    if (rolled) {
      active_base_ = next_offset_;
      segment_size_ = 0;
    }
    segment_size_ += batch.size();
    // Kafka may not have elected the new partition's leader yet: a refused batch is not stored.
    produce_answer a;
    for (int attempt = 0; attempt < 100; ++attempt) {
      a = produce_one(client_, correlation_id_++, topic_, 0, batch);
      if (a.error_code != 3 && a.error_code != 5 && a.error_code != 6) break;
      std::this_thread::sleep_for(100ms);
    }
    EXPECT_EQ(a.error_code, 0);
    EXPECT_EQ(a.base_offset, next_offset_);
    for (const auto& [key, value] : records) input_.push_back({next_offset_++, key, value});
    return rolled;
  }

  // Unique keys (they stay through every cleaning) until the model rolls the active segment.
  void pad_until_roll(std::mt19937& rng) {
    for (bool rolled = false; !rolled;) {
      std::vector<std::pair<std::string, std::optional<std::string>>> records;
      for (size_t i = 0; i < records_per_batch; ++i) {
        records.emplace_back(fmt::format("pad{}", pads_),
                             fmt::format("pad{}:", pads_) + std::string(600 + rng() % 800, 'p'));
        ++pads_;
      }
      rolled = send(records);
    }
  }

  int64_t active_base() const { return active_base_; }
  const std::vector<input_record>& input() const { return input_; }

 private:
  raw_client client_;
  std::string topic_;
  int32_t correlation_id_ = 0;
  int64_t next_offset_ = 0;
  int64_t active_base_ = 0;
  size_t segment_size_ = 0;
  int pads_ = 0;
  std::vector<input_record> input_;
};

std::string line_of(int64_t offset, const std::string& key,
                    const std::optional<std::string>& value) {
  return fmt::format("{} {} {}", offset, key, value ? *value : "NULL");
}

// What Kafka's cleaner leaves once it has cleaned everything below `cleaned_to`: there, a record
// stays when it is the latest of its key below that point (Cleaner.shouldRetainRecord) and, for
// a tombstone, when its delete horizon has not passed; every record at or above it stays.
std::vector<std::string> expected_lines(const std::vector<input_record>& input, int64_t cleaned_to,
                                        bool tombstones_removed) {
  std::map<std::string, int64_t> latest;
  for (const auto& r : input) {
    if (r.offset < cleaned_to) latest[r.key] = r.offset;
  }
  std::vector<std::string> lines;
  for (const auto& r : input) {
    if (r.offset < cleaned_to && (latest[r.key] != r.offset || (!r.value && tombstones_removed))) {
      continue;
    }
    lines.push_back(line_of(r.offset, r.key, r.value));
  }
  return lines;
}

// "OFFSET KEY VALUE" lines of a client's output (other lines, e.g. Java's "end N", skipped).
std::vector<std::string> record_lines(const std::string& out) {
  std::vector<std::string> lines;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] >= '0' && line[0] <= '9') lines.push_back(line);
  }
  return lines;
}

// "" when equal, else where the two first differ (lines cut short: values are ~1 KB).
std::string first_difference(const std::vector<std::string>& got,
                             const std::vector<std::string>& want) {
  for (size_t i = 0; i < std::max(got.size(), want.size()); ++i) {
    const std::string g = i < got.size() ? got[i].substr(0, 60) : "(none)";
    const std::string w = i < want.size() ? want[i].substr(0, 60) : "(none)";
    if (i >= got.size() || i >= want.size() || got[i] != want[i]) {
      return fmt::format("record {} of {} (want {}): got '{}', want '{}'", i, got.size(),
                         want.size(), g, w);
    }
  }
  return "";
}

void expect_offsets_increase(const std::vector<std::string>& lines) {
  int64_t previous = -1;
  for (const auto& line : lines) {
    const int64_t offset = std::stoll(line);
    EXPECT_GT(offset, previous);
    previous = offset;
  }
}

class log_cleaner_vs_kafka : public ::testing::TestWithParam<cleaner_case> {
 protected:
  void SetUp() override {
    if (!have_program("kcat")) GTEST_SKIP() << "kcat not installed";
    if (kafka_libs().empty()) GTEST_SKIP() << "java or the Kafka 4.4.0 jars are missing";
    if (GetParam().broker == broker_kind::kafka) {
#ifdef TARN_SANITIZED_BUILD
      GTEST_SKIP() << "the Kafka 4.4.0 reference half runs in the release build only";
#endif
      // Kafka's cleaner thread sleeps log.cleaner.backoff.ms (15 s) when it found nothing.
      ASSERT_EQ(kafka_broker::instance().start(" --property log.cleaner.backoff.ms=100"), "");
      port_ = kafka_broker::instance().port();
      data_dir_ = kafka_broker::instance().data_dir();
    } else {
      tarn_ = std::make_unique<broker_process>(
          std::vector<std::string>{"--override", "log.cleaner.backoff.ms=100"});
      ASSERT_NE(tarn_->port(), 0) << tarn_->output();
      port_ = tarn_->port();
      data_dir_ = tarn_->data_dir();
    }
    // A new name every run: the one Kafka broker serves every test of the process.
    static int runs = 0;
    topic_ = fmt::format("compacted-{}-{}", ::getpid(), runs++);
  }
  void TearDown() override {
    if (tarn_) tarn_->stop();
  }

  std::string bootstrap() const { return fmt::format("127.0.0.1:{}", port_); }

  std::unique_ptr<broker_process> tarn_;
  uint16_t port_ = 0;
  fs::path data_dir_;
  std::string topic_;
};

// Where the input puts its tombstones matters with the short delete.retention.ms: a tombstone's
// delete horizon is set by the first cleaning that keeps it (start of that cleaning +
// delete.retention.ms) and it goes in a later cleaning past the horizon, and when each broker's
// cleaner runs while the input is produced is its own timing. So every tombstone is written into
// one segment, and that segment is rolled only by the roll that ends phase 1: exactly one
// cleaning (the one up to the phase's active segment) covers it before the test has seen the
// checkpoint pass that segment, so every tombstone has its horizon, and none has gone, on both
// brokers. The test then waits delete.retention.ms and more, and phase 2 rolls one more
// segment: its cleaning is past every horizon (short retention: all tombstones go) or before
// all of them (a day: all stay). Kafka never cleans the active segment; the input ends each
// phase right after a roll, so the cleaned point is known from the input and the same on both.
TEST_P(log_cleaner_vs_kafka, keeps_the_same_records_as_kafka_4_4) {
  const int64_t retention_ms = GetParam().short_retention ? short_retention_ms : long_retention_ms;
  ASSERT_EQ(create_topic(port_, topic_, 1,
                         {{"cleanup.policy", "compact"},
                          {"segment.bytes", std::to_string(segment_bytes)},
                          {"min.cleanable.dirty.ratio", "0.01"},
                          {"min.compaction.lag.ms", "0"},
                          {"delete.retention.ms", std::to_string(retention_ms)}}),
            0);
  std::mt19937 rng(21);
  modelled_producer producer(port_, topic_);
  // Phase 1: every key in 12 versions, each round in its own order; values 0.6-1.4 KB.
  std::vector<int> order(keys);
  for (int k = 0; k < keys; ++k) order[static_cast<size_t>(k)] = k;
  for (int v = 0; v < versions; ++v) {
    std::shuffle(order.begin(), order.end(), rng);
    for (size_t i = 0; i < order.size(); i += records_per_batch) {
      std::vector<std::pair<std::string, std::optional<std::string>>> records;
      for (size_t j = i; j < std::min(order.size(), i + records_per_batch); ++j) {
        records.emplace_back(fmt::format("k{}", order[j]),
                             fmt::format("k{}@{}:", order[j], v) +
                                 std::string(600 + rng() % 800, static_cast<char>('a' + v)));
      }
      producer.send(records);
    }
  }
  // The tombstones, in a segment of their own (see above): every 5th key deleted, every 10th
  // written again after that, every 40th deleted once more.
  producer.pad_until_roll(rng);
  const int64_t tombstone_segment = producer.active_base();
  auto send_keys = [&](int every, const char* value) {
    std::vector<std::pair<std::string, std::optional<std::string>>> records;
    for (int k = 0; k < keys; k += every) {
      std::optional<std::string> v;
      if (value != nullptr) v = fmt::format("k{}@{}", k, value);
      records.emplace_back(fmt::format("k{}", k), v);
      if (records.size() == records_per_batch || k + every >= keys) {
        EXPECT_FALSE(producer.send(records)) << "the tombstones' segment rolled";
        records.clear();
      }
    }
  };
  send_keys(5, nullptr);
  send_keys(10, "again");
  send_keys(40, nullptr);
  ASSERT_EQ(producer.active_base(), tombstone_segment);
  producer.pad_until_roll(rng);
  const int64_t phase1_cleaned = producer.active_base();
  ASSERT_TRUE(wait_cleaned_to(data_dir_, topic_, phase1_cleaned, 120s))
      << "checkpoint " << cleaner_checkpoint(data_dir_, topic_) << ", want " << phase1_cleaned;
  EXPECT_EQ(active_segment_base(data_dir_ / (topic_ + "-0")), phase1_cleaned);

  // Phase 2, after every horizon of the short retention: unique keys until one more roll.
  std::this_thread::sleep_for(std::chrono::milliseconds(short_retention_ms + 700));
  producer.pad_until_roll(rng);
  const int64_t cleaned_to = producer.active_base();
  ASSERT_TRUE(wait_cleaned_to(data_dir_, topic_, cleaned_to, 120s))
      << "checkpoint " << cleaner_checkpoint(data_dir_, topic_) << ", want " << cleaned_to;
  EXPECT_EQ(active_segment_base(data_dir_ / (topic_ + "-0")), cleaned_to);

  const std::vector<std::string> want =
      expected_lines(producer.input(), cleaned_to, GetParam().short_retention);
  // The model itself: each of the 200 keys once, as its latest value, less the 25 whose latest
  // record is a tombstone when those go.
  std::map<std::string, std::string> latest;
  for (const auto& line : want) {
    std::istringstream fields(line);
    int64_t offset = 0;
    std::string key, value;
    fields >> offset >> key >> value;
    if (key.starts_with("k")) {
      EXPECT_TRUE(latest.emplace(key, value).second) << key << " twice";
    }
  }
  EXPECT_EQ(latest.size(), GetParam().short_retention ? keys - 25u : size_t{keys});
  EXPECT_EQ(latest["k1"].substr(0, 6), "k1@11:");
  EXPECT_EQ(latest["k10"], "k10@again");
  EXPECT_EQ(latest.count("k5"), GetParam().short_retention ? 0u : 1u);
  std::printf("%zu records produced, %zu expected after cleaning to offset %lld\n",
              producer.input().size(), want.size(), static_cast<long long>(cleaned_to));

  auto [kcat_rc, kcat_out] = run_command(
      fmt::format("timeout 60 kcat -C -b {} -t {} -p 0 -o beginning -e -q -Z -f '%o %k %s\\n'",
                  bootstrap(), topic_));
  ASSERT_EQ(kcat_rc, 0) << kcat_out.substr(0, 2000);
  const std::vector<std::string> kcat_lines = record_lines(kcat_out);
  EXPECT_EQ(first_difference(kcat_lines, want), "") << "kcat";
  expect_offsets_increase(kcat_lines);

  auto [java_rc, java_out] =
      run_command(fmt::format("timeout 90 java -cp '{}/*' {}/tests/java/CompactedRead.java {} {} "
                              "2>/dev/null",
                              kafka_libs(), TARN_SOURCE_DIR, bootstrap(), topic_));
  ASSERT_EQ(java_rc, 0) << java_out.substr(0, 2000);
  EXPECT_NE(java_out.find(fmt::format("end {}", producer.input().size())), std::string::npos)
      << java_out.substr(java_out.size() - std::min<size_t>(java_out.size(), 2000));
  const std::vector<std::string> java_lines = record_lines(java_out);
  EXPECT_EQ(first_difference(java_lines, want), "") << "java";
}

INSTANTIATE_TEST_SUITE_P(brokers, log_cleaner_vs_kafka,
                         ::testing::Values(cleaner_case{broker_kind::tarn, true},
                                           cleaner_case{broker_kind::tarn, false},
                                           cleaner_case{broker_kind::kafka, true},
                                           cleaner_case{broker_kind::kafka, false}),
                         case_name);

}  // namespace
}  // namespace tarn::test
