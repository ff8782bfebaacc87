// The ACL authorizer's snapshot, lookup and decision (acl_authorizer.h).
#include "security/acl_authorizer.h"

#include <algorithm>
#include <set>

namespace tarn::security {
namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// "User:alice" against the principal without building its string.
bool same_principal(std::string_view acl_principal, const kafka_principal& p) {
  return acl_principal.size() == p.type.size() + 1 + p.name.size() &&
         acl_principal.starts_with(p.type) && acl_principal[p.type.size()] == ':' &&
         acl_principal.substr(p.type.size() + 1) == p.name;
}

bool principal_matches(const acl_binding& acl, const kafka_principal& p) {
  return acl.principal == wildcard_principal || same_principal(acl.principal, p);
}

bool host_matches(const acl_binding& acl, std::string_view host) {
  return acl.host == wildcard_host || acl.host == host;
}

// Kafka's StandardAuthorizerData.findResult: allowed, denied or no say (nullopt).
std::optional<bool> find_result(const acl_binding& acl, const kafka_principal& principal,
                                std::string_view host, acl_operation op) {
  if (!principal_matches(acl, principal) || !host_matches(acl, host)) return std::nullopt;
  if (acl.operation != acl_operation::all) {
    if (acl.permission == acl_permission_type::allow) {
      switch (op) {
        case acl_operation::describe:
          if (acl.operation != acl_operation::describe && acl.operation != acl_operation::read &&
              acl.operation != acl_operation::write && acl.operation != acl_operation::delete_ &&
              acl.operation != acl_operation::alter) {
            return std::nullopt;
          }
          break;
        case acl_operation::describe_configs:
          if (acl.operation != acl_operation::describe_configs &&
              acl.operation != acl_operation::alter_configs) {
            return std::nullopt;
          }
          break;
        default:
          if (acl.operation != op) return std::nullopt;
      }
    } else if (acl.operation != op) {
      return std::nullopt;
    }
  }
  return acl.permission == acl_permission_type::allow;
}

constexpr acl_operation topic_ops[] = {acl_operation::read,
                                       acl_operation::write,
                                       acl_operation::create,
                                       acl_operation::delete_,
                                       acl_operation::alter,
                                       acl_operation::describe,
                                       acl_operation::describe_configs,
                                       acl_operation::alter_configs};
constexpr acl_operation group_ops[] = {acl_operation::read, acl_operation::describe,
                                       acl_operation::delete_, acl_operation::describe_configs,
                                       acl_operation::alter_configs};
constexpr acl_operation cluster_ops[] = {
    acl_operation::create,        acl_operation::cluster_action,   acl_operation::describe_configs,
    acl_operation::alter_configs, acl_operation::idempotent_write, acl_operation::alter,
    acl_operation::describe};
constexpr acl_operation transactional_id_ops[] = {acl_operation::describe, acl_operation::write,
                                                  acl_operation::two_phase_commit};
constexpr acl_operation delegation_token_ops[] = {acl_operation::describe};
constexpr acl_operation user_ops[] = {acl_operation::create_tokens, acl_operation::describe_tokens};

}  // namespace

std::vector<std::string> parse_super_users(std::string_view value) {
  std::vector<std::string> out;
  while (!value.empty()) {
    size_t semi = value.find(';');
    std::string_view one = trim(value.substr(0, semi));
    if (!one.empty()) out.emplace_back(one);
    if (semi == std::string_view::npos) break;
    value.remove_prefix(semi + 1);
  }
  return out;
}

std::string authorization_decision::describe_rule() const {
  switch (rule) {
    case rule_kind::super_user:
      return "SuperUser";
    case rule_kind::matching_acl:
      return "MatchingAcl(acl=" + (acl ? describe_acl(*acl) : std::string()) + ")";
    case rule_kind::default_allow:
      return "DefaultAllow";
    case rule_kind::default_deny:
      break;
  }
  return "DefaultDeny";
}

acl_authorizer::acl_authorizer(authorizer_config config) : config_(std::move(config)) {
  publish(build({}));
}

void acl_authorizer::publish(std::shared_ptr<const snapshot> s) {
  uint64_t generation = s->generation;
  {
    std::lock_guard g(snapshot_mu_);
    snapshot_ = std::move(s);
  }
  generation_.store(generation, std::memory_order_release);
}

