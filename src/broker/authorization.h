// What handlers ask before they act (docs/security.md#authorization): one question per resource,
// `authorize(request, op, type, name)`, answered by the ACL authorizer (src/security) when
// authorizer.class.name is set and always yes when it is not (one branch on the hot path). Also
// the broker's ACL store: the authorizer loaded from the metadata log at start, and CreateAcls /
// DeleteAcls written to the log before the authorizer sees them.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "broker/handler.h"
#include "broker/topic_handler_util.h"
#include "cluster/metadata_store.h"
#include "security/acl_authorizer.h"

namespace tarn::broker {

// The authorizer and the metadata log that keeps its ACLs.
class broker_authorizer {
 public:
  // Loads every ACL of the store.
  broker_authorizer(const broker_config& config, cluster::metadata_store& store);

  security::acl_authorizer& acls() { return authorizer_; }
  const security::acl_authorizer& acls() const { return authorizer_; }

  // CreateAcls: per binding, nullopt (created, or already there) or why not (INVALID_REQUEST
  // with Kafka's message; UNKNOWN_SERVER_ERROR when the metadata log cannot be written).
  struct failure {
    protocol::error_code code;
    std::string message;
  };
  std::vector<std::optional<failure>> create(const std::vector<security::acl_binding>& bindings);

  // DeleteAcls: per filter, the ACLs it matched and removed, or why it could not be used.
  struct delete_result {
    std::optional<failure> error;
    std::vector<security::acl_binding> deleted;
  };
  std::vector<delete_result> remove(const std::vector<security::acl_binding_filter>& filters);

 private:
  security::acl_authorizer authorizer_;
  cluster::metadata_store& store_;
  std::mutex change_mu_;  // one CreateAcls/DeleteAcls at a time: check, log, apply
};

// The client's IP address, as Kafka's authorizer sees it (the peer without its port).
std::string_view client_host(const connection_info& connection);

// Whether the request's principal may perform `op` on the resource. `ref_count` is how many
// times the request names it (the log's resourceRefCount). A denial is logged at INFO on
// kafka.authorizer.logger when log_if_denied (an explicit request for the resource), an allowance
// at DEBUG when log_if_allowed; otherwise at TRACE, as Kafka.
bool authorize_slow(const request_context& request, security::acl_operation op,
                    security::resource_type type, std::string_view name, int32_t ref_count,
                    bool log_if_allowed, bool log_if_denied);

inline bool authorize(const request_context& request, security::acl_operation op,
                      security::resource_type type, std::string_view name, int32_t ref_count = 1,
                      bool log_if_allowed = true, bool log_if_denied = true) {
  if (request.services.authorizer == nullptr) return true;
  return authorize_slow(request, op, type, name, ref_count, log_if_allowed, log_if_denied);
}

inline bool authorize_cluster(const request_context& request, security::acl_operation op,
                              bool log_if_denied = true) {
  return authorize(request, op, security::resource_type::cluster, security::cluster_resource_name,
                   1, true, log_if_denied);
}

// The name of the topic with this id ("" when none has it): requests that name topics by id are
// authorized by the topic's name, as Kafka's.
std::string topic_name_of(const request_context& request, const uuid& topic_id);

// The answer of an API whose caller must be allowed `op` on the cluster and is not: the response
// with its top-level ErrorCode (and ErrorMessage) CLUSTER_AUTHORIZATION_FAILED, as Kafka's
// authorizeClusterOperation ends such a request; nullopt when allowed or without an authorizer.
template <class Response>
std::optional<handler_outcome> cluster_denied(const request_context& request,
                                              security::acl_operation op) {
  if (request.services.authorizer == nullptr || authorize_cluster(request, op)) return std::nullopt;
  Response r;
  const auto e = protocol::error_code::cluster_authorization_failed;
  r.error_code = protocol::code(e);
  if constexpr (requires { r.error_message; }) r.error_message = protocol::describe(e).message;
  return encode_response(r, request.header.api_version);
}

// CreateAcls' and DeleteAcls' refusal of the whole request, as Kafka's AclApis: one result per
// creation or filter (added to `results`) with CLUSTER_AUTHORIZATION_FAILED when the caller may
// not ALTER the cluster, SECURITY_DISABLED without an authorizer; false when neither applies.
template <class Result>
bool acl_request_refused(const request_context& request, size_t count,
                         std::vector<Result>& results) {
  protocol::error_code code;
  std::string_view message;
  if (request.services.authorizer == nullptr) {
    code = protocol::error_code::security_disabled;
    message = "No Authorizer is configured.";
  } else if (!authorize_cluster(request, security::acl_operation::alter)) {
    code = protocol::error_code::cluster_authorization_failed;
    message = protocol::describe(code).message;
  } else {
    return false;
  }
  for (size_t i = 0; i < count; ++i) {
    auto& res = results.emplace_back();
    res.error_code = protocol::code(code);
    res.error_message = message;
  }
  return true;
}

// The configs APIs' question for one resource (ConfigResource type codes: 2 topic, 32 group, the
// others the cluster's): the error when `op` is not allowed on it, else nullopt.
inline std::optional<protocol::error_code> config_resource_denied(const request_context& request,
                                                                  security::acl_operation op,
                                                                  int8_t resource_type,
                                                                  std::string_view name) {
  if (request.services.authorizer == nullptr) return std::nullopt;
  if (resource_type == 2) {
    if (authorize(request, op, security::resource_type::topic, name)) return std::nullopt;
    return protocol::error_code::topic_authorization_failed;
  }
  if (resource_type == 32) {
    if (authorize(request, op, security::resource_type::group, name)) return std::nullopt;
    return protocol::error_code::group_authorization_failed;
  }
  if (authorize_cluster(request, op)) return std::nullopt;
  return protocol::error_code::cluster_authorization_failed;
}

// Kafka's authorizeByResourceType (InitProducerId without a transactional id asks it).
bool authorize_by_resource_type(const request_context& request, security::acl_operation op,
                                security::resource_type type);

// The "authorized operations" bit set of a resource: every operation Kafka lists for its type
// when no authorizer is configured (as Kafka), else the ones the principal may perform.
int32_t authorized_operations(const request_context& request, security::resource_type type,
                              std::string_view name);

}  // namespace tarn::broker
