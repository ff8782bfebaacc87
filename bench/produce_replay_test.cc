// produce_replay against a real `tarn serve`: every acknowledged batch is in the log, and a
// broker error ends the run with a non-zero exit and the error's name. Built only with the
// benchmarks (TARN_BENCH), like the tool.
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "produce_util.h"
#include "test_util.h"

namespace tarn::test {
namespace {

std::unique_ptr<child_process> run_replay(uint16_t port, std::vector<std::string> args) {
  args.insert(args.begin(),
              {PRODUCE_REPLAY, "--bootstrap-server", "127.0.0.1:" + std::to_string(port)});
  return std::make_unique<child_process>(std::move(args));
}

TEST(produce_replay, every_acknowledged_batch_is_in_the_log) {
  broker_process broker;
  ASSERT_NE(broker.port(), 0) << broker.output();
  // 2 partitions, 64 KiB batches, 1 MiB in all: 16 timed requests after one warm-up request
  // per partition.
  auto replay = run_replay(
      broker.port(), {"--topic", "replay", "--create-topic", "--partitions", "2", "--batch-bytes",
                      "65536", "--bytes", "1048576", "--timeout-ms", "30000"});
  auto status = replay->wait_exit(60s);
  ASSERT_TRUE(status && status->exited && status->code == 0) << replay->output();
  const std::string out = replay->output();
  std::smatch summary, figures;
  ASSERT_TRUE(std::regex_search(out, summary,
                                std::regex(R"((\d+) records sent, [\d.]+ records/sec \()"
                                           R"([\d.]+ MB/sec\), [\d.]+ ms avg latency)")))
      << out;
  ASSERT_TRUE(std::regex_search(
      out, figures, std::regex(R"(batch_bytes=(\d+) requests=(\d+) .*records_per_batch=(\d+))")))
      << out;
  const int64_t records = std::stoll(summary[1]);
  const int64_t batch_bytes = std::stoll(figures[1]);
  const int64_t requests = std::stoll(figures[2]);
  const int64_t per_batch = std::stoll(figures[3]);
  EXPECT_GE(batch_bytes, 1048576);
  EXPECT_EQ(records, requests * per_batch);

  int64_t stored_records = 0;
  int64_t stored_batches = 0;
  for (int32_t partition = 0; partition < 2; ++partition) {
    for (const auto& [base, batch] : fetch_all(broker.port(), "replay", partition)) {
      ++stored_batches;
      stored_records += 1 + get_int32(batch, 23);  // last offset delta
    }
  }
  EXPECT_EQ(stored_batches, requests + 2);  // the timed requests and the two warm-up ones
  EXPECT_EQ(stored_records, records + 2 * per_batch);
}

TEST(produce_replay, connections_share_the_bytes_and_the_partitions) {
  broker_process broker;
  ASSERT_NE(broker.port(), 0) << broker.output();
  // 3 connections on 3 partitions (one each), 64 KiB batches, 1.5 MiB in all.
  auto replay = run_replay(broker.port(), {"--topic", "replay3", "--create-topic", "--partitions",
                                           "3", "--connections", "3", "--batch-bytes", "65536",
                                           "--bytes", "1572864", "--timeout-ms", "30000"});
  auto status = replay->wait_exit(60s);
  ASSERT_TRUE(status && status->exited && status->code == 0) << replay->output();
  const std::string out = replay->output();
  std::smatch figures;
  ASSERT_TRUE(std::regex_search(
      out, figures,
      std::regex(R"(batch_bytes=(\d+) requests=(\d+) .*records_per_batch=(\d+).*connections=3)")))
      << out;
  const int64_t requests = std::stoll(figures[2]);
  EXPECT_GE(std::stoll(figures[1]), 1572864);
  for (int32_t partition = 0; partition < 3; ++partition) {
    // Each connection's share (8 requests) and its warm-up request, all on its own partition.
    EXPECT_EQ(static_cast<int64_t>(fetch_all(broker.port(), "replay3", partition).size()),
              requests / 3 + 1)
        << "partition " << partition;
  }
}

TEST(produce_replay, batches_in_the_codec_asked_for) {
  broker_process broker;
  ASSERT_NE(broker.port(), 0) << broker.output();
  // The shape of the producer's speed cells: 16 KiB batches of 1 KiB records, lz4, acks=all.
  auto replay =
      run_replay(broker.port(), {"--topic", "replay_lz4", "--create-topic", "--batch-bytes",
                                 "16384", "--compression-type", "lz4", "--acks", "-1", "--bytes",
                                 "262144", "--timeout-ms", "30000"});
  auto status = replay->wait_exit(60s);
  ASSERT_TRUE(status && status->exited && status->code == 0) << replay->output();
  const std::string out = replay->output();
  std::smatch figures;
  ASSERT_TRUE(std::regex_search(
      out, figures,
      std::regex(R"(requests=(\d+) .*records_per_batch=(\d+) .*compression_type=lz4)")))
      << out;
  const int64_t requests = std::stoll(figures[1]);
  const int64_t per_batch = std::stoll(figures[2]);
  // Random letters barely shrink, so the size rule at ratio 1.0 fills a batch as uncompressed.
  EXPECT_GE(per_batch, 14);
  EXPECT_LE(per_batch, 16);

  int64_t stored_batches = 0;
  for (const auto& [base, batch] : fetch_all(broker.port(), "replay_lz4", 0)) {
    ++stored_batches;
    EXPECT_EQ(get_int16(batch, 21) & 0x7, 3) << "batch at offset " << base << " is not lz4";
    EXPECT_EQ(1 + get_int32(batch, 23), per_batch);
  }
  EXPECT_EQ(stored_batches, requests + 1);  // the timed requests and the warm-up one
}

TEST(produce_replay, a_broker_error_fails_the_run) {
  broker_process broker;
  ASSERT_NE(broker.port(), 0) << broker.output();
  // No such topic and no --create-topic: the warm-up retries until the timeout, then fails.
  // The timeout bounds the whole run (connect, building the batches, the warm-up): 1 s was too
  // short on a loaded machine (a sanitizer build beside it), the first answer not yet in.
  auto replay = run_replay(broker.port(), {"--topic", "missing", "--timeout-ms", "5000"});
  auto status = replay->wait_exit(30s);
  ASSERT_TRUE(status && status->exited) << replay->output();
  EXPECT_NE(status->code, 0);
  EXPECT_NE(replay->output().find("UNKNOWN_TOPIC_OR_PARTITION"), std::string::npos)
      << replay->output();
}

}  // namespace
}  // namespace tarn::test
