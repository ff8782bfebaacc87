// The transaction coordinator without sockets: __transaction_state and the partitions' markers
// in memory.
#include "txn/txn_coordinator.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "record/record_batch.h"
#include "txn/txn_marker_progress.h"
#include "txn/txn_records.h"

namespace tarn::txn {
namespace {

using protocol::error_code;

// __transaction_state in memory: each partition a list of (key, value) records.
class memory_txn_log final : public txn_log {
 public:
  result<int32_t, error_code> ensure_topic() override {
    if (fail_create) return fail(error_code::coordinator_not_available);
    created = true;
    return 4;
  }
  std::optional<int32_t> partitions() const override {
    return created ? std::optional<int32_t>(4) : std::nullopt;
  }
  result<offset_t, error_code> append(int32_t partition, std::vector<uint8_t> batch) override {
    if (fail_append) return fail(error_code::kafka_storage_error);
    record::record_batch_view view(batch);
    EXPECT_EQ(view.records_count(), 1);
    batches[partition].push_back(std::move(batch));
    ++appends;
    return static_cast<offset_t>(batches[partition].size() - 1);
  }
  result<void, std::string> replay(int32_t partition,
                                   const std::function<void(const txn_log_record&)>& fn) override {
    if (on_replay) on_replay(partition);
    offset_t offset = 0;
    for (const auto& b : batches[partition]) {
      // One record per batch: the record starts after the 61-byte header.
      auto rec = record::decode_record(std::span<const uint8_t>(b).subspan(61));
      if (!rec || !rec->key) return fail(std::string("bad record"));
      txn_log_record r{offset++, *rec->key, std::nullopt};
      if (rec->value) r.value = *rec->value;
      fn(r);
    }
    return {};
  }
  std::function<void(int32_t)> on_replay;  // called as a replay starts (without the lock)
  bool created = false;
  bool fail_create = false;
  bool fail_append = false;
  int appends = 0;
  std::map<int32_t, std::vector<std::vector<uint8_t>>> batches;
};

struct written_marker {
  std::string topic;
  int32_t partition;
  marker_request marker;
};

class memory_markers final : public txn_markers {
 public:
  error_code write_marker(std::string_view topic, int32_t partition,
                          const marker_request& marker) override {
    if (fail) return error_code::kafka_storage_error;
    written.push_back({std::string(topic), partition, marker});
    return error_code::none;
  }
  bool fail = false;
  std::vector<written_marker> written;
};

struct fixture {
  memory_txn_log log;
  memory_markers markers;
  producer_id_t next_id = 1000;
  txn_config config;
  txn_coordinator coordinator{config, log, markers,
                              [this]() -> result<producer_id_t, error_code> { return next_id++; }};
};

TEST(txn_state, TransitionsAreKafkas) {
  using s = txn_state;
  EXPECT_TRUE(valid_transition(s::empty, s::ongoing));
  EXPECT_TRUE(valid_transition(s::ongoing, s::prepare_commit));
  EXPECT_TRUE(valid_transition(s::prepare_commit, s::complete_commit));
  EXPECT_TRUE(valid_transition(s::ongoing, s::prepare_epoch_fence));
  EXPECT_TRUE(valid_transition(s::prepare_epoch_fence, s::prepare_abort));
  EXPECT_FALSE(valid_transition(s::empty, s::prepare_commit));
  EXPECT_FALSE(valid_transition(s::prepare_commit, s::complete_abort));
  EXPECT_FALSE(valid_transition(s::complete_commit, s::prepare_commit));
  EXPECT_FALSE(valid_transition(s::ongoing, s::dead));
  EXPECT_EQ(state_name(s::prepare_epoch_fence), "PrepareEpochFence");
}

TEST(txn_coordinator, PartitionForIsKafkasHash) {
  // Utils.abs("my-txn".hashCode) % 50, as Kafka computes it: "my-txn".hashCode() = -1061187895.
  EXPECT_EQ(partition_for("my-txn", 50), 1061187895 % 50);
  EXPECT_EQ(partition_for("", 50), 0);
}

TEST(txn_coordinator, InitCommitAbortAndEpochBumps) {
  fixture f;
  auto& c = f.coordinator;
  EXPECT_EQ(c.init_producer_id("t", 0, -1, -1, 1).error(), error_code::invalid_transaction_timeout);
  EXPECT_EQ(c.init_producer_id("t", 900001, -1, -1, 1).error(),
            error_code::invalid_transaction_timeout);
  auto first = c.init_producer_id("t", 60000, -1, -1, 10);
  ASSERT_TRUE(first);
  EXPECT_EQ(first->producer_id, 1000);
  EXPECT_EQ(first->producer_epoch, 0);
  EXPECT_EQ(c.describe("t")->state, txn_state::empty);

  const std::vector<topic_partition_key> parts{{"a", 0}, {"b", 1}};
  EXPECT_EQ(c.end_txn("t", 1000, 0, true, 0, 20).error,
            error_code::invalid_txn_state);  // nothing begun
  EXPECT_EQ(c.add_partitions("t", 1000, 0, parts, 20), error_code::none);
  EXPECT_EQ(c.describe("t")->state, txn_state::ongoing);
  EXPECT_EQ(c.describe("t")->txn_start_timestamp, 20);
  EXPECT_TRUE(c.in_transaction(1000, 0, {"a", 0}));
  EXPECT_FALSE(c.in_transaction(1000, 0, {"a", 1}));
  EXPECT_EQ(c.verify_partition("t", 1000, 0, {"b", 1}), error_code::none);
  EXPECT_EQ(c.verify_partition("t", 1000, 0, {"b", 2}), error_code::transaction_abortable);
  EXPECT_EQ(c.add_partitions("t", 1001, 0, parts, 20), error_code::invalid_producer_id_mapping);
  EXPECT_EQ(c.add_partitions("t", 1000, 1, parts, 20), error_code::producer_fenced);
  EXPECT_EQ(c.add_partitions("nope", 1000, 0, parts, 20), error_code::invalid_producer_id_mapping);

  EXPECT_EQ(c.end_txn("t", 1000, 0, true, 0, 30).error, error_code::none);
  ASSERT_EQ(f.markers.written.size(), 2U);
  EXPECT_EQ(f.markers.written[0].topic, "a");
  EXPECT_TRUE(f.markers.written[0].marker.commit);
  EXPECT_EQ(f.markers.written[1].marker.producer_epoch, 0);
  EXPECT_EQ(c.describe("t")->state, txn_state::complete_commit);
  EXPECT_TRUE(c.describe("t")->partitions.empty());
  EXPECT_EQ(c.end_txn("t", 1000, 0, true, 0, 31).error, error_code::none);  // a retry
  EXPECT_EQ(c.end_txn("t", 1000, 0, false, 0, 31).error, error_code::invalid_txn_state);
  EXPECT_FALSE(c.in_transaction(1000, 0, {"a", 0}));

  EXPECT_EQ(c.add_partitions("t", 1000, 0, {{"a", 0}}, 40), error_code::none);
  EXPECT_EQ(c.end_txn("t", 1000, 0, false, 0, 41).error, error_code::none);
  ASSERT_EQ(f.markers.written.size(), 3U);
  EXPECT_FALSE(f.markers.written[2].marker.commit);
  EXPECT_EQ(c.describe("t")->state, txn_state::complete_abort);

  // A second InitProducerId (a restarted producer) bumps the epoch; the old epoch is fenced.
  auto second = c.init_producer_id("t", 60000, -1, -1, 50);
  ASSERT_TRUE(second);
  EXPECT_EQ(second->producer_id, 1000);
  EXPECT_EQ(second->producer_epoch, 1);
  EXPECT_EQ(c.add_partitions("t", 1000, 0, parts, 51), error_code::producer_fenced);
  EXPECT_EQ(c.end_txn("t", 1000, 0, true, 0, 51).error, error_code::producer_fenced);
  // KIP-360: a producer naming an epoch it never had is fenced; one naming its current epoch
  // gets the next one.
  EXPECT_EQ(c.init_producer_id("t", 60000, 1000, 7, 52).error(), error_code::producer_fenced);
  EXPECT_EQ(c.init_producer_id("t", 60000, 999, 1, 52).error(), error_code::producer_fenced);
  auto third = c.init_producer_id("t", 60000, 1000, 1, 52);
  ASSERT_TRUE(third);
  EXPECT_EQ(third->producer_epoch, 2);
}

TEST(txn_coordinator, InitDuringAnOngoingTransactionFencesAndAbortsIt) {
  fixture f;
  auto& c = f.coordinator;
  ASSERT_TRUE(c.init_producer_id("t", 60000, -1, -1, 10));
  ASSERT_EQ(c.add_partitions("t", 1000, 0, {{"a", 0}}, 11), error_code::none);
  // The new instance: CONCURRENT_TRANSACTIONS while the old transaction is aborted with epoch 1,
  // then epoch 2 on its retry.
  EXPECT_EQ(c.init_producer_id("t", 60000, -1, -1, 12).error(),
            error_code::concurrent_transactions);
  ASSERT_EQ(f.markers.written.size(), 1U);
  EXPECT_FALSE(f.markers.written[0].marker.commit);
  EXPECT_EQ(f.markers.written[0].marker.producer_epoch, 1);
  EXPECT_EQ(c.describe("t")->state, txn_state::complete_abort);
  auto retry = c.init_producer_id("t", 60000, -1, -1, 13);
  ASSERT_TRUE(retry);
  EXPECT_EQ(retry->producer_epoch, 2);
  // The old instance is fenced.
  EXPECT_EQ(c.end_txn("t", 1000, 0, true, 0, 14).error, error_code::producer_fenced);
}

TEST(txn_coordinator, TimedOutTransactionsAreAbortedWithABumpedEpoch) {
  fixture f;
  auto& c = f.coordinator;
  ASSERT_TRUE(c.init_producer_id("t", 1000, -1, -1, 10));
  ASSERT_EQ(c.add_partitions("t", 1000, 0, {{"a", 0}}, 100), error_code::none);
  EXPECT_EQ(c.abort_timed_out(1099), 0);
  EXPECT_EQ(c.abort_timed_out(1101), 1);
  ASSERT_EQ(f.markers.written.size(), 1U);
  EXPECT_EQ(f.markers.written[0].marker.producer_epoch, 1);
  EXPECT_EQ(c.describe("t")->state, txn_state::complete_abort);
  EXPECT_EQ(c.end_txn("t", 1000, 0, true, 0, 1200).error, error_code::producer_fenced);
}

TEST(txn_coordinator, StateSurvivesAReloadAndUnwrittenMarkersAreRetried) {
  fixture f;
  {
    auto& c = f.coordinator;
    ASSERT_TRUE(c.init_producer_id("t", 60000, -1, -1, 10));
    ASSERT_TRUE(c.init_producer_id("u", 60000, -1, -1, 10));
    ASSERT_EQ(c.add_partitions("t", 1000, 0, {{"a", 0}, {"a", 1}}, 11), error_code::none);
    ASSERT_EQ(c.add_partitions("u", 1001, 0, {{"b", 0}}, 11), error_code::none);
    f.markers.fail = true;  // the commit decision is written, its markers are not
    EXPECT_EQ(c.end_txn("u", 1001, 0, true, 0, 12).error, error_code::none);
    EXPECT_EQ(c.describe("u")->state, txn_state::prepare_commit);
  }
  f.markers.fail = false;
  txn_coordinator reloaded(f.config, f.log, f.markers,
                           []() -> result<producer_id_t, error_code> { return 5000; });
  ASSERT_TRUE(reloaded.load(20));
  EXPECT_EQ(reloaded.size(), 2U);
  auto t = reloaded.describe("t");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->state, txn_state::ongoing);
  EXPECT_EQ(t->producer_id, 1000);
  EXPECT_EQ(t->timeout_ms, 60000);
  EXPECT_EQ(t->partitions.size(), 2U);
  EXPECT_EQ(t->txn_start_timestamp, 11);
  EXPECT_TRUE(reloaded.in_transaction(1000, 0, {"a", 1}));
  EXPECT_EQ(reloaded.describe("u")->state, txn_state::complete_commit);
  ASSERT_EQ(f.markers.written.size(), 1U);
  EXPECT_EQ(f.markers.written[0].topic, "b");
  EXPECT_TRUE(f.markers.written[0].marker.commit);
  EXPECT_EQ(reloaded.end_txn("t", 1000, 0, false, 0, 30).error, error_code::none);
  EXPECT_EQ(f.markers.written.size(), 3U);
}

TEST(txn_coordinator, PersistFailuresChangeNothing) {
  fixture f;
  auto& c = f.coordinator;
  f.log.fail_create = true;
  EXPECT_EQ(c.find_coordinator(), error_code::coordinator_not_available);
  EXPECT_EQ(c.init_producer_id("t", 60000, -1, -1, 10).error(),
            error_code::coordinator_not_available);
  EXPECT_EQ(c.size(), 0U);  // nothing written, nothing kept
  f.log.fail_create = false;
  EXPECT_EQ(c.find_coordinator(), error_code::none);
  auto id = c.init_producer_id("t", 60000, -1, -1, 10);
  ASSERT_TRUE(id);
  f.log.fail_append = true;
  EXPECT_EQ(c.add_partitions("t", id->producer_id, 0, {{"a", 0}}, 11),
            error_code::coordinator_not_available);
  EXPECT_EQ(c.describe("t")->state, txn_state::empty);
}

TEST(txn_coordinator, DescribeTransactionIsKafkasHandleDescribeTransactions) {
  fixture f;
  auto& c = f.coordinator;
  EXPECT_EQ(c.describe_transaction("").error(), error_code::invalid_request);
  EXPECT_EQ(c.describe_transaction("t").error(), error_code::transactional_id_not_found);
  ASSERT_TRUE(c.init_producer_id("t", 60000, -1, -1, 10));
  auto empty = c.describe_transaction("t");
  ASSERT_TRUE(empty);
  EXPECT_EQ(empty->state, txn_state::empty);
  EXPECT_EQ(empty->txn_start_timestamp, -1);
  ASSERT_EQ(c.add_partitions("t", 1000, 0, {{"b", 1}, {"a", 0}, {"a", 2}}, 20), error_code::none);
  auto ongoing = c.describe_transaction("t");
  ASSERT_TRUE(ongoing);
  EXPECT_EQ(ongoing->state, txn_state::ongoing);
  EXPECT_EQ(ongoing->producer_id, 1000);
  EXPECT_EQ(ongoing->producer_epoch, 0);
  EXPECT_EQ(ongoing->timeout_ms, 60000);
  EXPECT_EQ(ongoing->txn_start_timestamp, 20);
  EXPECT_EQ(ongoing->partitions, (std::set<topic_partition_key>{{"a", 0}, {"a", 2}, {"b", 1}}));
  ASSERT_EQ(c.end_txn("t", 1000, 0, true, 0, 30).error, error_code::none);
  auto done = c.describe_transaction("t");
  EXPECT_EQ(done->state, txn_state::complete_commit);
  EXPECT_TRUE(done->partitions.empty());
  EXPECT_EQ(done->txn_start_timestamp, 20);  // kept after the transaction, as Kafka keeps it
}

// ListTransactions' filters, as a request would carry them.
list_txn_filter filter(std::vector<std::string_view> states = {},
                       std::vector<producer_id_t> producer_ids = {}, int64_t duration_ms = -1,
                       std::optional<std::string_view> pattern = std::nullopt) {
  list_txn_filter f;
  f.states = std::move(states);
  f.producer_ids = std::move(producer_ids);
  f.duration_ms = duration_ms;
  f.transactional_id_pattern = pattern;
  return f;
}

TEST(txn_coordinator, ListTransactionsAppliesEveryFilter) {
  fixture f;
  auto& c = f.coordinator;
  ASSERT_TRUE(c.init_producer_id("app-1", 60000, -1, -1, 10));  // producer 1000, Empty
  ASSERT_TRUE(c.init_producer_id("app-2", 60000, -1, -1, 10));  // 1001, Ongoing from 100
  ASSERT_TRUE(c.init_producer_id("other", 60000, -1, -1, 10));  // 1002, CompleteAbort
  ASSERT_EQ(c.add_partitions("app-2", 1001, 0, {{"a", 0}}, 100), error_code::none);
  ASSERT_EQ(c.add_partitions("other", 1002, 0, {{"a", 0}}, 150), error_code::none);
  ASSERT_EQ(c.end_txn("other", 1002, 0, false, 0, 160).error, error_code::none);
  auto ids = [](const list_txn_result& r) {
    std::vector<std::string> out;
    for (const auto& t : r.transactions) {
      out.push_back(t.transactional_id + ":" + std::to_string(t.producer_id) + ":" +
                    std::string(state_name(t.state)));
    }
    return out;
  };
  using v = std::vector<std::string>;
  EXPECT_EQ(ids(c.list_transactions(filter(), 200)),
            (v{"app-1:1000:Empty", "app-2:1001:Ongoing", "other:1002:CompleteAbort"}));
  list_txn_result states =
      c.list_transactions(filter({"Ongoing", "Bogus", "CompleteAbort", "Bogus"}), 200);
  EXPECT_EQ(ids(states), (v{"app-2:1001:Ongoing", "other:1002:CompleteAbort"}));
  EXPECT_EQ(states.unknown_state_filters, v{"Bogus"});
  // Names are exact, and a filter of unknown names only matches nothing (Kafka's check is on the
  // names given, the match on the states known).
  EXPECT_EQ(ids(c.list_transactions(filter({"ongoing"}), 200)), v{});
  EXPECT_EQ(ids(c.list_transactions(filter({}, {1002, 7}), 200)), v{"other:1002:CompleteAbort"});
  // Running longer than the duration: now - start > duration (Empty's start -1 is always old).
  EXPECT_EQ(ids(c.list_transactions(filter({}, {}, 100), 200)), (v{"app-1:1000:Empty"}));
  EXPECT_EQ(ids(c.list_transactions(filter({}, {}, 99), 200)),
            (v{"app-1:1000:Empty", "app-2:1001:Ongoing"}));
  EXPECT_EQ(ids(c.list_transactions(filter({"Ongoing"}, {}, 0), 200)), v{"app-2:1001:Ongoing"});
  // The pattern must match the whole id; empty is no filter.
  EXPECT_EQ(ids(c.list_transactions(filter({}, {}, -1, "app-[0-9]+"), 200)),
            (v{"app-1:1000:Empty", "app-2:1001:Ongoing"}));
  EXPECT_EQ(ids(c.list_transactions(filter({}, {}, -1, "app"), 200)), v{});
  EXPECT_EQ(c.list_transactions(filter({}, {}, -1, ""), 200).transactions.size(), 3U);
  // RE2 refuses backreferences and lookaround, and so does tarn; RE2's (?i) is taken.
  EXPECT_EQ(c.list_transactions(filter({}, {}, -1, "(a)\\1"), 200).error,
            error_code::invalid_regular_expression);
  EXPECT_EQ(c.list_transactions(filter({}, {}, -1, "app(?=-1)"), 200).error,
            error_code::invalid_regular_expression);
  EXPECT_EQ(ids(c.list_transactions(filter({}, {}, -1, "(?i)OTHER"), 200)),
            v{"other:1002:CompleteAbort"});
  // RE2 runs in linear time, so a pattern that makes a backtracking engine run away is taken
  // and matched as Kafka matches it.
  EXPECT_EQ(c.list_transactions(filter({}, {}, -1, "(a*)*b"), 200).error, error_code::none);
  EXPECT_EQ(ids(c.list_transactions(filter({}, {}, -1, "(a|p|pp)+-[12]"), 200)),
            (v{"app-1:1000:Empty", "app-2:1001:Ongoing"}));
  list_txn_result bad = c.list_transactions(filter({"Bogus"}, {}, -1, "app-("), 200);
  EXPECT_EQ(bad.error, error_code::invalid_regular_expression);
  EXPECT_TRUE(bad.transactions.empty());
  EXPECT_TRUE(bad.unknown_state_filters.empty());
}

TEST(txn_coordinator, IdleTransactionalIdsExpireWithATombstone) {
  memory_txn_log log;
  memory_markers markers;
  txn_config config;
  config.transactional_id_expiration_ms = 1000;
  producer_id_t next = 1000;
  txn_coordinator c(config, log, markers,
                    [&next]() -> result<producer_id_t, error_code> { return next++; });
  EXPECT_EQ(c.remove_expired(1000000), 0);
  EXPECT_FALSE(log.created) << "the timer creates no __transaction_state";
  ASSERT_TRUE(c.init_producer_id("idle", 60000, -1, -1, 10));    // Empty since 10
  ASSERT_TRUE(c.init_producer_id("open", 60000, -1, -1, 10));    // Ongoing
  ASSERT_TRUE(c.init_producer_id("recent", 60000, -1, -1, 10));  // CompleteCommit at 600
  ASSERT_EQ(c.add_partitions("open", 1001, 0, {{"a", 0}}, 20), error_code::none);
  ASSERT_EQ(c.add_partitions("recent", 1002, 0, {{"a", 0}}, 500), error_code::none);
  ASSERT_EQ(c.end_txn("recent", 1002, 0, true, 0, 600).error, error_code::none);
  EXPECT_EQ(c.remove_expired(1009), 0);  // last update + expiration must be <= now
  EXPECT_EQ(c.remove_expired(1010), 1);
  EXPECT_EQ(c.describe_transaction("idle").error(), error_code::transactional_id_not_found);
  EXPECT_TRUE(c.describe("open"));  // an ongoing transaction never expires
  EXPECT_EQ(c.remove_expired(1599), 0);
  EXPECT_EQ(c.remove_expired(1600), 1);
  EXPECT_FALSE(c.describe("recent"));
  EXPECT_EQ(c.size(), 1U);
  // The tombstones are in __transaction_state: a reload does not bring the ids back.
  txn_coordinator reloaded(config, log, markers,
                           []() -> result<producer_id_t, error_code> { return 5000; });
  ASSERT_TRUE(reloaded.load(2000));
  EXPECT_EQ(reloaded.size(), 1U);
  EXPECT_FALSE(reloaded.describe("idle"));
  EXPECT_FALSE(reloaded.in_transaction(1000, 0, {"a", 0}));
  // The expired id starts again with a new producer id.
  auto again = c.init_producer_id("idle", 60000, -1, -1, 2000);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->producer_id, 1003);
  EXPECT_EQ(again->producer_epoch, 0);
  // A tombstone that cannot be written keeps the id.
  log.fail_append = true;
  EXPECT_EQ(c.remove_expired(10000), 0);
  EXPECT_TRUE(c.describe("idle"));
}

