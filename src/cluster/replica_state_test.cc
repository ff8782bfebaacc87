// The replication rules (replica_state.h) without sockets: placement, follower progress, the
// high watermark over the ISR, ISR shrink after replica.lag.time.max.ms and expansion at the
// high watermark.
#include "cluster/replica_state.h"

#include <gtest/gtest.h>

namespace tarn::cluster {
namespace {

using ids = std::vector<int32_t>;

TEST(ReplicaState, PlacementLeadsWithTheCreatorAndStripesFollowers) {
  auto a = assign_replicas(2, {3, 1, 2}, 4, 3);
  ASSERT_EQ(a.size(), 4U);
  for (const auto& r : a) {
    EXPECT_EQ(r.size(), 3U);
    EXPECT_EQ(r[0], 2);
  }
  auto b = assign_replicas(1, {1, 2, 3, 4}, 3, 2);
  EXPECT_EQ(b, (std::vector<ids>{{1, 2}, {1, 3}, {1, 4}}));
  EXPECT_EQ(assign_replicas(1, {1}, 2, 1), (std::vector<ids>{{1}, {1}}));
  EXPECT_TRUE(assign_replicas(1, {1, 2}, 1, 3).empty());  // more than the live brokers
  EXPECT_TRUE(assign_replicas(1, {1, 2}, 1, 0).empty());
  EXPECT_TRUE(assign_replicas(5, {1, 2}, 1, 1).empty());  // the leader is not live
}

partition_state three() { return partition_state{{1, 2, 3}, {1, 2, 3}, 1, 0, 0}; }

TEST(ReplicaState, HighWatermarkIsTheSmallestEndOffsetOfTheIsr) {
  leader_replication l(1, three(), 0, 1000);
  // Followers not heard from yet hold it.
  EXPECT_EQ(l.update_high_watermark(10), 0);
  ASSERT_TRUE(l.on_follower_fetch(2, 10, 10, 1001));
  EXPECT_EQ(l.update_high_watermark(10), 0);
  ASSERT_TRUE(l.on_follower_fetch(3, 7, 10, 1001));
  EXPECT_EQ(l.update_high_watermark(10), 7);
  ASSERT_TRUE(l.on_follower_fetch(3, 10, 12, 1002));
  EXPECT_EQ(l.update_high_watermark(12), 10);
  // Never backwards, never past the leader.
  ASSERT_TRUE(l.on_follower_fetch(3, 4, 12, 1003));
  EXPECT_EQ(l.update_high_watermark(12), 10);
  EXPECT_FALSE(l.on_follower_fetch(4, 12, 12, 1003));  // not a replica
  // Only the ISR counts: with 3 out, follower 2 alone decides.
  l.update_state(partition_state{{1, 2, 3}, {1, 2}, 1, 0, 1}, 1004);
  ASSERT_TRUE(l.on_follower_fetch(2, 12, 12, 1004));
  EXPECT_EQ(l.update_high_watermark(12), 12);
}

// KIP-966's strict min ISR (Kafka 4.4's Partition.maybeIncrementLeaderHW): below
// min.insync.replicas (capped at the replica count) the high watermark stays where it is, even
// when the ISR that is left has everything.
TEST(ReplicaState, HighWatermarkWaitsForMinInsyncReplicas) {
  leader_replication l(1, three(), 0, 1000);
  ASSERT_TRUE(l.on_follower_fetch(2, 5, 5, 1001));
  ASSERT_TRUE(l.on_follower_fetch(3, 5, 5, 1001));
  EXPECT_EQ(l.update_high_watermark(5, 2), 5);
  // The ISR is the leader alone: nothing more is committed under min.insync.replicas=2.
  l.update_state(partition_state{{1, 2, 3}, {1}, 1, 0, 1}, 1002);
  EXPECT_EQ(l.update_high_watermark(9, 2), 5);
  EXPECT_EQ(l.update_high_watermark(9, 1), 9);  // min.insync.replicas=1: the leader decides
  // Two members again: it moves with them.
  l.update_state(partition_state{{1, 2, 3}, {1, 2}, 1, 0, 2}, 1003);
  ASSERT_TRUE(l.on_follower_fetch(2, 9, 9, 1003));
  EXPECT_EQ(l.update_high_watermark(9, 2), 9);
  // min.insync.replicas above the replica count counts as the replica count.
  leader_replication one(1, partition_state{{1}, {1}, 1, 0, 0}, 0, 1000);
  EXPECT_EQ(one.update_high_watermark(4, 3), 4);
}

TEST(ReplicaState, FollowersThatLagLeaveTheIsrAndReturnAtTheHighWatermark) {
  const int64_t lag = 100;
  leader_replication l(1, three(), 0, 1000);
  EXPECT_TRUE(l.out_of_sync_replicas(1050, lag, 0).empty());
  // Both at the end: caught up at each fetch.
  ASSERT_TRUE(l.on_follower_fetch(2, 5, 5, 1090));
  ASSERT_TRUE(l.on_follower_fetch(3, 5, 5, 1090));
  EXPECT_EQ(l.update_high_watermark(5), 5);
  // The leader appends; 2 keeps fetching and catching up, 3 stops.
  ASSERT_TRUE(l.on_follower_fetch(2, 5, 8, 1150));  // had what the leader had at its last fetch
  ASSERT_TRUE(l.on_follower_fetch(2, 8, 8, 1180));
  EXPECT_EQ(l.out_of_sync_replicas(1180, lag, 8), ids{});
  EXPECT_EQ(l.out_of_sync_replicas(1191, lag, 8), ids{3});
  // A follower at the log end is never out of sync, however long ago it fetched.
  EXPECT_EQ(l.out_of_sync_replicas(5000, lag, 8), ids{3});
  l.update_state(partition_state{{1, 2, 3}, {1, 2}, 1, 0, 1}, 1200);
  EXPECT_EQ(l.update_high_watermark(8), 8);
  EXPECT_EQ(l.caught_up_followers(), ids{});
  ASSERT_TRUE(l.on_follower_fetch(3, 7, 8, 1300));
  EXPECT_EQ(l.caught_up_followers(), ids{});
  ASSERT_TRUE(l.on_follower_fetch(3, 8, 8, 1310));
  EXPECT_EQ(l.caught_up_followers(), ids{3});
}

TEST(ReplicaState, FollowerHighWatermarkAndIsrEdits) {
  EXPECT_EQ(follower_high_watermark(10, 7, 3), 7);
  EXPECT_EQ(follower_high_watermark(5, 7, 3), 5);
  EXPECT_EQ(follower_high_watermark(2, 7, 3), 3);
  EXPECT_EQ(isr_without({1, 2, 3}, {2}), (ids{1, 3}));
  EXPECT_EQ(isr_with({1, 3}, {2, 3}), (ids{1, 3, 2}));
}

TEST(ReplicaState, APendingIsrChangeHoldsTheHighWatermarkForItsNewMembers) {
  // Leader 1 with ISR {1, 2} at partition epoch 0; follower 3 caught up and about to join.
  leader_replication l(1, partition_state{{1, 2, 3}, {1, 2}, 1, 0, 0}, 0, 0);
  l.on_follower_fetch(2, 10, 10, 1);
  l.on_follower_fetch(3, 10, 10, 1);
  EXPECT_EQ(l.update_high_watermark(10), 10);
  l.add_pending_isr(0, {1, 2, 3});
  // 2 has 12, 3 still 10: while 3's joining is being written the high watermark waits for it.
  l.on_follower_fetch(2, 12, 12, 2);
  EXPECT_EQ(l.update_high_watermark(12), 10);
  l.on_follower_fetch(3, 12, 12, 3);
  EXPECT_EQ(l.update_high_watermark(12), 12);
  // Refused: the ISR in the state alone counts again.
  l.refuse_pending_isr(0, {1, 2, 3});
  EXPECT_EQ(l.pending_isr_changes(), 0u);
  l.on_follower_fetch(2, 14, 14, 4);
  EXPECT_EQ(l.update_high_watermark(14), 14);
  // A shrink pending: the leaving member still counts until the new state arrives.
  l.add_pending_isr(0, {1});
  EXPECT_EQ(l.update_high_watermark(16), 14);
  l.update_state(partition_state{{1, 2, 3}, {1}, 1, 0, 1}, 5);
  EXPECT_EQ(l.pending_isr_changes(), 0u);
  EXPECT_EQ(l.update_high_watermark(16), 16);
}

TEST(ReplicaState, AnIsrChangeWrittenInDoubtHoldsTheHighWatermarkUntilALaterStateArrives) {
  // Leader 1 grows ISR {1, 3} with 2 (partition epoch 4 -> 5); etcd takes the write but the
  // answer is lost. Had the leader dropped the pending change, its high watermark would follow 3
  // alone past 2's end while etcd's ISR holds 2, and a controller electing 2 once 1 pauses would
  // truncate records acknowledged with acks=all (found reading the code while chasing the soak
  // anomaly of 2026-12-07, whose cause was another: docs/reliability.md#8).
  leader_replication l(1, partition_state{{1, 2, 3}, {1, 3}, 1, 0, 4}, 100, 0);
  l.on_follower_fetch(2, 100, 100, 1);
  l.on_follower_fetch(3, 100, 100, 1);
  EXPECT_EQ(l.update_high_watermark(100), 100);
  l.add_pending_isr(4, {1, 3, 2});
  l.doubt_pending_isr(4, {1, 3, 2});
  l.on_follower_fetch(3, 102, 102, 2);  // 2 stays at 100
  EXPECT_EQ(l.update_high_watermark(102), 100);
  // The next check decides the same change again and is refused (etcd has moved to epoch 5):
  // the change in doubt stays, and so does the bound.
  l.add_pending_isr(4, {1, 3, 2});
  l.refuse_pending_isr(4, {1, 3, 2});
  EXPECT_EQ(l.pending_isr_changes(), 1u);
  EXPECT_EQ(l.update_high_watermark(102), 100);
  // A state older than the change settles nothing.
  l.update_state(partition_state{{1, 2, 3}, {1, 3}, 1, 0, 4}, 3);
  EXPECT_EQ(l.update_high_watermark(102), 100);
  // The written state arrives: 2 is a member and bounds it as such.
  l.update_state(partition_state{{1, 2, 3}, {1, 3, 2}, 1, 0, 5}, 4);
  EXPECT_EQ(l.pending_isr_changes(), 0u);
  EXPECT_EQ(l.update_high_watermark(102), 100);
  l.on_follower_fetch(2, 102, 102, 5);
  EXPECT_EQ(l.update_high_watermark(102), 102);
}

TEST(ReplicaState, ADoubtfulIsrChangeNotWrittenIsSettledByTheStateThatMadeItFail) {
  // The write in doubt did not happen; the controller's change (partition epoch 5, 2 fenced)
  // is what etcd holds: once it arrives, only its ISR counts.
  leader_replication l(1, partition_state{{1, 2, 3}, {1, 3}, 1, 0, 4}, 100, 0);
  l.on_follower_fetch(2, 100, 100, 1);
  l.on_follower_fetch(3, 104, 104, 1);
  l.add_pending_isr(4, {1, 3, 2});
  l.doubt_pending_isr(4, {1, 3, 2});
  EXPECT_EQ(l.update_high_watermark(104), 100);
  l.update_state(partition_state{{1, 2, 3}, {1, 3}, 1, 0, 5}, 2);
  EXPECT_EQ(l.update_high_watermark(104), 104);
}

TEST(ReplicaState, FollowerTruncationAsKafkasFetcher) {
  using storage::epoch_entry;
  // The follower led at epoch 0 and wrote 10-11 that nobody else has; the new leader (epoch 1)
  // answers DivergingEpoch {0, 10}: epoch 0 ends at 10 there.
  const std::vector<epoch_entry> old_leader{{0, 0}};
  EXPECT_EQ(follower_truncation(old_leader, 12, {0, 10}), (truncation{10, true}));
  // Never past its own end.
  EXPECT_EQ(follower_truncation(old_leader, 8, {0, 10}), (truncation{8, true}));

  // The follower's last epoch 2 is unknown to the leader, whose largest epoch below it is 1
  // ending at 45; the follower has no epoch 1: it cuts where its epoch 0 ends (50) and asks again.
  const std::vector<epoch_entry> follower{{0, 0}, {2, 50}};
  EXPECT_EQ(follower_truncation(follower, 60, {1, 45}), (truncation{50, false}));
  // Then the leader answers for epoch 0, which ends at 40 there.
  EXPECT_EQ(follower_truncation({{0, 0}}, 50, {0, 40}), (truncation{40, true}));

  // No epoch at or below the leader's: cut at the leader's end.
  EXPECT_EQ(follower_truncation({{5, 100}}, 120, {3, 90}), (truncation{90, true}));
  EXPECT_EQ(follower_truncation({}, 20, {3, 90}), (truncation{20, true}));
}

TEST(ReplicaState, AFollowerJoinsOnlyOnceItReachedTheStartOfTheLeadersEpoch) {
  // A leader restarted without a high-watermark checkpoint: its high watermark starts at 0, its
  // epoch at its log end offset 100. Follower 2 at 40 is behind: not in sync, whatever the high
  // watermark says.
  leader_replication l(1, partition_state{{1, 2}, {1}, 1, 3, 0}, 0, 0, 100);
  l.on_follower_fetch(2, 40, 100, 1);
  EXPECT_TRUE(l.caught_up_followers().empty());
  l.on_follower_fetch(2, 100, 100, 2);
  EXPECT_EQ(l.caught_up_followers(), (std::vector<int32_t>{2}));
}

TEST(ReplicaState, AFollowerThatLeftTheIsrRejoinsOnlyByAFetch) {
  // min.insync.replicas 3: follower 3 is cut off after fetching 5 (the leader's end then); the
  // leader appends up to 6, so under KIP-966's strict min ISR the high watermark stays at 5
  // once 3 leaves the ISR, and 3's last recorded offset (5) reaches it: without a fetch since it
  // left, it is not in sync (no ISR flapping while it is unreachable).
  const int64_t lag = 100;
  leader_replication l(1, partition_state{{1, 2, 3}, {1, 2, 3}, 1, 0, 0}, 0, 1000);
  ASSERT_TRUE(l.on_follower_fetch(2, 5, 5, 1010));
  ASSERT_TRUE(l.on_follower_fetch(3, 5, 5, 1010));
  EXPECT_EQ(l.update_high_watermark(5, 3), 5);
  ASSERT_TRUE(l.on_follower_fetch(2, 6, 6, 1050));
  EXPECT_EQ(l.out_of_sync_replicas(1200, lag, 6), ids{3});
  l.update_state(partition_state{{1, 2, 3}, {1, 2}, 1, 0, 1}, 1200);
  EXPECT_EQ(l.update_high_watermark(6, 3), 5);
  EXPECT_EQ(l.caught_up_followers(), ids{});
  // Back on the network: its next fetch (from where it was) makes it eligible again.
  ASSERT_TRUE(l.on_follower_fetch(3, 5, 6, 1300));
  EXPECT_EQ(l.caught_up_followers(), ids{3});
}

TEST(ReplicaState, PreferredReadReplicaIsAnInSyncReplicaInTheClientsRack) {
  // Kafka's RackAwareReplicaSelector over findPreferredReadReplica's candidates.
  leader_replication l(1, partition_state{{1, 2, 3, 4}, {1, 2, 3, 4}, 1, 0, 0}, 10, 1000);
  const std::vector<read_replica_candidate> brokers = {
      {1, "a", true}, {2, "b", true}, {3, "b", true}, {4, "c", true}};
  ASSERT_TRUE(l.on_follower_fetch(2, 10, 12, 1100, 0));
  ASSERT_TRUE(l.on_follower_fetch(3, 12, 12, 1200, 0));
  ASSERT_TRUE(l.on_follower_fetch(4, 12, 12, 1200, 5));
  // The most caught-up of the rack: 3 has more than 2.
  EXPECT_EQ(preferred_read_replica(l, "b", brokers, 10, 1300), 3);
  // An offset only 3 has, or past everyone.
  EXPECT_EQ(preferred_read_replica(l, "b", brokers, 11, 1300), 3);
  EXPECT_EQ(preferred_read_replica(l, "b", brokers, 13, 1300), std::nullopt);
  // Below a follower's log start offset: not that one.
  EXPECT_EQ(preferred_read_replica(l, "c", brokers, 12, 1300), 4);
  EXPECT_EQ(preferred_read_replica(l, "c", brokers, 4, 1300), std::nullopt);
  // No rack, an unknown rack, the leader's rack: the leader (nullopt).
  EXPECT_EQ(preferred_read_replica(l, "", brokers, 10, 1300), std::nullopt);
  EXPECT_EQ(preferred_read_replica(l, "x", brokers, 10, 1300), std::nullopt);
  EXPECT_EQ(preferred_read_replica(l, "a", brokers, 10, 1300), std::nullopt);
  // Out of the ISR, or not reachable on the client's listener: never chosen.
  l.update_state(partition_state{{1, 2, 3, 4}, {1, 2, 4}, 1, 0, 1}, 1300);
  EXPECT_EQ(preferred_read_replica(l, "b", brokers, 10, 1300), 2);
  const std::vector<read_replica_candidate> two_gone = {
      {1, "a", true}, {2, std::nullopt, false}, {3, "b", true}, {4, "c", true}};
  EXPECT_EQ(preferred_read_replica(l, "b", two_gone, 10, 1300), std::nullopt);
  // Equal log end offsets: the one caught up most recently, then the larger id.
  leader_replication m(1, partition_state{{1, 2, 3}, {1, 2, 3}, 1, 0, 0}, 10, 1000);
  ASSERT_TRUE(m.on_follower_fetch(2, 10, 10, 1500, 0));
  ASSERT_TRUE(m.on_follower_fetch(3, 10, 10, 1400, 0));
  EXPECT_EQ(preferred_read_replica(m, "b", brokers, 10, 1600), 2);
  ASSERT_TRUE(m.on_follower_fetch(3, 10, 10, 1500, 0));
  EXPECT_EQ(preferred_read_replica(m, "b", brokers, 10, 1600), 3);
}

}  // namespace
}  // namespace tarn::cluster
