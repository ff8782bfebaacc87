// The log cleaner on a transactional log (Kafka's CleanedTransactionMetadata rules): committed,
// aborted and still-open transactions of interleaved producers beside plain records and
// tombstones; aborted records gone at once, markers kept while data of their transaction is
// before them and dropped after their delete horizon, the open transaction past the last stable
// offset untouched, the .txnindex rebuilt, and recovery from each step of an interrupted swap.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "storage/cleaner_test_util.h"
#include "storage/log_cleaner.h"
#include "storage/test_batches.h"
#include "storage/txn_index.h"

namespace tarn::storage {
namespace {

using namespace cleaner_testing;
using testing::temp_dir;

constexpr producer_id_t p1 = 11, p2 = 12, p3 = 13, p4 = 14;

// A batch as stored: its header fields, and its records (keys/values; a control record's too).
struct stored {
  offset_t base_offset = 0;
  offset_t last_offset = 0;
  producer_id_t producer_id = -1;
  bool transactional = false;
  bool control = false;
  bool delete_horizon = false;
  timestamp_ms base_timestamp = -1;
  std::vector<decoded> records;
  bool commit() const { return control && records.size() == 1 && records[0].key[3] == 1; }
};

std::vector<stored> batches_of(const log& l) {
  std::vector<stored> out;
  for_each_batch(l, [&](const record::record_batch_view& batch) {
    stored s;
    s.base_offset = batch.base_offset();
    s.last_offset = batch.last_offset();
    s.producer_id = batch.producer_id();
    s.transactional = batch.is_transactional();
    s.control = batch.is_control();
    s.delete_horizon = batch.has_delete_horizon();
    s.base_timestamp = batch.base_timestamp();
    s.records = records_of(batch);
    out.push_back(std::move(s));
  });
  return out;
}

bool has_record(const std::vector<stored>& all, offset_t offset) {
  for (const stored& s : all) {
    for (const decoded& d : s.records) {
      if (d.offset == offset) return true;
    }
  }
  return false;
}

const stored* batch_at(const std::vector<stored>& all, offset_t offset) {
  for (const stored& s : all) {
    if (s.base_offset <= offset && offset <= s.last_offset) return &s;
  }
  return nullptr;
}

// What a read_committed consumer returns below the LSO, as librdkafka and the Java consumer
// filter it: a producer's transactional batches are skipped from the first offset of one of its
// aborted transactions (Fetch's AbortedTransactions) up to its ABORT marker; markers are not
// returned. key -> last value (nullopt: a tombstone), and every offset returned.
struct committed_view {
  std::map<std::string, std::optional<std::string>> latest;
  std::vector<offset_t> offsets;
  std::set<std::string> values;
};

committed_view read_committed(const log& l) {
  committed_view v;
  const offset_t lso = l.last_stable_offset();
  auto aborted = l.collect_aborted_txns(l.log_start_offset(), lso);
  std::sort(aborted.begin(), aborted.end(), [](const aborted_txn& a, const aborted_txn& b) {
    return a.first_offset < b.first_offset;
  });
  size_t next_aborted = 0;
  std::set<producer_id_t> in_aborted;
  for (const stored& b : batches_of(l)) {
    if (b.base_offset >= lso) break;
    while (next_aborted < aborted.size() && aborted[next_aborted].first_offset <= b.last_offset) {
      in_aborted.insert(aborted[next_aborted++].producer_id);
    }
    if (b.control) {
      if (!b.commit()) in_aborted.erase(b.producer_id);
      continue;
    }
    if (b.transactional && in_aborted.count(b.producer_id)) continue;
    for (const decoded& d : b.records) {
      v.latest[d.key] = d.value;
      v.offsets.push_back(d.offset);
      if (d.value) v.values.insert(*d.value);
    }
  }
  return v;
}

// The latest non-tombstone value per key.
std::map<std::string, std::string> live(const committed_view& v) {
  std::map<std::string, std::string> out;
  for (const auto& [k, val] : v.latest) {
    if (val) out[k] = *val;
  }
  return out;
}

struct txn_writer {
  log& l;
  std::map<producer_id_t, sequence_t> seq;

