// Produce and InitProducerId against the real broker with hand-built requests: every branch of
// Kafka's produce path (the reference's Example 3 and more), checking the error code, that
// nothing is written where nothing should be, and the bytes on disk.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "kafka_test_names.h"
#include "protocol/messages/create_topics_request.h"
#include "protocol/messages/create_topics_response.h"
#include "protocol/messages/init_producer_id_request.h"
#include "protocol/messages/init_producer_id_response.h"
#include "protocol/messages/produce_request.h"
#include "protocol/messages/produce_response.h"
#include "protocol/reader.h"
#include "protocol/writer.h"
#include "record/batch_builder.h"
#include "record/record_batch.h"
#include "test_util.h"

namespace {

using namespace std::chrono_literals;
using namespace tarn::test;
using tarn::protocol::produce_response;
namespace record = tarn::record;

constexpr int16_t err_none = 0, err_corrupt = 2, err_unknown_topic = 3, err_too_large = 10,
                  err_acks = 21, err_timestamp = 32, err_out_of_order = 45, err_epoch = 47,
                  err_invalid_record = 87, err_unknown_topic_id = 100;

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

struct batch_spec {
  int records = 3;
  record::compression_type compression = record::compression_type::none;
  int64_t producer_id = -1;
  int16_t epoch = -1;
  int32_t sequence = -1;
  int64_t base_offset = 0;
  bool keys = true;
  int64_t timestamp = 0;  // 0: now
  size_t value_size = 7;
};

std::vector<uint8_t> make_batch(const batch_spec& s) {
  record::batch_builder_config c;
  c.batch_size = 1 << 30;
  c.compression = s.compression;
  c.producer_id = s.producer_id;
  c.producer_epoch = s.epoch;
  c.base_sequence = s.sequence;
  c.base_offset = s.base_offset;
  record::batch_builder b(c);
  const int64_t ts = s.timestamp ? s.timestamp : now_ms();
  for (int i = 0; i < s.records; ++i) {
    std::string key = fmt::format("k{}", i);
    std::string value = fmt::format("hello-{:x<{}}", i, s.value_size > 6 ? s.value_size - 6 : 1);
    std::optional<record::bytes_view> k;
    if (s.keys) k = record::as_bytes(key);
    b.try_append(ts, k, record::as_bytes(value));
  }
  return *b.build();
}

struct produce_test_access;
class produce_test : public ::testing::Test {
  friend struct produce_test_access;

 protected:
  void SetUp() override {
    broker_ = std::make_unique<broker_process>();
    ASSERT_NE(broker_->port(), 0) << broker_->output();
    client_ = std::make_unique<raw_client>(broker_->port());
    ASSERT_TRUE(client_->connected());
  }

  std::vector<uint8_t> call(int16_t key, int16_t version, std::span<const uint8_t> body,
                            bool flexible) {
    const int32_t id = ++correlation_;
    EXPECT_TRUE(client_->send_request(key, version, id, body, flexible));
    auto frame = client_->read_frame();
    EXPECT_TRUE(frame.has_value());
    if (!frame) return {};
    EXPECT_EQ(get_int32(*frame, 0), id);
    frame->erase(frame->begin(), frame->begin() + (flexible ? 5 : 4));
    return *frame;
  }

  void create_topic(const std::string& name,
                    std::vector<std::pair<std::string, std::string>> configs = {}) {
    tarn::protocol::create_topics_request req;
    auto& t = req.topics.emplace_back();
    t.name = name;
    t.num_partitions = 1;
    t.replication_factor = 1;
    for (const auto& [k, v] : configs) t.configs.push_back({k, std::string_view(v)});
    std::vector<uint8_t> body;
    tarn::protocol::writer w(body);
    req.encode(w, 7);
    auto resp = call(19, 7, body, true);
    tarn::protocol::reader r(resp);
    auto decoded = tarn::protocol::create_topics_response::decode(r, 7);
    ASSERT_TRUE(decoded.has_value());
    ASSERT_EQ(decoded->topics.at(0).error_code, 0) << name;
    topic_ids_[name] = decoded->topics.at(0).topic_id;
  }

