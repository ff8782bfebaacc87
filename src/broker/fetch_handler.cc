// Fetch (key 1): record batches from partition logs, byte for byte as stored.
//
// Versions served: 4-18 (Kafka 4.4's range; flexible from 12, topic IDs from 13). Behaviour, as
// Kafka 4.4's KafkaApis.handleFetchRequest and ReplicaManager.fetchMessages/readFromLog answer:
//   - Sessions (v7+, KIP-227): fetch_session.h. Session errors answer with the top-level error
//     and no partitions.
//   - Partitions are read in order with a budget of min(MaxBytes, fetch.max.bytes); each gets at
//     most min(PartitionMaxBytes, what is left). Until one partition returned bytes, the first
//     batch is returned whole however large (KIP-74). Reads are whole batches from the one that
//     contains FetchOffset (so a fetch inside a batch returns the whole batch) up to the high
//     watermark, from one segment; the next fetch continues in the next segment.
//   - Every partition carries the high watermark, last stable offset (the first offset of the
//     oldest open transaction, else the high watermark) and log start offset.
//   - READ_COMMITTED (IsolationLevel 1): the bytes stop before the batch at the last stable
//     offset, and AbortedTransactions lists the aborted transactions (producer id, first offset)
//     of the .txnindex files that overlap [FetchOffset, LSO) when bytes are returned, else empty.
//     READ_UNCOMMITTED: AbortedTransactions null.
//   - Errors per partition: UNKNOWN_TOPIC_ID (v13+ id not known; records null),
//     UNKNOWN_TOPIC_OR_PARTITION (records null), NOT_LEADER_OR_FOLLOWER (a known partition
//     without a log), FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH (CurrentLeaderEpoch v9+ below /
//     above the partition's: 0 on a single node), OFFSET_OUT_OF_RANGE (outside [log start, log
//     end]), KAFKA_STORAGE_ERROR
//     (NOT_LEADER_OR_FOLLOWER below v6), UNSUPPORTED_COMPRESSION_TYPE (zstd topic below v10);
//     all with high watermark, LSO and log start offset -1.
//   - Long polling: when fewer than MinBytes are readable and nothing failed, the fetch waits up
//     to MaxWaitMs in the waiting room (fetch_waiters.h); an append to any of its partitions
//     wakes it to read again.
//   - The stored bytes go out with sendfile: the response body is encoded around them and each
//     partition's records are a file region (handler.h), never copied through user space.
//   - In a cluster (docs/cluster.md, "Replication" and "Fail-over"): a fetch with a replica id
//     (ReplicaState v15+, ReplicaId below) is a follower's: NOT_LEADER_OR_FOLLOWER where this
//     broker does not serve as the partition's leader or the id is not one of its replicas,
//     FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH for a CurrentLeaderEpoch older / newer than the
//     partition's; with LastFetchedEpoch (v12+) whose end in this leader's epoch cache is below
//     FetchOffset (or an older epoch), DivergingEpoch {the largest epoch at or below it, its end
//     here} and no records, answered at once (the follower truncates there and fetches again,
//     replica_manager.h); otherwise it reads up to the log end offset and records the fetch
//     offset as the follower's log end offset (the high watermark may move and wake waiting
//     fetches and acks=all produces). A consumer's fetch of a partition this broker does not
//     serve as leader is NOT_LEADER_OR_FOLLOWER (below v11, or without a copy here: follower
//     fetching below) and its CurrentLeaderEpoch is checked against the partition's leader
//     epoch; consumers read up to the high watermark, which the ISR moves (a FetchOffset between
//     the high watermark and the log end offset, as on a new leader whose ISR has not caught up
//     yet, reads nothing yet, as in Kafka). NOT_LEADER_OR_FOLLOWER
//     and FENCED_LEADER_EPOCH carry KIP-951's CurrentLeader (v12+) and NodeEndpoints (v16+).
//   - Follower fetching (KIP-392, docs/cluster.md "Follower fetching"): a consumer's Fetch v11+
//     (client metadata, RackId) of a partition this broker follows reads its copy up to its high
//     watermark (the leader's, learnt from the leader's fetch answers; READ_COMMITTED up to the
//     last stable offset its own producer state gives), with the same errors as on the leader:
//     FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH against the leader epoch it knows,
//     OFFSET_OUT_OF_RANGE outside [log start, log end], NOT_LEADER_OR_FOLLOWER where it has no
//     copy; below v11 a follower answers NOT_LEADER_OR_FOLLOWER. With replica.selector.class
//     RackAwareReplicaSelector the leader answers a consumer with a RackId PreferredReadReplica
//     (an in-sync replica of its rack that has the offset), its offsets and no records, at once.
// Quotas (KIP-219, KafkaApis.handleFetchRequest): MaxBytes is capped by what the client's
// consumer_byte_rate allows in one quota window; the response's size is recorded against it
// and the handling time against request_percentage. A throttled fetch is answered empty with
// ThrottleTimeMs (the recorded bytes taken back, the session left as it was: Kafka's
// getThrottledResponse) and mutes the connection that long.
// A body that does not decode closes the connection.
#include <spdlog/spdlog.h>

