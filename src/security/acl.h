// ACL vocabulary as Kafka's org.apache.kafka.common.acl and .resource define it: resource types,
// pattern types, operations and permission types with Kafka's wire codes; a binding (what an
// ACL says), a binding filter (what DescribeAcls and DeleteAcls match with), and the checks
// Kafka's controller makes before it stores a binding or uses a filter.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace tarn::security {

// Codes are Kafka's (ResourceType, PatternType, AclOperation, AclPermissionType); a code Kafka
// does not define reads as unknown, as Kafka's fromCode.
enum class resource_type : int8_t {
  unknown = 0,
  any = 1,
  topic = 2,
  group = 3,
  cluster = 4,
  transactional_id = 5,
  delegation_token = 6,
  user = 7,
};
enum class pattern_type : int8_t { unknown = 0, any = 1, match = 2, literal = 3, prefixed = 4 };
enum class acl_operation : int8_t {
  unknown = 0,
  any = 1,
  all = 2,
  read = 3,
  write = 4,
  create = 5,
  delete_ = 6,
  alter = 7,
  describe = 8,
  cluster_action = 9,
  describe_configs = 10,
  alter_configs = 11,
  idempotent_write = 12,
  create_tokens = 13,
  describe_tokens = 14,
  two_phase_commit = 15,
};
enum class acl_permission_type : int8_t { unknown = 0, any = 1, deny = 2, allow = 3 };

resource_type resource_type_from_code(int8_t code);
pattern_type pattern_type_from_code(int8_t code);
acl_operation acl_operation_from_code(int8_t code);
acl_permission_type acl_permission_type_from_code(int8_t code);

// Kafka's enum names: TOPIC, LITERAL, DESCRIBE_CONFIGS, ALLOW.
std::string_view name(resource_type t);
std::string_view name(pattern_type t);
std::string_view name(acl_operation op);
std::string_view name(acl_permission_type p);
// Kafka's SecurityUtils.resourceTypeName: Topic, TransactionalId (the authorizer log's form).
std::string_view pascal_name(resource_type t);

// The wildcards: a resource name "*" (LITERAL) matches every resource of its type, a principal
// "User:*" every principal, a host "*" every host.
inline constexpr std::string_view wildcard_resource = "*";
inline constexpr std::string_view wildcard_principal = "User:*";
inline constexpr std::string_view wildcard_host = "*";
// The only name of the CLUSTER resource.
inline constexpr std::string_view cluster_resource_name = "kafka-cluster";

struct acl_binding {
  resource_type type = resource_type::unknown;
  std::string resource_name;
  pattern_type pattern = pattern_type::literal;
  std::string principal;  // "User:alice"
  std::string host;       // an IP address or "*"
  acl_operation operation = acl_operation::unknown;
  acl_permission_type permission = acl_permission_type::unknown;

  bool operator==(const acl_binding&) const = default;
  auto operator<=>(const acl_binding&) const = default;
};

// An unset name, principal or host matches anything; ANY matches any type, pattern, operation
// or permission; pattern MATCH matches the bindings that would apply to a resource of that name
// (the literal name, the LITERAL "*" and every PREFIXED prefix of it).
struct acl_binding_filter {
  resource_type type = resource_type::any;
  std::optional<std::string> resource_name;
  pattern_type pattern = pattern_type::any;
  std::optional<std::string> principal;
  std::optional<std::string> host;
  acl_operation operation = acl_operation::any;
  acl_permission_type permission = acl_permission_type::any;

  // Kafka's AclBindingFilter.matches.
  bool matches(const acl_binding& binding) const;
};

// Why a binding cannot be stored (Kafka's AclControlManager.validateNewAcl and the broker's
// checks in AclApis, with their messages), or nullopt. Every failure is INVALID_REQUEST.
std::optional<std::string> validate_new_acl(const acl_binding& binding);
// Why a filter cannot be used to delete (AclControlManager.validateFilter), or nullopt.
std::optional<std::string> validate_filter(const acl_binding_filter& filter);
// Whether a binding or filter holds an UNKNOWN code: Kafka fails to parse such a request
// (CreateAclsRequest/DeleteAclsRequest/DescribeAclsRequest.validate) and closes the connection.
bool has_unknown(const acl_binding& binding);
bool has_unknown(const acl_binding_filter& filter);

// "StandardAcl(resourceType=TOPIC, resourceName=foo, patternType=LITERAL, principal=User:a,
// host=*, operation=WRITE, permissionType=ALLOW)": the authorizer log's rule.
std::string describe_acl(const acl_binding& binding);

}  // namespace tarn::security
