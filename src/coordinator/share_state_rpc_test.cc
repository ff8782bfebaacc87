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

// In a cluster, a partition of __share_group_state is served only while this broker leads it:
// NOT_COORDINATOR before its load and after its unload, COORDINATOR_LOAD_IN_PROGRESS during the
// replay, and a load overtaken by an unload installs nothing.
TEST(share_state_rpc, state_partitions_load_and_unload_with_their_leadership) {
  rpc_fixture f;
  f.log.create_partitions = 1;
  {
    share_coordinator writer(f.config, f.metadata, &f.log);
    ASSERT_EQ(writer.prepare_state_rpc(), error_code::none);
    ASSERT_EQ(writer.initialize_state("g", f.tp, 2, 10, 0).error, error_code::none);
    ASSERT_EQ(writer.write_state("g", f.tp, write_of(2, 0, 10, {{10, 11, 2, 1}}), 0).error,
              error_code::none);
  }
  share_coordinator shares(f.config, f.metadata, &f.log);
  shares.start_state_unowned(nullptr);
  ASSERT_TRUE(shares.load(0).has_value());
  EXPECT_EQ(shares.state_partition_of("g", f.tp), 0);
  EXPECT_EQ(shares.read_state("g", f.tp, 0, 0).error, error_code::not_coordinator);
  EXPECT_EQ(shares.write_state("g", f.tp, write_of(2, 0, 10), 0).error,
            error_code::not_coordinator);
  EXPECT_EQ(shares.read_state_summary("g", f.tp).error, error_code::not_coordinator);

  error_code during_load = error_code::none;
  f.log.on_replay = [&] { during_load = shares.read_state("g", f.tp, 0, 0).error; };
  ASSERT_TRUE(shares.load_state_partition(0, 0));
  EXPECT_EQ(during_load, error_code::coordinator_load_in_progress);
  f.log.on_replay = nullptr;
  EXPECT_TRUE(shares.state_partition_loaded(0));
  auto r = shares.read_state("g", f.tp, 1, 0);
  ASSERT_EQ(r.error, error_code::none);
  EXPECT_EQ(r.state.state_epoch, 2);
  EXPECT_EQ(r.state.start_offset, 10);
  EXPECT_EQ(r.state.state_batches, (std::vector<state_batch>{{10, 11, 2, 1}}));
  // The coordinator's state is not a share-partition led here.
  EXPECT_FALSE(shares.start_offset("g", f.tp).has_value());

  shares.unload_state_partition(0);
  EXPECT_FALSE(shares.state_partition_loaded(0));
  EXPECT_EQ(shares.read_state("g", f.tp, 1, 0).error, error_code::not_coordinator);

  // Leadership gone while the partition loads: nothing is installed.
  f.log.on_replay = [&] { shares.unload_state_partition(0); };
  EXPECT_FALSE(shares.load_state_partition(0, 0));
  f.log.on_replay = nullptr;
  EXPECT_EQ(shares.read_state("g", f.tp, 1, 0).error, error_code::not_coordinator);
  // Led again: the leader epoch the last read wrote fences the one before it.
  ASSERT_TRUE(shares.load_state_partition(0, 0));
  EXPECT_EQ(shares.read_state("g", f.tp, 0, 0).error, error_code::fenced_leader_epoch);
}

// A share-partition leader in a cluster whose key's partition another broker's coordinator has:
// its state goes through the persister (here straight into that coordinator, no sockets). A new
// leader reads it at its epoch and goes on from what was written; the old leader's next write
// is fenced and its share-partition dropped.
class forwarding_persister final : public share_state_persister {
 public:
  explicit forwarding_persister(share_coordinator& target) : target_(target) {}
  std::optional<int32_t> epoch;  // this broker's leader epoch of the data partition
  int calls = 0;

  std::optional<int32_t> leader_epoch(const topic_uuid&, int32_t) override { return epoch; }
  share_state_answer read(const share_partition_key& key, int32_t leader_epoch) override {
    ++calls;
    return target_.read_state(key.group_id, {key.topic_id, key.partition}, leader_epoch, 0);
  }
  share_state_answer write(const share_partition_key& key, const share_state_write& w) override {
    ++calls;
    return target_.write_state(key.group_id, {key.topic_id, key.partition}, w, 0);
  }
  share_state_answer initialize(const share_partition_key& key, int32_t state_epoch,
                                int64_t start) override {
    ++calls;
    return target_.initialize_state(key.group_id, {key.topic_id, key.partition}, state_epoch, start,
                                    0);
  }

 private:
  share_coordinator& target_;
};