TEST(txn_records, KeyAndValueRoundTripInKafkasLayout) {
  const auto key = encode_txn_key("my-txn");
  // int16 version 0, int16 length 6, the id.
  const std::vector<uint8_t> want_key{0, 0, 0, 6, 'm', 'y', '-', 't', 'x', 'n'};
  EXPECT_EQ(key, want_key);
  EXPECT_EQ(*decode_txn_key(key), "my-txn");
  txn_metadata m;
  m.producer_id = 42;
  m.producer_epoch = 3;
  m.timeout_ms = 60000;
  m.state = txn_state::ongoing;
  m.partitions = {{"a", 0}, {"a", 2}, {"b", 1}};
  m.txn_start_timestamp = 100;
  m.txn_last_update_timestamp = 200;
  const auto value = encode_txn_value(m, 0);
  // Version 0: 2 + pid 8 + epoch 2 + timeout 4 + status 1 + array 4 + (2+1+4+8) + (2+1+4+4) +
  // last update 8 + start 8.
  EXPECT_EQ(value.size(), 2U + 8 + 2 + 4 + 1 + 4 + 15 + 11 + 8 + 8);
  EXPECT_EQ(value[0], 0);
  EXPECT_EQ(value[1], 0);
  auto back = decode_txn_value(value);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->producer_id, 42);
  EXPECT_EQ(back->state, txn_state::ongoing);
  EXPECT_EQ(back->partitions, m.partitions);
  EXPECT_EQ(back->txn_start_timestamp, 100);
  // Every strict prefix fails to decode, without throwing.
  for (size_t n = 0; n < value.size(); ++n) {
    EXPECT_FALSE(decode_txn_value(std::span<const uint8_t>(value).first(n))) << n;
  }
}

