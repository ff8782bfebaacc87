// The authorizer's decision table (Kafka's StandardAuthorizer semantics), its filters, the
// validation of new ACLs and the authorizer log's text, without sockets.
#include "security/acl_authorizer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

namespace tarn::security {
namespace {

using op = acl_operation;
using rt = resource_type;

const kafka_principal alice = kafka_principal::user("alice");
const kafka_principal bob = kafka_principal::user("bob");
constexpr std::string_view local = "127.0.0.1";

acl_binding acl(rt type, std::string name, pattern_type pattern, std::string principal,
                acl_operation operation,
                acl_permission_type permission = acl_permission_type::allow,
                std::string host = "*") {
  return {type,      std::move(name), pattern, std::move(principal), std::move(host),
          operation, permission};
}
acl_binding topic_acl(std::string name, std::string principal, acl_operation operation,
                      acl_permission_type permission = acl_permission_type::allow) {
  return acl(rt::topic, std::move(name), pattern_type::literal, std::move(principal), operation,
             permission);
}

uuid id(uint64_t n) { return uuid{n, n}; }

std::unique_ptr<acl_authorizer> with(std::vector<acl_binding> bindings,
                                     authorizer_config config = {}) {
  auto a = std::make_unique<acl_authorizer>(std::move(config));
  std::vector<acl_with_id> acls;
  uint64_t n = 1;
  for (auto& b : bindings) acls.push_back({id(n++), std::move(b)});
  a->load(std::move(acls));
  return a;
}

bool allowed(const std::unique_ptr<acl_authorizer>& a, const kafka_principal& p, acl_operation o,
             rt type, std::string_view name, std::string_view host = local) {
  return a->authorize(p, host, o, type, name).allowed;
}

TEST(AclAuthorizer, NoAclDeniesUnlessAllowEveryone) {
  auto closed = with({});
  EXPECT_FALSE(allowed(closed, alice, op::read, rt::topic, "t"));
  EXPECT_EQ(closed->authorize(alice, local, op::read, rt::topic, "t").describe_rule(),
            "DefaultDeny");
  auto open = with({topic_acl("other", "User:bob", op::read)}, {{}, true});
  auto d = open->authorize(alice, local, op::read, rt::topic, "t");
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.describe_rule(), "DefaultAllow");
  // a resource with ACLs, none for alice: denied even when everyone is allowed elsewhere
  EXPECT_FALSE(allowed(open, alice, op::read, rt::topic, "other"));
  EXPECT_EQ(open->authorize(alice, local, op::read, rt::topic, "other").describe_rule(),
            "DefaultDeny");
}

TEST(AclAuthorizer, DenyBeatsAllow) {
  auto a = with({topic_acl("t", "User:alice", op::write),
                 topic_acl("t", "User:*", op::write, acl_permission_type::deny)});
  auto d = a->authorize(alice, local, op::write, rt::topic, "t");
  EXPECT_FALSE(d.allowed);
  EXPECT_EQ(d.describe_rule(),
            "MatchingAcl(acl=StandardAcl(resourceType=TOPIC, resourceName=t, patternType=LITERAL, "
            "principal=User:*, host=*, operation=WRITE, permissionType=DENY))");
  // a DENY on a prefix or "*" beats an ALLOW on the literal name
  auto p = with({topic_acl("orders", "User:alice", op::read),
                 acl(rt::topic, "ord", pattern_type::prefixed, "User:alice", op::read,
                     acl_permission_type::deny)});
  EXPECT_FALSE(allowed(p, alice, op::read, rt::topic, "orders"));
  auto w = with({topic_acl("orders", "User:alice", op::read),
                 topic_acl("*", "User:alice", op::all, acl_permission_type::deny)});
  EXPECT_FALSE(allowed(w, alice, op::read, rt::topic, "orders"));
}

TEST(AclAuthorizer, PrefixedAndLiteralPatterns) {
  auto a = with({acl(rt::topic, "app-", pattern_type::prefixed, "User:alice", op::read),
                 topic_acl("app", "User:alice", op::write)});
  EXPECT_TRUE(allowed(a, alice, op::read, rt::topic, "app-orders"));
  EXPECT_TRUE(allowed(a, alice, op::read, rt::topic, "app-"));  // a prefix matches itself
  EXPECT_FALSE(allowed(a, alice, op::read, rt::topic, "app"));
  EXPECT_FALSE(allowed(a, alice, op::read, rt::topic, "ap"));
  EXPECT_FALSE(allowed(a, alice, op::read, rt::topic, "xapp-orders"));
  // a literal name is not a prefix
  EXPECT_TRUE(allowed(a, alice, op::write, rt::topic, "app"));
  EXPECT_FALSE(allowed(a, alice, op::write, rt::topic, "apple"));
  // a LITERAL "*" is every name of its type, a PREFIXED "*" only names starting with '*'
  auto w = with({topic_acl("*", "User:alice", op::read),
                 acl(rt::group, "*", pattern_type::prefixed, "User:alice", op::read)});
  EXPECT_TRUE(allowed(w, alice, op::read, rt::topic, "anything"));
  EXPECT_FALSE(allowed(w, alice, op::read, rt::group, "anything"));
  EXPECT_TRUE(allowed(w, alice, op::read, rt::group, "*g"));
  // types do not mix
  EXPECT_FALSE(allowed(w, alice, op::read, rt::transactional_id, "anything"));
}

TEST(AclAuthorizer, WildcardPrincipalAndHosts) {
  auto a = with(
      {topic_acl("t", "User:*", op::read), acl(rt::topic, "h", pattern_type::literal, "User:alice",
                                               op::read, acl_permission_type::allow, "10.0.0.1")});
  EXPECT_TRUE(allowed(a, alice, op::read, rt::topic, "t"));
  EXPECT_TRUE(allowed(a, bob, op::read, rt::topic, "t"));
  EXPECT_TRUE(allowed(a, kafka_principal::anonymous(), op::read, rt::topic, "t"));
  EXPECT_TRUE(allowed(a, alice, op::read, rt::topic, "h", "10.0.0.1"));
  EXPECT_FALSE(allowed(a, alice, op::read, rt::topic, "h", "10.0.0.2"));
  // "Group:*" is no wildcard
  auto g = with({topic_acl("t", "Group:*", op::read)});
  EXPECT_FALSE(allowed(g, alice, op::read, rt::topic, "t"));
}

TEST(AclAuthorizer, ImpliedOperations) {
  for (op granted : {op::read, op::write, op::delete_, op::alter, op::describe}) {
    auto a = with({topic_acl("t", "User:alice", granted)});
    EXPECT_TRUE(allowed(a, alice, op::describe, rt::topic, "t")) << name(granted);
  }
  for (op granted : {op::create, op::alter_configs, op::describe_configs}) {
    auto a = with({topic_acl("t", "User:alice", granted)});
    EXPECT_EQ(allowed(a, alice, op::describe, rt::topic, "t"), false) << name(granted);
  }
  auto c = with({topic_acl("t", "User:alice", op::alter_configs)});
  EXPECT_TRUE(allowed(c, alice, op::describe_configs, rt::topic, "t"));
  EXPECT_FALSE(allowed(c, alice, op::alter, rt::topic, "t"));
  auto all = with({topic_acl("t", "User:alice", op::all)});
  for (op o : {op::read, op::write, op::create, op::delete_, op::alter, op::describe,
               op::describe_configs, op::alter_configs}) {
    EXPECT_TRUE(allowed(all, alice, o, rt::topic, "t")) << name(o);
  }
  // WRITE does not imply READ
  auto w = with({topic_acl("t", "User:alice", op::write)});
  EXPECT_FALSE(allowed(w, alice, op::read, rt::topic, "t"));
  // a DENY implies nothing: DENY READ leaves DESCRIBE to an ALLOW; DENY ALL denies everything
  auto d = with({topic_acl("t", "User:alice", op::describe),
                 topic_acl("t", "User:alice", op::read, acl_permission_type::deny)});
  EXPECT_TRUE(allowed(d, alice, op::describe, rt::topic, "t"));
  EXPECT_FALSE(allowed(d, alice, op::read, rt::topic, "t"));
  auto da = with({topic_acl("t", "User:alice", op::describe),
                  topic_acl("t", "User:alice", op::all, acl_permission_type::deny)});
  EXPECT_FALSE(allowed(da, alice, op::describe, rt::topic, "t"));
}

TEST(AclAuthorizer, SuperUsersPassDenies) {
  authorizer_config config;
  config.super_users = parse_super_users(" User:admin ;;User:root");
  ASSERT_EQ(config.super_users, (std::vector<std::string>{"User:admin", "User:root"}));
  auto a = with({topic_acl("t", "User:*", op::all, acl_permission_type::deny)}, config);
  auto d = a->authorize(kafka_principal::user("root"), local, op::write, rt::topic, "t");
  EXPECT_TRUE(d.allowed);
  EXPECT_EQ(d.describe_rule(), "SuperUser");
  EXPECT_FALSE(allowed(a, alice, op::write, rt::topic, "t"));
  EXPECT_FALSE(allowed(a, kafka_principal::user("admi"), op::write, rt::topic, "t"));
}

TEST(AclAuthorizer, ApplySwapsTheSnapshotAndFindsDuplicates) {
  auto a = std::make_unique<acl_authorizer>(authorizer_config{});
  acl_with_id one{id(1), topic_acl("t", "User:alice", op::read)};
  a->apply({&one, 1}, {});
  EXPECT_TRUE(allowed(a, alice, op::read, rt::topic, "t"));
  EXPECT_EQ(a->find(one.binding), id(1));
  EXPECT_FALSE(a->find(topic_acl("t", "User:alice", op::write)).has_value());
  // a denial keeps its ACL alive across a change
  acl_with_id no{id(2), topic_acl("t", "User:alice", op::write, acl_permission_type::deny)};
  a->apply({&no, 1}, {});
  auto d = a->authorize(alice, local, op::write, rt::topic, "t");
  ASSERT_FALSE(d.allowed);
  uuid gone[] = {id(1), id(2)};
  a->apply({}, gone);
  EXPECT_EQ(a->size(), 0u);
  EXPECT_FALSE(allowed(a, alice, op::read, rt::topic, "t"));
  ASSERT_NE(d.acl, nullptr);
  EXPECT_EQ(d.acl->resource_name, "t");
}

TEST(AclAuthorizer, AuthorizeByResourceType) {
  EXPECT_FALSE(with({})->authorize_by_resource_type(alice, local, op::write, rt::topic));
  EXPECT_TRUE(with({topic_acl("t", "User:alice", op::write)})
                  ->authorize_by_resource_type(alice, local, op::write, rt::topic));
  EXPECT_FALSE(with({topic_acl("t", "User:alice", op::write),
                     topic_acl("t", "User:alice", op::write, acl_permission_type::deny)})
                   ->authorize_by_resource_type(alice, local, op::write, rt::topic));
  EXPECT_FALSE(with({topic_acl("tx", "User:alice", op::write),
                     acl(rt::topic, "t", pattern_type::prefixed, "User:*", op::all,
                         acl_permission_type::deny)})
                   ->authorize_by_resource_type(alice, local, op::write, rt::topic));
  EXPECT_FALSE(with({topic_acl("t", "User:alice", op::read)})
                   ->authorize_by_resource_type(alice, local, op::write, rt::topic));
}

TEST(AclBindingFilter, MatchesAsKafka) {
  auto lit = topic_acl("orders", "User:alice", op::read);
  auto star = topic_acl("*", "User:alice", op::read);
  auto pre = acl(rt::topic, "ord", pattern_type::prefixed, "User:alice", op::read);
  acl_binding_filter any;
  EXPECT_TRUE(any.matches(lit) && any.matches(star) && any.matches(pre));
  acl_binding_filter match;
  match.resource_name = "orders";
  match.pattern = pattern_type::match;
  EXPECT_TRUE(match.matches(lit) && match.matches(star) && match.matches(pre));
  acl_binding_filter exact = match;
  exact.pattern = pattern_type::any;
  EXPECT_TRUE(exact.matches(lit));
  EXPECT_FALSE(exact.matches(star) || exact.matches(pre));
  acl_binding_filter by_entry;
  by_entry.principal = "User:bob";
  EXPECT_FALSE(by_entry.matches(lit));
  by_entry.principal = "User:alice";
  by_entry.operation = op::write;
  EXPECT_FALSE(by_entry.matches(lit));
  by_entry.operation = op::read;
  by_entry.permission = acl_permission_type::deny;
  EXPECT_FALSE(by_entry.matches(lit));
  by_entry.type = rt::group;
  by_entry.permission = acl_permission_type::any;
  EXPECT_FALSE(by_entry.matches(lit));
}

TEST(AclValidation, NewAclsAndFilters) {
  EXPECT_FALSE(validate_new_acl(topic_acl("t", "User:a", op::read)).has_value());
  auto b = topic_acl("t", "User:a", op::read);
  b.type = rt::any;
  EXPECT_EQ(validate_new_acl(b), "Invalid resourceType ANY");
  b = topic_acl("t", "User:a", op::any);
  EXPECT_EQ(validate_new_acl(b), "Invalid operation ANY");
  b = topic_acl("t", "User:a", op::read, acl_permission_type::any);
  EXPECT_EQ(validate_new_acl(b), "Invalid permissionType ANY");
  b = topic_acl("t", "User:a", op::read);
  b.pattern = pattern_type::match;
  EXPECT_EQ(validate_new_acl(b), "Invalid patternType MATCH");
  EXPECT_EQ(validate_new_acl(topic_acl("", "User:a", op::read)), "Invalid empty resource name");
  EXPECT_EQ(validate_new_acl(acl(rt::cluster, "c", pattern_type::literal, "User:a", op::alter)),
            "The only valid name for the CLUSTER resource is kafka-cluster");
  EXPECT_TRUE(validate_new_acl(topic_acl("t", "alice", op::read)).has_value());
  acl_binding_filter f;
  EXPECT_FALSE(validate_filter(f).has_value());
  f.type = rt::unknown;
  EXPECT_EQ(validate_filter(f), "Unknown patternFilter.");
  EXPECT_EQ(resource_type_from_code(99), rt::unknown);
  EXPECT_EQ(acl_operation_from_code(15), op::two_phase_commit);
  EXPECT_EQ(acl_operation_from_code(-1), op::unknown);
}

TEST(AuthorizerLog, KafkasLineAndAuthorizedOperations) {
  auto a = with({topic_acl("foo", "User:ANONYMOUS", op::write)});
  auto d = a->authorize(kafka_principal::anonymous(), local, op::read, rt::topic, "foo");
  EXPECT_EQ(
      audit_message(kafka_principal::anonymous(), local, op::read, rt::topic, "foo", "Fetch", 1, d),
      "Principal = User:ANONYMOUS is Denied operation = READ from host = 127.0.0.1 on "
      "resource = Topic:LITERAL:foo for request = Fetch with resourceRefCount = 1 based on "
      "rule DefaultDeny");
  int32_t bits = authorized_operations(*a, kafka_principal::anonymous(), local, rt::topic, "foo",
                                       supported_operations(rt::topic));
  EXPECT_EQ(bits, (1 << 4) | (1 << 8));  // WRITE and the DESCRIBE it implies
}

}  // namespace
}  // namespace tarn::security

