// Fetch and ListOffsets against the real binary: Kafka-written segments (the real-client
// fixtures) served byte for byte at every Fetch version, fetches inside a batch, KIP-74 limits,
// out-of-range and unknown partitions, fetch sessions, reads across a segment roll, ListOffsets
// targets, and a long poll answered by a produce.
#include <gtest/gtest.h>

#include <future>
#include <thread>

#include "fixture_topics.h"
#include "kafka_client.h"
#include "protocol/messages/fetch_request.h"
#include "protocol/messages/fetch_response.h"
#include "protocol/messages/list_offsets_request.h"
#include "protocol/messages/list_offsets_response.h"
#include "record/record_batch.h"
#include "test_util.h"

namespace tarn::test {
namespace {

using protocol::fetch_request;
using protocol::fetch_response;
using protocol::list_offsets_request;
using protocol::list_offsets_response;

// A broker over a data directory prepared by `prepare` before it starts.
class served {
 public:
  template <typename Prepare>
  explicit served(Prepare prepare, std::vector<std::string> args = {}) {
    prepare(tmp_.path() / "data");
    broker_ = std::make_unique<broker_process>(std::move(args), tmp_.path() / "data");
    if (broker_->port() == 0)
      throw std::runtime_error("broker did not start: " + broker_->output());
  }
  ~served() { broker_->stop(); }
  std::string address() const { return "127.0.0.1:" + std::to_string(broker_->port()); }
  std::unique_ptr<tools::kafka_client> client() const {
    auto c = tools::kafka_client::connect(address());
    if (!c) throw std::runtime_error(c.error());
    return std::move(*c);
  }
  broker_process& broker() { return *broker_; }

