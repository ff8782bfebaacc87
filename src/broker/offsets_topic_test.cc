// __consumer_offsets over a real log directory: creation with the coordinator's configs, append
// then replay (across chunks, compressed batches, tombstones, a restart), the produce path's
// errors, and the topic map as the coordinator sees it.
#include "broker/offsets_topic.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "broker/topic_handler_util.h"
#include "record/batch_builder.h"
#include "record/record_batch.h"
#include "storage/test_batches.h"

namespace tarn::broker {
namespace {

using protocol::error_code;

using storage::testing::temp_dir;

broker_config make_config(const properties& props = {}) {
  auto r = make_broker_config(props, {});
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error());
  return r ? *r : broker_config{};
}

std::unique_ptr<topic_manager> open_topics(const broker_config& config,
                                           const std::filesystem::path& dir) {
  auto t = topic_manager::open(config, dir);
  EXPECT_TRUE(t.has_value()) << (t ? "" : t.error());
  return t ? std::move(*t) : nullptr;
}

struct kv {
  std::string key;
  std::optional<std::string> value;  // nullopt: a tombstone
};

// A v2 batch with base offset 0, as the coordinator builds them.
std::vector<uint8_t> make_batch(const std::vector<kv>& records,
                                record::compression_type codec = record::compression_type::none) {
  record::batch_builder_config config;
  config.batch_size = 1 << 30;
  config.compression = codec;
  record::batch_builder builder(config);
  for (const auto& r : records) {
    std::optional<record::bytes_view> value;
    if (r.value) value = record::as_bytes(*r.value);
    EXPECT_EQ(builder.try_append(1700000000000, record::as_bytes(r.key), value),
              record::append_result::appended);
  }
  auto built = builder.build();
  EXPECT_TRUE(built.has_value());
  return built ? std::move(*built) : std::vector<uint8_t>{};
}

// An append outside any transaction (what the group coordinator's own writes are).
result<offset_t, error_code> plain_append(offsets_topic& topic, int32_t partition,
                                          std::vector<uint8_t> batch) {
  return topic.append(partition, std::move(batch), std::nullopt);
}

struct replayed {
  offset_t offset;
  std::string key;
  std::optional<std::string> value;
  bool operator==(const replayed&) const = default;
};

result<std::vector<replayed>, std::string> replay_all(offsets_topic& log, int32_t partition) {
  std::vector<replayed> out;
  auto r = log.replay(partition, [&](const coordinator::offsets_record& rec) {
    replayed x{rec.offset, std::string(record::as_string(rec.key)), std::nullopt};
    if (rec.value) x.value = std::string(record::as_string(*rec.value));
    out.push_back(std::move(x));
  });
  if (!r) return fail(r.error());
  return out;
}

class offsets_topic_test : public ::testing::Test {
 protected:
  void open(const properties& props = {{"offsets.topic.num.partitions", "4"}}) {
    config_ = make_config(props);
    offsets_.reset();
    topics_.reset();
    topics_ = open_topics(config_, dir_.path());
    ASSERT_NE(topics_, nullptr);
    offsets_ = std::make_unique<offsets_topic>(*topics_, config_.group);
  }
  void SetUp() override { open(); }

  temp_dir dir_;
  broker_config config_;
  std::unique_ptr<topic_manager> topics_;
  std::unique_ptr<offsets_topic> offsets_;
};

TEST_F(offsets_topic_test, ensure_topic_creates_the_compacted_topic_once) {
  EXPECT_EQ(offsets_->partitions(), std::nullopt);
  auto created = offsets_->ensure_topic();
  ASSERT_TRUE(created.has_value());
  EXPECT_EQ(*created, 4);
  EXPECT_EQ(offsets_->partitions(), std::optional<int32_t>(4));
  {
    auto guard = topics_->read_lock();
    const storage::topic_info* t = topics_->logs().find_topic("__consumer_offsets");
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->partitions, 4);
    EXPECT_EQ(t->overrides.at("cleanup.policy"), "compact");
    EXPECT_EQ(t->overrides.at("compression.type"), "producer");
    EXPECT_EQ(t->overrides.at("segment.bytes"), "104857600");
    EXPECT_TRUE(t->config.cleanup_compact);
    EXPECT_FALSE(t->config.cleanup_delete);
    EXPECT_EQ(t->config.segment_bytes, 104857600);
    for (int32_t p = 0; p < 4; ++p) {
      EXPECT_NE(topics_->logs().get_log("__consumer_offsets", p), nullptr) << p;
    }
  }
  // Again: the existing topic, whatever offsets.topic.num.partitions says now.
  open({{"offsets.topic.num.partitions", "7"}});
  auto again = offsets_->ensure_topic();
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(*again, 4);
}

