// The transaction coordinator (Kafka's TransactionCoordinator and TransactionStateManager) for a
// one-node broker: transactional ids, their producer ids and epochs, and each transaction's
// state machine (txn_state.h). Every state change is appended to __transaction_state
// (txn_records.h) before it is applied, and the topic is replayed by load(). Markers are written
// through txn_markers as part of EndTxn, so the coordinator answers EndTxn once the transaction
// is complete (Kafka answers after PrepareCommit/PrepareAbort and completes it in the
// background; the states a client can observe are the same).
//
// Errors are Kafka error codes, as the handlers answer them at the newest versions; the handlers
// map PRODUCER_FENCED to INVALID_PRODUCER_EPOCH for versions before it existed.
//
// In a cluster (docs/cluster.md, "Coordinators") the coordinator owns only the partitions of
// __transaction_state this broker leads: start_unowned(), then load_partition/unload_partition as
// leadership moves (Kafka's onElection/onResignation); an id of another partition is
// NOT_COORDINATOR, of one loading COORDINATOR_LOAD_IN_PROGRESS, and the coordinator epoch is the
// partition's leader epoch. Markers go to a txn_marker_queue (the sender writes them once
// PrepareX is committed, at each partition's leader); the transaction stays PrepareX until
// markers_written().
//
// Threading: every public call takes the coordinator's one mutex, and calls the seams (txn_log,
// txn_markers, txn_marker_queue) with it held; the seams must never call back into the
// coordinator. A partition's replay runs without the mutex.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "base/result.h"
#include "base/strong_types.h"
#include "protocol/error_codes.h"
#include "txn/txn_log.h"
#include "txn/txn_state.h"

namespace tarn::txn {

struct txn_config {
  int32_t max_timeout_ms = 900000;              // transaction.max.timeout.ms
  int32_t state_log_num_partitions = 50;        // transaction.state.log.num.partitions
  int32_t state_log_segment_bytes = 104857600;  // transaction.state.log.segment.bytes
  int32_t state_log_replication_factor = 3;     // transaction.state.log.replication.factor
  int32_t state_log_min_isr = 2;                // transaction.state.log.min.isr
  int64_t abort_timed_out_interval_ms =
      10000;  // transaction.abort.timed.out.transaction.cleanup.interval.ms
  int64_t transactional_id_expiration_ms = 604800000;  // transactional.id.expiration.ms
  int64_t remove_expired_interval_ms =
      3600000;  // transaction.remove.expired.transaction.cleanup.interval.ms
};

// Hands out a new producer id (the broker's source, shared with idempotent producers), or the
// error to answer (COORDINATOR_LOAD_IN_PROGRESS while a cluster's next block is on its way).
using producer_id_source = std::function<result<producer_id_t, protocol::error_code>()>;
// The finalized transaction.version feature level (it decides the __transaction_state value
// version and the version broker-initiated aborts run with). Unset: 0.
using transaction_version_source = std::function<int16_t()>;

struct producer_id_and_epoch {
  producer_id_t producer_id = -1;
  producer_epoch_t producer_epoch = -1;
};

// ListTransactions' filters (TransactionStateManager.listTransactionStates); empty lists and a
// negative duration filter nothing out.
struct list_txn_filter {
  std::vector<std::string_view> states;  // Kafka's state names; unknown ones are reported back
  std::vector<producer_id_t> producer_ids;
  int64_t duration_ms = -1;  // v1+: only transactions started more than this long ago
  std::optional<std::string_view> transactional_id_pattern;  // v2+: a full-match regex
};

struct listed_txn {
  std::string transactional_id;
  producer_id_t producer_id = -1;
  txn_state state = txn_state::empty;
};

struct list_txn_result {
  protocol::error_code error = protocol::error_code::none;
  std::vector<std::string> unknown_state_filters;
  std::vector<listed_txn> transactions;  // by transactional id
};

// EndTxn's answer: the error, and on success the producer id and epoch the client goes on with
// (v5: bumped by every EndTxn of transactions v2; a new producer id when the epoch ran out).
struct end_txn_result {
  protocol::error_code error = protocol::error_code::none;
  producer_id_t producer_id = -1;
  producer_epoch_t producer_epoch = -1;
};

// Kafka's Utils.abs(transactionalId.hashCode) % partitions (String.hashCode over the id's UTF-16
// code units; tarn hashes the UTF-8 bytes, the same for ASCII ids).
int32_t partition_for(std::string_view transactional_id, int32_t partitions);

class txn_coordinator {
 public:
  txn_coordinator(const txn_config& config, txn_log& log, txn_markers& markers,
                  producer_id_source next_producer_id,
                  transaction_version_source transaction_version = {});