TEST(share_state_rpc, share_partition_leaders_in_a_cluster_keep_state_at_the_coordinator) {
  rpc_fixture f;
  f.log.create_partitions = 1;
  // The coordinator leads the one partition of __share_group_state.
  share_coordinator coordinator(f.config, f.metadata, &f.log);
  coordinator.start_state_unowned(nullptr);
  ASSERT_EQ(coordinator.prepare_state_rpc(), error_code::none);
  ASSERT_TRUE(coordinator.load_state_partition(0, 0));

  // Two brokers leading the data partition one after the other; neither has the state's
  // partition (their own logs are empty and unowned).
  testing::memory_offsets_log none1{1};
  testing::memory_offsets_log none2{1};
  forwarding_persister p1(coordinator);
  forwarding_persister p2(coordinator);
  share_coordinator old_leader(f.config, f.metadata, &none1);
  share_coordinator new_leader(f.config, f.metadata, &none2);
  old_leader.start_state_unowned(&p1);
  new_leader.start_state_unowned(&p2);

  // Not the leader: nothing is made.
  EXPECT_FALSE(old_leader.next_fetch_offset("g", f.tp, 0, 100, 0).has_value());
  EXPECT_EQ(p1.calls, 0);
  p1.epoch = 3;
  // Leader at epoch 3 of a share-partition without state: initialized at the high watermark.
  auto from = old_leader.next_fetch_offset("g", f.tp, 0, 100, 0);
  ASSERT_TRUE(from.has_value());
  EXPECT_EQ(*from, 100);
  const fetched_batch b{100, 109, false};
  EXPECT_EQ(old_leader.acquire("g", "m", f.tp, std::span<const fetched_batch>(&b, 1), 100, 0),
            (std::vector<acquired_range>{{100, 109, 1}}));
  const acknowledgement_batch accept{100, 103, {1}};
  const acknowledgement_batch release{104, 105, {2}};
  EXPECT_EQ(old_leader.acknowledge("g", "m", f.tp, std::span(&accept, 1), 0), error_code::none);
  EXPECT_EQ(old_leader.acknowledge("g", "m", f.tp, std::span(&release, 1), 0), error_code::none);
  // Initialize, the epoch's read, the acquisition, the acceptance (a release of records written
  // as Available with their count changes nothing persisted).
  EXPECT_EQ(f.log.appends, 4);
  EXPECT_EQ(none1.appends, 0);

  // The leadership moves: the new leader reads at epoch 4 and goes on from the written state
  // (100-103 accepted, 104-109 Available with one delivery counted).
  p2.epoch = 4;
  from = new_leader.next_fetch_offset("g", f.tp, 0, 110, 0);
  ASSERT_TRUE(from.has_value());
  EXPECT_EQ(*from, 104);
  EXPECT_EQ(new_leader.start_offset("g", f.tp), 104);
  const fetched_batch again{100, 109, false};
  EXPECT_EQ(new_leader.acquire("g", "m2", f.tp, std::span<const fetched_batch>(&again, 1), 100, 0),
            (std::vector<acquired_range>{{104, 109, 2}}));

  // The old leader, not told yet, acknowledges what it handed out: fenced, nothing written, and
  // its share-partition is dropped.
  const acknowledgement_batch late{106, 109, {1}};
  EXPECT_EQ(old_leader.acknowledge("g", "m", f.tp, std::span(&late, 1), 0),
            error_code::fenced_leader_epoch);
  EXPECT_EQ(old_leader.acknowledge("g", "m", f.tp, std::span(&late, 1), 0),
            error_code::not_leader_or_follower);
  EXPECT_FALSE(old_leader.start_offset("g", f.tp).has_value());
  // Its leadership ended: nothing is served there.
  p1.epoch.reset();
  EXPECT_FALSE(old_leader.next_fetch_offset("g", f.tp, 0, 110, 0).has_value());
  auto state = coordinator.read_state("g", f.tp, 4, 0);
  ASSERT_EQ(state.error, error_code::none);
  EXPECT_EQ(state.state.start_offset, 104);
  EXPECT_EQ(state.state.state_batches, (std::vector<state_batch>{{104, 109, 0, 2}}));

  // The data partition's leadership moves on (another epoch): the timer drops the share-partition
  // at once, and its held records are not expired (nor written) here.
  const int appends = f.log.appends;
  p2.epoch = 5;
  new_leader.poll(1000000);
  EXPECT_FALSE(new_leader.start_offset("g", f.tp).has_value());
  EXPECT_EQ(f.log.appends, appends);
}

}  // namespace
}  // namespace tarn::coordinator
