// The KIP-848 member's state machine without sockets: the join heartbeat's fields, deltas after
// it, reconciliation and its acknowledgement, fencing, leaving, and leaving after
// max.poll.interval.ms without a poll (stale).
#include "client/consumer_membership.h"

#include <gtest/gtest.h>

#include "protocol/error_codes.h"

namespace tarn::client {
namespace {

using protocol::error_code;
using state = consumer_membership::state;

const uuid topic_a{1, 1};
const uuid topic_b{2, 2};

consumer_membership subscribed() {
  consumer_membership m("member-1", std::nullopt, std::string("uniform"), 300000);
  m.subscribe({"b", "a"});
  return m;
}

TEST(consumer_membership, the_join_sends_every_field_and_later_heartbeats_only_changes) {
  consumer_membership m("member-1", std::nullopt, std::string("uniform"), 300000);
  EXPECT_FALSE(m.wants_heartbeats());
  m.subscribe({"b", "a"});
  EXPECT_EQ(m.current(), state::joining);
  EXPECT_TRUE(m.heartbeat_due_now());
  auto join = m.next_heartbeat();
  EXPECT_EQ(join.member_id, "member-1");
  EXPECT_EQ(join.member_epoch, 0);
  EXPECT_EQ(join.rebalance_timeout_ms, 300000);
  EXPECT_EQ(join.server_assignor, "uniform");
  EXPECT_EQ(join.subscribed_topic_names, (std::vector<std::string>{"a", "b"}));
  ASSERT_TRUE(join.owned);
  EXPECT_TRUE(join.owned->empty());

  EXPECT_EQ(m.on_answer(0, std::string("member-1"), 1, 200, std::nullopt), 0);
  EXPECT_EQ(m.current(), state::stable);
  EXPECT_EQ(m.member_epoch(), 1);
  EXPECT_EQ(m.heartbeat_interval(), std::chrono::milliseconds(200));
  EXPECT_FALSE(m.heartbeat_due_now());
  auto next = m.next_heartbeat();
  EXPECT_EQ(next.member_epoch, 1);
  EXPECT_FALSE(next.subscribed_topic_names);
  EXPECT_FALSE(next.owned);
  EXPECT_FALSE(next.rebalance_timeout_ms);

  m.subscribe({"a"});  // a change goes at once, alone
  EXPECT_TRUE(m.heartbeat_due_now());
  auto changed = m.next_heartbeat();
  EXPECT_EQ(changed.subscribed_topic_names, std::vector<std::string>{"a"});
  EXPECT_FALSE(changed.owned);

  m.on_request_failed();  // no answer: everything again
  auto again = m.next_heartbeat();
  EXPECT_TRUE(again.subscribed_topic_names);
  EXPECT_TRUE(again.owned);
  EXPECT_TRUE(again.rebalance_timeout_ms);
}

TEST(consumer_membership, a_target_is_reconciled_once_then_acknowledged_with_what_is_owned) {
  auto m = subscribed();
  (void)m.next_heartbeat();
  const partitions_by_id first = {{topic_a, {0, 1, 2, 3}}};
  ASSERT_EQ(m.on_answer(0, std::nullopt, 1, 500, first), 0);
  EXPECT_EQ(m.current(), state::reconciling);
  auto target = m.take_target();
  ASSERT_TRUE(target);
  EXPECT_EQ(*target, first);
  EXPECT_FALSE(m.take_target());  // once
  m.reconciled(*target);
  EXPECT_EQ(m.current(), state::acknowledging);
  EXPECT_TRUE(m.heartbeat_due_now());
  auto ack = m.next_heartbeat();
  ASSERT_TRUE(ack.owned);
  EXPECT_EQ(*ack.owned, first);
  EXPECT_EQ(m.current(), state::stable);

  // A smaller target: the poll thread revokes what it dropped first.
  const partitions_by_id second = {{topic_a, {0, 1}}, {topic_b, {0}}};
  ASSERT_EQ(m.on_answer(0, std::nullopt, 2, 500, second), 0);
  auto t2 = m.take_target();
  ASSERT_TRUE(t2);
  EXPECT_EQ(partitions_minus(m.owned(), *t2), (partitions_by_id{{topic_a, {2, 3}}}));
  EXPECT_EQ(partitions_minus(*t2, m.owned()), (partitions_by_id{{topic_b, {0}}}));
  // A newer target while reconciling: reconciled next, no acknowledgement state in between.
  const partitions_by_id third = {{topic_a, {0}}};
  ASSERT_EQ(m.on_answer(0, std::nullopt, 3, 500, third), 0);
  m.reconciled(*t2);
  EXPECT_EQ(m.current(), state::reconciling);
  auto t3 = m.take_target();
  ASSERT_TRUE(t3);
  EXPECT_EQ(*t3, third);
  m.reconciled(*t3);
  EXPECT_EQ(m.current(), state::acknowledging);
  EXPECT_EQ(*m.next_heartbeat().owned, third);
}

TEST(consumer_membership, fencing_loses_the_partitions_and_joins_again_at_epoch_zero) {
  auto m = subscribed();
  (void)m.next_heartbeat();
  ASSERT_EQ(m.on_answer(0, std::nullopt, 4, 500, partitions_by_id{{topic_a, {0}}}), 0);
  m.reconciled(*m.take_target());
  (void)m.next_heartbeat();
  ASSERT_EQ(m.on_answer(static_cast<int16_t>(error_code::fenced_member_epoch), std::nullopt, 0, 0,
                        std::nullopt),
            0);
  EXPECT_EQ(m.current(), state::fenced);
  EXPECT_FALSE(m.wants_heartbeats());  // until the poll thread has lost the partitions
  m.rejoin();
  EXPECT_EQ(m.current(), state::joining);
  auto join = m.next_heartbeat();
  EXPECT_EQ(join.member_id, "member-1");
  EXPECT_EQ(join.member_epoch, 0);
  EXPECT_TRUE(join.owned && join.owned->empty());
  EXPECT_TRUE(join.subscribed_topic_names);
}

TEST(consumer_membership, other_errors_are_fatal_and_leaving_sends_minus_one_or_minus_two) {
  auto m = subscribed();
  (void)m.next_heartbeat();
  const auto unsupported = static_cast<int16_t>(error_code::unsupported_assignor);
  EXPECT_EQ(m.on_answer(unsupported, std::nullopt, 0, 0, std::nullopt), unsupported);
  EXPECT_EQ(m.current(), state::fatal);

  auto dynamic = subscribed();
  (void)dynamic.next_heartbeat();
  ASSERT_EQ(dynamic.on_answer(0, std::nullopt, 1, 500, std::nullopt), 0);
  dynamic.leave();
  EXPECT_TRUE(dynamic.heartbeat_due_now());
  EXPECT_EQ(dynamic.next_heartbeat().member_epoch, -1);
  ASSERT_EQ(dynamic.on_answer(0, std::nullopt, -1, 0, std::nullopt), 0);
  EXPECT_EQ(dynamic.current(), state::left);

  consumer_membership fixed("member-2", std::string("instance-1"), std::nullopt, 300000);
  fixed.subscribe({"a"});
  auto join = fixed.next_heartbeat();
  EXPECT_EQ(join.instance_id, "instance-1");
  EXPECT_FALSE(join.server_assignor);  // unset: the coordinator's first assignor
  ASSERT_EQ(fixed.on_answer(0, std::nullopt, 1, 500, std::nullopt), 0);
  fixed.leave();
  auto leave = fixed.next_heartbeat();
  EXPECT_EQ(leave.member_epoch, -2);
  EXPECT_EQ(leave.instance_id, "instance-1");
}

// max.poll.interval.ms passed without a poll: the member leaves (-1, or -2 when static), is then
// stale (no heartbeats, a late assignment ignored) until the poll thread loses its partitions
// and rejoins at epoch 0 with every field, owning nothing.
TEST(consumer_membership, a_stale_member_leaves_then_rejoins_owning_nothing) {
  auto m = subscribed();
  (void)m.next_heartbeat();
  ASSERT_EQ(m.on_answer(0, std::nullopt, 3, 500, partitions_by_id{{topic_a, {0, 1}}}), 0);
  auto target = m.take_target();
  ASSERT_TRUE(target);
  m.reconciled(*target);
  (void)m.next_heartbeat();
  ASSERT_EQ(m.current(), state::stable);
  EXPECT_TRUE(m.in_group());

  m.leave_stale();
  EXPECT_EQ(m.current(), state::leaving);
  EXPECT_FALSE(m.in_group());
  EXPECT_TRUE(m.heartbeat_due_now());
  EXPECT_EQ(m.next_heartbeat().member_epoch, -1);
  ASSERT_EQ(m.on_answer(0, std::nullopt, -1, 0, std::nullopt), 0);
  EXPECT_EQ(m.current(), state::stale);
  EXPECT_FALSE(m.wants_heartbeats());
  m.leave_stale();  // not in the group: nothing happens
  EXPECT_EQ(m.current(), state::stale);
  // An answer to a heartbeat sent before the leave changes nothing.
  ASSERT_EQ(m.on_answer(0, std::nullopt, 4, 500, partitions_by_id{{topic_b, {0}}}), 0);
  EXPECT_EQ(m.current(), state::stale);
  EXPECT_FALSE(m.take_target());

  m.rejoin();
  EXPECT_EQ(m.current(), state::joining);
  auto join = m.next_heartbeat();
  EXPECT_EQ(join.member_id, "member-1");
  EXPECT_EQ(join.member_epoch, 0);
  EXPECT_EQ(join.rebalance_timeout_ms, 300000);
  EXPECT_EQ(join.subscribed_topic_names, (std::vector<std::string>{"a", "b"}));
  ASSERT_TRUE(join.owned);
  EXPECT_TRUE(join.owned->empty());

  // A failed leave still ends stale (best effort), and a static member leaves with -2.
  consumer_membership fixed("member-2", std::string("instance-1"), std::nullopt, 300000);
  fixed.subscribe({"a"});
  (void)fixed.next_heartbeat();
  ASSERT_EQ(fixed.on_answer(0, std::nullopt, 1, 500, std::nullopt), 0);
  fixed.leave_stale();
  EXPECT_EQ(fixed.next_heartbeat().member_epoch, -2);
  fixed.on_request_failed();
  EXPECT_EQ(fixed.current(), state::stale);
}

}  // namespace
}  // namespace tarn::client