  // Replays every partition of __transaction_state (if it exists), then completes the
  // transactions a crash left in PrepareCommit/PrepareAbort (their markers are written again).
  result<void, std::string> load(timestamp_ms now);

  // In a cluster: owns no partition until load_partition (every id NOT_COORDINATOR).
  void start_unowned();
  // This broker leads __transaction_state-`partition` at leader epoch `coordinator_epoch`: the
  // partition is replayed (its ids COORDINATOR_LOAD_IN_PROGRESS meanwhile), then served, and its
  // PrepareX transactions' markers are written again at the new coordinator epoch. False when an
  // unload (or a newer load) overtook it or the replay failed.
  bool load_partition(int32_t partition, int32_t coordinator_epoch, timestamp_ms now);
  // No longer its leader: its ids are forgotten (the log keeps them) and NOT_COORDINATOR.
  void unload_partition(int32_t partition);
  // Where the markers go in a cluster (all of them, through the sender); without one they are
  // written at once through txn_markers and a failed one is retried by abort_timed_out.
  void set_marker_queue(txn_marker_queue* queue);
  // The sender wrote every marker of the entry: CompleteCommit/CompleteAbort is appended while
  // the id's partition is still owned at that coordinator epoch and the transaction is still
  // that PrepareX. `ok` false (a marker was refused as fenced): the entry is dropped and the
  // next abort_timed_out tick sends it again.
  void markers_written(const pending_markers& entry, bool ok, timestamp_ms now);
  // NONE when this coordinator serves the id now; NOT_COORDINATOR or
  // COORDINATOR_LOAD_IN_PROGRESS otherwise.
  protocol::error_code owner_error(std::string_view transactional_id) const;
  // The partition of __transaction_state an id belongs to (the topic's partition count, else
  // transaction.state.log.num.partitions).
  int32_t txn_partition(std::string_view transactional_id) const;

  // FindCoordinator with key type TRANSACTION: creates __transaction_state if needed; NONE or
  // COORDINATOR_NOT_AVAILABLE.
  protocol::error_code find_coordinator();

  // InitProducerId with a transactional id (TransactionCoordinator.handleInitProducerId).
  // expected_* are the v3+ ProducerId/ProducerEpoch (-1: none), for KIP-360's recovery.
  result<producer_id_and_epoch, protocol::error_code> init_producer_id(
      std::string_view transactional_id, int32_t timeout_ms, producer_id_t expected_producer_id,
      producer_epoch_t expected_epoch, timestamp_ms now);

  // AddPartitionsToTxn / AddOffsetsToTxn (the group's __consumer_offsets partition): one error
  // for all the partitions.
  protocol::error_code add_partitions(std::string_view transactional_id, producer_id_t producer_id,
                                      producer_epoch_t epoch,
                                      const std::vector<topic_partition_key>& partitions,
                                      timestamp_ms now);
  // AddPartitionsToTxn v4+ VerifyOnly (handleVerifyPartitionsInTransaction): NONE if the
  // partition is in the transaction of that producer, else TRANSACTION_ABORTABLE;
  // CONCURRENT_TRANSACTIONS while it is being completed; or the producer's error.
  protocol::error_code verify_partition(std::string_view transactional_id,
                                        producer_id_t producer_id, producer_epoch_t epoch,
                                        const topic_partition_key& partition) const;
  // Produce's check for a transactional batch: is the partition in the ongoing transaction of
  // this producer id and epoch?
  bool in_transaction(producer_id_t producer_id, producer_epoch_t epoch,
                      const topic_partition_key& partition) const;