std::shared_ptr<const acl_authorizer::snapshot> acl_authorizer::latest() const {
  std::lock_guard g(snapshot_mu_);
  return snapshot_;
}

const std::shared_ptr<const acl_authorizer::snapshot>& acl_authorizer::current() const {
  thread_local std::shared_ptr<const snapshot> cached;
  // Generations are unique in the process, so a cached snapshot of another (or a destroyed)
  // authorizer never passes for this one's.
  if (!cached || cached->generation != generation_.load(std::memory_order_acquire)) {
    cached = latest();
  }
  return cached;
}

std::shared_ptr<const acl_authorizer::snapshot> acl_authorizer::build(
    std::map<uuid, acl_binding> by_id) {
  static std::atomic<uint64_t> next_generation{1};
  auto s = std::make_shared<snapshot>();
  s->generation = next_generation.fetch_add(1, std::memory_order_relaxed);
  s->by_id = std::move(by_id);
  for (const auto& [id, b] : s->by_id) {
    auto code = static_cast<size_t>(b.type);
    if (code >= s->by_type.size()) continue;
    type_index& index = s->by_type[code];
    if (b.pattern == pattern_type::prefixed) {
      index.prefixed[b.resource_name].push_back(&b);
      index.prefix_lengths.push_back(b.resource_name.size());
    } else {
      index.literal[b.resource_name].push_back(&b);
    }
  }
  for (auto& index : s->by_type) {
    std::sort(index.prefix_lengths.begin(), index.prefix_lengths.end());
    index.prefix_lengths.erase(
        std::unique(index.prefix_lengths.begin(), index.prefix_lengths.end()),
        index.prefix_lengths.end());
  }
  return s;
}

bool acl_authorizer::is_super_user(const kafka_principal& principal) const {
  for (const auto& s : config_.super_users) {
    if (same_principal(s, principal)) return true;
  }
  return false;
}

authorization_decision acl_authorizer::authorize(const kafka_principal& principal,
                                                 std::string_view host, acl_operation op,
                                                 resource_type type,
                                                 std::string_view resource_name) const {
  authorization_decision d;
  if (!config_.super_users.empty() && is_super_user(principal)) {
    d.allowed = true;
    d.rule = rule_kind::super_user;
    return d;
  }
  const snapshot* snap = current().get();
  auto code = static_cast<size_t>(type);
  bool has_resource_acls = false;
  const acl_binding* allow = nullptr;
  const acl_binding* deny = nullptr;
  if (code < snap->by_type.size()) {
    const type_index& index = snap->by_type[code];
    // Scans one list; true once a DENY matched (nothing can overturn it).
    auto scan = [&](const acl_list& list) {
      for (const acl_binding* acl : list) {
        has_resource_acls = true;
        auto r = find_result(*acl, principal, host, op);
        if (!r) continue;
        if (!*r) {
          deny = acl;
          return true;
        }
        allow = acl;
      }
      return false;
    };
    bool denied = false;
    if (auto it = index.literal.find(resource_name); it != index.literal.end()) {
      denied = scan(it->second);
    }
    if (!denied && resource_name != wildcard_resource) {
      if (auto it = index.literal.find(wildcard_resource); it != index.literal.end()) {
        denied = scan(it->second);
      }
    }
    for (size_t n : index.prefix_lengths) {
      if (denied || n > resource_name.size()) break;
      if (auto it = index.prefixed.find(resource_name.substr(0, n)); it != index.prefixed.end()) {
        denied = scan(it->second);
      }
    }
  }
  if (deny || allow) {
    d.allowed = deny == nullptr;
    d.rule = rule_kind::matching_acl;
    d.acl = deny ? deny : allow;
    if (deny) d.snapshot = current();
  } else if (!has_resource_acls && config_.allow_everyone_if_no_acl_found) {
    d.allowed = true;
    d.rule = rule_kind::default_allow;
  }
  return d;
}

