// Tests of the record accumulator with an injected clock (times are passed in): the size roll,
// linger, the first-record rule, buffer.memory blocking, draining per broker and the
// idempotent producer's sequence numbers.
#include "client/record_accumulator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <thread>

#include "record/compression.h"
#include "record/record.h"
#include "record/record_batch.h"

namespace tarn::client {
namespace {

using namespace std::chrono_literals;

const topic_partition p0{"t", 0};
const topic_partition p1{"t", 1};
const topic_partition q0{"u", 0};

// Size of one record with a null key, no headers, `value_bytes` of value, deltas < 64.
size_t record_size(size_t value_bytes, int32_t offset_delta = 0) {
  std::string value(value_bytes, 'v');
  record::record_data r;
  r.offset_delta = offset_delta;
  r.value = record::as_bytes(value);
  return record::encoded_record_size(r);
}

struct accumulator : ::testing::Test {
  void concurrent_appends(record::compression_type codec);
  steady_time t0 = steady_time{} + 1h;
  std::string value = std::string(10, 'v');  // a 17-byte record (see size_test)

  accumulator_config config(int32_t batch_size) {
    accumulator_config c;
    c.batch_size = batch_size;
    c.linger = 5ms;
    c.idempotence = false;
    return c;
  }

  static result<append_outcome, producer_error> add(record_accumulator& acc,
                                                    const topic_partition& tp, std::string_view v,
                                                    steady_time now, delivery_callback cb = {},
                                                    bool abort_on_new_batch = false) {
    return acc.append(tp, 1000, std::nullopt, record::as_bytes(v), {}, std::move(cb), now,
                      abort_on_new_batch);
  }

  static leader_lookup leaders(std::map<std::pair<std::string, int32_t>, node_id> map) {
    return [map = std::move(map)](const topic_partition& tp) -> std::optional<node_id> {
      auto it = map.find({tp.topic, tp.partition});
      if (it == map.end()) return std::nullopt;
      return it->second;
    };
  }

  // Acknowledges a first batch of p0 (sequences 0-2), which opens the partition's pipeline (a
  // partition's first batch goes alone), then drains `n` batches of three records into `flying`.
  void open_pipeline_and_drain(record_accumulator& acc, const leader_lookup& l, int n,
                               std::vector<std::unique_ptr<producer_batch>>& flying) {
    for (int i = 0; i < 3; ++i) ASSERT_TRUE(add(acc, p0, value, t0));
    auto opening = drain_one(acc, l, 1, t0);
    ASSERT_EQ(opening.size(), 1u);
    acc.complete(std::move(opening[0]), 0, -1);
    for (int b = 0; b < n; ++b) {
      for (int i = 0; i < 3; ++i) ASSERT_TRUE(add(acc, p0, value, t0));
      auto drained = drain_one(acc, l, 1, t0);
      ASSERT_EQ(drained.size(), 1u);
      flying.push_back(std::move(drained[0]));
    }
  }

  static std::vector<std::unique_ptr<producer_batch>> drain_one(record_accumulator& acc,
                                                                const leader_lookup& leader,
                                                                node_id node, steady_time now,
                                                                int32_t max_request = 1 << 20) {
    auto drained = acc.drain(leader, {node}, max_request, now);
    return std::move(drained[node]);
  }
};

TEST_F(accumulator, size_test) {
  EXPECT_EQ(record_size(10), 17u);
  EXPECT_EQ(record_size(10, 2), 17u);
}

TEST_F(accumulator, size_roll_counts_the_size_the_batch_would_have) {
  // Exactly three 17-byte records fit 61 + 51 = 112 bytes.
  record_accumulator exact(config(112));
  auto l = leaders({{{"t", 0}, 1}});
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(add(exact, p0, value, t0));
  // Full to the byte: sealed at once, so the partition is ready without lingering.
  EXPECT_EQ(exact.ready(l, t0).ready_nodes, std::set<node_id>{1});
  auto fourth = add(exact, p0, value, t0);
  ASSERT_TRUE(fourth);
  EXPECT_TRUE(fourth->new_batch);
  auto batches = drain_one(exact, l, 1, t0);
  ASSERT_EQ(batches.size(), 1u);
  EXPECT_EQ(batches[0]->record_count(), 3);
  EXPECT_EQ(batches[0]->bytes().size(), 112u);

  // One byte less: the third record would make it 112 > 111, so it starts the next batch.
  record_accumulator tight(config(111));
  ASSERT_FALSE(add(tight, p0, value, t0)->new_batch == false);
  EXPECT_FALSE(add(tight, p0, value, t0)->new_batch);
  auto third = add(tight, p0, value, t0);
  ASSERT_TRUE(third);
  EXPECT_TRUE(third->new_batch);
  auto first = drain_one(tight, l, 1, t0);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0]->record_count(), 2);
  EXPECT_EQ(first[0]->bytes().size(), 61u + 2 * 17);
}

TEST_F(accumulator, first_record_always_goes_in) {
  record_accumulator acc(config(10));  // smaller than any batch
  auto l = leaders({{{"t", 0}, 1}});
  std::string big(100, 'x');
  auto first = add(acc, p0, big, t0);
  ASSERT_TRUE(first);
  EXPECT_TRUE(first->new_batch);
  EXPECT_TRUE(first->batch_full);  // nothing can follow it
  EXPECT_EQ(first->appended_bytes, 61u + record_size(100));
  auto second = add(acc, p0, value, t0);
  ASSERT_TRUE(second);
  EXPECT_TRUE(second->new_batch);
  auto batches = drain_one(acc, l, 1, t0);
  ASSERT_EQ(batches.size(), 1u);  // one batch per partition per request
  EXPECT_EQ(batches[0]->record_count(), 1);
  EXPECT_EQ(batches[0]->bytes().size(), 61u + record_size(100));
  auto rest = drain_one(acc, l, 1, t0);
  ASSERT_EQ(rest.size(), 1u);
  EXPECT_EQ(rest[0]->record_count(), 1);
}