  // EndTxn (TransactionCoordinator.endTransaction): PrepareCommit/PrepareAbort, the markers to
  // every partition, CompleteCommit/CompleteAbort. client_transaction_version 2 (EndTxn v5+,
  // KIP-890 part 2) bumps the epoch at PrepareX, so the markers carry the bumped epoch and fence
  // the transaction's late batches; when the epoch is exhausted the transaction completes
  // with a new producer id at epoch 0. A retry of an EndTxn that bumped is answered as it was.
  end_txn_result end_txn(std::string_view transactional_id, producer_id_t producer_id,
                         producer_epoch_t epoch, bool commit, int16_t client_transaction_version,
                         timestamp_ms now);

  // Aborts every Ongoing transaction older than its timeout, with the producer's epoch bumped
  // first so the producer is fenced (abortTimedOutTransactions). Returns how many were aborted.
  int32_t abort_timed_out(timestamp_ms now);

  // Removes every transactional id unused for transactional.id.expiration.ms whose state allows
  // it (Empty, CompleteCommit, CompleteAbort): a tombstone for its key in __transaction_state,
  // then it is forgotten (TransactionStateManager.removeExpiredTransactionalIds). An id whose
  // tombstone could not be written stays. Returns how many were removed.
  int32_t remove_expired(timestamp_ms now);

  // DescribeTransactions for one id (TransactionCoordinator.handleDescribeTransactions):
  // INVALID_REQUEST for the empty id, TRANSACTIONAL_ID_NOT_FOUND for one not known (or Dead).
  result<txn_metadata, protocol::error_code> describe_transaction(
      std::string_view transactional_id) const;

  // ListTransactions: the transactions that pass every filter (Dead ones never do), by id;
  // INVALID_REGULAR_EXPRESSION (and nothing else) for a pattern that does not compile.
  list_txn_result list_transactions(const list_txn_filter& filter, timestamp_ms now) const;

  // For tests and tools: a copy of a transactional id's metadata.
  std::optional<txn_metadata> describe(std::string_view transactional_id) const;
  size_t size() const;

 private:
  // Appends the metadata `m` would have to __transaction_state; an error code on failure.
  protocol::error_code persist(const txn_metadata& m, timestamp_ms now);
  // Moves `m` to `to` (persisting it first, with `change` applied too); the transition must be
  // valid. `m` is untouched when the append fails.
  protocol::error_code transition(txn_metadata& m, txn_state to, timestamp_ms now,
                                  const std::function<void(txn_metadata&)>& change = {});
  // The finalized transaction.version (0 without a source).
  int16_t transaction_version() const;
  // PrepareX, the markers, CompleteX. `m` must be Ongoing (or PrepareX after a load).
  protocol::error_code complete(txn_metadata& m, bool commit, timestamp_ms now);
  // CompleteX once every marker is written.
  void finish(txn_metadata& m, bool commit, timestamp_ms now);
  // owner_error under mu_.
  protocol::error_code owner_error_locked(std::string_view transactional_id) const;
  int32_t partition_count() const;
  int32_t coordinator_epoch_of(std::string_view transactional_id) const;  // under mu_
  // Decodes one partition's records into `out` (no lock needed); an error text on failure.
  result<void, std::string> replay_partition(int32_t partition,
                                             std::unordered_map<std::string, txn_metadata>& out);
  txn_metadata* find(std::string_view transactional_id);
  const txn_metadata* find(std::string_view transactional_id) const;
  const txn_metadata* find_by_producer(producer_id_t producer_id) const;

  txn_config config_;
  txn_log& log_;
  txn_markers& markers_;
  producer_id_source next_producer_id_;
  transaction_version_source transaction_version_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, txn_metadata> txns_;
  std::unordered_map<producer_id_t, std::string> by_producer_;
  // Which partitions this coordinator serves: all of them (a single node), or those loaded.
  struct partition_ownership {
    bool loaded = false;
    int32_t coordinator_epoch = 0;
    uint64_t generation = 0;
  };
  bool owns_all_ = true;
  std::map<int32_t, partition_ownership> owned_;
  uint64_t generation_ = 0;
  txn_marker_queue* marker_queue_ = nullptr;
  std::set<std::string> markers_in_flight_;  // ids whose markers the queue has
  offset_t last_persisted_offset_ = -1;      // where persist() last appended
};

}  // namespace tarn::txn