// Transactions v2 (KIP-890 part 2): EndTxn v5 bumps the epoch at PrepareX, the markers carry
// the bumped epoch, a retry is answered as the first call was, and an exhausted epoch moves the
// transactional id to a new producer id once the markers are written.
TEST(txn_coordinator, TransactionsV2BumpTheEpochAtEveryEndTxn) {
  fixture f;
  auto& c = f.coordinator;
  ASSERT_TRUE(c.init_producer_id("t", 60000, -1, -1, 10));
  ASSERT_EQ(c.add_partitions("t", 1000, 0, {{"a", 0}}, 11), error_code::none);
  auto committed = c.end_txn("t", 1000, 0, true, 2, 12);
  EXPECT_EQ(committed.error, error_code::none);
  EXPECT_EQ(committed.producer_id, 1000);
  EXPECT_EQ(committed.producer_epoch, 1);
  ASSERT_EQ(f.markers.written.size(), 1U);
  EXPECT_EQ(f.markers.written[0].marker.producer_epoch, 1);
  EXPECT_EQ(c.describe("t")->client_transaction_version, 2);
  // A retry with the epoch before the bump: the same answer, nothing written again.
  auto again = c.end_txn("t", 1000, 0, true, 2, 13);
  EXPECT_EQ(again.error, error_code::none);
  EXPECT_EQ(again.producer_epoch, 1);
  EXPECT_EQ(f.markers.written.size(), 1U);
  EXPECT_EQ(c.end_txn("t", 1000, 0, false, 2, 13).error, error_code::invalid_txn_state);
  // The next transaction runs at epoch 1; epoch 0 is fenced, epoch 2 is not yet anyone's.
  EXPECT_EQ(c.add_partitions("t", 1000, 0, {{"a", 0}}, 14), error_code::producer_fenced);
  ASSERT_EQ(c.add_partitions("t", 1000, 1, {{"a", 0}}, 14), error_code::none);
  EXPECT_EQ(c.end_txn("t", 1000, 2, false, 2, 15).error, error_code::producer_fenced);
  auto aborted = c.end_txn("t", 1000, 1, false, 2, 15);
  EXPECT_EQ(aborted.error, error_code::none);
  EXPECT_EQ(aborted.producer_epoch, 2);
  EXPECT_EQ(f.markers.written.back().marker.producer_epoch, 2);
  EXPECT_FALSE(f.markers.written.back().marker.commit);
  // EndTxn v4 and older (transactions v1) do not bump.
  ASSERT_EQ(c.add_partitions("t", 1000, 2, {{"a", 0}}, 16), error_code::none);
  auto v1 = c.end_txn("t", 1000, 2, true, 0, 17);
  EXPECT_EQ(v1.error, error_code::none);
  EXPECT_EQ(v1.producer_epoch, 2);
  EXPECT_EQ(f.markers.written.back().marker.producer_epoch, 2);
}