TEST_F(accumulator, linger_from_the_first_record) {
  record_accumulator acc(config(16384));
  auto l = leaders({{{"t", 0}, 1}});
  ASSERT_TRUE(add(acc, p0, value, t0));
  ASSERT_TRUE(add(acc, p0, value, t0 + 3ms));  // a later record does not restart the linger
  auto early = acc.ready(l, t0 + 4ms);
  EXPECT_TRUE(early.ready_nodes.empty());
  ASSERT_TRUE(early.next_ready_check);
  EXPECT_EQ(*early.next_ready_check, 1ms);
  EXPECT_TRUE(drain_one(acc, l, 1, t0 + 4ms).size() == 1)
      << "a ready broker drains every partition it leads, lingering or not (as Java)";
  ASSERT_TRUE(add(acc, p0, value, t0 + 10ms));
  EXPECT_TRUE(acc.ready(l, t0 + 14ms).ready_nodes.empty());
  EXPECT_EQ(acc.ready(l, t0 + 15ms).ready_nodes, std::set<node_id>{1});
}

TEST_F(accumulator, unknown_leader_is_reported_not_ready) {
  record_accumulator acc(config(16384));
  ASSERT_TRUE(add(acc, q0, value, t0));
  auto r = acc.ready(leaders({}), t0 + 1s);
  EXPECT_TRUE(r.ready_nodes.empty());
  EXPECT_EQ(r.unknown_leader_topics, std::set<std::string>{"u"});
}

TEST_F(accumulator, drain_per_node_one_batch_per_partition_within_max_request_size) {
  record_accumulator acc(config(112));
  auto l = leaders({{{"t", 0}, 1}, {{"t", 1}, 1}, {{"u", 0}, 2}});
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(add(acc, p0, value, t0));  // two full batches
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(add(acc, p1, value, t0));
  ASSERT_TRUE(add(acc, q0, value, t0));
  auto ready = acc.ready(l, t0);
  EXPECT_EQ(ready.ready_nodes, std::set<node_id>{1});  // u-0 still lingers

  auto drained = acc.drain(l, {1, 2}, 1 << 20, t0);
  ASSERT_EQ(drained[1].size(), 2u);
  EXPECT_EQ(drained[1][0]->tp(), p0);
  EXPECT_EQ(drained[1][1]->tp(), p1);
  ASSERT_EQ(drained[2].size(), 1u);
  EXPECT_EQ(drained[2][0]->tp(), q0);

  // A limit of one batch's bytes: the first batch always goes; p0's second one is left.
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(add(acc, p1, value, t0));
  auto limited = drain_one(acc, l, 1, t0, 112);
  ASSERT_EQ(limited.size(), 1u);
  auto next = drain_one(acc, l, 1, t0, 112);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_NE(next[0]->tp(), limited[0]->tp()) << "the next drain starts where the last stopped";
}

TEST_F(accumulator, batches_carry_records_and_callbacks_get_offsets) {
  record_accumulator acc(config(16384));
  auto l = leaders({{{"t", 0}, 1}});
  std::vector<record_metadata> delivered;
  auto cb = [&](const record_metadata& m, const producer_error* e) {
    EXPECT_EQ(e, nullptr);
    delivered.push_back(m);
  };
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(add(acc, p0, value, t0, cb));
  auto batches = drain_one(acc, l, 1, t0 + 5ms);
  ASSERT_EQ(batches.size(), 1u);
  record::record_batch_view view(batches[0]->bytes());
  ASSERT_TRUE(record::validate_batch_full(view, record::offset_rule::producer, 1 << 20));
  EXPECT_EQ(view.records_count(), 3);
  EXPECT_EQ(view.producer_id(), -1);
  EXPECT_EQ(view.base_sequence(), -1);
  EXPECT_EQ(acc.incomplete_batches(), 1u);
  acc.complete(std::move(batches[0]), 100, -1);
  ASSERT_EQ(delivered.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(delivered[i].topic, "t");
    EXPECT_EQ(delivered[i].partition, 0);
    EXPECT_EQ(delivered[i].offset, 100 + i);
    EXPECT_EQ(delivered[i].timestamp_ms, 1000);
  }
  EXPECT_EQ(acc.incomplete_batches(), 0u);
  EXPECT_EQ(acc.pool().available_bytes(), acc.pool().total_bytes());
}

