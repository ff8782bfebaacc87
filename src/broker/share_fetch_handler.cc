// ShareFetch (key 78): a share-group member's fetch (KIP-932). Versions served: 1-2, as Kafka 4.4.
//
// Behaviour, as Kafka 4.4's KafkaApis.handleShareFetchRequest and SharePartitionManager:
//   - The share session (coordinator::share_coordinator::step_session): ShareSessionEpoch 0 opens
//     one (acknowledgements with it are INVALID_REQUEST), -1 closes it (its acknowledgements are
//     applied, nothing is fetched, the member's acquired records are released), otherwise it is
//     the session's next epoch (INVALID_SHARE_SESSION_EPOCH; SHARE_SESSION_NOT_FOUND without a
//     session): top-level errors. Topics add partitions to the session, ForgottenTopicsData
//     removes them; every fetch reads all of the session's partitions.
//   - Acknowledgements piggybacked on the request are applied first, per partition
//     (AcknowledgeErrorCode: INVALID_REQUEST for malformed batches, INVALID_RECORD_STATE for
//     offsets not acquired by this member).
//   - Each partition reads from where its share-partition next has Available records (up to
//     MaxBytes, whole batches, never past the high watermark; in chunks, until MaxRecords are
//     acquired), acquires up to MaxRecords records for the member and answers the batches from
//     the first to the last holding an acquired record (as Kafka slices its FileRecords) with
//     the AcquiredRecords ranges and their delivery counts. AcquisitionLockTimeoutMs is
//     group.share.record.lock.duration.ms. ShareAcquireMode batch_optimized (0, and every v1
//     request) takes a log batch it began to its end, past MaxRecords and the record-lock limit,
//     as Kafka's SharePartition; record_limit (1) stops at MaxRecords; another value is
//     INVALID_REQUEST. The partitions are visited from a different one each request (the
//     session epoch modulo their count, Kafka's round-robin rotation).
//   - Nothing acquired and MaxWaitMs > 0: waits for an append to a session partition, records
//     there acknowledged, released or timed out (the share coordinator's listener wakes the same
//     waiting room), an acquisition lock to expire, or MaxWaitMs (fetch_waiters.h, as Fetch's
//     long poll; Kafka's acknowledgements complete its delayed share fetches likewise).
//   - The group's share.version gate: UNSUPPORTED_VERSION when share.version is finalized at 0.
//   - Authorization, as Kafka's: READ on the group, else GROUP_AUTHORIZATION_FAILED at the top
//     level (before the member id is looked at); READ on each topic of the session and of the
//     acknowledgements, else TOPIC_AUTHORIZATION_FAILED for its partitions (ErrorCode, and
//     AcknowledgeErrorCode for acknowledged ones). A topic id the broker does not know stays
//     UNKNOWN_TOPIC_ID.
// A body that does not decode closes the connection.
//   - share.isolation.level=read_committed (a group config): reads stop at the last stable
//     offset, and batches of aborted transactions are archived as they are passed, never
//     delivered (as Kafka's SharePartition filters with the fetch's aborted transactions).
// Not supported: quotas; splitting the acquired ranges at BatchSize.
#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <asio/this_coro.hpp>
#include <chrono>
#include <map>

#include "broker/features.h"
#include "broker/fetch_waiters.h"
#include "broker/file_regions.h"
#include "broker/group_handler_util.h"
#include "broker/replica_manager.h"
#include "broker/share_handler_util.h"
#include "broker/share_state_rpc_util.h"
#include "protocol/messages/share_fetch_request.h"
#include "protocol/messages/share_fetch_response.h"
#include "record/record_batch.h"
#include "storage/log_segment.h"

