// DeleteRecords (key 21) end to end, against `tarn serve` and against Apache Kafka 4.4.0
// (scripts/kafka-ref, when java and its jars are there) with the same assertions, so every
// expected answer is Kafka's:
//   - hand-built requests at v0, v1 and v2: the low watermark moves and never back, -1 means the
//     high watermark, above it or below -1 OFFSET_OUT_OF_RANGE, an unknown topic or partition
//     UNKNOWN_TOPIC_OR_PARTITION, a compact-only topic POLICY_VIOLATION, __consumer_offsets
//     INVALID_TOPIC_EXCEPTION; ListOffsets EARLIEST answers the new start, a Fetch below it
//     OFFSET_OUT_OF_RANGE with the log start offset;
//   - Kafka's kafka-delete-records (DeleteRecordsCommand from the 4.4.0 jars) prints the same on
//     both brokers, and kcat reading from the beginning starts at the new low watermark;
//   - tarn only: the start survives a SIGKILL and restart (log-start-offset-checkpoint); the
//     retention task runs every log.retention.check.interval.ms (retention.bytes).
// GCC 12's -Wrestrict misfires on std::string operator+ with literals (GCC bug 105329).
#pragma GCC diagnostic ignored "-Wrestrict"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "kafka_client.h"
#include "kafka_ref_broker.h"
#include "protocol/error_codes.h"
#include "protocol/messages/delete_records_request.h"
#include "protocol/messages/delete_records_response.h"
#include "protocol/messages/fetch_request.h"
#include "protocol/messages/fetch_response.h"
#include "protocol/messages/find_coordinator_request.h"
#include "protocol/messages/find_coordinator_response.h"
#include "protocol/messages/list_offsets_request.h"
#include "protocol/messages/list_offsets_response.h"
#include "test_util.h"

namespace tarn::test {
namespace {

using protocol::error_code;

// Kafka 4.4.0, one per process, started on first use.

struct partition_answer {
  int16_t error = -100;
  int64_t low_watermark = -100;
};

class delete_records : public ::testing::TestWithParam<broker_kind> {
 protected:
  void SetUp() override {
    if (!have_program("kcat")) GTEST_SKIP() << "kcat is missing";
    if (auto skip = start_test_broker(GetParam(), {}, tarn_, port_); !skip.empty()) {
      GTEST_SKIP() << skip;
    }
    ASSERT_NE(port_, 0);
    prefix_ = test_name_prefix();
  }
  void TearDown() override {
    if (tarn_) tarn_->stop();
  }

  std::string bootstrap() const { return "127.0.0.1:" + std::to_string(port_); }
  std::string topic(const std::string& t = "topic") const { return prefix_ + t; }

  std::unique_ptr<tools::kafka_client> client() const {
    auto c = tools::kafka_client::connect(bootstrap());
    EXPECT_TRUE(c.has_value());
    return c ? std::move(*c) : nullptr;
  }

  void create_topic(const std::string& name, int partitions, const std::string& extra = "") const {
    auto [rc, out] = run_command(
        std::string("timeout 60 ") + TARN_BINARY + " topics --bootstrap-server " + bootstrap() +
        " --create --topic " + name + " --partitions " + std::to_string(partitions) + " " + extra);
    ASSERT_EQ(rc, 0) << out;
  }

  // `count` records "v<i>" into one partition, acknowledged.
  void produce(const std::string& name, int partition, int count) const {
    std::string lines;
    for (int i = 0; i < count; ++i) lines += "v" + std::to_string(i) + "\n";
    temp_dir dir;
    auto input = dir.write_file("records.txt", lines);
    auto [rc, out] = run_command("timeout 60 kcat -P -b " + bootstrap() + " -t " + name + " -p " +
                                 std::to_string(partition) + " -X acks=all <" + input.string());
    ASSERT_EQ(rc, 0) << out;
  }