TEST_F(accumulator, sequences_per_partition_next_base_is_previous_plus_count) {
  auto c = config(16384);
  c.idempotence = true;
  record_accumulator acc(c);
  auto l = leaders({{{"t", 0}, 1}, {{"t", 1}, 1}});
  ASSERT_TRUE(add(acc, p0, value, t0));
  EXPECT_TRUE(drain_one(acc, l, 1, t0 + 1s).empty()) << "no drain before InitProducerId";
  acc.set_producer_identity({.producer_id = 4000, .epoch = 7});

  std::vector<sequence_t> p0_bases, p1_bases;
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 3 + round; ++i) ASSERT_TRUE(add(acc, p0, value, t0));
    ASSERT_TRUE(add(acc, p1, value, t0));
    for (auto& b : drain_one(acc, l, 1, t0 + 1s)) {
      record::record_batch_view view(b->bytes());
      ASSERT_TRUE(record::validate_batch(view, record::offset_rule::producer));
      EXPECT_EQ(view.producer_id(), 4000);
      EXPECT_EQ(view.producer_epoch(), 7);
      EXPECT_EQ(view.base_sequence(), b->base_sequence());
      (b->tp() == p0 ? p0_bases : p1_bases).push_back(view.base_sequence());
      // The first batch of a partition goes alone until it is acknowledged.
      if (round == 0) acc.complete(std::move(b), 0, -1);
    }
  }
  // p0: 1+3 records, then 4, then 5: bases 0, 4, 8; p1: 0, 1, 2.
  EXPECT_EQ(p0_bases, (std::vector<sequence_t>{0, 4, 8}));
  EXPECT_EQ(p1_bases, (std::vector<sequence_t>{0, 1, 2}));
  EXPECT_EQ(acc.next_sequence(p0), 13);
  EXPECT_EQ(acc.next_sequence(p1), 3);
}

// Sealed batches are compressed and stamped with identity and sequence when drained: valid,
// compressed, with the right sequences.
TEST_F(accumulator, sealed_batches_are_built_and_stamped_on_drain) {
  auto c = config(200);
  c.idempotence = true;
  c.compression = record::compression_type::lz4;
  record_accumulator acc(c);
  auto l = leaders({{{"t", 0}, 1}});
  acc.set_producer_identity({.producer_id = 77, .epoch = 3});
  // About 11 records of 17 bytes seal a 200-byte batch; 40 records make three sealed + one open.
  for (int i = 0; i < 40; ++i) ASSERT_TRUE(add(acc, p0, value, t0));
  std::vector<sequence_t> bases;
  int32_t records = 0;
  for (int round = 0; round < 6 && records < 40; ++round) {
    for (auto& b : drain_one(acc, l, 1, t0 + 1s)) {
      record::record_batch_view view(b->bytes());
      auto summary = record::validate_batch_full(view, record::offset_rule::producer, 1 << 20);
      ASSERT_TRUE(summary) << "round " << round;
      EXPECT_EQ(view.compression(), record::compression_type::lz4);
      EXPECT_EQ(view.producer_id(), 77);
      EXPECT_EQ(view.producer_epoch(), 3);
      EXPECT_EQ(view.base_sequence(), b->base_sequence());
      EXPECT_EQ(summary->count, b->record_count());
      bases.push_back(view.base_sequence());
      records += b->record_count();
      acc.complete(std::move(b), records, -1);  // also opens the pipeline after the first
    }
  }
  EXPECT_EQ(records, 40);
  ASSERT_GE(bases.size(), 4u);
  EXPECT_EQ(bases.front(), 0);
  EXPECT_EQ(acc.next_sequence(p0), 40);
}

TEST_F(accumulator, the_appending_thread_builds_a_compressed_batch_sealed_behind_another) {
  // 200-byte batches of 17-byte records, nothing drained: the first batch seals alone (the sender
  // builds it); every later one seals with another still queued, so its append builds it.
  for (auto codec : {record::compression_type::lz4, record::compression_type::none}) {
    auto c = config(200);
    c.compression = codec;
    record_accumulator acc(c);
    // A record that opens a batch is the one whose append sealed the batch before it: the second
    // batch's opening sealed the first alone; each later opening sealed one with another ahead.
    int new_batches = 0;
    for (int i = 0; i < 40; ++i) {
      auto outcome = add(acc, p0, value, t0);
      ASSERT_TRUE(outcome);
      if (outcome->new_batch) ++new_batches;
      const bool sealed_behind_another = outcome->new_batch && new_batches >= 3;
      EXPECT_EQ(outcome->built_sealed_batch,
                sealed_behind_another && codec != record::compression_type::none)
          << "record " << i << ", batch " << new_batches;
    }
    ASSERT_GE(new_batches, 3);
    int32_t records = 0;
    auto l = leaders({{{"t", 0}, 1}});
    for (int round = 0; round < 6 && records < 40; ++round) {
      for (auto& b : drain_one(acc, l, 1, t0 + 1s)) {
        auto summary = record::validate_batch_full(record::record_batch_view(b->bytes()),
                                                   record::offset_rule::producer, 1 << 20);
        ASSERT_TRUE(summary);
        EXPECT_EQ(summary->count, b->record_count());
        records += b->record_count();
        acc.complete(std::move(b), records, -1);
      }
    }
    EXPECT_EQ(records, 40);
  }
}

TEST(producer_batch, a_claimed_build_makes_the_drain_wait_for_it) {
  const record::batch_builder_config config{.batch_size = 1 << 20,
                                            .compression = record::compression_type::lz4};
  producer_batch batch(p0, config, steady_time{}, 1);
  std::string value(300, 'x');
  size_t grew = 0;
  for (int i = 0; i < 20; ++i) {
    ASSERT_EQ(batch.try_append(1000 + i, std::nullopt, record::as_bytes(value), {}, {}, grew),
              record::append_result::appended);
  }
  batch.seal();
  EXPECT_EQ(batch.record_count(), 20);
  auto claim = batch.claim_build();
  ASSERT_TRUE(claim.owns_lock());
  EXPECT_FALSE(batch.claim_build().owns_lock());  // one claim only
  // The sender drains the batch while the appending thread still holds the claim: stamp() waits
  // for that build instead of building too. (The sleep only gives a wrong stamp() the chance
  // to run ahead; a right one passes whatever it is.)
  std::atomic<bool> built_by_claimer = false;
  bool stamped_after_build = false;
  std::thread sender([&] {
    ASSERT_TRUE(batch.stamp({.producer_id = 5, .epoch = 1}, 42));
    stamped_after_build = built_by_claimer.load();
  });
  std::this_thread::sleep_for(50ms);
  batch.build_records();
  built_by_claimer = true;
  claim.unlock();
  sender.join();
  EXPECT_TRUE(stamped_after_build);
  record::record_batch_view view(batch.bytes());
  auto summary = record::validate_batch_full(view, record::offset_rule::producer, 1 << 20);
  ASSERT_TRUE(summary);
  EXPECT_EQ(summary->count, 20);
  EXPECT_EQ(view.base_sequence(), 42);
  EXPECT_EQ(view.compression(), record::compression_type::lz4);
}

