// Transactions in a partition log: the last stable offset, COMMIT/ABORT markers, the .txnindex
// files in Kafka's format, read_committed reads bounded by the LSO, and all of it rebuilt when the
// log is opened again (after a clean close and after a crash without one).
#include <gtest/gtest.h>

#include "storage/log.h"
#include "storage/test_batches.h"
#include "storage/txn_index.h"

namespace tarn::storage {
namespace {

using testing::temp_dir;

log_options options_in(const fs::path& dir, bool clean = true) {
  log_options o;
  o.dir = dir / "t-0";
  o.tp = {"t", 0};
  o.config.segment_bytes = 1 << 20;
  o.had_clean_shutdown = clean;
  o.now = 1000;
  return o;
}

// A transactional batch of `count` records from producer `pid`, at the log end offset.
std::vector<uint8_t> txn_batch(offset_t base, producer_id_t pid, int32_t seq, int32_t count) {
  record::batch_builder_config c;
  c.base_offset = base;
  c.partition_leader_epoch = 0;
  c.producer_id = pid;
  c.producer_epoch = 0;
  c.base_sequence = seq;
  c.transactional = true;
  record::batch_builder b(c);
  const uint8_t v[3] = {'a', 'b', 'c'};
  for (int32_t i = 0; i < count; ++i) b.try_append(2000 + i, std::nullopt, record::bytes_view(v));
  return *b.build();
}

void append_txn(log& l, producer_id_t pid, int32_t seq, int32_t count) {
  const offset_t first = l.log_end_offset();
  auto bytes = txn_batch(first, pid, seq, count);
  ASSERT_TRUE(l.append(bytes, 2000));
  l.producers().update({pid, 0, seq, seq + count - 1}, first, first + count - 1, 2000, true);
}

TEST(txn_log, LastStableOffsetStopsAtTheOldestOpenTransaction) {
  temp_dir dir;
  auto l = log::open(options_in(dir.path()));
  ASSERT_TRUE(l);
  log& lg = **l;
  ASSERT_TRUE(lg.append(testing::make_batch(0, 2, 1000), 1000));  // offsets 0-1, not txn
  EXPECT_EQ(lg.last_stable_offset(), 2);
  append_txn(lg, 7, 0, 3);  // 2-4
  append_txn(lg, 8, 0, 2);  // 5-6
  EXPECT_EQ(lg.high_watermark(), 7);
  EXPECT_EQ(lg.last_stable_offset(), 2);
  // read_committed stops before the open transaction.
  auto r = lg.read(0, 1 << 20, true, lg.last_stable_offset());
  ASSERT_TRUE(r);
  ASSERT_TRUE(r->slice);
  auto all = lg.read(0, 1 << 20, true);
  ASSERT_TRUE(all && all->slice);
  EXPECT_LT(r->slice->length, all->slice->length);
  EXPECT_EQ(r->last_stable_offset, 2);
  auto none = lg.read(2, 1 << 20, true, lg.last_stable_offset());
  ASSERT_TRUE(none);
  EXPECT_FALSE(none->slice);

  // Commit 7: the LSO moves to 8's first offset. Abort 8: everything is stable.
  auto c = lg.append_txn_marker({7, 0, 3, true}, 0, 3000);
  ASSERT_TRUE(c);
  EXPECT_EQ(*c, 7);
  EXPECT_EQ(lg.last_stable_offset(), 5);
  ASSERT_TRUE(lg.producers().check_marker({8, 0, 3, false}));
  auto a = lg.append_txn_marker({8, 0, 3, false}, 0, 3000);
  ASSERT_TRUE(a);
  EXPECT_EQ(*a, 8);
  EXPECT_EQ(lg.last_stable_offset(), 9);
  EXPECT_EQ(lg.log_end_offset(), 9);
  // The produce path's guard: one marker each for 7 and 8, none for a stranger.
  EXPECT_EQ(lg.producers().markers_written(7), 1U);
  EXPECT_EQ(lg.producers().markers_written(8), 1U);
  EXPECT_EQ(lg.producers().markers_written(99), 0U);
  const std::vector<aborted_txn> want{{8, 5, 8, 9}};
  EXPECT_EQ(lg.collect_aborted_txns(0, 9), want);
  EXPECT_TRUE(lg.collect_aborted_txns(0, 5).empty());   // ends before the aborted data
  EXPECT_TRUE(lg.collect_aborted_txns(9, 20).empty());  // starts after its marker

  // The .txnindex holds Kafka's 34-byte entry.
  auto idx = read_txn_index(dir.path() / "t-0" / "00000000000000000000.txnindex");
  ASSERT_TRUE(idx);
  EXPECT_EQ(*idx, want);
  const auto bytes = encode_txn_index_entry(want[0]);
  EXPECT_EQ(bytes[0], 0);
  EXPECT_EQ(bytes[1], 0);   // version 0
  EXPECT_EQ(bytes[9], 8);   // producer id 8
  EXPECT_EQ(bytes[17], 5);  // first offset
  EXPECT_EQ(bytes[25], 8);  // last offset
  EXPECT_EQ(bytes[33], 9);  // last stable offset

  // A stale epoch is refused before a marker is written.
  lg.producers().update({9, 2, 0, 0}, 9, 9, 3000, false);
  auto stale = lg.producers().check_marker({9, 1, 3, false});
  ASSERT_FALSE(stale);
  EXPECT_EQ(stale.error().code, producer_errc::invalid_producer_epoch);
  // So is a marker of a coordinator older than the one of the producer's last marker (7's was
  // written with coordinator epoch 3).
  EXPECT_TRUE(lg.producers().check_marker({7, 0, 3, false}));
  auto zombie = lg.producers().check_marker({7, 0, 2, false});
  ASSERT_FALSE(zombie);
  EXPECT_EQ(zombie.error().code, producer_errc::coordinator_fenced);
  ASSERT_TRUE(lg.close());
}

TEST(txn_log, RecoveryRebuildsOpenTransactionsAndAbortedIndex) {
  for (bool clean : {true, false}) {
    SCOPED_TRACE(clean ? "clean close" : "crash");
    temp_dir dir;
    {
      auto l = log::open(options_in(dir.path()));
      ASSERT_TRUE(l);
      log& lg = **l;
      append_txn(lg, 7, 0, 3);                                       // 0-2
      ASSERT_TRUE(lg.append_txn_marker({7, 0, 1, false}, 0, 3000));  // 3: abort
      append_txn(lg, 8, 0, 2);                                       // 4-5, left open
      ASSERT_TRUE(lg.close());
    }
    if (!clean) {
      // What a crash leaves: no producer snapshot at the end (the close wrote one), and here
      // the .txnindex entry lost too; the replay of the segment rebuilds both.
      for (const auto& f : fs::directory_iterator(dir.path() / "t-0")) {
        if (f.path().extension() == ".snapshot" || f.path().extension() == ".txnindex") {
          fs::remove(f.path());
        }
      }
    }
    auto l = log::open(options_in(dir.path(), clean));
    ASSERT_TRUE(l);
    log& lg = **l;
    EXPECT_EQ(lg.log_end_offset(), 6);
    EXPECT_EQ(lg.last_stable_offset(), 4);
    const std::vector<aborted_txn> want{{7, 0, 3, 4}};
    EXPECT_EQ(lg.collect_aborted_txns(0, 6), want);
    ASSERT_TRUE(lg.append_txn_marker({8, 0, 1, true}, 0, 4000));
    EXPECT_EQ(lg.last_stable_offset(), 7);
    ASSERT_TRUE(lg.close());
  }
}

}  // namespace
}  // namespace tarn::storage