 private:
  temp_dir tmp_;
  std::unique_ptr<broker_process> broker_;
};

struct part {
  std::string topic;
  int64_t offset = 0;
  int32_t max_bytes = 1 << 20;
  std::array<uint8_t, 16> topic_id{};
};

struct fetch_args {
  int16_t version = 12;
  int32_t max_wait_ms = 0;
  int32_t min_bytes = 0;
  int32_t max_bytes = 50 << 20;
  int32_t session_id = 0;
  int32_t session_epoch = -1;
  std::vector<part> parts;
  std::vector<part> forgotten;
};

// The decoded response keeps views into `raw`.
struct fetched {
  std::vector<uint8_t> raw;
  fetch_response resp;
  const fetch_response::partition_data& p(size_t t = 0, size_t i = 0) const {
    return resp.responses.at(t).partitions.at(i);
  }
  std::string records(size_t t = 0, size_t i = 0) const {
    const auto& r = p(t, i).records;
    return r ? std::string(reinterpret_cast<const char*>(r->data()), r->size()) : std::string();
  }
};

fetched do_fetch(tools::kafka_client& c, const fetch_args& a) {
  fetch_request req;
  req.max_wait_ms = a.max_wait_ms;
  req.min_bytes = a.min_bytes;
  req.max_bytes = a.max_bytes;
  req.session_id = a.session_id;
  req.session_epoch = a.session_epoch;
  for (const auto& p : a.parts) {
    auto& t = req.topics.emplace_back();
    t.topic = p.topic;
    t.topic_id.bytes = p.topic_id;
    auto& fp = t.partitions.emplace_back();
    fp.partition = 0;
    fp.fetch_offset = p.offset;
    fp.partition_max_bytes = p.max_bytes;
  }
  for (const auto& p : a.forgotten) {
    auto& t = req.forgotten_topics_data.emplace_back();
    t.topic = p.topic;
    t.topic_id.bytes = p.topic_id;
    t.partitions.push_back(0);
  }
  fetched out;
  auto d = tools::call<fetch_response>(c, req, a.version, out.raw);
  if (!d) throw std::runtime_error(d.error());
  out.resp = std::move(*d);
  return out;
}

struct listed {
  int16_t error = 0;
  int64_t timestamp = 0, offset = 0;
  int32_t leader_epoch = 0;
};

listed list_offsets(tools::kafka_client& c, const std::string& topic, int64_t ts,
                    int16_t version = 11, int32_t partition = 0) {
  list_offsets_request req;
  req.replica_id = -1;
  auto& t = req.topics.emplace_back();
  t.name = topic;
  auto& p = t.partitions.emplace_back();
  p.partition_index = partition;
  p.timestamp = ts;
  std::vector<uint8_t> buffer;
  auto d = tools::call<list_offsets_response>(c, req, version, buffer);
  if (!d) throw std::runtime_error(d.error());
  const auto& pr = d->topics.at(0).partitions.at(0);
  return {pr.error_code, pr.timestamp, pr.offset, pr.leader_epoch};
}

std::array<uint8_t, 16> wire_id(size_t n) {
  storage::uuid id = fixture_topic_id(n);
  std::array<uint8_t, 16> out{};
  for (int i = 0; i < 8; ++i) {
    out[static_cast<size_t>(i)] = static_cast<uint8_t>(id.most_significant_bits >> (56 - 8 * i));
    out[static_cast<size_t>(8 + i)] =
        static_cast<uint8_t>(id.least_significant_bits >> (56 - 8 * i));
  }
  return out;
}

// Start positions of the batches of a segment file.
std::vector<size_t> batch_positions(const std::string& bytes) {
  std::vector<size_t> out;
  record::batch_reader reader(
      std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
  record::record_batch_view b;
  while (reader.next(b)) {
    out.push_back(
        static_cast<size_t>(b.bytes().data() - reinterpret_cast<const uint8_t*>(bytes.data())));
  }
  return out;
}

TEST(Fetch, ServesKafkaWrittenSegmentsByteForByteAtEveryVersion) {
  const auto names = all_fixture_names();
  served s([&](const auto& dir) { place_fixtures(dir, names); });
  auto c = s.client();
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string file = read_binary(fixture_dir() / (names[i] + ".log"));
    for (int16_t v : {4, 7, 11, 12, 13, 16, 18}) {
      SCOPED_TRACE(names[i] + " v" + std::to_string(v));
      fetch_args a;
      a.version = v;
      a.parts = {{names[i], 0, 1 << 20, v >= 13 ? wire_id(i) : std::array<uint8_t, 16>{}}};
      auto f = do_fetch(*c, a);
      ASSERT_EQ(f.resp.error_code, 0);
      ASSERT_EQ(f.p().error_code, 0);
      EXPECT_EQ(f.p().high_watermark, 20);
      EXPECT_EQ(f.p().last_stable_offset, 20);
      if (v >= 5) {
        EXPECT_EQ(f.p().log_start_offset, 0);
      }
      EXPECT_EQ(f.records(), file);  // every byte as Kafka wrote it
    }
  }
}

TEST(Fetch, InsideABatchReturnsThatWholeBatchAndKip74Limits) {
  served s([](const auto& dir) { place_fixtures(dir, {"java-none", "kcat-gzip"}); });
  auto c = s.client();
  const std::string file = read_binary(fixture_dir() / "java-none.log");
  const auto pos = batch_positions(file);
  ASSERT_EQ(pos.size(), 3u);
  // Offset 9 lies in batch 1 (offsets 7-13): the batch comes whole, from its first byte.
  fetch_args a;
  a.parts = {{"java-none", 9}};
  EXPECT_EQ(do_fetch(*c, a).records(), file.substr(pos[1]));
  // PartitionMaxBytes 1: the first batch still comes whole (KIP-74), and only it.
  a.parts = {{"java-none", 0, 1}};
  EXPECT_EQ(do_fetch(*c, a).records(), file.substr(0, pos[1]));
  // Room for batch 0 and 1 but not 2.
  a.parts = {{"java-none", 0, static_cast<int32_t>(pos[2] + 10)}};
  EXPECT_EQ(do_fetch(*c, a).records(), file.substr(0, pos[2]));
  // MaxBytes spent by the first partition: the second returns nothing, without error.
  a.max_bytes = 1;
  a.parts = {{"java-none", 0}, {"kcat-gzip", 0}};
  auto f = do_fetch(*c, a);
  EXPECT_EQ(f.records(0, 0), file.substr(0, pos[1]));
  EXPECT_EQ(f.p(1, 0).error_code, 0);
  EXPECT_EQ(f.records(1, 0), "");
  EXPECT_EQ(f.p(1, 0).high_watermark, 20);
}

TEST(Fetch, ErrorsAsKafkaReturnsThem) {
  served s([](const auto& dir) { place_fixtures(dir, {"java-none"}); });
  auto c = s.client();
  fetch_args a;
  a.parts = {{"java-none", 20}};  // the high watermark: nothing yet, no error
  auto f = do_fetch(*c, a);
  EXPECT_EQ(f.p().error_code, 0);
  EXPECT_EQ(f.records(), "");
  EXPECT_TRUE(f.p().records.has_value());
  a.parts = {{"java-none", 21}};
  f = do_fetch(*c, a);
  EXPECT_EQ(f.p().error_code, 1);  // OFFSET_OUT_OF_RANGE
  EXPECT_EQ(f.p().high_watermark, -1);
  EXPECT_EQ(f.p().log_start_offset, -1);
  a.parts = {{"java-none", -1}};
  EXPECT_EQ(do_fetch(*c, a).p().error_code, 1);
  a.parts = {{"no-such-topic", 0}};
  f = do_fetch(*c, a);
  EXPECT_EQ(f.p().error_code, 3);  // UNKNOWN_TOPIC_OR_PARTITION
  EXPECT_FALSE(f.p().records.has_value());
  a.version = 13;
  a.parts = {{"", 0, 1 << 20, wire_id(7)}};
  EXPECT_EQ(do_fetch(*c, a).p().error_code, 100);  // UNKNOWN_TOPIC_ID
  // An error in one partition does not stop the others.
  a.parts = {{"", 0, 1 << 20, wire_id(7)}, {"", 0, 1 << 20, wire_id(0)}};
  f = do_fetch(*c, a);
  EXPECT_EQ(f.p(0).error_code, 100);
  EXPECT_EQ(f.p(1).error_code, 0);
  EXPECT_EQ(f.records(1), read_binary(fixture_dir() / "java-none.log"));
}

TEST(Fetch, SessionsFullIncrementalAndErrors) {
  served s([](const auto& dir) { place_fixtures(dir, {"java-none", "kcat-lz4"}); });
  auto c = s.client();
  fetch_args a;
  a.session_epoch = 0;  // full fetch: creates a session
  a.parts = {{"java-none", 0}, {"kcat-lz4", 20}};
  auto f = do_fetch(*c, a);
  const int32_t id = f.resp.session_id;
  ASSERT_NE(id, 0);
  ASSERT_EQ(f.resp.responses.size(), 2u);
  // Epoch 1, nothing sent: java-none is re-read from its cached offset 0 (records), kcat-lz4 has
  // no news and is left out.
  a = {};
  a.session_id = id;
  a.session_epoch = 1;
  f = do_fetch(*c, a);
  EXPECT_EQ(f.resp.error_code, 0);
  EXPECT_EQ(f.resp.session_id, id);
  ASSERT_EQ(f.resp.responses.size(), 1u);
  EXPECT_EQ(f.resp.responses[0].topic, "java-none");
  // Epoch 2 moves java-none to its end: no partition has news.
  a.session_epoch = 2;
  a.parts = {{"java-none", 20}};
  f = do_fetch(*c, a);
  EXPECT_EQ(f.resp.error_code, 0);
  EXPECT_TRUE(f.resp.responses.empty());
  // A replayed epoch: INVALID_FETCH_SESSION_EPOCH; an unknown id: FETCH_SESSION_ID_NOT_FOUND.
  a.parts.clear();
  f = do_fetch(*c, a);
  EXPECT_EQ(f.resp.error_code, 71);
  EXPECT_TRUE(f.resp.responses.empty());
  a.session_id = id + 1;
  a.session_epoch = 1;
  EXPECT_EQ(do_fetch(*c, a).resp.error_code, 70);
  // Forgetting kcat-lz4 and adding it back at 0 (epoch 3): only it has records.
  a.session_id = id;
  a.session_epoch = 3;
  a.forgotten = {{"kcat-lz4"}};
  f = do_fetch(*c, a);
  EXPECT_EQ(f.resp.error_code, 0);
  a.forgotten.clear();
  a.session_epoch = 4;
  a.parts = {{"kcat-lz4", 0}};
  f = do_fetch(*c, a);
  ASSERT_EQ(f.resp.responses.size(), 1u);
  EXPECT_EQ(f.resp.responses[0].topic, "kcat-lz4");
  EXPECT_EQ(f.records(), read_binary(fixture_dir() / "kcat-lz4.log"));
  // Forgetting every partition ends the session: answered sessionless.
  a.session_epoch = 5;
  a.parts.clear();
  a.forgotten = {{"kcat-lz4"}, {"java-none"}};
  f = do_fetch(*c, a);
  EXPECT_EQ(f.resp.session_id, 0);
  a.session_epoch = 6;
  a.forgotten.clear();
  EXPECT_EQ(do_fetch(*c, a).resp.error_code, 70);
  // Epoch -1 (FINAL): no session is created.
  a = {};
  a.parts = {{"java-none", 0}};
  EXPECT_EQ(do_fetch(*c, a).resp.session_id, 0);
}

TEST(Fetch, SessionCacheIsBounded) {
  served s([](const auto& dir) { place_fixtures(dir, {"java-none"}); },
           {"--override", "max.incremental.fetch.session.cache.slots=2"});
  auto c = s.client();
  fetch_args a;
  a.session_epoch = 0;
  a.parts = {{"java-none", 0}};
  EXPECT_NE(do_fetch(*c, a).resp.session_id, 0);
  EXPECT_NE(do_fetch(*c, a).resp.session_id, 0);
  // Full: the others are neither stale (120 s) nor older than that, so no session is created.
  EXPECT_EQ(do_fetch(*c, a).resp.session_id, 0);
}

TEST(Fetch, ReadsAcrossSegmentRolls) {
  const std::string first = read_binary(fixture_dir() / "kcat-none.log");
  const std::string second = shift_offsets(read_binary(fixture_dir() / "java-zstd.log"), 20);
  served s([&](const auto& dir) {
    place_segments(dir, {{"rolled", 0, first}, {"rolled", 20, second}});
  });
  auto c = s.client();
  std::string all;
  int64_t offset = 0;
  for (int i = 0; i < 20 && offset < 40; ++i) {
    fetch_args a;
    a.parts = {{"rolled", offset, 1}};  // one batch per fetch
    auto f = do_fetch(*c, a);
    ASSERT_EQ(f.p().error_code, 0);
    EXPECT_EQ(f.p().high_watermark, 40);
    const std::string r = f.records();
    ASSERT_FALSE(r.empty());
    all += r;
    record::batch_reader reader(std::span(reinterpret_cast<const uint8_t*>(r.data()), r.size()));
    record::record_batch_view b;
    while (reader.next(b)) offset = b.next_offset();
  }
  EXPECT_EQ(offset, 40);
  EXPECT_EQ(all, first + second);
  EXPECT_EQ(list_offsets(*c, "rolled", -1).offset, 40);
  auto [code, out] =
      run_command(std::string(TARN_BINARY) + " consume --bootstrap-server " + s.address() +
                  " --topic rolled --offset 18 --max-messages 5 --timeout-ms 5000 "
                  "--property print.offset=true --property print.value=false");
  EXPECT_EQ(code, 0) << out;
  EXPECT_NE(out.find("Offset:18\nOffset:19\nOffset:20\nOffset:21\nOffset:22\n"), std::string::npos)
      << out;
}

TEST(ListOffsets, EveryTargetAsKafkaAnswersIt) {
  served s([](const auto& dir) { place_fixtures(dir, {"java-none", "python-gzip"}); });
  auto c = s.client();
  // java-none: CreateTimes 1767225600000 + 10 * offset, except offset 16 (older) and batch 2
  // starting at 1767225601000.
  auto l = list_offsets(*c, "java-none", -2);
  EXPECT_EQ(l.error, 0);
  EXPECT_EQ(l.offset, 0);
  EXPECT_EQ(l.timestamp, -1);
  l = list_offsets(*c, "java-none", -1);
  EXPECT_EQ(l.offset, 20);
  EXPECT_EQ(l.leader_epoch, 0);
  l = list_offsets(*c, "java-none", -3);
  EXPECT_EQ(l.offset, 19);
  EXPECT_EQ(l.timestamp, 1767225601050);
  l = list_offsets(*c, "java-none", 1767225600075);
  EXPECT_EQ(l.offset, 8);
  EXPECT_EQ(l.timestamp, 1767225600080);
  l = list_offsets(*c, "java-none", 1767225600000);
  EXPECT_EQ(l.offset, 0);
  l = list_offsets(*c, "java-none", 1767225601051);  // after every record
  EXPECT_EQ(l.error, 0);
  EXPECT_EQ(l.offset, -1);
  EXPECT_EQ(l.timestamp, -1);
  EXPECT_EQ(list_offsets(*c, "java-none", -4).offset, 0);
  l = list_offsets(*c, "java-none", -5);
  EXPECT_EQ(l.offset, -1);
  EXPECT_EQ(l.leader_epoch, -1);
  EXPECT_EQ(list_offsets(*c, "java-none", -6).offset, -1);
  // Targets newer than the version: UNSUPPORTED_VERSION.
  EXPECT_EQ(list_offsets(*c, "java-none", -3, 6).error, 35);
  EXPECT_EQ(list_offsets(*c, "java-none", -6, 10).error, 35);
  EXPECT_EQ(list_offsets(*c, "java-none", -7).error, 35);
  EXPECT_EQ(list_offsets(*c, "java-none", -1, 1).offset, 20);
  EXPECT_EQ(list_offsets(*c, "nope", -1).error, 3);
  EXPECT_EQ(list_offsets(*c, "java-none", -1, 11, 1).error, 3);
  EXPECT_EQ(list_offsets(*c, "python-gzip", -2).offset, 0);
}

TEST(Fetch, LongPollIsAnsweredByAProduce) {
  if (!have_program("kcat")) GTEST_SKIP() << "kcat not installed";
  served s([](const auto& dir) { place_fixtures(dir, {"java-none"}); });
  // Nothing arrives: the wait lasts max_wait_ms.
  {
    auto c = s.client();
    fetch_args a;
    a.max_wait_ms = 300;
    a.min_bytes = 1;
    a.parts = {{"java-none", 20}};
    const auto start = clock_type::now();
    auto f = do_fetch(*c, a);
    const auto waited = clock_type::now() - start;
    EXPECT_GE(waited, 250ms);
    EXPECT_LT(waited, 15s);
    EXPECT_EQ(f.records(), "");
  }
  // A produce wakes a fetch waiting for up to 20 s.
  clock_type::time_point answered;
  std::string got;
  std::promise<clock_type::time_point> fetching;
  std::thread waiter([&] {
    auto c = s.client();
    fetch_args a;
    a.max_wait_ms = 20000;
    a.min_bytes = 1;
    a.parts = {{"java-none", 20}};
    fetching.set_value(clock_type::now());
    auto f = do_fetch(*c, a);
    answered = clock_type::now();
    got = f.records();
  });
  const auto fetch_sent = fetching.get_future().get();
  // The fetch is waiting by now, most likely; if it is read after the produce instead, it is
  // answered with the record at once and the checks below still hold.
  std::this_thread::sleep_for(300ms);
  auto [code, out] =
      run_command("echo woken | timeout 20 kcat -P -b " + s.address() + " -t java-none -p 0");
  const auto produced = clock_type::now();
  waiter.join();
  EXPECT_EQ(code, 0) << out;
  EXPECT_FALSE(got.empty());
  EXPECT_NE(got.find("woken"), std::string::npos);
  // Answered once the produce was acknowledged (kcat exits after its delivery report), well
  // before the 20 s wait: generous bounds, the machine is shared.
  EXPECT_LT(answered - produced, 10s);
  // Not before the produce, which came 300 ms after the fetch was sent: a fetch answered at
  // once, without waiting for a record, fails here.
  EXPECT_GE(answered - fetch_sent, 300ms);
}

}  // namespace
}  // namespace tarn::test