namespace tarn::broker {

namespace {

using protocol::error_code;

// A batch read for a ShareFetch: its offsets, where its bytes are in the read buffer, and what
// read_committed asks of it (its producer, whether it is transactional).
struct share_read_batch {
  coordinator::fetched_batch batch;
  size_t position = 0;
  size_t size = 0;
  int64_t producer_id = -1;
  bool transactional = false;
};

// A ShareFetch acquires at most MaxRecords records (500 from the Java client), and often far
// fewer: with many members on one share-partition, group.share.partition.max.record.locks leaves
// each a slice of the records (about 125 each for 16 members and the default 2000). Its MaxBytes
// is fetch.max.bytes (50 MiB). What the broker must know of the log to acquire is in the batch
// headers alone (offsets, control, producer, transactional), so only headers are read: a window
// at the next batch's position holds the headers of the batches that start in it, a batch longer
// than the window is stepped over (its successor's header read on its own, as Kafka's
// FileLogInputStream reads batch by batch). The window starts at a page and grows fourfold while
// small batches fill it, to 64 KiB (many small batches a read). Acquisition goes on window by
// window until enough records are acquired. The answer holds the batches from the first to the last
// one with an acquired record (as Kafka's ShareFetchUtils slices its FileRecords), sent from the
// segment file (sendfile), never copied through the broker: with 1 KiB records the reads and copies
// of the whole answer were a quarter of the broker's CPU a ShareFetch.
constexpr int64_t share_first_window_bytes = 4096;
constexpr int64_t share_max_window_bytes = 64 << 10;
// A share-partition read again from its next fetch offset when another member's fetch took the
// records between the two (each attempt is a read of the log).
constexpr int share_read_attempts = 3;

// Appends the batches whose headers are in `window` (read at slice position `at`) to `out`, each
// ending within the slice's `slice_length` bytes; returns the slice position after the last one
// (the next header to read; `at` when none was whole).
int64_t parse_share_headers(std::span<const uint8_t> window, int64_t at, int64_t slice_length,
                            std::vector<share_read_batch>& out) {
  size_t p = 0;
  while (window.size() - p >= record::record_batch_overhead) {
    const record::record_batch_view head(window.subspan(p, record::record_batch_overhead));
    const int32_t length = head.batch_length();
    if (length < static_cast<int32_t>(record::record_batch_overhead - record::log_overhead)) break;
    const int64_t size = static_cast<int64_t>(record::log_overhead) + length;
    const int64_t position = at + static_cast<int64_t>(p);
    if (position + size > slice_length) break;  // cut by MaxBytes: not answered
    out.push_back({{head.base_offset(), head.last_offset(), head.is_control()},
                   static_cast<size_t>(position),
                   static_cast<size_t>(size),
                   head.producer_id(),
                   head.is_transactional()});
    if (static_cast<int64_t>(p) + size >= static_cast<int64_t>(window.size())) {
      return position + size;  // the next header is past this window
    }
    p += static_cast<size_t>(size);
  }
  return at + static_cast<int64_t>(p);
}

struct partition_answer {
  explicit partition_answer(const coordinator::share_topic_partition& t) : tp(t) {}
  coordinator::share_topic_partition tp;
  error_code error = error_code::none;
  std::optional<error_code> ack_error;  // set when the request acknowledged on this partition
  std::optional<storage::file_slice> records;  // the answered batches, in their segment file
  std::vector<coordinator::acquired_range> acquired;
  // In a cluster: the acquisition's write at another broker's share coordinator, answered
  // before the records may be handed out.
  std::unique_ptr<share_write_wait> written;
};

// One pass over the session's partitions: acquire what is there. Returns the records acquired.
size_t fetch_once(broker_services& services, std::string_view group_id, std::string_view member_id,
                  const protocol::share_fetch_request& req, std::vector<partition_answer>& answers,
                  const std::vector<size_t>& order, int64_t now_ms,
                  const asio::any_io_executor& executor) {
  coordinator::share_coordinator& shares = *services.shares;
  topic_manager& topics = *services.topics;
  size_t acquired = 0;
  int64_t budget = req.max_bytes;
  int32_t records_left = req.max_records > 0 ? req.max_records : 500;
  const auto mode = static_cast<coordinator::share_acquire_mode>(req.share_acquire_mode);
  // share.isolation.level=read_committed: read up to the last stable offset, and archive the
  // batches of aborted transactions (never delivered), as Kafka's SharePartition.
  const coordinator::share_group_settings settings = shares.group_settings(group_id);
  const bool committed_only = settings.read_committed;
  for (const size_t i : order) {
    partition_answer& a = answers[i];
    if (a.error != error_code::none || !a.acquired.empty()) continue;
    if (records_left <= 0 || budget <= 0) break;
    auto topic = find_share_topic(topics, a.tp.topic_id);
    if (!topic) {
      a.error = error_code::unknown_topic_id;
      continue;
    }
    if (a.tp.partition < 0 || a.tp.partition >= topic->partitions) {
      a.error = error_code::unknown_topic_or_partition;
      continue;
    }
    // The coordinator's lock is never taken under the topic map's (its heartbeat reads topic
    // metadata under its own), so the map is looked up twice.
    int64_t log_start = 0;
    int64_t readable_end = 0;  // the high watermark, or the last stable offset (read_committed)
    {
      auto guard = topics.read_lock();
      const storage::log* log = topics.logs().get_log(topic->name, a.tp.partition);
      // In a cluster a follower's replica is not served (the share-partition is its leader's).
      if (log == nullptr ||
          !leadership_of(services.replicas, topic->name, a.tp.partition, services.config.node_id)
               .serving) {
        a.error = error_code::not_leader_or_follower;
        continue;
      }
      log_start = log->log_start_offset();
      readable_end = log->high_watermark();
      if (committed_only) {
        std::lock_guard log_lock(log->mutex());
        readable_end = log->last_stable_offset();
      }
    }
    // share.auto.offset.reset=by_duration: a new share-partition starts at the first record at or
    // after now - duration, as Kafka's SharePartition asks its log (ListOffsets by time,
    // read_uncommitted); none below the high watermark yet is OFFSET_NOT_AVAILABLE, as Kafka's
    // initialization fails, and the next fetch tries again.
    std::optional<int64_t> by_duration_start;
    if (settings.auto_offset_reset_duration_ms && !shares.start_offset(group_id, a.tp)) {
      auto guard = topics.read_lock();
      const storage::log* log = topics.logs().get_log(topic->name, a.tp.partition);
      if (log == nullptr) {
        a.error = error_code::not_leader_or_follower;
        continue;
      }
      std::lock_guard log_lock(log->mutex());
      auto found = log->find_offset_by_timestamp(now_ms - *settings.auto_offset_reset_duration_ms,
                                                 log->log_start_offset());
      if (!found) {
        a.error = error_code::kafka_storage_error;
        continue;
      }
      if (!*found || (*found)->offset >= log->high_watermark()) {
        a.error = error_code::offset_not_available;
        continue;
      }
      by_duration_start = (*found)->offset;
    }
    for (int attempt = 0; attempt < share_read_attempts; ++attempt) {
      int64_t acquirable = 0;
      auto from = shares.next_fetch_offset(group_id, a.tp, log_start, readable_end, now_ms,
                                           by_duration_start, &acquirable);
      if (!from || *from >= readable_end) break;
      // What this partition can take: the request's records left, and what the share-partition
      // can hand out now.
      int64_t want = std::min<int64_t>(records_left, acquirable);
      if (want <= 0) break;
      storage::file_slice slice;
      std::vector<coordinator::aborted_batch_filter::aborted_transaction> aborted;
      {
        auto guard = topics.read_lock();
        const storage::log* log = topics.logs().get_log(topic->name, a.tp.partition);
        if (log == nullptr) break;  // deleted meanwhile
        std::lock_guard log_lock(log->mutex());
        const std::optional<offset_t> lso =
            committed_only ? std::optional<offset_t>(log->last_stable_offset()) : std::nullopt;
        auto read =
            log->read(*from, static_cast<int32_t>(std::min<int64_t>(budget, INT32_MAX)), true, lso);
        if (!read) {
          if (read.error().code != storage::storage_errc::offset_out_of_range) {
            spdlog::error("ShareFetch {}-{} at {}: {}", topic->name, a.tp.partition, *from,
                          read.error().message);
            a.error = error_code::kafka_storage_error;
          }
          break;
        }
        if (!read->slice || read->slice->length == 0) break;
        slice = *read->slice;  // its segment file stays open while the slice holds it
        if (lso) {
          for (const auto& t : log->collect_aborted_txns(*from, *lso)) {
            aborted.push_back({t.producer_id, t.first_offset});
          }
        }
      }
      coordinator::aborted_batch_filter filter(std::move(aborted));
      // Window by window: read the headers, acquire from the batches found, until what can be
      // taken is acquired or the slice (MaxBytes, the high watermark) ends.
      std::array<uint8_t, share_max_window_bytes> window;  // not zeroed: read into
      int64_t window_bytes = share_first_window_bytes;
      std::vector<share_read_batch> batches;
      int64_t at = 0;  // in the slice: the next batch's header
      int64_t taken = 0;
      bool again = false;  // read again from the share-partition's next fetch offset
      while (taken < want && at < slice.length) {
        const int64_t size = std::min<int64_t>(slice.length - at, window_bytes);
        if (size < static_cast<int64_t>(record::record_batch_overhead)) break;
        storage::file_slice part{slice.file, slice.position + at, static_cast<int32_t>(size)};
        if (auto r = storage::read_slice(
                part, std::span<uint8_t>(window.data(), static_cast<size_t>(size)));
            !r) {
          a.error = error_code::kafka_storage_error;
          break;
        }
        const size_t first_new = batches.size();
        const int64_t window_at = at;
        at = parse_share_headers(std::span<const uint8_t>(window.data(), static_cast<size_t>(size)),
                                 at, slice.length, batches);
        if (batches.size() == first_new) break;  // no whole batch left in the slice
        if (at < window_at + size) {             // small batches: the next read takes more of them
          window_bytes = std::min(window_bytes * 4, share_max_window_bytes);
        }
        std::vector<coordinator::fetched_batch> chunk;
        for (size_t i = first_new; i < batches.size(); ++i) {
          share_read_batch& b = batches[i];
          if (committed_only) {
            b.batch.aborted = filter.aborted(b.batch.base_offset, b.producer_id, b.transactional,
                                             b.batch.is_control);
          }
          chunk.push_back(b.batch);
        }
        // In a cluster the write may go to another broker (one node writes in-process).
        const coordinator::share_answer_later* later = nullptr;
        if (services.replicas != nullptr) {
          if (!a.written) a.written = std::make_unique<share_write_wait>(executor);
          later = &a.written->later();
        }
        auto got = shares.acquire(group_id, member_id, a.tp, chunk,
                                  static_cast<int32_t>(want - taken), now_ms, later, mode);
        if (got.empty()) {
          // Records the member holds and a window that gave it nothing more (the rest is
          // others' or past the partition's lock limit): answer what it has.
          if (!a.acquired.empty()) break;
          // Nothing yet: the window held only what is never delivered (control batches, aborted
          // transactions: archived now), or another fetch took its records meanwhile. Where
          // does the share-partition say to read now? Nowhere: done (rather than reading on
          // through MaxBytes of the log); past these batches: read on; within them: read again.
          int64_t more = 0;
          auto next = shares.next_fetch_offset(group_id, a.tp, log_start, readable_end, now_ms,
                                               std::nullopt, &more);
          if (!next || *next >= readable_end || more <= 0) break;
          if (*next <= batches.back().batch.last_offset) {
            again = true;
            break;
          }
          want = std::min<int64_t>(records_left, more);
          continue;
        }
        for (const auto& r : got) {
          const auto n = static_cast<int32_t>(r.last_offset - r.first_offset + 1);
          records_left -= n;
          taken += n;
          acquired += static_cast<size_t>(n);
        }
        for (const auto& r : got) {  // a range that goes on across windows stays one range
          if (!a.acquired.empty() && a.acquired.back().last_offset + 1 == r.first_offset &&
              a.acquired.back().delivery_count == r.delivery_count) {
            a.acquired.back().last_offset = r.last_offset;
          } else {
            a.acquired.push_back(r);
          }
        }
      }
      if (a.error != error_code::none) break;
      if (a.acquired.empty()) {
        if (again) continue;
        break;
      }
      // The batches from the first to the last that holds an acquired offset.
      auto holds_acquired = [&](const share_read_batch& b) {
        return std::any_of(a.acquired.begin(), a.acquired.end(), [&](const auto& r) {
          return r.first_offset <= b.batch.last_offset && r.last_offset >= b.batch.base_offset;
        });
      };
      auto first = std::find_if(batches.begin(), batches.end(), holds_acquired);
      auto last = std::find_if(batches.rbegin(), batches.rend(), holds_acquired);
      const size_t length = last->position + last->size - first->position;
      a.records =
          storage::file_slice{slice.file, slice.position + static_cast<int64_t>(first->position),
                              static_cast<int32_t>(length)};
      budget -= static_cast<int64_t>(length);
      break;
    }
  }
  return acquired;
}

// Encodes `reply` (records empty) and splices each partition's slice in where its records go, as
// file regions (sendfile). In a ShareFetch partition the records come before AcquiredRecords and
// the tagged fields (none set), so each position follows from the generated size functions;
// splice_file_regions checks the empty records found there. Copies the records when the layout
// is not as expected.
response encode_share_fetch_response(protocol::share_fetch_response& reply, int16_t version,
                                     const std::vector<const storage::file_slice*>& slices) {
  constexpr bool flexible = true;  // every version served (1-2)
  std::vector<records_splice> splices;
  size_t pos = 4 + 2 + protocol::nullable_string_size(reply.error_message, flexible) + 4;
  pos += protocol::array_count_size(static_cast<int64_t>(reply.responses.size()), flexible);
  size_t i = 0;
  for (const auto& topic : reply.responses) {
    pos += 16;
    pos += protocol::array_count_size(static_cast<int64_t>(topic.partitions.size()), flexible);
    for (const auto& p : topic.partitions) {
      const size_t size = p.size(version);
      if (const storage::file_slice* s = slices[i++]) {
        size_t acquired =
            protocol::array_count_size(static_cast<int64_t>(p.acquired_records.size()), flexible);
        for (const auto& r : p.acquired_records) acquired += r.size(version);
        splices.push_back({pos + size - 1 /* tagged */ - acquired - 1 /* empty records */, s});
      }
      pos += size;
    }
    pos += 1;  // the topic's tagged fields
  }
  response plain = encode_response(reply, version);
  if (splices.empty()) return plain;
  if (pos <= plain.body.size()) {
    if (auto spliced = splice_file_regions(plain, splices, flexible)) return std::move(*spliced);
  }
  spdlog::warn("ShareFetch v{}: response layout not as expected, copying records", version);
  std::vector<std::vector<uint8_t>> owned;
  i = 0;
  for (auto& topic : reply.responses) {
    for (auto& p : topic.partitions) {
      if (const storage::file_slice* s = slices[i++]) {
        auto& bytes = owned.emplace_back(static_cast<size_t>(s->length));
        if (!storage::read_slice(*s, bytes)) {
          p.acquired_records.clear();  // unreadable: acquired, not handed out (locks expire)
          p.error_code = protocol::code(error_code::kafka_storage_error);
          continue;
        }
        p.records = protocol::bytes_view(bytes);
      }
    }
  }
  return encode_response(reply, version);
}

response error_reply(error_code e, int16_t version, int32_t lock_ms) {
  protocol::share_fetch_response reply;
  reply.error_code = protocol::code(e);
  reply.acquisition_lock_timeout_ms = lock_ms;
  return encode_response(reply, version);
}

asio::awaitable<handler_outcome> handle_share_fetch(request_context& request) {
  auto decoded = decode_group_request<protocol::share_fetch_request>(request, "ShareFetch");
  if (!decoded) co_return close_connection{"bad ShareFetch request"};
  const protocol::share_fetch_request& req = *decoded;
  const int16_t version = request.header.api_version;
  broker_services& services = request.services;
  coordinator::share_coordinator& shares = *services.shares;
  const int32_t lock_ms = shares.group_settings(req.group_id.value_or("")).record_lock_duration_ms;
  if (!share_groups_enabled(services.topics->metadata())) {
    co_return error_reply(error_code::unsupported_version, version, lock_ms);
  }
  const std::string_view group_id = req.group_id.value_or("");
  const std::string_view member_id = req.member_id.value_or("");
  if (!authorize_group(request, security::acl_operation::read, group_id)) {
    co_return error_reply(error_code::group_authorization_failed, version, lock_ms);
  }
  if (group_id.empty() || !share_member_id_valid(member_id)) {
    co_return error_reply(error_code::invalid_request, version, lock_ms);
  }
  // ShareAcquireMode: 0 batch_optimized, 1 record_limit (Kafka's ShareAcquireMode.forId refuses
  // any other).
  if (req.share_acquire_mode != 0 && req.share_acquire_mode != 1) {
    co_return error_reply(error_code::invalid_request, version, lock_ms);
  }
  const int32_t epoch = req.share_session_epoch;
  bool has_acks = false;
  std::vector<coordinator::share_topic_partition> added;
  std::vector<coordinator::share_topic_partition> forgotten;
  for (const auto& t : req.topics) {
    for (const auto& p : t.partitions) {
      added.push_back({coordinator::from_wire(t.topic_id), p.partition_index});
      if (!p.acknowledgement_batches.empty()) has_acks = true;
    }
  }
  for (const auto& t : req.forgotten_topics_data) {
    for (int32_t p : t.partitions) forgotten.push_back({coordinator::from_wire(t.topic_id), p});
  }
  if (epoch == coordinator::share_session_initial_epoch && has_acks) {
    co_return error_reply(error_code::invalid_request, version, lock_ms);
  }
  auto step = shares.step_session(group_id, member_id, epoch, added, forgotten);
  if (step.error != error_code::none) co_return error_reply(step.error, version, lock_ms);

  int64_t now = wall_clock_ms();
  const auto executor = co_await asio::this_coro::executor;
  // The session's partitions, then any acknowledged partition not in it (a final request).
  std::vector<partition_answer> answers;
  std::map<coordinator::share_topic_partition, size_t> index;  // into answers
  for (const auto& tp : step.partitions) {
    index.emplace(tp, answers.size());
    answers.emplace_back(tp);
  }
  const bool renew_allowed = version >= 2 && req.is_renew_ack;
  for (const auto& t : req.topics) {
    for (const auto& p : t.partitions) {
      if (p.acknowledgement_batches.empty()) continue;
      const coordinator::share_topic_partition tp{coordinator::from_wire(t.topic_id),
                                                  p.partition_index};
      auto [at, fresh] = index.emplace(tp, answers.size());
      if (fresh) answers.emplace_back(tp);
    }
  }
  // READ on each topic, asked once per topic as Kafka's filterByAuthorized: a refused topic's
  // partitions are neither fetched nor acknowledged.
  std::vector<coordinator::topic_uuid> asked_topics;
  if (services.authorizer != nullptr) {  // (nothing to ask on the hot path without one)
    for (const partition_answer& a : answers) asked_topics.push_back(a.tp.topic_id);
  }
  const share_topic_readers readers(request, *services.topics, asked_topics);
  for (size_t i = 0; i < step.partitions.size(); ++i) {  // the session's: fetched
    if (!readers.allowed(answers[i].tp.topic_id)) {
      answers[i].error = error_code::topic_authorization_failed;
    }
  }
  for (const auto& t : req.topics) {
    for (const auto& p : t.partitions) {
      if (p.acknowledgement_batches.empty()) continue;
      const coordinator::share_topic_partition tp{coordinator::from_wire(t.topic_id),
                                                  p.partition_index};
      share_write_wait written(executor);
      std::optional<error_code> verdict = apply_acknowledgements(
          shares, *services.topics, group_id, member_id, tp.topic_id, tp.partition,
          p.acknowledgement_batches, renew_allowed, now, written, &readers);
      if (!verdict) {
        // Written at another broker's share coordinator: its answer.
        verdict = co_await written.answer(request);
        if (!verdict) co_return close_connection{"connection closed during a share fetch"};
      }
      answers[index.at(tp)].ack_error = *verdict;
    }
  }
  for (partition_answer& a : answers) {
    if (a.ack_error && *a.ack_error == error_code::none) {
      a.ack_error = co_await await_share_state_committed(request, group_id, a.tp);
    }
  }
  // Each request starts at another of the session's partitions (Kafka's SharePartitionManager
  // rotates them round robin by the session epoch), so MaxRecords is not always filled from the
  // first ones while the others wait. Answers keep the session's order.
  std::vector<size_t> fetch_order(answers.size());
  for (size_t i = 0; i < fetch_order.size(); ++i) fetch_order[i] = i;
  if (const size_t n = step.partitions.size(); n > 1 && epoch > 0) {
    std::rotate(fetch_order.begin(), fetch_order.begin() + static_cast<ptrdiff_t>(epoch % n),
                fetch_order.begin() + static_cast<ptrdiff_t>(n));
  }
  const bool fetching = epoch != coordinator::share_session_final_epoch && !renew_allowed;
  if (epoch == coordinator::share_session_final_epoch) {
    shares.close_session(group_id, member_id, now);
  }
  if (fetching && !answers.empty()) {
    size_t got =
        fetch_once(services, group_id, member_id, req, answers, fetch_order, now, executor);
    if (got == 0 && req.max_wait_ms > 0 && services.waiters != nullptr) {
      // Long poll: an append to a session partition or an expiring lock wakes it.
      auto waiter = std::make_shared<fetch_waiter>(executor);
      std::vector<storage::topic_partition> tps;
      for (const auto& a : answers) {
        if (auto t = find_share_topic(*services.topics, a.tp.topic_id)) {
          tps.push_back({t->name, a.tp.partition});
        }
      }
      fetch_waiter_registration registration(*services.waiters, waiter, std::move(tps));
      const auto deadline =
          std::chrono::steady_clock::now() + std::chrono::milliseconds(req.max_wait_ms);
      for (;;) {
        now = wall_clock_ms();
        got = fetch_once(services, group_id, member_id, req, answers, fetch_order, now, executor);
        if (got > 0 || std::chrono::steady_clock::now() >= deadline) break;
        auto wake = deadline;
        if (auto lock = shares.next_lock_deadline(group_id, step.partitions)) {
          const auto until = std::chrono::milliseconds(std::max<int64_t>(*lock - now, 1));
          wake = std::min(wake, std::chrono::steady_clock::now() + until);
        }
        if (!co_await waiter->wait_for_append(request, wake)) {
          co_return close_connection{"connection closed during a share fetch wait"};
        }
      }
    }
  }

  // In a cluster, acquisitions written at another broker's share coordinator are handed out once
  // written (Kafka's order); one whose write failed was undone there and is not.
  for (partition_answer& a : answers) {
    if (!a.written || !a.written->pending()) continue;
    const std::optional<error_code> e = co_await a.written->answer(request);
    if (!e) co_return close_connection{"connection closed during a share fetch"};
    if (*e == error_code::none) continue;
    a.acquired.clear();
    a.records.reset();
  }

  protocol::share_fetch_response reply;
  reply.acquisition_lock_timeout_ms = lock_ms;
  const bool full = epoch == coordinator::share_session_initial_epoch;
  std::vector<const storage::file_slice*> slices;  // per answered partition, in order
  for (const partition_answer& a : answers) {
    if (!full && a.error == error_code::none && !a.ack_error && a.acquired.empty()) continue;
    if (reply.responses.empty() || reply.responses.back().topic_id.bytes != a.tp.topic_id) {
      reply.responses.emplace_back().topic_id = coordinator::to_wire(a.tp.topic_id);
    }
    auto& p = reply.responses.back().partitions.emplace_back();
    p.partition_index = a.tp.partition;
    p.error_code = protocol::code(a.error);
    if (a.ack_error) p.acknowledge_error_code = protocol::code(*a.ack_error);
    p.current_leader.leader_id = services.config.node_id;
    p.current_leader.leader_epoch = local_leader_epoch;
    for (const auto& r : a.acquired) {
      p.acquired_records.push_back({r.first_offset, r.last_offset, r.delivery_count});
    }
    slices.push_back(a.records && a.records->length > 0 ? &*a.records : nullptr);
  }
  co_return encode_share_fetch_response(reply, version, slices);
}

}  // namespace

void register_share_fetch_handler(handler_registry& registry) {
  registry.register_handler(protocol::share_fetch_request::api_key,
                            protocol::share_fetch_request::min_version,
                            protocol::share_fetch_request::max_version, handle_share_fetch);
}

}  // namespace tarn::broker
