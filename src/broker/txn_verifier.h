// The partition leader's check of a transactional batch (and the group coordinator's of a
// TxnOffsetCommit) with the producer's transaction coordinator on another broker (Kafka's
// AddPartitionsToTxnManager, KIP-890, docs/cluster.md "Coordinators"): AddPartitionsToTxn v5 to
// the leader of the transactional id's __transaction_state partition, VerifyOnly for Produce v11
// and TxnOffsetCommit v4 and older (transactions v1: the producer added the partition itself),
// VerifyOnly=false from Produce v12 and TxnOffsetCommit v5 (transactions v2: the partition is
// added for the producer). They go through a per_broker_sender (per_broker_sender.h): a queue,
// a thread and a connection per coordinator broker, what queued while a request was out batched
// into the next request (one transaction per transactional id in it, as Kafka's manager keeps
// one per id and node), so a paused coordinator holds up only the transactions it coordinates;
// each answer goes to a callback (from that thread): per partition NONE or an error as Kafka's
// AddPartitionsToTxnManager gives it (PRODUCER_FENCED is INVALID_PRODUCER_EPOCH,
// TRANSACTION_ABORTABLE is INVALID_TXN_STATE for clients that predate it, a lost connection or a
// timeout NETWORK_EXCEPTION, no live coordinator COORDINATOR_NOT_AVAILABLE); the handlers map
// those to what a producer retries (verification_produce_error, verification_group_error).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "broker/config.h"
#include "broker/handler.h"
#include "broker/pending_reply.h"
#include "broker/per_broker_sender.h"
#include "cluster/cluster_membership.h"
#include "protocol/error_codes.h"
#include "txn/txn_coordinator.h"

namespace tarn::broker {

class replica_manager;

// Kafka's TransactionSupportedOperation: what the client's request version knows.
enum class txn_supported_operation : uint8_t {
  default_error,            // Produce v10-, TxnOffsetCommit v3-: no TRANSACTION_ABORTABLE
  generic_error_supported,  // Produce v11, TxnOffsetCommit v4
  add_partition,            // Produce v12+, TxnOffsetCommit v5+: VerifyOnly=false
};
txn_supported_operation produce_operation(int16_t produce_version);
txn_supported_operation txn_offset_commit_operation(int16_t txn_offset_commit_version);

struct txn_verification {
  std::string transactional_id;
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  std::vector<std::pair<std::string, int32_t>> partitions;
  txn_supported_operation operation = txn_supported_operation::default_error;
  // One error per partition, in order; called once, from a verifier thread (or the caller's
  // when no coordinator is known or the verifier is stopped).
  std::function<void(std::vector<protocol::error_code>)> done;
};

// Kafka's AddPartitionsToTxnManager reading of the coordinator's answer for one partition:
// PRODUCER_FENCED is INVALID_PRODUCER_EPOCH (what producers expect there), TRANSACTION_ABORTABLE
// is INVALID_TXN_STATE for clients that predate it; the rest pass. The same whether the
// coordinator answered over the wire or is this broker's own (verify_in_process).
protocol::error_code coordinator_verification_error(protocol::error_code e,
                                                    txn_supported_operation operation);

// The verification when the producer's coordinator is this broker's (one node, or the
// coordinator's own partitions in a cluster): Kafka's leader goes through its
// AddPartitionsToTxnManager then too, so the coordinator's answer is read as a remote one
// (coordinator_verification_error); the caller maps it further as for a remote answer
// (verification_produce_error, verification_group_error). NONE when the partition is already in
// the producer's ongoing transaction; else add_partitions for `add_partition`, verify_partition
// for the others.
protocol::error_code verify_in_process(txn::txn_coordinator& coordinator,
                                       std::string_view transactional_id, int64_t producer_id,
                                       int16_t producer_epoch,
                                       const txn::topic_partition_key& partition,
                                       txn_supported_operation operation, int64_t now_ms);

// Kafka's ReplicaManager translation of a verification's error into the Produce answer: the
// coordinator's retriable errors become NOT_ENOUGH_REPLICAS (a producer retries it without a
// metadata refresh; CONCURRENT_TRANSACTIONS too below v12, where transactions v2 clients know
// it), the rest pass as they are.
protocol::error_code verification_produce_error(protocol::error_code e,
                                                txn_supported_operation operation);
// The group coordinator's (CoordinatorOperationExceptionHelper): NETWORK_EXCEPTION becomes
// COORDINATOR_LOAD_IN_PROGRESS (retried without a coordinator lookup), the rest pass.
protocol::error_code verification_group_error(protocol::error_code e);

// A verification's answer (one error per partition, in order), handed over from the
// verifier's thread to the handler's loop (pending_reply.h).
using pending_verification = pending_reply<std::vector<protocol::error_code>>;

class txn_verifier {
 public:
  txn_verifier(const broker_config& config, replica_manager& replicas,
               cluster::cluster_membership& membership, const txn::txn_coordinator& coordinator);
  ~txn_verifier();  // stops the threads; verifications not answered are dropped
  txn_verifier(const txn_verifier&) = delete;
  txn_verifier& operator=(const txn_verifier&) = delete;

  void stop();
  // Sends `v` to the coordinator of its transactional id now (the leader of the id's partition
  // of __transaction_state); COORDINATOR_NOT_AVAILABLE at once when there is none.
  void submit(txn_verification v);

 private:
  using sender = per_broker_sender<txn_verification>;
  // A round of a coordinator broker's queue: one request of the first verification of each
  // transactional id; a second one of an id goes in the next round.
  void send_round(broker_link& link, std::vector<txn_verification>& round,
                  std::vector<sender::deferred>& again);
  // One AddPartitionsToTxn to `link` for `batch` (distinct transactional ids).
  void send_to(broker_link& link, std::vector<txn_verification>& batch);

  const broker_config& config_;
  replica_manager& replicas_;
  cluster::cluster_membership& membership_;
  const txn::txn_coordinator& coordinator_;
  sender sender_;
};

}  // namespace tarn::broker
