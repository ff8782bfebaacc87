// Kafka's ACL codes, names, filter matching and validation (acl.h).
#include "security/acl.h"

#include <array>

namespace tarn::security {
namespace {

constexpr std::array<std::string_view, 8> resource_type_names = {
    "UNKNOWN", "ANY", "TOPIC", "GROUP", "CLUSTER", "TRANSACTIONAL_ID", "DELEGATION_TOKEN", "USER"};
constexpr std::array<std::string_view, 8> resource_type_pascal = {
    "Unknown", "Any", "Topic", "Group", "Cluster", "TransactionalId", "DelegationToken", "User"};
constexpr std::array<std::string_view, 5> pattern_type_names = {"UNKNOWN", "ANY", "MATCH",
                                                                "LITERAL", "PREFIXED"};
constexpr std::array<std::string_view, 16> operation_names = {"UNKNOWN",
                                                              "ANY",
                                                              "ALL",
                                                              "READ",
                                                              "WRITE",
                                                              "CREATE",
                                                              "DELETE",
                                                              "ALTER",
                                                              "DESCRIBE",
                                                              "CLUSTER_ACTION",
                                                              "DESCRIBE_CONFIGS",
                                                              "ALTER_CONFIGS",
                                                              "IDEMPOTENT_WRITE",
                                                              "CREATE_TOKENS",
                                                              "DESCRIBE_TOKENS",
                                                              "TWO_PHASE_COMMIT"};
constexpr std::array<std::string_view, 4> permission_names = {"UNKNOWN", "ANY", "DENY", "ALLOW"};

template <typename E, size_t N>
E from_code(int8_t code) {
  return code >= 0 && static_cast<size_t>(code) < N ? static_cast<E>(code) : E::unknown;
}

template <size_t N>
std::string_view name_of(const std::array<std::string_view, N>& names, int8_t code) {
  return code >= 0 && static_cast<size_t>(code) < N ? names[static_cast<size_t>(code)] : names[0];
}

}  // namespace

resource_type resource_type_from_code(int8_t code) {
  return from_code<resource_type, resource_type_names.size()>(code);
}
pattern_type pattern_type_from_code(int8_t code) {
  return from_code<pattern_type, pattern_type_names.size()>(code);
}
acl_operation acl_operation_from_code(int8_t code) {
  return from_code<acl_operation, operation_names.size()>(code);
}
acl_permission_type acl_permission_type_from_code(int8_t code) {
  return from_code<acl_permission_type, permission_names.size()>(code);
}

std::string_view name(resource_type t) {
  return name_of(resource_type_names, static_cast<int8_t>(t));
}
std::string_view name(pattern_type t) {
  return name_of(pattern_type_names, static_cast<int8_t>(t));
}
std::string_view name(acl_operation op) {
  return name_of(operation_names, static_cast<int8_t>(op));
}
std::string_view name(acl_permission_type p) {
  return name_of(permission_names, static_cast<int8_t>(p));
}
std::string_view pascal_name(resource_type t) {
  return name_of(resource_type_pascal, static_cast<int8_t>(t));
}

bool acl_binding_filter::matches(const acl_binding& b) const {
  // ResourcePatternFilter.matches
  if (type != resource_type::any && type != b.type) return false;
  if (pattern != pattern_type::any && pattern != pattern_type::match && pattern != b.pattern) {
    return false;
  }
  if (resource_name) {
    if (pattern == pattern_type::any || pattern == b.pattern) {
      if (*resource_name != b.resource_name) return false;
    } else if (b.pattern == pattern_type::literal) {  // MATCH
      if (*resource_name != b.resource_name && b.resource_name != wildcard_resource) return false;
    } else if (b.pattern == pattern_type::prefixed) {
      if (!resource_name->starts_with(b.resource_name)) return false;
    } else {
      return false;
    }
  }
  // AccessControlEntryFilter.matches
  if (principal && *principal != b.principal) return false;
  if (host && *host != b.host) return false;
  if (operation != acl_operation::any && operation != b.operation) return false;
  return permission == acl_permission_type::any || permission == b.permission;
}

std::optional<std::string> validate_new_acl(const acl_binding& b) {
  if (b.type == resource_type::unknown || b.type == resource_type::any) {
    return "Invalid resourceType " + std::string(name(b.type));
  }
  if (b.pattern != pattern_type::literal && b.pattern != pattern_type::prefixed) {
    return "Invalid patternType " + std::string(name(b.pattern));
  }
  if (b.operation == acl_operation::unknown || b.operation == acl_operation::any) {
    return "Invalid operation " + std::string(name(b.operation));
  }
  if (b.permission != acl_permission_type::deny && b.permission != acl_permission_type::allow) {
    return "Invalid permissionType " + std::string(name(b.permission));
  }
  // The broker's own checks (AclApis.handleCreateAcls) come before the controller's in Kafka;
  // both answer INVALID_REQUEST, the broker's message wins for the cluster name.
  if (b.type == resource_type::cluster && b.resource_name != cluster_resource_name) {
    return "The only valid name for the CLUSTER resource is " + std::string(cluster_resource_name);
  }
  if (b.resource_name.empty()) return "Invalid empty resource name";
  auto colon = b.principal.find(':');
  if (colon == std::string::npos) {
    return "Could not parse principal from `" + b.principal +
           "` (no colon is present separating the principal type from the principal name)";
  }
  return std::nullopt;
}

std::optional<std::string> validate_filter(const acl_binding_filter& f) {
  if (f.type == resource_type::unknown || f.pattern == pattern_type::unknown) {
    return "Unknown patternFilter.";
  }
  if (f.operation == acl_operation::unknown || f.permission == acl_permission_type::unknown) {
    return "Unknown entryFilter.";
  }
  return std::nullopt;
}

bool has_unknown(const acl_binding& b) {
  return b.type == resource_type::unknown || b.pattern == pattern_type::unknown ||
         b.operation == acl_operation::unknown || b.permission == acl_permission_type::unknown;
}
bool has_unknown(const acl_binding_filter& f) { return validate_filter(f).has_value(); }

std::string describe_acl(const acl_binding& b) {
  std::string s = "StandardAcl(resourceType=";
  s += name(b.type);
  s += ", resourceName=" + b.resource_name + ", patternType=";
  s += name(b.pattern);
  s += ", principal=" + b.principal + ", host=" + b.host + ", operation=";
  s += name(b.operation);
  s += ", permissionType=";
  s += name(b.permission);
  s += ")";
  return s;
}

}  // namespace tarn::security
