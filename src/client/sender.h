// The sender: the producer's one I/O thread (Java's Sender, librdkafka's broker threads folded
// into one). It keeps the metadata fresh, gets a producer id (InitProducerId) when idempotent,
// drains ready batches per broker into Produce requests (one batch per partition per request,
// at most max.in.flight.requests.per.connection requests in flight per broker), and completes,
// retries or fails each batch from the response.
//
// Retries: a retriable error (by Kafka's error table) is retried until retries or
// delivery.timeout.ms run out; errors meaning stale metadata (NOT_LEADER_OR_FOLLOWER,
// UNKNOWN_TOPIC_OR_PARTITION, ...) and lost connections also refresh the metadata.
//
// Idempotence recovery is KIP-360's, as Java's idempotent producer does it: when a batch that
// carried a sequence fails for good, or the broker answers UNKNOWN_PRODUCER_ID, or
// OUT_OF_ORDER_SEQUENCE_NUMBER for the batch that follows the last acknowledged one (a real gap),
// the sender stops draining, waits for its requests in flight, bumps the epoch of the same
// producer id on the client side and restarts the affected partitions at sequence 0, restamping
// their queued retries; the other partitions move to the new epoch once their batches in flight
// are done. Only at epoch INT16_MAX does it get a new producer id (InitProducerId).
// OUT_OF_ORDER_SEQUENCE_NUMBER for a later batch is retried as is: an earlier one failed. For a
// batch behind the last acknowledged sequence it bumps the epoch too: Kafka accepts any sequence
// from a producer it has no state for, so when a partition's first batch fails retriably (a
// partition of a topic just created, not yet hosted) the batches pipelined behind it are written
// first and the failed one can never follow them under the same epoch.
//
// MESSAGE_TOO_LARGE for a batch of several records splits it (Java's splitAndReenqueue); for a
// single record it fails that record with record_too_large.
//
// Transactional (a transaction_manager given): no InitProducerId here (init_transactions() gets
// the identity) and no client-side epoch bump; Produce carries the transactional id, and a batch
// that fails for good is reported to the transaction manager, which makes the transaction
// abortable (or the producer fatal when fenced). A sequence gap is then closed by the epoch bump
// abort_transaction() asks the coordinator for.
//
// Thread: run() owns the io_context; wakeup() and begin_close() may be called from any thread.
#pragma once

#include <asio.hpp>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "client/connection.h"
#include "client/metadata_cache.h"
#include "client/producer_config.h"
#include "client/record_accumulator.h"
#include "client/transaction_manager.h"

namespace tarn::client {

class sender {
 public:
  // `txn`: the transactional producer's state machine, nullptr otherwise; it outlives the sender.
  sender(const producer_config& config, record_accumulator& accumulator, metadata_cache& metadata,
         transaction_manager* txn = nullptr);
  ~sender();

  // Starts the I/O thread.
  void start();
  // Makes the I/O thread look at the accumulator now (a batch filled, a flush began).
  // Thread: any.
  void wakeup();
  // The same for a send() that opened or filled a batch, but only when the sender could act on
  // it: while every broker the last pass found ready had max.in.flight requests outstanding, the
  // next response runs the pass anyway (and the pass's timer bounds the wait: at most 50 ms), so
  // the application thread skips waking the I/O thread (a wakeup per batch costs both threads a
  // context switch). Thread: any.
  void wakeup_for_data() {
    if (!saturated_.load(std::memory_order_relaxed)) wakeup();
  }
  // Stops once every batch is complete, or at `deadline`: then whatever is left fails with
  // "Producer is closed forcefully.". Joins the I/O thread. Thread: any but the I/O thread.
  void close(std::chrono::steady_clock::time_point deadline);

  // abort_transaction(): fails the batches not yet sent with `error`, on the I/O thread, and
  // returns how many of them had a sequence. Thread: any but the I/O thread.
  size_t abort_undrained(const producer_error& error);
  // After a transactional epoch bump (InitProducerId with the current id and epoch): every
  // partition restarts at sequence 0 under `identity`. Call with nothing in flight. Thread: any
  // but the I/O thread.
  void reset_producer_state(producer_identity identity);

 private:
  using clock = std::chrono::steady_clock;

  void run_once();
  void schedule(std::chrono::milliseconds delay);
  void fail_expired(clock::time_point now);
  void maybe_update_metadata(clock::time_point now);
  void maybe_init_producer_id(clock::time_point now);
  void send_produce(node_id node, std::vector<std::unique_ptr<producer_batch>> batches);
  void handle_produce_response(
      const std::shared_ptr<broker_connection>& connection, node_id node, int16_t version,
      std::shared_ptr<std::vector<std::unique_ptr<producer_batch>>> batches,
      result<std::span<const uint8_t>, std::string> response);
  void handle_batch_error(std::unique_ptr<producer_batch> batch, int16_t error_code,
                          std::string_view error_message, clock::time_point now);
  void retry_or_fail(std::unique_ptr<producer_batch> batch, const producer_error& error,
                     clock::time_point now);

  // A usable connection to `node` (a broker id, or a negative bootstrap index), connecting it
  // if needed; nullptr while connecting or backing off after a failure.
  std::shared_ptr<broker_connection> connection_to(node_id node, clock::time_point now);
  // Any ready connection, or one being set up to a known or bootstrap broker.
  std::shared_ptr<broker_connection> any_connection(clock::time_point now);
  size_t produce_in_flight() const;
  void finish_close();

  const producer_config config_;
  record_accumulator& accumulator_;
  metadata_cache& metadata_;
  transaction_manager* const txn_;

  asio::io_context io_;
  asio::steady_timer timer_;
  std::thread thread_;
  std::atomic<bool> wakeup_pending_{false};
  std::atomic<bool> saturated_{false};  // see wakeup_for_data(); written by the I/O thread
  clock::time_point timer_expiry_ = clock::time_point::max();  // the pending timer_ wait's
  std::atomic<bool> closing_{false};
  clock::time_point close_deadline_{};
  bool forced_ = false;

  // I/O thread only.
  std::map<node_id, std::shared_ptr<broker_connection>> connections_;
  std::map<node_id, clock::time_point> reconnect_after_;
  std::map<node_id, size_t> produce_in_flight_;
  // No queued batch reaches delivery.timeout.ms before this (from the last pass's ready());
  // min() after a batch went back into a queue.
  clock::time_point next_expiry_check_ = clock::time_point::min();
  bool metadata_in_flight_ = false;
  clock::time_point last_metadata_{};
  clock::time_point metadata_after_{};  // retry.backoff.ms after the last Metadata request
  bool have_metadata_ = false;
  bool init_producer_id_in_flight_ = false;
  clock::time_point init_producer_id_after_{};
  // A sequence gap in these partitions: bump the epoch once nothing is in flight.
  void request_epoch_bump(const topic_partition& tp);
  bool epoch_bump_required_ = false;
  std::vector<topic_partition> partitions_to_rewrite_;
  std::optional<producer_error> fatal_;
  std::shared_ptr<asio::ssl::context> tls_context_;  // with security.protocol SSL or SASL_SSL
};

}  // namespace tarn::client