bool acl_authorizer::authorize_by_resource_type(const kafka_principal& principal,
                                                std::string_view host, acl_operation op,
                                                resource_type type) const {
  // Kafka asks for a made-up name first, so super users (and an open cluster) pass whatever
  // DENY ACLs say.
  if (authorize(principal, host, op, type, "hardcode").allowed) return true;
  std::shared_ptr<const snapshot> snap = current();
  std::set<std::string_view> deny_literal, deny_prefixed, allow_literal, allow_prefixed;
  for (const auto& [id, b] : snap->by_id) {
    if (b.type != type || !host_matches(b, host) || !principal_matches(b, principal)) continue;
    if (b.operation != op && b.operation != acl_operation::all) continue;
    bool literal = b.pattern == pattern_type::literal;
    if (b.permission == acl_permission_type::deny) {
      if (literal && b.resource_name == wildcard_resource) return false;
      (literal ? deny_literal : deny_prefixed).insert(b.resource_name);
    } else if (b.permission == acl_permission_type::allow) {
      if (literal && b.resource_name == wildcard_resource) return true;
      (literal ? allow_literal : allow_prefixed).insert(b.resource_name);
    }
  }
  auto dominated = [&](std::string_view name) {
    for (size_t n = 1; n <= name.size(); ++n) {
      if (deny_prefixed.contains(name.substr(0, n))) return true;
    }
    return false;
  };
  for (std::string_view name : allow_literal) {
    if (!deny_literal.contains(name) && !dominated(name)) return true;
  }
  for (std::string_view name : allow_prefixed) {
    if (!dominated(name)) return true;
  }
  return false;
}

void acl_authorizer::load(std::vector<acl_with_id> acls) {
  std::lock_guard g(write_mu_);
  std::map<uuid, acl_binding> by_id;
  for (auto& a : acls) by_id.emplace(a.id, std::move(a.binding));
  publish(build(std::move(by_id)));
}

void acl_authorizer::apply(std::span<const acl_with_id> added, std::span<const uuid> removed) {
  std::lock_guard g(write_mu_);
  std::map<uuid, acl_binding> by_id = latest()->by_id;
  for (const uuid& id : removed) by_id.erase(id);
  for (const auto& a : added) by_id[a.id] = a.binding;
  publish(build(std::move(by_id)));
}

std::vector<acl_with_id> acl_authorizer::acls(const acl_binding_filter& filter) const {
  std::shared_ptr<const snapshot> snap = latest();
  std::vector<acl_with_id> out;
  for (const auto& [id, b] : snap->by_id) {
    if (filter.matches(b)) out.push_back({id, b});
  }
  return out;
}

std::optional<uuid> acl_authorizer::find(const acl_binding& binding) const {
  std::shared_ptr<const snapshot> snap = latest();
  for (const auto& [id, b] : snap->by_id) {
    if (b == binding) return id;
  }
  return std::nullopt;
}

size_t acl_authorizer::size() const { return latest()->by_id.size(); }

std::span<const acl_operation> supported_operations(resource_type type) {
  switch (type) {
    case resource_type::topic:
      return topic_ops;
    case resource_type::group:
      return group_ops;
    case resource_type::cluster:
      return cluster_ops;
    case resource_type::transactional_id:
      return transactional_id_ops;
    case resource_type::delegation_token:
      return delegation_token_ops;
    case resource_type::user:
      return user_ops;
    default:
      return {};
  }
}

int32_t authorized_operations(const acl_authorizer& authorizer, const kafka_principal& principal,
                              std::string_view host, resource_type type,
                              std::string_view resource_name, std::span<const acl_operation> ops) {
  int32_t bits = 0;
  for (acl_operation op : ops) {
    if (authorizer.authorize(principal, host, op, type, resource_name).allowed) {
      bits |= int32_t{1} << static_cast<int>(op);
    }
  }
  return bits;
}

std::string audit_message(const kafka_principal& principal, std::string_view host, acl_operation op,
                          resource_type type, std::string_view resource_name,
                          std::string_view request_name, int32_t resource_ref_count,
                          const authorization_decision& decision) {
  std::string s = "Principal = " + principal.to_string();
  s += decision.allowed ? " is Allowed operation = " : " is Denied operation = ";
  s += name(op);
  s += " from host = ";
  s += host;
  s += " on resource = ";
  s += pascal_name(type);
  s += ":LITERAL:";
  s += resource_name;
  s += " for request = ";
  s += request_name;
  s += " with resourceRefCount = " + std::to_string(resource_ref_count);
  s += " based on rule " + decision.describe_rule();
  return s;
}

}  // namespace tarn::security