  std::vector<uint8_t> produce_body(int16_t version, int16_t acks, const std::string& topic,
                                    std::optional<std::span<const uint8_t>> records) {
    tarn::protocol::produce_request req;
    req.acks = acks;
    req.timeout_ms = 30000;
    auto& t = req.topic_data.emplace_back();
    t.name = topic;
    if (topic_ids_.count(topic)) t.topic_id = topic_ids_[topic];
    auto& p = t.partition_data.emplace_back();
    p.index = 0;
    if (records) p.records = *records;
    std::vector<uint8_t> body;
    tarn::protocol::writer w(body);
    req.encode(w, version);
    return body;
  }

  // One partition's answer.
  produce_response::partition_produce_response produce(const std::string& topic,
                                                       std::span<const uint8_t> records,
                                                       int16_t acks = 1, int16_t version = 8) {
    auto body = produce_body(version, acks, topic, records);
    resp_bytes_ = call(0, version, body, version >= 9);
    tarn::protocol::reader r(resp_bytes_);
    auto decoded = tarn::protocol::produce_response::decode(r, version);
    EXPECT_TRUE(decoded.has_value());
    if (!decoded) return {};
    last_response_ = *decoded;
    return decoded->responses.at(0).partition_responses.at(0);
  }

  int64_t init_producer_id() {
    // Kafka answers COORDINATOR_LOAD_IN_PROGRESS (14) until its transaction state is loaded;
    // clients retry. tarn never does.
    for (int attempt = 0; attempt < 100; ++attempt) {
      auto [code, id] = try_init_producer_id();
      if (code != 14 && code != 15) {
        EXPECT_EQ(code, 0);
        return id;
      }
      std::this_thread::sleep_for(100ms);
    }
    ADD_FAILURE() << "InitProducerId kept failing";
    return -1;
  }

  std::pair<int16_t, int64_t> try_init_producer_id() {
    tarn::protocol::init_producer_id_request req;
    req.transactional_id = std::nullopt;
    req.transaction_timeout_ms = 60000;
    std::vector<uint8_t> body;
    tarn::protocol::writer w(body);
    req.encode(w, 4);
    auto resp = call(22, 4, body, true);
    tarn::protocol::reader r(resp);
    auto decoded = tarn::protocol::init_producer_id_response::decode(r, 4);
    EXPECT_TRUE(decoded.has_value());
    if (!decoded) return {-2, -1};
    if (decoded->error_code == 0) {
      EXPECT_EQ(decoded->producer_epoch, 0);
    }
    return {decoded->error_code, decoded->producer_id};
  }

  std::string segment(const std::string& topic) {
    return read_file(broker_->data_dir() / (topic + "-0") / "00000000000000000000.log");
  }

