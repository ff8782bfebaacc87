// Appends to different partitions run at once (issue 26: no broker-wide lock on the data path):
// 8 producers on 8 connections over 4 event loops append to 64 partitions while readers fetch
// them and other clients create, write to and delete topics. Afterwards every acknowledged
// record is at its offset, once, each partition's offsets are contiguous, and the churned topics
// are gone. Under ThreadSanitizer (make test-tsan) this is the race check of the locking.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "kafka_client.h"
#include "produce_util.h"
#include "protocol/messages/delete_topics_request.h"
#include "protocol/messages/delete_topics_response.h"
#include "record/record_batch.h"
#include "test_util.h"

namespace tarn::test {
namespace {

using namespace std::chrono_literals;

constexpr int32_t hot_partitions = 64;
constexpr int producers = 8;
constexpr int batches_per_producer = 160;

// The value of the one record of a stored batch (value_batch's layout: no key, no headers).
std::string value_of(std::span<const uint8_t> batch) {
  record::record_batch_view view(batch);
  auto records = record::batch_records::open(view, 1 << 20);
  if (!records) return "<undecodable>";
  record::record_reader reader = records->reader();
  record::record_view r;
  if (!reader.next(r) || !r.value) return "<no value>";
  return std::string(r.value->begin(), r.value->end());
}

int16_t delete_topic(uint16_t port, const std::string& name) {
  auto c = tools::kafka_client::connect("127.0.0.1:" + std::to_string(port));
  if (!c) return -100;
  protocol::delete_topics_request req;
  req.topic_names = {name};
  req.timeout_ms = 30000;
  std::vector<uint8_t> buf;
  auto answer = tools::call<protocol::delete_topics_response>(**c, req, 4, buf);
  if (!answer || answer->responses.empty()) return -100;
  return answer->responses[0].error_code;
}

TEST(PartitionLocks, ProducersOnManyPartitionsWhileTopicsComeAndGo) {
  broker_process broker({"--override", "num.network.threads=4"});
  ASSERT_NE(broker.port(), 0) << broker.output();
  const uint16_t port = broker.port();
  ASSERT_EQ(create_topic(port, "hot", hot_partitions), 0);

  struct acked {
    int32_t partition;
    int64_t offset;
    std::string value;
  };
  std::mutex acked_mu;
  std::vector<acked> acks;
  std::atomic<int> failures{0};
  std::atomic<bool> producing{true};

  std::vector<std::thread> threads;
  for (int p = 0; p < producers; ++p) {
    threads.emplace_back([&, p] {
      raw_client c(port);
      for (int i = 0; i < batches_per_producer; ++i) {
        const int32_t partition = (p * 7 + i) % hot_partitions;
        const std::string value = fmt::format("producer {} record {}", p, i);
        produce_answer a = produce_one(c, i, "hot", partition, value_batch(value));
        if (a.error_code != 0 || a.correlation_id != i) {
          ++failures;
          ADD_FAILURE() << "producer " << p << " record " << i << ": error " << a.error_code;
          return;
        }
        std::lock_guard lock(acked_mu);
        acks.push_back({partition, a.base_offset, value});
      }
    });
  }
  // Readers: fetches of the hot partitions while they grow (reads under the same locks).
  std::atomic<int> fetched{0};
  for (int r = 0; r < 2; ++r) {
    threads.emplace_back([&, r] {
      raw_client c(port);
      for (int i = 0; producing.load(); ++i) {
        const int32_t partition = (r * 31 + i) % hot_partitions;
        if (!c.send_bytes(fetch_frame(i, "hot", partition, 0, 0, 0))) break;
        fetch_answer a = decode_fetch(c.read_frame(30s));
        EXPECT_EQ(a.error_code, 0) << "fetch of hot-" << partition;
        if (a.error_code != 0) break;
        ++fetched;
      }
    });
  }
  // Churn: topics created, written and deleted while the producers run.
  std::atomic<int> churned{0};
  threads.emplace_back([&] {
    for (int k = 0; producing.load() || k < 3; ++k) {
      const std::string name = fmt::format("churn-{}", k);
      EXPECT_EQ(create_topic(port, name, 4), 0) << name;
      raw_client c(port);
      EXPECT_EQ(produce_one(c, 1, name, k % 4, value_batch("churned")).error_code, 0) << name;
      EXPECT_EQ(delete_topic(port, name), 0) << name;
      ++churned;
    }
  });

  for (int p = 0; p < producers; ++p) threads[static_cast<size_t>(p)].join();
  producing.store(false);
  for (size_t t = producers; t < threads.size(); ++t) threads[t].join();
  ASSERT_EQ(failures.load(), 0) << broker.output();
  ASSERT_EQ(acks.size(), size_t{producers * batches_per_producer});
  EXPECT_GE(churned.load(), 3);
  EXPECT_GT(fetched.load(), 0);

  // Every partition: contiguous offsets from 0 (fetch_all checks), every acknowledged record
  // at its offset, nothing else.
  std::map<int32_t, std::map<int64_t, std::string>> expected;
  for (const acked& a : acks) {
    EXPECT_TRUE(expected[a.partition].emplace(a.offset, a.value).second)
        << "offset " << a.offset << " of hot-" << a.partition << " acknowledged twice";
  }
  for (int32_t partition = 0; partition < hot_partitions; ++partition) {
    std::map<int64_t, std::string> stored;
    for (const auto& [offset, batch] : fetch_all(port, "hot", partition)) {
      stored[offset] = value_of(batch);
    }
    EXPECT_EQ(stored, expected[partition]) << "hot-" << partition;
  }
  // The churned topics are gone from disk.
  for (const auto& entry : std::filesystem::directory_iterator(broker.data_dir())) {
    EXPECT_EQ(entry.path().filename().string().rfind("churn-", 0), std::string::npos)
        << entry.path();
  }
  auto exit = broker.stop();
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->code, 0) << broker.output();
}

}  // namespace
}  // namespace tarn::test