TEST(compression_ratio_estimator, moves_as_javas_compression_ratio_estimator) {
  compression_ratio_estimator e;
  EXPECT_FLOAT_EQ(e.estimation(), 1.0f);  // Java's initial estimate
  // Better than estimated: down by at most 0.005 a batch.
  EXPECT_FLOAT_EQ(e.update(0.2f), 0.995f);
  EXPECT_FLOAT_EQ(e.update(0.2f), 0.99f);
  EXPECT_FLOAT_EQ(e.update(0.9899f), 0.9899f);  // ... and never below what was observed
  // Worse than estimated: up by at least 0.05, or at once to what was observed.
  EXPECT_FLOAT_EQ(e.update(0.99f), 0.9899f + 0.05f);
  EXPECT_FLOAT_EQ(e.update(1.8f), 1.8f);
  EXPECT_FLOAT_EQ(e.update(1.8f), 1.8f);  // equal: unchanged
  e.set(1.0f);
  EXPECT_FLOAT_EQ(e.estimation(), 1.0f);
}

// Java's CompressionRatioEstimator in the accumulator: batches of records that compress well
// teach the topic's estimate, and later batches hold more records (so fewer, fuller requests).
// Uncompressed topics are not touched.
TEST_F(accumulator, batches_grow_as_the_topics_compression_ratio_is_learnt) {
  auto c = config(1024);
  c.compression = record::compression_type::zstd;
  record_accumulator acc(c);
  auto l = leaders({{{"t", 0}, 1}});
  const std::string same(100, 'a');  // identical records compress to a few bytes each
  std::vector<int32_t> counts;
  for (int batch = 0; batch < 120; ++batch) {
    for (int i = 0; i < 400 && acc.incomplete_batches() < 2; ++i)
      ASSERT_TRUE(add(acc, p0, same, t0));
    auto drained = drain_one(acc, l, 1, t0 + 1s);
    ASSERT_EQ(drained.size(), 1u);
    counts.push_back(drained[0]->record_count());
    const auto compressed = drained[0]->bytes().size();
    EXPECT_LE(compressed, 1024u) << "batch " << batch;  // still within batch.size once compressed
    acc.complete(std::move(drained[0]), 0, -1);
  }
  // At 1.0 a 1 KiB batch holds 8 of these 107-byte records. A batch learns its ratio when built,
  // at drain, so the last one opened after 118 were built, at 1 - 118 * 0.005 = 0.41:
  // 61 + 18 * 107 * 0.41 * 1.05 = 890, + 107 <= 1024, while a 20th record would make
  // 936 + 107 > 1024.
  EXPECT_EQ(counts.front(), 8);
  EXPECT_EQ(counts.back(), 19);
  EXPECT_TRUE(std::is_sorted(counts.begin(), counts.end()));
}

TEST(producer_batch, built_on_seal_then_stamped_equals_built_and_stamped_at_once) {
  const record::batch_builder_config config{.batch_size = 16384,
                                            .compression = record::compression_type::zstd};
  std::string value(300, 'x');
  auto fill = [&](producer_batch& b) {
    size_t grew = 0;
    for (int i = 0; i < 20; ++i) {
      ASSERT_EQ(b.try_append(1000 + i, std::nullopt, record::as_bytes(value), {}, {}, grew),
                record::append_result::appended);
    }
    b.seal();
  };
  producer_batch early(p0, config, steady_time{}, 1);
  producer_batch late(p0, config, steady_time{}, 2);
  fill(early);
  fill(late);
  early.build_records();  // on the appending thread
  EXPECT_TRUE(early.built());
  EXPECT_FALSE(early.drained());
  ASSERT_TRUE(early.stamp({.producer_id = 5, .epoch = 1}, 42));
  ASSERT_TRUE(late.stamp({.producer_id = 5, .epoch = 1}, 42));
  EXPECT_TRUE(early.drained());
  EXPECT_TRUE(std::equal(early.bytes().begin(), early.bytes().end(), late.bytes().begin(),
                         late.bytes().end()));
  EXPECT_TRUE(record::validate_batch(record::record_batch_view(early.bytes()),
                                     record::offset_rule::producer));
}

TEST(sequences, wrap_as_java_increment_sequence) {
  // DefaultRecordBatch.incrementSequence.
  EXPECT_EQ(increment_sequence(0, 5), 5);
  EXPECT_EQ(increment_sequence(INT32_MAX - 5, 5), INT32_MAX);
  EXPECT_EQ(increment_sequence(INT32_MAX - 1, 3), 1);  // MAX-1, MAX, 0 then 1
  EXPECT_EQ(increment_sequence(INT32_MAX, 1), 0);
  EXPECT_EQ(increment_sequence(INT32_MAX, INT32_MAX), INT32_MAX - 1);
}

