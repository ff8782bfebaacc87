// Produce and InitProducerId against the real broker with hand-built requests: every branch of
// Kafka's produce path (the reference's Example 3 and more), checking the error code, that
// nothing is written where nothing should be, and the bytes on disk.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include <filesystem>

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

class produce_test : public ::testing::Test {
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

  void create_topic(const std::string& name, std::vector<std::pair<std::string, std::string>>
                                                 configs = {}) {
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
  produce_response::partition_produce_response produce(
      const std::string& topic, std::span<const uint8_t> records, int16_t acks = 1,
      int16_t version = 8) {
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
    EXPECT_EQ(decoded->error_code, 0);
    EXPECT_EQ(decoded->producer_epoch, 0);
    return decoded->producer_id;
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
  EXPECT_TRUE(client_->wait_closed(5s));
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
  auto gap = produce("idem", make_batch({.records = 1, .producer_id = pid, .epoch = 0,
                                         .sequence = 7}));
  EXPECT_EQ(gap.error_code, err_out_of_order);
  EXPECT_EQ(gap.log_start_offset, 0);
  EXPECT_EQ(segment("idem").size(), size);
  // The rejected batch changed nothing: the next in sequence is 5.
  EXPECT_EQ(produce("idem", make_batch({.records = 1, .producer_id = pid, .epoch = 0,
                                        .sequence = 5}))
                .base_offset,
            5);
  // A new epoch starts at sequence 0; the old epoch is then stale.
  EXPECT_EQ(produce("idem", make_batch({.records = 1, .producer_id = pid, .epoch = 1,
                                        .sequence = 3}))
                .error_code,
            err_out_of_order);
  EXPECT_EQ(produce("idem", make_batch({.records = 1, .producer_id = pid, .epoch = 1,
                                        .sequence = 0}))
                .base_offset,
            6);
  EXPECT_EQ(produce("idem", make_batch({.records = 1, .producer_id = pid, .epoch = 0,
                                        .sequence = 6}))
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

  // SIGKILL: no snapshot for b1; the state is replayed from the log.
  client_.reset();
  broker_->process().send_signal(SIGKILL);
  broker_->process().wait_exit(10s);
  broker_ = std::make_unique<broker_process>(std::vector<std::string>{}, keep.path() / "data");
  ASSERT_NE(broker_->port(), 0) << broker_->output();
  client_ = std::make_unique<raw_client>(broker_->port());
  EXPECT_EQ(produce("durable", b1).base_offset, 4);
  EXPECT_EQ(produce("durable", make_batch({.records = 1, .producer_id = pid, .epoch = 0,
                                           .sequence = 6}))
                .base_offset,
            6);
  EXPECT_EQ(produce("durable", make_batch({})).base_offset, 7);
}

}  // namespace
