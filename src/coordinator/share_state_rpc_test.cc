// The share-state RPCs of the share coordinator without sockets (share_state_rpc.cc): Kafka 4.4's
// ShareCoordinatorShard checks in their order (INVALID_REQUEST texts, FENCED_LEADER_EPOCH,
// FENCED_STATE_EPOCH, UNKNOWN_TOPIC_OR_PARTITION), the state a write leaves, a read raising the
// leader epoch, the summary of a share-partition without state, delete, the epochs surviving a
// replay, and the in-memory share-partition following a write.
#include <gtest/gtest.h>

#include "coordinator/share_coordinator.h"
#include "coordinator/test_support.h"

namespace tarn::coordinator {
namespace {

using protocol::error_code;

topic_uuid topic_id() {
  topic_uuid id{};
  id[0] = 1;
  id[15] = 0x42;  // memory_metadata's first topic
  return id;
}

struct rpc_fixture {
  testing::memory_metadata metadata;
  testing::memory_offsets_log log{0};
  share_config config;
  share_topic_partition tp;

  rpc_fixture() {
    metadata.add("t", 2);
    tp = {topic_id(), 0};
  }
};

share_coordinator::state_write write_of(int32_t state_epoch, int32_t leader_epoch, int64_t start,
                                        std::vector<state_batch> batches = {}) {
  share_coordinator::state_write w;
  w.state_epoch = state_epoch;
  w.leader_epoch = leader_epoch;
  w.start_offset = start;
  w.batches = std::move(batches);
  return w;
}

TEST(share_state_rpc, initialize_then_read_gives_the_initialized_state) {
  rpc_fixture f;
  share_coordinator shares(f.config, f.metadata, &f.log);
  ASSERT_EQ(shares.prepare_state_rpc(), error_code::none);
  // Kafka answers a read of a share-partition without state INVALID_REQUEST.
  auto r = shares.read_state("g", f.tp, 0, 0);
  EXPECT_EQ(r.error, error_code::invalid_request);
  EXPECT_EQ(r.message, "Read operation on uninitialized share partition not allowed.");
  EXPECT_EQ(shares.initialize_state("g", f.tp, 3, 10, 0).error, error_code::none);
  r = shares.read_state("g", f.tp, 0, 0);
  ASSERT_EQ(r.error, error_code::none);
  EXPECT_EQ(r.state.state_epoch, 3);
  EXPECT_EQ(r.state.start_offset, 10);
  EXPECT_TRUE(r.state.state_batches.empty());
  // The in-memory share-partition starts there too (its next fetch reads from 10).
  EXPECT_EQ(shares.start_offset("g", f.tp), 10);
  EXPECT_TRUE(shares.has_group("g"));
  auto s = shares.read_state_summary("g", f.tp);
  EXPECT_EQ(s.state.start_offset, 10);
  EXPECT_EQ(s.state.delivery_complete_count, 0);
  EXPECT_EQ(s.state.state_epoch, 3);
}

TEST(share_state_rpc, checks_come_in_kafkas_order_with_its_texts) {
  rpc_fixture f;
  share_coordinator shares(f.config, f.metadata, &f.log);
  ASSERT_EQ(shares.prepare_state_rpc(), error_code::none);
  const share_topic_partition negative{topic_id(), -1};
  EXPECT_EQ(shares.initialize_state("g", negative, 0, 0, 0).message,
            "The partition id cannot be a negative number.");
  EXPECT_EQ(shares.initialize_state("g", f.tp, -1, 0, 0).message,
            "The state epoch cannot be a negative number.");
  EXPECT_EQ(shares.read_state("g", f.tp, -1, 0).message,
            "The leader epoch cannot be a negative number.");
  auto w = shares.write_state("g", f.tp, write_of(0, 0, 0), 0);
  EXPECT_EQ(w.error, error_code::invalid_request);
  EXPECT_EQ(w.message, "Write operation on uninitialized share partition not allowed.");
  // Partition 2 of a two-partition topic, and a topic id nobody has.
  EXPECT_EQ(shares.initialize_state("g", {topic_id(), 2}, 0, 0, 0).error,
            error_code::unknown_topic_or_partition);
  topic_uuid other{};
  other[3] = 9;
  EXPECT_EQ(shares.read_state_summary("g", {other, 0}).error,
            error_code::unknown_topic_or_partition);
  EXPECT_EQ(shares.delete_state("g", {other, 0}, 0).error, error_code::unknown_topic_or_partition);
  // Nothing of those was written.
  EXPECT_EQ(f.log.appends, 0);
}

TEST(share_state_rpc, stale_epochs_are_fenced) {
  rpc_fixture f;
  share_coordinator shares(f.config, f.metadata, &f.log);
  ASSERT_EQ(shares.prepare_state_rpc(), error_code::none);
  ASSERT_EQ(shares.initialize_state("g", f.tp, 2, 0, 0).error, error_code::none);
  // A new leader (epoch 5) reads: its epoch is written, the older leaders are fenced.
  ASSERT_EQ(shares.read_state("g", f.tp, 5, 0).error, error_code::none);
  EXPECT_EQ(shares.read_state_summary("g", f.tp).state.leader_epoch, 5);
  EXPECT_EQ(shares.read_state("g", f.tp, 4, 0).error, error_code::fenced_leader_epoch);
  EXPECT_EQ(shares.write_state("g", f.tp, write_of(2, 4, 0), 0).error,
            error_code::fenced_leader_epoch);
  // The leader epoch is checked before the state epoch.
  EXPECT_EQ(shares.write_state("g", f.tp, write_of(1, 4, 0), 0).error,
            error_code::fenced_leader_epoch);
  EXPECT_EQ(shares.write_state("g", f.tp, write_of(1, 5, 0), 0).error,
            error_code::fenced_state_epoch);
  EXPECT_EQ(shares.initialize_state("g", f.tp, 1, 0, 0).error, error_code::fenced_state_epoch);
  EXPECT_EQ(shares.write_state("g", f.tp, write_of(2, 5, 0), 0).error, error_code::none);
  // A newer state epoch (re-initialization) fences writers of the old one; the recorded leader
  // epoch stays the highest seen although the new snapshot carries 0.
  ASSERT_EQ(shares.initialize_state("g", f.tp, 3, 0, 0).error, error_code::none);
  EXPECT_EQ(shares.write_state("g", f.tp, write_of(2, 5, 0), 0).error,
            error_code::fenced_state_epoch);
  EXPECT_EQ(shares.read_state("g", f.tp, 4, 0).error, error_code::fenced_leader_epoch);

  // The fences survive a restart (replayed from the records).
  share_coordinator restarted(f.config, f.metadata, &f.log);
  ASSERT_TRUE(restarted.load(0).has_value());
  EXPECT_EQ(restarted.write_state("g", f.tp, write_of(2, 5, 0), 0).error,
            error_code::fenced_state_epoch);
  EXPECT_EQ(restarted.read_state("g", f.tp, 4, 0).error, error_code::fenced_leader_epoch);
  EXPECT_EQ(restarted.write_state("g", f.tp, write_of(3, 5, 0), 0).error, error_code::none);
}

TEST(share_state_rpc, writes_merge_and_the_share_partition_follows) {
  rpc_fixture f;
  f.config.share_coordinator_snapshot_update_records_per_snapshot = 2;
  share_coordinator shares(f.config, f.metadata, &f.log);
  ASSERT_EQ(shares.prepare_state_rpc(), error_code::none);
  ASSERT_EQ(shares.initialize_state("g", f.tp, 0, 0, 0).error, error_code::none);
  // Overlapping batches merge; the SPSO moves forward only.
  ASSERT_EQ(shares.write_state("g", f.tp, write_of(0, 0, 5, {{5, 9, 0, 1}, {7, 8, 2, 1}}), 0).error,
            error_code::none);
  ASSERT_EQ(shares.write_state("g", f.tp, write_of(0, 0, 2, {{9, 9, 4, 2}}), 0).error,
            error_code::none);
  auto r = shares.read_state("g", f.tp, 0, 0);
  ASSERT_EQ(r.error, error_code::none);
  EXPECT_EQ(r.state.start_offset, 5);
  EXPECT_EQ(r.state.state_batches,
            (std::vector<state_batch>{{5, 6, 0, 1}, {7, 8, 2, 1}, {9, 9, 4, 2}}));
  // The in-memory share-partition took the written state: 5 and 6 are Available again with
  // delivery count 1; 7-9 are finished, so a fetch takes 5, 6 and then 10.
  EXPECT_EQ(shares.start_offset("g", f.tp), 5);
  auto next = shares.next_fetch_offset("g", f.tp, 0, 100, 0);
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(*next, 5);
  const fetched_batch b{5, 12, false};
  EXPECT_EQ(shares.acquire("g", "m", f.tp, std::span<const fetched_batch>(&b, 1), 100, 0),
            (std::vector<acquired_range>{{5, 6, 2}, {10, 12, 1}}));
  // A third write crosses share.coordinator.snapshot.update.records.per.snapshot (the
  // acquisition wrote one update too): a snapshot, and a restart gives the same state.
  ASSERT_EQ(shares.write_state("g", f.tp, write_of(0, 0, 7, {}), 0).error, error_code::none);
  const auto before = shares.read_state("g", f.tp, 0, 0).state.state_batches;
  share_coordinator restarted(f.config, f.metadata, &f.log);
  ASSERT_TRUE(restarted.load(0).has_value());
  EXPECT_EQ(restarted.read_state("g", f.tp, 0, 0).state.state_batches, before);
  EXPECT_EQ(restarted.start_offset("g", f.tp), 10);  // 7-9 finished: the SPSO moved past them
}

TEST(share_state_rpc, delete_and_summary_of_no_state) {
  rpc_fixture f;
  share_coordinator shares(f.config, f.metadata, &f.log);
  ASSERT_EQ(shares.prepare_state_rpc(), error_code::none);
  // No state: NONE, SPSO -1, delivery-complete count -1, epochs 0; a delete writes nothing.
  auto s = shares.read_state_summary("g", f.tp);
  EXPECT_EQ(s.error, error_code::none);
  EXPECT_EQ(s.state.start_offset, -1);
  EXPECT_EQ(s.state.delivery_complete_count, -1);
  EXPECT_EQ(shares.delete_state("g", f.tp, 0).error, error_code::none);
  EXPECT_EQ(f.log.appends, 0);
  ASSERT_EQ(shares.initialize_state("g", f.tp, 0, 4, 0).error, error_code::none);
  ASSERT_EQ(shares.delete_state("g", f.tp, 0).error, error_code::none);
  EXPECT_EQ(shares.read_state("g", f.tp, 0, 0).error, error_code::invalid_request);
  EXPECT_FALSE(shares.start_offset("g", f.tp).has_value());
  share_coordinator restarted(f.config, f.metadata, &f.log);
  ASSERT_TRUE(restarted.load(0).has_value());
  EXPECT_EQ(restarted.read_state_summary("g", f.tp).state.start_offset, -1);
  EXPECT_EQ(restarted.share_partition_count(), 0u);
}

TEST(share_state_rpc, initialize_without_a_start_offset_leaves_it_to_the_first_fetch) {
  rpc_fixture f;
  share_coordinator shares(f.config, f.metadata, &f.log);
  ASSERT_EQ(shares.prepare_state_rpc(), error_code::none);
  ASSERT_EQ(shares.initialize_state("g", f.tp, 0, -1, 0).error, error_code::none);
  EXPECT_EQ(shares.read_state_summary("g", f.tp).state.delivery_complete_count, -1);
  EXPECT_FALSE(shares.start_offset("g", f.tp).has_value());
  // share.auto.offset.reset latest: the high watermark.
  EXPECT_EQ(shares.next_fetch_offset("g", f.tp, 0, 30, 0), 30);
  EXPECT_EQ(shares.read_state("g", f.tp, 0, 0).state.start_offset, 30);
}

}  // namespace
}  // namespace tarn::coordinator