  std::unique_ptr<broker_process> broker_;
  std::unique_ptr<raw_client> client_;
  int32_t correlation_ = 0;
  std::map<std::string, tarn::protocol::uuid> topic_ids_;
  std::vector<uint8_t> resp_bytes_;
  produce_response last_response_;
};

// Lets free functions drive a produce_test's requests (against tarn or the reference broker).
struct produce_test_access {
  explicit produce_test_access(produce_test& t) : t_(t) {}
  void create(const std::string& name, std::vector<std::pair<std::string, std::string>> configs);
  produce_response::partition_produce_response send(const std::string& topic,
                                                    const std::vector<uint8_t>& batch,
                                                    int16_t acks);
  int64_t pid();
  produce_test& t_;
};

// The on-disk batch equals the client's except baseOffset (0-7) and partitionLeaderEpoch
// (12-15); the CRC is the client's.
void expect_same_but_offsets(std::string_view disk, const std::vector<uint8_t>& client,
                             int64_t base_offset) {
  ASSERT_EQ(disk.size(), client.size());
  record::record_batch_view d(record::as_bytes(disk));
  EXPECT_EQ(d.base_offset(), base_offset);
  EXPECT_EQ(d.partition_leader_epoch(), 0);
  EXPECT_EQ(d.crc(), record::record_batch_view(client).crc());
  EXPECT_TRUE(d.crc_matches());
  EXPECT_EQ(disk.substr(16), std::string_view(reinterpret_cast<const char*>(client.data()) + 16,
                                              client.size() - 16));
  EXPECT_EQ(d.records_count(), record::record_batch_view(client).records_count());
}

TEST_F(produce_test, uncompressed_batches_are_written_in_place_with_offsets_from_the_log_end) {
  create_topic("t");
  auto b1 = make_batch({.records = 3});
  auto b2 = make_batch({.records = 3});
  auto r1 = produce("t", b1);
  EXPECT_EQ(r1.error_code, err_none);
  EXPECT_EQ(r1.base_offset, 0);
  EXPECT_EQ(r1.log_append_time_ms, -1);
  EXPECT_EQ(r1.log_start_offset, 0);
  auto r2 = produce("t", b2, -1);
  EXPECT_EQ(r2.error_code, err_none);
  EXPECT_EQ(r2.base_offset, 3);
  std::string disk = segment("t");
  ASSERT_EQ(disk.size(), b1.size() + b2.size());
  expect_same_but_offsets(std::string_view(disk).substr(0, b1.size()), b1, 0);
  expect_same_but_offsets(std::string_view(disk).substr(b1.size()), b2, 3);
}

TEST_F(produce_test, example3_refusals_write_nothing) {
  create_topic("bad");
  auto batch = make_batch({.records = 1});
  auto acks2 = produce("bad", batch, 2);
  EXPECT_EQ(acks2.error_code, err_acks);
  EXPECT_EQ(acks2.base_offset, -1);
  EXPECT_EQ(acks2.log_start_offset, -1);
  EXPECT_FALSE(acks2.error_message.has_value());

  auto base5 = produce("bad", make_batch({.records = 1, .base_offset = 5}));
  EXPECT_EQ(base5.error_code, err_invalid_record);
  EXPECT_EQ(base5.base_offset, -1);
  EXPECT_FALSE(base5.error_message.has_value());

  auto two = make_batch({.records = 1});
  auto second = make_batch({.records = 1});
  two.insert(two.end(), second.begin(), second.end());
  EXPECT_EQ(produce("bad", two).error_code, err_invalid_record);

  EXPECT_EQ(produce("bad", std::span<const uint8_t>{}).error_code, err_invalid_record);
  EXPECT_EQ(segment("bad").size(), 0u);

  // acks=0: no response; the batch is written. The next request's answer comes first.
  auto ok0 = make_batch({.records = 1});
  auto body0 = produce_body(8, 0, "bad", ok0);
  ASSERT_TRUE(client_->send_request(0, 8, 777, body0));
  auto after = produce("bad", make_batch({.records = 1}));
  EXPECT_EQ(after.error_code, err_none);
  EXPECT_EQ(after.base_offset, 1);
  std::string disk = segment("bad");
  ASSERT_EQ(disk.size(), ok0.size() * 2);
  expect_same_but_offsets(std::string_view(disk).substr(0, ok0.size()), ok0, 0);

  // acks=0 with an error: the connection is closed, nothing written.
  auto bad0 = produce_body(8, 0, "bad", make_batch({.records = 1, .base_offset = 5}));
  ASSERT_TRUE(client_->send_request(0, 8, 778, bad0));
  EXPECT_TRUE(client_->wait_closed(event_timeout));
  EXPECT_EQ(segment("bad").size(), disk.size());
}

TEST_F(produce_test, crc_size_topic_key_and_timestamp_errors) {
  create_topic("small", {{"max.message.bytes", "1000"}});
  create_topic("compacted", {{"cleanup.policy", "compact"}});
  create_topic("recent", {{"message.timestamp.before.max.ms", "60000"}});

  auto corrupt = make_batch({.records = 2});
  corrupt.back() ^= 0x01;
  auto c = produce("small", corrupt);
  EXPECT_EQ(c.error_code, err_corrupt);
  EXPECT_EQ(c.log_start_offset, -1);

  auto big = produce("small", make_batch({.records = 2, .value_size = 2000}));
  EXPECT_EQ(big.error_code, err_too_large);
  EXPECT_EQ(segment("small").size(), 0u);

  auto unknown = produce("nope", make_batch({}));
  EXPECT_EQ(unknown.error_code, err_unknown_topic);
  EXPECT_FALSE(std::filesystem::exists(broker_->data_dir() / "nope-0"));

  auto keyless = produce("compacted", make_batch({.records = 2, .keys = false}));
  EXPECT_EQ(keyless.error_code, err_invalid_record);
  ASSERT_EQ(keyless.record_errors.size(), 2u);
  EXPECT_EQ(keyless.record_errors[0].batch_index, 0);
  EXPECT_EQ(keyless.record_errors[1].batch_index, 1);
  ASSERT_TRUE(keyless.error_message.has_value());
  EXPECT_NE(keyless.error_message->find("2 record errors"), std::string_view::npos);
  EXPECT_EQ(segment("compacted").size(), 0u);
  EXPECT_EQ(produce("compacted", make_batch({.records = 2})).error_code, err_none);

  auto old = produce("recent", make_batch({.records = 1, .timestamp = now_ms() - 3600000}));
  EXPECT_EQ(old.error_code, err_timestamp);
  ASSERT_EQ(old.record_errors.size(), 1u);
  ASSERT_TRUE(old.error_message.has_value());
  EXPECT_EQ(*old.error_message, "One or more records have been rejected due to invalid timestamp");
  auto future = produce("recent", make_batch({.records = 1, .timestamp = now_ms() + 7200000}));
  EXPECT_EQ(future.error_code, err_timestamp);
  EXPECT_EQ(segment("recent").size(), 0u);
}

TEST_F(produce_test, idempotent_retries_gaps_and_stale_epochs) {
  create_topic("idem");
  const int64_t pid = init_producer_id();
  EXPECT_GE(pid, 0);
  EXPECT_NE(init_producer_id(), pid);

  auto b0 = make_batch({.records = 3, .producer_id = pid, .epoch = 0, .sequence = 0});
  EXPECT_EQ(produce("idem", b0).base_offset, 0);
  auto b1 = make_batch({.records = 2, .producer_id = pid, .epoch = 0, .sequence = 3});
  EXPECT_EQ(produce("idem", b1).base_offset, 3);
  const size_t size = segment("idem").size();

  // A retry of either batch: its original offsets, nothing written.
  auto retry = produce("idem", b0);
  EXPECT_EQ(retry.error_code, err_none);
  EXPECT_EQ(retry.base_offset, 0);
  EXPECT_EQ(produce("idem", b1).base_offset, 3);
  EXPECT_EQ(segment("idem").size(), size);

  // A gap.
  auto gap =
      produce("idem", make_batch({.records = 1, .producer_id = pid, .epoch = 0, .sequence = 7}));
  EXPECT_EQ(gap.error_code, err_out_of_order);
  EXPECT_EQ(gap.log_start_offset, 0);
  EXPECT_EQ(segment("idem").size(), size);
  // The rejected batch changed nothing: the next in sequence is 5.
  EXPECT_EQ(
      produce("idem", make_batch({.records = 1, .producer_id = pid, .epoch = 0, .sequence = 5}))
          .base_offset,
      5);
  // A new epoch starts at sequence 0; the old epoch is then stale.
  EXPECT_EQ(
      produce("idem", make_batch({.records = 1, .producer_id = pid, .epoch = 1, .sequence = 3}))
          .error_code,
      err_out_of_order);
  EXPECT_EQ(
      produce("idem", make_batch({.records = 1, .producer_id = pid, .epoch = 1, .sequence = 0}))
          .base_offset,
      6);
  EXPECT_EQ(
      produce("idem", make_batch({.records = 1, .producer_id = pid, .epoch = 0, .sequence = 6}))
          .error_code,
      err_epoch);
}

TEST_F(produce_test, codec_differing_from_topic_is_rebuilt_and_log_append_time_is_set) {
  create_topic("lz4", {{"compression.type", "lz4"}});
  create_topic("same", {{"compression.type", "gzip"}});
  create_topic("lat", {{"message.timestamp.type", "LogAppendTime"}});

  auto gz = make_batch({.records = 50, .compression = record::compression_type::gzip});
  EXPECT_EQ(produce("same", gz).error_code, err_none);
  expect_same_but_offsets(segment("same"), gz, 0);

  EXPECT_EQ(produce("lz4", gz).error_code, err_none);
  std::string disk = segment("lz4");
  record::record_batch_view d(record::as_bytes(disk));
  ASSERT_EQ(disk.size(), d.size_bytes());
  EXPECT_EQ(d.compression(), record::compression_type::lz4);
  EXPECT_TRUE(d.crc_matches());
  auto summary = record::validate_batch_full(d, record::offset_rule::producer, 1 << 20);
  ASSERT_TRUE(summary.has_value());
  EXPECT_EQ(summary->count, 50);
  EXPECT_EQ(d.max_timestamp(), record::record_batch_view(gz).max_timestamp());

  const int64_t before = now_ms();
  auto plain = make_batch({.records = 2, .timestamp = 1000});
  auto lat = produce("lat", plain);
  EXPECT_EQ(lat.error_code, err_none);
  EXPECT_GE(lat.log_append_time_ms, before);
  std::string l = segment("lat");
  record::record_batch_view lv(record::as_bytes(l));
  EXPECT_EQ(lv.timestamp_type(), record::timestamp_type::log_append_time);
  EXPECT_EQ(lv.max_timestamp(), lat.log_append_time_ms);
  EXPECT_TRUE(lv.crc_matches());
}

TEST_F(produce_test, version_rules_old_formats_and_compressed_log_append_time) {
  create_topic("v");
  create_topic("latz", {{"message.timestamp.type", "LogAppendTime"}});
  // zstd needs Produce v7 (Kafka's validateRecords).
  auto z = make_batch({.records = 3, .compression = record::compression_type::zstd});
  EXPECT_EQ(produce("v", z, 1, 6).error_code, 76);  // UNSUPPORTED_COMPRESSION_TYPE
  EXPECT_EQ(segment("v").size(), 0u);
  EXPECT_EQ(produce("v", z, 1, 7).base_offset, 0);
  // v3, the oldest version served, and v9 (flexible).
  EXPECT_EQ(produce("v", make_batch({}), 1, 3).base_offset, 3);
  EXPECT_EQ(produce("v", make_batch({}), 1, 9).base_offset, 6);
  // A magic-1 message set (what librdkafka sends without Fetch v4): INVALID_RECORD.
  auto legacy = make_batch({.records = 1});
  legacy.resize(40);
  legacy[8] = 0, legacy[9] = 0, legacy[10] = 0, legacy[11] = 28;  // length 28: offset+size+28
  legacy[16] = 1;
  EXPECT_EQ(produce("v", legacy).error_code, err_invalid_record);
  // A compressed batch on a LogAppendTime topic: fixed in place (same codec), broker time set.
  auto gz =
      make_batch({.records = 4, .compression = record::compression_type::gzip, .timestamp = 1000});
  auto r = produce("latz", gz);
  EXPECT_EQ(r.error_code, err_none);
  std::string disk = segment("latz");
  ASSERT_EQ(disk.size(), gz.size());
  record::record_batch_view d(record::as_bytes(disk));
  EXPECT_EQ(d.timestamp_type(), record::timestamp_type::log_append_time);
  EXPECT_EQ(d.max_timestamp(), r.log_append_time_ms);
  EXPECT_TRUE(d.crc_matches());
  EXPECT_EQ(disk.substr(61), std::string_view(reinterpret_cast<const char*>(gz.data()) + 61,
                                              gz.size() - 61));  // records untouched
}

TEST_F(produce_test, v13_names_topics_by_id) {
  create_topic("byid");
  auto r = produce("byid", make_batch({}), 1, 13);
  EXPECT_EQ(r.error_code, err_none);
  EXPECT_EQ(r.base_offset, 0);
  EXPECT_EQ(segment("byid").size(), make_batch({}).size());
  topic_ids_["ghost"] = tarn::protocol::uuid{};
  topic_ids_["ghost"].bytes[3] = 7;
  EXPECT_EQ(produce("ghost", make_batch({}), 1, 13).error_code, err_unknown_topic_id);
}

TEST_F(produce_test, producer_state_survives_clean_restart_and_sigkill) {
  create_topic("durable");
  const int64_t pid = init_producer_id();
  auto b0 = make_batch({.records = 4, .producer_id = pid, .epoch = 0, .sequence = 0});
  ASSERT_EQ(produce("durable", b0).base_offset, 0);
  const auto dir = broker_->data_dir();

  // Clean stop: a snapshot at the log end offset.
  client_.reset();
  ASSERT_TRUE(broker_->stop().has_value());
  EXPECT_TRUE(std::filesystem::exists(dir / "durable-0" / "00000000000000000004.snapshot"));
  temp_dir keep;
  std::filesystem::copy(dir, keep.path() / "data", std::filesystem::copy_options::recursive);
  broker_ = std::make_unique<broker_process>(std::vector<std::string>{}, keep.path() / "data");
  ASSERT_NE(broker_->port(), 0) << broker_->output();
  client_ = std::make_unique<raw_client>(broker_->port());
  topic_ids_.clear();
  EXPECT_EQ(produce("durable", b0).base_offset, 0);  // still a retry
  auto b1 = make_batch({.records = 2, .producer_id = pid, .epoch = 0, .sequence = 4});
  EXPECT_EQ(produce("durable", b1).base_offset, 4);
  EXPECT_NE(init_producer_id(), pid);  // ids are never handed out twice

  // SIGKILL: no snapshot for b1; the state is replayed from the log. A torn write (half a
  // batch) at the tail is cut at restart; every whole batch stays.
  client_.reset();
  broker_->process().send_signal(SIGKILL);
  broker_->process().wait_exit(10s);
  const auto log_file = keep.path() / "data" / "durable-0" / "00000000000000000000.log";
  const std::string whole = read_file(log_file);
  {
    auto torn = make_batch({.records = 5});
    std::ofstream out(log_file, std::ios::binary | std::ios::app);
    out.write(reinterpret_cast<const char*>(torn.data()), 40);
  }
  broker_ = std::make_unique<broker_process>(std::vector<std::string>{}, keep.path() / "data");
  ASSERT_NE(broker_->port(), 0) << broker_->output();
  client_ = std::make_unique<raw_client>(broker_->port());
  EXPECT_EQ(read_file(log_file), whole);
  EXPECT_EQ(produce("durable", b1).base_offset, 4);
  EXPECT_EQ(
      produce("durable", make_batch({.records = 1, .producer_id = pid, .epoch = 0, .sequence = 6}))
          .base_offset,
      6);
  EXPECT_EQ(produce("durable", make_batch({})).base_offset, 7);
}

}  // namespace

