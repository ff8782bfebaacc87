// A follower's log (docs/cluster.md, "Fail-over"): append_as_follower keeps the producer state
// the leader kept (a retry after a fail-over is found, a marker closes its transaction and
// indexes an abort), and truncate_to cuts the log where a new leader's diverges: segments,
// indexes, leader epoch cache, aborted transactions and producer state all as if the log had
// always ended there, also after the log is opened again.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "record/batch_builder.h"
#include "storage/log.h"
#include "storage/test_batches.h"

namespace tarn::storage {
namespace {

using testing::make_batch;
using testing::temp_dir;

log_options options_in(const fs::path& dir, int32_t segment_bytes = 1 << 20) {
  log_options o;
  o.dir = dir / "t-0";
  o.tp = {"t", 0};
  o.config.segment_bytes = segment_bytes;
  o.config.index_interval_bytes = 256;
  o.had_clean_shutdown = true;
  o.now = 1000;
  return o;
}

// A batch of `count` records of producer `pid` (epoch 0) from sequence `seq`, at `base`, as a
// leader at `epoch` stored it.
std::vector<uint8_t> producer_batch(offset_t base, producer_id_t pid, int32_t seq, int32_t count,
                                    leader_epoch_t epoch, bool transactional = false) {
  record::batch_builder_config c;
  c.base_offset = base;
  c.partition_leader_epoch = epoch;
  c.producer_id = pid;
  c.producer_epoch = 0;
  c.base_sequence = seq;
  c.transactional = transactional;
  record::batch_builder b(c);
  const uint8_t v[3] = {'a', 'b', 'c'};
  for (int32_t i = 0; i < count; ++i) b.try_append(2000 + i, std::nullopt, record::bytes_view(v));
  return *b.build();
}

std::string text_of(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The leader's batches of a transaction of producer 7 (offsets 0-2), its ABORT marker (3), and an
// idempotent producer 9's two batches (4-5, 6-7), as a leader at epoch 0 wrote them.
std::vector<uint8_t> leader_log_bytes(const fs::path& dir) {
  auto leader = log::open(options_in(dir / "leader"));
  EXPECT_TRUE(leader);
  log& l = **leader;
  EXPECT_TRUE(l.append(producer_batch(0, 7, 0, 3, 0, true), 2000));
  l.producers().update({7, 0, 0, 2}, 0, 2, 2000, true);
  EXPECT_TRUE(l.append_txn_marker({7, 0, 5, false}, 0, 2000));
  for (int32_t i = 0; i < 2; ++i) {
    const offset_t base = l.log_end_offset();
    EXPECT_TRUE(l.append(producer_batch(base, 9, 2 * i, 2, 0), 2000));
  }
  auto read = l.read(0, 1 << 20, true);
  EXPECT_TRUE(read && read->slice);
  std::vector<uint8_t> bytes(static_cast<size_t>(read->slice->length));
  EXPECT_TRUE(read_slice(*read->slice, bytes));
  return bytes;
}

TEST(LogFollower, AppendAsFollowerKeepsTheLeadersProducerState) {
  temp_dir dir;
  const auto bytes = leader_log_bytes(dir.path());
  auto follower = log::open(options_in(dir.path() / "follower"));
  ASSERT_TRUE(follower);
  log& f = **follower;
  ASSERT_TRUE(f.append_as_follower(bytes, 2000));
  EXPECT_EQ(f.log_end_offset(), 8);
  // The idempotent producer's retry of its last batch is found (as the produce path asks), its
  // next sequence is in order, a gap is refused: this replica can lead for it.
  auto retry = f.producers().check({9, 0, 2, 3}, 8);
  ASSERT_TRUE(retry);
  ASSERT_TRUE(*retry);
  EXPECT_EQ((*retry)->first_offset(), 6);
  auto next = f.producers().check({9, 0, 4, 4}, 8);
  ASSERT_TRUE(next);
  EXPECT_FALSE(*next);
  auto gap = f.producers().check({9, 0, 6, 6}, 8);
  ASSERT_FALSE(gap);
  EXPECT_EQ(gap.error().code, producer_errc::out_of_order_sequence);
  // The aborted transaction is closed and indexed, as on the leader.
  EXPECT_EQ(f.last_stable_offset(), f.high_watermark());
  const std::vector<aborted_txn> aborted{{7, 0, 3, 4}};
  EXPECT_EQ(f.collect_aborted_txns(0, 8), aborted);
  EXPECT_EQ(f.epoch_entries(), (std::vector<epoch_entry>{{0, 0}}));
}

TEST(LogFollower, TruncationCutsSegmentsIndexesEpochsAndProducerState) {
  temp_dir dir;
  // Small segments: the log spans several, so the cut falls inside one and drops the later ones.
  auto opened = log::open(options_in(dir.path(), 1024));
  ASSERT_TRUE(opened);
  log& l = **opened;
  // Epoch 0: producer 9's batches at 0..; epoch 2 from offset 20 (what a leader of epoch 2 wrote
  // and nobody else has).
  offset_t base = 0;
  for (int32_t i = 0; i < 10; ++i) {
    ASSERT_TRUE(l.append_as_follower(producer_batch(base, 9, 2 * i, 2, 0), 2000));
    base += 2;
  }
  for (int32_t i = 0; i < 10; ++i) {
    ASSERT_TRUE(l.append_as_follower(make_batch(base, 2, 3000, 200, 2), 2000));
    base += 2;
  }
  ASSERT_GT(l.segment_count(), 3);
  l.set_replicated(l.log_end_offset());
  EXPECT_EQ(l.high_watermark(), 40);
  EXPECT_EQ(l.epoch_entries(), (std::vector<epoch_entry>{{0, 0}, {2, 20}}));
  const std::string checkpoint = (l.dir() / "leader-epoch-checkpoint").string();
  EXPECT_EQ(text_of(checkpoint), "0\n2\n0 0\n2 20\n");

  // Inside a batch: the whole batch goes (the log ends at its start).
  auto cut = l.truncate_to(21, 4000);
  ASSERT_TRUE(cut);
  EXPECT_TRUE(*cut);
  EXPECT_EQ(l.log_end_offset(), 20);
  EXPECT_EQ(l.high_watermark(), 20);
  EXPECT_LE(l.recovery_point(), 20);
  EXPECT_EQ(l.epoch_entries(), (std::vector<epoch_entry>{{0, 0}}));
  EXPECT_EQ(text_of(checkpoint), "0\n1\n0 0\n");
  // Nothing at or past the end: a no-op.
  auto again = l.truncate_to(25, 4000);
  ASSERT_TRUE(again);
  EXPECT_FALSE(*again);

  // Down to 14: producer 9's batches from 14 on are forgotten with it.
  ASSERT_TRUE(l.truncate_to(14, 4000));
  EXPECT_EQ(l.log_end_offset(), 14);
  EXPECT_EQ(l.segment_base_offsets().back() <= 14, true);
  auto last = l.producers().check({9, 0, 12, 13}, 14);  // the batch at 12-13 is still there
  ASSERT_TRUE(last && *last);
  EXPECT_EQ((*last)->first_offset(), 12);
  auto next = l.producers().check({9, 0, 14, 15}, 14);  // 14-15 was cut: in order again
  ASSERT_TRUE(next);
  EXPECT_FALSE(*next);
  // The indexes answer for what is left, and the log goes on from the cut.
  auto read = l.read(10, 1 << 20, true);
  ASSERT_TRUE(read && read->slice);
  ASSERT_TRUE(l.append_as_follower(make_batch(14, 2, 5000, 200, 3), 5000));
  EXPECT_EQ(l.epoch_entries(), (std::vector<epoch_entry>{{0, 0}, {3, 14}}));
  ASSERT_TRUE(l.close());

  // Opened again: the same log.
  auto reopened = log::open(options_in(dir.path(), 1024));
  ASSERT_TRUE(reopened);
  EXPECT_EQ((*reopened)->log_end_offset(), 16);
  EXPECT_EQ((*reopened)->epoch_entries(), (std::vector<epoch_entry>{{0, 0}, {3, 14}}));
  auto kept = (*reopened)->producers().check({9, 0, 12, 13}, 16);
  ASSERT_TRUE(kept && *kept);

  // At or below the first segment's base offset the log starts over there.
  ASSERT_TRUE((*reopened)->truncate_to(0, 6000));
  EXPECT_EQ((*reopened)->log_end_offset(), 0);
  EXPECT_EQ((*reopened)->log_start_offset(), 0);
  EXPECT_EQ((*reopened)->segment_count(), 1);
  EXPECT_TRUE((*reopened)->epoch_entries().empty());
  EXPECT_EQ((*reopened)->producers().size(), 0u);
}

TEST(LogFollower, StartingOverPastTheEndKeepsNothingOfTheOldLog) {
  temp_dir dir;
  auto opened = log::open(options_in(dir.path(), 1024));
  ASSERT_TRUE(opened);
  log& l = **opened;
  offset_t base = 0;
  for (int32_t i = 0; i < 10; ++i) {
    ASSERT_TRUE(l.append_as_follower(producer_batch(base, 9, 2 * i, 2, 0), 2000));
    base += 2;
  }
  ASSERT_TRUE(l.roll(2000));  // a producer snapshot at 20
  l.set_replicated(5);
  // The leader's log starts at 50 (DeleteRecords while this replica was away).
  ASSERT_TRUE(l.truncate_fully_and_start_at(50, 3000));
  EXPECT_EQ(l.log_start_offset(), 50);
  EXPECT_EQ(l.log_end_offset(), 50);
  EXPECT_EQ(l.high_watermark(), 50);
  EXPECT_EQ(l.recovery_point(), 50);
  EXPECT_EQ(l.segment_base_offsets(), (std::vector<offset_t>{50}));
  EXPECT_TRUE(l.epoch_entries().empty());
  EXPECT_EQ(l.producers().size(), 0u);
  EXPECT_EQ(producer_state_manager::list_snapshots(l.dir()), std::vector<offset_t>{});
  // The leader's batches follow from there, and the log opens again as it is.
  ASSERT_TRUE(l.append_as_follower(producer_batch(50, 9, 40, 2, 4), 3000));
  EXPECT_EQ(l.epoch_entries(), (std::vector<epoch_entry>{{4, 50}}));
  ASSERT_TRUE(l.close());
  auto o = options_in(dir.path(), 1024);
  o.log_start_offset = 50;
  auto reopened = log::open(o);
  ASSERT_TRUE(reopened);
  EXPECT_EQ((*reopened)->log_start_offset(), 50);
  EXPECT_EQ((*reopened)->log_end_offset(), 52);
  EXPECT_EQ((*reopened)->epoch_entries(), (std::vector<epoch_entry>{{4, 50}}));
}

TEST(LogFollower, TruncationDropsAbortedTransactionsPastTheCut) {
  temp_dir dir;
  const auto bytes = leader_log_bytes(dir.path());
  auto follower = log::open(options_in(dir.path() / "follower"));
  ASSERT_TRUE(follower);
  log& f = **follower;
  ASSERT_TRUE(f.append_as_follower(bytes, 2000));
  ASSERT_EQ(f.collect_aborted_txns(0, 8).size(), 1u);
  // The marker at 3 goes: the transaction is open again and nothing is aborted.
  ASSERT_TRUE(f.truncate_to(3, 3000));
  EXPECT_TRUE(f.collect_aborted_txns(0, 8).empty());
  EXPECT_EQ(f.producers().first_unstable_offset(), std::optional<offset_t>(0));
}

}  // namespace
}  // namespace tarn::storage
