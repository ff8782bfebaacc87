// end_offset_for_epoch against the cases of Kafka's LeaderEpochFileCacheTest (endOffsetFor).
#include "storage/leader_epoch_lookup.h"

#include <gtest/gtest.h>

namespace tarn::storage {
namespace {

TEST(leader_epoch_lookup, end_offset_for_epoch_as_kafka_answers) {
  const std::vector<epoch_entry> cache = {{2, 6}, {4, 11}, {7, 20}};
  const offset_t leo = 25;
  // The latest epoch ends at the log end offset.
  EXPECT_EQ(end_offset_for_epoch(cache, 7, leo), (epoch_and_end_offset{7, 25}));
  // A cached epoch ends where the next one starts.
  EXPECT_EQ(end_offset_for_epoch(cache, 2, leo), (epoch_and_end_offset{2, 11}));
  EXPECT_EQ(end_offset_for_epoch(cache, 4, leo), (epoch_and_end_offset{4, 20}));
  // An epoch between two cached ones: the one below, ending where the one above starts.
  EXPECT_EQ(end_offset_for_epoch(cache, 3, leo), (epoch_and_end_offset{2, 11}));
  EXPECT_EQ(end_offset_for_epoch(cache, 6, leo), (epoch_and_end_offset{4, 20}));
  // Below every cached epoch: the requested epoch, ending at the first start offset.
  EXPECT_EQ(end_offset_for_epoch(cache, 1, leo), (epoch_and_end_offset{1, 6}));
  EXPECT_EQ(end_offset_for_epoch(cache, 0, leo), (epoch_and_end_offset{0, 6}));
  // Above every cached epoch, undefined, or an empty cache: undefined.
  EXPECT_EQ(end_offset_for_epoch(cache, 8, leo), (epoch_and_end_offset{}));
  EXPECT_EQ(end_offset_for_epoch(cache, undefined_epoch, leo), (epoch_and_end_offset{}));
  EXPECT_EQ(end_offset_for_epoch({}, 0, leo), (epoch_and_end_offset{-1, -1}));
}

TEST(leader_epoch_lookup, one_epoch) {
  const std::vector<epoch_entry> cache = {{0, 0}};
  EXPECT_EQ(end_offset_for_epoch(cache, 0, 10), (epoch_and_end_offset{0, 10}));
  EXPECT_EQ(end_offset_for_epoch(cache, 1, 10), (epoch_and_end_offset{}));
}

}  // namespace
}  // namespace tarn::storage
