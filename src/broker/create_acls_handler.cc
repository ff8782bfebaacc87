// CreateAcls (key 30): stores ACL bindings (kafka-acls.sh --add).
//
// Versions served: 1-3 (as Kafka 4.4; flexible from 2). As Kafka's AclApis: with an authorizer
// the caller must be allowed ALTER on the cluster (else every result CLUSTER_AUTHORIZATION_FAILED);
// without one every result is SECURITY_DISABLED "No Authorizer is configured.". Each binding is
// checked as Kafka's broker and controller check it (INVALID_REQUEST with their messages: ANY
// resource type, pattern, operation or permission; the CLUSTER resource named other than
// kafka-cluster; an empty name; a principal without "Type:"); the valid ones are written to the
// metadata log as one change, then applied. An ACL that exists already succeeds without a record.
// A binding holding an UNKNOWN code fails Kafka's request parsing, which closes the connection;
// so does a body that does not decode.
#include <spdlog/spdlog.h>

#include "broker/authorization.h"
#include "broker/handler.h"
#include "broker/topic_handler_util.h"
#include "protocol/error_codes.h"
#include "protocol/messages/create_acls_request.h"
#include "protocol/messages/create_acls_response.h"

namespace tarn::broker {

namespace {

namespace sec = tarn::security;

asio::awaitable<handler_outcome> handle_create_acls(request_context& request) {
  const int16_t version = request.header.api_version;
  protocol::reader r(request.body());
  auto decoded = protocol::create_acls_request::decode(r, version);
  if (!decoded) {
    spdlog::warn("connection {} from {}: CreateAcls v{} body does not decode: {}",
                 request.connection.id, request.connection.peer, version,
                 protocol::describe(decoded.error().code));
    co_return close_connection{"bad CreateAcls request"};
  }
  std::vector<sec::acl_binding> bindings;
  bindings.reserve(decoded->creations.size());
  for (const auto& c : decoded->creations) {
    bindings.push_back({sec::resource_type_from_code(c.resource_type), std::string(c.resource_name),
                        sec::pattern_type_from_code(c.resource_pattern_type),
                        std::string(c.principal), std::string(c.host),
                        sec::acl_operation_from_code(c.operation),
                        sec::acl_permission_type_from_code(c.permission_type)});
    if (sec::has_unknown(bindings.back())) {
      spdlog::warn("connection {} from {}: CreateAcls creations contain unknown elements",
                   request.connection.id, request.connection.peer);
      co_return close_connection{"CreateAcls creations contain unknown elements"};
    }
  }

  protocol::create_acls_response reply;
  if (acl_request_refused(request, bindings.size(), reply.results)) {
    co_return encode_response(reply, version);
  }
  auto results = request.services.authorizer->create(bindings);
  for (const auto& failed : results) {
    auto& res = reply.results.emplace_back();
    res.error_message = std::nullopt;
    if (failed) {
      res.error_code = protocol::code(failed->code);
      res.error_message = failed->message;
    }
  }
  co_return encode_response(reply, version);
}

}  // namespace

void register_create_acls_handler(handler_registry& registry) {
  registry.register_handler(protocol::create_acls_request::api_key,
                            protocol::create_acls_request::min_version,
                            protocol::create_acls_request::max_version, handle_create_acls);
}

}  // namespace tarn::broker
