// The share-partition state machine without sockets: every transition, lock expiry, the
// delivery-count limit, SPSO advance and the acknowledgement error codes Kafka 4.4 gives.
#include "coordinator/share_partition.h"

#include <gtest/gtest.h>

#include <limits>

namespace tarn::coordinator {
namespace {

using protocol::error_code;

share_partition_config cfg(int32_t lock_ms = 1000, int32_t limit = 3, int32_t locks = 100) {
  return {lock_ms, limit, locks, true};
}

std::vector<fetched_batch> batch(int64_t first, int64_t last, bool control = false) {
  return {{first, last, control}};
}

acknowledgement_batch ack(int64_t first, int64_t last, std::vector<int8_t> types) {
  return {first, last, std::move(types)};
}

constexpr int8_t gap = 0, accept = 1, release = 2, reject = 3, renew = 4;

record_state state(const share_partition& p, int64_t o) { return p.record(o)->state; }

TEST(share_partition, acquires_new_records_and_advances_over_accepted_prefix) {
  share_partition p(cfg(), 0);
  EXPECT_EQ(p.next_fetch_offset(0), 0);
  auto got = p.acquire("a", batch(0, 4), 500, 0);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], (acquired_range{0, 4, 1}));
  EXPECT_EQ(p.end_offset(), 5);
  EXPECT_EQ(p.acquired_count(), 5u);
  EXPECT_EQ(p.record(2)->member_id, "a");
  EXPECT_EQ(p.record(2)->lock_deadline_ms, 1000);
  // Nothing left to acquire below the SPEO: the next fetch reads new records.
  EXPECT_EQ(p.next_fetch_offset(10), 5);

  std::vector<acknowledgement_batch> acks = {ack(0, 1, {accept})};
  EXPECT_EQ(p.acknowledge("a", acks, 10), error_code::none);
  EXPECT_EQ(p.start_offset(), 2);
  // Acknowledged out of order: the SPSO waits for the prefix.
  acks = {ack(3, 3, {accept})};
  EXPECT_EQ(p.acknowledge("a", acks, 10), error_code::none);
  EXPECT_EQ(p.start_offset(), 2);
  EXPECT_EQ(state(p, 3), record_state::acknowledged);
  acks = {ack(2, 2, {reject}), ack(4, 4, {accept})};
  EXPECT_EQ(p.acknowledge("a", acks, 10), error_code::none);
  EXPECT_EQ(p.start_offset(), 5);
  EXPECT_EQ(p.in_flight(), 0u);
}

TEST(share_partition, release_makes_records_available_with_the_next_delivery_count) {
  share_partition p(cfg(), 0);
  p.acquire("a", batch(0, 2), 500, 0);
  std::vector<acknowledgement_batch> acks = {ack(0, 2, {accept, release, accept})};
  EXPECT_EQ(p.acknowledge("a", acks, 1), error_code::none);
  EXPECT_EQ(p.start_offset(), 1);
  EXPECT_EQ(state(p, 1), record_state::available);
  EXPECT_EQ(p.record(1)->member_id, "");
  EXPECT_EQ(p.next_fetch_offset(1), 1);
  // Another member reads from 1: only the released record is acquired again (2 is finished).
  auto got = p.acquire("b", batch(0, 2), 500, 2);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], (acquired_range{1, 1, 2}));
  EXPECT_EQ(p.record(1)->member_id, "b");
}

TEST(share_partition, reject_and_gap_archive_and_are_never_redelivered) {
  share_partition p(cfg(), 10);
  p.acquire("a", batch(10, 12), 500, 0);
  std::vector<acknowledgement_batch> acks = {ack(11, 12, {reject, gap})};
  EXPECT_EQ(p.acknowledge("a", acks, 1), error_code::none);
  EXPECT_EQ(state(p, 11), record_state::archived);
  EXPECT_EQ(state(p, 12), record_state::archived);
  acks = {ack(10, 10, {release})};
  EXPECT_EQ(p.acknowledge("a", acks, 1), error_code::none);
  auto got = p.acquire("b", batch(10, 12), 500, 2);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], (acquired_range{10, 10, 2}));
}

