// DescribeAcls (key 29): the ACLs a filter matches (kafka-acls.sh --list).
//
// Versions served: 1-3 (as Kafka 4.4; flexible from 2). As Kafka's AclApis: with an authorizer
// the caller must be allowed DESCRIBE on the cluster (else CLUSTER_AUTHORIZATION_FAILED); without
// one the answer is SECURITY_DISABLED "No Authorizer is configured on the broker". The matches
// are grouped by resource pattern (type, name, pattern type), sorted (Kafka: hash order). A
// filter holding an UNKNOWN code fails Kafka's request parsing, which closes the connection; so
// does a body that does not decode.
#include <spdlog/spdlog.h>

#include <map>
#include <tuple>

#include "broker/authorization.h"
#include "broker/handler.h"
#include "broker/topic_handler_util.h"
#include "protocol/error_codes.h"
#include "protocol/messages/describe_acls_request.h"
#include "protocol/messages/describe_acls_response.h"

namespace tarn::broker {

namespace {

namespace sec = tarn::security;

asio::awaitable<handler_outcome> handle_describe_acls(request_context& request) {
  const int16_t version = request.header.api_version;
  protocol::reader r(request.body());
  auto decoded = protocol::describe_acls_request::decode(r, version);
  if (!decoded) {
    spdlog::warn("connection {} from {}: DescribeAcls v{} body does not decode: {}",
                 request.connection.id, request.connection.peer, version,
                 protocol::describe(decoded.error().code));
    co_return close_connection{"bad DescribeAcls request"};
  }
  sec::acl_binding_filter filter;
  filter.type = sec::resource_type_from_code(decoded->resource_type_filter);
  if (decoded->resource_name_filter)
    filter.resource_name = std::string(*decoded->resource_name_filter);
  filter.pattern = sec::pattern_type_from_code(decoded->pattern_type_filter);
  if (decoded->principal_filter) filter.principal = std::string(*decoded->principal_filter);
  if (decoded->host_filter) filter.host = std::string(*decoded->host_filter);
  filter.operation = sec::acl_operation_from_code(decoded->operation);
  filter.permission = sec::acl_permission_type_from_code(decoded->permission_type);
  if (sec::has_unknown(filter)) {
    spdlog::warn("connection {} from {}: DescribeAcls filter contains UNKNOWN elements",
                 request.connection.id, request.connection.peer);
    co_return close_connection{"DescribeAcls filter contains UNKNOWN elements"};
  }

  protocol::describe_acls_response reply;
  reply.error_message = std::nullopt;
  if (request.services.authorizer != nullptr &&
      !authorize_cluster(request, sec::acl_operation::describe)) {
    reply.error_code = protocol::code(protocol::error_code::cluster_authorization_failed);
    reply.error_message =
        protocol::describe(protocol::error_code::cluster_authorization_failed).message;
    co_return encode_response(reply, version);
  }
  if (request.services.authorizer == nullptr) {
    reply.error_code = protocol::code(protocol::error_code::security_disabled);
    reply.error_message = "No Authorizer is configured on the broker";
    co_return encode_response(reply, version);
  }
  auto acls = request.services.authorizer->acls().acls(filter);
  using pattern_key = std::tuple<int8_t, std::string_view, int8_t>;
  std::map<pattern_key, std::vector<const sec::acl_binding*>> by_pattern;
  for (const auto& a : acls) {
    const sec::acl_binding& b = a.binding;
    by_pattern[{static_cast<int8_t>(b.type), b.resource_name, static_cast<int8_t>(b.pattern)}]
        .push_back(&b);
  }
  for (const auto& [key, bindings] : by_pattern) {
    auto& res = reply.resources.emplace_back();
    res.resource_type = std::get<0>(key);
    res.resource_name = std::get<1>(key);
    res.pattern_type = std::get<2>(key);
    for (const sec::acl_binding* b : bindings) {
      auto& d = res.acls.emplace_back();
      d.principal = b->principal;
      d.host = b->host;
      d.operation = static_cast<int8_t>(b->operation);
      d.permission_type = static_cast<int8_t>(b->permission);
    }
  }
  co_return encode_response(reply, version);
}

}  // namespace

void register_describe_acls_handler(handler_registry& registry) {
  registry.register_handler(protocol::describe_acls_request::api_key,
                            protocol::describe_acls_request::min_version,
                            protocol::describe_acls_request::max_version, handle_describe_acls);
}

}  // namespace tarn::broker
