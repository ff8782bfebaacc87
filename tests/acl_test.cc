// ACL authorization end to end (docs/security.md#authorization), against `tarn serve` with
// authorizer.class.name set and ACLs for User:ANONYMOUS, the principal of every PLAINTEXT
// connection:
//   - ACLs created with hand-built CreateAcls while User:ANONYMOUS is a super user survive a
//     restart without super.users, and then decide: a real client (confluent-kafka) produces to
//     and consumes (group with READ) the topic it may use, gets TOPIC_AUTHORIZATION_FAILED on
//     another and GROUP_AUTHORIZATION_FAILED for a group without READ, and its metadata lists
//     only the topic it may describe; hand-built Metadata answers a named unauthorized topic
//     TOPIC_AUTHORIZATION_FAILED and leaves it out of an all-topics answer; the broker logs Kafka's
//     kafka.authorizer.logger line for a denied Produce;
//   - the ACL APIs' error branches with hand-built requests: SECURITY_DISABLED without an
//     authorizer, INVALID_REQUEST for bindings Kafka refuses, CLUSTER_AUTHORIZATION_FAILED for a
//     caller without ALTER/DESCRIBE on the cluster, a closed connection for an UNKNOWN code;
//   - admin APIs under allow.everyone.if.no.acl.found, ElectLeaders and
//     AlterPartitionReassignments refused on each asked partition too;
//   - a regex subscription (hand-built ConsumerGroupHeartbeat) assigned only the matching topics
//     the principal may DESCRIBE; DescribeConfigs showing super.users as Kafka does;
//   - a refused authorizer.class.name stops the broker at start with a clear message;
//   - Kafka's own kafka-acls (AclCommand, 4.4.0 jars) adds, lists and removes ACLs on tarn and
//     prints for --list what it prints against Kafka 4.4.0 for the same ACLs (Kafka started by
//     scripts/kafka-ref with the StandardAuthorizer and super.users=User:ANONYMOUS).
// GCC 12's -Wrestrict misfires on std::string operator+ with literals (GCC bug 105329).
#pragma GCC diagnostic ignored "-Wrestrict"

#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "kafka_conn.h"
#include "kafka_ref_broker.h"
#include "produce_util.h"
#include "protocol/error_codes.h"
#include "protocol/messages/alter_partition_reassignments_request.h"
#include "protocol/messages/alter_partition_reassignments_response.h"
#include "protocol/messages/consumer_group_heartbeat_request.h"
#include "protocol/messages/consumer_group_heartbeat_response.h"
#include "protocol/messages/create_acls_request.h"
#include "protocol/messages/create_acls_response.h"
#include "protocol/messages/create_topics_request.h"
#include "protocol/messages/create_topics_response.h"
#include "protocol/messages/delete_acls_request.h"
#include "protocol/messages/delete_acls_response.h"
#include "protocol/messages/delete_topics_request.h"
#include "protocol/messages/delete_topics_response.h"
#include "protocol/messages/describe_acls_request.h"
#include "protocol/messages/describe_acls_response.h"
#include "protocol/messages/describe_configs_request.h"
#include "protocol/messages/describe_configs_response.h"
#include "protocol/messages/describe_groups_request.h"
#include "protocol/messages/describe_groups_response.h"
#include "protocol/messages/elect_leaders_request.h"
#include "protocol/messages/elect_leaders_response.h"
#include "protocol/messages/find_coordinator_request.h"
#include "protocol/messages/find_coordinator_response.h"
#include "protocol/messages/init_producer_id_request.h"
#include "protocol/messages/init_producer_id_response.h"
#include "protocol/messages/metadata_request.h"
#include "protocol/messages/metadata_response.h"
#include "test_util.h"