namespace tarn::security {
namespace {

// Network threads authorize while ACLs change: each reader sees either snapshot, never a torn
// one (run under TSan by CI's sanitizer tree).
TEST(AclAuthorizer, ReadersRaceWithChanges) {
  auto a = std::make_unique<acl_authorizer>(authorizer_config{});
  std::atomic<bool> stop{false};
  std::atomic<int64_t> decisions{0};
  auto reader = [&] {
    while (!stop.load(std::memory_order_relaxed)) {
      auto d = a->authorize(alice, local, op::read, rt::topic, "t");
      // either no ACL (DefaultDeny) or the ALLOW of the moment
      if (d.allowed) {
        EXPECT_EQ(d.acl->resource_name, "t");
      }
      decisions.fetch_add(1, std::memory_order_relaxed);
    }
  };
  std::thread r1(reader), r2(reader);
  for (uint64_t i = 1; i <= 200; ++i) {
    acl_with_id one{id(i), topic_acl("t", "User:alice", op::read)};
    a->apply({&one, 1}, {});
    uuid gone = id(i);
    a->apply({}, {&gone, 1});
  }
  acl_with_id last{id(1000), topic_acl("t", "User:alice", op::read)};
  a->apply({&last, 1}, {});
  // the readers pick up the last snapshot once they compare its generation
  while (decisions.load() < 1000) std::this_thread::yield();
  stop = true;
  r1.join();
  r2.join();
  EXPECT_TRUE(allowed(a, alice, op::read, rt::topic, "t"));
  EXPECT_EQ(a->size(), 1u);
}

}  // namespace
}  // namespace tarn::security