TEST(share_partition, lock_expiry_releases_to_another_member) {
  share_partition p(cfg(1000), 0);
  p.acquire("a", batch(0, 1), 500, 0);
  EXPECT_EQ(p.next_lock_deadline(), 1000);
  EXPECT_EQ(p.next_fetch_offset(999), 2);   // still locked
  EXPECT_EQ(p.next_fetch_offset(1000), 0);  // expired: back to Available
  EXPECT_EQ(state(p, 0), record_state::available);
  EXPECT_FALSE(p.next_lock_deadline().has_value());
  // The late acknowledgement of the first holder is refused, the state unchanged.
  std::vector<acknowledgement_batch> acks = {ack(0, 1, {accept})};
  EXPECT_EQ(p.acknowledge("a", acks, 1001), error_code::invalid_record_state);
  auto got = p.acquire("b", batch(0, 1), 500, 1001);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], (acquired_range{0, 1, 2}));
  EXPECT_EQ(p.acknowledge("b", acks, 1002), error_code::none);
  EXPECT_EQ(p.start_offset(), 2);
}

TEST(share_partition, renew_extends_the_lock) {
  share_partition p(cfg(1000), 0);
  p.acquire("a", batch(0, 0), 500, 0);
  std::vector<acknowledgement_batch> acks = {ack(0, 0, {renew})};
  EXPECT_EQ(p.acknowledge("a", acks, 900), error_code::none);
  EXPECT_EQ(state(p, 0), record_state::acquired);
  p.expire_locks(1500);
  EXPECT_EQ(state(p, 0), record_state::acquired);
  p.expire_locks(1900);
  EXPECT_EQ(state(p, 0), record_state::available);
}

// share.renew.acknowledge.enable=false: RENEW is INVALID_RECORD_STATE and nothing in the
// acknowledgement applies (the lock keeps its deadline).
TEST(share_partition, renew_refused_when_disabled) {
  share_partition_config c = cfg(1000);
  c.renew_acknowledge_enabled = false;
  share_partition p(c, 0);
  p.acquire("a", batch(0, 1), 500, 0);
  std::vector<acknowledgement_batch> acks = {ack(0, 0, {accept}), ack(1, 1, {renew})};
  EXPECT_EQ(p.acknowledge("a", acks, 900), error_code::invalid_record_state);
  EXPECT_EQ(state(p, 0), record_state::acquired);
  p.expire_locks(1000);
  EXPECT_EQ(state(p, 1), record_state::available);
}

TEST(share_partition, delivery_count_limit_archives_a_poison_record) {
  share_partition p(cfg(1000, 3), 0);
  for (int delivery = 1; delivery <= 2; ++delivery) {
    auto got = p.acquire("a", batch(0, 1), 500, delivery * 10);
    ASSERT_EQ(got.size(), 1u) << delivery;
    EXPECT_EQ(got[0], (acquired_range{0, 1, static_cast<int16_t>(delivery)}));
    std::vector<acknowledgement_batch> acks = {ack(0, 1, {release})};
    EXPECT_EQ(p.acknowledge("a", acks, delivery * 10 + 1), error_code::none);
  }
  // The last delivery of each record goes out alone (Kafka 4.4's throttling, below).
  for (int64_t o = 0; o <= 1; ++o) {
    auto got = p.acquire("a", batch(0, 1), 500, 30 + o);
    ASSERT_EQ(got.size(), 1u);
    EXPECT_EQ(got[0], (acquired_range{o, o, 3}));
    std::vector<acknowledgement_batch> acks = {ack(o, o, {release})};
    EXPECT_EQ(p.acknowledge("a", acks, 40 + o), error_code::none);
  }
  // Released at the limit: archived, and the SPSO moves past it.
  EXPECT_EQ(p.in_flight(), 0u);
  EXPECT_EQ(p.start_offset(), 2);
  EXPECT_EQ(p.next_fetch_offset(100), 2);
}

