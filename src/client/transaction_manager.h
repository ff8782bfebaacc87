// The transactional producer's state machine (Java's TransactionManager.State and its
// transitions), the partitions of the current transaction, and which Kafka errors are fatal,
// abortable or retriable for the transaction APIs. No I/O: the producer makes the requests
// (producer.cc) and reports their outcomes here, so the machine is unit-tested without sockets.
//
//   uninitialized --init--> initializing --identity--> ready --begin--> in_transaction
//   in_transaction --commit--> committing_transaction --EndTxn--> ready
//   in_transaction | abortable_error --abort--> aborting_transaction --EndTxn--> ready
//   any but fatal_error --abortable error--> abortable_error   (aborting stays aborting)
//   any --fatal error (fenced, ...)--> fatal_error            (for good)
//
// Thread: any; one mutex guards everything. send() asks needs_add() per record; the common
// answer (the partition is already in the transaction) is a lookup under that mutex.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "client/producer_batch.h"
#include "client/topic_partition.h"
#include "tarn/producer_record.h"

namespace tarn::client {

enum class txn_state : uint8_t {
  uninitialized,
  initializing,
  ready,
  in_transaction,
  committing_transaction,
  aborting_transaction,
  abortable_error,
  fatal_error,
};

// Java's names (TransactionManager.State), for messages.
std::string_view txn_state_name(txn_state state);

// What an error code in a transaction API's response means for the producer.
enum class txn_error_kind : uint8_t {
  none,              // 0
  retry,             // send the request again after a backoff
  find_coordinator,  // the coordinator moved or is down: look it up again, then retry
  abortable,         // the transaction must be aborted; the producer stays usable
  fatal,             // the producer is done (fenced, not authorized, a protocol violation)
};

// The transaction APIs, as the error tables differ slightly between them (Java's handlers).
enum class txn_api : uint8_t {
  init_producer_id,
  add_partitions,
  add_offsets,
  txn_offset_commit,
  end_txn,
  produce,
};

txn_error_kind classify_txn_error(txn_api api, int16_t code);

class transaction_manager {
 public:
  transaction_manager(std::string transactional_id, int32_t transaction_timeout_ms);

  const std::string& transactional_id() const { return transactional_id_; }
  int32_t transaction_timeout_ms() const { return transaction_timeout_ms_; }

  // init_transactions(): allowed from uninitialized, and again from initializing (a previous
  // call timed out, as Java lets initTransactions be retried).
  result<void, producer_error> begin_init();
  void complete_init(producer_identity identity);

  result<void, producer_error> begin_transaction();

  // For send(): an error unless a transaction is open and healthy (Java's
  // failIfNotReadyForSend); else whether `tp` still has to be added (AddPartitionsToTxn).
  result<bool, producer_error> needs_add(const topic_partition& tp) const;
  // AddPartitionsToTxn (or AddOffsetsToTxn) succeeded: the coordinator has the transaction.
  void partition_added(const topic_partition& tp);
  void offsets_added();
  // For send_offsets_to_transaction(): in_transaction, healthy.
  result<void, producer_error> check_in_transaction(std::string_view operation) const;

  // commit_transaction(): from in_transaction; an abortable or fatal error is returned as is
  // (the application must abort, or close).
  result<void, producer_error> begin_commit();
  // abort_transaction(): from in_transaction or abortable_error (or aborting again, after a
  // timed-out attempt); a fatal error is returned.
  result<void, producer_error> begin_abort();
  // Whether the coordinator knows of this transaction (a partition or the offsets were added):
  // without that, EndTxn is skipped (the coordinator would refuse it: nothing to end).
  bool transaction_started() const;
  // EndTxn answered: back to ready, the partitions forgotten.
  void complete_end_txn();
  // Retrying commit_transaction() after a timeout: committing again, from committing.
  bool committing() const;

  // A request or a batch failed: abortable or fatal by `kind`. A fatal error sticks; an abortable
  // one from aborting_transaction is ignored (the transaction is being aborted already).
  void set_error(txn_error_kind kind, producer_error error);
  // A batch of the transaction failed for good (delivery timeout, a non-retriable error): its
  // Produce error code decides (fenced: fatal; else abortable). `had_sequence`: the batch took a
  // sequence, so the partition's sequences have a gap and the epoch must be bumped after the
  // abort (KIP-360: InitProducerId with the current producer id and epoch).
  void batch_failed(const producer_error& error, bool had_sequence);
  bool epoch_bump_needed() const;
  void require_epoch_bump();
  void epoch_bumped(producer_identity identity);

  txn_state state() const;
  producer_identity identity() const;
  // Changes whenever the transaction's send rules may change (a transaction begins or ends, an
  // error): a thread that saw a partition in the transaction under this generation need not ask
  // again. Lock-free.
  uint64_t generation() const { return generation_.load(std::memory_order_acquire); }
  std::optional<producer_error> last_error() const;

 private:
  result<void, producer_error> invalid_transition(std::string_view operation) const;
  result<void, producer_error> error_state_result() const;
  // Under mutex_: every change of state is a new generation.
  void set_state(txn_state state) {
    state_ = state;
    generation_.fetch_add(1, std::memory_order_acq_rel);
  }

  const std::string transactional_id_;
  const int32_t transaction_timeout_ms_;
  mutable std::mutex mutex_;
  txn_state state_ = txn_state::uninitialized;
  producer_identity identity_;
  std::set<topic_partition> partitions_;  // added to the current transaction
  bool offsets_added_ = false;
  bool epoch_bump_needed_ = false;
  std::optional<producer_error> last_error_;
  std::atomic<uint64_t> generation_{1};
};

}  // namespace tarn::client