TEST(txn_coordinator, AnExhaustedEpochCompletesWithANewProducerId) {
  fixture f;
  // A transactional id at the last epoch that can be bumped (32766), with an ongoing transaction.
  {
    txn_metadata m;
    m.transactional_id = "t";
    m.producer_id = 1000;
    m.producer_epoch = max_producer_epoch;
    m.timeout_ms = 60000;
    m.state = txn_state::ongoing;
    m.partitions = {{"a", 0}};
    m.txn_start_timestamp = 5;
    m.txn_last_update_timestamp = 5;
    ASSERT_TRUE(f.log.ensure_topic());
    const auto value = encode_txn_value(m, 1);
    ASSERT_TRUE(
        f.log.append(partition_for("t", 4), build_txn_batch(encode_txn_key("t"), value, 5)));
  }
  f.next_id = 2000;
  ASSERT_TRUE(f.coordinator.load(6));
  auto& c = f.coordinator;
  auto done = c.end_txn("t", 1000, max_producer_epoch, true, 2, 7);
  EXPECT_EQ(done.error, error_code::none);
  EXPECT_EQ(done.producer_id, 2000);
  EXPECT_EQ(done.producer_epoch, 0);
  // The markers went out under the old producer id at the epoch past the last.
  ASSERT_EQ(f.markers.written.size(), 1U);
  EXPECT_EQ(f.markers.written[0].marker.producer_id, 1000);
  EXPECT_EQ(f.markers.written[0].marker.producer_epoch, max_producer_epoch + 1);
  auto m = c.describe("t");
  EXPECT_EQ(m->producer_id, 2000);
  EXPECT_EQ(m->previous_producer_id, 1000);
  EXPECT_EQ(m->next_producer_id, -1);
  // A retry from the old producer id at its last epoch gets the new id again.
  auto retry = c.end_txn("t", 1000, max_producer_epoch, true, 2, 8);
  EXPECT_EQ(retry.error, error_code::none);
  EXPECT_EQ(retry.producer_id, 2000);
  EXPECT_EQ(retry.producer_epoch, 0);
  EXPECT_FALSE(c.in_transaction(2000, 0, {"a", 0}));
  EXPECT_EQ(c.add_partitions("t", 2000, 0, {{"a", 0}}, 9), error_code::none);
  // The state written last is the new id's, and survives a reload.
  txn_coordinator reloaded(f.config, f.log, f.markers,
                           []() -> result<producer_id_t, error_code> { return 3000; });
  ASSERT_TRUE(reloaded.load(10));
  EXPECT_TRUE(reloaded.in_transaction(2000, 0, {"a", 0}));
}