// Kafka 4.4's SharePartition: from half the delivery-count limit (rounded up, at least 2), a log
// batch's Available records go out in halving numbers, alone (nothing before them or after them
// in one acquisition), and a record on its last delivery by itself.
TEST(share_partition, records_near_the_delivery_limit_are_handed_out_in_halving_numbers) {
  share_partition p(cfg(1000, 6), 0);  // throttled from 3 deliveries
  auto release_all = [&](const std::vector<acquired_range>& got, int64_t now) {
    for (const auto& r : got) {
      std::vector<acknowledgement_batch> acks = {ack(r.first_offset, r.last_offset, {release})};
      ASSERT_EQ(p.acknowledge("a", acks, now), error_code::none);
    }
  };
  for (int delivery = 1; delivery <= 3; ++delivery) {  // below the threshold: whole
    auto got = p.acquire("a", batch(0, 7), 500, delivery);
    ASSERT_EQ(got, (std::vector<acquired_range>{{0, 7, static_cast<int16_t>(delivery)}}));
    release_all(got, delivery);
  }
  // Delivered 3 times: 8 >> 1 = 4 records; then those (4 deliveries) 8 >> 2 = 2.
  auto got = p.acquire("a", batch(0, 7), 500, 10);
  EXPECT_EQ(got, (std::vector<acquired_range>{{0, 3, 4}}));
  release_all(got, 10);
  got = p.acquire("a", batch(0, 7), 500, 11);
  EXPECT_EQ(got, (std::vector<acquired_range>{{0, 1, 5}}));
  release_all(got, 11);
  // Records 0-1 are on their last delivery (5 of 6): each alone.
  got = p.acquire("a", batch(0, 7), 500, 12);
  EXPECT_EQ(got, (std::vector<acquired_range>{{0, 0, 6}}));
  got = p.acquire("a", batch(0, 7), 500, 13);
  EXPECT_EQ(got, (std::vector<acquired_range>{{1, 1, 6}}));
  // 2-3 (4 deliveries) come before 4-7 (3): the first throttled record sets 8 >> 2 = 2.
  got = p.acquire("a", batch(0, 7), 500, 14);
  EXPECT_EQ(got, (std::vector<acquired_range>{{2, 3, 5}}));
  // Nothing new after throttled records, nor throttled ones after others.
  share_partition q(cfg(1000, 6), 0);
  for (int delivery = 1; delivery <= 3; ++delivery) {
    ASSERT_EQ(q.acquire("a", batch(0, 3), 500, delivery).size(), 1u);
    std::vector<acknowledgement_batch> acks = {ack(0, 3, {release})};
    ASSERT_EQ(q.acknowledge("a", acks, delivery), error_code::none);
  }
  std::vector<fetched_batch> more = {{0, 3}, {4, 9}};
  got = q.acquire("a", more, 500, 20);
  EXPECT_EQ(got, (std::vector<acquired_range>{{0, 1, 4}}));
  EXPECT_EQ(q.end_offset(), 4);  // 4-9 not taken
  got = q.acquire("b", more, 500, 21);
  EXPECT_EQ(got, (std::vector<acquired_range>{{2, 3, 4}}));
  got = q.acquire("b", more, 500, 22);
  EXPECT_EQ(got, (std::vector<acquired_range>{{4, 9, 1}}));
  std::vector<acknowledgement_batch> acks = {ack(4, 4, {release})};
  ASSERT_EQ(q.acknowledge("b", acks, 23), error_code::none);
  got = q.acquire("a", batch(4, 9), 500, 24);  // 4 is back at 1 delivery: not throttled
  EXPECT_EQ(got, (std::vector<acquired_range>{{4, 4, 2}}));
}

TEST(share_partition, delivery_count_limit_on_lock_expiry_and_member_release) {
  share_partition p(cfg(100, 2), 0);
  p.acquire("a", batch(0, 0), 500, 0);
  p.expire_locks(100);
  EXPECT_EQ(state(p, 0), record_state::available);
  p.acquire("b", batch(0, 1), 500, 200);
  EXPECT_EQ(p.record(0)->delivery_count, 2);
  p.release_member("b", 250);
  // Record 0 reached the limit (archived, SPSO moves); record 1 goes back.
  EXPECT_EQ(p.start_offset(), 1);
  EXPECT_EQ(state(p, 1), record_state::available);
  EXPECT_EQ(p.record(1)->delivery_count, 1);
}

