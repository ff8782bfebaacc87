// The partition-state rules (partition_state.h) against Kafka 4.4's controller behaviour:
// AlterPartition's checks in order, KIP-903's broker epochs, KIP-841's fencing, clean and unclean
// leader choice, ElectLeaders' answers, and reassignments (KIP-455).
#include "cluster/partition_state.h"

#include <gtest/gtest.h>

#include "cluster/etcd_partition_store.h"

namespace tarn::cluster {
namespace {

using protocol::error_code;

broker_states live(std::initializer_list<int32_t> ids) {
  broker_states b;
  for (int32_t id : ids) b[id] = broker_state{100 + id, false, false};
  return b;
}

partition_state three_replicas() { return partition_state{{1, 2, 3}, {1, 2, 3}, 1, 5, 9}; }

TEST(PartitionState, BestLeaderPrefersTheReplicaOrderWithinTheIsr) {
  auto p = three_replicas();
  auto brokers = live({1, 2, 3});
  EXPECT_EQ(best_leader(p, brokers, false), 1);
  brokers[1].fenced = true;
  EXPECT_EQ(best_leader(p, brokers, false), 2);
  brokers[2].in_controlled_shutdown = true;
  EXPECT_EQ(best_leader(p, brokers, false), 3);
  p.isr = {1};  // only the fenced broker is in sync
  EXPECT_EQ(best_leader(p, brokers, false), no_leader);
  EXPECT_EQ(best_leader(p, brokers, true), 3);  // unclean: any eligible replica
  EXPECT_EQ(best_leader(p, live({}), true), no_leader);
}

TEST(PartitionState, AlterPartitionChecksInKafkasOrder) {
  const auto p = three_replicas();
  const auto brokers = live({1, 2, 3});
  auto request = [](int32_t broker, int32_t leader_epoch, int32_t partition_epoch,
                    std::vector<std::pair<int32_t, int64_t>> isr) {
    return alter_partition_request{broker, leader_epoch, partition_epoch, std::move(isr)};
  };
  // Stale leader epoch first, even from a non-leader with a stale partition epoch.
  EXPECT_EQ(alter_partition(p, request(2, 4, 1, {{1, 101}}), brokers).error,
            error_code::fenced_leader_epoch);
  EXPECT_EQ(alter_partition(p, request(2, 5, 9, {{1, 101}, {2, 102}}), brokers).error,
            error_code::invalid_request);  // not the leader
  EXPECT_EQ(alter_partition(p, request(1, 5, 8, {{1, 101}}), brokers).error,
            error_code::invalid_update_version);
  EXPECT_EQ(alter_partition(p, request(1, 5, 9, {{1, 101}, {4, 104}}), brokers).error,
            error_code::invalid_request);  // 4 is not a replica
  EXPECT_EQ(alter_partition(p, request(1, 5, 9, {{1, 101}, {1, 101}}), brokers).error,
            error_code::invalid_request);  // duplicate
  EXPECT_EQ(alter_partition(p, request(1, 5, 9, {{2, 102}, {3, 103}}), brokers).error,
            error_code::invalid_request);  // drops the leader

  // A shrink: the partition epoch grows, the leader epoch does not.
  auto shrunk = alter_partition(p, request(1, 5, 9, {{1, 101}, {3, 103}}), brokers);
  ASSERT_EQ(shrunk.error, error_code::none);
  EXPECT_EQ(shrunk.state.isr, (std::vector<int32_t>{1, 3}));
  EXPECT_EQ(shrunk.state.leader, 1);
  EXPECT_EQ(shrunk.state.leader_epoch, 5);
  EXPECT_EQ(shrunk.state.partition_epoch, 10);
  // The same request again is stale now.
  EXPECT_EQ(alter_partition(shrunk.state, request(1, 5, 9, {{1, 101}, {3, 103}}), brokers).error,
            error_code::invalid_update_version);
  // An ISR equal to the current one (any order) changes nothing.
  auto same = alter_partition(p, request(1, 5, 9, {{3, -1}, {2, -1}, {1, -1}}), brokers);
  ASSERT_EQ(same.error, error_code::none);
  EXPECT_EQ(same.state, p);
}

TEST(PartitionState, AnExpansionNeedsEligibleMembersWithTheirCurrentBrokerEpoch) {
  partition_state p{{1, 2, 3}, {1}, 1, 2, 4};
  auto brokers = live({1, 2, 3});
  // KIP-903: broker 2 restarted (epoch 102 -> 202) since the leader saw it caught up.
  brokers[2].epoch = 202;
  EXPECT_EQ(alter_partition(p, {1, 2, 4, {{1, 101}, {2, 102}}}, brokers).error,
            error_code::ineligible_replica);
  auto ok = alter_partition(p, {1, 2, 4, {{1, 101}, {2, 202}}}, brokers);
  ASSERT_EQ(ok.error, error_code::none);
  EXPECT_EQ(ok.state.isr, (std::vector<int32_t>{1, 2}));
  // A fenced, shutting-down or unknown broker never joins.
  brokers[3].fenced = true;
  EXPECT_EQ(alter_partition(p, {1, 2, 4, {{1, 101}, {3, 103}}}, brokers).error,
            error_code::ineligible_replica);
  brokers[3] = {103, false, true};
  EXPECT_EQ(alter_partition(p, {1, 2, 4, {{1, 101}, {3, 103}}}, brokers).error,
            error_code::ineligible_replica);
  brokers.erase(3);
  EXPECT_EQ(alter_partition(p, {1, 2, 4, {{1, -1}, {3, -1}}}, brokers).error,
            error_code::ineligible_replica);
}

TEST(PartitionState, AFencedBrokerLeavesTheIsrAndItsLeadershipMoves) {
  const auto p = three_replicas();
  auto brokers = live({1, 2, 3});
  brokers[3].fenced = true;
  auto follower_gone = on_broker_unavailable(p, 3, brokers, false);
  ASSERT_TRUE(follower_gone);
  EXPECT_EQ(follower_gone->isr, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(follower_gone->leader, 1);
  EXPECT_EQ(follower_gone->leader_epoch, 5);
  EXPECT_EQ(follower_gone->partition_epoch, 10);

  brokers[1].fenced = true;
  auto leader_gone = on_broker_unavailable(*follower_gone, 1, brokers, false);
  ASSERT_TRUE(leader_gone);
  EXPECT_EQ(leader_gone->isr, (std::vector<int32_t>{2}));
  EXPECT_EQ(leader_gone->leader, 2);
  EXPECT_EQ(leader_gone->leader_epoch, 6);
  EXPECT_EQ(leader_gone->partition_epoch, 11);

  // The last member stays in the ISR with no leader: it can lead again without data loss.
  brokers[2].fenced = true;
  auto last_gone = on_broker_unavailable(*leader_gone, 2, brokers, false);
  ASSERT_TRUE(last_gone);
  EXPECT_EQ(last_gone->isr, (std::vector<int32_t>{2}));
  EXPECT_EQ(last_gone->leader, no_leader);
  EXPECT_EQ(last_gone->leader_epoch, 7);

  // A broker outside the ISR and not leading changes nothing.
  EXPECT_FALSE(on_broker_unavailable(*leader_gone, 3, brokers, false));

  // Broker 3 comes back: not in the ISR, so it may lead only uncleanly.
  brokers[3].fenced = false;
  EXPECT_FALSE(on_broker_available(*last_gone, brokers, false));
  auto unclean = on_broker_available(*last_gone, brokers, true);
  ASSERT_TRUE(unclean);
  EXPECT_EQ(unclean->leader, 3);
  EXPECT_EQ(unclean->isr, (std::vector<int32_t>{3}));
  // Broker 2 comes back: the clean choice.
  brokers[2].fenced = false;
  auto clean = on_broker_available(*last_gone, brokers, false);
  ASSERT_TRUE(clean);
  EXPECT_EQ(clean->leader, 2);
  EXPECT_EQ(clean->isr, (std::vector<int32_t>{2}));
  EXPECT_EQ(clean->leader_epoch, 8);
}

TEST(PartitionState, UncleanLeaderElectionOnlyWhenEnabled) {
  partition_state p{{1, 2}, {1}, 1, 3, 3};
  auto brokers = live({1, 2});
  brokers[1].fenced = true;
  auto clean = on_broker_unavailable(p, 1, brokers, false);
  ASSERT_TRUE(clean);
  EXPECT_EQ(clean->leader, no_leader);
  EXPECT_EQ(clean->isr, (std::vector<int32_t>{1}));
  auto unclean = on_broker_unavailable(p, 1, brokers, true);
  ASSERT_TRUE(unclean);
  EXPECT_EQ(unclean->leader, 2);
  EXPECT_EQ(unclean->isr, (std::vector<int32_t>{2}));
}

TEST(PartitionState, ReconcileComparesTheStateWithTheLiveBrokersInOneChange) {
  const auto p = three_replicas();  // leader 1, ISR {1,2,3}, epochs 5/9
  EXPECT_FALSE(reconcile(p, live({1, 2, 3}), false));
  EXPECT_FALSE(reconcile(p, live({1, 2, 3}), true));

  // The leader gone: the next ISR member in replica order leads; one change, both epochs + 1.
  auto leader_gone = reconcile(p, live({2, 3}), false);
  ASSERT_TRUE(leader_gone);
  EXPECT_EQ(leader_gone->leader, 2);
  EXPECT_EQ(leader_gone->isr, (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(leader_gone->leader_epoch, 6);
  EXPECT_EQ(leader_gone->partition_epoch, 10);
  EXPECT_EQ(leader_gone->replicas, p.replicas);
  // Idempotent: the result against the same brokers changes nothing more.
  EXPECT_FALSE(reconcile(*leader_gone, live({2, 3}), false));

  // A follower gone: it leaves the ISR, the leader and its epoch stay.
  auto follower_gone = reconcile(p, live({1, 2}), false);
  ASSERT_TRUE(follower_gone);
  EXPECT_EQ(follower_gone->leader, 1);
  EXPECT_EQ(follower_gone->isr, (std::vector<int32_t>{1, 2}));
  EXPECT_EQ(follower_gone->leader_epoch, 5);
  EXPECT_EQ(follower_gone->partition_epoch, 10);

  // The leader and a follower gone at once: one change.
  auto two_gone = reconcile(p, live({3}), false);
  ASSERT_TRUE(two_gone);
  EXPECT_EQ(two_gone->leader, 3);
  EXPECT_EQ(two_gone->isr, (std::vector<int32_t>{3}));
  EXPECT_EQ(two_gone->leader_epoch, 6);
  EXPECT_EQ(two_gone->partition_epoch, 10);

  // Everyone gone: the followers leave first, so the leader is the ISR's last member (it has
  // everything the ISR acknowledged) and the partition has no leader.
  auto all_gone = reconcile(p, live({}), false);
  ASSERT_TRUE(all_gone);
  EXPECT_EQ(all_gone->leader, no_leader);
  EXPECT_EQ(all_gone->isr, (std::vector<int32_t>{1}));
  EXPECT_EQ(all_gone->leader_epoch, 6);
  EXPECT_FALSE(reconcile(*all_gone, live({}), false));
  // A replica outside the ISR back: no clean leader; an unclean one only when allowed.
  EXPECT_FALSE(reconcile(*all_gone, live({2}), false));
  auto unclean = reconcile(*all_gone, live({2}), true);
  ASSERT_TRUE(unclean);
  EXPECT_EQ(unclean->leader, 2);
  EXPECT_EQ(unclean->isr, (std::vector<int32_t>{2}));
  EXPECT_EQ(unclean->leader_epoch, 7);
  // The last ISR member back: it leads again (Kafka's on_broker_available).
  auto back = reconcile(*all_gone, live({1, 2}), false);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->leader, 1);
  EXPECT_EQ(back->isr, (std::vector<int32_t>{1}));
  EXPECT_EQ(back->leader_epoch, 7);

  // A leader gone whose ISR holds nobody else: unclean election only when allowed.
  partition_state alone{{1, 2}, {1}, 1, 0, 0};
  auto clean = reconcile(alone, live({2}), false);
  ASSERT_TRUE(clean);
  EXPECT_EQ(clean->leader, no_leader);
  EXPECT_EQ(clean->isr, (std::vector<int32_t>{1}));
  auto taken = reconcile(alone, live({2}), true);
  ASSERT_TRUE(taken);
  EXPECT_EQ(taken->leader, 2);
  EXPECT_EQ(taken->isr, (std::vector<int32_t>{2}));
  EXPECT_EQ(taken->leader_epoch, 1);

  // A fenced or shutting-down broker counts as gone (KIP-841).
  auto brokers = live({1, 2, 3});
  brokers[1].in_controlled_shutdown = true;
  auto shutting = reconcile(p, brokers, false);
  ASSERT_TRUE(shutting);
  EXPECT_EQ(shutting->leader, 2);
}

TEST(PartitionState, ElectLeadersAnswersAsKafka) {
  auto brokers = live({1, 2, 3});
  const auto p = three_replicas();
  EXPECT_EQ(elect_leader(p, election_type::preferred, brokers).error,
            error_code::election_not_needed);
  EXPECT_EQ(elect_leader(p, election_type::unclean, brokers).error,
            error_code::election_not_needed);

  partition_state moved = p;
  moved.leader = 2;
  auto back = elect_leader(moved, election_type::preferred, brokers);
  ASSERT_EQ(back.error, error_code::none);
  EXPECT_EQ(back.state.leader, 1);
  EXPECT_EQ(back.state.leader_epoch, 6);

  brokers[1].in_controlled_shutdown = true;
  auto unavailable = elect_leader(moved, election_type::preferred, brokers);
  EXPECT_EQ(unavailable.error, error_code::preferred_leader_not_available);
  EXPECT_EQ(unavailable.state, moved);

  partition_state leaderless{{1, 2, 3}, {1}, no_leader, 7, 12};
  brokers = live({2, 3});
  EXPECT_EQ(elect_leader(leaderless, election_type::preferred, brokers).error,
            error_code::preferred_leader_not_available);
  auto unclean = elect_leader(leaderless, election_type::unclean, brokers);
  ASSERT_EQ(unclean.error, error_code::none);
  EXPECT_EQ(unclean.state.leader, 2);
  EXPECT_EQ(unclean.state.isr, (std::vector<int32_t>{2}));
  EXPECT_EQ(elect_leader(leaderless, election_type::unclean, live({})).error,
            error_code::eligible_leaders_not_available);
}

TEST(PartitionState, PreferredElectionReplacesALeaderThatMayNotGoOn) {
  // The preferred replica cannot lead, and the leader is shutting down: the best in-sync replica
  // takes over (Kafka's electPreferredLeader); with a leader that may go on, nothing changes.
  partition_state p{{1, 2, 3}, {1, 2, 3}, 2, 4, 8};
  auto brokers = live({1, 2, 3});
  brokers[1].fenced = true;
  EXPECT_EQ(elect_leader(p, election_type::preferred, brokers).error,
            error_code::preferred_leader_not_available);
  brokers[2].in_controlled_shutdown = true;
  auto moved = elect_leader(p, election_type::preferred, brokers);
  ASSERT_EQ(moved.error, error_code::none);
  EXPECT_EQ(moved.state.leader, 3);
  EXPECT_EQ(moved.state.leader_epoch, 5);
  EXPECT_EQ(moved.state.partition_epoch, 9);
  brokers[3].fenced = true;
  EXPECT_EQ(elect_leader(p, election_type::preferred, brokers).error,
            error_code::preferred_leader_not_available);
}

TEST(PartitionState, AControlledShutdownMovesLeadershipAndLeavesTheIsrButNotEmpty) {
  // KIP-841: a broker in controlled shutdown is reconciled as an unavailable one while it still
  // runs: it leaves every ISR, its leaderships go to the next in-sync replica, and where it is
  // the last member it stays (with no leader: nobody else has what it has).
  auto brokers = live({1, 2, 3});
  brokers[1].in_controlled_shutdown = true;
  auto led = reconcile(three_replicas(), brokers, false);
  ASSERT_TRUE(led);
  EXPECT_EQ(led->leader, 2);
  EXPECT_EQ(led->isr, (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(led->leader_epoch, 6);
  EXPECT_EQ(led->partition_epoch, 10);
  EXPECT_FALSE(reconcile(*led, brokers, false));  // once is enough

  partition_state followed{{2, 1, 3}, {2, 1, 3}, 2, 3, 3};
  auto isr_only = reconcile(followed, brokers, false);
  ASSERT_TRUE(isr_only);
  EXPECT_EQ(isr_only->leader, 2);
  EXPECT_EQ(isr_only->leader_epoch, 3);
  EXPECT_EQ(isr_only->isr, (std::vector<int32_t>{2, 3}));

  partition_state alone{{1}, {1}, 1, 0, 0};
  auto leaderless = reconcile(alone, brokers, false);
  ASSERT_TRUE(leaderless);
  EXPECT_EQ(leaderless->leader, no_leader);
  EXPECT_EQ(leaderless->isr, (std::vector<int32_t>{1}));
  // Back (registered again without the flag): it leads again.
  auto back = reconcile(*leaderless, live({1, 2, 3}), false);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->leader, 1);
  EXPECT_EQ(back->leader_epoch, 2);
}

TEST(PartitionState, RebalanceGivesLeadershipBackToThePreferredReplicaInTheIsr) {
  const auto brokers = live({1, 2, 3});
  partition_state moved{{1, 2, 3}, {2, 3}, 2, 1, 1};
  EXPECT_FALSE(rebalance_to_preferred(moved, brokers));  // not in sync yet
  moved.isr = {2, 3, 1};
  moved.partition_epoch = 2;
  auto back = rebalance_to_preferred(moved, brokers);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->leader, 1);
  EXPECT_EQ(back->leader_epoch, 2);
  EXPECT_EQ(back->partition_epoch, 3);
  EXPECT_EQ(back->isr, moved.isr);
  EXPECT_FALSE(rebalance_to_preferred(*back, brokers));  // balanced
  auto shutting = brokers;
  shutting[1].in_controlled_shutdown = true;
  EXPECT_FALSE(rebalance_to_preferred(moved, shutting));
  EXPECT_FALSE(rebalance_to_preferred(moved, live({2, 3})));
  partition_state leaderless{{1, 2, 3}, {1}, no_leader, 1, 1};
  EXPECT_FALSE(rebalance_to_preferred(leaderless, brokers));  // reconcile's part
}

TEST(PartitionState, EtcdValueRoundTripsAndRefusesWhatIsNotAState) {
  const partition_state p{{3, 1, 2}, {3, 1}, 3, 7, 12};
  const std::string text = encode_partition_state(p);
  EXPECT_EQ(text,
            R"({"isr":[3,1],"leader":3,"leader_epoch":7,"partition_epoch":12,"replicas":[3,1,2]})");
  EXPECT_EQ(decode_partition_state(text), p);
  partition_state leaderless{{1}, {1}, no_leader, 0, 0};
  EXPECT_EQ(decode_partition_state(encode_partition_state(leaderless)), leaderless);
  for (const char* bad :
       {"", "[]", "{}", R"({"isr":[1],"leader":1,"leader_epoch":0,"partition_epoch":0})",
        R"({"replicas":[1],"isr":[1],"leader":-2,"leader_epoch":0,"partition_epoch":0})",
        R"({"replicas":[1],"isr":[-1],"leader":1,"leader_epoch":0,"partition_epoch":0})",
        R"({"replicas":[1],"isr":[1],"leader":1,"leader_epoch":-1,"partition_epoch":0})",
        R"({"replicas":[1],"isr":[1],"leader":1,"leader_epoch":0,"partition_epoch":4294967296})",
        R"({"replicas":"1","isr":[1],"leader":1,"leader_epoch":0,"partition_epoch":0})",
        R"({"replicas":[1.5],"isr":[1],"leader":1,"leader_epoch":0,"partition_epoch":0})"}) {
    EXPECT_FALSE(decode_partition_state(bad)) << bad;
  }
}

TEST(PartitionState, AReassignmentAddsFirstAndCompletesWhenTheNewReplicaIsInSync) {
  const auto brokers = live({1, 2, 3, 4});
  // [1,2,3] -> [1,2,4]: 4 added, 3 removed; every replica fetched from meanwhile.
  auto r = reassign(three_replicas(), {1, 2, 4}, true, brokers);
  ASSERT_EQ(r.error, error_code::none) << r.message;
  ASSERT_TRUE(r.state);
  const partition_state moving = *r.state;
  EXPECT_EQ(moving.replicas, (std::vector<int32_t>{1, 2, 4, 3}));
  EXPECT_EQ(moving.isr, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(moving.adding_replicas, (std::vector<int32_t>{4}));
  EXPECT_EQ(moving.removing_replicas, (std::vector<int32_t>{3}));
  EXPECT_EQ(moving.leader, 1);
  EXPECT_EQ(moving.leader_epoch, 5);  // no replica left the list yet
  EXPECT_EQ(moving.partition_epoch, 10);
  EXPECT_TRUE(moving.reassigning());
  EXPECT_FALSE(complete_reassignment(moving, brokers));
  // The leader's AlterPartition taking 4 into the ISR completes it: 3 leaves both lists.
  alter_partition_request add4{1, 5, 10, {{1, 101}, {2, 102}, {3, 103}, {4, 104}}};
  auto altered = alter_partition(moving, add4, brokers);
  ASSERT_EQ(altered.error, error_code::none);
  EXPECT_EQ(altered.state.replicas, (std::vector<int32_t>{1, 2, 4}));
  EXPECT_EQ(altered.state.isr, (std::vector<int32_t>{1, 2, 4}));
  EXPECT_FALSE(altered.state.reassigning());
  EXPECT_EQ(altered.state.leader, 1);
  EXPECT_EQ(altered.state.leader_epoch, 6);  // a replica left the list
  EXPECT_EQ(altered.state.partition_epoch, 11);
  // Asked again for what it has: nothing to change.
  auto again = reassign(altered.state, {1, 2, 4}, true, brokers);
  EXPECT_EQ(again.error, error_code::none);
  EXPECT_FALSE(again.state);
}

TEST(PartitionState, AReassignmentAwayFromTheLeaderMovesItToTheTargetsFirst) {
  const auto brokers = live({1, 2, 3});
  const partition_state p{{1, 2}, {1, 2}, 1, 4, 8};
  auto r = reassign(p, {2, 3}, true, brokers);
  ASSERT_TRUE(r.state);
  EXPECT_EQ(r.state->replicas, (std::vector<int32_t>{2, 3, 1}));
  EXPECT_EQ(r.state->leader, 1);  // it leads until the move completes
  auto done = alter_partition(*r.state, {1, 4, 9, {{1, 101}, {2, 102}, {3, 103}}}, brokers);
  ASSERT_EQ(done.error, error_code::none);
  EXPECT_EQ(done.state.replicas, (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(done.state.isr, (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(done.state.leader, 2);
  EXPECT_EQ(done.state.leader_epoch, 5);
  // A shrink and a reorder complete at once: the ISR already holds the target.
  auto shrink = reassign(three_replicas(), {3, 2}, true, live({1, 2, 3}));
  ASSERT_TRUE(shrink.state);
  EXPECT_EQ(shrink.state->replicas, (std::vector<int32_t>{3, 2}));
  EXPECT_EQ(shrink.state->isr, (std::vector<int32_t>{2, 3}));
  EXPECT_EQ(shrink.state->leader, 3);
  EXPECT_EQ(shrink.state->leader_epoch, 6);
  EXPECT_FALSE(shrink.state->reassigning());
}

TEST(PartitionState, ANewTargetReplacesARunningOneAndCancelRestoresTheOriginal) {
  const auto brokers = live({1, 2, 3, 4, 5});
  auto first = reassign(three_replicas(), {1, 2, 4}, true, brokers);
  ASSERT_TRUE(first.state);
  auto second = reassign(*first.state, {1, 2, 5}, true, brokers);
  ASSERT_TRUE(second.state);
  EXPECT_EQ(second.state->replicas, (std::vector<int32_t>{1, 2, 5, 4, 3}));
  EXPECT_EQ(second.state->adding_replicas, (std::vector<int32_t>{5}));
  EXPECT_EQ(second.state->removing_replicas, (std::vector<int32_t>{4, 3}));
  EXPECT_EQ(second.state->leader_epoch, 5);
  auto cancelled = cancel_reassignment(*first.state, "t:0", false, brokers);
  ASSERT_EQ(cancelled.error, error_code::none);
  ASSERT_TRUE(cancelled.state);
  EXPECT_EQ(cancelled.state->replicas, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(cancelled.state->isr, (std::vector<int32_t>{1, 2, 3}));
  EXPECT_FALSE(cancelled.state->reassigning());
  EXPECT_EQ(cancelled.state->leader, 1);
  EXPECT_EQ(cancelled.state->leader_epoch, 6);  // 4 left the list
  // Nothing to cancel: NO_REASSIGNMENT_IN_PROGRESS, no message (Kafka's default).
  auto none = cancel_reassignment(three_replicas(), "t:0", false, brokers);
  EXPECT_EQ(none.error, error_code::no_reassignment_in_progress);
  EXPECT_EQ(none.message, "");
  // Only an added replica in sync: reverting needs an unclean election.
  partition_state only_new{{4, 1}, {4}, 4, 3, 3, {4}, {1}};
  auto refused = cancel_reassignment(only_new, "t:0", false, brokers);
  EXPECT_EQ(refused.error, error_code::invalid_replica_assignment);
  EXPECT_EQ(refused.message,
            "Unable to revert partition assignment for t:0 because it would require an unclean "
            "leader election.");
  auto unclean = cancel_reassignment(only_new, "t:0", true, brokers);
  ASSERT_TRUE(unclean.state);
  EXPECT_EQ(unclean.state->replicas, (std::vector<int32_t>{1}));
  EXPECT_EQ(unclean.state->isr, (std::vector<int32_t>{1}));
  EXPECT_EQ(unclean.state->leader, 1);
}

TEST(PartitionState, AReassignmentRefusesWhatKafkaRefuses) {
  const auto brokers = live({1, 2, 3});
  auto empty = reassign(three_replicas(), {}, true, brokers);
  EXPECT_EQ(empty.error, error_code::invalid_replica_assignment);
  EXPECT_EQ(empty.message, "The manual partition assignment includes an empty replica list.");
  auto unknown = reassign(three_replicas(), {9, 1, 7}, true, brokers);
  EXPECT_EQ(unknown.error, error_code::invalid_replica_assignment);
  EXPECT_EQ(unknown.message,
            "The manual partition assignment includes broker 7, but no such broker is registered.");
  auto twice = reassign(three_replicas(), {2, 1, 2}, true, brokers);
  EXPECT_EQ(twice.error, error_code::invalid_replica_assignment);
  EXPECT_EQ(twice.message, "The manual partition assignment includes the broker 2 more than once.");
  auto factor = reassign(three_replicas(), {1, 2}, false, brokers);
  EXPECT_EQ(factor.error, error_code::invalid_replication_factor);
  EXPECT_EQ(factor.message, "The replication factor is changed from 3 to 2");
  EXPECT_FALSE(factor.state);
}

TEST(PartitionState, AReassignmentCompletesWhenARemovedReplicaDies) {
  // [1,2,3] -> [1,2]: 3 is out of the ISR (lagging) and is being removed; the move completes
  // when the ISR holds 1 and 2, which it does: at once. With 4 added and 3 dead, reconcile()
  // takes 3 out of the ISR, and completes once 4 is in it.
  const partition_state p{{1, 2, 4, 3}, {1, 2, 4, 3}, 1, 5, 9, {4}, {3}};
  auto r = reconcile(p, live({1, 2, 4}), false);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->replicas, (std::vector<int32_t>{1, 2, 4}));
  EXPECT_EQ(r->isr, (std::vector<int32_t>{1, 2, 4}));
  EXPECT_FALSE(r->reassigning());
  EXPECT_EQ(r->leader_epoch, 6);
  EXPECT_EQ(r->partition_epoch, 10);
}

TEST(PartitionState, AReassigningStateRoundTripsThroughEtcd) {
  const partition_state p{{1, 2, 4, 3}, {1, 2, 3}, 1, 5, 9, {4}, {3}};
  const std::string text = encode_partition_state(p);
  EXPECT_EQ(text, R"({"adding_replicas":[4],"isr":[1,2,3],"leader":1,"leader_epoch":5,)"
                  R"("partition_epoch":9,"removing_replicas":[3],"replicas":[1,2,4,3]})");
  EXPECT_EQ(decode_partition_state(text), p);
  EXPECT_FALSE(decode_partition_state(
      R"({"replicas":[1],"isr":[1],"leader":1,"leader_epoch":0,"partition_epoch":0,"adding_replicas":[-4]})"));
}

// --- KIP-966: eligible leader replicas (eligible.leader.replicas.version 1) ---

constexpr elr_options elr_on{true, 2};

std::vector<int32_t> ids(std::initializer_list<int32_t> v) { return v; }

// The brokers as tarn's controller hands them over: the live ones, and those it saw registered
// before as fenced entries with the epoch they had.
broker_states known(std::initializer_list<int32_t> live_ids,
                    std::initializer_list<int32_t> gone_ids) {
  broker_states b = live(live_ids);
  for (int32_t id : gone_ids) b[id] = broker_state{100 + id, true, false};
  return b;
}

TEST(PartitionStateElr, AlterPartitionMovesLeaversIntoTheElrBelowMinIsr) {
  const auto p = three_replicas();
  const auto brokers = live({1, 2, 3});
  // ISR 3 -> 2 (= min ISR): nobody is eligible beyond the ISR.
  auto two = alter_partition(p, {1, 5, 9, {{1, 101}, {2, 102}}}, brokers, elr_on);
  ASSERT_EQ(two.error, error_code::none);
  EXPECT_EQ(two.state.isr, ids({1, 2}));
  EXPECT_TRUE(two.state.elr.empty());
  // 2 -> 1 (below): 2 left while the ISR was below min ISR, with what the HW covered.
  auto one = alter_partition(two.state, {1, 5, 10, {{1, 101}}}, brokers, elr_on);
  ASSERT_EQ(one.error, error_code::none);
  EXPECT_EQ(one.state.isr, ids({1}));
  EXPECT_EQ(one.state.elr, ids({2}));
  EXPECT_EQ(one.state.elr_broker_epochs, std::vector<int64_t>{102});
  EXPECT_TRUE(one.state.last_known_elr.empty());
  EXPECT_EQ(one.state.leader_epoch, 5);  // an ISR change: the partition epoch only
  EXPECT_EQ(one.state.partition_epoch, 11);
  // 3 -> 1 at once: both leavers.
  auto both = alter_partition(p, {1, 5, 9, {{1, 101}}}, brokers, elr_on);
  EXPECT_EQ(both.state.elr, ids({2, 3}));
  // 2 back in the ISR: at min ISR again, the ELR empties.
  auto back = alter_partition(one.state, {1, 5, 11, {{1, 101}, {2, 102}}}, brokers, elr_on);
  EXPECT_EQ(back.state.isr, ids({1, 2}));
  EXPECT_TRUE(back.state.elr.empty());
  EXPECT_TRUE(back.state.elr_broker_epochs.empty());
  // ELR off: the same shrink keeps no ELR.
  EXPECT_TRUE(alter_partition(p, {1, 5, 9, {{1, 101}}}, brokers).state.elr.empty());
}

TEST(PartitionStateElr, FencedBrokersFillTheElrAndTheLastOneLeavesAnEmptyIsr) {
  auto p = three_replicas();
  // 3 fenced: the ISR [1,2] is at min ISR.
  auto a = reconcile(p, known({1, 2}, {3}), false, elr_on);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->isr, ids({1, 2}));
  EXPECT_TRUE(a->elr.empty());
  // 2 fenced: below min ISR, 2 goes into the ELR with the epoch it had.
  auto b = reconcile(*a, known({1}, {2, 3}), false, elr_on);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->isr, ids({1}));
  EXPECT_EQ(b->elr, ids({2}));
  EXPECT_EQ(b->elr_broker_epochs, std::vector<int64_t>{102});
  EXPECT_EQ(b->leader, 1);
  // The leader fenced: the ISR is empty (ELR on), both are eligible, no leader, and the leader
  // it lost is the last known one.
  auto c = reconcile(*b, known({}, {1, 2, 3}), false, elr_on);
  ASSERT_TRUE(c);
  EXPECT_TRUE(c->isr.empty());
  EXPECT_EQ(c->elr, ids({1, 2}));
  EXPECT_EQ(c->elr_broker_epochs, (std::vector<int64_t>{101, 102}));
  EXPECT_EQ(c->leader, no_leader);
  EXPECT_EQ(c->last_known_elr, ids({1}));
  EXPECT_EQ(c->leader_epoch, 6);
  // Without ELR the last member stays in the ISR instead.
  auto old =
      reconcile(*reconcile(*reconcile(p, live({1, 2}), false), live({1}), false), live({}), false);
  ASSERT_TRUE(old);
  EXPECT_EQ(old->isr, ids({1}));
  EXPECT_TRUE(old->elr.empty());
  EXPECT_TRUE(old->last_known_elr.empty());
  EXPECT_EQ(old->leader, no_leader);
  // 3 (out of the ISR before it fell below min ISR) coming back is not eligible: nothing.
  EXPECT_FALSE(reconcile(*c, known({3}, {1, 2}), false, elr_on));
}

TEST(PartitionStateElr, AnElrMemberBackFromACleanShutdownLeadsWithoutUncleanElection) {
  const partition_state c{{1, 2, 3}, {}, no_leader, 6, 12, {}, {}, {1, 2}, {1}, {101, 102}};
  // 2 registered again (epoch 202) after a clean shutdown from epoch 102: it leads, alone in the
  // ISR, out of the ELR; the last known leader is forgotten.
  broker_states brokers = known({}, {1, 3});
  brokers[2] = broker_state{202, false, false, 102};
  auto r = reconcile(c, brokers, false, elr_on);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->leader, 2);
  EXPECT_EQ(r->isr, ids({2}));
  EXPECT_EQ(r->elr, ids({1}));
  EXPECT_EQ(r->elr_broker_epochs, std::vector<int64_t>{101});
  EXPECT_TRUE(r->last_known_elr.empty());
  EXPECT_EQ(r->leader_epoch, 7);
  // The same through on_broker_available (a broker unfenced with its epoch unchanged).
  auto again = on_broker_available(c, live({2}), false, elr_on);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->leader, 2);
  EXPECT_EQ(again->isr, ids({2}));
  // ELR off: the same state elects nobody (an empty ISR has no clean candidate).
  EXPECT_FALSE(
      on_broker_available(partition_state{{1, 2, 3}, {}, no_leader, 6, 12}, live({2}), false));
}

TEST(PartitionStateElr, AnUncleanShutdownRemovesTheBrokerFromTheElr) {
  const partition_state c{{1, 2, 3}, {}, no_leader, 6, 12, {}, {}, {1, 2}, {1}, {101, 102}};
  // 2 restarted without its clean-shutdown marker (previous epoch -1): it may have lost what it
  // had not flushed, so it leaves the ELR and nobody leads (1 is still away).
  broker_states brokers = known({}, {1, 3});
  brokers[2] = broker_state{202, false, false, -1};
  auto r = reconcile(c, brokers, false, elr_on);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->elr, ids({1}));
  EXPECT_EQ(r->leader, no_leader);
  EXPECT_EQ(r->last_known_elr, ids({1}));
  // A marker from another epoch than the one it entered with is no clean shutdown either.
  brokers[2].previous_epoch = 150;
  EXPECT_EQ(reconcile(c, brokers, false, elr_on)->elr, ids({1}));
  // Then 1 back uncleanly too: the ISR and ELR are empty, and the last known leader leads again
  // (Kafka's balanced recovery: it is the one replica that had everything), alone in the ISR.
  brokers[1] = broker_state{201, false, false, -1};
  brokers[2].previous_epoch = -1;
  auto both = reconcile(c, brokers, false, elr_on);
  ASSERT_TRUE(both);
  EXPECT_TRUE(both->elr.empty());
  EXPECT_EQ(both->leader, 1);
  EXPECT_EQ(both->isr, ids({1}));
  EXPECT_TRUE(both->last_known_elr.empty());
  // A clean re-registration keeps the member, under its new epoch.
  brokers = known({}, {1, 3});
  brokers[2] = broker_state{202, false, true, 102};  // back, but shutting down: may not lead
  auto kept = reconcile(c, brokers, false, elr_on);
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->elr, ids({1, 2}));
  EXPECT_EQ(kept->elr_broker_epochs, (std::vector<int64_t>{101, 202}));
  EXPECT_EQ(kept->leader, no_leader);
}

TEST(PartitionStateElr, UncleanElectionComesAfterTheElrAndEmptiesIt) {
  // ISR [1], ELR [2]; 1 and 2 fenced, 3 live: with unclean election 3 leads, the ELR is empty.
  const partition_state p{{1, 2, 3}, {1}, 1, 5, 9, {}, {}, {2}, {}, {102}};
  auto r = reconcile(p, known({3}, {1, 2}), /*unclean_ok=*/true, elr_on);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->leader, 3);
  EXPECT_EQ(r->isr, ids({3}));
  EXPECT_TRUE(r->elr.empty());
  // Without it nobody leads and both wait in the ELR.
  auto clean = reconcile(p, known({3}, {1, 2}), false, elr_on);
  ASSERT_TRUE(clean);
  EXPECT_EQ(clean->leader, no_leader);
  EXPECT_EQ(clean->elr, ids({1, 2}));
  EXPECT_EQ(clean->last_known_elr, ids({1}));
  // ElectLeaders UNCLEAN takes an ELR member before any unclean replica.
  const partition_state e{{1, 2, 3}, {}, no_leader, 6, 12, {}, {}, {2}, {1}, {102}};
  auto elected = elect_leader(e, election_type::unclean, live({2, 3}), elr_on);
  EXPECT_EQ(elected.error, error_code::none);
  EXPECT_EQ(elected.state.leader, 2);
  EXPECT_EQ(elected.state.isr, ids({2}));
  EXPECT_TRUE(elected.state.elr.empty());
  EXPECT_TRUE(elected.state.last_known_elr.empty());
  // PREFERRED: 1 is preferred but away; 2 (ELR, ISR empty) may lead.
  auto preferred = elect_leader(e, election_type::preferred, live({2, 3}), elr_on);
  EXPECT_EQ(preferred.error, error_code::none);
  EXPECT_EQ(preferred.state.leader, 2);
  EXPECT_EQ(elect_leader(e, election_type::unclean, live({3}), elr_on).state.leader, 3);
}

TEST(PartitionStateElr, TurningElrOffEmptiesItAndMinIsrReachedEmptiesIt) {
  const partition_state p{{1, 2, 3}, {1}, 1, 5, 9, {}, {}, {2}, {}, {102}};
  auto off = reconcile(p, live({1, 2, 3}), false);
  ASSERT_TRUE(off);
  EXPECT_TRUE(off->elr.empty());
  EXPECT_EQ(off->partition_epoch, 10);
  // min.insync.replicas lowered to 1: the ISR [1] is enough, the ELR goes.
  auto lowered = reconcile(p, live({1, 2, 3}), false, elr_options{true, 1});
  ASSERT_TRUE(lowered);
  EXPECT_TRUE(lowered->elr.empty());
  // Nothing to do when the state is as the rules want it.
  EXPECT_FALSE(reconcile(p, live({1, 2, 3}), false, elr_on));
}

// KIP-966 during reassignments (KIP-455): a reassignment's changes go through the same rules as
// any other (Kafka's PartitionChangeBuilder with ELR on), and the ELR and last known leader name
// replicas of the new list only.
TEST(PartitionStateElr, AReassignmentKeepsTheElrWithinTheReplicas) {
  const auto brokers = live({1, 2, 3, 4});
  // [1,2] -> [1,2,3]: 3 added, in the ISR; 2 fell out at min ISR (no ELR). Cancelled, the ISR
  // reverts to [1], below min ISR: 2 had left before and 3 is no replica of [1,2], so neither
  // enters the ELR (Kafka's builder would put the added 3 there).
  const partition_state adding{{1, 2, 3}, {1, 3}, 1, 4, 8, {3}, {}};
  auto cancelled = cancel_reassignment(adding, "t:0", false, brokers, elr_on);
  ASSERT_EQ(cancelled.error, error_code::none);
  ASSERT_TRUE(cancelled.state);
  EXPECT_EQ(cancelled.state->replicas, ids({1, 2}));
  EXPECT_EQ(cancelled.state->isr, ids({1}));
  EXPECT_TRUE(cancelled.state->elr.empty());
  EXPECT_EQ(cancelled.state->leader, 1);
  EXPECT_EQ(cancelled.state->leader_epoch, 5);  // 3 left the list
  // An added replica already in the ELR (it joined the ISR, then left it below min ISR)
  // leaves it with the cancel, with its broker epoch; an original member stays.
  const partition_state in_elr{{1, 2, 3}, {1}, 1, 4, 8, {3}, {}, {2, 3}, {}, {102, 103}};
  auto reverted = cancel_reassignment(in_elr, "t:0", false, brokers, elr_on);
  ASSERT_TRUE(reverted.state);
  EXPECT_EQ(reverted.state->elr, ids({2}));
  EXPECT_EQ(reverted.state->elr_broker_epochs, std::vector<int64_t>{102});
  // Starting a move changes nothing of the ELR: the replicas being removed are still replicas
  // until the move completes, and the added ones are in no ISR yet.
  const partition_state below{{1, 2, 3}, {1}, 1, 4, 8, {}, {}, {2, 3}, {}, {102, 103}};
  auto started = reassign(below, {1, 2, 4}, true, brokers, elr_on);
  ASSERT_EQ(started.error, error_code::none);
  ASSERT_TRUE(started.state);
  EXPECT_EQ(started.state->replicas, ids({1, 2, 4, 3}));
  EXPECT_EQ(started.state->elr, ids({2, 3}));
  EXPECT_EQ(started.state->elr_broker_epochs, (std::vector<int64_t>{102, 103}));
  // It completes when 4 is in sync: 3 leaves the replicas, the ELR and the ISR; [1,2,4] in sync
  // is at min ISR, so nothing is left in the ELR.
  auto done =
      alter_partition(*started.state, {1, 4, 9, {{1, 101}, {2, 102}, {4, 104}}}, brokers, elr_on);
  ASSERT_EQ(done.error, error_code::none);
  EXPECT_EQ(done.state.replicas, ids({1, 2, 4}));
  EXPECT_TRUE(done.state.elr.empty());
  EXPECT_TRUE(done.state.last_known_elr.empty());
  // A leaderless partition whose last known leader is the added 4: a cancel (allowed to elect
  // uncleanly) forgets it with the ELR.
  const partition_state leaderless{{1, 2, 4}, {}, no_leader, 6, 12, {4}, {}, {}, {4}, {}};
  auto unclean = cancel_reassignment(leaderless, "t:0", true, brokers, elr_on);
  ASSERT_TRUE(unclean.state);
  EXPECT_EQ(unclean.state->replicas, ids({1, 2}));
  EXPECT_TRUE(unclean.state->last_known_elr.empty());
  EXPECT_TRUE(unclean.state->elr.empty());
}

TEST(PartitionStateElr, AReassignmentOfALeaderlessPartitionElectsFromTheElr) {
  // The ISR empty, 2 in the ELR and live again: the reassignment's change elects it as any
  // other change would (it becomes the ISR alone and leaves the ELR; the last known leader
  // goes), where a reassignment used to leave the partition without a leader.
  const partition_state p{{1, 2, 3}, {}, no_leader, 6, 12, {}, {}, {2}, {1}, {102}};
  auto r = reassign(p, {2, 3, 4}, true, live({2, 3, 4}), elr_on);
  ASSERT_EQ(r.error, error_code::none);
  ASSERT_TRUE(r.state);
  EXPECT_EQ(r.state->leader, 2);
  EXPECT_EQ(r.state->isr, ids({2}));
  EXPECT_TRUE(r.state->elr.empty());
  EXPECT_TRUE(r.state->last_known_elr.empty());
  EXPECT_EQ(r.state->replicas, ids({2, 3, 4, 1}));
  EXPECT_EQ(r.state->leader_epoch, 7);
  // Without an ELR (or ELR off, which never fills one) nobody may lead: the move starts, the
  // partition stays leaderless.
  partition_state none = p;
  none.elr.clear();
  none.elr_broker_epochs.clear();
  auto off = reassign(none, {2, 3, 4}, true, live({2, 3, 4}));
  ASSERT_TRUE(off.state);
  EXPECT_EQ(off.state->leader, no_leader);
  EXPECT_TRUE(off.state->isr.empty());
}

TEST(PartitionStateElr, AMinIsrChangeEmptiesTheElrAndTheLastKnownLeader) {
  // ReplicationControlManager.removeTopicElrs: both lists emptied, the partition epoch + 1, the
  // leader and its epoch as they were; a partition with neither is not written.
  const partition_state p{{1, 2, 3}, {1}, 1, 5, 9, {}, {}, {2, 3}, {}, {102, 103}};
  auto cleared = clear_elr_on_min_isr_change(p);
  ASSERT_TRUE(cleared);
  EXPECT_TRUE(cleared->elr.empty());
  EXPECT_TRUE(cleared->elr_broker_epochs.empty());
  EXPECT_EQ(cleared->isr, ids({1}));
  EXPECT_EQ(cleared->leader, 1);
  EXPECT_EQ(cleared->leader_epoch, 5);
  EXPECT_EQ(cleared->partition_epoch, 10);
  const partition_state leaderless{{1, 2, 3}, {}, no_leader, 6, 12, {}, {}, {}, {1}, {}};
  auto forgotten = clear_elr_on_min_isr_change(leaderless);
  ASSERT_TRUE(forgotten);
  EXPECT_TRUE(forgotten->last_known_elr.empty());
  EXPECT_EQ(forgotten->partition_epoch, 13);
  EXPECT_FALSE(clear_elr_on_min_isr_change(three_replicas()));
  // Raised from 2 to 3 with the ISR [1] and 2 in the ELR: reconcile() alone keeps the ELR (the
  // ISR is below either value), which is why the change itself must empty it.
  EXPECT_FALSE(reconcile(p, live({1, 2, 3}), false, elr_options{true, 3}));
}

TEST(PartitionStateElr, TheElrRoundTripsThroughEtcd) {
  const partition_state p{{1, 2, 3}, {}, no_leader, 6, 12, {}, {}, {1, 2}, {1}, {101, 102}};
  const std::string text = encode_partition_state(p);
  EXPECT_EQ(text, R"({"elr":[1,2],"elr_broker_epochs":[101,102],"isr":[],"last_known_elr":[1],)"
                  R"("leader":-1,"leader_epoch":6,"partition_epoch":12,"replicas":[1,2,3]})");
  EXPECT_EQ(decode_partition_state(text), p);
  // Written before KIP-966: no fields, empty lists; an ELR without epochs has them unknown (0).
  auto older = decode_partition_state(
      R"({"replicas":[1,2],"isr":[1],"leader":1,"leader_epoch":0,"partition_epoch":0,"elr":[2]})");
  ASSERT_TRUE(older);
  EXPECT_EQ(older->elr, ids({2}));
  EXPECT_EQ(older->elr_broker_epochs, std::vector<int64_t>{0});
  EXPECT_FALSE(decode_partition_state(
      R"({"replicas":[1],"isr":[1],"leader":1,"leader_epoch":0,"partition_epoch":0,"elr":[-2]})"));
}

}  // namespace
}  // namespace tarn::cluster