// The finalized transaction.version decides the value version written to __transaction_state.
TEST(txn_coordinator, TheValueVersionFollowsTheFinalizedTransactionVersion) {
  for (int16_t level : {0, 1, 2}) {
    memory_txn_log log;
    memory_markers markers;
    txn_config config;
    txn_coordinator c(
        config, log, markers, []() -> result<producer_id_t, error_code> { return 7; },
        [level] { return level; });
    ASSERT_TRUE(c.init_producer_id("t", 60000, -1, -1, 1));
    const auto& batch = log.batches[partition_for("t", 4)].at(0);
    auto rec = record::decode_record(std::span<const uint8_t>(batch).subspan(61));
    ASSERT_TRUE(rec && rec->value);
    const auto& value = *rec->value;
    ASSERT_GE(value.size(), 2U);
    EXPECT_EQ((value[0] << 8) | value[1], level >= 1 ? 1 : 0) << "level " << level;
  }
}

// The sender's queue in memory.
class memory_queue final : public txn_marker_queue {
 public:
  void enqueue(pending_markers entry) override { entries.push_back(std::move(entry)); }
  std::vector<pending_markers> entries;
};

// Two transactional ids in different partitions of the 4 the memory log has.
std::pair<std::string, std::string> ids_in_two_partitions() {
  const std::string a = "txn-a";
  for (int i = 0;; ++i) {
    std::string b = "txn-b" + std::to_string(i);
    if (partition_for(b, 4) != partition_for(a, 4)) return {a, b};
  }
}