TEST(share_partition, acknowledgements_of_records_not_held_are_invalid_record_state) {
  share_partition p(cfg(), 5);
  p.acquire("a", batch(5, 9), 500, 0);
  std::vector<acknowledgement_batch> acks = {ack(4, 5, {accept})};  // below the SPSO
  EXPECT_EQ(p.acknowledge("a", acks, 1), error_code::invalid_record_state);
  acks = {ack(9, 10, {accept})};  // past the SPEO
  EXPECT_EQ(p.acknowledge("a", acks, 1), error_code::invalid_record_state);
  acks = {ack(5, 5, {accept})};  // another member's
  EXPECT_EQ(p.acknowledge("b", acks, 1), error_code::invalid_record_state);
  // All or nothing: a good batch before a bad one changes nothing.
  acks = {ack(5, 6, {accept}), ack(8, 10, {accept})};
  EXPECT_EQ(p.acknowledge("a", acks, 1), error_code::invalid_record_state);
  EXPECT_EQ(state(p, 5), record_state::acquired);
  EXPECT_EQ(p.start_offset(), 5);
  // Acknowledging twice: the second finds it no longer Acquired.
  acks = {ack(5, 5, {accept})};
  EXPECT_EQ(p.acknowledge("a", acks, 1), error_code::none);
  acks = {ack(6, 6, {accept})};
  EXPECT_EQ(p.acknowledge("a", acks, 1), error_code::none);
  EXPECT_EQ(p.acknowledge("a", acks, 1), error_code::invalid_record_state);
}

TEST(share_partition, validation_of_batches_is_invalid_request) {
  auto check = [](std::vector<acknowledgement_batch> b, int8_t max = 3) {
    return validate_acknowledgement_batches(b, max);
  };
  EXPECT_EQ(check({ack(0, 3, {accept}), ack(4, 5, {accept, reject})}), error_code::none);
  EXPECT_EQ(check({ack(3, 2, {accept})}), error_code::invalid_request);  // first > last
  EXPECT_EQ(check({ack(0, 5, {accept}), ack(4, 6, {accept})}), error_code::invalid_request);
  EXPECT_EQ(check({ack(5, 6, {accept}), ack(0, 1, {accept})}), error_code::invalid_request);
  EXPECT_EQ(check({ack(0, 2, {})}), error_code::invalid_request);                // no type
  EXPECT_EQ(check({ack(0, 2, {accept, accept})}), error_code::invalid_request);  // 2 for 3
  EXPECT_EQ(check({ack(0, 0, {5})}), error_code::invalid_request);
  EXPECT_EQ(check({ack(0, 0, {-1})}), error_code::invalid_request);
  EXPECT_EQ(check({ack(0, 0, {renew})}), error_code::invalid_request);  // v1: no RENEW
  EXPECT_EQ(check({ack(0, 0, {renew})}, 4), error_code::none);
  constexpr int64_t lowest = std::numeric_limits<int64_t>::min();
  constexpr int64_t highest = std::numeric_limits<int64_t>::max();
  EXPECT_EQ(check({ack(lowest, highest, {accept, accept})}), error_code::invalid_request);
  EXPECT_EQ(check({ack(-5, 0, {accept})}), error_code::invalid_request);  // below -1
  // A huge range with one type passes the checks; the share-partition refuses it at once.
  EXPECT_EQ(check({ack(0, highest, {accept})}), error_code::none);
  share_partition p(cfg(), 0);
  p.acquire("a", batch(0, 1), 500, 0);
  std::vector<acknowledgement_batch> huge = {ack(0, highest, {accept})};
  EXPECT_EQ(p.acknowledge("a", huge, 1), error_code::invalid_record_state);
}

TEST(share_partition, max_records_and_max_record_locks_bound_acquisition) {
  share_partition p(cfg(1000, 5, 4), 0);
  auto got = p.acquire("a", batch(0, 9), 3, 0);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], (acquired_range{0, 2, 1}));
  got = p.acquire("b", batch(3, 9), 10, 0);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], (acquired_range{3, 3, 1}));  // 4 records in flight: the limit
  EXPECT_FALSE(p.next_fetch_offset(1).has_value());
  std::vector<acknowledgement_batch> acks = {ack(0, 2, {accept})};
  EXPECT_EQ(p.acknowledge("a", acks, 1), error_code::none);
  EXPECT_EQ(p.next_fetch_offset(1), 4);
}