TEST_F(accumulator, retried_batch_waits_to_be_first_in_flight_and_for_backoff) {
  auto c = config(112);
  c.idempotence = true;
  c.retry_backoff = 100ms;
  c.retry_backoff_max = 1000ms;
  record_accumulator acc(c);
  acc.set_producer_identity({.producer_id = 1, .epoch = 0});
  auto l = leaders({{{"t", 0}, 1}});
  // An acknowledged first batch (sequences 0-2) opens the partition's pipeline.
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(add(acc, p0, value, t0));
  auto first = drain_one(acc, l, 1, t0);
  ASSERT_EQ(first.size(), 1u);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(add(acc, p0, value, t0));
  EXPECT_TRUE(drain_one(acc, l, 1, t0).empty()) << "the first batch goes alone";
  acc.complete(std::move(first[0]), 0, -1);
  auto a = drain_one(acc, l, 1, t0);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(add(acc, p0, value, t0));
  auto b = drain_one(acc, l, 1, t0);
  ASSERT_EQ(a.size(), 1u);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(a[0]->base_sequence(), 3);
  EXPECT_EQ(b[0]->base_sequence(), 6);

  // b fails retriably while a is still in flight.
  acc.reenqueue(std::move(b[0]), t0 + 10ms);
  EXPECT_TRUE(acc.ready(l, t0 + 50ms).ready_nodes.empty()) << "in retry backoff";
  EXPECT_TRUE(drain_one(acc, l, 1, t0 + 200ms).empty()) << "a (sequence 3) is still in flight";
  acc.complete(std::move(a[0]), 3, -1);
  auto retry = drain_one(acc, l, 1, t0 + 200ms);
  ASSERT_EQ(retry.size(), 1u);
  EXPECT_EQ(retry[0]->base_sequence(), 6) << "a retry keeps its sequence";
  EXPECT_EQ(retry[0]->attempts, 1);
  // A second failure backs off twice as long.
  acc.reenqueue(std::move(retry[0]), t0 + 300ms);
  EXPECT_TRUE(acc.ready(l, t0 + 450ms).ready_nodes.empty());
  EXPECT_EQ(acc.ready(l, t0 + 500ms).ready_nodes, std::set<node_id>{1});
}

// Kafka writes later batches of a partition it has no producer state for even when the first
// one failed: the failed one then lies behind the acknowledged sequence, which no retry under the
// same identity can fill (the sender bumps the epoch for it).
TEST_F(accumulator, a_batch_behind_an_acknowledged_one_is_told_apart_from_one_ahead) {
  auto c = config(112);
  c.idempotence = true;
  c.retry_backoff = 0ms;
  record_accumulator acc(c);
  const producer_identity identity{.producer_id = 1, .epoch = 0};
  acc.set_producer_identity(identity);
  auto l = leaders({{{"t", 0}, 1}});
  std::vector<std::unique_ptr<producer_batch>> flying;
  ASSERT_NO_FATAL_FAILURE(open_pipeline_and_drain(acc, l, 3, flying));
  // Sequences 3-11 in flight: the first is the next one, the others are ahead of it.
  EXPECT_TRUE(acc.is_next_sequence(*flying[0]));
  EXPECT_FALSE(acc.acknowledged_past(*flying[0]));
  EXPECT_FALSE(acc.acknowledged_past(*flying[2]));
  // Sequences 3-5 fail retriably, 6-8 are written (a broker that lost the producer's state
  // takes any sequence): 9-11 is next, 3-5 is behind.
  auto first = std::move(flying[0]);
  acc.complete(std::move(flying[1]), 0, -1);
  EXPECT_FALSE(acc.is_next_sequence(*first));
  EXPECT_TRUE(acc.acknowledged_past(*first));
  EXPECT_TRUE(acc.is_next_sequence(*flying[2]));
  EXPECT_FALSE(acc.acknowledged_past(*flying[2]));
  // A batch of another identity (after an epoch bump) is neither.
  first->rewrite_producer_state({.producer_id = 1, .epoch = 1}, 0);
  EXPECT_FALSE(acc.acknowledged_past(*first));

  // Across the wrap from INT32_MAX to 0.
  flying[2]->rewrite_producer_state(identity, INT32_MAX - 2);  // 3 records: up to INT32_MAX
  acc.complete(std::move(flying[2]), 0, -1);
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(add(acc, p0, value, t0));
  auto probes = drain_one(acc, l, 1, t0);
  ASSERT_EQ(probes.size(), 1u);
  auto probe = std::move(probes[0]);
  probe->rewrite_producer_state(identity, 0);
  EXPECT_TRUE(acc.is_next_sequence(*probe));
  EXPECT_FALSE(acc.acknowledged_past(*probe));
  probe->rewrite_producer_state(identity, 3);  // ahead: an earlier batch is outstanding
  EXPECT_FALSE(acc.acknowledged_past(*probe));
  probe->rewrite_producer_state(identity, INT32_MAX - 5);  // behind
  EXPECT_TRUE(acc.acknowledged_past(*probe));
  probe->rewrite_producer_state(identity, INT32_MAX);  // behind
  EXPECT_TRUE(acc.acknowledged_past(*probe));
  acc.fail_batch(std::move(first), {producer_errc::producer_closed, 0, false, "test over"});
  acc.fail_batch(std::move(probe), {producer_errc::producer_closed, 0, false, "test over"});
}

