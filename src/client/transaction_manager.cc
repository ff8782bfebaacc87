// The transactional producer's state machine (see transaction_manager.h).
#include "client/transaction_manager.h"

#include <fmt/format.h>

#include "protocol/error_codes.h"

namespace tarn::client {
namespace {

using protocol::error_code;

bool is(int16_t code, error_code e) { return code == static_cast<int16_t>(e); }

producer_error state_error(std::string message) {
  return producer_error{producer_errc::invalid_state, 0, false, std::move(message)};
}

}  // namespace

std::string_view txn_state_name(txn_state state) {
  switch (state) {
    case txn_state::uninitialized:
      return "UNINITIALIZED";
    case txn_state::initializing:
      return "INITIALIZING";
    case txn_state::ready:
      return "READY";
    case txn_state::in_transaction:
      return "IN_TRANSACTION";
    case txn_state::committing_transaction:
      return "COMMITTING_TRANSACTION";
    case txn_state::aborting_transaction:
      return "ABORTING_TRANSACTION";
    case txn_state::abortable_error:
      return "ABORTABLE_ERROR";
    case txn_state::fatal_error:
      return "FATAL_ERROR";
  }
  return "UNKNOWN";
}

txn_error_kind classify_txn_error(txn_api api, int16_t code) {
  if (code == 0) return txn_error_kind::none;
  // Fenced by a newer instance of the transactional id, or not allowed: fatal everywhere (Java
  // turns INVALID_PRODUCER_EPOCH into ProducerFencedException outside Produce too).
  if (is(code, error_code::producer_fenced) || is(code, error_code::invalid_producer_epoch) ||
      is(code, error_code::transactional_id_authorization_failed) ||
      is(code, error_code::cluster_authorization_failed) ||
      is(code, error_code::transaction_coordinator_fenced)) {
    return txn_error_kind::fatal;
  }
  if (api == txn_api::produce) {
    // Any other failed batch spoils the transaction only (Java's handleFailedBatch).
    return txn_error_kind::abortable;
  }
  if (is(code, error_code::not_coordinator) || is(code, error_code::coordinator_not_available)) {
    return txn_error_kind::find_coordinator;
  }
  if (is(code, error_code::coordinator_load_in_progress) ||
      is(code, error_code::concurrent_transactions) || is(code, error_code::request_timed_out)) {
    return txn_error_kind::retry;
  }
  switch (api) {
    case txn_api::add_partitions:
      if (is(code, error_code::unknown_topic_or_partition)) return txn_error_kind::retry;
      if (is(code, error_code::topic_authorization_failed) ||
          is(code, error_code::operation_not_attempted) ||
          is(code, error_code::unknown_producer_id) ||
          is(code, error_code::invalid_producer_id_mapping) ||
          is(code, error_code::transaction_abortable)) {
        return txn_error_kind::abortable;
      }
      return txn_error_kind::fatal;  // INVALID_TXN_STATE and the unexpected (Java's default)
    case txn_api::add_offsets:
      if (is(code, error_code::group_authorization_failed) ||
          is(code, error_code::unknown_producer_id) ||
          is(code, error_code::invalid_producer_id_mapping) ||
          is(code, error_code::transaction_abortable)) {
        return txn_error_kind::abortable;
      }
      return txn_error_kind::fatal;
    case txn_api::txn_offset_commit:
      if (is(code, error_code::unknown_topic_or_partition)) return txn_error_kind::retry;
      // CommitFailedException and friends: the member was rebalanced out; abort and rejoin.
      if (is(code, error_code::unknown_member_id) || is(code, error_code::illegal_generation) ||
          is(code, error_code::fenced_instance_id) ||
          is(code, error_code::group_authorization_failed) ||
          is(code, error_code::topic_authorization_failed) ||
          is(code, error_code::transaction_abortable)) {
        return txn_error_kind::abortable;
      }
      return txn_error_kind::fatal;
    case txn_api::init_producer_id:
    case txn_api::end_txn:
      if (api == txn_api::end_txn && is(code, error_code::transaction_abortable)) {
        return txn_error_kind::abortable;
      }
      return txn_error_kind::fatal;  // INVALID_TXN_STATE, INVALID_TRANSACTION_TIMEOUT, ...
    case txn_api::produce:
      break;
  }
  return txn_error_kind::fatal;
}

transaction_manager::transaction_manager(std::string transactional_id,
                                         int32_t transaction_timeout_ms)
    : transactional_id_(std::move(transactional_id)),
      transaction_timeout_ms_(transaction_timeout_ms) {}

result<void, producer_error> transaction_manager::invalid_transition(
    std::string_view operation) const {
  return fail(state_error(fmt::format("Cannot call {} in state {} (transactional.id {})", operation,
                                      txn_state_name(state_), transactional_id_)));
}

result<void, producer_error> transaction_manager::error_state_result() const {
  producer_error e = last_error_.value_or(producer_error{});
  if (state_ == txn_state::abortable_error) {
    e.code = producer_errc::abortable;
    e.retriable = false;
    e.message =
        "Cannot execute transactional method because we are in an error state "
        "(abort the transaction): " +
        e.message;
  } else {
    e.code = producer_errc::fatal;
    e.retriable = false;
    e.message = "The producer is in a fatal error state (close it): " + e.message;
  }
  return fail(std::move(e));
}

result<void, producer_error> transaction_manager::begin_init() {
  std::lock_guard lock(mutex_);
  if (state_ == txn_state::fatal_error) return error_state_result();
  if (state_ != txn_state::uninitialized && state_ != txn_state::initializing) {
    return invalid_transition("initTransactions");
  }
  set_state(txn_state::initializing);
  return {};
}

void transaction_manager::complete_init(producer_identity identity) {
  std::lock_guard lock(mutex_);
  if (state_ != txn_state::initializing) return;
  identity_ = identity;
  set_state(txn_state::ready);
}

result<void, producer_error> transaction_manager::begin_transaction() {
  std::lock_guard lock(mutex_);
  if (state_ == txn_state::fatal_error || state_ == txn_state::abortable_error) {
    return error_state_result();
  }
  if (state_ != txn_state::ready) return invalid_transition("beginTransaction");
  partitions_.clear();
  offsets_added_ = false;
  set_state(txn_state::in_transaction);
  return {};
}

result<bool, producer_error> transaction_manager::needs_add(const topic_partition& tp) const {
  std::lock_guard lock(mutex_);
  if (state_ == txn_state::in_transaction) return !partitions_.contains(tp);
  if (state_ == txn_state::fatal_error || state_ == txn_state::abortable_error) {
    auto e = error_state_result().error();
    e.message =
        "Cannot perform send because at least one previous transactional request has "
        "failed with errors: " +
        e.message;
    return fail(std::move(e));
  }
  if (state_ == txn_state::uninitialized || state_ == txn_state::initializing) {
    return fail(
        state_error("Cannot perform a 'send' before completing a call to "
                    "initTransactions when transactions are enabled."));
  }
  return fail(state_error(fmt::format("Cannot call send in state {}", txn_state_name(state_))));
}

result<void, producer_error> transaction_manager::check_in_transaction(
    std::string_view operation) const {
  std::lock_guard lock(mutex_);
  if (state_ == txn_state::fatal_error || state_ == txn_state::abortable_error) {
    return error_state_result();
  }
  if (state_ != txn_state::in_transaction) return invalid_transition(operation);
  return {};
}

void transaction_manager::partition_added(const topic_partition& tp) {
  std::lock_guard lock(mutex_);
  partitions_.insert(tp);
}

void transaction_manager::offsets_added() {
  std::lock_guard lock(mutex_);
  offsets_added_ = true;
}

result<void, producer_error> transaction_manager::begin_commit() {
  std::lock_guard lock(mutex_);
  if (state_ == txn_state::fatal_error || state_ == txn_state::abortable_error) {
    return error_state_result();
  }
  if (state_ == txn_state::committing_transaction) return {};  // a retry after timed_out
  if (state_ != txn_state::in_transaction) return invalid_transition("commitTransaction");
  set_state(txn_state::committing_transaction);
  return {};
}

result<void, producer_error> transaction_manager::begin_abort() {
  std::lock_guard lock(mutex_);
  if (state_ == txn_state::fatal_error) return error_state_result();
  if (state_ == txn_state::aborting_transaction) return {};  // a retry after timed_out
  if (state_ != txn_state::in_transaction && state_ != txn_state::abortable_error) {
    return invalid_transition("abortTransaction");
  }
  set_state(txn_state::aborting_transaction);
  return {};
}

bool transaction_manager::transaction_started() const {
  std::lock_guard lock(mutex_);
  return !partitions_.empty() || offsets_added_;
}

bool transaction_manager::committing() const {
  std::lock_guard lock(mutex_);
  return state_ == txn_state::committing_transaction;
}

void transaction_manager::complete_end_txn() {
  std::lock_guard lock(mutex_);
  if (state_ == txn_state::fatal_error) return;
  partitions_.clear();
  offsets_added_ = false;
  last_error_.reset();
  set_state(txn_state::ready);
}

void transaction_manager::set_error(txn_error_kind kind, producer_error error) {
  std::lock_guard lock(mutex_);
  if (state_ == txn_state::fatal_error) return;
  if (kind == txn_error_kind::fatal) {
    error.code = producer_errc::fatal;
    last_error_ = std::move(error);
    set_state(txn_state::fatal_error);
    return;
  }
  if (state_ == txn_state::aborting_transaction) return;  // already on its way out
  // Before init completes there is no transaction to abort: an abortable error there is fatal.
  if (state_ == txn_state::uninitialized || state_ == txn_state::initializing) {
    error.code = producer_errc::fatal;
    last_error_ = std::move(error);
    set_state(txn_state::fatal_error);
    return;
  }
  error.code = producer_errc::abortable;
  last_error_ = std::move(error);
  set_state(txn_state::abortable_error);
}

void transaction_manager::batch_failed(const producer_error& error, bool had_sequence) {
  const auto kind = classify_txn_error(txn_api::produce, error.kafka_error_code);
  {
    std::lock_guard lock(mutex_);
    if (had_sequence) epoch_bump_needed_ = true;
  }
  set_error(kind == txn_error_kind::fatal ? kind : txn_error_kind::abortable, error);
}

bool transaction_manager::epoch_bump_needed() const {
  std::lock_guard lock(mutex_);
  return epoch_bump_needed_;
}

void transaction_manager::require_epoch_bump() {
  std::lock_guard lock(mutex_);
  epoch_bump_needed_ = true;
}

void transaction_manager::epoch_bumped(producer_identity identity) {
  std::lock_guard lock(mutex_);
  identity_ = identity;
  epoch_bump_needed_ = false;
}

txn_state transaction_manager::state() const {
  std::lock_guard lock(mutex_);
  return state_;
}

producer_identity transaction_manager::identity() const {
  std::lock_guard lock(mutex_);
  return identity_;
}

std::optional<producer_error> transaction_manager::last_error() const {
  std::lock_guard lock(mutex_);
  return last_error_;
}

}  // namespace tarn::client
