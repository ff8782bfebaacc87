// ShareAcknowledge (key 79): acknowledgements of a share-group member outside a fetch (KIP-932).
// Versions served: 1-2, as Kafka 4.4.
//
// Behaviour, as Kafka 4.4's KafkaApis.handleShareAcknowledgeRequest: the share session's epoch
// must be the session's next one (0 cannot open a session here: INVALID_SHARE_SESSION_EPOCH;
// SHARE_SESSION_NOT_FOUND without a session), -1 applies the acknowledgements and closes the
// session, releasing what the member still holds. Each partition answers its own error:
// INVALID_REQUEST for malformed batches (order, overlap, type count, type values; RENEW only from
// v2 with IsRenewAck), UNKNOWN_TOPIC_ID, UNKNOWN_TOPIC_OR_PARTITION, INVALID_RECORD_STATE for
// offsets this member has not acquired. AcquisitionLockTimeoutMs (v2) is
// group.share.record.lock.duration.ms. UNSUPPORTED_VERSION when share.version is finalized at 0.
// Authorization, as Kafka's: READ on the group, else GROUP_AUTHORIZATION_FAILED at the top level
// (before the member id and the session are looked at); READ on each topic, else
// TOPIC_AUTHORIZATION_FAILED for its partitions (after the batches' INVALID_REQUEST checks).
// A body that does not decode closes the connection.
// Not supported: quotas.
#include <asio/this_coro.hpp>

#include "broker/features.h"
#include "broker/group_handler_util.h"
#include "broker/share_handler_util.h"
#include "broker/share_state_rpc_util.h"
#include "protocol/messages/share_acknowledge_request.h"
#include "protocol/messages/share_acknowledge_response.h"

namespace tarn::broker {

namespace {

using protocol::error_code;

asio::awaitable<handler_outcome> handle_share_acknowledge(request_context& request) {
  auto decoded =
      decode_group_request<protocol::share_acknowledge_request>(request, "ShareAcknowledge");
  if (!decoded) co_return close_connection{"bad ShareAcknowledge request"};
  const protocol::share_acknowledge_request& req = *decoded;
  const int16_t version = request.header.api_version;
  broker_services& services = request.services;
  coordinator::share_coordinator& shares = *services.shares;
  protocol::share_acknowledge_response reply;
  reply.acquisition_lock_timeout_ms =
      shares.group_settings(req.group_id.value_or("")).record_lock_duration_ms;
  auto top_level = [&](error_code e) {
    reply.error_code = protocol::code(e);
    return encode_response(reply, version);
  };
  if (!share_groups_enabled(services.topics->metadata())) {
    co_return top_level(error_code::unsupported_version);
  }
  const std::string_view group_id = req.group_id.value_or("");
  const std::string_view member_id = req.member_id.value_or("");
  if (!authorize_group(request, security::acl_operation::read, group_id)) {
    co_return top_level(error_code::group_authorization_failed);
  }
  if (group_id.empty() || !share_member_id_valid(member_id)) {
    co_return top_level(error_code::invalid_request);
  }
  const int32_t epoch = req.share_session_epoch;
  if (epoch == coordinator::share_session_initial_epoch) {
    co_return top_level(error_code::invalid_share_session_epoch);
  }
  auto step = shares.step_session(group_id, member_id, epoch, {}, {});
  if (step.error != error_code::none) co_return top_level(step.error);
  const int64_t now = wall_clock_ms();
  const bool renew_allowed = version >= 2 && req.is_renew_ack;
  std::vector<coordinator::topic_uuid> asked_topics;
  if (services.authorizer != nullptr) {
    for (const auto& t : req.topics) asked_topics.push_back(coordinator::from_wire(t.topic_id));
  }
  const share_topic_readers readers(request, *services.topics, asked_topics);
  for (const auto& t : req.topics) {
    auto& rt = reply.responses.emplace_back();
    rt.topic_id = t.topic_id;
    for (const auto& p : t.partitions) {
      auto& rp = rt.partitions.emplace_back();
      rp.partition_index = p.partition_index;
      share_write_wait written(co_await asio::this_coro::executor);
      std::optional<error_code> verdict = apply_acknowledgements(
          shares, *services.topics, group_id, member_id, coordinator::from_wire(t.topic_id),
          p.partition_index, p.acknowledgement_batches, renew_allowed, now, written, &readers);
      if (!verdict) {
        // Written at another broker's share coordinator: its answer.
        verdict = co_await written.answer(request);
        if (!verdict) co_return close_connection{"connection closed during a share acknowledge"};
      }
      error_code e = *verdict;
      if (e == error_code::none) {
        e = co_await await_share_state_committed(
            request, group_id, {coordinator::from_wire(t.topic_id), p.partition_index});
      }
      rp.error_code = protocol::code(e);
      rp.current_leader.leader_id = services.config.node_id;
      rp.current_leader.leader_epoch = local_leader_epoch;
    }
  }
  if (epoch == coordinator::share_session_final_epoch) {
    shares.close_session(group_id, member_id, now);
  }
  co_return encode_response(reply, version);
}

}  // namespace

void register_share_acknowledge_handler(handler_registry& registry) {
  registry.register_handler(protocol::share_acknowledge_request::api_key,
                            protocol::share_acknowledge_request::min_version,
                            protocol::share_acknowledge_request::max_version,
                            handle_share_acknowledge);
}

}  // namespace tarn::broker
