// The consumer's record views (include/tarn/consumer_record_view.h) against the real `tarn
// serve`: records produced by tarn's producer in each of Kafka's four codecs (and none), with
// null and empty keys and values and headers (null header values too), read back through
// poll(consumer_records&) match what was sent field by field, the same as poll() into owning
// records gives; and batches kept across later polls, moved, and held past the consumer's close
// and destruction still read what was sent (under ASan this proves the views' lifetimes).
#include <gtest/gtest.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tarn/consumer.h"
#include "tarn/producer.h"
#include "test_util.h"

namespace tarn::test {
namespace {

using client::consumer;
using client::consumer_record;
using client::consumer_records;
using client::topic_partition;

struct sent_record {
  std::optional<std::string> key;
  std::optional<std::string> value;
  std::vector<std::pair<std::string, std::optional<std::string>>> headers;
};

// Record i: a null key every third, an empty value every eleventh, a null one every seventh,
// values of growing sizes (compressible runs), headers on every fifth.
sent_record make_record(int i) {
  sent_record r;
  if (i % 3 != 0) r.key = "key-" + std::to_string(i);
  if (i % 7 == 0) {
    r.value = std::nullopt;
  } else if (i % 11 == 0) {
    r.value = "";
  } else {
    r.value =
        std::string(static_cast<size_t>(10 + (i * 37) % 3000), static_cast<char>('a' + i % 26)) +
        std::to_string(i);
  }
  if (i % 5 == 0) {
    r.headers.emplace_back("h-" + std::to_string(i), "v" + std::to_string(i));
    r.headers.emplace_back("null-header", std::nullopt);
    r.headers.emplace_back("empty-header", "");
  }
  return r;
}

class consumer_views : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_NE(broker_.port(), 0) << broker_.output(); }

  std::string bootstrap() const { return "127.0.0.1:" + std::to_string(broker_.port()); }

  void create_topic(const std::string& topic) {
    const std::string command = "timeout 30 " + std::string(TARN_BINARY) +
                                " topics --bootstrap-server " + bootstrap() + " --create --topic " +
                                topic + " --partitions 1";
    auto [rc, out] = run_command(command);
    ASSERT_EQ(rc, 0) << command << ": " << out;
  }

  void produce(const std::string& topic, const std::string& codec, int count) {
    auto p = client::producer::create({{"bootstrap.servers", bootstrap()},
                                       {"compression.type", codec},
                                       {"linger.ms", "5"},
                                       {"batch.size", "16384"}});
    ASSERT_TRUE(p) << p.error().message;
    for (int i = 0; i < count; ++i) {
      const sent_record s = make_record(i);
      std::vector<client::header_view> headers;
      for (const auto& [k, v] : s.headers) {
        headers.push_back({k, v ? std::optional<std::string_view>(*v) : std::nullopt});
      }
      client::producer_record r;
      r.topic = topic;
      r.partition = 0;
      if (s.key) r.key = *s.key;
      if (s.value) r.value = *s.value;
      r.headers = headers;
      r.timestamp_ms = 1'700'000'000'000 + i;
      (*p)->send(r);
    }
    (*p)->flush();
    (*p)->close();
  }

  std::unique_ptr<consumer> make(const std::string& topic) {
    auto c = consumer::create({{"bootstrap.servers", bootstrap()},
                               {"max.poll.records", "50"},
                               {"fetch.max.wait.ms", "10"},
                               {"max.partition.fetch.bytes", "65536"}});
    EXPECT_TRUE(c) << (c ? "" : c.error().message);
    if (!c) return nullptr;
    (*c)->assign({{topic, 0}});
    (*c)->seek({topic, 0}, client::offset_beginning);
    return std::move(*c);
  }

  broker_process broker_;
};

void expect_matches(const client::consumer_record_view& r, int64_t offset,
                    const std::string& topic) {
  const sent_record s = make_record(static_cast<int>(offset));
  EXPECT_EQ(r.topic, topic);
  EXPECT_EQ(r.partition, 0);
  EXPECT_EQ(r.offset, offset);
  EXPECT_EQ(r.timestamp, 1'700'000'000'000 + offset);
  EXPECT_FALSE(r.log_append_time);
  EXPECT_EQ(r.key.has_value(), s.key.has_value()) << offset;
  if (r.key && s.key) {
    EXPECT_EQ(*r.key, *s.key);
  }
  EXPECT_EQ(r.value.has_value(), s.value.has_value()) << offset;
  if (r.value && s.value) {
    EXPECT_EQ(*r.value, *s.value) << offset;
  }
  ASSERT_EQ(r.headers.size(), s.headers.size()) << offset;
  size_t i = 0;
  for (const auto& h : r.headers) {
    EXPECT_EQ(h.key, s.headers[i].first);
    EXPECT_EQ(h.value.has_value(), s.headers[i].second.has_value());
    if (h.value && s.headers[i].second) {
      EXPECT_EQ(*h.value, *s.headers[i].second);
    }
    ++i;
  }
  EXPECT_EQ(i, s.headers.size());
}

TEST_F(consumer_views, every_codec_round_trips_through_views_as_through_owning_records) {
  constexpr int count = 400;
  for (const std::string codec : {"none", "gzip", "snappy", "lz4", "zstd"}) {
    SCOPED_TRACE(codec);
    const std::string topic = "views-" + codec;
    create_topic(topic);
    produce(topic, codec, count);

    // Views: every poll into the same batch, except that every fourth batch is moved away and
    // kept, so its fetch buffers stay borrowed while the consumer goes on fetching.
    std::vector<consumer_records> kept;
    {
      auto c = make(topic);
      ASSERT_TRUE(c);
      consumer_records batch;
      int64_t next = 0;
      int polls = 0;
      const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
      while (next < count && std::chrono::steady_clock::now() < deadline) {
        auto n = c->poll(batch, std::chrono::milliseconds(200));
        ASSERT_TRUE(n) << n.error().message;
        ASSERT_EQ(*n, batch.size());
        ASSERT_LE(batch.size(), 50u);
        for (const auto& r : batch) expect_matches(r, next++, topic);
        if (!batch.empty() && ++polls % 4 == 1) kept.push_back(std::move(batch));
      }
      ASSERT_EQ(next, count);
      EXPECT_EQ(c->position({topic, 0}), count);
      ASSERT_TRUE(c->close());
    }  // the consumer is gone; the kept batches still hold their buffers
    ASSERT_GE(kept.size(), 2u);
    for (const auto& batch : kept) {
      for (const auto& r : batch) expect_matches(r, r.offset, topic);
    }
    kept.clear();

    // Owning records: the same fields.
    auto c = make(topic);
    ASSERT_TRUE(c);
    std::vector<consumer_record> records;
    int64_t next = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (next < count && std::chrono::steady_clock::now() < deadline) {
      auto n = c->poll(records, std::chrono::milliseconds(200));
      ASSERT_TRUE(n) << n.error().message;
      for (const auto& r : records) {
        ASSERT_EQ(r.offset, next);
        const sent_record s = make_record(static_cast<int>(next++));
        EXPECT_EQ(r.topic, topic);
        EXPECT_EQ(r.key, s.key);
        EXPECT_EQ(r.value, s.value);
        EXPECT_EQ(r.headers, s.headers);
        EXPECT_EQ(r.timestamp, 1'700'000'000'000 + r.offset);
      }
    }
    EXPECT_EQ(next, count);
  }
}

}  // namespace
}  // namespace tarn::test