TEST(txn_coordinator, PartitionsLoadAndUnloadOneAtATimeAsLeadershipMoves) {
  fixture f;
  const auto [a, b] = ids_in_two_partitions();
  const int32_t pa = partition_for(a, 4);
  const int32_t pb = partition_for(b, 4);
  ASSERT_TRUE(f.coordinator.find_coordinator() == error_code::none);
  ASSERT_TRUE(f.coordinator.init_producer_id(a, 60000, -1, -1, 1));
  ASSERT_TRUE(f.coordinator.init_producer_id(b, 60000, -1, -1, 1));

  // The same log, as a cluster broker's coordinator that owns nothing yet.
  txn_coordinator c{f.config, f.log, f.markers,
                    [&f]() -> result<producer_id_t, error_code> { return f.next_id++; }};
  c.start_unowned();
  EXPECT_EQ(c.init_producer_id(a, 60000, -1, -1, 2).error(), error_code::not_coordinator);
  EXPECT_EQ(c.describe_transaction(b).error(), error_code::not_coordinator);
  EXPECT_EQ(c.owner_error(a), error_code::not_coordinator);

  ASSERT_TRUE(c.load_partition(pa, 3, 2));
  EXPECT_EQ(c.owner_error(a), error_code::none);
  EXPECT_EQ(c.owner_error(b), error_code::not_coordinator);
  auto described = c.describe_transaction(a);
  ASSERT_TRUE(described);
  EXPECT_EQ(described->producer_id, 1000);
  EXPECT_EQ(c.size(), 1u);
  auto bumped = c.init_producer_id(a, 60000, -1, -1, 3);
  ASSERT_TRUE(bumped);
  EXPECT_EQ(bumped->producer_epoch, 1);

  ASSERT_TRUE(c.load_partition(pb, 1, 4));
  EXPECT_EQ(c.size(), 2u);
  EXPECT_EQ(c.list_transactions({}, 5).transactions.size(), 2u);

  c.unload_partition(pa);
  EXPECT_EQ(c.owner_error(a), error_code::not_coordinator);
  EXPECT_EQ(c.end_txn(a, 1000, 1, true, 0, 6).error, error_code::not_coordinator);
  EXPECT_EQ(c.size(), 1u);
  // Loaded again: what the log has, the bump included.
  ASSERT_TRUE(c.load_partition(pa, 4, 7));
  EXPECT_EQ(c.describe_transaction(a)->producer_epoch, 1);
}