// ShareAcquireMode batch_optimized (Kafka's default): a log batch begun is taken whole, past
// MaxRecords and past the record-lock limit, as Kafka's SharePartition rounds both up to the
// batch's last offset; records given back are taken again one by one up to MaxRecords.
TEST(share_partition, batch_optimized_mode_takes_whole_log_batches) {
  share_partition p(cfg(1000, 5, 6), 0);
  const std::vector<fetched_batch> read = {{0, 3, false}, {4, 7, false}, {8, 11, false}};
  auto got = p.acquire("a", read, 2, 0, share_acquire_mode::batch_optimized);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], (acquired_range{0, 3, 1}));
  got = p.acquire("b", std::span(read).subspan(1), 10, 0, share_acquire_mode::batch_optimized);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], (acquired_range{4, 7, 1}));  // 8 in flight: the batch ends past the limit
  EXPECT_EQ(p.end_offset(), 8);
  EXPECT_FALSE(p.next_fetch_offset(1).has_value());
  std::vector<acknowledgement_batch> acks = {ack(0, 3, {release})};
  EXPECT_EQ(p.acknowledge("a", acks, 1), error_code::none);
  // Records given back are taken to their batch's end as well (Kafka: the whole in-flight batch).
  got = p.acquire("c", std::span(read).first(1), 2, 1, share_acquire_mode::batch_optimized);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], (acquired_range{0, 3, 2}));
  // record_limit: MaxRecords exactly, the rest of the batch left for the next fetch.
  share_partition q(cfg(1000, 5, 100), 0);
  got = q.acquire("a", read, 6, 0, share_acquire_mode::record_limit);
  ASSERT_EQ(got.size(), 1u);
  EXPECT_EQ(got[0], (acquired_range{0, 5, 1}));
  EXPECT_EQ(q.end_offset(), 6);
  acks = {ack(0, 5, {release})};
  EXPECT_EQ(q.acknowledge("a", acks, 1), error_code::none);
  got = q.acquire("b", read, 3, 1, share_acquire_mode::record_limit);  // given back: exactly 3
  EXPECT_EQ(got, (std::vector<acquired_range>{{0, 2, 2}}));
}

TEST(share_partition, control_batches_and_log_gaps_are_archived) {
  share_partition p(cfg(), 0);
  std::vector<fetched_batch> read = {{0, 1, false}, {2, 2, true}, {5, 6, false}};
  auto got = p.acquire("a", read, 500, 0);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], (acquired_range{0, 1, 1}));
  EXPECT_EQ(got[1], (acquired_range{5, 6, 1}));
  EXPECT_EQ(state(p, 2), record_state::archived);
  EXPECT_EQ(state(p, 3), record_state::archived);
  std::vector<acknowledgement_batch> acks = {ack(0, 1, {accept})};
  EXPECT_EQ(p.acknowledge("a", acks, 1), error_code::none);
  EXPECT_EQ(p.start_offset(), 5);
}

TEST(share_partition, reset_start_offset_forgets_what_is_below) {
  share_partition p(cfg(), 0);
  p.acquire("a", batch(0, 4), 500, 0);
  p.reset_start_offset(3);
  EXPECT_EQ(p.start_offset(), 3);
  EXPECT_EQ(p.end_offset(), 5);
  p.reset_start_offset(10);
  EXPECT_EQ(p.start_offset(), 10);
  EXPECT_EQ(p.in_flight(), 0u);
}

// What the coordinator does when a __share_group_state write fails: the change is undone, from
// records changed, records dropped off the front and records added past the SPEO alike.
TEST(share_partition, undo_puts_back_the_state_of_begin_change) {
  share_partition p(cfg(1000, 3, 100), 0);
  p.acquire("a", batch(0, 9), 500, 0);
  std::vector<acknowledgement_batch> acks = {ack(0, 3, {accept}), ack(5, 5, {release})};
  ASSERT_EQ(p.acknowledge("a", acks, 10), error_code::none);
  const auto before = p.persisted_batches();
  ASSERT_EQ(p.start_offset(), 4);

  p.begin_change();
  // The rest acknowledged (the SPSO moves over all of it), then new records past the SPEO, then
  // lock expiry of those at a later time.
  acks = {ack(4, 4, {accept}), ack(6, 9, {reject})};
  ASSERT_EQ(p.acknowledge("a", acks, 20), error_code::none);
  p.acquire("b", batch(5, 14), 500, 20);
  EXPECT_EQ(p.start_offset(), 5);
  EXPECT_EQ(p.end_offset(), 15);
  p.expire_locks(5000);
  p.undo();
  EXPECT_EQ(p.start_offset(), 4);
  EXPECT_EQ(p.end_offset(), 10);
  EXPECT_EQ(p.persisted_batches(), before);
  EXPECT_EQ(p.record(4)->member_id, "a");
  EXPECT_EQ(p.record(4)->lock_deadline_ms, 1000);
  EXPECT_EQ(state(p, 5), record_state::available);
  EXPECT_EQ(p.acquired_count(), 5u);  // 4, 6, 7, 8, 9

  // keep() ends the journal: a later undo() changes nothing.
  p.begin_change();
  acks = {ack(4, 4, {accept})};
  ASSERT_EQ(p.acknowledge("a", acks, 20), error_code::none);
  p.keep();
  p.undo();
  EXPECT_EQ(p.start_offset(), 5);
}