  // The offsets kcat reads from the beginning of a partition.
  std::vector<int64_t> consume_offsets(const std::string& name, int partition) const {
    auto [rc, out] =
        run_command("timeout 60 kcat -C -q -b " + bootstrap() + " -t " + name + " -p " +
                    std::to_string(partition) + " -o beginning -e -f '%o\\n'");
    EXPECT_EQ(rc, 0) << out;
    std::vector<int64_t> offsets;
    std::istringstream in(out);
    std::string line;
    while (std::getline(in, line)) {
      if (!line.empty()) offsets.push_back(std::stoll(line));
    }
    return offsets;
  }

  // One DeleteRecords request with one partition; the answer for it.
  partition_answer delete_one(tools::kafka_client& c, const std::string& name, int32_t partition,
                              int64_t offset, int16_t version) const {
    protocol::delete_records_request req;
    protocol::delete_records_request::delete_records_topic t;
    t.name = name;
    t.partitions.push_back({partition, offset});
    req.topics.push_back(t);
    req.timeout_ms = 30000;
    std::vector<uint8_t> buf;
    auto r = tools::call<protocol::delete_records_response>(c, req, version, buf);
    EXPECT_TRUE(r.has_value()) << (r ? "" : r.error());
    if (!r || r->topics.size() != 1 || r->topics[0].partitions.size() != 1) {
      ADD_FAILURE() << "not one partition in the answer";
      return {};
    }
    EXPECT_EQ(r->topics[0].name, name);
    EXPECT_EQ(r->topics[0].partitions[0].partition_index, partition);
    return {r->topics[0].partitions[0].error_code, r->topics[0].partitions[0].low_watermark};
  }

  int64_t earliest(tools::kafka_client& c, const std::string& name, int32_t partition) const {
    protocol::list_offsets_request req;
    req.replica_id = -1;
    protocol::list_offsets_request::list_offsets_topic t;
    t.name = name;
    protocol::list_offsets_request::list_offsets_partition p;
    p.partition_index = partition;
    p.timestamp = -2;
    t.partitions.push_back(p);
    req.topics.push_back(t);
    std::vector<uint8_t> buf;
    auto r = tools::call<protocol::list_offsets_response>(c, req, 7, buf);
    EXPECT_TRUE(r.has_value()) << (r ? "" : r.error());
    if (!r || r->topics.empty() || r->topics[0].partitions.empty()) return -100;
    EXPECT_EQ(r->topics[0].partitions[0].error_code, 0);
    return r->topics[0].partitions[0].offset;
  }

  // A Fetch v12 of one partition from `offset`: its error code and log start offset.
  std::pair<int16_t, int64_t> fetch(tools::kafka_client& c, const std::string& name,
                                    int32_t partition, int64_t offset) const {
    protocol::fetch_request req;
    req.replica_id = -1;
    req.max_wait_ms = 0;
    req.min_bytes = 1;
    protocol::fetch_request::fetch_topic t;
    t.topic = name;
    protocol::fetch_request::fetch_partition p;
    p.partition = partition;
    p.fetch_offset = offset;
    p.partition_max_bytes = 1 << 20;
    t.partitions.push_back(p);
    req.topics.push_back(t);
    std::vector<uint8_t> buf;
    auto r = tools::call<protocol::fetch_response>(c, req, 12, buf);
    EXPECT_TRUE(r.has_value()) << (r ? "" : r.error());
    if (!r || r->responses.empty() || r->responses[0].partitions.empty()) return {-100, -100};
    return {r->responses[0].partitions[0].error_code,
            r->responses[0].partitions[0].log_start_offset};
  }

