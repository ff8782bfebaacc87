// Produce (key 0): validates each partition's batch, assigns offsets from the log end offset and
// appends it to the partition's log, in the order of Kafka 4.4's produce path.
//
// Versions served: 3-13 (advertised from 0, KAFKA-18659). v13 names topics by id.
// Per partition, in Kafka's order (KafkaApis, ReplicaManager, Partition, UnifiedLog, LogValidator):
//   1. the topic and partition exist: UNKNOWN_TOPIC_OR_PARTITION (v13 by id: UNKNOWN_TOPIC_ID).
//      Produce never creates topics.
//   2. the records hold exactly one v2 batch (ProduceRequest.validateRecords): none, a magic other
//      than 2, or two batches: INVALID_RECORD; zstd below v7: UNSUPPORTED_COMPRESSION_TYPE; a
//      batch length below the v2 header: CORRUPT_MESSAGE.
//   3. acks is -1, 0 or 1, else every partition that got this far: INVALID_REQUIRED_ACKS.
//   3b. no client appends to an internal topic (Kafka's Topic.isInternal: __consumer_offsets,
//      __transaction_state, __share_group_state): INVALID_TOPIC_EXCEPTION, no ErrorMessage,
//      LogStartOffset -1, at every version, before the batch's own checks (a bad CRC or a null
//      key is still INVALID_TOPIC_EXCEPTION). As in Kafka 4.4 (ReplicaManager.appendToLocalLog),
//      the one exception is the client id "__admin_client" (AdminUtils.ADMIN_CLIENT_ID), whose
//      appends go through; checked against Kafka 4.4.0 with raw requests.
//   4. this broker leads the partition (a single node leads all; in a cluster, it serves as the
//      leader its partition state names) else NOT_LEADER_OR_FOLLOWER, with KIP-951's
//      CurrentLeader and NodeEndpoints (v10+) naming the leader the state names;
//      acks=-1: ISR size (1) >= min(min.insync.replicas, replica count 1), else
//      NOT_ENOUGH_REPLICAS; a replicated partition in a cluster (docs/cluster.md, "Replication")
//      as Kafka: ISR size (from its state in etcd) >= min(min.insync.replicas, replica count).
//   5. storage::validate_batch: baseOffset 0 (INVALID_RECORD), max.message.bytes
//      (MESSAGE_TOO_LARGE), CRC (CORRUPT_MESSAGE), batch shape (INVALID_RECORD), keys on compacted
//      topics (INVALID_RECORD + RecordErrors), timestamps (INVALID_TIMESTAMP + RecordErrors).
//      ErrorMessage is set only with RecordErrors, as Kafka does.
//   6. under the partition lock: leadership checked again (NOT_LEADER_OR_FOLLOWER if it moved
//      since step 4), offsets from the log end offset, PartitionLeaderEpoch the partition's
//      leader epoch (0 on a single node; the state's in a cluster: what Metadata reports); then the
//      idempotence check (producer_state.h): a retried batch is answered with its first offset and
//      not written; a sequence gap OUT_OF_ORDER_SEQUENCE_NUMBER; a stale epoch
//      INVALID_PRODUCER_EPOCH; then one write of the batch (the request's own bytes on the in-place
//      path) and the producer state update. A failed partition changes nothing.
// Responses: BaseOffset, LogAppendTimeMs (now on LogAppendTime topics, else -1; a retried batch
// gets its batch timestamp, as Kafka), LogStartOffset (-1 where Kafka leaves it unknown: errors of
// steps 1-3 and unknown topic, leadership, size and CRC errors).
// acks=0: no response; if any partition failed, the connection is closed (Kafka does the same).
// acks=1 and acks=-1: answered after the append; with one replica the high watermark covers the
// batch at once, so acks=-1 never waits and never gets REQUEST_TIMED_OUT. A replicated partition
// with acks=-1 waits (Kafka's produce purgatory, on the request's event loop without blocking
// it) until the high watermark passes the batch: then NONE, or NOT_ENOUGH_REPLICAS_AFTER_APPEND
// when the ISR shrank below min.insync.replicas meanwhile; NOT_LEADER_OR_FOLLOWER when this
// broker stopped leading the partition (or its leader epoch moved) meanwhile; REQUEST_TIMED_OUT
// after TimeoutMs (the batch stays in the log, as in Kafka).
// A body that does not decode closes the connection.
//
// Locking (docs/broker.md, "Partitions and locks"): the handler holds topic_manager's map lock
// shared to look a topic up, and for step 6 that and the partition log's own mutex, so appends to
// other partitions from other loops go on meanwhile; the checks of steps 2-5 (CRC,
// decompression, record walk, recompression) run without any lock, on the request's own bytes.
//
// Quotas (KIP-219, KafkaApis.handleProduceRequest): the request's bytes are recorded against the
// client's producer_byte_rate and its handling time against request_percentage (not for acks=0);
// the larger throttle goes into ThrottleTimeMs and mutes the connection that long.
//
// Transactions (docs/transactions.md): a transactional batch is appended only to a partition
// its producer's ongoing transaction holds (txn/txn_coordinator.h), else INVALID_TXN_STATE;
// appended, it opens the producer's transaction in the partition's producer state (the last
// stable offset stops there until the marker). In a cluster, when the producer's coordinator is
// another broker, the leader asks it first (txn_verifier.h, Kafka's AddPartitionsToTxnManager:
// VerifyOnly below v12, the partition added for the producer from v12) for the first batch of
// the transaction in the partition, and the request waits for the answer without blocking the
// loop; its errors are mapped as Kafka's ReplicaManager maps them, and so are those of a
// coordinator on this broker, called in-process (verify_in_process). With
// transaction.partition.verification.enable=false (dynamic) transactions v1 batches go in
// unverified.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <asio/this_coro.hpp>
#include <atomic>
#include <chrono>
#include <memory>
#include <variant>