TEST_F(offsets_topic_test, segment_bytes_follow_offsets_topic_segment_bytes) {
  open({{"offsets.topic.num.partitions", "1"}, {"offsets.topic.segment.bytes", "2097152"}});
  ASSERT_TRUE(offsets_->ensure_topic().has_value());
  auto guard = topics_->read_lock();
  EXPECT_EQ(topics_->logs().find_topic("__consumer_offsets")->config.segment_bytes, 2097152);
}

TEST_F(offsets_topic_test, a_topic_storage_refuses_is_coordinator_not_available) {
  // Kafka's own check (atLeast(1)) passes; the topic's segment.bytes must be at least 1 MiB.
  open({{"offsets.topic.segment.bytes", "1000"}});
  auto created = offsets_->ensure_topic();
  ASSERT_FALSE(created.has_value());
  EXPECT_EQ(created.error(), error_code::coordinator_not_available);
  EXPECT_EQ(offsets_->partitions(), std::nullopt);
}

TEST_F(offsets_topic_test, append_then_replay_round_trip) {
  ASSERT_TRUE(offsets_->ensure_topic().has_value());
  int appends_seen = 0;
  {
    auto guard = topics_->control_lock();
    topics_->logs().set_append_listener([&](const storage::topic_partition& tp) {
      EXPECT_EQ(tp.topic, "__consumer_offsets");
      EXPECT_EQ(tp.partition, 2);
      ++appends_seen;
    });
  }
  auto a = plain_append(*offsets_, 2, make_batch({{"k1", "v1"}, {"k2", "v2"}}));
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(*a, 1);
  auto b = plain_append(*offsets_, 2,
                        make_batch({{"k3", "v3"}, {"k1", std::nullopt}, {"k4", "v4"}},
                                   record::compression_type::lz4));
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(*b, 4);
  auto c = plain_append(*offsets_, 2, make_batch({{"k5", ""}}, record::compression_type::zstd));
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(*c, 5);
  EXPECT_EQ(appends_seen, 3);

  const std::vector<replayed> want = {{0, "k1", "v1"},         {1, "k2", "v2"}, {2, "k3", "v3"},
                                      {3, "k1", std::nullopt}, {4, "k4", "v4"}, {5, "k5", ""}};
  auto got = replay_all(*offsets_, 2);
  ASSERT_TRUE(got.has_value()) << got.error();
  EXPECT_EQ(*got, want);

  // The stored batches have their offsets and leader epoch 0, as Produce writes them.
  {
    auto guard = topics_->read_lock();
    const storage::log* log = topics_->logs().get_log("__consumer_offsets", 2);
    EXPECT_EQ(log->log_end_offset(), 6);
    auto read = log->read(0, 1 << 20, true);
    ASSERT_TRUE(read.has_value());
    std::vector<uint8_t> bytes(static_cast<size_t>(read->slice->length));
    ASSERT_TRUE(storage::read_slice(*read->slice, bytes).has_value());
    record::batch_reader reader(bytes);
    record::record_batch_view batch;
    std::vector<offset_t> bases;
    while (reader.next(batch)) {
      bases.push_back(batch.base_offset());
      EXPECT_EQ(batch.partition_leader_epoch(), 0);
      EXPECT_TRUE(batch.crc_matches());
    }
    EXPECT_EQ(bases, (std::vector<offset_t>{0, 2, 5}));
  }

  // Other partitions are untouched and replay empty.
  auto empty = replay_all(*offsets_, 0);
  ASSERT_TRUE(empty.has_value()) << empty.error();
  EXPECT_TRUE(empty->empty());

  // After a restart the same records come back.
  ASSERT_TRUE(topics_->shutdown().has_value());
  open();
  auto reopened = replay_all(*offsets_, 2);
  ASSERT_TRUE(reopened.has_value()) << reopened.error();
  EXPECT_EQ(*reopened, want);
  // And appends continue from the log end offset.
  auto d = plain_append(*offsets_, 2, make_batch({{"k6", "v6"}}));
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(*d, 6);
}

