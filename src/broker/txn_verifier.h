// The partition leader's check of a transactional batch with the producer's transaction
// coordinator on another broker (Kafka's AddPartitionsToTxnManager, KIP-890, docs/cluster.md
// "Coordinators"): AddPartitionsToTxn v5 to the leader of the transactional id's
// __transaction_state partition, VerifyOnly for Produce v11 and older (transactions v1: the
// producer added the partition itself), VerifyOnly=false for Produce v12+ (transactions v2: the
// leader adds the partition for the producer). One thread of its own sends them, batched per
// coordinator broker into one request per round over one broker_connection each, and hands each
// answer to a callback (from that thread): per partition NONE or an error as Kafka's
// AddPartitionsToTxnManager gives it (PRODUCER_FENCED is INVALID_PRODUCER_EPOCH,
// TRANSACTION_ABORTABLE is INVALID_TXN_STATE for Produce v10 and older, a lost connection or a
// timeout NETWORK_EXCEPTION, no live coordinator COORDINATOR_NOT_AVAILABLE); the produce handler
// maps those to what a producer retries (verification_produce_error).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "broker/broker_connection.h"
#include "broker/config.h"
#include "cluster/cluster_membership.h"
#include "protocol/error_codes.h"
#include "txn/txn_coordinator.h"

namespace tarn::broker {

class replica_manager;

struct txn_verification {
  std::string transactional_id;
  int64_t producer_id = -1;
  int16_t producer_epoch = -1;
  std::vector<std::pair<std::string, int32_t>> partitions;
  int16_t produce_version = 0;  // v12+: add the partitions (VerifyOnly=false)
  // One error per partition, in order; called once, from the verifier's thread (or the caller's
  // when no coordinator is known).
  std::function<void(std::vector<protocol::error_code>)> done;
};

// Kafka's ReplicaManager translation of a verification's error into the Produce answer: the
// coordinator's retriable errors become NOT_ENOUGH_REPLICAS (a producer retries it without a
// metadata refresh; CONCURRENT_TRANSACTIONS too below v12, where transactions v2 clients know
// it), the rest pass as they are.
protocol::error_code verification_produce_error(protocol::error_code e, int16_t produce_version);

class txn_verifier {
 public:
  txn_verifier(const broker_config& config, replica_manager& replicas,
               cluster::cluster_membership& membership, const txn::txn_coordinator& coordinator);
  ~txn_verifier();  // stops the thread; verifications not answered are dropped
  txn_verifier(const txn_verifier&) = delete;
  txn_verifier& operator=(const txn_verifier&) = delete;

  void start();
  void stop();
  void submit(txn_verification v);

 private:
  void run();
  // One AddPartitionsToTxn to broker `node` for `batch` (distinct transactional ids).
  void send_to(int32_t node, std::vector<txn_verification>& batch);

  const broker_config& config_;
  replica_manager& replicas_;
  cluster::cluster_membership& membership_;
  const txn::txn_coordinator& coordinator_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::vector<txn_verification> queued_;
  std::map<int32_t, std::unique_ptr<broker_connection>> connections_;  // the thread's own
  std::vector<uint8_t> buffer_;
  std::thread thread_;
};

}  // namespace tarn::broker
