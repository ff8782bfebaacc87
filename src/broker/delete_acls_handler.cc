// DeleteAcls (key 31): removes the ACLs filters match (kafka-acls.sh --remove).
//
// Versions served: 1-3 (as Kafka 4.4; flexible from 2). As Kafka's AclApis: with an authorizer
// the caller must be allowed ALTER on the cluster (else every filter CLUSTER_AUTHORIZATION_FAILED);
// without one every filter is SECURITY_DISABLED "No Authorizer is configured.". Each filter lists
// the ACLs it matched (also those an earlier filter matched, as Kafka's AclControlManager); the
// removals are one change of the metadata log, then applied. A filter holding an UNKNOWN code
// fails Kafka's request parsing, which closes the connection; so does a body that does not
// decode.
#include <spdlog/spdlog.h>

#include "broker/authorization.h"
#include "broker/handler.h"
#include "broker/topic_handler_util.h"
#include "protocol/error_codes.h"
#include "protocol/messages/delete_acls_request.h"
#include "protocol/messages/delete_acls_response.h"

namespace tarn::broker {

namespace {

namespace sec = tarn::security;

asio::awaitable<handler_outcome> handle_delete_acls(request_context& request) {
  const int16_t version = request.header.api_version;
  protocol::reader r(request.body());
  auto decoded = protocol::delete_acls_request::decode(r, version);
  if (!decoded) {
    spdlog::warn("connection {} from {}: DeleteAcls v{} body does not decode: {}",
                 request.connection.id, request.connection.peer, version,
                 protocol::describe(decoded.error().code));
    co_return close_connection{"bad DeleteAcls request"};
  }
  std::vector<sec::acl_binding_filter> filters;
  filters.reserve(decoded->filters.size());
  for (const auto& f : decoded->filters) {
    auto& filter = filters.emplace_back();
    filter.type = sec::resource_type_from_code(f.resource_type_filter);
    if (f.resource_name_filter) filter.resource_name = std::string(*f.resource_name_filter);
    filter.pattern = sec::pattern_type_from_code(f.pattern_type_filter);
    if (f.principal_filter) filter.principal = std::string(*f.principal_filter);
    if (f.host_filter) filter.host = std::string(*f.host_filter);
    filter.operation = sec::acl_operation_from_code(f.operation);
    filter.permission = sec::acl_permission_type_from_code(f.permission_type);
    if (sec::has_unknown(filter)) {
      spdlog::warn("connection {} from {}: DeleteAcls filters contain UNKNOWN elements",
                   request.connection.id, request.connection.peer);
      co_return close_connection{"DeleteAcls filters contain UNKNOWN elements"};
    }
  }

  protocol::delete_acls_response reply;
  if (acl_request_refused(request, filters.size(), reply.filter_results)) {
    co_return encode_response(reply, version);
  }
  auto results = request.services.authorizer->remove(filters);
  for (const auto& result : results) {
    auto& res = reply.filter_results.emplace_back();
    res.error_message = std::nullopt;
    if (result.error) {
      res.error_code = protocol::code(result.error->code);
      res.error_message = result.error->message;
      continue;
    }
    for (const auto& b : result.deleted) {
      auto& m = res.matching_acls.emplace_back();
      m.error_message = std::nullopt;
      m.resource_type = static_cast<int8_t>(b.type);
      m.resource_name = b.resource_name;
      m.pattern_type = static_cast<int8_t>(b.pattern);
      m.principal = b.principal;
      m.host = b.host;
      m.operation = static_cast<int8_t>(b.operation);
      m.permission_type = static_cast<int8_t>(b.permission);
    }
  }
  co_return encode_response(reply, version);
}

}  // namespace

void register_delete_acls_handler(handler_registry& registry) {
  registry.register_handler(protocol::delete_acls_request::api_key,
                            protocol::delete_acls_request::min_version,
                            protocol::delete_acls_request::max_version, handle_delete_acls);
}

}  // namespace tarn::broker