  std::unique_ptr<broker_process> tarn_;
  uint16_t port_ = 0;
  std::string prefix_;
};

TEST_P(delete_records, moves_the_low_watermark_with_kafkas_errors_at_every_version) {
  create_topic(topic(), 2);
  create_topic(topic("compact"), 1, "--config cleanup.policy=compact");
  produce(topic(), 0, 100);
  auto c = client();
  ASSERT_NE(c, nullptr);

  // Versions 0, 1 and 2 (flexible) answer alike; the start moves 10 per version.
  for (int16_t v = 0; v <= 2; ++v) {
    SCOPED_TRACE("v" + std::to_string(v));
    const int64_t target = 10 * (v + 1);
    auto a = delete_one(*c, topic(), 0, target, v);
    EXPECT_EQ(a.error, 0);
    EXPECT_EQ(a.low_watermark, target);
    // Not backwards: NONE with the current low watermark.
    a = delete_one(*c, topic(), 0, 5, v);
    EXPECT_EQ(a.error, 0);
    EXPECT_EQ(a.low_watermark, target);
    a = delete_one(*c, topic(), 0, 101, v);
    EXPECT_EQ(a.error, code(error_code::offset_out_of_range));
    EXPECT_EQ(a.low_watermark, -1);
    a = delete_one(*c, topic(), 0, -2, v);
    EXPECT_EQ(a.error, code(error_code::offset_out_of_range));
    EXPECT_EQ(a.low_watermark, -1);
    a = delete_one(*c, topic(), 7, 0, v);
    EXPECT_EQ(a.error, code(error_code::unknown_topic_or_partition));
    EXPECT_EQ(a.low_watermark, -1);
    a = delete_one(*c, topic("missing"), 0, 0, v);
    EXPECT_EQ(a.error, code(error_code::unknown_topic_or_partition));
    EXPECT_EQ(a.low_watermark, -1);
    a = delete_one(*c, topic("compact"), 0, 0, v);
    EXPECT_EQ(a.error, code(error_code::policy_violation));
    EXPECT_EQ(a.low_watermark, -1);
    // An empty partition: up to its high watermark 0.
    a = delete_one(*c, topic(), 1, -1, v);
    EXPECT_EQ(a.error, 0);
    EXPECT_EQ(a.low_watermark, 0);
  }
  EXPECT_EQ(earliest(*c, topic(), 0), 30);
  auto [below_error, below_start] = fetch(*c, topic(), 0, 29);
  EXPECT_EQ(below_error, code(error_code::offset_out_of_range));
  EXPECT_EQ(below_start, -1) << "Kafka answers an out-of-range fetch with log start -1";
  auto [at_error, at_start] = fetch(*c, topic(), 0, 30);
  EXPECT_EQ(at_error, 0);
  EXPECT_EQ(at_start, 30);
  auto offsets = consume_offsets(topic(), 0);
  ASSERT_FALSE(offsets.empty());
  EXPECT_EQ(offsets.front(), 30);
  EXPECT_EQ(offsets.back(), 99);
  EXPECT_EQ(offsets.size(), 70u);

  // -1: up to the high watermark; nothing is left to read.
  auto a = delete_one(*c, topic(), 0, -1, 2);
  EXPECT_EQ(a.error, 0);
  EXPECT_EQ(a.low_watermark, 100);
  EXPECT_EQ(earliest(*c, topic(), 0), 100);
  EXPECT_TRUE(consume_offsets(topic(), 0).empty());

  // __consumer_offsets, once a FindCoordinator made it exist: INVALID_TOPIC_EXCEPTION.
  protocol::find_coordinator_request fc;
  const std::string group = prefix_ + "group";
  fc.key = group;
  std::vector<uint8_t> buf;
  bool found = false;
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
       !found && std::chrono::steady_clock::now() < deadline;) {
    auto r = tools::call<protocol::find_coordinator_response>(*c, fc, 2, buf);
    ASSERT_TRUE(r.has_value()) << r.error();
    found = r->error_code == 0;
    if (!found) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_TRUE(found);
  a = delete_one(*c, "__consumer_offsets", 0, -1, 2);
  EXPECT_EQ(a.error, code(error_code::invalid_topic_exception));
  EXPECT_EQ(a.low_watermark, -1);
}

TEST_P(delete_records, kafkas_tool_deletes_and_reports_as_on_kafka) {
  if (kafka_libs().empty()) GTEST_SKIP() << "java or the Kafka 4.4.0 jars are missing";
  create_topic(topic(), 2);
  produce(topic(), 0, 50);
  produce(topic(), 1, 20);
  temp_dir dir;
  auto json = dir.write_file("offsets.json", "{\"partitions\": [{\"topic\": \"" + topic() +
                                                 "\", \"partition\": 0, \"offset\": 42}, "
                                                 "{\"topic\": \"" +
                                                 topic() +
                                                 "\", \"partition\": 1, \"offset\": 21}], "
                                                 "\"version\": 1}");
  auto [rc, out_raw] =
      run_command("timeout 180 java -cp '" + kafka_libs() +
                  "/*' org.apache.kafka.tools.DeleteRecordsCommand "
                  "--bootstrap-server " +
                  bootstrap() + " --offset-json-file " + json.string() + " 2>/dev/null");
  std::string out = out_raw;
  EXPECT_EQ(rc, 0) << out;
  // Without the admin client's log lines ("<ISO time> <thread> ERROR ...", on stdout).
  out = std::regex_replace(out, std::regex("(^|\n)[0-9]{4}-[0-9]{2}-[0-9]{2}T[^\n]*"), "");
  if (out.starts_with("\n")) out.erase(0, 1);
  // The admin client's map order is the same against either broker.
  const std::string p0 = "partition: " + topic() + "-0\tlow_watermark: 42\n";
  const std::string p1 = "partition: " + topic() +
                         "-1\terror: org.apache.kafka.common.errors.OffsetOutOfRangeException: "
                         "The requested offset is not within the range of offsets maintained "
                         "by the server.\n";
  const std::string head =
      "Executing records delete operation\nRecords delete operation completed:\n";
  EXPECT_TRUE(out == head + p0 + p1 || out == head + p1 + p0) << out;
  auto offsets = consume_offsets(topic(), 0);
  ASSERT_EQ(offsets.size(), 8u);
  EXPECT_EQ(offsets.front(), 42);
  EXPECT_EQ(consume_offsets(topic(), 1).size(), 20u);
}

INSTANTIATE_TEST_SUITE_P(brokers, delete_records,
                         ::testing::Values(broker_kind::tarn, broker_kind::kafka), kind_name);

// tarn only: the new start is checkpointed before the answer, so it survives a SIGKILL.
TEST(delete_records_restart, the_low_watermark_survives_a_sigkill) {
  if (!have_program("kcat")) GTEST_SKIP() << "kcat is missing";
  temp_dir data;
  const auto dir = data.path() / "data";
  std::string name = "kept-start";
  {
    broker_process broker({}, dir);
    ASSERT_NE(broker.port(), 0) << broker.output();
    const std::string bootstrap = "127.0.0.1:" + std::to_string(broker.port());
    auto [rc, out] =
        run_command(std::string("timeout 60 ") + TARN_BINARY + " topics --bootstrap-server " +
                    bootstrap + " --create --topic " + name + " --partitions 1");
    ASSERT_EQ(rc, 0) << out;
    std::string lines;
    for (int i = 0; i < 40; ++i) lines += "v" + std::to_string(i) + "\n";
    auto input = data.write_file("records.txt", lines);
    std::tie(rc, out) = run_command("timeout 60 kcat -P -b " + bootstrap + " -t " + name +
                                    " -p 0 -X acks=all <" + input.string());
    ASSERT_EQ(rc, 0) << out;
    auto c = tools::kafka_client::connect(bootstrap);
    ASSERT_TRUE(c.has_value());
    protocol::delete_records_request req;
    protocol::delete_records_request::delete_records_topic t;
    t.name = name;
    t.partitions.push_back({0, 25});
    req.topics.push_back(t);
    std::vector<uint8_t> buf;
    auto r = tools::call<protocol::delete_records_response>(**c, req, 2, buf);
    ASSERT_TRUE(r.has_value()) << r.error();
    ASSERT_EQ(r->topics.at(0).partitions.at(0).error_code, 0);
    ASSERT_EQ(r->topics.at(0).partitions.at(0).low_watermark, 25);
    broker.process().send_signal(SIGKILL);
    ASSERT_TRUE(broker.process().wait_exit(std::chrono::seconds(15)).has_value());
  }
  EXPECT_EQ(read_file(dir / "log-start-offset-checkpoint"), "0\n1\n" + name + " 0 25\n");
  broker_process broker({}, dir);
  ASSERT_NE(broker.port(), 0) << broker.output();
  auto [rc, out] =
      run_command("timeout 60 kcat -C -q -b 127.0.0.1:" + std::to_string(broker.port()) + " -t " +
                  name + " -p 0 -o beginning -e -f '%o\\n'");
  ASSERT_EQ(rc, 0) << out;
  EXPECT_EQ(out.substr(0, 3), "25\n") << out;
  EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), 15) << out;
  broker.stop();
}

