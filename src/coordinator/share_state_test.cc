// __share_group_state without sockets: the key's partition (values from Kafka 4.4's
// SharePartitionKey and Utils.abs), the record bytes, batch merging and diffing, and the share
// coordinator's writes replayed by a new coordinator into the same state (snapshot then updates,
// a snapshot again after the configured count, unknown and undecodable records skipped).
#include "coordinator/share_state.h"

#include <gtest/gtest.h>

#include "coordinator/share_coordinator.h"
#include "coordinator/test_support.h"

namespace tarn::coordinator {
namespace {

using protocol::error_code;

topic_uuid test_topic_id() {
  topic_uuid id{};
  id[0] = 1;
  id[15] = 0x42;  // AQAAAAAAAAAAAAAAAAAAQg, memory_metadata's first topic
  return id;
}

TEST(share_state, partition_is_kafkas_hash_of_the_coordinator_key) {
  // Printed by Kafka 4.4: Utils.abs(SharePartitionKey.asCoordinatorKey().hashCode()) % 50.
  const topic_uuid id = test_topic_id();
  EXPECT_EQ(share_state_partition_for({"g", id, 0}, 50), 9);
  EXPECT_EQ(share_state_partition_for({"g", id, 7}, 50), 2);
  EXPECT_EQ(share_state_partition_for({"share-group-1", id, 0}, 50), 11);
  EXPECT_EQ(share_state_partition_for({"share-group-1", id, 7}, 50), 4);
  // UTF-8 group id hashed over its UTF-16 (a surrogate pair for the emoji).
  EXPECT_EQ(share_state_partition_for({"gr\xc3\xbc\xc3\x9f"
                                       "e-\xf0\x9f\x98\x80",
                                       id, 0},
                                      50),
            3);
  EXPECT_EQ(share_state_partition_for({"gr\xc3\xbc\xc3\x9f"
                                       "e-\xf0\x9f\x98\x80",
                                       id, 7},
                                      50),
            10);
}

TEST(share_state, key_is_record_type_then_group_topic_partition) {
  const auto k = encode_share_state_key(share_update_record_type, {"g", test_topic_id(), 3});
  const std::vector<uint8_t> expected = {0, 1,  // ShareUpdateKey
                                         0, 1, 'g', 1, 0, 0, 0,    0, 0, 0, 0, 0,
                                         0, 0, 0,   0, 0, 0, 0x42, 0, 0, 0, 3};
  EXPECT_EQ(k, expected);
}

TEST(share_state, higher_counts_then_states_win_and_the_start_offset_cuts) {
  const std::vector<state_batch> current = {{10, 19, 0, 1}, {20, 29, 2, 1}};
  const std::vector<state_batch> updates = {{15, 22, 4, 2}};
  EXPECT_EQ(combine_state_batches(current, updates, 0),
            (std::vector<state_batch>{{10, 14, 0, 1}, {15, 22, 4, 2}, {23, 29, 2, 1}}));
  EXPECT_EQ(combine_state_batches(current, updates, 16),
            (std::vector<state_batch>{{16, 22, 4, 2}, {23, 29, 2, 1}}));
  // Neighbours with one state and count join; an update inside one run splits it.
  EXPECT_EQ(combine_state_batches(std::vector<state_batch>{{0, 9, 0, 1}},
                                  std::vector<state_batch>{{10, 12, 0, 1}, {5, 5, 2, 1}}, 0),
            (std::vector<state_batch>{{0, 4, 0, 1}, {5, 5, 2, 1}, {6, 12, 0, 1}}));
  // Kafka's priority, not the order: a later batch with a lower delivery count loses, and at one
  // count the higher state wins.
  EXPECT_EQ(
      combine_state_batches(std::vector<state_batch>{{0, 9, 4, 3}},
                            std::vector<state_batch>{{5, 14, 0, 1}, {12, 12, 2, 1}}, 0),
      (std::vector<state_batch>{{0, 9, 4, 3}, {10, 11, 0, 1}, {12, 12, 2, 1}, {13, 14, 0, 1}}));
  EXPECT_EQ(
      combine_state_batches({}, std::vector<state_batch>{{0, INT64_MAX, 0, 1}, {5, 5, 4, 1}}, 0),
      (std::vector<state_batch>{{0, 4, 0, 1}, {5, 5, 4, 1}, {6, INT64_MAX, 0, 1}}));
  // A reversed batch (first > last) is ignored.
  EXPECT_EQ(combine_state_batches({}, std::vector<state_batch>{{9, 3, 2, 1}}, 0),
            std::vector<state_batch>{});
}

TEST(share_state, changed_batches_are_what_differs) {
  const std::vector<state_batch> before = {{0, 9, 0, 1}};
  const std::vector<state_batch> after = {{0, 3, 0, 1}, {4, 6, 2, 1}, {7, 9, 0, 1}, {10, 12, 0, 1}};
  EXPECT_EQ(changed_state_batches(before, after),
            (std::vector<state_batch>{{4, 6, 2, 1}, {10, 12, 0, 1}}));
  EXPECT_TRUE(changed_state_batches(after, after).empty());
}

struct share_fixture {
  testing::memory_metadata metadata;
  testing::memory_offsets_log log{0};
  share_config config = [] {
    share_config c;
    c.share_coordinator_snapshot_update_records_per_snapshot = 3;
    return c;
  }();
  share_topic_partition tp;

