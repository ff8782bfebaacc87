// The partition leader's reading of its transaction verification (txn_verifier.h) when the
// producer's coordinator is this broker's own, called in-process: the same mapping as an
// AddPartitionsToTxn answer from another broker (Kafka's AddPartitionsToTxnManager), then
// ReplicaManager's for Produce and CoordinatorOperationExceptionHelper's for TxnOffsetCommit.
#include "broker/txn_verifier.h"

#include <gtest/gtest.h>

#include <map>
#include <vector>

#include "txn/txn_coordinator.h"
#include "txn/txn_log.h"

namespace tarn::broker {
namespace {

using protocol::error_code;

// __transaction_state that takes every append and replays nothing: the coordinator's answers
// are what is tested, not its log.
class appending_txn_log final : public txn::txn_log {
 public:
  result<int32_t, error_code> ensure_topic() override { return 1; }
  std::optional<int32_t> partitions() const override { return 1; }
  result<offset_t, error_code> append(int32_t, std::vector<uint8_t>) override { return next_++; }
  result<void, std::string> replay(
      int32_t, const std::function<void(const txn::txn_log_record&)>&) override {
    return {};
  }

 private:
  offset_t next_ = 0;
};

class no_markers final : public txn::txn_markers {
 public:
  error_code write_marker(std::string_view, int32_t, const txn::marker_request&) override {
    return error_code::none;
  }
};

// Keeps the markers, so the transaction stays in PrepareCommit (a cluster's sender at work).
class holding_queue final : public txn::txn_marker_queue {
 public:
  void enqueue(txn::pending_markers entry) override { held.push_back(std::move(entry)); }
  std::vector<txn::pending_markers> held;
};

struct coordinator_fixture {
  appending_txn_log log;
  no_markers markers;
  txn::txn_config config;
  int64_t next_id = 7000;
  txn::txn_coordinator coordinator{
      config, log, markers, [this]() -> result<producer_id_t, error_code> { return next_id++; }};
};

using op = txn_supported_operation;

// What a Produce of `version` answers for a batch to `partition` of the producer.
error_code produce_answer(txn::txn_coordinator& c, int16_t version, int64_t pid, int16_t epoch,
                          const txn::topic_partition_key& partition) {
  const op operation = produce_operation(version);
  return verification_produce_error(verify_in_process(c, "t", pid, epoch, partition, operation, 10),
                                    operation);
}

error_code txn_offset_commit_answer(txn::txn_coordinator& c, int16_t version, int64_t pid,
                                    int16_t epoch, const txn::topic_partition_key& partition) {
  return verification_group_error(
      verify_in_process(c, "t", pid, epoch, partition, txn_offset_commit_operation(version), 10));
}

TEST(txn_verifier, ACoordinatorErrorIsReadAsKafkasManagerReadsIt) {
  EXPECT_EQ(coordinator_verification_error(error_code::producer_fenced, op::add_partition),
            error_code::invalid_producer_epoch);
  EXPECT_EQ(coordinator_verification_error(error_code::transaction_abortable, op::default_error),
            error_code::invalid_txn_state);
  EXPECT_EQ(coordinator_verification_error(error_code::transaction_abortable,
                                           op::generic_error_supported),
            error_code::transaction_abortable);
  EXPECT_EQ(coordinator_verification_error(error_code::transaction_abortable, op::add_partition),
            error_code::transaction_abortable);
  EXPECT_EQ(coordinator_verification_error(error_code::not_coordinator, op::default_error),
            error_code::not_coordinator);
  EXPECT_EQ(coordinator_verification_error(error_code::none, op::default_error), error_code::none);
}

TEST(txn_verifier, TheInProcessCoordinatorsErrorsAreMappedAsARemoteOnesForProduce) {
  coordinator_fixture f;
  auto& c = f.coordinator;
  auto init = c.init_producer_id("t", 60000, -1, -1, 1);
  ASSERT_TRUE(init);
  const int64_t pid = init->producer_id;
  const int16_t epoch = init->producer_epoch;
  const txn::topic_partition_key added{"a", 0};
  const txn::topic_partition_key never{"b", 0};
  ASSERT_EQ(c.add_partitions("t", pid, epoch, {added}, 5), error_code::none);

  // In the transaction: nothing to ask.
  EXPECT_EQ(produce_answer(c, 9, pid, epoch, added), error_code::none);
  // Never added: Produce v11 TRANSACTION_ABORTABLE, v10 and older INVALID_TXN_STATE; v12 adds it.
  EXPECT_EQ(produce_answer(c, 11, pid, epoch, never), error_code::transaction_abortable);
  EXPECT_EQ(produce_answer(c, 9, pid, epoch, never), error_code::invalid_txn_state);
  EXPECT_EQ(produce_answer(c, 12, pid, epoch, never), error_code::none);
  EXPECT_TRUE(c.in_transaction(pid, epoch, never));
  // A stale epoch: the coordinator's PRODUCER_FENCED is INVALID_PRODUCER_EPOCH at every version.
  EXPECT_EQ(produce_answer(c, 11, pid, static_cast<int16_t>(epoch - 1), {"c", 0}),
            error_code::invalid_producer_epoch);
  EXPECT_EQ(produce_answer(c, 12, pid, static_cast<int16_t>(epoch - 1), {"c", 0}),
            error_code::invalid_producer_epoch);

  // While the markers are being written: CONCURRENT_TRANSACTIONS only for transactions v2
  // clients; older ones retry NOT_ENOUGH_REPLICAS.
  holding_queue queue;
  c.set_marker_queue(&queue);
  ASSERT_EQ(c.end_txn("t", pid, epoch, true, 0, 20).error, error_code::none);
  ASSERT_EQ(queue.held.size(), 1U);
  EXPECT_EQ(produce_answer(c, 11, pid, epoch, {"c", 0}), error_code::not_enough_replicas);
  EXPECT_EQ(produce_answer(c, 9, pid, epoch, {"c", 0}), error_code::not_enough_replicas);
  EXPECT_EQ(produce_answer(c, 12, pid, epoch, {"c", 0}), error_code::concurrent_transactions);
  c.markers_written(queue.held[0], true, 30);

  // The coordinator loses the id's partition, or is loading it: NOT_ENOUGH_REPLICAS, retried
  // without a metadata refresh, as for a remote coordinator.
  c.start_unowned();
  EXPECT_EQ(produce_answer(c, 11, pid, epoch, {"c", 0}), error_code::not_enough_replicas);
  EXPECT_EQ(produce_answer(c, 12, pid, epoch, {"c", 0}), error_code::not_enough_replicas);
}

TEST(txn_verifier, TheInProcessCoordinatorsErrorsAreMappedAsARemoteOnesForTxnOffsetCommit) {
  coordinator_fixture f;
  auto& c = f.coordinator;
  auto init = c.init_producer_id("t", 60000, -1, -1, 1);
  ASSERT_TRUE(init);
  const int64_t pid = init->producer_id;
  const int16_t epoch = init->producer_epoch;
  ASSERT_EQ(c.add_partitions("t", pid, epoch, {{"a", 0}}, 5), error_code::none);
  const txn::topic_partition_key offsets{"__consumer_offsets", 3};
  EXPECT_EQ(txn_offset_commit_answer(c, 4, pid, epoch, offsets), error_code::transaction_abortable);
  EXPECT_EQ(txn_offset_commit_answer(c, 3, pid, epoch, offsets), error_code::invalid_txn_state);
  EXPECT_EQ(txn_offset_commit_answer(c, 4, pid, static_cast<int16_t>(epoch + 1), offsets),
            error_code::invalid_producer_epoch);
  EXPECT_EQ(txn_offset_commit_answer(c, 5, pid, epoch, offsets), error_code::none);
  EXPECT_EQ(txn_offset_commit_answer(c, 3, pid, epoch, offsets), error_code::none);
}

}  // namespace
}  // namespace tarn::broker
