// DescribeClientQuotas (key 48): the client quotas that are set (kafka-configs.sh --describe
// --entity-type users/clients/ips, Admin.describeClientQuotas).
//
// Versions served: 0-1 (as Kafka 4.4; v1 is flexible). The filter is matched by the quota store
// (quota/client_quota_store.h) as Kafka's ClientQuotasImage.describe matches it; an invalid
// filter is answered with its error code and message and null entries (Kafka's getErrorResponse).
// Entities are answered sorted by entity; Kafka answers in its hash map's order.
// A body that does not decode closes the connection.
// Authorization: DESCRIBE_CONFIGS on the cluster (CLUSTER_AUTHORIZATION_FAILED).
// Not supported: -
#include <spdlog/spdlog.h>

#include "broker/authorization.h"
#include "broker/handler.h"
#include "broker/topic_handler_util.h"
#include "protocol/messages/describe_client_quotas_request.h"
#include "protocol/messages/describe_client_quotas_response.h"
#include "quota/client_quotas.h"

namespace tarn::broker {

namespace {

asio::awaitable<handler_outcome> handle_describe_client_quotas(request_context& request) {
  const int16_t version = request.header.api_version;
  protocol::reader r(request.body());
  auto decoded = protocol::describe_client_quotas_request::decode(r, version);
  if (!decoded) {
    spdlog::warn("connection {} from {}: DescribeClientQuotas v{} body does not decode: {}",
                 request.connection.id, request.connection.peer, version,
                 protocol::describe(decoded.error().code));
    co_return close_connection{"bad DescribeClientQuotas request"};
  }
  // As Kafka: DESCRIBE_CONFIGS on the cluster, else CLUSTER_AUTHORIZATION_FAILED.
  if (auto denied = cluster_denied<protocol::describe_client_quotas_response>(
          request, security::acl_operation::describe_configs)) {
    co_return std::move(*denied);
  }
  std::vector<quota::quota_filter_component> filter;
  filter.reserve(decoded->components.size());
  for (const auto& c : decoded->components) {
    filter.push_back({std::string(c.entity_type), c.match_type,
                      c.match ? std::optional<std::string>(std::string(*c.match)) : std::nullopt});
  }
  std::vector<quota::quota_described> found;
  protocol::describe_client_quotas_response reply;
  if (auto error = request.services.quotas->describe(filter, decoded->strict, found)) {
    reply.error_code = error->code;
    reply.error_message = error->message;
    reply.entries = std::nullopt;
    co_return encode_response(reply, version);
  }
  using entry_data = protocol::describe_client_quotas_response::entry_data;
  std::vector<entry_data> entries;
  entries.reserve(found.size());
  for (const auto& f : found) {
    entry_data e;
    for (const auto& [type, name] : f.entity.parts) {
      auto& d = e.entity.emplace_back();
      d.entity_type = type;
      d.entity_name = name;
    }
    for (const auto& [key, value] : f.values) {
      auto& v = e.values.emplace_back();
      v.key = key;
      v.value = value;
    }
    entries.push_back(std::move(e));
  }
  reply.entries = std::move(entries);
  co_return encode_response(reply, version);
}

}  // namespace

void register_describe_client_quotas_handler(handler_registry& registry) {
  registry.register_handler(protocol::describe_client_quotas_request::api_key,
                            protocol::describe_client_quotas_request::min_version,
                            protocol::describe_client_quotas_request::max_version,
                            handle_describe_client_quotas);
}

}  // namespace tarn::broker