  share_fixture() {
    metadata.add("t", 1);
    tp = {test_topic_id(), 0};
  }

  // Acquires offsets [from, to] for `member` as one batch read from the log.
  static std::vector<acquired_range> take(share_coordinator& s, std::string_view member,
                                          int64_t from, int64_t to, int64_t now_ms,
                                          const share_topic_partition& tp) {
    auto next = s.next_fetch_offset("g", tp, 0, 1000, now_ms);
    EXPECT_TRUE(next.has_value());
    const fetched_batch b{from, to, false};
    return s.acquire("g", member, tp, std::span<const fetched_batch>(&b, 1), 1000, now_ms);
  }
  static error_code ack(share_coordinator& s, std::string_view member, int64_t first, int64_t last,
                        acknowledge_type type, const share_topic_partition& tp) {
    acknowledgement_batch b{first, last, {static_cast<int8_t>(type)}};
    return s.acknowledge("g", member, tp, std::span<const acknowledgement_batch>(&b, 1), 0);
  }
};

TEST(share_state, writes_replay_into_the_same_state) {
  share_fixture f;
  share_coordinator shares(f.config, f.metadata, &f.log);
  shares.set_group_configs("g", {{"share.auto.offset.reset", "earliest"}});
  ASSERT_EQ(share_fixture::take(shares, "m", 0, 9, 0, f.tp).size(), 1u);
  EXPECT_EQ(share_fixture::ack(shares, "m", 0, 3, acknowledge_type::accept, f.tp),
            error_code::none);
  EXPECT_EQ(share_fixture::ack(shares, "m", 4, 4, acknowledge_type::reject, f.tp),
            error_code::none);
  EXPECT_EQ(share_fixture::ack(shares, "m", 5, 5, acknowledge_type::release, f.tp),
            error_code::none);
  // 6..9 stay acquired; 5 is Available with delivery count 1. The SPSO moved past 0..4.
  ASSERT_TRUE(f.log.partitions().has_value());
  EXPECT_EQ(*f.log.partitions(), 50);
  const auto records = f.log.records();
  ASSERT_GE(records.size(), 4u);
  EXPECT_EQ(records.front().first[1], share_snapshot_record_type);  // the initial state
  for (const auto& [k, v] : records) EXPECT_TRUE(v.has_value());

  share_coordinator restarted(f.config, f.metadata, &f.log);
  ASSERT_TRUE(restarted.load(0).has_value());
  EXPECT_EQ(restarted.share_partition_count(), 1u);
  EXPECT_EQ(restarted.start_offset("g", f.tp), 5);
  EXPECT_TRUE(restarted.has_group("g"));  // Empty, its members rejoin
  // Nothing acknowledged comes back; 5..9 come back, each delivery counted once more.
  auto again = share_fixture::take(restarted, "m2", 0, 12, 0, f.tp);
  EXPECT_EQ(again, (std::vector<acquired_range>{{5, 9, 2}, {10, 12, 1}}));
}

std::vector<int16_t> record_types(testing::memory_offsets_log& log) {
  std::vector<int16_t> types;
  for (const auto& [k, v] : log.records()) {
    types.push_back(static_cast<int16_t>((k[0] << 8) | k[1]));
  }
  return types;
}

// Kafka's snapshotUpdateCount with share.coordinator.snapshot.update.records.per.snapshot 3:
// the first update after the first snapshot counts 0, so that snapshot is followed by four
// updates, each later one (at which the count is reset) by three.
TEST(share_state, a_snapshot_follows_the_configured_number_of_updates) {
  share_fixture f;
  share_coordinator shares(f.config, f.metadata, &f.log);
  shares.set_group_configs("g", {{"share.auto.offset.reset", "earliest"}});
  share_fixture::take(shares, "m", 0, 9, 0, f.tp);  // snapshot, then an update (the acquisition)
  for (int64_t o = 0; o < 9; ++o) {
    EXPECT_EQ(share_fixture::ack(shares, "m", o, o, acknowledge_type::accept, f.tp),
              error_code::none);
  }
  EXPECT_EQ(record_types(f.log), (std::vector<int16_t>{0, 1, 1, 1, 1, 0, 1, 1, 1, 0, 1}));
  share_coordinator restarted(f.config, f.metadata, &f.log);
  ASSERT_TRUE(restarted.load(0).has_value());
  EXPECT_EQ(restarted.start_offset("g", f.tp), 9);
}

// A snapshot written for another reason than the count (here AlterShareGroupOffsets') leaves
// the count as it was, as Kafka resets it only at a snapshot that found it at the limit; a
// restart replays the same count, so the next snapshot comes where it would have without it.
TEST(share_state, only_a_snapshot_at_the_limit_resets_the_count) {
  share_fixture f;
  {
    share_coordinator shares(f.config, f.metadata, &f.log);
    shares.set_group_configs("g", {{"share.auto.offset.reset", "earliest"}});
    share_fixture::take(shares, "m", 0, 9, 0, f.tp);  // snapshot (no count), update (0)
    EXPECT_EQ(share_fixture::ack(shares, "m", 0, 0, acknowledge_type::accept, f.tp),
              error_code::none);            // 1
    shares.set_start_offset("g", f.tp, 5);  // a snapshot: still 1
  }
  share_coordinator restarted(f.config, f.metadata, &f.log);
  ASSERT_TRUE(restarted.load(0).has_value());
  share_fixture::take(restarted, "m", 5, 9, 0, f.tp);  // 2
  EXPECT_EQ(share_fixture::ack(restarted, "m", 5, 5, acknowledge_type::accept, f.tp),
            error_code::none);  // 3
  EXPECT_EQ(share_fixture::ack(restarted, "m", 6, 6, acknowledge_type::accept, f.tp),
            error_code::none);  // at the limit: a snapshot, 0
  EXPECT_EQ(share_fixture::ack(restarted, "m", 7, 7, acknowledge_type::accept, f.tp),
            error_code::none);  // 1
  EXPECT_EQ(record_types(f.log), (std::vector<int16_t>{0, 1, 1, 0, 1, 1, 0, 1}));
}

// Fetches that change nothing (a share-partition whose records are all held) write nothing,
// and the next change is written as an update.
TEST(share_state, an_unchanged_share_partition_is_not_written) {
  share_fixture f;
  share_coordinator shares(f.config, f.metadata, &f.log);
  shares.set_group_configs("g", {{"share.auto.offset.reset", "earliest"}});
  share_fixture::take(shares, "m", 0, 9, 0, f.tp);
  const size_t written = f.log.records().size();
  for (int i = 0; i < 10; ++i) {
    EXPECT_EQ(shares.next_fetch_offset("g", f.tp, 0, 1000, 1), 10);
  }
  EXPECT_EQ(f.log.records().size(), written);
  EXPECT_EQ(share_fixture::ack(shares, "m", 0, 9, acknowledge_type::accept, f.tp),
            error_code::none);
  EXPECT_EQ(f.log.records().size(), written + 1);
  share_coordinator restarted(f.config, f.metadata, &f.log);
  ASSERT_TRUE(restarted.load(0).has_value());
  EXPECT_EQ(restarted.start_offset("g", f.tp), 10);
}

TEST(share_state, replay_skips_unknown_and_undecodable_records_and_obeys_tombstones) {
  share_state_replay replay;
  const share_partition_key key{"g", test_topic_id(), 0};
  share_group_offset s;
  s.start_offset = 7;
  s.state_batches = {{7, 8, 2, 1}, {9, 9, 0, 1}};
  const auto snapshot_key = encode_share_state_key(share_snapshot_record_type, key);
  const auto value = encode_share_snapshot_value(s);
  replay.apply(0, snapshot_key, std::span<const uint8_t>(value));
  // A record type of another coordinator: ignored, not counted.
  const std::vector<uint8_t> other = {0, 9, 0, 0};
  replay.apply(1, other, std::span<const uint8_t>(value));
  // A torn update (its value cut short) and a key shorter than its type: skipped.
  share_group_offset d;
  d.start_offset = 9;
  d.state_batches = {{9, 9, 2, 1}};
  const auto update_key = encode_share_state_key(share_update_record_type, key);
  const auto update = encode_share_update_value(d);
  replay.apply(2, update_key, std::span<const uint8_t>(update.data(), update.size() - 3));
  const std::vector<uint8_t> stub = {0};
  replay.apply(3, stub, std::span<const uint8_t>(value));
  EXPECT_EQ(replay.skipped(), 2);
  ASSERT_EQ(replay.states().size(), 1u);
  EXPECT_EQ(replay.states().begin()->second.state, s);
  // The whole update applies: 9 acknowledged, the SPSO at 9.
  replay.apply(4, update_key, std::span<const uint8_t>(update));
  EXPECT_EQ(replay.states().begin()->second.state.start_offset, 9);
  EXPECT_EQ(replay.states().begin()->second.state.state_batches,
            (std::vector<state_batch>{{9, 9, 2, 1}}));
  // The first update after the first snapshot counts 0 (Kafka's snapshotUpdateCount).
  EXPECT_EQ(replay.states().begin()->second.updates_since_snapshot, 0);
  replay.apply(5, snapshot_key, std::nullopt);
  EXPECT_TRUE(replay.states().empty());
}

TEST(share_state, a_failed_write_rolls_the_acknowledgement_back) {
  share_fixture f;
  share_coordinator shares(f.config, f.metadata, &f.log);
  shares.set_group_configs("g", {{"share.auto.offset.reset", "earliest"}});
  share_fixture::take(shares, "m", 0, 4, 0, f.tp);
  f.log.fail_with = error_code::not_enough_replicas;
  EXPECT_EQ(share_fixture::ack(shares, "m", 0, 4, acknowledge_type::accept, f.tp),
            error_code::coordinator_not_available);
  f.log.fail_with = error_code::none;
  // Still acquired by m: the acknowledgement can be made again, and is written then.
  EXPECT_EQ(share_fixture::ack(shares, "m", 0, 4, acknowledge_type::accept, f.tp),
            error_code::none);
  share_coordinator restarted(f.config, f.metadata, &f.log);
  ASSERT_TRUE(restarted.load(0).has_value());
  EXPECT_EQ(restarted.start_offset("g", f.tp), 5);
}

TEST(share_state, pruning_keeps_the_latest_snapshot_and_what_follows) {
  share_fixture f;
  f.config.share_coordinator_state_topic_prune_interval_ms = 1000;
  f.config.share_coordinator_cold_partition_snapshot_interval_ms = 1000;
  share_coordinator shares(f.config, f.metadata, &f.log);
  shares.set_group_configs("g", {{"share.auto.offset.reset", "earliest"}});
  shares.poll(0);  // the intervals start
  share_fixture::take(shares, "m", 0, 9, 0, f.tp);
  for (int64_t o = 9; o >= 4; --o) {  // from the top: the SPSO stays at 0, six updates
    EXPECT_EQ(share_fixture::ack(shares, "m", o, o, acknowledge_type::accept, f.tp),
              error_code::none);
  }
  const int32_t part = share_state_partition_for({"g", f.tp.topic_id, 0}, 50);
  // 8 records: snapshot 0, updates 1-3, snapshot 4 (the 4th write after 3 updates), updates 5-7.
  shares.poll(500);
  EXPECT_EQ(f.log.log_start(part), 0);
  // The interval passed: the idle share-partition gets a snapshot (offset 8), then all before
  // it goes.
  shares.poll(2000);
  EXPECT_EQ(f.log.log_start(part), 8);
  share_coordinator restarted(f.config, f.metadata, &f.log);
  ASSERT_TRUE(restarted.load(0).has_value());
  EXPECT_EQ(restarted.start_offset("g", f.tp), 0);
  auto again = share_fixture::take(restarted, "m2", 0, 9, 0, f.tp);
  EXPECT_EQ(again, (std::vector<acquired_range>{{0, 3, 2}}));
}

TEST(share_state, deleted_offsets_are_tombstoned) {
  share_fixture f;
  share_coordinator shares(f.config, f.metadata, &f.log);
  share_fixture::take(shares, "m", 1000, 1000, 0, f.tp);
  shares.delete_topic_offsets("g", f.tp.topic_id);
  // One tombstone, of the ShareSnapshot key (type 0), as Kafka 4.4 writes.
  const auto records = f.log.records();
  ASSERT_GE(records.size(), 2u);
  EXPECT_FALSE(records.back().second.has_value());
  EXPECT_EQ(record_types(f.log).back(), share_snapshot_record_type);
  EXPECT_TRUE(records[records.size() - 2].second.has_value());
  share_coordinator restarted(f.config, f.metadata, &f.log);
  ASSERT_TRUE(restarted.load(0).has_value());
  EXPECT_EQ(restarted.share_partition_count(), 0u);
}

}  // namespace
}  // namespace tarn::coordinator
