// What a request handler sees and returns, and the registry that maps an API key to the handler
// and the versions it serves. The registry is the single source of the ApiVersions response: an
// API is advertised exactly when a handler is registered for it.
#pragma once

#include <array>
#include <asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "broker/config.h"
#include "broker/request_header.h"
#include "security/principal.h"

namespace tarn::coordinator {
class group_coordinator;
class share_coordinator;
}  // namespace tarn::coordinator
namespace tarn::quota {
class client_quotas;
}
namespace tarn::cluster {
class cluster_membership;
}
namespace tarn::txn {
class txn_coordinator;
}
namespace tarn::security {
class sasl_authenticator;
}

namespace tarn::broker {

class replica_manager;
class control_worker;

// Bytes of an open file sent as part of a response body (with sendfile: stored record batches go
// from the page cache to the socket without a copy). The region goes out just before
// body[body_offset]; `owner` keeps the descriptor open until the response is written.
struct file_region {
  std::shared_ptr<const void> owner;
  int fd = -1;
  int64_t position = 0;
  size_t length = 0;
  size_t body_offset = 0;
};

// The encoded response body (no size prefix, no response header: the connection adds both),
// with file regions spliced in at ascending body offsets (Fetch; empty for every other API).
struct response {
  response() = default;
  response(std::vector<uint8_t> b) : body(std::move(b)) {}  // NOLINT: implicit on purpose

  std::vector<uint8_t> body;
  std::vector<file_region> file_regions;

  size_t size() const {
    size_t n = body.size();
    for (const auto& r : file_regions) n += r.length;
    return n;
  }
};
// The request gets no answer (Produce with acks=0).
struct no_response {};
// Answer nothing and close the connection once the earlier responses are written.
struct close_connection {
  std::string reason;
};
using handler_outcome = std::variant<response, no_response, close_connection>;

// Broker-wide state a handler may read. Owned by the server; outlives every connection.
class handler_registry;
class topic_manager;
class fetch_session_cache;
class fetch_waiters;
class request_memory;
class broker_metrics;
class broker_authorizer;
class producer_id_source;
class txn_verifier;
struct broker_services {
  const broker_config& config;
  const handler_registry& handlers;
  std::vector<listener_endpoint> advertised_listeners;  // with the ports actually bound
  topic_manager* topics = nullptr;                      // the log directory's topics and logs
  fetch_session_cache* fetch_sessions = nullptr;        // KIP-227 incremental fetch sessions
  fetch_waiters* waiters = nullptr;                     // fetches waiting for appends (long polls)
  request_memory* request_memory_pool = nullptr;        // queued.max.request.bytes (may be null)
  coordinator::group_coordinator* groups = nullptr;     // consumer groups and committed offsets
  quota::client_quotas* quotas = nullptr;               // client quotas and their throttling
  broker_metrics* metrics = nullptr;                    // cells the handlers bump (may be null)
  txn::txn_coordinator* txns = nullptr;                 // transactions (may be null)
  producer_id_source* producer_ids = nullptr;           // idempotent producers' ids
  // ACLs: null when authorizer.class.name is empty (no authorization, authorization.h).
  broker_authorizer* authorizer = nullptr;
  coordinator::share_coordinator* shares = nullptr;  // share groups (KIP-932)
  // In a cluster: the live brokers and the controller (null on a single node).
  cluster::cluster_membership* membership = nullptr;
  // In a cluster: partition states, the ISR and the replica fetchers (null on a single node).
  replica_manager* replicas = nullptr;
  // In a cluster: Produce's and TxnOffsetCommit's check with the transaction coordinator.
  txn_verifier* verifier = nullptr;
  // The thread topic creation runs on, off the event loops (control_worker.h); null: inline.
  control_worker* control = nullptr;
};

struct connection_info {
  uint64_t id = 0;
  std::string peer;      // "ip:port"
  std::string listener;  // listener name, e.g. PLAINTEXT
  // Who the connection is: User:ANONYMOUS until TLS or SASL authenticates it (issue 24).
  security::kafka_principal principal = security::kafka_principal::anonymous();
  // The SASL state of a SASL_PLAINTEXT or SASL_SSL connection (null on other listeners), for
  // the SaslHandshake and SaslAuthenticate handlers. Owned by the connection.
  security::sasl_authenticator* sasl = nullptr;
};

// The bytes of one request frame (without its 4-byte size). Not zero-initialised: it is filled
// from the socket.
struct frame_buffer {
  std::unique_ptr<uint8_t[]> data;
  size_t size = 0;
  std::span<const uint8_t> bytes() const { return {data.get(), size}; }
};

// One request as a handler sees it. It lives until the handler's coroutine completes.
struct request_context {
  request_header header;
  frame_buffer frame;
  const connection_info& connection;
  broker_services& services;