TEST_F(offsets_topic_test, replay_reads_in_chunks_of_whole_batches) {
  ASSERT_TRUE(offsets_->ensure_topic().has_value());
  // A 1 KiB read buffer: each chunk holds one batch or a few, and a batch larger than the buffer
  // is still read whole.
  offsets_topic small(*topics_, config_.group, 1024);
  std::vector<replayed> want;
  offset_t next = 0;
  for (int b = 0; b < 20; ++b) {
    std::vector<kv> records;
    const int count = 1 + b % 4;
    for (int i = 0; i < count; ++i) {
      const std::string value(b == 7 ? 3000 : 100, static_cast<char>('a' + b));
      records.push_back({"key-" + std::to_string(next), value});
      want.push_back({next, "key-" + std::to_string(next), value});
      ++next;
    }
    auto a = small.append(1, make_batch(records), std::nullopt);
    ASSERT_TRUE(a.has_value());
    EXPECT_EQ(*a, next - 1);
  }
  auto got = replay_all(small, 1);
  ASSERT_TRUE(got.has_value()) << got.error();
  EXPECT_EQ(*got, want);
}

TEST_F(offsets_topic_test, append_errors_are_the_produce_paths) {
  // No topic yet.
  auto before = plain_append(*offsets_, 0, make_batch({{"k", "v"}}));
  ASSERT_FALSE(before.has_value());
  EXPECT_EQ(before.error(), error_code::unknown_topic_or_partition);
  ASSERT_TRUE(offsets_->ensure_topic().has_value());

  auto out_of_range = plain_append(*offsets_, 4, make_batch({{"k", "v"}}));
  ASSERT_FALSE(out_of_range.has_value());
  EXPECT_EQ(out_of_range.error(), error_code::unknown_topic_or_partition);
  EXPECT_EQ(plain_append(*offsets_, -1, make_batch({{"k", "v"}})).error(),
            error_code::unknown_topic_or_partition);

  // A compacted topic takes no record without a key.
  record::batch_builder_config bc;
  record::batch_builder builder(bc);
  ASSERT_EQ(builder.try_append(1, std::nullopt, record::as_bytes("v")),
            record::append_result::appended);
  auto keyless = plain_append(*offsets_, 0, std::move(*builder.build()));
  ASSERT_FALSE(keyless.has_value());
  EXPECT_EQ(keyless.error(), error_code::invalid_record);

  // A bad CRC.
  auto corrupt = make_batch({{"k", "v"}});
  corrupt.back() ^= 0xff;
  EXPECT_EQ(plain_append(*offsets_, 0, corrupt).error(), error_code::corrupt_message);

  // Not a batch at all, or two batches.
  EXPECT_EQ(plain_append(*offsets_, 0, {1, 2, 3}).error(), error_code::corrupt_message);
  auto two = make_batch({{"k", "v"}});
  auto second = make_batch({{"k2", "v2"}});
  two.insert(two.end(), second.begin(), second.end());
  EXPECT_EQ(plain_append(*offsets_, 0, two).error(), error_code::corrupt_message);

  // Over max.message.bytes (1048588).
  auto large = plain_append(*offsets_, 0, make_batch({{"k", std::string(1100000, 'x')}}));
  ASSERT_FALSE(large.has_value());
  EXPECT_EQ(large.error(), error_code::message_too_large);

  // None of it was written.
  auto guard = topics_->read_lock();
  EXPECT_EQ(topics_->logs().get_log("__consumer_offsets", 0)->log_end_offset(), 0);
}