TEST_F(accumulator, reenqueued_batches_go_back_in_sequence_order) {
  auto c = config(112);
  c.idempotence = true;
  c.retry_backoff = 0ms;
  record_accumulator acc(c);
  acc.set_producer_identity({.producer_id = 1, .epoch = 0});
  auto l = leaders({{{"t", 0}, 1}});
  std::vector<std::unique_ptr<producer_batch>> flying;
  ASSERT_NO_FATAL_FAILURE(open_pipeline_and_drain(acc, l, 3, flying));
  ASSERT_TRUE(add(acc, p0, value, t0));  // a new, unsequenced batch behind them
  // All three fail; the responses arrive out of order.
  acc.reenqueue(std::move(flying[2]), t0);
  acc.reenqueue(std::move(flying[0]), t0);
  acc.reenqueue(std::move(flying[1]), t0);
  std::vector<sequence_t> order;
  for (int i = 0; i < 4; ++i) {
    auto batches = drain_one(acc, l, 1, t0 + 1ms);
    ASSERT_EQ(batches.size(), 1u);
    order.push_back(batches[0]->base_sequence());
    acc.complete(std::move(batches[0]), 0, -1);
  }
  EXPECT_EQ(order, (std::vector<sequence_t>{3, 6, 9, 12}));
}

TEST_F(accumulator, max_in_flight_one_mutes_the_partition) {
  auto c = config(112);
  c.max_in_flight_requests_per_connection = 1;
  record_accumulator acc(c);
  auto l = leaders({{{"t", 0}, 1}});
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(add(acc, p0, value, t0));
  auto first = drain_one(acc, l, 1, t0);
  ASSERT_EQ(first.size(), 1u);
  EXPECT_TRUE(acc.ready(l, t0).ready_nodes.empty());
  EXPECT_TRUE(drain_one(acc, l, 1, t0).empty());
  acc.complete(std::move(first[0]), 0, -1);
  EXPECT_EQ(drain_one(acc, l, 1, t0).size(), 1u);
}

TEST_F(accumulator, record_too_large_fails_at_once) {
  auto c = config(16384);
  c.max_request_size = 1000;
  c.buffer_memory = 2000;
  record_accumulator acc(c);
  auto over_request = add(acc, p0, std::string(1000, 'x'), t0);
  ASSERT_FALSE(over_request);
  EXPECT_EQ(over_request.error().code, producer_errc::record_too_large);
  EXPECT_NE(over_request.error().message.find("max.request.size"), std::string::npos);
  c.max_request_size = 1 << 20;
  record_accumulator small_memory(c);
  auto over_memory = add(small_memory, p0, std::string(2000, 'x'), t0);
  ASSERT_FALSE(over_memory);
  EXPECT_EQ(over_memory.error().code, producer_errc::record_too_large);
  EXPECT_NE(over_memory.error().message.find("buffer.memory"), std::string::npos);
}

TEST_F(accumulator, buffer_exhaustion_blocks_for_max_block_then_fails) {
  auto c = config(112);
  c.buffer_memory = 300;
  c.max_block = 50ms;
  record_accumulator acc(c);
  const topic_partition p2{"t", 2};
  // Each new batch takes batch.size (112) of buffer.memory; appends to it take nothing more.
  ASSERT_TRUE(add(acc, p0, value, t0));
  EXPECT_EQ(acc.pool().available_bytes(), 188);
  ASSERT_TRUE(add(acc, p0, value, t0));
  ASSERT_TRUE(add(acc, p1, value, t0));
  EXPECT_EQ(acc.pool().available_bytes(), 76);
  const auto start = std::chrono::steady_clock::now();
  auto blocked = add(acc, p2, value, t0);  // a third batch does not fit
  const auto waited = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(blocked);
  EXPECT_EQ(blocked.error().code, producer_errc::buffer_exhausted);
  EXPECT_EQ(blocked.error().message,
            "Failed to allocate 112 bytes within the configured max blocking time 50 ms "
            "(buffer.memory 300 bytes, 76 available)");
  EXPECT_GE(waited, 50ms);
  EXPECT_EQ(acc.pool().available_bytes(), 76) << "a failed wait reserves nothing";
  // An open batch with room still takes records at once.
  ASSERT_TRUE(add(acc, p1, value, t0));
}

TEST_F(accumulator, buffer_exhaustion_unblocks_when_a_batch_completes) {
  auto c = config(112);
  c.buffer_memory = 300;
  c.max_block = 10s;  // far beyond the test: the wait must end by the release
  record_accumulator acc(c);
  auto l = leaders({{{"t", 0}, 1}, {{"t", 1}, 1}, {{"t", 2}, 1}});
  ASSERT_TRUE(add(acc, p0, value, t0));
  ASSERT_TRUE(add(acc, p1, value, t0));
  std::atomic<bool> done{false};
  std::thread sender([&] {
    // A send waiting for memory makes every partition ready at once, lingering or not.
    while (acc.ready(l, t0).ready_nodes.empty()) std::this_thread::yield();
    auto batches = drain_one(acc, l, 1, t0);
    ASSERT_EQ(batches.size(), 2u);
    EXPECT_FALSE(done.load());
    for (auto& b : batches) acc.complete(std::move(b), 0, -1);
  });
  auto unblocked = add(acc, {"t", 2}, value, t0);
  done = true;
  sender.join();
  ASSERT_TRUE(unblocked);
  EXPECT_TRUE(unblocked->new_batch);
  EXPECT_EQ(acc.pool().available_bytes(), 300 - 112);
}