  std::span<const uint8_t> body() const { return frame.bytes().subspan(header.size); }

  // Set by a handler whose client went over a quota (KIP-219): the answer carries it as
  // ThrottleTimeMs and the connection then reads nothing from this client for that long.
  int32_t throttle_ms = 0;

  // The request quota's measure (throttle.h): when the handler started, and how long it was
  // suspended waiting for an event (a long poll, a rebalance), which is not handling time.
  std::chrono::steady_clock::time_point started_at{};
  std::chrono::steady_clock::duration waited{};
  // Set by a handler that charged the request quota itself (Produce and Fetch, which decide it
  // together with their byte rates), so the connection does not charge it again.
  bool request_quota_recorded = false;
  // Set by a handler whose answer ends the connection (a failed SASL authentication): the
  // connection closes once it is written.
  bool close_after_response = false;
};

// Around a handler's wait for an event: the time suspended is left out of its handling time.
class quota_excluded_wait {
 public:
  explicit quota_excluded_wait(request_context& request)
      : request_(request), from_(std::chrono::steady_clock::now()) {}
  ~quota_excluded_wait() { request_.waited += std::chrono::steady_clock::now() - from_; }
  quota_excluded_wait(const quota_excluded_wait&) = delete;
  quota_excluded_wait& operator=(const quota_excluded_wait&) = delete;

 private:
  request_context& request_;
  std::chrono::steady_clock::time_point from_;
};

// A handler may suspend (co_await) as long as it needs: a later request on the same connection
// may complete first, and the connection still writes responses in request order. A handler is
// started in request order and runs up to its first suspension before the next one starts.
// When the connection closes, a handler still running is cancelled (terminal cancellation).
using handler_fn = std::function<asio::awaitable<handler_outcome>(request_context&)>;

struct handler_entry {
  int16_t api_key = -1;
  int16_t min_version = 0;
  int16_t max_version = -1;
  handler_fn handle;
};

struct api_version_range {
  int16_t api_key;
  int16_t min_version;
  int16_t max_version;
};

class handler_registry {
 public:
  static constexpr int16_t max_api_key = 127;

  // Serves api_key for versions [min_version, max_version]. Registering a key twice replaces it.
  void register_handler(int16_t api_key, int16_t min_version, int16_t max_version,
                        handler_fn handle);

  // The handler for api_key, or nullptr.
  const handler_entry* find(int16_t api_key) const;

  // What ApiVersions advertises, by api key. Produce is advertised from v0 although only v3+ is
  // served: librdkafka disables compression unless Produce v0 is in range (KAFKA-18659).
  std::vector<api_version_range> advertised() const;

