// The consumer's fetch session state without sockets: full then incremental requests, what an
// incremental one carries, and the fall back to a full fetch when the broker loses the session.
#include "client/fetch_session.h"

#include <gtest/gtest.h>

#include "protocol/error_codes.h"

namespace tarn::client {
namespace {

using protocol::error_code;
using state = fetch_session::partition_state;

const topic_partition a0{"a", 0};
const topic_partition a1{"a", 1};
const topic_partition b0{"b", 0};

std::vector<topic_partition> names(const fetch_session::request_plan& plan) {
  std::vector<topic_partition> out;
  for (const auto& [tp, s] : plan.partitions) out.push_back(tp);
  return out;
}

TEST(fetch_session, the_first_fetch_is_full_and_later_ones_carry_only_changes) {
  fetch_session s;
  std::map<topic_partition, state> wanted = {{a0, {10, 1024}}, {a1, {20, 1024}}};
  auto first = s.build(wanted, true);
  EXPECT_TRUE(first.full);
  EXPECT_EQ(first.session_id, 0);
  EXPECT_EQ(first.session_epoch, 0);
  EXPECT_EQ(names(first), (std::vector<topic_partition>{a0, a1}));
  s.on_response(0, 77);
  EXPECT_EQ(s.session_id(), 77);

  // Nothing moved: an incremental fetch with no partitions.
  auto idle = s.build(wanted, true);
  EXPECT_FALSE(idle.full);
  EXPECT_EQ(idle.session_id, 77);
  EXPECT_EQ(idle.session_epoch, 1);
  EXPECT_TRUE(idle.partitions.empty());
  EXPECT_TRUE(idle.forgotten.empty());
  s.on_response(0, 77);

  // a0 got records (its offset moved), b0 is new, a1 is no longer wanted.
  wanted = {{a0, {15, 1024}}, {b0, {0, 1024}}};
  auto changed = s.build(wanted, true);
  EXPECT_EQ(changed.session_epoch, 2);
  EXPECT_EQ(names(changed), (std::vector<topic_partition>{a0, b0}));
  EXPECT_EQ(changed.partitions[0].second.fetch_offset, 15);
  EXPECT_EQ(changed.forgotten, std::vector<topic_partition>{a1});
  s.on_response(0, 77);
  EXPECT_EQ(s.build(wanted, true).session_epoch, 3);
}

TEST(fetch_session, a_lost_session_makes_the_next_fetch_full) {
  for (auto err :
       {error_code::fetch_session_id_not_found, error_code::invalid_fetch_session_epoch}) {
    fetch_session s;
    const std::map<topic_partition, state> wanted = {{a0, {10, 1024}}};
    (void)s.build(wanted, true);
    s.on_response(0, 5);
    auto inc = s.build(wanted, true);
    ASSERT_FALSE(inc.full);
    s.on_response(static_cast<int16_t>(err), 0);  // evicted by the broker
    auto again = s.build(wanted, true);
    EXPECT_TRUE(again.full);
    EXPECT_EQ(again.session_id, 0);
    EXPECT_EQ(again.session_epoch, 0);
    EXPECT_EQ(names(again), std::vector<topic_partition>{a0});
  }
  fetch_session s;
  const std::map<topic_partition, state> wanted = {{a0, {10, 1024}}};
  (void)s.build(wanted, true);
  s.on_response(0, 5);
  (void)s.build(wanted, true);
  s.on_failure();  // no answer
  EXPECT_TRUE(s.build(wanted, true).full);
}

TEST(fetch_session, without_a_session_from_the_broker_or_below_v7_every_fetch_is_full) {
  fetch_session s;
  const std::map<topic_partition, state> wanted = {{a0, {10, 1024}}};
  (void)s.build(wanted, true);
  s.on_response(0, 0);  // the broker's cache is full (or sessions are off)
  auto next = s.build(wanted, true);
  EXPECT_TRUE(next.full);
  EXPECT_EQ(next.session_epoch, 0);

  // An incremental answer with session id 0: the broker closed the session.
  fetch_session closed;
  (void)closed.build(wanted, true);
  closed.on_response(0, 8);
  ASSERT_FALSE(closed.build({}, true).full);  // everything forgotten
  closed.on_response(0, 0);
  EXPECT_TRUE(closed.build(wanted, true).full);

  fetch_session old;
  auto v6 = old.build(wanted, false);
  EXPECT_TRUE(v6.full);
  EXPECT_EQ(v6.session_epoch, -1);
  old.on_response(0, 0);
  EXPECT_EQ(old.build(wanted, false).session_epoch, -1);
}

}  // namespace
}  // namespace tarn::client