namespace tarn::test {
namespace {

using protocol::error_code;

const std::string authorizer_class = "org.apache.kafka.metadata.authorizer.StandardAuthorizer";
constexpr int8_t topic_type = 2, group_type = 3, cluster_type = 4, any_type = 1;
constexpr int8_t literal = 3, prefixed = 4, any_pattern = 1;
constexpr int8_t op_any = 1, op_all = 2, op_read = 3, op_write = 4, op_create = 5;
constexpr int8_t allow = 3, permission_any = 1;

std::string bootstrap(uint16_t port) { return "127.0.0.1:" + std::to_string(port); }

std::vector<std::string> authorizer_args(bool super_user) {
  std::vector<std::string> args = {"--override", "authorizer.class.name=" + authorizer_class};
  if (super_user) {
    args.insert(args.end(), {"--override", "super.users=User:ANONYMOUS"});
  }
  return args;
}

protocol::create_acls_request::acl_creation creation(
    int8_t type, std::string_view name, int8_t pattern, int8_t op,
    std::string_view principal = "User:ANONYMOUS") {
  protocol::create_acls_request::acl_creation c;
  c.resource_type = type;
  c.resource_name = name;
  c.resource_pattern_type = pattern;
  c.principal = principal;
  c.host = "*";
  c.operation = op;
  c.permission_type = allow;
  return c;
}

protocol::describe_acls_request describe_all() {
  protocol::describe_acls_request d;
  d.resource_type_filter = any_type;
  d.resource_name_filter = std::nullopt;
  d.pattern_type_filter = any_pattern;
  d.principal_filter = std::nullopt;
  d.host_filter = std::nullopt;
  d.operation = op_any;
  d.permission_type = permission_any;
  return d;
}

// "TOPIC:granted:LITERAL User:ANONYMOUS * READ ALLOW" lines of a DescribeAcls answer, sorted.
std::vector<std::string> acl_lines(const protocol::describe_acls_response& r) {
  std::vector<std::string> out;
  for (const auto& res : r.resources) {
    for (const auto& a : res.acls) {
      std::ostringstream line;
      line << int{res.resource_type} << ":" << res.resource_name << ":" << int{res.pattern_type}
           << " " << a.principal << " " << a.host << " " << int{a.operation} << " "
           << int{a.permission_type};
      out.push_back(line.str());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

int16_t metadata_topic_error(kafka_conn& c, std::string_view topic) {
  protocol::metadata_request m;
  m.topics.emplace();
  m.topics->emplace_back().name = topic;
  m.allow_auto_topic_creation = false;
  auto r = c.call<protocol::metadata_response>(m, 12);
  if (!r || r->topics.size() != 1) return -1;
  return r->topics[0].error_code;
}

std::vector<std::string> metadata_all_topics(kafka_conn& c) {
  protocol::metadata_request m;
  m.topics = std::nullopt;
  auto r = c.call<protocol::metadata_response>(m, 12);
  std::vector<std::string> out;
  if (r) {
    for (const auto& t : r->topics) out.emplace_back(t.name.value_or(""));
  }
  std::sort(out.begin(), out.end());
  return out;
}

TEST(acl, clients_are_held_to_the_acls_and_the_acls_survive_a_restart) {
  temp_dir dir;
  const auto data = dir.path() / "data";
  {
    // Phase 1: User:ANONYMOUS is a super user; it makes the topics and the ACLs.
    broker_process tarn(authorizer_args(true), data);
    ASSERT_NE(tarn.port(), 0) << tarn.output();
    kafka_conn c(tarn.port(), nullptr);
    ASSERT_TRUE(c.connected());
    for (const char* topic : {"granted", "other"}) {
      auto [rc, out] =
          run_command("timeout 30 " + std::string(TARN_BINARY) + " topics --create --topic " +
                      topic + " --bootstrap-server " + bootstrap(tarn.port()));
      ASSERT_EQ(rc, 0) << out;
    }
    protocol::create_acls_request create;
    create.creations = {creation(topic_type, "granted", literal, op_read),
                        creation(topic_type, "granted", literal, op_write),
                        creation(group_type, "gok", literal, op_read),
                        // a prefix ACL of another principal: no say for User:ANONYMOUS
                        creation(topic_type, "oth", prefixed, op_all, "User:alice")};
    auto created = c.call<protocol::create_acls_response>(create, 3);
    ASSERT_TRUE(created);
    ASSERT_EQ(created->results.size(), 4u);
    for (const auto& r : created->results) {
      EXPECT_EQ(r.error_code, 0) << r.error_message.value_or("");
      EXPECT_FALSE(r.error_message.has_value());
    }
    // Creating an existing ACL again succeeds and adds nothing.
    protocol::create_acls_request again;
    again.creations = {creation(group_type, "gok", literal, op_read)};
    auto twice = c.call<protocol::create_acls_response>(again, 2);
    ASSERT_TRUE(twice);
    EXPECT_EQ(twice->results.at(0).error_code, 0);
    auto listed = c.call<protocol::describe_acls_response>(describe_all(), 3);
    ASSERT_TRUE(listed);
    EXPECT_EQ(listed->error_code, 0);
    EXPECT_EQ(acl_lines(*listed.body),
              (std::vector<std::string>{
                  "2:granted:3 User:ANONYMOUS * 3 3", "2:granted:3 User:ANONYMOUS * 4 3",
                  "2:oth:4 User:alice * 2 3", "3:gok:3 User:ANONYMOUS * 3 3"}));
    ASSERT_TRUE(tarn.stop());
  }

  // Phase 2: no super user; the ACLs come back from the metadata log.
  broker_process tarn(authorizer_args(false), data);
  ASSERT_NE(tarn.port(), 0) << tarn.output();
  EXPECT_NE(tarn.output().find("loaded 4 ACL(s)"), std::string::npos) << tarn.output();
  auto [rc, out] = run_command("timeout 60 /usr/bin/python3 " + std::string(TARN_SOURCE_DIR) +
                               "/tests/python/acl_clients.py " + bootstrap(tarn.port()) +
                               " granted other gok gno");
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("produce granted ok\n"), std::string::npos) << out;
  EXPECT_NE(out.find("produce other TOPIC_AUTHORIZATION_FAILED\n"), std::string::npos) << out;
  EXPECT_NE(out.find("consume granted gok 1\n"), std::string::npos) << out;
  EXPECT_NE(out.find("consume granted gno GROUP_AUTHORIZATION_FAILED\n"), std::string::npos) << out;
  EXPECT_NE(out.find("topics granted\n"), std::string::npos) << out;

  kafka_conn c(tarn.port(), nullptr);
  ASSERT_TRUE(c.connected());
  EXPECT_EQ(metadata_topic_error(c, "other"), code(error_code::topic_authorization_failed));
  // not knowing whether it exists: a missing topic without DESCRIBE answers the same
  EXPECT_EQ(metadata_topic_error(c, "missing"), code(error_code::topic_authorization_failed));
  EXPECT_EQ(metadata_topic_error(c, "granted"), 0);
  EXPECT_EQ(metadata_all_topics(c), (std::vector<std::string>{"granted"}));
  // No DESCRIBE/ALTER on the cluster: the ACL APIs refuse.
  auto described = c.call<protocol::describe_acls_response>(describe_all(), 1);
  ASSERT_TRUE(described);
  EXPECT_EQ(described->error_code, code(error_code::cluster_authorization_failed));
  EXPECT_TRUE(described->resources.empty());
  protocol::create_acls_request create;
  create.creations = {creation(topic_type, "other", literal, op_write)};
  auto refused = c.call<protocol::create_acls_response>(create, 3);
  ASSERT_TRUE(refused);
  ASSERT_EQ(refused->results.size(), 1u);
  EXPECT_EQ(refused->results[0].error_code, code(error_code::cluster_authorization_failed));

  // Transactional ids without ACLs; an idempotent producer passes through WRITE on a topic
  // (KIP-679); a refused group is listed first by DescribeGroups, as Kafka does.
  protocol::find_coordinator_request fc;
  fc.key_type = 1;
  fc.coordinator_keys = {"txn"};
  auto found = c.call<protocol::find_coordinator_response>(fc, 4);
  ASSERT_TRUE(found);
  ASSERT_EQ(found->coordinators.size(), 1u);
  EXPECT_EQ(found->coordinators[0].error_code,
            code(error_code::transactional_id_authorization_failed));
  protocol::init_producer_id_request init;
  init.transactional_id = "txn";
  init.transaction_timeout_ms = 60000;
  auto txn_init = c.call<protocol::init_producer_id_response>(init, 4);
  ASSERT_TRUE(txn_init);
  EXPECT_EQ(txn_init->error_code, code(error_code::transactional_id_authorization_failed));
  init.transactional_id = std::nullopt;
  auto idempotent = c.call<protocol::init_producer_id_response>(init, 4);
  ASSERT_TRUE(idempotent);
  EXPECT_EQ(idempotent->error_code, 0);
  EXPECT_GE(idempotent->producer_id, 0);
  protocol::describe_groups_request dg;
  dg.groups = {"gok", "gno"};
  dg.include_authorized_operations = true;
  auto groups = c.call<protocol::describe_groups_response>(dg, 5);
  ASSERT_TRUE(groups);
  ASSERT_EQ(groups->groups.size(), 2u);
  EXPECT_EQ(groups->groups[0].group_id, "gno");
  EXPECT_EQ(groups->groups[0].error_code, code(error_code::group_authorization_failed));
  EXPECT_EQ(groups->groups[1].group_id, "gok");
  EXPECT_EQ(groups->groups[1].error_code, 0);
  EXPECT_EQ(groups->groups[1].authorized_operations, (1 << 3) | (1 << 8));  // READ, DESCRIBE

  // A Produce straight to the topic (a client would have stopped at Metadata): refused, nothing
  // appended; the one it may write takes the record.
  raw_client raw(tarn.port());
  const auto batch = value_batch("v");
  EXPECT_EQ(produce_one(raw, 1, "other", 0, batch).error_code,
            code(error_code::topic_authorization_failed));
  EXPECT_EQ(produce_one(raw, 2, "granted", 0, batch).error_code, 0);
  const std::string log_line =
      "Principal = User:ANONYMOUS is Denied operation = WRITE from host = 127.0.0.1 on resource "
      "= Topic:LITERAL:other for request = Produce with resourceRefCount = 1 based on rule "
      "DefaultDeny (kafka.authorizer.logger)";
  // The broker wrote the line before it answered; the test's reader thread may not have drained
  // the pipe yet.
  EXPECT_TRUE(tarn.process().wait_for_output(log_line, std::chrono::seconds(5))) << tarn.output();
}

TEST(acl, acl_apis_answer_kafkas_errors) {
  {
    // No authorizer: SECURITY_DISABLED, as Kafka.
    broker_process tarn;
    ASSERT_NE(tarn.port(), 0) << tarn.output();
    kafka_conn c(tarn.port(), nullptr);
    auto d = c.call<protocol::describe_acls_response>(describe_all(), 2);
    ASSERT_TRUE(d);
    EXPECT_EQ(d->error_code, code(error_code::security_disabled));
    EXPECT_EQ(d->error_message.value_or(""), "No Authorizer is configured on the broker");
    protocol::create_acls_request create;
    create.creations = {creation(topic_type, "t", literal, op_read)};
    auto cr = c.call<protocol::create_acls_response>(create, 1);
    ASSERT_TRUE(cr);
    ASSERT_EQ(cr->results.size(), 1u);
    EXPECT_EQ(cr->results[0].error_code, code(error_code::security_disabled));
    EXPECT_EQ(cr->results[0].error_message.value_or(""), "No Authorizer is configured.");
    protocol::delete_acls_request del;
    auto& f = del.filters.emplace_back();
    f.resource_type_filter = any_type;
    f.resource_name_filter = std::nullopt;
    f.pattern_type_filter = any_pattern;
    f.principal_filter = std::nullopt;
    f.host_filter = std::nullopt;
    f.operation = op_any;
    f.permission_type = permission_any;
    auto dr = c.call<protocol::delete_acls_response>(del, 3);
    ASSERT_TRUE(dr);
    ASSERT_EQ(dr->filter_results.size(), 1u);
    EXPECT_EQ(dr->filter_results[0].error_code, code(error_code::security_disabled));
    ASSERT_TRUE(tarn.stop());
  }
  broker_process tarn(authorizer_args(true));
  ASSERT_NE(tarn.port(), 0) << tarn.output();
  kafka_conn c(tarn.port(), nullptr);
  protocol::create_acls_request create;
  auto bad_type = creation(any_type, "t", literal, op_read);
  auto bad_cluster = creation(cluster_type, "my-cluster", literal, op_create);
  auto empty_name = creation(topic_type, "", literal, op_read);
  auto bad_op = creation(topic_type, "t", literal, op_any);
  auto no_colon = creation(topic_type, "t", literal, op_read, "alice");
  auto good = creation(topic_type, "t", prefixed, op_read, "User:bob");
  create.creations = {bad_type, bad_cluster, empty_name, bad_op, no_colon, good};
  auto cr = c.call<protocol::create_acls_response>(create, 3);
  ASSERT_TRUE(cr);
  ASSERT_EQ(cr->results.size(), 6u);
  const std::vector<std::string> messages = {
      "Invalid resourceType ANY", "The only valid name for the CLUSTER resource is kafka-cluster",
      "Invalid empty resource name", "Invalid operation ANY",
      "Could not parse principal from `alice` (no colon is present separating the principal "
      "type from the principal name)"};
  for (size_t i = 0; i < messages.size(); ++i) {
    EXPECT_EQ(cr->results[i].error_code, code(error_code::invalid_request)) << i;
    EXPECT_EQ(cr->results[i].error_message.value_or(""), messages[i]) << i;
  }
  EXPECT_EQ(cr->results[5].error_code, 0);

  // DeleteAcls: a filter with an UNKNOWN-free ANY pattern matches the one ACL; two filters
  // matching it both list it.
  protocol::delete_acls_request del;
  for (int i = 0; i < 2; ++i) {
    auto& f = del.filters.emplace_back();
    f.resource_type_filter = topic_type;
    f.resource_name_filter = i == 0 ? std::optional<std::string_view>("t") : std::nullopt;
    f.pattern_type_filter = any_pattern;
    f.principal_filter = "User:bob";
    f.host_filter = std::nullopt;
    f.operation = op_any;
    f.permission_type = permission_any;
  }
  auto dr = c.call<protocol::delete_acls_response>(del, 2);
  ASSERT_TRUE(dr);
  ASSERT_EQ(dr->filter_results.size(), 2u);
  for (const auto& fr : dr->filter_results) {
    EXPECT_EQ(fr.error_code, 0);
    ASSERT_EQ(fr.matching_acls.size(), 1u);
    EXPECT_EQ(fr.matching_acls[0].resource_name, "t");
    EXPECT_EQ(fr.matching_acls[0].pattern_type, prefixed);
    EXPECT_EQ(fr.matching_acls[0].principal, "User:bob");
  }
  auto left = c.call<protocol::describe_acls_response>(describe_all(), 3);
  ASSERT_TRUE(left);
  EXPECT_TRUE(left->resources.empty());

  // An UNKNOWN code fails Kafka's request parsing: the connection is closed.
  protocol::describe_acls_request unknown = describe_all();
  unknown.operation = 0;
  c.send(unknown, 3);
  EXPECT_TRUE(c.raw().wait_closed(10s));
}

// allow.everyone.if.no.acl.found: resources without any ACL stay open, those with ACLs follow
// them; the admin APIs answer Kafka's codes (CreateTopics "Authorization failed.", DeleteTopics
// a describable topic by name, DescribeConfigs per resource type, after the described ones).
TEST(acl, admin_apis_follow_the_acls_and_allow_everyone_if_no_acl_found) {
  std::vector<std::string> args = authorizer_args(false);
  args.insert(args.end(), {"--override", "allow.everyone.if.no.acl.found=true"});
  broker_process tarn(args);
  ASSERT_NE(tarn.port(), 0) << tarn.output();
  kafka_conn c(tarn.port(), nullptr);
  auto create_topic = [&](std::string_view name) {
    protocol::create_topics_request req;
    auto& t = req.topics.emplace_back();
    t.name = name;
    t.num_partitions = 1;
    t.replication_factor = 1;
    auto r = c.call<protocol::create_topics_response>(req, 7);
    EXPECT_TRUE(r && r->topics.size() == 1);
    return r && r->topics.size() == 1
               ? std::make_pair(r->topics[0].error_code,
                                std::string(r->topics[0].error_message.value_or("")))
               : std::make_pair(int16_t{-1}, std::string());
  };
  // Nothing has ACLs yet: everything is open, the ACLs themselves included.
  EXPECT_EQ(create_topic("t").first, 0);
  protocol::create_acls_request acls;
  acls.creations = {creation(topic_type, "t", literal, 8 /* DESCRIBE */),
                    creation(topic_type, "new", literal, op_create, "User:alice"),
                    creation(cluster_type, "kafka-cluster", literal, 7 /* ALTER */, "User:alice")};
  auto created = c.call<protocol::create_acls_response>(acls, 3);
  ASSERT_TRUE(created);
  for (const auto& r : created->results) EXPECT_EQ(r.error_code, 0);

  EXPECT_EQ(create_topic("new"), std::make_pair(code(error_code::topic_authorization_failed),
                                                std::string("Authorization failed.")));
  EXPECT_EQ(create_topic("open").first, 0);  // no ACL on the topic: open

  protocol::delete_topics_request del;
  del.topic_names = {"t", "open"};
  auto deleted = c.call<protocol::delete_topics_response>(del, 5);
  ASSERT_TRUE(deleted);
  ASSERT_EQ(deleted->responses.size(), 2u);
  EXPECT_EQ(deleted->responses[0].name.value_or(""), "t");
  EXPECT_EQ(deleted->responses[0].error_code, code(error_code::topic_authorization_failed));
  EXPECT_EQ(deleted->responses[1].error_code, 0);

  protocol::describe_configs_request dc;
  dc.resources.push_back({2, "t", std::nullopt});
  dc.resources.push_back({4, "1", std::nullopt});
  auto configs = c.call<protocol::describe_configs_response>(dc, 4);
  ASSERT_TRUE(configs);
  ASSERT_EQ(configs->results.size(), 2u);
  EXPECT_EQ(configs->results[0].error_code, code(error_code::topic_authorization_failed));
  EXPECT_EQ(configs->results[1].error_code, code(error_code::cluster_authorization_failed));

  // The cluster has an ACL now (alice's): the ACL APIs are closed to User:ANONYMOUS.
  auto refused = c.call<protocol::create_acls_response>(acls, 3);
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->results.at(0).error_code, code(error_code::cluster_authorization_failed));

  // So are ElectLeaders and AlterPartitionReassignments, refused at the top and on each asked
  // partition, as Kafka's getErrorResponse answers them.
  const int16_t denied = code(error_code::cluster_authorization_failed);
  protocol::elect_leaders_request elect;
  elect.election_type = 0;
  elect.topic_partitions.emplace().push_back({"open", {0, 1}});
  auto elected = c.call<protocol::elect_leaders_response>(elect, 2);
  ASSERT_TRUE(elected);
  EXPECT_EQ(elected->error_code, denied);
  ASSERT_EQ(elected->replica_election_results.size(), 1u);
  EXPECT_EQ(elected->replica_election_results[0].topic, "open");
  ASSERT_EQ(elected->replica_election_results[0].partition_result.size(), 2u);
  for (const auto& p : elected->replica_election_results[0].partition_result) {
    EXPECT_EQ(p.error_code, denied);
  }
  protocol::alter_partition_reassignments_request move;
  auto& topic = move.topics.emplace_back();
  topic.name = "open";
  topic.partitions.push_back({0, std::vector<int32_t>{1}});
  auto moved = c.call<protocol::alter_partition_reassignments_response>(move, 0);
  ASSERT_TRUE(moved);
  EXPECT_EQ(moved->error_code, denied);
  ASSERT_EQ(moved->responses.size(), 1u);
  ASSERT_EQ(moved->responses[0].partitions.size(), 1u);
  EXPECT_EQ(moved->responses[0].partitions[0].partition_index, 0);
  EXPECT_EQ(moved->responses[0].partitions[0].error_code, denied);
}

// A regex subscription (ConsumerGroupHeartbeat) resolves only to the matching topics the member's
// principal may DESCRIBE, as Kafka's group coordinator filters them.
TEST(acl, a_regex_subscription_gets_only_the_topics_it_may_describe) {
  std::vector<std::string> args = authorizer_args(false);
  args.insert(args.end(), {"--override", "allow.everyone.if.no.acl.found=true"});
  broker_process tarn(args);
  ASSERT_NE(tarn.port(), 0) << tarn.output();
  kafka_conn c(tarn.port(), nullptr);
  protocol::create_topics_request topics;
  for (std::string_view name : {"orders-open", "orders-secret"}) {
    auto& t = topics.topics.emplace_back();
    t.name = name;
    t.num_partitions = 1;
    t.replication_factor = 1;
  }
  auto created = c.call<protocol::create_topics_response>(topics, 7);
  ASSERT_TRUE(created);
  ASSERT_EQ(created->topics.size(), 2u);
  const auto open_id = created->topics[0].topic_id;
  // orders-secret gets an ACL (for alice only): User:ANONYMOUS may no longer describe it.
  protocol::create_acls_request acls;
  acls.creations = {creation(topic_type, "orders-secret", literal, 8 /* DESCRIBE */, "User:alice")};
  auto made = c.call<protocol::create_acls_response>(acls, 3);
  ASSERT_TRUE(made);
  ASSERT_EQ(made->results.at(0).error_code, 0);

  protocol::consumer_group_heartbeat_request join;
  join.group_id = "regex-group";
  join.member_id = "aaaaaaaaaaaaaaaaaaaaaa";
  join.rebalance_timeout_ms = 30000;
  join.subscribed_topic_regex = "orders-.*";
  join.topic_partitions.emplace();
  auto r = c.call<protocol::consumer_group_heartbeat_response>(join, 1);
  ASSERT_TRUE(r);
  ASSERT_EQ(r->error_code, 0);
  ASSERT_TRUE(r->assignment);
  ASSERT_EQ(r->assignment->topic_partitions.size(), 1u);
  EXPECT_EQ(r->assignment->topic_partitions[0].topic_id, open_id) << "orders-open only";
}

// super.users and allow.everyone.if.no.acl.found are the authorizer's, not KafkaConfig's: Kafka's
// DescribeConfigs of a broker lists them only when set, as sensitive keys of unknown type.
TEST(acl, describe_configs_shows_the_authorizer_keys_as_kafka_does) {
  broker_process tarn(authorizer_args(true));
  ASSERT_NE(tarn.port(), 0) << tarn.output();
  kafka_conn c(tarn.port(), nullptr);
  protocol::describe_configs_request dc;
  dc.resources.push_back({4, "1", std::nullopt});
  dc.include_synonyms = true;
  auto configs = c.call<protocol::describe_configs_response>(dc, 4);
  ASSERT_TRUE(configs);
  ASSERT_EQ(configs->results.size(), 1u);
  ASSERT_EQ(configs->results[0].error_code, 0);
  bool super_users = false, allow_everyone = false;
  for (const auto& e : configs->results[0].configs) {
    if (e.name == "allow.everyone.if.no.acl.found") allow_everyone = true;
    if (e.name != "super.users") continue;
    super_users = true;
    EXPECT_TRUE(e.is_sensitive);
    EXPECT_FALSE(e.value.has_value());
    EXPECT_EQ(e.config_source, 4) << "STATIC_BROKER_CONFIG";
    EXPECT_EQ(e.config_type, 0) << "UNKNOWN";
  }
  EXPECT_TRUE(super_users) << "set in the broker's configuration";
  EXPECT_FALSE(allow_everyone) << "not set: not listed";
}

TEST(acl, refuses_an_authorizer_it_does_not_have) {
  auto p = run_tarn({"serve", "--override", "listeners=PLAINTEXT://127.0.0.1:0", "--override",
                     "authorizer.class.name=kafka.security.authorizer.AclAuthorizer"});
  auto st = p->wait_exit(30s);
  ASSERT_TRUE(st);
  EXPECT_NE(st->code, 0);
  EXPECT_NE(p->output().find("org.apache.kafka.metadata.authorizer.StandardAuthorizer"),
            std::string::npos)
      << p->output();
}

// kafka-acls (AclCommand from the 4.4.0 jars) against a broker: `add` adds three ACLs (the tool
// adds the pair of a --producer, here WRITE/DESCRIBE/CREATE, as separate bindings), `list` lists
// them.
std::pair<int, std::string> kafka_acls(uint16_t port, const std::string& args) {
  return run_command("timeout 120 " + std::string(TARN_SOURCE_DIR) +
                     "/scripts/kafka-ref tool acls --bootstrap-server " + bootstrap(port) + " " +
                     args + " 2>&1");
}
const std::string acls_add =
    "--add --allow-principal User:alice --operation Read --operation Write --topic orders "
    "--resource-pattern-type prefixed --force";
const std::string acls_list = "--list --topic orders --resource-pattern-type prefixed";

// kafka-acls --add, --list, --remove against tarn.
TEST(acl, kafka_acls_tool_adds_lists_and_removes) {
#ifdef TARN_SANITIZED_BUILD
  // Four JVM runs: the handlers they reach are the hand-built tests' above.
  GTEST_SKIP() << "the Java tool's test runs in the release build only";
#endif
  if (kafka_libs().empty()) GTEST_SKIP() << "java or the Kafka 4.4.0 jars are missing";
  broker_process tarn(authorizer_args(true));
  ASSERT_NE(tarn.port(), 0) << tarn.output();
  auto [add_rc, add_out] = kafka_acls(tarn.port(), acls_add);
  ASSERT_EQ(add_rc, 0) << add_out;
  auto [list_rc, tarn_list] = kafka_acls(tarn.port(), acls_list);
  ASSERT_EQ(list_rc, 0) << tarn_list;
  EXPECT_NE(tarn_list.find("(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)"),
            std::string::npos)
      << tarn_list;
  EXPECT_NE(tarn_list.find("ResourcePattern(resourceType=TOPIC, name=orders, "
                           "patternType=PREFIXED)"),
            std::string::npos)
      << tarn_list;
  auto [rm_rc, rm_out] = kafka_acls(tarn.port(),
                                    "--remove --allow-principal User:alice --operation "
                                    "Read --topic orders --resource-pattern-type prefixed "
                                    "--force");
  ASSERT_EQ(rm_rc, 0) << rm_out;
  auto [after_rc, after] = kafka_acls(tarn.port(), acls_list);
  ASSERT_EQ(after_rc, 0) << after;
  EXPECT_EQ(after.find("operation=READ"), std::string::npos) << after;
  EXPECT_NE(after.find("operation=WRITE"), std::string::npos) << after;
}

// kafka-acls --add and --list print against tarn what they print against Kafka 4.4.0 for the
// same ACLs (make interop).
TEST(acl, kafka_acls_tool_prints_what_it_prints_against_kafka) {
  if (kafka_libs().empty()) GTEST_SKIP() << "java or the Kafka 4.4.0 jars are missing";
  broker_process tarn(authorizer_args(true));
  ASSERT_NE(tarn.port(), 0) << tarn.output();
  auto [add_rc, add_out] = kafka_acls(tarn.port(), acls_add);
  ASSERT_EQ(add_rc, 0) << add_out;
  auto [list_rc, tarn_list] = kafka_acls(tarn.port(), acls_list);
  ASSERT_EQ(list_rc, 0) << tarn_list;

  ASSERT_EQ(kafka_broker::instance().start(" --property authorizer.class.name=" + authorizer_class +
                                           " --property super.users=User:ANONYMOUS"),
            "");
  const uint16_t kafka = kafka_broker::instance().port();
  // The ACLs of one resource come in the order of Kafka's hash set: compared as sorted lines.
  auto sorted_lines = [](const std::string& s) {
    std::istringstream in(s);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    std::sort(lines.begin(), lines.end());
    return lines;
  };
  auto [k_add_rc, k_add] = kafka_acls(kafka, acls_add);
  ASSERT_EQ(k_add_rc, 0) << k_add;
  EXPECT_EQ(sorted_lines(add_out), sorted_lines(k_add)) << "tarn:\n"
                                                        << add_out << "kafka:\n"
                                                        << k_add;
  auto [k_list_rc, kafka_list] = kafka_acls(kafka, acls_list);
  ASSERT_EQ(k_list_rc, 0) << kafka_list;
  EXPECT_EQ(sorted_lines(tarn_list), sorted_lines(kafka_list)) << "tarn:\n"
                                                               << tarn_list << "kafka:\n"
                                                               << kafka_list;
}

}  // namespace
}  // namespace tarn::test
