// The share consumer's acknowledgement bookkeeping (share_acknowledgements.h): batches as the
// broker accepts them (ascending, not overlapping, one type or one a record), the implicit and
// explicit paths, RENEW keeping a record the application's, GAP and RELEASE made by the consumer.
#include "client/share_acknowledgements.h"

#include <gtest/gtest.h>

namespace tarn::client {
namespace {

TEST(share_ack_batches, consecutive_offsets_of_one_type_are_one_batch) {
  auto b = build_ack_batches({{5, ack_accept}, {3, ack_accept}, {4, ack_accept}, {9, ack_accept}});
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].first_offset, 3);
  EXPECT_EQ(b[0].last_offset, 5);
  EXPECT_EQ(b[0].types, std::vector<int8_t>{ack_accept});
  EXPECT_EQ(b[1].first_offset, 9);
  EXPECT_EQ(b[1].last_offset, 9);
}

TEST(share_ack_batches, mixed_types_get_one_type_a_record) {
  auto b = build_ack_batches({{10, ack_accept}, {11, ack_release}, {12, ack_gap}});
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].first_offset, 10);
  EXPECT_EQ(b[0].last_offset, 12);
  EXPECT_EQ(b[0].types, (std::vector<int8_t>{ack_accept, ack_release, ack_gap}));
}

TEST(share_ack_batches, a_later_acknowledgement_of_an_offset_wins) {
  auto b = build_ack_batches({{7, ack_accept}, {7, ack_reject}});
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].types, std::vector<int8_t>{ack_reject});
  EXPECT_TRUE(build_ack_batches({}).empty());
}

TEST(share_acknowledgements, implicit_mode_accepts_everything_delivered) {
  share_acknowledgements a;
  const topic_partition tp{"t", 0};
  for (int64_t o = 0; o < 4; ++o) a.delivered(tp, o);
  EXPECT_EQ(a.unacknowledged(), 4u);
  a.acknowledge_all(ack_accept);
  EXPECT_EQ(a.unacknowledged(), 0u);
  a.collect();
  ASSERT_TRUE(a.has_pending());
  auto sent = a.take(tp);
  EXPECT_EQ(sent.size(), 4u);
  EXPECT_FALSE(a.has_pending());
  // Nothing is left delivered: a second collect sends nothing.
  a.collect();
  EXPECT_FALSE(a.has_pending());
}

TEST(share_acknowledgements, explicit_acknowledgements_of_delivered_records_only) {
  share_acknowledgements a;
  const topic_partition tp{"t", 1};
  a.delivered(tp, 10);
  a.delivered(tp, 11);
  EXPECT_TRUE(a.acknowledge(tp, 10, ack_release));
  EXPECT_FALSE(a.acknowledge(tp, 12, ack_accept));        // never delivered
  EXPECT_FALSE(a.acknowledge({"t", 0}, 10, ack_accept));  // another partition
  EXPECT_EQ(a.unacknowledged(), 1u);
  a.collect();
  auto sent = a.take(tp);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_EQ(sent[0], (std::pair<int64_t, int8_t>{10, ack_release}));
  EXPECT_FALSE(a.acknowledge(tp, 10, ack_accept));  // sent already
  EXPECT_TRUE(a.acknowledge(tp, 11, ack_reject));
}

TEST(share_acknowledgements, a_renewed_record_stays_to_be_acknowledged_again) {
  share_acknowledgements a;
  const topic_partition tp{"t", 0};
  a.delivered(tp, 3);
  EXPECT_TRUE(a.acknowledge(tp, 3, ack_renew));
  a.collect();
  auto sent = a.take(tp);
  ASSERT_EQ(sent.size(), 1u);
  EXPECT_TRUE(share_acknowledgements::has_renew(sent));
  EXPECT_EQ(a.unacknowledged(), 0u);  // renewed: poll() may go on
  EXPECT_TRUE(a.acknowledge(tp, 3, ack_accept));
  a.collect();
  EXPECT_EQ(a.take(tp), (std::vector<std::pair<int64_t, int8_t>>{{3, ack_accept}}));
}

TEST(share_acknowledgements, gaps_and_releases_the_consumer_makes_go_with_the_next_request) {
  share_acknowledgements a;
  const topic_partition tp{"t", 0};
  a.add(tp, 4, ack_gap);
  a.add(tp, 9, ack_release);
  EXPECT_EQ(a.unacknowledged(), 0u);
  auto b = build_ack_batches(a.take(tp));
  ASSERT_EQ(b.size(), 2u);
  EXPECT_EQ(b[0].types, std::vector<int8_t>{ack_gap});
  EXPECT_EQ(b[1].types, std::vector<int8_t>{ack_release});
}

}  // namespace
}  // namespace tarn::client