namespace {

// Runs the error cases against whichever broker client_ talks to; one line per answer.
std::vector<std::string> run_error_cases(produce_test_access& t) {
  std::vector<std::string> out;
  auto summary = [&](const std::string& what,
                     const produce_response::partition_produce_response& r) {
    std::string s =
        fmt::format("{}: error={} base={} lso={} msg={}", what, r.error_code, r.base_offset,
                    r.log_start_offset, r.error_message ? std::string(*r.error_message) : "null");
    for (const auto& e : r.record_errors) {
      std::string m =
          e.batch_index_error_message ? std::string(*e.batch_index_error_message) : "null";
      // Timestamp bounds depend on the broker's clock.
      if (auto p = m.find(" is out of range"); p != std::string::npos) {
        m = m.substr(p, m.find('[', p) - p);
      }
      s += fmt::format(" [{}:{}]", e.batch_index, m);
    }
    out.push_back(s);
  };
  t.create("bad", {});
  t.create("small", {{"max.message.bytes", "1000"}});
  t.create("compacted", {{"cleanup.policy", "compact"}});
  t.create("recent", {{"message.timestamp.before.max.ms", "60000"}});
  summary("ok", t.send("bad", make_batch({.records = 3}), 1));
  summary("acks2", t.send("bad", make_batch({.records = 1}), 2));
  summary("base5", t.send("bad", make_batch({.records = 1, .base_offset = 5}), 1));
  auto two = make_batch({.records = 1});
  auto second = make_batch({.records = 1});
  two.insert(two.end(), second.begin(), second.end());
  summary("two", t.send("bad", two, 1));
  auto corrupt = make_batch({.records = 2});
  corrupt.back() ^= 0x01;
  summary("crc", t.send("small", corrupt, 1));
  summary("big", t.send("small", make_batch({.records = 2, .value_size = 2000}), 1));
  summary("unknown", t.send("nope", make_batch({}), 1));
  summary("keyless", t.send("compacted", make_batch({.records = 2, .keys = false}), 1));
  summary("old", t.send("recent", make_batch({.records = 1, .timestamp = now_ms() - 3600000}), 1));
  const int64_t pid = t.pid();
  auto b0 = make_batch({.records = 3, .producer_id = pid, .epoch = 0, .sequence = 0});
  summary("seq0", t.send("bad", b0, -1));
  summary("retry", t.send("bad", b0, -1));
  summary(
      "gap",
      t.send("bad", make_batch({.records = 1, .producer_id = pid, .epoch = 0, .sequence = 9}), -1));
  summary(
      "epoch1",
      t.send("bad", make_batch({.records = 1, .producer_id = pid, .epoch = 1, .sequence = 0}), -1));
  summary(
      "stale",
      t.send("bad", make_batch({.records = 1, .producer_id = pid, .epoch = 0, .sequence = 3}), -1));
  return out;
}

}  // namespace

