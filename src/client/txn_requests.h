// The transactional producer's requests to the coordinators, each sent on a blocking
// connection and retried until it succeeds, fails for good or max.block.ms passes:
// InitProducerId, AddPartitionsToTxn and EndTxn to the transaction coordinator (FindCoordinator
// key type TRANSACTION), AddOffsetsToTxn to it too, TxnOffsetCommit to the group's coordinator.
// A lost connection, NOT_COORDINATOR and COORDINATOR_NOT_AVAILABLE look the coordinator up
// again; COORDINATOR_LOAD_IN_PROGRESS and CONCURRENT_TRANSACTIONS back off and retry; the rest
// is classified by classify_txn_error (abortable or fatal), which the caller applies to the
// transaction_manager.
//
// Thread: any; one mutex serializes the requests (the connections are not shared).
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/result.h"
#include "client/producer_batch.h"
#include "client/producer_config.h"
#include "client/transaction_manager.h"
#include "tarn/producer.h"

namespace tarn::client {

class blocking_client;
class cluster_client;

// A failed transactional request: what it means (abortable, fatal, or a timeout: kind none) and
// the error to report.
struct txn_request_error {
  txn_error_kind kind = txn_error_kind::fatal;
  producer_error error;
};

class txn_requests {
 public:
  txn_requests(const producer_config& config, std::string transactional_id);
  ~txn_requests();

  // InitProducerId for the transactional id; `current` (valid after an abort that needs an
  // epoch bump) asks for the same producer id's next epoch (KIP-360, v3+).
  result<producer_identity, txn_request_error> init_producer_id(int32_t transaction_timeout_ms,
                                                                producer_identity current);
  result<void, txn_request_error> add_partitions(producer_identity identity,
                                                 const std::vector<topic_partition>& partitions);
  result<void, txn_request_error> add_offsets(producer_identity identity,
                                              const std::string& group_id);
  result<void, txn_request_error> txn_offset_commit(producer_identity identity,
                                                    const std::vector<partition_offset>& offsets,
                                                    const consumer_group_metadata& group);
  result<void, txn_request_error> end_txn(producer_identity identity, bool commit);

 private:
  // One attempt: the response's error code (0: done), or a transport error.
  using attempt_fn = std::function<result<int16_t, std::string>(blocking_client&)>;
  result<void, txn_request_error> call(txn_api api, std::string_view api_name, int8_t key_type,
                                       const std::string& key, const attempt_fn& attempt);

  const producer_config config_;
  const std::string transactional_id_;
  std::mutex mutex_;
  std::unique_ptr<cluster_client> cluster_;
};

}  // namespace tarn::client