TEST(txn_coordinator, ALoadOvertakenByAnUnloadInstallsNothing) {
  fixture f;
  const std::string id = "overtaken";
  const int32_t p = partition_for(id, 4);
  ASSERT_TRUE(f.coordinator.find_coordinator() == error_code::none);
  ASSERT_TRUE(f.coordinator.init_producer_id(id, 60000, -1, -1, 1));
  txn_coordinator c{f.config, f.log, f.markers,
                    [&f]() -> result<producer_id_t, error_code> { return f.next_id++; }};
  c.start_unowned();
  // While the replay runs, its ids are loading; then the leadership goes.
  f.log.on_replay = [&](int32_t) {
    EXPECT_EQ(c.owner_error(id), error_code::coordinator_load_in_progress);
    EXPECT_EQ(c.init_producer_id(id, 60000, -1, -1, 2).error(),
              error_code::coordinator_load_in_progress);
    EXPECT_EQ(c.list_transactions({}, 2).error, error_code::coordinator_load_in_progress);
    c.unload_partition(p);
  };
  EXPECT_FALSE(c.load_partition(p, 2, 2));
  EXPECT_EQ(c.owner_error(id), error_code::not_coordinator);
  EXPECT_EQ(c.size(), 0u);
}

TEST(txn_coordinator, InAClusterMarkersGoToTheSenderAtTheCoordinatorEpoch) {
  fixture f;
  memory_queue queue;
  const std::string id = "spread";
  const int32_t p = partition_for(id, 4);
  ASSERT_TRUE(f.coordinator.find_coordinator() == error_code::none);
  txn_coordinator& single = f.coordinator;
  ASSERT_TRUE(single.init_producer_id(id, 60000, -1, -1, 1));
  txn_coordinator c{f.config, f.log, f.markers,
                    [&f]() -> result<producer_id_t, error_code> { return f.next_id++; }};
  c.start_unowned();
  c.set_marker_queue(&queue);
  ASSERT_TRUE(c.load_partition(p, 6, 2));
  const std::vector<topic_partition_key> parts{{"here", 0}, {"there", 0}, {"there", 1}};
  auto init = c.init_producer_id(id, 60000, -1, -1, 2);
  ASSERT_TRUE(init);
  ASSERT_EQ(c.add_partitions(id, init->producer_id, init->producer_epoch, parts, 3),
            error_code::none);
  ASSERT_EQ(c.end_txn(id, init->producer_id, init->producer_epoch, true, 0, 4).error,
            error_code::none);
  // Every marker is queued, its own partition's too, with where PrepareCommit went (the sender
  // waits for its commit); the transaction waits in PrepareCommit meanwhile (a retry of EndTxn
  // is CONCURRENT_TRANSACTIONS).
  EXPECT_TRUE(f.markers.written.empty());
  ASSERT_EQ(queue.entries.size(), 1u);
  const pending_markers entry = queue.entries[0];
  EXPECT_EQ(entry.transactional_id, id);
  EXPECT_EQ(entry.txn_partition, p);
  EXPECT_EQ(entry.marker.coordinator_epoch, 6);
  EXPECT_TRUE(entry.marker.commit);
  EXPECT_EQ(entry.partitions, (std::vector<std::pair<std::string, int32_t>>{
                                  {"here", 0}, {"there", 0}, {"there", 1}}));
  ASSERT_EQ(f.log.batches[p].size(), 4u);  // InitProducerId twice, AddPartitions, PrepareCommit
  EXPECT_EQ(entry.prepare_offset, 3);
  EXPECT_EQ(c.describe(id)->state, txn_state::prepare_commit);
  EXPECT_EQ(c.end_txn(id, init->producer_id, init->producer_epoch, true, 0, 5).error,
            error_code::concurrent_transactions);
  // The abort timer does not queue them twice.
  c.abort_timed_out(6);
  EXPECT_EQ(queue.entries.size(), 1u);

  // A fenced entry leaves it in PrepareCommit; the timer sends it again.
  c.markers_written(entry, false, 7);
  EXPECT_EQ(c.describe(id)->state, txn_state::prepare_commit);
  c.abort_timed_out(8);
  ASSERT_EQ(queue.entries.size(), 2u);
  // Written, but at a coordinator epoch that is no longer this one's: nothing happens.
  ASSERT_TRUE(c.load_partition(p, 7, 9));  // leads again at a newer epoch: markers sent again
  ASSERT_EQ(queue.entries.size(), 3u);
  EXPECT_EQ(queue.entries[2].marker.coordinator_epoch, 7);
  EXPECT_EQ(queue.entries[2].prepare_offset, -1);  // written by another leader before
  c.markers_written(queue.entries[1], true, 10);
  EXPECT_EQ(c.describe(id)->state, txn_state::prepare_commit);
  c.markers_written(queue.entries[2], true, 11);
  EXPECT_EQ(c.describe(id)->state, txn_state::complete_commit);
}

