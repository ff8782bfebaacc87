// The ACL authorizer, with the semantics of Kafka's StandardAuthorizer: super users may do
// anything; otherwise the ACLs on the resource decide (the LITERAL ACLs of its exact name, the
// LITERAL "*" ACLs of its type and every PREFIXED ACL whose name starts it), for the principal
// or User:* and the client's host or "*". A matching DENY beats any ALLOW; an ALLOW of READ,
// WRITE, DELETE or ALTER implies DESCRIBE, of ALTER_CONFIGS implies DESCRIBE_CONFIGS, of ALL
// implies everything (a DENY implies nothing but ALL). A resource with no ACL at all is allowed
// only under allow.everyone.if.no.acl.found.
//
// Thread-safety: authorize() and the readers may run on every network thread at once and never
// block one another: they read an immutable snapshot (the ACLs indexed by resource type and
// name) swapped whole when the ACLs change; changes are serialized by a mutex of their own. Each
// thread keeps a reference to the snapshot it last used and only compares a generation number
// on the hot path, so network threads write no shared cache line to authorize (a thread takes
// the snapshot mutex once after each change, to pick up the new one).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/uuid.h"
#include "security/acl.h"
#include "security/principal.h"

namespace tarn::security {

// Kafka's value of authorizer.class.name that enables it; any other non-empty value is refused.
inline constexpr std::string_view standard_authorizer_class =
    "org.apache.kafka.metadata.authorizer.StandardAuthorizer";

struct authorizer_config {
  std::vector<std::string> super_users;  // "User:alice"
  bool allow_everyone_if_no_acl_found = false;
};

// super.users: principals separated by ';' (blanks around them ignored, empty entries skipped).
std::vector<std::string> parse_super_users(std::string_view value);

// Which rule decided, as Kafka's authorizer log names it: SuperUser, MatchingAcl(acl=...),
// DefaultAllow (no ACL on the resource, allow.everyone.if.no.acl.found), DefaultDeny.
enum class rule_kind : uint8_t { super_user, matching_acl, default_allow, default_deny };

struct authorization_decision {
  bool allowed = false;
  rule_kind rule = rule_kind::default_deny;
  const acl_binding* acl = nullptr;      // the matching ACL (rule matching_acl)
  std::shared_ptr<const void> snapshot;  // keeps *acl alive

  // "SuperUser", "MatchingAcl(acl=StandardAcl(...))", "DefaultAllow", "DefaultDeny".
  std::string describe_rule() const;
};

// One ACL with the id its AccessControlEntryRecord carries.
struct acl_with_id {
  uuid id;
  acl_binding binding;
};

class acl_authorizer {
 public:
  explicit acl_authorizer(authorizer_config config);

  // May `principal`, connected from `host` (an IP address), perform `op` on the resource?
  authorization_decision authorize(const kafka_principal& principal, std::string_view host,
                                   acl_operation op, resource_type type,
                                   std::string_view resource_name) const;
  bool is_super_user(const kafka_principal& principal) const;

  // Kafka's authorizeByResourceType: could the principal perform `op` on some resource of the
  // type (a super user; an ALLOW on some name not denied for it by a DENY on the same literal
  // name, on "*" or on a prefix of it; or no ACL of the type at all under
  // allow.everyone.if.no.acl.found). InitProducerId's idempotent rule asks it for WRITE on topics.
  bool authorize_by_resource_type(const kafka_principal& principal, std::string_view host,
                                  acl_operation op, resource_type type) const;

  // Replaces every ACL (loading the metadata log at start).
  void load(std::vector<acl_with_id> acls);
  // Adds and removes ACLs as one change (after the metadata log has it).
  void apply(std::span<const acl_with_id> added, std::span<const uuid> removed);

  // The ACLs the filter matches, by id.
  std::vector<acl_with_id> acls(const acl_binding_filter& filter) const;
  // The id of an ACL equal to `binding`, if one exists (CreateAcls of an existing ACL is a no-op).
  std::optional<uuid> find(const acl_binding& binding) const;
  size_t size() const;

  const authorizer_config& config() const { return config_; }

 private:
  struct string_hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using acl_list = std::vector<const acl_binding*>;
  using name_index = std::unordered_map<std::string, acl_list, string_hash, std::equal_to<>>;
  struct type_index {
    name_index literal;                  // by name, "*" included
    name_index prefixed;                 // by prefix
    std::vector<size_t> prefix_lengths;  // the distinct lengths of the prefixes, ascending
    bool empty() const { return literal.empty() && prefixed.empty(); }
  };
  struct snapshot {
    uint64_t generation = 0;  // unique across every authorizer of the process
    std::map<uuid, acl_binding> by_id;
    std::array<type_index, 8> by_type;  // by resource_type code
  };
  static std::shared_ptr<const snapshot> build(std::map<uuid, acl_binding> by_id);
  void publish(std::shared_ptr<const snapshot> s);
  std::shared_ptr<const snapshot> latest() const;
  // This thread's reference to the current snapshot.
  const std::shared_ptr<const snapshot>& current() const;

  authorizer_config config_;
  // The current snapshot, behind a mutex a network thread takes only when the generation it
  // cached is no longer current (once per thread per change): std::atomic<std::shared_ptr> would
  // do the same with a spin bit, which ThreadSanitizer cannot see (GCC 12's libstdc++).
  mutable std::mutex snapshot_mu_;
  std::shared_ptr<const snapshot> snapshot_;
  std::atomic<uint64_t> generation_{0};  // snapshot_'s, stored after it
  std::mutex write_mu_;                  // one change at a time
};

// The Kafka bit set of "authorized operations" (Metadata, DescribeGroups, DescribeCluster, ...):
// bit `code` set for every operation in `ops` the principal may perform on the resource.
int32_t authorized_operations(const acl_authorizer& authorizer, const kafka_principal& principal,
                              std::string_view host, resource_type type,
                              std::string_view resource_name, std::span<const acl_operation> ops);

// The operations Kafka lists for a resource type (AclEntry.supportedOperations), for the bit sets.
std::span<const acl_operation> supported_operations(resource_type type);

// One line of Kafka's kafka.authorizer.logger: "Principal = User:x is Denied operation = WRITE
// from host = 127.0.0.1 on resource = Topic:LITERAL:foo for request = Produce with
// resourceRefCount = 1 based on rule MatchingAcl(acl=...)".
std::string audit_message(const kafka_principal& principal, std::string_view host, acl_operation op,
                          resource_type type, std::string_view resource_name,
                          std::string_view request_name, int32_t resource_ref_count,
                          const authorization_decision& decision);

}  // namespace tarn::security