void produce_test_access::create(const std::string& name,
                                 std::vector<std::pair<std::string, std::string>> configs) {
  t_.create_topic(name, std::move(configs));
}
produce_response::partition_produce_response produce_test_access::send(
    const std::string& topic, const std::vector<uint8_t>& batch, int16_t acks) {
  // Kafka creates a topic's partitions asynchronously after CreateTopics answers: a produce
  // right after may see UNKNOWN_TOPIC_OR_PARTITION for a while (tarn: never).
  for (int attempt = 0;; ++attempt) {
    auto r = t_.produce(topic, batch, acks);
    if (r.error_code != err_unknown_topic || topic == "nope" || attempt == 100) return r;
    std::this_thread::sleep_for(100ms);
  }
}
int64_t produce_test_access::pid() { return t_.init_producer_id(); }

TEST_F(produce_test, error_cases_answered_the_same_against_kafka) {
  ASSERT_EQ(kafka_test_name_error(), "");
  auto [libs_rc, libs] = run_command(std::string(TARN_SOURCE_DIR) + "/scripts/kafka-ref libs");
  if (libs_rc != 0 || run_command("command -v java").first != 0) {
    GTEST_SKIP() << "java or the Kafka 4.4.0 jars are not available";
  }
  produce_test_access tarn_side(*this);
  const auto ours = run_error_cases(tarn_side);

  temp_dir kdir;
  const std::string script = std::string(TARN_SOURCE_DIR) + "/scripts/kafka-ref";
  const uint16_t port = free_port();
  ASSERT_NE(port, 0);
  auto [rc, out] = run_command("timeout 90 " + script + " start --port " + std::to_string(port) +
                               " --dir " + (kdir.path() / "k").string());
  struct stopper {
    std::string cmd;
    ~stopper() { run_command(cmd); }
  } stop{"timeout 60 " + script + " stop --dir " + (kdir.path() / "k").string()};
  ASSERT_EQ(rc, 0) << out;
  client_ = std::make_unique<raw_client>(port);
  ASSERT_TRUE(client_->connected());
  topic_ids_.clear();
  const auto theirs = run_error_cases(tarn_side);
  ASSERT_EQ(ours.size(), theirs.size());
  for (size_t i = 0; i < ours.size(); ++i) EXPECT_EQ(ours[i], theirs[i]);
}

// Only tests named as the interop oracle may start Apache Kafka (tests/kafka_test_names.h):
// this one, named otherwise, is refused with the reason.
TEST(kafka_test_names, a_test_named_otherwise_may_not_start_kafka) {
  const std::string error = kafka_test_name_error();
  EXPECT_NE(error.find("kafka_test_names.a_test_named_otherwise_may_not_start_kafka"),
            std::string::npos)
      << error;
  EXPECT_NE(error.find("make interop"), std::string::npos) << error;
}
