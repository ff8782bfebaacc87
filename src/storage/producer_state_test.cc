// Producer state: Kafka's duplicate/sequence/epoch rules and the .snapshot byte layout.
#include "storage/producer_state.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "record/crc32c.h"

namespace tarn::storage {
namespace {

producer_append batch(producer_id_t pid, producer_epoch_t epoch, sequence_t first,
                      sequence_t last) {
  return {pid, epoch, first, last};
}

TEST(ProducerState, NewProducerAcceptsAnySequence) {
  producer_state_manager m("t-0");
  auto c = m.check(batch(7, 0, 42, 44), 0);
  ASSERT_TRUE(c);
  EXPECT_FALSE(c->has_value());
}

TEST(ProducerState, RetriesOfTheLastFiveBatchesAreDuplicates) {
  producer_state_manager m("t-0");
  offset_t off = 0;
  for (int i = 0; i < 6; ++i) {
    m.update(batch(1, 0, i * 2, i * 2 + 1), off, off + 1, 1000 + i);
    off += 2;
  }
  // Batch 0 fell out of the window of 5; batches 1-5 are found with their offsets.
  auto oldest = m.check(batch(1, 0, 0, 1), off);
  ASSERT_FALSE(oldest);
  EXPECT_EQ(oldest.error().code, producer_errc::out_of_order_sequence);
  for (int i = 1; i < 6; ++i) {
    auto d = m.check(batch(1, 0, i * 2, i * 2 + 1), off);
    ASSERT_TRUE(d);
    ASSERT_TRUE(d->has_value());
    EXPECT_EQ((*d)->first_offset(), i * 2);
    EXPECT_EQ((*d)->timestamp, 1000 + i);
  }
  EXPECT_FALSE(m.check(batch(1, 0, 12, 12), off)->has_value());
}

TEST(ProducerState, GapsEpochsAndWrapAround) {
  producer_state_manager m("t-0");
  m.update(batch(1, 3, 0, 4), 0, 4, 1);
  auto gap = m.check(batch(1, 3, 6, 6), 5);
  ASSERT_FALSE(gap);
  EXPECT_EQ(gap.error().message,
            "Out of order sequence number for producer 1 at offset 5 in partition t-0: 6 "
            "(incoming seq. number), 4 (current end sequence number)");
  auto stale = m.check(batch(1, 2, 5, 5), 5);
  ASSERT_FALSE(stale);
  EXPECT_EQ(stale.error().code, producer_errc::invalid_producer_epoch);
  EXPECT_FALSE(m.check(batch(1, 4, 1, 1), 5));  // a new epoch must start at 0
  EXPECT_TRUE(m.check(batch(1, 4, 0, 0), 5));   // ... and may
  m.update(batch(2, 0, 2147483640, 2147483647), 5, 12, 1);
  EXPECT_TRUE(m.check(batch(2, 0, 0, 3), 13));  // INT32_MAX wraps to 0
}

TEST(ProducerState, SnapshotIsKafkasLayoutAndRoundTrips) {
  producer_state_manager m("t-0");
  m.update(batch(5, 1, 10, 12), 100, 102, 1700000000000);
  auto bytes = m.encode_snapshot();
  ASSERT_EQ(bytes.size(), 2u + 4 + 4 + 46);
  EXPECT_EQ(bytes[0], 0);
  EXPECT_EQ(bytes[1], 1);  // version 1
  uint32_t crc = (uint32_t{bytes[2]} << 24) | (uint32_t{bytes[3]} << 16) |
                 (uint32_t{bytes[4]} << 8) | bytes[5];
  EXPECT_EQ(crc, record::crc32c(std::span<const uint8_t>(bytes).subspan(6)));
  const std::vector<uint8_t> entry_start = {0, 0, 0, 1,                 // one entry
                                            0, 0, 0, 0,  0, 0, 0, 5,    // producer id
                                            0, 1,                       // epoch
                                            0, 0, 0, 12,                // last sequence
                                            0, 0, 0, 0,  0, 0, 0, 102,  // last offset
                                            0, 0, 0, 2};                // offset delta
  EXPECT_TRUE(std::equal(entry_start.begin(), entry_start.end(), bytes.begin() + 6));
  producer_state_manager back("t-0");
  ASSERT_TRUE(back.decode_snapshot(bytes));
  const producer_entry* e = back.find(5);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->epoch, 1);
  ASSERT_EQ(e->batches.size(), 1u);
  EXPECT_EQ(e->batches[0].first_seq, 10);
  EXPECT_EQ(e->batches[0].first_offset(), 100);
  auto dup = back.check(batch(5, 1, 10, 12), 103);
  ASSERT_TRUE(dup && dup->has_value());

  bytes[20] ^= 1;
  EXPECT_FALSE(back.decode_snapshot(bytes));
  EXPECT_FALSE(back.decode_snapshot(std::span<const uint8_t>(bytes).first(7)));
}

TEST(ProducerState, LoadLatestSkipsStaleAndCorruptSnapshots) {
  auto dir = std::filesystem::temp_directory_path() /
             ("tarn-ps-" + std::to_string(std::random_device{}()));
  std::filesystem::create_directories(dir);
  producer_state_manager m("t-0");
  m.update(batch(1, 0, 0, 0), 0, 0, 1);
  ASSERT_TRUE(m.take_snapshot(dir, 1));
  m.update(batch(1, 0, 1, 1), 1, 1, 2);
  ASSERT_TRUE(m.take_snapshot(dir, 2));
  EXPECT_EQ(producer_state_manager::list_snapshots(dir), (std::vector<offset_t>{1, 2}));
  producer_state_manager loaded("t-0");
  auto at = loaded.load_latest(dir, 1);  // the log was truncated to 1: snapshot 2 is stale
  ASSERT_TRUE(at);
  EXPECT_EQ(*at, 1);
  EXPECT_EQ(producer_state_manager::list_snapshots(dir), (std::vector<offset_t>{1}));
  EXPECT_EQ(loaded.find(1)->last_seq(), 0);
  std::filesystem::resize_file(dir / snapshot_file_name(1), 5);
  auto none = loaded.load_latest(dir, 10);
  ASSERT_TRUE(none);
  EXPECT_FALSE(none->has_value());
  EXPECT_EQ(loaded.size(), 0u);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tarn::storage
