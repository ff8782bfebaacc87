// AlterClientQuotas (key 49): sets and removes client quotas (kafka-configs.sh --alter
// --entity-type users/clients/ips, Admin.alterClientQuotas); they take effect at once.
//
// Versions served: 0-1 (as Kafka 4.4; v1 is flexible). Validation, per entity, is Kafka's
// controller's (ClientQuotaControlManager): entity types user, client-id, ip (ip alone), a null
// name for the default, keys producer_byte_rate, consumer_byte_rate, request_percentage,
// controller_mutation_rate (user/client-id) and connection_creation_rate (ip), values > 0 and
// integral for the integral keys; INVALID_REQUEST with Kafka's messages. One answer per entity;
// ValidateOnly changes nothing. The changes are persisted (client_quotas' persist hook) before
// they are applied. Entities are answered in request order; Kafka in its hash map's order.
// A body that does not decode closes the connection.
// Not enforced: connection_creation_rate (stored and described only). Not supported:
// authorization (ALTER_CONFIGS on the cluster), until the security module.
#include <spdlog/spdlog.h>

#include <deque>
#include <map>
#include <set>

#include "broker/authorization.h"
#include "broker/handler.h"
#include "broker/topic_handler_util.h"
#include "protocol/messages/alter_client_quotas_request.h"
#include "protocol/messages/alter_client_quotas_response.h"
#include "quota/client_quotas.h"

namespace tarn::broker {

namespace {

asio::awaitable<handler_outcome> handle_alter_client_quotas(request_context& request) {
  const int16_t version = request.header.api_version;
  protocol::reader r(request.body());
  auto decoded = protocol::alter_client_quotas_request::decode(r, version);
  if (!decoded) {
    spdlog::warn("connection {} from {}: AlterClientQuotas v{} body does not decode: {}",
                 request.connection.id, request.connection.peer, version,
                 protocol::describe(decoded.error().code));
    co_return close_connection{"bad AlterClientQuotas request"};
  }
  // As Kafka: ALTER_CONFIGS on the cluster, else every entry CLUSTER_AUTHORIZATION_FAILED.
  if (request.services.authorizer != nullptr &&
      !authorize_cluster(request, security::acl_operation::alter_configs)) {
    protocol::alter_client_quotas_response denied;
    const auto e = protocol::error_code::cluster_authorization_failed;
    for (const auto& entry : decoded->entries) {
      auto& d = denied.entries.emplace_back();
      d.error_code = protocol::code(e);
      d.error_message = protocol::describe(e).message;
      for (const auto& part : entry.entity) {
        auto& out = d.entity.emplace_back();
        out.entity_type = part.entity_type;
        out.entity_name = part.entity_name;
      }
    }
    co_return encode_response(denied, version);
  }
  std::vector<quota::quota_alteration> alterations;
  alterations.reserve(decoded->entries.size());
  // An entity naming a type twice is invalid (Kafka's validateEntity); the store's map form
  // cannot hold it, so it is answered here.
  std::vector<bool> duplicated_type(decoded->entries.size(), false);
  for (size_t i = 0; i < decoded->entries.size(); ++i) {
    const auto& e = decoded->entries[i];
    quota::quota_alteration a;
    for (const auto& part : e.entity) {
      auto name = part.entity_name ? std::optional<std::string>(std::string(*part.entity_name))
                                   : std::nullopt;
      if (!a.entity.parts.emplace(std::string(part.entity_type), std::move(name)).second) {
        duplicated_type[i] = true;
      }
    }
    for (const auto& op : e.ops) {
      a.ops.push_back(
          {std::string(op.key), op.remove ? std::nullopt : std::optional<double>(op.value)});
    }
    alterations.push_back(std::move(a));
  }
  std::vector<quota::quota_alteration> valid;
  for (size_t i = 0; i < alterations.size(); ++i) {
    if (!duplicated_type[i]) valid.push_back(alterations[i]);
  }
  auto results = request.services.quotas->alter(valid, decoded->validate_only);

  using entry_data = protocol::alter_client_quotas_response::entry_data;
  protocol::alter_client_quotas_response reply;
  std::deque<std::string> messages;  // what the reply's string views point into
  auto answer = [&](const quota::quota_entity& entity, const quota::quota_error& error) {
    entry_data d;
    d.error_code = error.code;
    // null on success, as Kafka's ApiError.NONE (the schema's default would be "").
    d.error_message = std::nullopt;
    if (error.code != 0) d.error_message = messages.emplace_back(error.message);
    for (const auto& [type, name] : entity.parts) {
      auto& p = d.entity.emplace_back();
      p.entity_type = type;
      p.entity_name = name;
    }
    reply.entries.push_back(std::move(d));
  };
  // One answer per entity, in request order.
  std::set<quota::quota_entity> answered;
  for (size_t i = 0; i < decoded->entries.size(); ++i) {
    if (duplicated_type[i]) {
      std::string type;
      std::map<std::string, int> seen;
      for (const auto& part : decoded->entries[i].entity) {
        if (++seen[std::string(part.entity_type)] == 2 && type.empty()) type = part.entity_type;
      }
      answer(alterations[i].entity,
             {42, "Invalid client quota entity, duplicate entity entry " + type});
      continue;
    }
    if (!answered.insert(alterations[i].entity).second) continue;
    for (const auto& [entity, error] : results) {
      if (entity == alterations[i].entity) answer(entity, error);
    }
  }
  if (!decoded->validate_only) {
    size_t ok = 0;
    for (const auto& [entity, error] : results) ok += error.code == 0 ? 1 : 0;
    if (ok > 0) spdlog::info("AlterClientQuotas: quotas of {} entities altered", ok);
  }
  co_return encode_response(reply, version);
}

}  // namespace

void register_alter_client_quotas_handler(handler_registry& registry) {
  registry.register_handler(protocol::alter_client_quotas_request::api_key,
                            protocol::alter_client_quotas_request::min_version,
                            protocol::alter_client_quotas_request::max_version,
                            handle_alter_client_quotas);
}

}  // namespace tarn::broker