// The earliest lock deadline is kept instead of scanned for (every fetch and acknowledgement
// expires locks first): it must stay right as locks are taken, acknowledged, renewed, expired and
// put back by undo().
TEST(share_partition, lock_deadlines_stay_right_without_a_scan_each_time) {
  share_partition p(cfg(1000, 5, 100), 0);
  p.acquire("a", batch(0, 1), 500, 0);    // locked until 1000
  p.acquire("b", batch(2, 3), 500, 500);  // until 1500
  EXPECT_EQ(p.next_lock_deadline(), 1000);
  std::vector<acknowledgement_batch> acks = {ack(0, 1, {accept})};
  ASSERT_EQ(p.acknowledge("a", acks, 600), error_code::none);
  EXPECT_EQ(p.next_lock_deadline(), 1500);
  acks = {ack(2, 2, {renew})};  // 2 until 1700, 3 still until 1500
  ASSERT_EQ(p.acknowledge("b", acks, 700), error_code::none);
  p.expire_locks(1499);
  EXPECT_EQ(p.acquired_count(), 2u);
  p.expire_locks(1500);
  EXPECT_EQ(state(p, 3), record_state::available);
  EXPECT_EQ(state(p, 2), record_state::acquired);
  EXPECT_EQ(p.next_lock_deadline(), 1700);
  // An expiry taken back by undo(): the lock is there again, with its deadline, and expires.
  p.begin_change();
  p.expire_locks(2000);
  EXPECT_FALSE(p.next_lock_deadline().has_value());
  p.undo();
  EXPECT_EQ(p.next_lock_deadline(), 1700);
  EXPECT_EQ(p.next_fetch_offset(1699), 3);
  p.expire_locks(1700);
  EXPECT_EQ(p.acquired_count(), 0u);
  EXPECT_FALSE(p.next_lock_deadline().has_value());
}

// Where the next fetch reads and how much it can take: a record given back behind the last answer
// is found again, and what can be acquired is the Available records from there plus the record
// locks left.
TEST(share_partition, next_fetch_offset_finds_records_given_back_behind_it) {
  share_partition p(cfg(1000, 5, 100), 0);
  p.acquire("a", batch(0, 59), 500, 0);
  EXPECT_EQ(p.next_fetch_offset(0), 60);
  EXPECT_EQ(p.acquirable_from(60), 40);
  std::vector<acknowledgement_batch> acks = {ack(10, 19, {release})};
  ASSERT_EQ(p.acknowledge("a", acks, 10), error_code::none);
  EXPECT_EQ(p.next_fetch_offset(10), 10);
  EXPECT_EQ(p.acquirable_from(10), 50);  // 10..19 and 40 new ones
  p.acquire("b", batch(10, 14), 500, 10);
  EXPECT_EQ(p.next_fetch_offset(10), 15);
  EXPECT_EQ(p.acquirable_from(15), 45);
  // A member leaving gives back records before that.
  p.release_member("b", 20);
  EXPECT_EQ(p.next_fetch_offset(20), 10);
  // The record locks full and nothing Available: nothing to read.
  p.acquire("c", batch(10, 99), 500, 20);
  EXPECT_FALSE(p.next_fetch_offset(20).has_value());
}

// The share coordinator writes a share-partition only when it changed.
TEST(share_partition, changed_since_persisted_follows_every_change) {
  share_partition p(cfg(1000, 5, 100), 0);
  EXPECT_TRUE(p.changed_since_persisted());  // never written
  p.mark_persisted();
  EXPECT_EQ(p.next_fetch_offset(0), 0);
  EXPECT_FALSE(p.changed_since_persisted());
  p.acquire("a", batch(0, 4), 500, 0);
  EXPECT_TRUE(p.changed_since_persisted());
  p.mark_persisted();
  std::vector<acknowledgement_batch> acks = {ack(0, 0, {accept})};
  ASSERT_EQ(p.acknowledge("a", acks, 10), error_code::none);
  EXPECT_TRUE(p.changed_since_persisted());
  p.mark_persisted();
  p.expire_locks(999);
  EXPECT_FALSE(p.changed_since_persisted());
  p.expire_locks(1000);
  EXPECT_TRUE(p.changed_since_persisted());
  p.mark_persisted();
  p.reset_start_offset(3);
  EXPECT_TRUE(p.changed_since_persisted());
}