TEST_F(accumulator, delivery_timeout_expires_queued_batches) {
  auto c = config(112);
  c.delivery_timeout = 1000ms;
  record_accumulator acc(c);
  ASSERT_TRUE(add(acc, p0, value, t0));
  ASSERT_TRUE(add(acc, p0, value, t0 + 500ms));  // same batch: expiry counts from creation
  EXPECT_TRUE(acc.expired_batches(t0 + 999ms).empty());
  auto expired = acc.expired_batches(t0 + 1000ms);
  ASSERT_EQ(expired.size(), 1u);
  EXPECT_EQ(expired[0]->record_count(), 2);
  EXPECT_FALSE(acc.has_undrained());
  producer_errc got{};
  int calls = 0;
  ASSERT_TRUE(add(acc, p1, value, t0, [&](const record_metadata& m, const producer_error* e) {
    ++calls;
    ASSERT_NE(e, nullptr);
    got = e->code;
    EXPECT_EQ(m.offset, -1);
  }));
  for (auto& b : acc.expired_batches(t0 + 2s)) {
    acc.fail_batch(std::move(b), {producer_errc::delivery_timeout, 0, false, "expired"});
  }
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(got, producer_errc::delivery_timeout);
}

TEST_F(accumulator, abort_on_new_batch_lets_the_sticky_partitioner_switch_first) {
  record_accumulator acc(config(112));
  auto none = add(acc, p0, value, t0, {}, /*abort_on_new_batch=*/true);
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->aborted_for_new_batch);
  EXPECT_FALSE(acc.has_undrained());
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(add(acc, p0, value, t0));
  auto third = add(acc, p0, value, t0, {}, true);  // fits the open batch: appended
  ASSERT_TRUE(third);
  EXPECT_FALSE(third->aborted_for_new_batch);
  EXPECT_TRUE(third->batch_full);
  auto fourth = add(acc, p0, value, t0, {}, true);
  ASSERT_TRUE(fourth);
  EXPECT_TRUE(fourth->aborted_for_new_batch);
  EXPECT_EQ(acc.pool().available_bytes(), acc.pool().total_bytes() - 112);
}

TEST_F(accumulator, flush_makes_everything_ready_and_waits_for_completion) {
  record_accumulator acc(config(16384));
  auto l = leaders({{{"t", 0}, 1}});
  ASSERT_TRUE(add(acc, p0, value, t0));
  EXPECT_TRUE(acc.ready(l, t0).ready_nodes.empty());
  const uint64_t flush = acc.begin_flush();
  EXPECT_EQ(acc.ready(l, t0).ready_nodes, std::set<node_id>{1});
  std::thread sender([&] {
    auto batches = drain_one(acc, l, 1, t0);
    ASSERT_EQ(batches.size(), 1u);
    acc.complete(std::move(batches[0]), 0, -1);
  });
  acc.await_flush_completion(flush);
  sender.join();
  EXPECT_EQ(acc.incomplete_batches(), 0u);
  EXPECT_TRUE(acc.ready(l, t0).ready_nodes.empty());
}

TEST_F(accumulator, close_refuses_appends_and_abort_fails_what_is_queued) {
  record_accumulator acc(config(16384));
  int failed = 0;
  ASSERT_TRUE(add(acc, p0, value, t0, [&](const record_metadata&, const producer_error* e) {
    failed += e && e->code == producer_errc::producer_closed;
  }));
  acc.close();
  auto refused = add(acc, p0, value, t0);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, producer_errc::producer_closed);
  acc.abort_undrained({producer_errc::producer_closed, 0, false, "closed"});
  EXPECT_EQ(failed, 1);
  EXPECT_EQ(acc.incomplete_batches(), 0u);
}

// A transactional producer's batches carry the transactional attribute; abort_undrained
// (abort_transaction) counts the queued batches that already had a sequence (a retry), which
// leave a gap the epoch bump closes.
TEST_F(accumulator, transactional_batches_and_aborting_a_retried_one) {
  auto c = config(16384);
  c.idempotence = true;
  c.transactional = true;
  record_accumulator acc(c);
  auto l = leaders({{{"t", 0}, 1}});
  acc.set_producer_identity({.producer_id = 9, .epoch = 2});
  ASSERT_TRUE(add(acc, p0, value, t0));
  auto drained = drain_one(acc, l, 1, t0 + 1s);
  ASSERT_EQ(drained.size(), 1u);
  record::record_batch_view view(drained[0]->bytes());
  ASSERT_TRUE(record::validate_batch(view, record::offset_rule::producer));
  EXPECT_TRUE(view.is_transactional());
  EXPECT_EQ(view.producer_id(), 9);
  EXPECT_EQ(view.base_sequence(), 0);
  // Retried (back in the queue with its sequence), then a new record: aborting fails both and
  // reports the one with a sequence.
  acc.reenqueue(std::move(drained[0]), t0 + 1s);
  ASSERT_TRUE(add(acc, p0, value, t0 + 1s));
  EXPECT_EQ(acc.abort_undrained({producer_errc::abortable, 0, false, "aborted"}), 1u);
  EXPECT_EQ(acc.incomplete_batches(), 0u);

  record_accumulator plain(config(16384));
  ASSERT_TRUE(add(plain, p0, value, t0));
  auto b = drain_one(plain, l, 1, t0 + 1s);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_FALSE(record::record_batch_view(b[0]->bytes()).is_transactional());
  plain.complete(std::move(b[0]), 0, -1);
}

TEST_F(accumulator, concurrent_appends_lose_nothing) {
  // lz4 too: appends then claim builds of sealed batches while the drain stamps others.
  for (auto codec : {record::compression_type::none, record::compression_type::lz4}) {
    SCOPED_TRACE(std::string(record::compression_name(codec)));
    concurrent_appends(codec);
  }
}