// A TxnOffsetCommit's transactional batch is refused when a marker of its producer reached the
// partition after its transaction was checked (the transaction ended meanwhile): appended, it
// would open a transaction no marker closes and hold the partition's last stable offset.
TEST_F(offsets_topic_test, a_transactional_batch_whose_transaction_ended_meanwhile_is_refused) {
  ASSERT_TRUE(offsets_->ensure_topic().has_value());
  auto txn_batch = [](int32_t sequence) {
    record::batch_builder_config bc;
    bc.producer_id = 77;
    bc.producer_epoch = 0;
    bc.base_sequence = sequence;
    bc.transactional = true;
    record::batch_builder builder(bc);
    EXPECT_EQ(builder.try_append(1, record::as_bytes("k"), record::as_bytes("v")),
              record::append_result::appended);
    return std::move(*builder.build());
  };
  uint32_t markers = 0;
  {
    auto guard = topics_->read_lock();
    const storage::log* log = topics_->logs().get_log("__consumer_offsets", 1);
    std::lock_guard lock(log->mutex());
    markers = log->producers().markers_written(77);
  }
  ASSERT_TRUE(offsets_->append(1, txn_batch(0), markers).has_value());
  {
    auto guard = topics_->read_lock();
    storage::log* log = topics_->logs().get_log("__consumer_offsets", 1);
    std::lock_guard lock(log->mutex());
    ASSERT_TRUE(log->append_txn_marker({77, 0, 0, true}, 0, 2));
  }
  // Checked before the marker: refused, nothing appended.
  auto late = offsets_->append(1, txn_batch(1), markers);
  ASSERT_FALSE(late.has_value());
  EXPECT_EQ(late.error(), error_code::invalid_txn_state);
  {
    auto guard = topics_->read_lock();
    EXPECT_EQ(topics_->logs().get_log("__consumer_offsets", 1)->log_end_offset(), 2);
  }
  // Checked after it: the next transaction's offsets go in.
  EXPECT_TRUE(offsets_->append(1, txn_batch(1), markers + 1).has_value());
}

TEST_F(offsets_topic_test, replay_of_a_missing_partition_is_an_error) {
  EXPECT_FALSE(replay_all(*offsets_, 0).has_value());
  ASSERT_TRUE(offsets_->ensure_topic().has_value());
  EXPECT_FALSE(replay_all(*offsets_, 4).has_value());
  EXPECT_TRUE(replay_all(*offsets_, 3).has_value());
}

TEST_F(offsets_topic_test, the_metadata_view_is_the_topic_map) {
  ASSERT_TRUE(offsets_->ensure_topic().has_value());
  storage::uuid orders_id;
  {
    auto guard = topics_->control_lock();
    auto t = topics_->logs().create_topic("orders", 3, {}, wall_clock_ms());
    ASSERT_TRUE(t.has_value());
    orders_id = (*t)->topic_id;
  }
  topic_metadata_view view(*topics_);
  auto orders = view.topic("orders");
  ASSERT_TRUE(orders.has_value());
  EXPECT_EQ(orders->name, "orders");
  EXPECT_EQ(orders->partitions, 3);
  EXPECT_EQ(orders->id, to_wire(orders_id).bytes);
  EXPECT_EQ(view.topic("missing"), std::nullopt);

  auto by_id = view.topic_by_id(orders->id);
  ASSERT_TRUE(by_id.has_value());
  EXPECT_EQ(by_id->name, "orders");
  EXPECT_EQ(view.topic_by_id(coordinator::topic_uuid{}), std::nullopt);

  std::vector<std::string> names;
  for (const auto& t : view.topics()) names.push_back(t.name);
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"__consumer_offsets", "orders"}));
}

TEST(is_internal_topic, kafkas_three_coordinator_topics) {
  EXPECT_TRUE(is_internal_topic("__consumer_offsets"));
  EXPECT_TRUE(is_internal_topic("__transaction_state"));
  EXPECT_TRUE(is_internal_topic("__share_group_state"));
  EXPECT_FALSE(is_internal_topic("consumer_offsets"));
  EXPECT_FALSE(is_internal_topic("__consumer_offsets2"));
  EXPECT_FALSE(is_internal_topic("__cluster_metadata"));  // KRaft's log: not Topic.isInternal
}

}  // namespace
}  // namespace tarn::broker