TEST(txn_marker_progress, AnswersDecideWhatIsSentAgain) {
  EXPECT_EQ(classify_marker_error(error_code::none), marker_outcome::written);
  EXPECT_EQ(classify_marker_error(error_code::not_leader_or_follower), marker_outcome::retry);
  EXPECT_EQ(classify_marker_error(error_code::unknown_topic_or_partition), marker_outcome::retry);
  EXPECT_EQ(classify_marker_error(error_code::not_enough_replicas), marker_outcome::retry);
  EXPECT_EQ(classify_marker_error(error_code::request_timed_out), marker_outcome::retry);
  EXPECT_EQ(classify_marker_error(error_code::invalid_producer_epoch), marker_outcome::fenced);
  EXPECT_EQ(classify_marker_error(error_code::transaction_coordinator_fenced),
            marker_outcome::fenced);

  marker_progress p(pending_markers{"t", 1, {}, {{"a", 0}, {"a", 1}, {"b", 0}}});
  EXPECT_FALSE(p.finished());
  p.record("a", 0, marker_outcome::written);
  p.record("a", 1, marker_outcome::retry);
  p.record("b", 0, marker_outcome::dropped);
  EXPECT_FALSE(p.finished());
  EXPECT_EQ(p.remaining(), (std::set<std::pair<std::string, int32_t>>{{"a", 1}}));
  p.record("a", 1, marker_outcome::written);
  EXPECT_TRUE(p.finished());
  EXPECT_FALSE(p.fenced());

  EXPECT_TRUE(p.written());

  marker_progress q(pending_markers{"t", 1, {}, {{"a", 0}, {"b", 0}}});
  q.record("a", 0, marker_outcome::fenced);
  EXPECT_TRUE(q.finished());
  EXPECT_TRUE(q.fenced());
  EXPECT_FALSE(q.written());

  // The coordinator lost its partition (or leads it at another epoch): nothing more is sent.
  marker_progress r(pending_markers{"t", 1, {}, {{"a", 0}}});
  r.abandon();
  EXPECT_TRUE(r.finished());
  EXPECT_FALSE(r.written());
}

}  // namespace
}  // namespace tarn::txn