 private:
  std::array<handler_entry, max_api_key + 1> entries_{};
};

// Registers every API tarn serves (one handler file per API adds itself here).
void register_all_handlers(handler_registry& registry);

// Handlers, one per API file.
void register_api_versions_handler(handler_registry& registry);
void register_list_offsets_handler(handler_registry& registry);
void register_fetch_handler(handler_registry& registry);
void register_metadata_handler(handler_registry& registry);
void register_create_topics_handler(handler_registry& registry);
void register_delete_topics_handler(handler_registry& registry);
void register_delete_records_handler(handler_registry& registry);
void register_create_partitions_handler(handler_registry& registry);
void register_alter_configs_handler(handler_registry& registry);
void register_describe_configs_handler(handler_registry& registry);
void register_incremental_alter_configs_handler(handler_registry& registry);
void register_produce_handler(handler_registry& registry);
void register_init_producer_id_handler(handler_registry& registry);
void register_find_coordinator_handler(handler_registry& registry);
void register_offset_commit_handler(handler_registry& registry);
void register_offset_fetch_handler(handler_registry& registry);
void register_join_group_handler(handler_registry& registry);
void register_heartbeat_handler(handler_registry& registry);
void register_leave_group_handler(handler_registry& registry);
void register_sync_group_handler(handler_registry& registry);
void register_describe_groups_handler(handler_registry& registry);
void register_list_groups_handler(handler_registry& registry);
void register_delete_groups_handler(handler_registry& registry);
void register_offset_delete_handler(handler_registry& registry);
void register_consumer_group_heartbeat_handler(handler_registry& registry);
void register_consumer_group_describe_handler(handler_registry& registry);
void register_describe_client_quotas_handler(handler_registry& registry);
void register_alter_client_quotas_handler(handler_registry& registry);
void register_describe_user_scram_credentials_handler(handler_registry& registry);
void register_describe_cluster_handler(handler_registry& registry);
void register_describe_quorum_handler(handler_registry& registry);
void register_update_features_handler(handler_registry& registry);
void register_describe_topic_partitions_handler(handler_registry& registry);
void register_describe_log_dirs_handler(handler_registry& registry);
void register_offset_for_leader_epoch_handler(handler_registry& registry);
void register_elect_leaders_handler(handler_registry& registry);
void register_alter_partition_reassignments_handler(handler_registry& registry);
void register_list_partition_reassignments_handler(handler_registry& registry);
void register_add_partitions_to_txn_handler(handler_registry& registry);
void register_end_txn_handler(handler_registry& registry);
void register_add_offsets_to_txn_handler(handler_registry& registry);
void register_txn_offset_commit_handler(handler_registry& registry);
void register_write_txn_markers_handler(handler_registry& registry);
void register_describe_producers_handler(handler_registry& registry);
void register_describe_transactions_handler(handler_registry& registry);
void register_list_transactions_handler(handler_registry& registry);
void register_sasl_handshake_handler(handler_registry& registry);
void register_alter_user_scram_credentials_handler(handler_registry& registry);
void register_sasl_authenticate_handler(handler_registry& registry);
void register_describe_acls_handler(handler_registry& registry);
void register_create_acls_handler(handler_registry& registry);
void register_delete_acls_handler(handler_registry& registry);
void register_share_group_heartbeat_handler(handler_registry& registry);
void register_share_group_describe_handler(handler_registry& registry);
void register_share_fetch_handler(handler_registry& registry);
void register_share_acknowledge_handler(handler_registry& registry);
void register_describe_share_group_offsets_handler(handler_registry& registry);
void register_alter_share_group_offsets_handler(handler_registry& registry);
void register_delete_share_group_offsets_handler(handler_registry& registry);
void register_initialize_share_group_state_handler(handler_registry& registry);
void register_read_share_group_state_handler(handler_registry& registry);
void register_write_share_group_state_handler(handler_registry& registry);
void register_delete_share_group_state_handler(handler_registry& registry);
void register_read_share_group_state_summary_handler(handler_registry& registry);

// The answer to an ApiVersions request above our max version: the v0 layout with error 35
// (UNSUPPORTED_VERSION) and only our ApiVersions range (KIP-511). Defined beside the handler.
handler_outcome unsupported_api_versions_outcome(const handler_registry& registry);

}  // namespace tarn::broker