// tarn only (Kafka's first retention pass is 30 s after its start): the retention task runs every
// log.retention.check.interval.ms; retention.bytes drops the rolled segment, EARLIEST follows.
TEST(delete_records_retention, runs_every_check_interval) {
  if (!have_program("kcat")) GTEST_SKIP() << "kcat is missing";
  broker_process broker({"--override", "log.retention.check.interval.ms=100"});
  ASSERT_NE(broker.port(), 0) << broker.output();
  const std::string bootstrap = "127.0.0.1:" + std::to_string(broker.port());
  const std::string name = "bounded";
  auto [rc, out] = run_command(std::string("timeout 60 ") + TARN_BINARY +
                               " topics --bootstrap-server " + bootstrap + " --create --topic " +
                               name + " --partitions 1 --config segment.ms=100");
  ASSERT_EQ(rc, 0) << out;
  temp_dir dir;
  auto input = dir.write_file("records.txt", "a\nb\nc\n");
  for (int round = 0; round < 2; ++round) {
    std::tie(rc, out) = run_command("timeout 60 kcat -P -b " + bootstrap + " -t " + name +
                                    " -p 0 -X acks=all <" + input.string());
    ASSERT_EQ(rc, 0) << out;
    std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the next batch rolls
  }
  auto c = tools::kafka_client::connect(bootstrap);
  ASSERT_TRUE(c.has_value());
  // Nothing is due yet: retention.bytes is unlimited.
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  auto earliest = [&] {
    protocol::list_offsets_request req;
    req.replica_id = -1;
    protocol::list_offsets_request::list_offsets_topic t;
    t.name = name;
    protocol::list_offsets_request::list_offsets_partition p;
    p.partition_index = 0;
    p.timestamp = -2;
    t.partitions.push_back(p);
    req.topics.push_back(t);
    std::vector<uint8_t> buf;
    auto r = tools::call<protocol::list_offsets_response>(**c, req, 7, buf);
    return r && !r->topics.empty() && !r->topics[0].partitions.empty()
               ? r->topics[0].partitions[0].offset
               : int64_t{-100};
  };
  EXPECT_EQ(earliest(), 0);
  std::tie(rc, out) =
      run_command(std::string("timeout 60 ") + TARN_BINARY + " topics --bootstrap-server " +
                  bootstrap + " --alter --topic " + name + " --add-config retention.bytes=1");
  ASSERT_EQ(rc, 0) << out;
  int64_t start = 0;
  for (auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
       start != 3 && std::chrono::steady_clock::now() < deadline;) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    start = earliest();
  }
  EXPECT_EQ(start, 3) << broker.output();
  // The pass logs once it has gone over every log and rewritten the checkpoint, which can be
  // after ListOffsets already answers the new start.
  EXPECT_TRUE(
      broker.process().wait_for_output("log retention: retention deleted 1 segment(s)", 10s))
      << broker.output();
  broker.stop();
}

}  // namespace
}  // namespace tarn::test
