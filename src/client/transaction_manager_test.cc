// The transactional producer's state machine without sockets: the legal transitions, the
// errors each state gives, which error codes are retriable, abortable or fatal per API, and
// the epoch bump after a failed batch that had a sequence.
#include "client/transaction_manager.h"

#include <gtest/gtest.h>

#include "protocol/error_codes.h"

namespace tarn::client {
namespace {

using protocol::error_code;

int16_t c(error_code e) { return static_cast<int16_t>(e); }

producer_error broker(error_code e, std::string message = "m") {
  return producer_error{producer_errc::broker_error, c(e), false, std::move(message)};
}

void make_ready(transaction_manager& m) {
  ASSERT_TRUE(m.begin_init());
  m.complete_init({7, 3});
}

TEST(transaction_manager, init_begin_commit_cycle) {
  transaction_manager m("tx", 60000);
  EXPECT_EQ(m.state(), txn_state::uninitialized);
  ASSERT_TRUE(m.begin_init());
  EXPECT_EQ(m.state(), txn_state::initializing);
  ASSERT_TRUE(m.begin_init()) << "a timed-out initTransactions may be called again";
  m.complete_init({7, 3});
  EXPECT_EQ(m.state(), txn_state::ready);
  EXPECT_EQ(m.identity(), (producer_identity{7, 3}));

  ASSERT_TRUE(m.begin_transaction());
  EXPECT_FALSE(m.transaction_started());
  const topic_partition a{"t", 0}, b{"t", 1};
  auto need = m.needs_add(a);
  ASSERT_TRUE(need);
  EXPECT_TRUE(*need);
  m.partition_added(a);
  EXPECT_FALSE(*m.needs_add(a));
  EXPECT_TRUE(*m.needs_add(b));
  EXPECT_TRUE(m.transaction_started());

  ASSERT_TRUE(m.begin_commit());
  EXPECT_EQ(m.state(), txn_state::committing_transaction);
  EXPECT_TRUE(m.begin_commit()) << "a timed-out commit may be retried";
  auto send = m.needs_add(b);
  ASSERT_FALSE(send);
  EXPECT_EQ(send.error().code, producer_errc::invalid_state);
  EXPECT_EQ(send.error().message, "Cannot call send in state COMMITTING_TRANSACTION");
  m.complete_end_txn();
  EXPECT_EQ(m.state(), txn_state::ready);

  // The next transaction starts with no partitions.
  ASSERT_TRUE(m.begin_transaction());
  EXPECT_TRUE(*m.needs_add(a));
  EXPECT_FALSE(m.transaction_started());
}

TEST(transaction_manager, calls_out_of_order_are_invalid_state) {
  transaction_manager m("tx", 60000);
  auto begin = m.begin_transaction();
  ASSERT_FALSE(begin);
  EXPECT_EQ(begin.error().code, producer_errc::invalid_state);
  EXPECT_EQ(begin.error().message,
            "Cannot call beginTransaction in state UNINITIALIZED (transactional.id tx)");
  auto send = m.needs_add({"t", 0});
  ASSERT_FALSE(send);
  EXPECT_EQ(send.error().message,
            "Cannot perform a 'send' before completing a call to initTransactions when "
            "transactions are enabled.");
  EXPECT_FALSE(m.begin_commit());
  EXPECT_FALSE(m.begin_abort());

  transaction_manager r("tx", 60000);
  make_ready(r);
  EXPECT_EQ(r.begin_commit().error().code, producer_errc::invalid_state);
  EXPECT_EQ(r.begin_abort().error().code, producer_errc::invalid_state);
  EXPECT_EQ(r.check_in_transaction("sendOffsetsToTransaction").error().code,
            producer_errc::invalid_state);
  EXPECT_EQ(r.begin_init().error().code, producer_errc::invalid_state);
  ASSERT_TRUE(r.begin_transaction());
  EXPECT_EQ(r.begin_transaction().error().code, producer_errc::invalid_state);
  EXPECT_TRUE(r.check_in_transaction("sendOffsetsToTransaction"));
}

TEST(transaction_manager, an_abortable_error_allows_only_abort) {
  transaction_manager m("tx", 60000);
  make_ready(m);
  ASSERT_TRUE(m.begin_transaction());
  m.partition_added({"t", 0});
  m.batch_failed(broker(error_code::not_enough_replicas, "t-0: NOT_ENOUGH_REPLICAS"), false);
  EXPECT_EQ(m.state(), txn_state::abortable_error);
  EXPECT_FALSE(m.epoch_bump_needed());

  auto send = m.needs_add({"t", 0});
  ASSERT_FALSE(send);
  EXPECT_EQ(send.error().code, producer_errc::abortable);
  EXPECT_EQ(send.error().kafka_error_code, c(error_code::not_enough_replicas));
  auto commit = m.begin_commit();
  ASSERT_FALSE(commit);
  EXPECT_EQ(commit.error().code, producer_errc::abortable);
  EXPECT_NE(commit.error().message.find("t-0: NOT_ENOUGH_REPLICAS"), std::string::npos);
  EXPECT_EQ(m.begin_transaction().error().code, producer_errc::abortable);

  ASSERT_TRUE(m.begin_abort());
  EXPECT_EQ(m.state(), txn_state::aborting_transaction);
  // Batches failing while the abort runs do not change the state.
  m.batch_failed(broker(error_code::request_timed_out), true);
  EXPECT_EQ(m.state(), txn_state::aborting_transaction);
  EXPECT_TRUE(m.epoch_bump_needed()) << "the batch had a sequence: a gap";
  m.epoch_bumped({7, 4});
  EXPECT_FALSE(m.epoch_bump_needed());
  m.complete_end_txn();
  EXPECT_EQ(m.state(), txn_state::ready);
  EXPECT_EQ(m.identity(), (producer_identity{7, 4}));
  EXPECT_FALSE(m.last_error().has_value());
  EXPECT_TRUE(m.begin_transaction());
}

TEST(transaction_manager, commit_fails_when_a_batch_failed_during_the_flush) {
  transaction_manager m("tx", 60000);
  make_ready(m);
  ASSERT_TRUE(m.begin_transaction());
  ASSERT_TRUE(m.begin_commit());
  m.batch_failed({producer_errc::delivery_timeout, 0, false, "Expiring 1 record(s)"}, true);
  EXPECT_EQ(m.state(), txn_state::abortable_error);
  EXPECT_EQ(m.begin_commit().error().code, producer_errc::abortable);
  EXPECT_TRUE(m.begin_abort());
}

TEST(transaction_manager, fenced_is_fatal_for_good) {
  for (auto e : {error_code::producer_fenced, error_code::invalid_producer_epoch,
                 error_code::transactional_id_authorization_failed}) {
    transaction_manager m("tx", 60000);
    make_ready(m);
    ASSERT_TRUE(m.begin_transaction());
    m.batch_failed(broker(e), true);
    EXPECT_EQ(m.state(), txn_state::fatal_error);
    EXPECT_EQ(m.begin_abort().error().code, producer_errc::fatal);
    EXPECT_EQ(m.begin_commit().error().code, producer_errc::fatal);
    EXPECT_EQ(m.begin_transaction().error().code, producer_errc::fatal);
    EXPECT_EQ(m.needs_add({"t", 0}).error().code, producer_errc::fatal);
    EXPECT_EQ(m.begin_abort().error().kafka_error_code, c(e));
    // Nothing brings it back.
    m.set_error(txn_error_kind::abortable, broker(error_code::not_enough_replicas));
    m.complete_end_txn();
    EXPECT_EQ(m.state(), txn_state::fatal_error);
  }
}

TEST(transaction_manager, an_error_before_init_completes_is_fatal) {
  transaction_manager m("tx", 60000);
  ASSERT_TRUE(m.begin_init());
  m.set_error(txn_error_kind::abortable, broker(error_code::unknown_producer_id));
  EXPECT_EQ(m.state(), txn_state::fatal_error);
}

TEST(transaction_manager, the_generation_changes_with_every_state_change) {
  transaction_manager m("tx", 60000);
  make_ready(m);
  const auto g0 = m.generation();
  ASSERT_TRUE(m.begin_transaction());
  const auto g1 = m.generation();
  EXPECT_NE(g0, g1);
  m.partition_added({"t", 0});
  EXPECT_EQ(m.generation(), g1) << "adding a partition keeps the send rules";
  ASSERT_TRUE(m.begin_commit());
  EXPECT_NE(m.generation(), g1);
  const auto g2 = m.generation();
  m.set_error(txn_error_kind::abortable, broker(error_code::not_enough_replicas));
  EXPECT_NE(m.generation(), g2);
}

TEST(classify_txn_error, per_api_as_java) {
  using k = txn_error_kind;
  EXPECT_EQ(classify_txn_error(txn_api::init_producer_id, 0), k::none);
  for (auto api : {txn_api::init_producer_id, txn_api::add_partitions, txn_api::add_offsets,
                   txn_api::txn_offset_commit, txn_api::end_txn}) {
    EXPECT_EQ(classify_txn_error(api, c(error_code::not_coordinator)), k::find_coordinator);
    EXPECT_EQ(classify_txn_error(api, c(error_code::coordinator_not_available)),
              k::find_coordinator);
    EXPECT_EQ(classify_txn_error(api, c(error_code::coordinator_load_in_progress)), k::retry);
    EXPECT_EQ(classify_txn_error(api, c(error_code::concurrent_transactions)), k::retry);
    EXPECT_EQ(classify_txn_error(api, c(error_code::producer_fenced)), k::fatal);
    EXPECT_EQ(classify_txn_error(api, c(error_code::invalid_producer_epoch)), k::fatal);
    EXPECT_EQ(classify_txn_error(api, c(error_code::transactional_id_authorization_failed)),
              k::fatal);
  }
  EXPECT_EQ(classify_txn_error(txn_api::add_partitions, c(error_code::unknown_topic_or_partition)),
            k::retry);
  EXPECT_EQ(classify_txn_error(txn_api::add_partitions, c(error_code::topic_authorization_failed)),
            k::abortable);
  EXPECT_EQ(classify_txn_error(txn_api::add_partitions, c(error_code::invalid_txn_state)),
            k::fatal);
  EXPECT_EQ(classify_txn_error(txn_api::add_offsets, c(error_code::group_authorization_failed)),
            k::abortable);
  EXPECT_EQ(classify_txn_error(txn_api::txn_offset_commit, c(error_code::unknown_member_id)),
            k::abortable);
  EXPECT_EQ(classify_txn_error(txn_api::txn_offset_commit, c(error_code::illegal_generation)),
            k::abortable);
  EXPECT_EQ(classify_txn_error(txn_api::end_txn, c(error_code::invalid_txn_state)), k::fatal);
  EXPECT_EQ(
      classify_txn_error(txn_api::init_producer_id, c(error_code::invalid_transaction_timeout)),
      k::fatal);
  EXPECT_EQ(classify_txn_error(txn_api::produce, c(error_code::not_enough_replicas)), k::abortable);
  EXPECT_EQ(classify_txn_error(txn_api::produce, c(error_code::out_of_order_sequence_number)),
            k::abortable);
  EXPECT_EQ(classify_txn_error(txn_api::produce, c(error_code::invalid_producer_epoch)), k::fatal);
}

}  // namespace
}  // namespace tarn::client