void accumulator::concurrent_appends(record::compression_type codec) {
  auto c = config(1024);
  c.compression = codec;
  record_accumulator acc(c);
  auto l = leaders({{{"t", 0}, 1}, {{"t", 1}, 1}, {{"u", 0}, 2}});
  constexpr int threads = 4;
  constexpr int per_thread = 2000;
  std::atomic<int> delivered{0};
  std::atomic<bool> appending{true};
  std::vector<std::thread> producers;
  for (int t = 0; t < threads; ++t) {
    producers.emplace_back([&, t] {
      const topic_partition* tps[] = {&p0, &p1, &q0};
      for (int i = 0; i < per_thread; ++i) {
        auto r = add(acc, *tps[(t + i) % 3], value, t0,
                     [&](const record_metadata&, const producer_error* e) {
                       if (!e) delivered.fetch_add(1);
                     });
        ASSERT_TRUE(r);
      }
    });
  }
  int32_t records = 0;
  std::thread sender([&] {
    while (appending || acc.has_undrained()) {
      auto ready = acc.ready(l, t0 + 1s);
      for (auto& [node, batches] : acc.drain(l, ready.ready_nodes, 1 << 20, t0 + 1s)) {
        for (auto& b : batches) {
          record::record_batch_view view(b->bytes());
          EXPECT_TRUE(record::validate_batch(view, record::offset_rule::producer));
          records += b->record_count();
          acc.complete(std::move(b), 0, -1);
        }
      }
    }
  });
  for (auto& p : producers) p.join();
  appending = false;
  sender.join();
  EXPECT_EQ(records, threads * per_thread);
  EXPECT_EQ(delivered.load(), threads * per_thread);
  EXPECT_EQ(acc.pool().available_bytes(), acc.pool().total_bytes());
}

// KIP-794: ready() hands each topic's partition load to the partitioner (Java's
// partitionReady + updatePartitionLoadStats).
TEST_F(accumulator, ready_reports_partition_load_once_every_partition_has_a_queue) {
  record_accumulator acc(config(112));  // three 17-byte records a batch
  std::map<std::string, std::optional<partition_load>> reported;
  acc.set_partition_load_listener(
      [&](const std::string& topic, std::optional<partition_load> load) {
        reported[topic] = std::move(load);
      });
  const topic_partition p2{"t", 2};
  auto l = leaders({{{"t", 0}, 1}, {{"t", 1}, 1}, {{"t", 2}, 2}});
  auto three = [](const std::string& topic) { return topic == "t" ? 3 : 0; };
  ASSERT_TRUE(add(acc, p0, value, t0));
  acc.ready(l, t0, three);
  ASSERT_TRUE(reported.contains("t"));
  EXPECT_FALSE(reported["t"].has_value());  // one queue of three partitions: uniform
  for (int i = 0; i < 7; ++i) ASSERT_TRUE(add(acc, p1, value, t0));  // 3 batches
  ASSERT_TRUE(add(acc, p2, value, t0));
  reported.clear();
  acc.ready(l, t0, three);
  // Queues 1, 3, 1 -> weights 3, 1, 3.
  ASSERT_TRUE(reported["t"].has_value());
  EXPECT_EQ(reported["t"]->cumulative_frequency, (std::vector<int32_t>{3, 4, 7}));
  EXPECT_EQ(reported["t"]->partition_ids, (std::vector<partition_id>{0, 1, 2}));
  // Without the partition count (metadata unknown) there is no load.
  reported.clear();
  acc.ready(l, t0, [](const std::string&) { return 0; });
  EXPECT_FALSE(reported["t"].has_value());
}

TEST_F(accumulator, availability_timeout_leaves_out_a_broker_that_does_not_drain) {
  auto c = config(112);
  c.partitioner_availability_timeout = 100ms;
  record_accumulator acc(c);
  std::optional<partition_load> reported;
  acc.set_partition_load_listener(
      [&](const std::string&, std::optional<partition_load> load) { reported = std::move(load); });
  const topic_partition p2{"t", 2};
  auto l = leaders({{{"t", 0}, 1}, {{"t", 1}, 1}, {{"t", 2}, 2}});
  auto three = [](const std::string&) { return 3; };
  for (const auto& tp : {p0, p1, p2}) ASSERT_TRUE(add(acc, tp, value, t0));
  acc.update_node_latency(1, t0, true);
  acc.update_node_latency(2, t0, true);
  acc.ready(l, t0, three);
  EXPECT_FALSE(reported.has_value());  // equal queues, nobody left out: uniform
  // Broker 2 had data ready for 200 ms but could never be sent to; broker 1 drained.
  acc.update_node_latency(1, t0 + 200ms, true);
  acc.update_node_latency(2, t0 + 200ms, false);
  acc.ready(l, t0 + 200ms, three);
  ASSERT_TRUE(reported.has_value());
  EXPECT_EQ(reported->partition_ids, (std::vector<partition_id>{0, 1}));
  EXPECT_EQ(reported->cumulative_frequency, (std::vector<int32_t>{1, 2}));
  // Once broker 2 drains again it is back in, and equal queues mean uniform.
  acc.update_node_latency(2, t0 + 250ms, true);
  acc.ready(l, t0 + 250ms, three);
  EXPECT_FALSE(reported.has_value());
}

TEST_F(accumulator, no_load_reports_when_adaptive_partitioning_is_off) {
  auto c = config(112);
  c.adaptive_partitioning = false;
  record_accumulator acc(c);
  int reports = 0;
  acc.set_partition_load_listener(
      [&](const std::string&, std::optional<partition_load>) { ++reports; });
  ASSERT_TRUE(add(acc, p0, value, t0));
  acc.ready(leaders({{{"t", 0}, 1}}), t0, [](const std::string&) { return 1; });
  EXPECT_EQ(reports, 0);
}

}  // namespace
}  // namespace tarn::client