// A read in chunks: the first chunk's records could not be acquired (the record locks were full)
// and, by the time the second chunk is offered, acknowledgements freed the locks. The offsets
// between the SPEO and the second chunk are not gaps of the log: nothing is archived, nothing
// acquired, and the next fetch reads from the SPEO again.
TEST(share_partition, batches_starting_past_the_end_offset_archive_nothing) {
  share_partition p(cfg(1000, 3, 100), 0);
  ASSERT_EQ(p.acquire("a", batch(0, 99), 500, 0).size(), 1u);  // the 100 locks are full
  EXPECT_TRUE(p.acquire("b", batch(100, 149), 500, 0).empty());
  std::vector<acknowledgement_batch> acks = {ack(0, 99, {accept})};
  ASSERT_EQ(p.acknowledge("a", acks, 10), error_code::none);
  EXPECT_TRUE(p.acquire("b", batch(150, 199), 500, 10).empty());
  EXPECT_EQ(p.start_offset(), 100);
  EXPECT_EQ(p.end_offset(), 100);
  EXPECT_EQ(p.next_fetch_offset(10), 100);
  // Gaps between the batches of one read are the log's: archived.
  std::vector<fetched_batch> read = {{100, 109, false}, {120, 129, false}};
  auto got = p.acquire("b", read, 500, 10);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[1], (acquired_range{120, 129, 1}));
  EXPECT_EQ(state(p, 115), record_state::archived);
}

// share.isolation.level=read_committed: producer 7's transaction at 0-1 aborts (marker at 3),
// producer 8's at 2 commits (marker at 5), producer 7's next one (4) commits (marker at 6). The
// filter marks 0-1 aborted; acquisition archives them with the markers and delivers 2 and 4.
TEST(share_partition, aborted_transactions_are_archived_never_delivered) {
  aborted_batch_filter filter({{7, 0}});
  struct read_batch {
    int64_t base, last, producer;
    bool control;
  };
  const std::vector<read_batch> log = {{0, 1, 7, false}, {2, 2, 8, false}, {3, 3, 7, true},
                                       {4, 4, 7, false}, {5, 5, 8, true},  {6, 6, 7, true}};
  std::vector<fetched_batch> read;
  for (const auto& b : log) {
    fetched_batch f{b.base, b.last, b.control};
    f.aborted = filter.aborted(b.base, b.producer, true, b.control);
    read.push_back(f);
  }
  EXPECT_TRUE(read[0].aborted);
  for (size_t i = 1; i < read.size(); ++i) EXPECT_FALSE(read[i].aborted) << i;

  share_partition p(cfg(), 0);
  auto got = p.acquire("a", read, 500, 0);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got[0], (acquired_range{2, 2, 1}));
  EXPECT_EQ(got[1], (acquired_range{4, 4, 1}));
  EXPECT_EQ(p.start_offset(), 2);  // 0-1 finished (archived) at once
  std::vector<acknowledgement_batch> acks = {ack(2, 2, {accept}), ack(4, 4, {accept})};
  EXPECT_EQ(p.acknowledge("a", acks, 1), error_code::none);
  EXPECT_EQ(p.start_offset(), 7);
}

// A non-transactional batch of a producer with an aborted transaction open is delivered (it
// cannot be in the transaction), and the filter forgets a producer once its marker passed.
TEST(share_partition, the_aborted_filter_spares_non_transactional_batches) {
  aborted_batch_filter filter({{7, 10}, {7, 20}});
  EXPECT_FALSE(filter.aborted(5, 7, true, false));  // before the aborted transaction
  EXPECT_TRUE(filter.aborted(10, 7, true, false));
  EXPECT_FALSE(filter.aborted(11, 7, false, false));  // not transactional
  EXPECT_FALSE(filter.aborted(12, 7, true, true));    // the ABORT marker
  EXPECT_FALSE(filter.aborted(13, 7, true, false));   // a later transaction
  EXPECT_TRUE(filter.aborted(20, 7, true, false));
}

}  // namespace
}  // namespace tarn::coordinator