#include <asio/this_coro.hpp>
#include <chrono>
#include <map>
#include <set>

#include "broker/authorization.h"
#include "broker/broker_metrics.h"
#include "broker/fetch_session.h"
#include "broker/fetch_waiters.h"
#include "broker/file_regions.h"
#include "broker/handler.h"
#include "broker/leader_hints.h"
#include "broker/replica_manager.h"
#include "broker/throttle.h"
#include "broker/topic_handler_util.h"
#include "broker/topic_manager.h"
#include "protocol/error_codes.h"
#include "protocol/messages/fetch_request.h"
#include "protocol/messages/fetch_response.h"

namespace tarn::broker {

namespace {

using protocol::error_code;
constexpr int8_t read_committed = 1;

// One partition's read.
struct partition_read {
  int16_t error_code = 0;
  bool records_null = false;  // an unresolved topic: Kafka's partitionResponse has null records
  int64_t high_watermark = -1;
  int64_t last_stable_offset = -1;
  int64_t log_start_offset = -1;
  std::optional<storage::file_slice> slice;
  std::vector<storage::aborted_txn> aborted;  // READ_COMMITTED: overlapping aborted transactions
  // A follower whose log diverges from this leader's (Fetch v12+): DivergingEpoch, no records.
  std::optional<storage::epoch_and_end_offset> diverging;
  // KIP-392: the leader sends the consumer to this replica; no records.
  int32_t preferred_read_replica = -1;
  std::shared_ptr<topic_metrics> metrics;  // the topic's BrokerTopicMetrics (null if unknown)
  size_t bytes() const { return slice ? static_cast<size_t>(slice->length) : 0; }
};

struct fetch_params {
  int16_t version = 0;
  int32_t max_bytes = 0;
  int32_t min_bytes = 0;
  int8_t isolation_level = 0;
  int32_t replica_id = -1;              // a follower's fetch when >= 0
  replica_manager* replicas = nullptr;  // in a cluster
  int32_t node_id = 0;
  leader_hints* hints = nullptr;  // KIP-951, v12+
  // KIP-392: a consumer's Fetch v11+ carries client metadata (Kafka's ClientMetadata, RackId
  // among it): followers serve it up to their high watermark, and with replica.selector.class
  // RackAwareReplicaSelector the leader may send it to an in-sync replica in its rack.
  bool client_metadata = false;
  std::string_view rack_id;
  bool rack_aware = false;
  // The brokers the leader may send the consumer to: live, with an endpoint on the request's
  // listener, with their racks (listed before any partition lock, when a selection may happen).
  std::vector<cluster::read_replica_candidate> candidates;
  bool selects_replica() const {
    return rack_aware && client_metadata && !rack_id.empty() && replicas != nullptr;
  }
};

std::array<uint8_t, 16> id_bytes(const protocol::uuid& id) { return id.bytes; }

// Reads every partition of the context in order (ReplicaManager.readFromLog).
// `denied`: the topics the client may not READ (TOPIC_AUTHORIZATION_FAILED, decided before
// whether the topic exists, as Kafka).
std::vector<partition_read> read_all(topic_manager& topics, broker_metrics* metrics,
                                     fetch_context& ctx, const fetch_params& params,
                                     size_t& total_bytes, bool& any_error,
                                     const std::set<std::string, std::less<>>& denied) {
  std::vector<partition_read> out(ctx.partitions.size());
  total_bytes = 0;
  any_error = false;
  auto guard = topics.read_lock();
  storage::log_manager& logs = topics.logs();
  std::map<std::array<uint8_t, 16>, const storage::topic_info*> by_id;
  if (ctx.uses_topic_ids) {
    for (const storage::topic_info* t : logs.topics()) by_id[id_bytes(to_wire(t->topic_id))] = t;
  }
  int64_t limit = params.max_bytes;
  bool min_one = true;
  for (size_t i = 0; i < ctx.partitions.size(); ++i) {
    auto& entry = ctx.partitions[i];
    partition_read& pr = out[i];
    const storage::topic_info* info = nullptr;
    if (ctx.uses_topic_ids) {
      auto it = by_id.find(entry.key.topic_id);
      if (it != by_id.end()) {
        info = it->second;
        entry.key.topic = info->name;
      }
      if (info == nullptr) {
        pr.error_code = code(error_code::unknown_topic_id);
        pr.records_null = true;
        any_error = true;
        continue;
      }
    } else {
      info = logs.find_topic(entry.key.topic);
    }
    if (!denied.empty() && denied.contains(entry.key.topic)) {
      pr.error_code = code(error_code::topic_authorization_failed);
      pr.records_null = true;
      any_error = true;
      continue;
    }
    const int32_t index = entry.key.partition;
    if (info == nullptr || index < 0 || index >= info->partitions) {
      pr.error_code = code(error_code::unknown_topic_or_partition);
      pr.records_null = true;
      any_error = true;
      continue;
    }
    if (metrics != nullptr) pr.metrics = metrics->topic(info->name);
    storage::log* log = logs.get_log(info->name, index);
    const int32_t epoch = entry.request.current_leader_epoch;
    // A single node ignores replica ids, as before clusters existed.
    const bool follower_fetch = params.replica_id >= 0 && params.replicas != nullptr;
    bool read_follower_copy = false;  // a consumer reading this broker's copy as a follower
    if (log == nullptr) {
      pr.error_code = code(error_code::not_leader_or_follower);
    } else if (!follower_fetch) {
      const auto role =
          params.replicas != nullptr ? params.replicas->role(info->name, index) : std::nullopt;
      // Kafka's FetchParams.fetchOnlyLeader: a consumer without client metadata (below v11)
      // reads only the leader; with it, any replica with a log (Partition.localLogWithEpochOrThrow
      // with requireLeader false), its current leader epoch checked against the one it knows.
      read_follower_copy = role && !role->serving && role->follower && params.client_metadata;
      if (role && !role->serving && !read_follower_copy) {
        pr.error_code = code(error_code::not_leader_or_follower);
      } else {
        pr.error_code = code(check_current_leader_epoch(
            epoch, role ? role->leader_epoch : int32_t{local_leader_epoch}));
      }
    }
    if (pr.error_code == 0 && params.version < 10 &&
        info->config.compression_type == storage::broker_compression::zstd) {
      pr.error_code = code(error_code::unsupported_compression_type);
    }
    if (pr.error_code != 0) {
      any_error = true;
      continue;
    }
    int64_t max_bytes = std::min<int64_t>(entry.request.max_bytes, limit);
    const bool committed_only = params.isolation_level == read_committed;
    std::lock_guard log_lock(log->mutex());
    if (!follower_fetch && !read_follower_copy && params.selects_replica()) {
      // ReplicaManager.readFromLog: with a preferred read replica the leader reads nothing and
      // answers its offsets; the fetch is answered at once (fetchMessages'
      // hasPreferredReadReplica).
      if (auto preferred = params.replicas->preferred_read_replica(
              info->name, index, std::string(params.rack_id), params.candidates,
              entry.request.fetch_offset)) {
        pr.preferred_read_replica = *preferred;
        pr.high_watermark = log->high_watermark();
        pr.last_stable_offset = log->last_stable_offset();
        pr.log_start_offset = log->log_start_offset();
        any_error = true;
        continue;
      }
    }
    // A follower's partition named by leader.replication.throttled.replicas (Kafka's
    // shouldLeaderThrottle): no records while it is out of the ISR past the throttled rate.
    std::optional<bool> throttle;
    if (follower_fetch) {
      const auto f = params.replicas->on_follower_fetch(
          info->name, index, params.replica_id, epoch, entry.request.fetch_offset,
          params.version >= 12 ? entry.request.last_fetched_epoch : -1,
          entry.request.log_start_offset, *log);
      if (f.error != error_code::none || f.diverging) {
        // A diverging follower is answered at once (Kafka's fetchMessages does not wait).
        any_error = true;
        pr.error_code = code(f.error);
        if (f.diverging) {
          pr.diverging = f.diverging;
          pr.high_watermark = log->high_watermark();
          pr.last_stable_offset = log->last_stable_offset();
          pr.log_start_offset = log->log_start_offset();
        }
        continue;
      }
      throttle = params.replicas->leader_throttle(info->name, index, params.replica_id);
      if (throttle.value_or(false)) max_bytes = 0;
    }
    auto read = log->read(
        entry.request.fetch_offset, static_cast<int32_t>(std::max<int64_t>(max_bytes, 0)),
        min_one && !throttle.value_or(false),
        committed_only ? std::optional<offset_t>(log->last_stable_offset()) : std::nullopt,
        follower_fetch);
    if (!read) {
      any_error = true;
      if (read.error().code == storage::storage_errc::offset_out_of_range) {
        pr.error_code = code(error_code::offset_out_of_range);
        if (follower_fetch) {
          // tarn's followers start over at the log start offset when it is past their end
          // (Kafka's leader answers -1 here and its follower asks ListOffsets instead).
          pr.log_start_offset = log->log_start_offset();
          pr.high_watermark = log->high_watermark();
        }
      } else {
        spdlog::error("Fetch {}-{} at {}: {}", info->name, index, entry.request.fetch_offset,
                      read.error().message);
        pr.error_code = code(params.version <= 5 ? error_code::not_leader_or_follower
                                                 : error_code::kafka_storage_error);
      }
      continue;
    }
    pr.high_watermark = read->high_watermark;
    pr.last_stable_offset = read->last_stable_offset;
    pr.log_start_offset = read->log_start_offset;
    pr.slice = std::move(read->slice);
    if (throttle) params.replicas->record_leader_throttled_bytes(static_cast<int64_t>(pr.bytes()));
    if (committed_only && pr.slice) {
      // Kafka's collectAbortedTransactions up to the LSO (a superset of the fetched range's:
      // the consumer skips only batches of the listed producers at or after their first offset).
      pr.aborted = log->collect_aborted_txns(entry.request.fetch_offset, read->last_stable_offset);
    }
    if (pr.bytes() > 0) min_one = false;
    limit = std::max<int64_t>(0, limit - static_cast<int64_t>(pr.bytes()));
    total_bytes += pr.bytes();
  }
  return out;
}

// BrokerTopicMetrics for one answered fetch: every partition counts a fetch request, a failed one
// a failed request, and the record bytes returned count as bytes out.
void record_fetch_metrics(broker_metrics* metrics, const std::vector<partition_read>& reads) {
  if (metrics == nullptr) return;
  topic_metrics& all = metrics->all_topics;
  for (const auto& pr : reads) {
    all.total_fetch_requests.add();
    if (pr.metrics) pr.metrics->total_fetch_requests.add();
    if (pr.error_code != 0) {
      all.failed_fetch_requests.add();
      if (pr.metrics) pr.metrics->failed_fetch_requests.add();
    } else if (pr.bytes() > 0) {
      all.bytes_out.add(pr.bytes());
      if (pr.metrics) pr.metrics->bytes_out.add(pr.bytes());
    }
  }
}

// Encodes `reply` (whose partitions with a slice have empty, non-null records) and splices each
// slice in as a file region where its records go. The generated encoder writes records last in a
// partition, before the partition's tagged fields (none set when records are present), so each
// position follows from the generated size functions; splice_file_regions checks the
// empty-records bytes found there. Returns nullopt if the layout is not as expected (the caller
// then copies instead).
std::optional<response> encode_with_regions(
    const protocol::fetch_response& reply, int16_t version,
    const std::vector<std::vector<const storage::file_slice*>>& slices) {
  response plain = encode_response(reply, version);
  const bool flexible = version >= 12;
  const size_t empty_len = flexible ? 1 : 4;
  const size_t tagged_len = flexible ? 1 : 0;
  std::vector<records_splice> splices;
  size_t pos = 4 + (version >= 7 ? 6 : 0);
  pos += protocol::array_count_size(static_cast<int64_t>(reply.responses.size()), flexible);
  for (size_t t = 0; t < reply.responses.size(); ++t) {
    const auto& topic = reply.responses[t];
    pos += version >= 13 ? 16 : protocol::string_size(topic.topic, flexible);
    pos += protocol::array_count_size(static_cast<int64_t>(topic.partitions.size()), flexible);
    for (size_t p = 0; p < topic.partitions.size(); ++p) {
      const size_t size = topic.partitions[p].size(version);
      if (const storage::file_slice* s = slices[t][p]) {
        splices.push_back({pos + size - tagged_len - empty_len, s});
      }
      pos += size;
    }
    pos += tagged_len;
  }
  if (pos > plain.body.size()) return std::nullopt;
  return splice_file_regions(plain, splices, flexible);
}

// Builds the response from the reads and the session's verdict.
result<response, std::string> build_response(const fetch_context& ctx,
                                             const std::vector<partition_read>& reads,
                                             const fetch_session_reply& verdict,
                                             const fetch_params& params) {
  protocol::fetch_response reply;
  reply.error_code = verdict.error_code;
  reply.session_id = verdict.session_id;
  std::vector<std::vector<const storage::file_slice*>> slices;
  static const uint8_t no_bytes = 0;
  for (size_t i : verdict.include) {
    const fetch_partition_key& key = ctx.partitions[i].key;
    const partition_read& pr = reads[i];
    // Consecutive partitions of one topic share its entry (FetchResponse.toMessage).
    bool same_topic = false;
    if (!reply.responses.empty()) {
      const auto& last = reply.responses.back();
      same_topic =
          ctx.uses_topic_ids ? last.topic_id.bytes == key.topic_id : last.topic == key.topic;
    }
    if (!same_topic) {
      auto& t = reply.responses.emplace_back();
      t.topic = key.topic;
      t.topic_id.bytes = key.topic_id;
      slices.emplace_back();
    }
    auto& p = reply.responses.back().partitions.emplace_back();
    p.partition_index = key.partition;
    p.error_code = pr.error_code;
    p.high_watermark = pr.high_watermark;
    p.last_stable_offset = pr.last_stable_offset;
    p.log_start_offset = pr.log_start_offset;
    if (pr.records_null) {
      p.aborted_transactions.emplace();
    } else if (params.isolation_level == read_committed && pr.error_code == 0) {
      auto& list = p.aborted_transactions.emplace();
      for (const auto& t : pr.aborted) list.push_back({t.producer_id, t.first_offset});
    }
    p.preferred_read_replica = pr.preferred_read_replica;
    if (pr.diverging) {
      p.diverging_epoch.epoch = pr.diverging->epoch;
      p.diverging_epoch.end_offset = pr.diverging->end_offset;
    }
    if (params.hints != nullptr && params.version >= 12 &&
        (pr.error_code == code(error_code::not_leader_or_follower) ||
         pr.error_code == code(error_code::fenced_leader_epoch))) {
      params.hints->fill(key.topic, key.partition, p.current_leader);
    }
    if (!pr.records_null) p.records = protocol::bytes_view(&no_bytes, 0);
    slices.back().push_back(pr.bytes() > 0 ? &*pr.slice : nullptr);
  }
  if (params.hints != nullptr && params.version >= 16) {
    reply.node_endpoints = params.hints->endpoints<protocol::fetch_response::node_endpoint>();
  }
  if (auto spliced = encode_with_regions(reply, params.version, slices)) return std::move(*spliced);
  // Not expected; copying is always correct.
  spdlog::warn("Fetch v{}: response layout not as expected, copying records", params.version);
  std::vector<std::vector<uint8_t>> owned;
  size_t ti = 0;
  for (auto& t : reply.responses) {
    for (size_t pi = 0; pi < t.partitions.size(); ++pi) {
      if (const storage::file_slice* s = slices[ti][pi]) {
        auto& buf = owned.emplace_back(static_cast<size_t>(s->length));
        auto r = storage::read_slice(*s, buf);
        if (!r) return fail(r.error().message);
        t.partitions[pi].records = protocol::bytes_view(buf);
      }
    }
    ++ti;
  }
  return encode_response(reply, params.version);
}

asio::awaitable<handler_outcome> handle_fetch(request_context& request) {
  const int16_t version = request.header.api_version;
  protocol::reader r(request.body());
  auto decoded = protocol::fetch_request::decode(r, version);
  if (!decoded) {
    spdlog::warn("connection {} from {}: Fetch v{} body does not decode: {}", request.connection.id,
                 request.connection.peer, version, protocol::describe(decoded.error().code));
    co_return close_connection{"bad Fetch request"};
  }
  const auto& req = *decoded;
  broker_services& services = request.services;
  const int64_t now_ms = wall_clock_ms();

  // The request's partitions, in order; a partition named twice keeps its first place and its
  // last request (Kafka collects them in a LinkedHashMap).
  std::vector<fetch_partition_entry> fetch_data;
  std::map<fetch_partition_key, size_t> seen;
  for (const auto& t : req.topics) {
    for (const auto& p : t.partitions) {
      fetch_partition_entry e;
      if (version >= 13) {
        e.key.topic_id = t.topic_id.bytes;
      } else {
        e.key.topic = std::string(t.topic);
      }
      e.key.partition = p.partition;
      e.request = {p.fetch_offset, p.partition_max_bytes, p.current_leader_epoch,
                   p.log_start_offset, p.last_fetched_epoch};
      if (auto it = seen.find(e.key); it != seen.end()) {
        fetch_data[it->second].request = e.request;
      } else {
        seen.emplace(e.key, fetch_data.size());
        fetch_data.push_back(std::move(e));
      }
    }
  }
  std::vector<fetch_partition_key> forgotten;
  for (const auto& t : req.forgotten_topics_data) {
    for (int32_t p : t.partitions) {
      fetch_partition_key k;
      if (version >= 13) {
        k.topic_id = t.topic_id.bytes;
      } else {
        k.topic = std::string(t.topic);
      }
      k.partition = p;
      forgotten.push_back(std::move(k));
    }
  }

  fetch_context ctx = services.fetch_sessions->new_context(
      version, req.session_id, req.session_epoch, std::move(fetch_data), forgotten, now_ms);

  fetch_params params;
  params.version = version;
  params.max_bytes = std::min(req.max_bytes, services.config.fetch_max_bytes);
  quota::client_quotas* quotas = services.quotas;
  const bool fetch_quota = quotas != nullptr && quotas->fetch().enabled();
  if (fetch_quota) {
    const double window_bytes =
        quotas->fetch().max_value_in_window(quota_user(request), quota_client_id(request));
    if (window_bytes < static_cast<double>(params.max_bytes)) {
      params.max_bytes = static_cast<int32_t>(window_bytes);
    }
  }
  params.min_bytes = std::min(req.min_bytes, params.max_bytes);
  params.isolation_level = req.isolation_level;
  params.replica_id = version >= 15 ? req.replica_state.replica_id : req.replica_id;
  params.client_metadata = version >= 11 && params.replica_id < 0;
  params.rack_id = req.rack_id;
  params.rack_aware = services.config.rack_aware_replica_selection;
  params.replicas = services.replicas;
  params.node_id = services.config.node_id;
  if (params.selects_replica()) {
    for (const auto& b : cluster_as_listed(services, request.connection).brokers) {
      params.candidates.push_back({b.node_id, b.rack, true});
    }
  }
  leader_hints hints(services, request.connection);
  params.hints = &hints;

  size_t total = 0;
  bool any_error = false;
  std::vector<partition_read> reads;
  // READ on each topic, asked once per request with the number of its partitions (Kafka's
  // filterByAuthorized); a topic id not known is UNKNOWN_TOPIC_ID before any question.
  std::set<std::string, std::less<>> denied;
  if (services.authorizer != nullptr && ctx.type != fetch_context::kind::session_error) {
    std::map<std::string, int32_t, std::less<>> refs;
    {
      auto guard = services.topics->read_lock();
      for (const auto& e : ctx.partitions) {
        if (!ctx.uses_topic_ids) {
          ++refs[e.key.topic];
          continue;
        }
        for (const storage::topic_info* t : services.topics->logs().topics()) {
          if (id_bytes(to_wire(t->topic_id)) == e.key.topic_id) ++refs[t->name];
        }
      }
    }
    for (const auto& [name, count] : refs) {
      if (!authorize(request, security::acl_operation::read, security::resource_type::topic, name,
                     count)) {
        denied.insert(name);
      }
    }
  }
  if (ctx.type != fetch_context::kind::session_error) {
    topic_manager& topics = *services.topics;
    reads = read_all(topics, services.metrics, ctx, params, total, any_error, denied);
    if (req.max_wait_ms > 0 && !ctx.partitions.empty() &&
        static_cast<int64_t>(total) < params.min_bytes && !any_error) {
      // Long poll: wait for appends to these partitions, up to max_wait_ms.
      auto executor = co_await asio::this_coro::executor;
      auto waiter = std::make_shared<fetch_waiter>(executor);
      std::vector<storage::topic_partition> tps;
      for (const auto& e : ctx.partitions) tps.push_back({e.key.topic, e.key.partition});
      fetch_waiter_registration registration(*services.waiters, waiter, std::move(tps));
      const auto deadline =
          std::chrono::steady_clock::now() + std::chrono::milliseconds(req.max_wait_ms);
      for (;;) {
        // Read again once registered, so an append just before registering is not missed.
        reads = read_all(topics, services.metrics, ctx, params, total, any_error, denied);
        if (static_cast<int64_t>(total) >= params.min_bytes || any_error) break;
        if (std::chrono::steady_clock::now() >= deadline) break;
        if (!co_await waiter->wait_for_append(request, deadline)) {
          co_return close_connection{"connection closed during a fetch wait"};
        }
      }
    }
  }

  record_fetch_metrics(services.metrics, reads);
  std::vector<fetch_partition_outcome> outcomes(reads.size());
  for (size_t i = 0; i < reads.size(); ++i) {
    outcomes[i] = {reads[i].error_code, reads[i].high_watermark, reads[i].log_start_offset,
                   reads[i].bytes(), reads[i].preferred_read_replica >= 0};
  }
  if (quotas != nullptr && (fetch_quota || quotas->request().enabled()) &&
      ctx.type != fetch_context::kind::session_error) {
    // The size of the answer with every partition read, as Kafka's getResponseSize counts it.
    fetch_session_reply all;
    for (size_t i = 0; i < reads.size(); ++i) all.include.push_back(i);
    auto sized = build_response(ctx, reads, all, params);
    const double response_bytes = sized ? static_cast<double>(sized->size()) : 0.0;
    const int64_t t = wall_clock_ms();
    const int32_t time = quotas->request().record(quota_user(request), quota_client_id(request),
                                                  request_time_percentage(request), t);
    const int32_t bandwidth =
        quotas->fetch().record(quota_user(request), quota_client_id(request), response_bytes, t);
    request.request_quota_recorded = true;
    request.throttle_ms = std::max(bandwidth, time);
    if (request.throttle_ms > 0) {
      quotas->fetch().unrecord(quota_user(request), quota_client_id(request), response_bytes, t);
      protocol::fetch_response empty;
      empty.throttle_time_ms = request.throttle_ms;
      empty.session_id = ctx.type == fetch_context::kind::incremental && ctx.session
                             ? ctx.session->id
                             : invalid_session_id;
      co_return encode_response(empty, version);
    }
  }
  fetch_session_reply verdict = services.fetch_sessions->finish(ctx, outcomes, wall_clock_ms());
  auto built = build_response(ctx, reads, verdict, params);
  if (!built) {
    spdlog::error("Fetch: {}", built.error());
    co_return close_connection{"fetch read failed"};
  }
  co_return std::move(*built);
}

}  // namespace

void register_fetch_handler(handler_registry& registry) {
  registry.register_handler(protocol::fetch_request::api_key, protocol::fetch_request::min_version,
                            protocol::fetch_request::max_version, handle_fetch);
}

}  // namespace tarn::broker