  offset_t plain(const std::vector<kv>& records) { return append(l, records); }
  offset_t txn(producer_id_t pid, const std::vector<kv>& records) {
    const sequence_t s = seq[pid];
    batch_spec spec{
        .producer_id = pid, .producer_epoch = 0, .base_sequence = s, .transactional = true};
    const offset_t base = append(l, records, spec);
    const auto n = static_cast<int32_t>(records.size());
    l.producers().update({pid, 0, s, s + n - 1}, base, base + n - 1, 1000, true);
    seq[pid] = s + n;
    return base;
  }
  offset_t marker(producer_id_t pid, bool commit) {
    auto m = l.append_txn_marker({pid, 0, 0, commit}, 0, 1000);
    EXPECT_TRUE(m);
    return m ? *m : -1;
  }
};

// The log of the cases below (offsets in brackets), each segment rolled by hand:
//   [0,8):   plain k1,k2 [0-1] | P1 k1,k3 [2-3] | P2 k2 [4] | P1 COMMIT [5] | P2 k4 [6] |
//            P2 ABORT [7]
//   [8,17):  P3 k1 [8] | plain k5, k3 tombstone, k1 [9-11] | P3 ABORT [12] | P1 k2 [13] |
//            P1 COMMIT [14] | P2 k8 [15] | P2 COMMIT [16]
//   [17,19): P4 k1 [17] (open: the LSO) | plain k6 [18]
//   [19,..): active: plain k7 [19]
void write_txn_log(log& l) {
  txn_writer w{l, {}};
  w.plain({{"k1", "v0"}, {"k2", "v0"}});
  w.txn(p1, {{"k1", "p1a"}, {"k3", "p1a"}});
  w.txn(p2, {{"k2", "p2a-aborted"}});
  w.marker(p1, true);
  w.txn(p2, {{"k4", "p2b-aborted"}});
  w.marker(p2, false);
  ASSERT_TRUE(l.roll(1000));
  w.txn(p3, {{"k1", "p3-aborted"}});
  w.plain({{"k5", "x"}, {"k3", std::nullopt}, {"k1", "v1"}});
  w.marker(p3, false);
  w.txn(p1, {{"k2", "p1b"}});
  w.marker(p1, true);
  w.txn(p2, {{"k8", "p2c"}});
  w.marker(p2, true);
  ASSERT_TRUE(l.roll(1000));
  w.txn(p4, {{"k1", "p4"}});
  w.plain({{"k6", "y"}});
  ASSERT_TRUE(l.roll(1000));
  w.plain({{"k7", "z"}});
  ASSERT_EQ(l.log_end_offset(), 20);
}

TEST(LogCleanerTxn, CleanableRangeEndsAtTheLastStableOffset) {
  temp_dir dir;
  auto l = log::open(options_in(dir.path(), compact_config()));
  ASSERT_TRUE(l);
  write_txn_log(**l);
  EXPECT_EQ((*l)->last_stable_offset(), 17);
  EXPECT_EQ((*l)->active_segment_base_offset(), 19);
  auto t = make_log_to_clean(**l, std::nullopt, 10000);
  EXPECT_EQ(t.first_uncleanable_offset, 17);  // the open transaction's segment is not cleanable
  EXPECT_EQ(t.aborted_txns, (std::vector<aborted_txn>{{p2, 4, 7, 8}, {p3, 8, 12, 13}}));
  // A transaction open from the first segment on leaves nothing cleanable.
  temp_dir dir2;
  auto l2 = log::open(options_in(dir2.path(), compact_config()));
  ASSERT_TRUE(l2);
  txn_writer w{**l2, {}};
  w.txn(p1, {{"a", "1"}});
  w.plain({{"a", "2"}});
  ASSERT_TRUE((*l2)->roll(1000));
  w.plain({{"a", "3"}});
  ASSERT_TRUE((*l2)->roll(1000));
  t = make_log_to_clean(**l2, std::nullopt, 10000);
  EXPECT_EQ(t.first_uncleanable_offset, 0);
  EXPECT_EQ(t.cleanable_bytes, 0);
}

TEST(LogCleanerTxn, AbortedRecordsGoMarkersStayWhileTheirDataDoes) {
  temp_dir dir;
  auto l = log::open(options_in(dir.path(), compact_config()));
  ASSERT_TRUE(l);
  write_txn_log(**l);
  const committed_view before = read_committed(**l);
  EXPECT_EQ(live(before), (std::map<std::string, std::string>{
                              {"k1", "v1"}, {"k2", "p1b"}, {"k5", "x"}, {"k8", "p2c"}}));
  // The open transaction and what follows it, byte for byte.
  auto tail_before = (*l)->read(17, 1 << 20, true);
  ASSERT_TRUE(tail_before && tail_before->slice);
  std::vector<uint8_t> tail(static_cast<size_t>(tail_before->slice->length));
  ASSERT_TRUE(read_slice(*tail_before->slice, tail));

  auto c = make_cleaner();
  // ---- first cleaning (delete.retention.ms 1000) ----
  auto first = clean_once(**l, *c, std::nullopt, 10000);
  EXPECT_EQ(first.result.next_dirty_offset, 17);
  auto b = batches_of(**l);
  // Aborted data gone whatever its keys: P2's batches (4, 6) dropped; P3's (8) is its
  // producer's last batch, so its header stays, empty.
  EXPECT_EQ(batch_at(b, 4), nullptr);
  EXPECT_EQ(batch_at(b, 6), nullptr);
  ASSERT_NE(batch_at(b, 8), nullptr);
  EXPECT_TRUE(batch_at(b, 8)->records.empty());
  // Superseded committed data gone: the plain batch and P1's first batch.
  EXPECT_EQ(batch_at(b, 0), nullptr);
  EXPECT_EQ(batch_at(b, 2), nullptr);
  // Every marker stays this time: its transaction's batches were read before it.
  for (offset_t m : {5, 7, 12, 14, 16}) {
    ASSERT_NE(batch_at(b, m), nullptr) << m;
    EXPECT_TRUE(batch_at(b, m)->control);
    EXPECT_FALSE(batch_at(b, m)->delete_horizon) << m;
  }
  // The tombstone got its horizon.
  ASSERT_NE(batch_at(b, 10), nullptr);
  EXPECT_TRUE(batch_at(b, 10)->delete_horizon);
  EXPECT_EQ(batch_at(b, 10)->base_timestamp, 11000);
  // The cleaned segment's .txnindex holds both aborted transactions; the replaced one's is gone.
  const fs::path pdir = dir.path() / "t-0";
  auto idx = read_txn_index(pdir / segment_file_name(0, ".txnindex"));
  ASSERT_TRUE(idx);
  EXPECT_EQ(*idx, (std::vector<aborted_txn>{{p2, 4, 7, 8}, {p3, 8, 12, 13}}));
  EXPECT_FALSE(fs::exists(pdir / segment_file_name(8, ".txnindex")));
  EXPECT_EQ((*l)->collect_aborted_txns(0, 100), *idx);
  // The open transaction untouched, offsets unchanged, read_committed the same.
  auto tail_after = (*l)->read(17, 1 << 20, true);
  ASSERT_TRUE(tail_after && tail_after->slice);
  std::vector<uint8_t> tail2(static_cast<size_t>(tail_after->slice->length));
  ASSERT_TRUE(read_slice(*tail_after->slice, tail2));
  EXPECT_EQ(tail2, tail);
  EXPECT_EQ((*l)->log_end_offset(), 20);
  committed_view after = read_committed(**l);
  EXPECT_EQ(live(after), live(before));
  EXPECT_FALSE(after.values.count("p2a-aborted") || after.values.count("p2b-aborted") ||
               after.values.count("p3-aborted"));

  // ---- P4 commits; more data; second cleaning before the horizons ----
  txn_writer w{**l, {{p4, 1}}};
  w.marker(p4, true);  // 20
  ASSERT_TRUE((*l)->roll(1000));
  w.plain({{"k9", "q"}});  // 21, active
  const committed_view before2 = read_committed(**l);
  auto second = clean_once(**l, *c, 17, 10500);
  EXPECT_EQ(second.result.next_dirty_offset, 21);
  b = batches_of(**l);
  // P1's first COMMIT and P2's ABORT have no data left before them: each gets a horizon
  // (10500 + 1000) and P2's ABORT leaves the .txnindex.
  for (offset_t m : {5, 7}) {
    ASSERT_NE(batch_at(b, m), nullptr) << m;
    EXPECT_TRUE(batch_at(b, m)->delete_horizon) << m;
    EXPECT_EQ(batch_at(b, m)->base_timestamp, 11500) << m;
  }
  // Markers whose transactions still have data: no horizon.
  for (offset_t m : {12, 14, 16, 20}) {
    ASSERT_NE(batch_at(b, m), nullptr) << m;
    EXPECT_FALSE(batch_at(b, m)->delete_horizon) << m;
  }
  EXPECT_EQ((*l)->collect_aborted_txns(0, 100), (std::vector<aborted_txn>{{p3, 8, 12, 13}}));
  EXPECT_FALSE(has_record(b, 11));  // k1 superseded by P4's committed value
  EXPECT_EQ(live(read_committed(**l)), live(before2));

  // ---- third cleaning past every horizon ----
  w.plain({{"k10", "r"}});  // 22
  ASSERT_TRUE((*l)->roll(1000));
  w.plain({{"k11", "s"}});  // 23, active
  const committed_view before3 = read_committed(**l);
  clean_once(**l, *c, 21, 12000);
  b = batches_of(**l);
  EXPECT_EQ(batch_at(b, 5), nullptr);   // COMMIT of an emptied transaction: gone
  EXPECT_EQ(batch_at(b, 7), nullptr);   // ABORT of an emptied transaction: gone
  EXPECT_FALSE(has_record(b, 10));      // tombstone past its horizon: gone
  ASSERT_NE(batch_at(b, 8), nullptr);   // P3's empty header still holds its sequence
  ASSERT_NE(batch_at(b, 12), nullptr);  // so its ABORT stays, indexed
  for (offset_t m : {14, 16, 20}) EXPECT_NE(batch_at(b, m), nullptr) << m;
  EXPECT_EQ((*l)->collect_aborted_txns(0, 100), (std::vector<aborted_txn>{{p3, 8, 12, 13}}));
  auto final_view = read_committed(**l);
  EXPECT_EQ(live(final_view), live(before3));
  EXPECT_EQ(live(final_view), (std::map<std::string, std::string>{{"k1", "p4"},
                                                                  {"k2", "p1b"},
                                                                  {"k5", "x"},
                                                                  {"k6", "y"},
                                                                  {"k7", "z"},
                                                                  {"k8", "p2c"},
                                                                  {"k9", "q"},
                                                                  {"k10", "r"},
                                                                  {"k11", "s"}}));
  EXPECT_TRUE(std::is_sorted(final_view.offsets.begin(), final_view.offsets.end()));

  // Reopened (no snapshot: producer state rebuilt from the cleaned log), the same.
  ASSERT_TRUE((*l)->close());
  l->reset();
  for (auto s : producer_state_manager::list_snapshots(pdir)) {
    fs::remove(pdir / snapshot_file_name(s));
  }
  auto again = log::open(options_in(dir.path(), compact_config()));
  ASSERT_TRUE(again);
  EXPECT_EQ((*again)->collect_aborted_txns(0, 100), (std::vector<aborted_txn>{{p3, 8, 12, 13}}));
  EXPECT_EQ(live(read_committed(**again)), live(final_view));
  EXPECT_EQ((*again)->last_stable_offset(), (*again)->log_end_offset());
}

TEST(LogCleanerTxn, OffsetMapSkipsAbortedTransactions) {
  temp_dir dir;
  auto l = log::open(options_in(dir.path(), compact_config()));
  ASSERT_TRUE(l);
  txn_writer w{**l, {}};
  w.plain({{"a", "committed"}});  // 0
  w.txn(p1, {{"a", "aborted"}});  // 1
  w.marker(p1, false);            // 2
  w.txn(p1, {{"b", "b1"}});       // 3: P1's last batch
  w.marker(p1, true);             // 4
  ASSERT_TRUE((*l)->roll(1000));
  w.plain({{"c", "c"}});  // 5, active
  auto c = make_cleaner();
  clean_once(**l, *c, std::nullopt, 10000);
  // Had the aborted "a" reached the map, the committed "a" at 0 would be gone too.
  const committed_view v = read_committed(**l);
  EXPECT_EQ(live(v),
            (std::map<std::string, std::string>{{"a", "committed"}, {"b", "b1"}, {"c", "c"}}));
  auto b = batches_of(**l);
  ASSERT_NE(batch_at(b, 0), nullptr);
  EXPECT_EQ(batch_at(b, 1), nullptr);
}

// ---- crash during the swap of a segment with a .txnindex ----

struct txn_staged {
  temp_dir dir;
  fs::path pdir() const { return dir.path() / "t-0"; }
};

// write_txn_log, then a first cleaning whose swap `stage` does in part, then a crash.
void stage_txn_crash(txn_staged& s,
                     const std::function<void(cleaned_group&, const fs::path&)>& stage) {
  auto l = log::open(options_in(s.dir.path(), compact_config()));
  ASSERT_TRUE(l);
  write_txn_log(**l);
  ASSERT_TRUE((*l)->flush(1000));
  auto c = make_cleaner();
  log_to_clean target = make_log_to_clean(**l, std::nullopt, 10000);
  bool staged_once = false;
  auto r = c->clean(
      target, 10000,
      [&](cleaned_group g) -> result<bool, storage_error> {
        if (staged_once) {
          (void)g.segment->remove();
          return false;
        }
        staged_once = true;
        EXPECT_TRUE(fs::exists(s.pdir() / (segment_file_name(0, ".txnindex") + ".cleaned")));
        stage(g, s.pdir());
        return false;
      },
      [] { return false; });
  ASSERT_TRUE(r);
  ASSERT_TRUE(staged_once);
  ASSERT_TRUE((*l)->close());
}

// Reopened after an unclean shutdown: the swap undone (both .txnindex files as written) or
// completed (one merged .txnindex), read_committed as before either way, no temporary file left.
void expect_txn_log(txn_staged& s, bool completed) {
  log_options o = options_in(s.dir.path(), compact_config());
  o.had_clean_shutdown = false;
  o.recovery_point = 0;
  auto l = log::open(o);
  ASSERT_TRUE(l) << l.error().message;
  EXPECT_EQ((*l)->log_end_offset(), 20);
  EXPECT_EQ((*l)->collect_aborted_txns(0, 100),
            (std::vector<aborted_txn>{{p2, 4, 7, 8}, {p3, 8, 12, 13}}));
  EXPECT_EQ(fs::exists(s.pdir() / segment_file_name(8, ".txnindex")), !completed);
  EXPECT_EQ(fs::exists(s.pdir() / segment_file_name(8, ".log")), !completed);
  const committed_view v = read_committed(**l);
  EXPECT_EQ(live(v), (std::map<std::string, std::string>{
                         {"k1", "v1"}, {"k2", "p1b"}, {"k5", "x"}, {"k8", "p2c"}}));
  EXPECT_FALSE(v.values.count("p2a-aborted") || v.values.count("p3-aborted"));
  EXPECT_EQ(batch_at(batches_of(**l), 4) == nullptr, completed);
  for (const auto& e : fs::directory_iterator(s.pdir())) {
    const std::string name = e.path().filename().string();
    EXPECT_FALSE(name.ends_with(".cleaned") || name.ends_with(".swap") ||
                 name.ends_with(".deleted"))
        << name;
  }
}

void rename_suffix(const fs::path& dir, offset_t base, const char* kind, const std::string& from,
                   const std::string& to) {
  fs::rename(dir / (segment_file_name(base, kind) + from),
             dir / (segment_file_name(base, kind) + to));
}

TEST(LogCleanerTxnRecovery, CleanedFilesAreDeleted) {
  txn_staged s;
  stage_txn_crash(s, [](cleaned_group& g, const fs::path&) { (void)g.segment->close(); });
  expect_txn_log(s, /*completed=*/false);
}

TEST(LogCleanerTxnRecovery, TxnIndexNotYetSwapIsUndone) {
  txn_staged s;
  stage_txn_crash(s, [](cleaned_group& g, const fs::path& dir) {
    (void)g.segment->close();
    // .log, .index, .timeindex renamed .swap; the crash came before the .txnindex's rename.
    for (const char* kind : {".log", ".index", ".timeindex"}) {
      rename_suffix(dir, 0, kind, ".cleaned", ".swap");
    }
  });
  expect_txn_log(s, /*completed=*/false);
}

TEST(LogCleanerTxnRecovery, SwapWithOldSegmentsPresentIsCompleted) {
  txn_staged s;
  stage_txn_crash(s, [](cleaned_group& g, const fs::path& dir) {
    ASSERT_TRUE(g.segment->change_file_suffixes(".cleaned", ".swap"));
    ASSERT_TRUE(fs::exists(dir / (segment_file_name(0, ".txnindex") + ".swap")));
    (void)g.segment->close();
  });
  expect_txn_log(s, /*completed=*/true);
}

TEST(LogCleanerTxnRecovery, SwapWithOldSegmentsRenamedDeletedIsCompleted) {
  txn_staged s;
  stage_txn_crash(s, [](cleaned_group& g, const fs::path& dir) {
    ASSERT_TRUE(g.segment->change_file_suffixes(".cleaned", ".swap"));
    (void)g.segment->close();
    for (const auto& old : g.replaces) {
      for (const char* kind : {".log", ".index", ".timeindex", ".txnindex"}) {
        if (fs::exists(dir / segment_file_name(old.base_offset, kind))) {
          rename_suffix(dir, old.base_offset, kind, "", ".deleted");
        }
      }
    }
  });
  expect_txn_log(s, /*completed=*/true);
}

TEST(LogCleanerTxnRecovery, SwapPartlyRenamedToFinalIsCompleted) {
  txn_staged s;
  stage_txn_crash(s, [](cleaned_group& g, const fs::path& dir) {
    ASSERT_TRUE(g.segment->change_file_suffixes(".cleaned", ".swap"));
    (void)g.segment->close();
    for (const auto& old : g.replaces) {
      for (const char* kind : {".log", ".index", ".timeindex", ".txnindex"}) {
        fs::remove(dir / segment_file_name(old.base_offset, kind));
      }
    }
    // Everything but the .txnindex has its final name.
    for (const char* kind : {".log", ".index", ".timeindex"}) {
      rename_suffix(dir, 0, kind, ".swap", "");
    }
  });
  expect_txn_log(s, /*completed=*/true);
}

}  // namespace
}  // namespace tarn::storage
