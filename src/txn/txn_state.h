// A transaction's state and metadata as Kafka's transaction coordinator keeps them
// (TransactionState, TransactionMetadata), and the transitions it allows. No I/O.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include "base/strong_types.h"

namespace tarn::txn {

// Kafka's TransactionState ids, as __transaction_state stores them (TransactionStatus).
enum class txn_state : int8_t {
  empty = 0,
  ongoing = 1,
  prepare_commit = 2,
  prepare_abort = 3,
  complete_commit = 4,
  complete_abort = 5,
  dead = 6,
  prepare_epoch_fence = 7,
};

// Kafka's names (TransactionState.stateName), as DescribeTransactions and the logs show them.
std::string_view state_name(txn_state s);
// The state of one of those names, exactly as spelled (TransactionState.fromName); nullopt for
// any other text.
std::optional<txn_state> state_from_name(std::string_view name);
// A stored TransactionStatus, or nullopt-like false for an id Kafka does not define.
bool valid_state_id(int8_t id);

// TransactionState.validPreviousStates: may a transaction in `from` move to `to`?
bool valid_transition(txn_state from, txn_state to);

using topic_partition_key = std::pair<std::string, int32_t>;

// Kafka's epoch limit: an epoch at Short.MAX_VALUE - 1 cannot be bumped, a new producer id is
// handed out instead (TransactionMetadata.isProducerEpochExhausted).
inline constexpr producer_epoch_t max_producer_epoch = 32766;

struct txn_metadata {
  std::string transactional_id;
  producer_id_t producer_id = -1;
  producer_id_t previous_producer_id = -1;
  producer_id_t next_producer_id = -1;
  producer_epoch_t producer_epoch = -1;
  producer_epoch_t last_producer_epoch = -1;
  int32_t timeout_ms = 0;
  txn_state state = txn_state::empty;
  std::set<topic_partition_key> partitions;
  timestamp_ms txn_start_timestamp = -1;
  timestamp_ms txn_last_update_timestamp = -1;
  // The transaction version the client used for the current transaction (Kafka's
  // ClientTransactionVersion): 2 when it came by Produce v12+/TxnOffsetCommit v5/EndTxn v5
  // (KIP-890 part 2: the epoch is bumped at every EndTxn), else 0.
  int16_t client_transaction_version = 0;

  friend bool operator==(const txn_metadata&, const txn_metadata&) = default;
};

}  // namespace tarn::txn
