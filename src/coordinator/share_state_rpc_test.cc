// The share-state RPCs of the share coordinator without sockets (share_state_rpc.cc): Kafka 4.4's
// ShareCoordinatorShard checks in their order (INVALID_REQUEST texts, FENCED_LEADER_EPOCH,
// FENCED_STATE_EPOCH, UNKNOWN_TOPIC_OR_PARTITION), the state a write leaves, a read raising the
// leader epoch, the summary of a share-partition without state, delete, the epochs surviving a
// replay, and the in-memory share-partition following a write.
#include <gtest/gtest.h>

#include <deque>
#include <functional>

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

// Makes `coordinator` (on f.log) the one that keeps the share-partitions' state: it leads the one
// partition of __share_group_state; the share coordinators of other brokers reach it through a
// persister.
void keep_the_state(rpc_fixture& f, share_coordinator& coordinator) {
  f.log.create_partitions = 1;
  coordinator.start_state_unowned(nullptr);
  ASSERT_EQ(coordinator.prepare_state_rpc(), error_code::none);
  ASSERT_TRUE(coordinator.load_state_partition(0, 0));
}

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
  void read(const share_partition_key& key, int32_t leader_epoch,
            share_state_callback done) override {
    ++calls;
    done(target_.read_state(key.group_id, {key.topic_id, key.partition}, leader_epoch, 0));
  }
  void write(const share_partition_key& key, const share_state_write& w,
             share_state_callback done) override {
    ++calls;
    done(target_.write_state(key.group_id, {key.topic_id, key.partition}, w, 0));
  }
  void initialize(const share_partition_key& key, int32_t state_epoch, int64_t start,
                  share_state_callback done) override {
    ++calls;
    done(target_.initialize_state(key.group_id, {key.topic_id, key.partition}, state_epoch, start,
                                  0));
  }
  void delete_state(const share_partition_key& key, share_state_callback done) override {
    ++calls;
    done(target_.delete_state(key.group_id, {key.topic_id, key.partition}, 0));
  }
  void read_summary(const share_partition_key& key, share_state_callback done) override {
    ++calls;
    done(target_.read_state_summary(key.group_id, {key.topic_id, key.partition}));
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
  // The first fetch only sends the read (the state is another broker's: answered later, here
  // before the call returns); the next one reads from the state.
  EXPECT_FALSE(old_leader.next_fetch_offset("g", f.tp, 0, 100, 0).has_value());
  EXPECT_EQ(p1.calls, 3);  // read, initialize, read again
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
  EXPECT_FALSE(new_leader.next_fetch_offset("g", f.tp, 0, 110, 0).has_value());
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

// A persister whose answers come when the test gives them, as the network's would come from
// the persister's thread: each call waits in `calls` until forward() (the target coordinator's
// answer) or answer() (one the test makes up).
class held_persister final : public share_state_persister {
 public:
  explicit held_persister(share_coordinator& target) : target_(target) {}
  std::optional<int32_t> epoch;
  struct held {
    std::function<share_state_answer()> forward;
    share_state_callback done;
  };
  std::deque<held> calls;

  std::optional<int32_t> leader_epoch(const topic_uuid&, int32_t) override { return epoch; }
  void read(const share_partition_key& key, int32_t leader_epoch,
            share_state_callback done) override {
    calls.push_back(
        {[this, key, leader_epoch] {
           return target_.read_state(key.group_id, {key.topic_id, key.partition}, leader_epoch, 0);
         },
         std::move(done)});
  }
  void write(const share_partition_key& key, const share_state_write& w,
             share_state_callback done) override {
    calls.push_back(
        {[this, key, w] {
           return target_.write_state(key.group_id, {key.topic_id, key.partition}, w, 0);
         },
         std::move(done)});
  }
  void initialize(const share_partition_key& key, int32_t state_epoch, int64_t start,
                  share_state_callback done) override {
    calls.push_back({[this, key, state_epoch, start] {
                       return target_.initialize_state(key.group_id, {key.topic_id, key.partition},
                                                       state_epoch, start, 0);
                     },
                     std::move(done)});
  }
  void delete_state(const share_partition_key& key, share_state_callback done) override {
    calls.push_back({[this, key] {
                       return target_.delete_state(key.group_id, {key.topic_id, key.partition}, 0);
                     },
                     std::move(done)});
  }
  void read_summary(const share_partition_key& key, share_state_callback done) override {
    calls.push_back(
        {[this, key] {
           return target_.read_state_summary(key.group_id, {key.topic_id, key.partition});
         },
         std::move(done)});
  }
  // The oldest call answered as the target coordinator answers it.
  void forward() {
    held h = std::move(calls.front());
    calls.pop_front();
    h.done(h.forward());
  }
  // The oldest call answered with `e` (the target never sees it).
  void answer(error_code e) {
    held h = std::move(calls.front());
    calls.pop_front();
    share_state_answer a;
    a.error = e;
    h.done(a);
  }
  void forward_all() {
    while (!calls.empty()) forward();
  }

 private:
  share_coordinator& target_;
};

// What a ShareFetch or ShareAcknowledge is told later (the handler's pending reply).
struct later_answer {
  std::optional<error_code> got;
  int asked = 0;
  share_answer_later later() {
    return [this] {
      ++asked;
      return [this](error_code e) { got = e; };
    };
  }
};

TEST(share_state_rpc, writes_at_another_brokers_coordinator_are_answered_later) {
  rpc_fixture f;
  share_coordinator coordinator(f.config, f.metadata, &f.log);
  ASSERT_NO_FATAL_FAILURE(keep_the_state(f, coordinator));
  testing::memory_offsets_log none{1};
  held_persister persister(coordinator);
  share_coordinator leader(f.config, f.metadata, &none);
  leader.start_state_unowned(&persister);
  persister.epoch = 1;

  // Becoming the leader: the read goes out and nothing is handed out until it is answered.
  EXPECT_FALSE(leader.next_fetch_offset("g", f.tp, 0, 0, 0).has_value());
  ASSERT_EQ(persister.calls.size(), 1u);
  EXPECT_FALSE(leader.next_fetch_offset("g", f.tp, 0, 0, 0).has_value());
  EXPECT_EQ(persister.calls.size(), 1u);  // not asked twice
  persister.forward();                    // uninitialized: Initialize goes out
  persister.forward();                    // then the read again
  persister.forward();
  EXPECT_TRUE(persister.calls.empty());
  ASSERT_EQ(leader.next_fetch_offset("g", f.tp, 0, 0, 0), 0);

  // An acquisition is not handed out before its write is answered; the share-partition changes
  // nothing else meanwhile: no fetch offset, no second acquisition, an acknowledgement queued.
  const fetched_batch b{0, 9, false};
  later_answer acquired;
  const share_answer_later acquired_later = acquired.later();
  EXPECT_EQ(leader.acquire("g", "m", f.tp, std::span(&b, 1), 100, 0, &acquired_later),
            (std::vector<acquired_range>{{0, 9, 1}}));
  EXPECT_EQ(acquired.asked, 1);
  EXPECT_FALSE(acquired.got.has_value());
  ASSERT_EQ(persister.calls.size(), 1u);
  EXPECT_FALSE(leader.next_fetch_offset("g", f.tp, 0, 10, 0).has_value());
  EXPECT_TRUE(leader.acquire("g", "m2", f.tp, std::span(&b, 1), 100, 0, &acquired_later).empty());
  const acknowledgement_batch accept{0, 3, {1}};
  later_answer accepted;
  EXPECT_FALSE(
      leader.acknowledge("g", "m", f.tp, std::span(&accept, 1), 0, accepted.later()).has_value());
  EXPECT_EQ(persister.calls.size(), 1u);  // the acknowledgement waits for its turn
  persister.forward();
  EXPECT_EQ(acquired.got, error_code::none);
  // Now the acknowledgement's own write is out, answered in its turn.
  ASSERT_EQ(persister.calls.size(), 1u);
  EXPECT_FALSE(accepted.got.has_value());
  persister.forward();
  EXPECT_EQ(accepted.got, error_code::none);
  EXPECT_EQ(leader.start_offset("g", f.tp), 4);

  // A write that fails is undone: the records acquired come back Available, uncounted.
  later_answer failed;
  const share_answer_later failed_later = failed.later();
  const fetched_batch more{10, 11, false};
  EXPECT_EQ(leader.acquire("g", "m", f.tp, std::span(&more, 1), 100, 0, &failed_later),
            (std::vector<acquired_range>{{10, 11, 1}}));
  persister.answer(error_code::coordinator_not_available);
  EXPECT_EQ(failed.got, error_code::coordinator_not_available);
  EXPECT_EQ(leader.next_fetch_offset("g", f.tp, 0, 12, 0), 10);
  EXPECT_TRUE(persister.calls.empty());  // nothing changed that needs writing
  later_answer again;
  const share_answer_later again_later = again.later();
  EXPECT_EQ(leader.acquire("g", "m", f.tp, std::span(&more, 1), 100, 0, &again_later),
            (std::vector<acquired_range>{{10, 11, 1}}));
  persister.forward();
  EXPECT_EQ(again.got, error_code::none);

  // A write fenced by a newer leader's read: its acknowledgement answers the fence, and the
  // share-partition is dropped at its next use.
  ASSERT_EQ(coordinator.read_state("g", f.tp, 2, 0).error, error_code::none);
  const acknowledgement_batch late{4, 9, {1}};
  later_answer fenced;
  EXPECT_FALSE(
      leader.acknowledge("g", "m", f.tp, std::span(&late, 1), 0, fenced.later()).has_value());
  persister.forward();
  EXPECT_EQ(fenced.got, error_code::fenced_leader_epoch);
  EXPECT_EQ(leader.start_offset("g", f.tp), 4);  // undone: 4-9 still held
  EXPECT_EQ(leader.acknowledge("g", "m", f.tp, std::span(&late, 1), 0),
            error_code::not_leader_or_follower);
  EXPECT_FALSE(leader.start_offset("g", f.tp).has_value());

  // The leadership moves while a write is out: what waited for it is answered
  // NOT_LEADER_OR_FOLLOWER at once, and the write's late answer changes nothing.
  persister.epoch = 3;
  EXPECT_FALSE(leader.next_fetch_offset("g", f.tp, 0, 12, 0).has_value());
  persister.forward_all();
  ASSERT_EQ(leader.next_fetch_offset("g", f.tp, 0, 12, 0), 4);
  later_answer moved;
  const share_answer_later moved_later = moved.later();
  const fetched_batch from4{4, 11, false};
  EXPECT_EQ(leader.acquire("g", "m", f.tp, std::span(&from4, 1), 100, 0, &moved_later),
            (std::vector<acquired_range>{{4, 11, 2}}));  // 10-11: their first delivery written
  persister.epoch = 4;
  leader.poll(1);
  EXPECT_EQ(moved.got, error_code::not_leader_or_follower);
  persister.forward();
  EXPECT_FALSE(leader.start_offset("g", f.tp).has_value());
}

// The group coordinator's share-state calls in a cluster (AlterShareGroupOffsets,
// DeleteShareGroupOffsets, DeleteGroups) reach the share coordinator keeping the state on
// another broker, and are answered once it answered.
TEST(share_state_rpc, offsets_and_group_deletion_reach_another_brokers_coordinator) {
  rpc_fixture f;
  share_coordinator coordinator(f.config, f.metadata, &f.log);
  ASSERT_NO_FATAL_FAILURE(keep_the_state(f, coordinator));
  testing::memory_offsets_log none{1};
  held_persister persister(coordinator);
  share_coordinator groups(f.config, f.metadata, &none);
  groups.start_state_unowned(&persister);
  auto summary = [&] { return coordinator.read_state_summary("g", f.tp); };

  ASSERT_EQ(groups.check_offsets_alterable("g", true), error_code::none);
  later_answer altered;
  EXPECT_FALSE(groups.set_start_offset("g", f.tp, 3, altered.later()).has_value());
  persister.forward();  // the summary: no state, state epoch 0
  EXPECT_FALSE(altered.got.has_value());
  persister.forward();  // Initialize at state epoch 1
  EXPECT_EQ(altered.got, error_code::none);
  EXPECT_EQ(summary().state.start_offset, 3);
  EXPECT_EQ(summary().state.state_epoch, 1);
  // Again: the next state epoch, which fences the share-partition's leader at the old one.
  later_answer again;
  EXPECT_FALSE(groups.set_start_offset("g", f.tp, 7, again.later()).has_value());
  persister.forward_all();
  EXPECT_EQ(again.got, error_code::none);
  EXPECT_EQ(summary().state.state_epoch, 2);
  EXPECT_EQ(coordinator.write_state("g", f.tp, write_of(1, 0, 7), 0).error,
            error_code::fenced_state_epoch);

  // DeleteShareGroupOffsets: every partition of the topic, answered once all are.
  later_answer deleted;
  EXPECT_FALSE(groups.delete_topic_offsets("g", f.tp.topic_id, deleted.later()).has_value());
  EXPECT_EQ(persister.calls.size(), 2u);  // t has two partitions
  persister.forward();
  EXPECT_FALSE(deleted.got.has_value());
  persister.forward();
  EXPECT_EQ(deleted.got, error_code::none);
  EXPECT_EQ(summary().state.start_offset, -1);

  // DeleteGroups: the topics the group initialized; the first error is the group's answer, and
  // then the group stays (Kafka deletes the state first and only the groups whose state went).
  later_answer restarted;
  EXPECT_FALSE(groups.set_start_offset("g", f.tp, 5, restarted.later()).has_value());
  persister.forward_all();
  EXPECT_EQ(summary().state.start_offset, 5);
  later_answer gone;
  EXPECT_FALSE(groups.delete_group("g", gone.later()).has_value());
  ASSERT_EQ(persister.calls.size(), 2u);
  persister.answer(error_code::coordinator_not_available);
  persister.forward();
  EXPECT_EQ(gone.got, error_code::coordinator_not_available);
  EXPECT_TRUE(groups.has_group("g"));
  ASSERT_EQ(groups.check_offsets_alterable("g", true), error_code::none);
  later_answer restarted2;
  EXPECT_FALSE(groups.set_start_offset("g", f.tp, 5, restarted2.later()).has_value());
  persister.forward_all();
  // Deleted: the state first; the group is there until every deletion is answered.
  later_answer gone2;
  EXPECT_FALSE(groups.delete_group("g", gone2.later()).has_value());
  EXPECT_TRUE(groups.has_group("g"));
  persister.forward_all();
  EXPECT_EQ(gone2.got, error_code::none);
  EXPECT_FALSE(groups.has_group("g"));
  EXPECT_EQ(summary().state.start_offset, -1);
}

// DeleteGroups in Kafka's order, as the records show it: the share-partitions' state is deleted
// where it is kept (DeleteShareGroupState), and only once that is answered are the group's
// tombstones written to __consumer_offsets.
TEST(share_state_rpc, a_deleted_groups_state_goes_before_its_records) {
  rpc_fixture f;
  share_coordinator coordinator(f.config, f.metadata, &f.log);
  ASSERT_NO_FATAL_FAILURE(keep_the_state(f, coordinator));
  testing::memory_offsets_log none{1};
  testing::memory_offsets_log group_log{1};
  held_persister persister(coordinator);
  share_coordinator groups(f.config, f.metadata, &none, &group_log);
  groups.start_state_unowned(&persister);
  ASSERT_EQ(groups.check_offsets_alterable("g", true), error_code::none);
  later_answer altered;
  EXPECT_FALSE(groups.set_start_offset("g", f.tp, 3, altered.later()).has_value());
  persister.forward_all();
  ASSERT_EQ(altered.got, error_code::none);
  const int records = group_log.appends;
  const int states = f.log.appends;

  later_answer gone;
  EXPECT_FALSE(groups.delete_group("g", gone.later()).has_value());
  EXPECT_EQ(group_log.appends, records);  // nothing of the group yet
  ASSERT_EQ(persister.calls.size(), 2u);  // t's two partitions
  persister.forward();
  EXPECT_GT(f.log.appends, states);  // the state's tombstones
  EXPECT_EQ(group_log.appends, records);
  EXPECT_FALSE(gone.got.has_value());
  persister.forward();
  EXPECT_EQ(gone.got, error_code::none);
  EXPECT_EQ(group_log.appends, records + 1);  // then the group's
  EXPECT_FALSE(groups.has_group("g"));
}

// DescribeShareGroupOffsets in a cluster: each share-partition's summary is read where its state
// is kept (here another broker's coordinator, through the persister), for the share-partitions
// the group's members were assigned too, so an empty group whose share-partitions were led by
// other brokers still shows them; the summary's leader epoch and delivery-complete count come
// with the SPSO.
TEST(share_state_rpc, offsets_are_read_where_the_state_is_kept) {
  rpc_fixture f;
  share_coordinator coordinator(f.config, f.metadata, &f.log);
  ASSERT_NO_FATAL_FAILURE(keep_the_state(f, coordinator));
  // Another broker led t-0 at epoch 4 and wrote its state: SPSO 6, two records finished.
  ASSERT_EQ(coordinator.initialize_state("g", f.tp, 0, 0, 0).error, error_code::none);
  ASSERT_EQ(coordinator.read_state("g", f.tp, 4, 0).error, error_code::none);
  auto w = write_of(0, 4, 6, {{6, 7, 2, 1}, {8, 9, 0, 1}});
  w.delivery_complete_count = 2;
  ASSERT_EQ(coordinator.write_state("g", f.tp, w, 0).error, error_code::none);

  // The group coordinator: a member joins and is given both partitions of t, then leaves.
  testing::memory_offsets_log none{1};
  held_persister persister(coordinator);
  share_config config = f.config;
  config.group_share_assignment_interval_ms = 0;
  share_coordinator groups(config, f.metadata, &none);
  groups.start_state_unowned(&persister);
  protocol::share_group_heartbeat_request join;
  join.group_id = "g";
  join.member_id = "m";
  join.member_epoch = 0;
  const std::vector<std::string_view> names = {"t"};
  join.subscribed_topic_names = names;
  ASSERT_EQ(groups.heartbeat(join, {"client", "/127.0.0.1"}, 0).message.error_code, 0);
  protocol::share_group_heartbeat_request leave = join;
  leave.member_epoch = -1;
  ASSERT_EQ(groups.heartbeat(leave, {"client", "/127.0.0.1"}, 0).message.error_code, 0);

  std::optional<share_coordinator::offsets_answer> later_offsets;
  auto offsets = groups.group_offsets("g", std::nullopt, [&] {
    return [&](share_coordinator::offsets_answer a) { later_offsets = std::move(a); };
  });
  EXPECT_FALSE(offsets.has_value());
  ASSERT_EQ(persister.calls.size(), 2u);  // the summaries of t-0 and t-1
  persister.forward_all();
  ASSERT_TRUE(later_offsets.has_value());
  EXPECT_EQ(later_offsets->error, error_code::none);
  // t-1 has no state: left out.
  ASSERT_EQ(later_offsets->partitions.size(), 1u);
  const auto& o = later_offsets->partitions[0];
  EXPECT_EQ(o.tp, f.tp);
  EXPECT_EQ(o.start_offset, 6);
  EXPECT_EQ(o.finished, 2);
  EXPECT_EQ(o.leader_epoch.value_or(-1), 4);

  // Named share-partitions: only those are read.
  later_offsets.reset();
  offsets = groups.group_offsets("g", std::vector<share_topic_partition>{f.tp}, [&] {
    return [&](share_coordinator::offsets_answer a) { later_offsets = std::move(a); };
  });
  ASSERT_EQ(persister.calls.size(), 1u);
  persister.forward();
  ASSERT_TRUE(later_offsets.has_value());
  ASSERT_EQ(later_offsets->partitions.size(), 1u);
  // A group that does not exist: at once.
  EXPECT_EQ(groups.group_offsets("nope").error, error_code::group_id_not_found);
}

}  // namespace
}  // namespace tarn::coordinator