#include "broker/authorization.h"
#include "broker/broker_metrics.h"
#include "broker/fetch_waiters.h"
#include "broker/handler.h"
#include "broker/leader_hints.h"
#include "broker/offsets_topic.h"
#include "broker/replica_manager.h"
#include "broker/throttle.h"
#include "broker/topic_handler_util.h"
#include "broker/topic_manager.h"
#include "broker/txn_verifier.h"
#include "protocol/error_codes.h"
#include "protocol/messages/produce_request.h"
#include "protocol/messages/produce_response.h"
#include "record/record_batch.h"
#include "storage/log_validator.h"
#include "storage/producer_state.h"
#include "txn/txn_coordinator.h"

namespace tarn::broker {

namespace {

using protocol::error_code;

// A failed write (a full disk, an I/O error) is the operator's to fix: logged as an error, at
// most once a second so that producers retrying against a full disk do not flood the log.
// Unlike Kafka, tarn keeps the log directory online: the next append tries again.
void log_storage_error(std::string_view topic, int32_t partition, const storage::storage_error& e) {
  static std::atomic<int64_t> last_logged_ms{0};
  static std::atomic<int64_t> suppressed{0};
  const int64_t now = wall_clock_ms();
  int64_t last = last_logged_ms.load(std::memory_order_relaxed);
  if (now - last < 1000 || !last_logged_ms.compare_exchange_strong(last, now)) {
    suppressed.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  spdlog::error("append to {}-{} failed, answering KAFKA_STORAGE_ERROR: {} ({} more since)", topic,
                partition, e.message, suppressed.exchange(0));
}

// The client id whose appends Kafka lets into internal topics (AdminUtils.ADMIN_CLIENT_ID).
constexpr std::string_view internal_appends_client_id = "__admin_client";

// A partition that failed before or during its append.
struct append_failure {
  error_code code = error_code::none;
  std::string reason;                                // for the log
  std::vector<storage::record_error> record_errors;  // RecordErrors; non-empty => ErrorMessage
  bool log_start_offset_known = false;               // Kafka fills LogStartOffset for this error
};

// Step 1-2 errors (KafkaApis) and the request-wide acks error.
struct request_error {
  error_code code;
  std::string reason;
};

// The one place that decides a failed partition's wire error.
append_failure to_failure(std::variant<request_error, storage::validation_error,
                                       storage::producer_error, storage::storage_error>
                              source) {
  append_failure f;
  if (auto* r = std::get_if<request_error>(&source)) {
    f.code = r->code;
    f.reason = std::move(r->reason);
    // NOT_ENOUGH_REPLICAS is thrown inside Partition and goes through processFailedRecord.
    f.log_start_offset_known = r->code == error_code::not_enough_replicas;
  } else if (auto* v = std::get_if<storage::validation_error>(&source)) {
    switch (v->code) {
      case storage::validation_errc::invalid_record:
        f.code = error_code::invalid_record;
        f.log_start_offset_known = true;
        break;
      case storage::validation_errc::record_too_large:
        f.code = error_code::message_too_large;
        break;
      case storage::validation_errc::corrupt_record:
        f.code = error_code::corrupt_message;
        break;
      case storage::validation_errc::invalid_timestamp:
        f.code = error_code::invalid_timestamp;
        f.log_start_offset_known = true;
        break;
    }
    f.reason = std::move(v->message);
    f.record_errors = std::move(v->record_errors);
  } else if (auto* p = std::get_if<storage::producer_error>(&source)) {
    f.code = p->code == storage::producer_errc::out_of_order_sequence
                 ? error_code::out_of_order_sequence_number
                 : error_code::invalid_producer_epoch;
    f.reason = std::move(p->message);
    f.log_start_offset_known = true;
  } else {
    auto& s = std::get<storage::storage_error>(source);
    switch (s.code) {
      case storage::storage_errc::record_too_large:
        f.code = error_code::record_list_too_large;  // RecordBatchTooLargeException
        break;
      case storage::storage_errc::not_found:
        f.code = error_code::unknown_topic_or_partition;
        break;
      default:
        f.code = error_code::kafka_storage_error;
        break;
    }
    f.reason = std::move(s.message);
  }
  return f;
}

struct partition_work {
  int32_t index = 0;
  std::span<uint8_t> batch;  // the one batch, inside the request frame
  std::optional<append_failure> failure;
  storage::validated_batch validated;
  int64_t base_offset = -1;
  int64_t log_append_time_ms = -1;
  int64_t log_start_offset = -1;
  bool written = false;  // appended now (not a retry answered from the producer state)
  int64_t last_offset = -1;
  bool await_replicas = false;  // acks=-1 on a replicated partition: wait for the high watermark
  int32_t min_isr = 1;          // the effective min.insync.replicas (step 4)
  int32_t leader_epoch = local_leader_epoch;  // stamped into the batch; the purgatory checks it
  // A transactional batch: its producer's markers in the partition when the transaction was
  // asked whether it holds the partition; a marker written since then refuses the batch.
  uint32_t markers_before_check = 0;
  // In a cluster, with the producer's coordinator on another broker: asked there first
  // (txn_verifier.h) before the batch is appended.
  bool verify_with_coordinator = false;
};

struct topic_work {
  std::string name;
  protocol::uuid topic_id;
  bool known = false;
  int32_t partitions = 0;
  storage::log_config config;
  std::vector<partition_work> parts;
  std::shared_ptr<topic_metrics> metrics;  // BrokerTopicMetrics cells, looked up with the topic
};

// BrokerTopicMetrics for one request (Kafka's ReplicaManager.appendToLocalLog and
// UnifiedLog.analyzeAndValidateRecords): every partition counts a produce request, a failed one
// a failed request, an appended one its records and bytes; a batch over max.message.bytes counts
// its bytes as rejected.
void record_produce_metrics(broker_metrics* metrics, const std::vector<topic_work>& work) {
  if (metrics == nullptr) return;
  topic_metrics& all = metrics->all_topics;
  for (const auto& tw : work) {
    for (const auto& pw : tw.parts) {
      all.total_produce_requests.add();
      if (tw.metrics) tw.metrics->total_produce_requests.add();
      if (pw.failure) {
        all.failed_produce_requests.add();
        if (tw.metrics) tw.metrics->failed_produce_requests.add();
        if (pw.failure->code == error_code::message_too_large) {
          all.bytes_rejected.add(pw.batch.size());
          if (tw.metrics) tw.metrics->bytes_rejected.add(pw.batch.size());
        }
      } else if (pw.written) {
        const auto records = static_cast<uint64_t>(pw.validated.record_count);
        const uint64_t bytes = pw.validated.bytes.size();
        all.messages_in.add(records);
        all.bytes_in.add(bytes);
        if (tw.metrics) {
          tw.metrics->messages_in.add(records);
          tw.metrics->bytes_in.add(bytes);
        }
      }
    }
  }
}

// A verification's failure as Kafka's ReplicaManager words it: `coordinator_error` is what the
// coordinator answered (AddPartitionsToTxnManager's reading), `e` what the producer is told.
append_failure verification_failure(error_code e, error_code coordinator_error) {
  std::string reason =
      e == error_code::not_enough_replicas
          ? fmt::format(
                "Unable to verify the partition has been added to the transaction. Underlying "
                "error: {}",
                protocol::describe(coordinator_error).name)
      : e == error_code::invalid_txn_state
          ? std::string("Partition was not added to the transaction")
          : std::string(protocol::describe(e).message);
  return to_failure(request_error{e, std::move(reason)});
}

// ProduceRequest.validateRecords: exactly one v2 batch; sets `out.batch`.
std::optional<append_failure> check_records(std::optional<protocol::bytes_view> records,
                                            uint8_t* frame, int16_t version, partition_work& out) {
  auto fail_with = [](error_code code, std::string reason) {
    return to_failure(request_error{code, std::move(reason)});
  };
  // Built only on failure: formatting it for every partition of every request showed in the
  // broker's profile.
  auto none_msg = [version] {
    return fmt::format(
        "Produce requests with version {} must have at least one record batch per partition",
        version);
  };
  if (!records || records->empty()) return fail_with(error_code::invalid_record, none_msg());
  record::batch_reader reader(*records);
  record::record_batch_view first;
  if (!reader.next(first)) {
    if (reader.stop() == record::batch_stop::invalid_length) {
      // Kafka reads the magic of anything of at least 14 bytes (RECORD_OVERHEAD_V0): an old
      // message set (magic 0/1) is INVALID_RECORD below; a short v2 header is corrupt.
      const int32_t length =
          static_cast<int32_t>((uint32_t{(*records)[8]} << 24) | (uint32_t{(*records)[9]} << 16) |
                               (uint32_t{(*records)[10]} << 8) | (*records)[11]);
      if (length < 14 - 12 || records->size() <= record::batch_layout::magic ||
          (*records)[record::batch_layout::magic] == record::magic_v2) {
        return fail_with(error_code::corrupt_message, "Record batch length below the v2 header");
      }
      return fail_with(error_code::invalid_record,
                       fmt::format("Produce requests with version {} are only allowed to contain "
                                   "record batches with magic version 2",
                                   version));
    }
    return fail_with(error_code::invalid_record, none_msg());
  }
  if (first.magic() != record::magic_v2) {
    return fail_with(error_code::invalid_record,
                     fmt::format("Produce requests with version {} are only allowed to contain "
                                 "record batches with magic version 2",
                                 version));
  }
  if (version < 7 && first.compression() == record::compression_type::zstd) {
    return fail_with(
        error_code::unsupported_compression_type,
        fmt::format("Produce requests with version {} are not allowed to use ZStandard "
                    "compression",
                    version));
  }
  record::record_batch_view second;
  if (reader.next(second) || reader.stop() == record::batch_stop::invalid_length) {
    return fail_with(error_code::invalid_record,
                     fmt::format("Produce requests with version {} are only allowed to contain "
                                 "exactly one record batch per partition",
                                 version));
  }
  // Trailing bytes too short to be a batch are ignored, as Kafka's iterator ignores them.
  const auto* start = const_cast<uint8_t*>(first.bytes().data());
  out.batch = std::span<uint8_t>(frame + (start - frame), first.size_bytes());
  return std::nullopt;
}

// Kafka's RequestUtils.hasTransactionalRecords: the first batch of some partition has the
// transactional attribute (bit 4 of the attributes at byte 21 of a v2 batch).
bool has_transactional_records(const protocol::produce_request& req) {
  for (const auto& t : req.topic_data) {
    for (const auto& p : t.partition_data) {
      if (p.records && p.records->size() > 22 && ((*p.records)[22] & 0x10) != 0) return true;
    }
  }
  return false;
}

asio::awaitable<handler_outcome> handle_produce(request_context& request) {
  const int16_t version = request.header.api_version;
  protocol::reader r(request.body());
  auto decoded = protocol::produce_request::decode(r, version);
  if (!decoded) {
    spdlog::warn("connection {} from {}: Produce v{} body does not decode: {}",
                 request.connection.id, request.connection.peer, version,
                 protocol::describe(decoded.error().code));
    co_return close_connection{"bad Produce request"};
  }
  const protocol::produce_request& req = *decoded;
  topic_manager& topics = *request.services.topics;
  const int64_t now = wall_clock_ms();
  const bool valid_acks = req.acks == -1 || req.acks == 0 || req.acks == 1;
  const bool internal_appends_allowed = request.header.client_id == internal_appends_client_id;

  // Steps 1-3.
  std::vector<topic_work> work;
  work.reserve(req.topic_data.size());
  {
    auto guard = topics.read_lock();
    const auto& logs = topics.logs();
    for (const auto& t : req.topic_data) {
      topic_work& tw = work.emplace_back();
      const storage::topic_info* info = nullptr;
      if (version >= 13) {
        tw.topic_id = t.topic_id;
        const storage::uuid id = from_wire(t.topic_id);
        for (const auto* candidate : logs.topics()) {
          if (candidate->topic_id == id) info = candidate;
        }
      } else {
        tw.name = std::string(t.name);
        info = logs.find_topic(t.name);
      }
      if (info != nullptr) {
        tw.known = true;
        tw.name = info->name;
        tw.partitions = info->partitions;
        tw.config = info->config;
        if (request.services.metrics) tw.metrics = request.services.metrics->topic(info->name);
      }
    }
  }
  // Authorization, as Kafka's handleProduceRequest: transactional records need WRITE on the
  // transactional id (else every partition fails), then each topic WRITE (asked once per topic,
  // before whether it exists, so an unauthorized client learns nothing of it).
  const bool authorizing = request.services.authorizer != nullptr;
  const bool transactional_denied =
      authorizing && has_transactional_records(req) &&
      !(req.transactional_id &&
        authorize(request, security::acl_operation::write,
                  security::resource_type::transactional_id, *req.transactional_id));
  for (size_t i = 0; i < req.topic_data.size(); ++i) {
    topic_work& tw = work[i];
    const bool topic_denied =
        authorizing && !transactional_denied && (tw.known || version < 13) &&
        !authorize(request, security::acl_operation::write, security::resource_type::topic, tw.name,
                   static_cast<int32_t>(req.topic_data[i].partition_data.size()));
    for (const auto& p : req.topic_data[i].partition_data) {
      partition_work& pw = tw.parts.emplace_back();
      pw.index = p.index;
      if (transactional_denied || topic_denied) {
        const error_code e = transactional_denied
                                 ? error_code::transactional_id_authorization_failed
                                 : error_code::topic_authorization_failed;
        pw.failure = to_failure(request_error{e, std::string(protocol::describe(e).message)});
        continue;
      }
      if (!tw.known || p.index < 0 || p.index >= tw.partitions) {
        const bool by_id = version >= 13 && !tw.known;
        pw.failure = to_failure(request_error{
            by_id ? error_code::unknown_topic_id : error_code::unknown_topic_or_partition,
            "unknown topic or partition"});
        continue;
      }
      pw.failure = check_records(p.records, request.frame.data.get(), version, pw);
      if (pw.failure) continue;
      if (!valid_acks) {
        pw.failure = to_failure(request_error{error_code::invalid_required_acks,
                                              fmt::format("acks {} is not -1, 0 or 1", req.acks)});
        continue;
      }
      if (is_internal_topic(tw.name) && !internal_appends_allowed) {
        pw.failure =
            to_failure(request_error{error_code::invalid_topic_exception,
                                     fmt::format("Cannot append to internal topic {}", tw.name)});
      }
    }
  }

  // Steps 4-5, without the lock.
  for (auto& tw : work) {
    for (auto& pw : tw.parts) {
      if (pw.failure) continue;
      int32_t replicas = 1, isr = 1, min_isr = std::min(tw.config.min_insync_replicas, 1);
      if (request.services.replicas != nullptr) {
        if (auto st = request.services.replicas->state(tw.name, pw.index)) {
          if (request.services.replicas->follows(tw.name, pw.index)) {
            pw.failure = to_failure(request_error{error_code::not_leader_or_follower,
                                                  "this broker does not lead the partition"});
            continue;
          }
          replicas = static_cast<int32_t>(st->replicas.size());
          isr = static_cast<int32_t>(st->isr.size());
          // Kafka's Partition.effectiveMinIsr: the setting capped at the replica count (a
          // setting above it is accepted and clipped here, not refused).
          min_isr = std::min(tw.config.min_insync_replicas, replicas);
        }
      }
      pw.min_isr = min_isr;
      if (req.acks == -1 && isr < min_isr) {
        pw.failure = to_failure(request_error{error_code::not_enough_replicas,
                                              "ISR below the effective min.insync.replicas"});
        continue;
      }
      const std::string tp = fmt::format("{}-{}", tw.name, pw.index);
      storage::validation_context ctx{tp, &tw.config, now};
      auto v = storage::validate_batch(pw.batch, ctx);
      if (!v) {
        pw.failure = to_failure(std::move(v.error()));
        continue;
      }
      pw.validated = std::move(*v);
      if (pw.validated.transactional) {
        // The transaction must hold the partition. Produce v12+ (transactions v2) adds it
        // itself, as Kafka's partition leader does through the coordinator; older versions only
        // verify it (AddPartitionsToTxn first; transaction.partition.verification.enable).
        // Asked before the topics lock: the coordinator takes that lock itself when it writes
        // markers.
        txn::txn_coordinator* txns = request.services.txns;
        bool ongoing_here = false;  // the producer's transaction already wrote here
        const txn_supported_operation operation = produce_operation(version);
        // transaction.partition.verification.enable=false: transactions v1 batches go in
        // unasked (Kafka's maybeSendPartitionsToTransactionCoordinator); v2 ones still add
        // their partition, which nothing else would.
        bool verify = true;
        {
          auto guard = topics.read_lock();
          verify = operation == txn_supported_operation::add_partition ||
                   topics.effective().transaction_partition_verification_enable;
          if (const storage::log* log = topics.logs().get_log(tw.name, partition_id{pw.index})) {
            std::lock_guard log_lock(log->mutex());
            pw.markers_before_check = log->producers().markers_written(pw.validated.producer_id);
            const storage::producer_entry* e = log->producers().find(pw.validated.producer_id);
            ongoing_here = e != nullptr && e->current_txn_first_offset >= 0 &&
                           e->epoch == pw.validated.producer_epoch;
          }
        }
        // In a cluster a coordinator on another broker is asked (Kafka's
        // AddPartitionsToTxnManager), unless the transaction already wrote to this partition at
        // this epoch (Kafka's hasOngoingTransaction: the verification done for its first batch
        // holds until its marker).
        const bool remote_coordinator =
            request.services.verifier != nullptr && txns != nullptr && req.transactional_id &&
            !req.transactional_id->empty() &&
            txns->owner_error(*req.transactional_id) != error_code::none;
        if (!verify) {
          // Appended as it is (the producer added the partition itself, or the transaction hangs
          // until an admin aborts it: what verification is for).
        } else if (remote_coordinator) {
          pw.verify_with_coordinator = !ongoing_here;
        } else if (txns == nullptr || !req.transactional_id || req.transactional_id->empty()) {
          pw.failure = to_failure(request_error{
              error_code::invalid_txn_state,
              fmt::format("transactional batch of producer {} epoch {} to {}-{} without a "
                          "transaction coordinator",
                          pw.validated.producer_id, pw.validated.producer_epoch, tw.name,
                          pw.index)});
        } else {
          // The coordinator is this broker's: asked in-process, its answer read as a remote one.
          const error_code coordinator_error =
              verify_in_process(*txns, *req.transactional_id, pw.validated.producer_id,
                                pw.validated.producer_epoch, {tw.name, pw.index}, operation, now);
          const error_code e = verification_produce_error(coordinator_error, operation);
          if (e != error_code::none) pw.failure = verification_failure(e, coordinator_error);
        }
      }
    }
  }

  // The batches whose coordinator is another broker's: one verification for the request (a
  // Produce has one transactional id), answered before anything is appended, without blocking
  // the loop. A marker written meanwhile still refuses the batch (markers_before_check).
  {
    txn_verification v;
    std::vector<partition_work*> verifying;
    for (auto& tw : work) {
      for (auto& pw : tw.parts) {
        if (pw.failure || !pw.verify_with_coordinator) continue;
        if (verifying.empty()) {
          v.producer_id = pw.validated.producer_id;
          v.producer_epoch = pw.validated.producer_epoch;
        } else if (pw.validated.producer_id != v.producer_id ||
                   pw.validated.producer_epoch != v.producer_epoch) {
          // Batches of two producers under one transactional id: not a client's request.
          pw.failure = to_failure(request_error{error_code::invalid_txn_state,
                                                "transactional batches of two producers"});
          continue;
        }
        v.partitions.emplace_back(tw.name, pw.index);
        verifying.push_back(&pw);
      }
    }
    if (!verifying.empty()) {
      v.transactional_id = std::string(*req.transactional_id);
      const txn_supported_operation v_operation = produce_operation(version);
      v.operation = v_operation;
      auto pending = std::make_shared<pending_verification>(co_await asio::this_coro::executor);
      v.done = pending->callback();
      request.services.verifier->submit(std::move(v));
      if (!co_await pending->wait(request)) {
        co_return close_connection{"connection closed during a transaction verification"};
      }
      for (size_t i = 0; i < verifying.size(); ++i) {
        const error_code coordinator_error =
            i < pending->value().size() ? pending->value()[i] : error_code::network_exception;
        const error_code e = verification_produce_error(coordinator_error, v_operation);
        if (e != error_code::none)
          verifying[i]->failure = verification_failure(e, coordinator_error);
      }
    }
  }

  // Step 6, per partition under its lock (the map lock shared, so appends to other partitions
  // from other loops go on meanwhile).
  for (auto& tw : work) {
    for (auto& pw : tw.parts) {
      if (pw.failure) continue;
      auto guard = topics.read_lock();
      storage::log* log = topics.logs().get_log(tw.name, partition_id{pw.index});
      if (log == nullptr) {  // deleted since step 1
        pw.failure =
            to_failure(request_error{error_code::unknown_topic_or_partition, "topic deleted"});
        continue;
      }
      std::lock_guard log_lock(log->mutex());
      storage::validated_batch& vb = pw.validated;
      if (vb.transactional &&
          log->producers().markers_written(vb.producer_id) != pw.markers_before_check) {
        // The transaction ended between the check and now: appending would open a transaction
        // no marker closes (the last stable offset would stop there for good).
        pw.failure = to_failure(request_error{
            error_code::invalid_txn_state,
            fmt::format("the transaction of producer {} ended while its batch to {}-{} waited",
                        vb.producer_id, tw.name, pw.index)});
        continue;
      }
      // Leadership as of now, under the log's mutex: a broker that stopped leading (or whose
      // leader epoch moved) since step 4 appends nothing; the batch carries the leader epoch.
      const leadership lead = leadership_of(request.services.replicas, tw.name, pw.index,
                                            request.services.config.node_id);
      if (!lead.serving) {
        pw.failure = to_failure(request_error{error_code::not_leader_or_follower,
                                              "this broker no longer leads the partition"});
        continue;
      }
      pw.leader_epoch = lead.leader_epoch;
      const offset_t first = log->log_end_offset();
      const offset_t last = storage::assign_offsets(vb, first, lead.leader_epoch);
      const bool idempotent = vb.producer_id != record::no_producer_id;
      storage::producer_append pa;
      if (idempotent) {
        record::record_batch_view view(vb.bytes);
        pa = {vb.producer_id, vb.producer_epoch, vb.base_sequence, view.last_sequence()};
        auto check = log->producers().check(pa, first);
        if (!check) {
          pw.failure = to_failure(std::move(check.error()));
          pw.log_start_offset = log->log_start_offset();
          continue;
        }
        if (*check) {  // a retry: answered with the original offsets, not written again
          pw.base_offset = (*check)->first_offset();
          pw.log_append_time_ms = (*check)->timestamp;
          pw.log_start_offset = log->log_start_offset();
          continue;
        }
      }
      if (auto a = log->append(vb.bytes, now); !a) {
        if (a.error().code == storage::storage_errc::io_error)
          log_storage_error(tw.name, pw.index, a.error());
        pw.failure = to_failure(std::move(a.error()));
        continue;
      }
      if (idempotent) log->producers().update(pa, first, last, vb.max_timestamp, vb.transactional);
      if (log->replicated() && request.services.replicas != nullptr) {
        request.services.replicas->on_leader_append(tw.name, pw.index, *log);
        pw.await_replicas = req.acks == -1;
      }
      pw.base_offset = first;
      pw.last_offset = last;
      pw.written = true;
      pw.log_append_time_ms = vb.log_append_time ? now : -1;
      pw.log_start_offset = log->log_start_offset();
    }
  }

  // acks=-1 on replicated partitions: the produce purgatory.
  std::vector<storage::topic_partition> awaited;
  for (auto& tw : work) {
    for (auto& pw : tw.parts) {
      if (!pw.failure && pw.await_replicas) awaited.push_back({tw.name, pw.index});
    }
  }
  if (!awaited.empty()) {
    auto executor = co_await asio::this_coro::executor;
    auto waiter = std::make_shared<fetch_waiter>(executor);
    fetch_waiter_registration registration(*request.services.waiters, waiter, awaited);
    const auto deadline =
        std::chrono::steady_clock::now() + std::chrono::milliseconds(std::max(req.timeout_ms, 0));
    for (;;) {
      bool all_done = true;
      {
        auto guard = topics.read_lock();
        for (auto& tw : work) {
          for (auto& pw : tw.parts) {
            if (pw.failure || !pw.await_replicas) continue;
            const storage::log* log = topics.logs().get_log(tw.name, partition_id{pw.index});
            // The high watermark first, the role after: the batch was appended as leader at
            // pw.leader_epoch, and a leader epoch once left never comes back, so that role still
            // held after the read held throughout it. A role lost before the read (the replica
            // then truncates and fetches the new leader's records over the same offsets, its high
            // watermark following that leader's) is seen here and never acknowledges.
            const int64_t high_watermark = log != nullptr ? log->high_watermark() : -1;
            const leadership lead = leadership_of(request.services.replicas, tw.name, pw.index,
                                                  request.services.config.node_id);
            if (log == nullptr) {
              pw.failure =
                  to_failure(request_error{error_code::not_leader_or_follower, "partition gone"});
            } else if (!lead.serving || lead.leader_epoch != pw.leader_epoch) {
              // Kafka's DelayedProduce on a leader that lost the role: the ISR it waited for is
              // another leader's now.
              pw.await_replicas = false;
              pw.failure = to_failure(
                  request_error{error_code::not_leader_or_follower,
                                fmt::format("{}-{} changed leader while waiting for the ISR",
                                            tw.name, pw.index)});
            } else if (high_watermark > pw.last_offset) {
              // Kafka's checkEnoughReplicasReachOffset.
              pw.await_replicas = false;
              const int32_t isr = request.services.replicas->isr_size(tw.name, pw.index);
              if (isr >= 0 && isr < pw.min_isr) {
                pw.failure = to_failure(request_error{
                    error_code::not_enough_replicas_after_append,
                    fmt::format("the ISR of {}-{} shrank to {} below min.insync.replicas {}",
                                tw.name, pw.index, isr, pw.min_isr)});
              }
            } else {
              all_done = false;
            }
          }
        }
      }
      if (all_done) break;
      if (std::chrono::steady_clock::now() >= deadline) {
        for (auto& tw : work) {
          for (auto& pw : tw.parts) {
            if (pw.failure || !pw.await_replicas) continue;
            pw.failure = to_failure(
                request_error{error_code::request_timed_out,
                              fmt::format("the ISR of {}-{} did not reach offset {} within {} ms",
                                          tw.name, pw.index, pw.last_offset + 1, req.timeout_ms)});
          }
        }
        break;
      }
      if (!co_await waiter->wait_for_append(request, deadline)) {
        co_return close_connection{"connection closed during an acks=all wait"};
      }
    }
  }

  // Kafka reports the log start offset with these errors.
  for (auto& tw : work) {
    for (auto& pw : tw.parts) {
      if (!pw.failure || !pw.failure->log_start_offset_known || pw.log_start_offset >= 0) continue;
      auto guard = topics.read_lock();
      if (const storage::log* log = topics.logs().get_log(tw.name, partition_id{pw.index})) {
        pw.log_start_offset = log->log_start_offset();
      }
    }
  }

  record_produce_metrics(request.services.metrics, work);

  // The response.
  protocol::produce_response reply;
  leader_hints hints(request.services, request.connection);  // KIP-951, v10+
  bool any_error = false;
  for (auto& tw : work) {
    auto& tr = reply.responses.emplace_back();
    tr.name = tw.name;
    tr.topic_id = tw.topic_id;
    for (auto& pw : tw.parts) {
      auto& pr = tr.partition_responses.emplace_back();
      pr.index = pw.index;
      if (!pw.failure) {
        pr.base_offset = pw.base_offset;
        pr.log_append_time_ms = pw.log_append_time_ms;
        pr.log_start_offset = pw.log_start_offset;
        continue;
      }
      any_error = true;
      const append_failure& f = *pw.failure;
      spdlog::debug("connection {}: Produce to {}-{} failed with {}: {}", request.connection.id,
                    tw.name, pw.index, protocol::describe(f.code).name, f.reason);
      pr.error_code = static_cast<int16_t>(f.code);
      pr.base_offset = -1;
      pr.log_start_offset = f.log_start_offset_known ? pw.log_start_offset : -1;
      for (const auto& e : f.record_errors) {
        pr.record_errors.push_back({e.batch_index, std::string_view(e.message)});
      }
      if (!f.record_errors.empty()) pr.error_message = std::string_view(f.reason);
      if (f.code == error_code::not_leader_or_follower && version >= 10) {
        hints.fill(tw.name, pw.index, pr.current_leader);
      }
    }
  }
  if (version >= 10) {
    reply.node_endpoints = hints.endpoints<protocol::produce_response::node_endpoint>();
  }
  if (quota::client_quotas* quotas = request.services.quotas) {
    const int64_t t = wall_clock_ms();
    const int32_t bandwidth = quotas->produce().record(
        quota_user(request), quota_client_id(request), static_cast<double>(request.frame.size), t);
    // acks=0 is exempt from the request quota (Kafka's sendNoOpResponseExemptThrottle).
    const int32_t time =
        req.acks == 0 ? 0
                      : quotas->request().record(quota_user(request), quota_client_id(request),
                                                 request_time_percentage(request), t);
    request.request_quota_recorded = true;
    request.throttle_ms = std::max(bandwidth, time);
    reply.throttle_time_ms = request.throttle_ms;
  }
  if (req.acks == 0) {
    if (any_error) co_return close_connection{"Produce with acks=0 failed"};
    co_return no_response{};
  }
  co_return encode_response(reply, version);
}

}  // namespace

void register_produce_handler(handler_registry& registry) {
  registry.register_handler(protocol::produce_request::api_key,
                            protocol::produce_request::min_version,
                            protocol::produce_request::max_version, handle_produce);
}

}  // namespace tarn::broker
