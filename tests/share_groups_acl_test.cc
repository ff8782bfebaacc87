// Authorization on the share-group APIs (KIP-932) against `tarn serve` with the StandardAuthorizer
// and allow.everyone.if.no.acl.found=true, hand-built requests from User:ANONYMOUS (every
// PLAINTEXT connection): resources without ACLs are open; group "gno" and topic "hidden" have an
// ACL of another principal only (refused), group "gread" allows ANONYMOUS only READ (and so
// DESCRIBE), topic "secret" only DESCRIBE (so a member may subscribe to it and is assigned it, but
// may not read it). As Kafka 4.4's KafkaApis answers:
//   - ShareGroupHeartbeat: GROUP_AUTHORIZATION_FAILED, then INVALID_REQUEST for a member id
//     longer than 36, then TOPIC_AUTHORIZATION_FAILED for a subscription to a topic without
//     DESCRIBE;
//   - ShareFetch/ShareAcknowledge: GROUP_AUTHORIZATION_FAILED at the top level; per partition
//     TOPIC_AUTHORIZATION_FAILED for a topic without READ (fetch and acknowledgement errors);
//   - ShareGroupDescribe: refused groups first with GROUP_AUTHORIZATION_FAILED; a group assigning
//     a topic without DESCRIBE is TOPIC_AUTHORIZATION_FAILED without members;
//   - DescribeShareGroupOffsets: GROUP_AUTHORIZATION_FAILED per group, refused named topics after
//     the others with TOPIC_AUTHORIZATION_FAILED and offsets -1, left out of an all-topics answer;
//   - AlterShareGroupOffsets (READ group) and DeleteShareGroupOffsets (DELETE group): top-level
//     GROUP_AUTHORIZATION_FAILED; refused topics (READ) answered first;
//   - DescribeGroups of a share group: Dead, and from v6 GROUP_ID_NOT_FOUND "Group g is not a
//     classic group." (no authorizer involved; Kafka's answer for any non-classic group);
//   - the share-state RPCs (ReadShareGroupStateSummary here): CLUSTER_ACTION on the cluster, else
//     every partition named CLUSTER_AUTHORIZATION_FAILED.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "kafka_conn.h"
#include "produce_util.h"
#include "protocol/error_codes.h"
#include "protocol/messages/alter_share_group_offsets_request.h"
#include "protocol/messages/alter_share_group_offsets_response.h"
#include "protocol/messages/create_acls_request.h"
#include "protocol/messages/create_acls_response.h"
#include "protocol/messages/delete_acls_request.h"
#include "protocol/messages/delete_acls_response.h"
#include "protocol/messages/delete_share_group_offsets_request.h"
#include "protocol/messages/delete_share_group_offsets_response.h"
#include "protocol/messages/describe_groups_request.h"
#include "protocol/messages/describe_groups_response.h"
#include "protocol/messages/describe_share_group_offsets_request.h"
#include "protocol/messages/describe_share_group_offsets_response.h"
#include "protocol/messages/metadata_request.h"
#include "protocol/messages/metadata_response.h"
#include "protocol/messages/read_share_group_state_summary_request.h"
#include "protocol/messages/read_share_group_state_summary_response.h"
#include "protocol/messages/share_acknowledge_request.h"
#include "protocol/messages/share_acknowledge_response.h"
#include "protocol/messages/share_fetch_request.h"
#include "protocol/messages/share_fetch_response.h"
#include "protocol/messages/share_group_describe_request.h"
#include "protocol/messages/share_group_describe_response.h"
#include "protocol/messages/share_group_heartbeat_request.h"
#include "protocol/messages/share_group_heartbeat_response.h"
#include "test_util.h"

namespace tarn::test {
namespace {

using protocol::code;
using protocol::error_code;

constexpr int8_t topic_type = 2, group_type = 3, cluster_type = 4, literal = 3;
constexpr int8_t op_any = 1, op_all = 2, op_read = 3, op_describe = 8, op_cluster_action = 9,
                 allow = 3;
constexpr int8_t any_pattern = 1, permission_any = 1;

protocol::create_acls_request::acl_creation acl(int8_t type, std::string_view name, int8_t op,
                                                std::string_view principal) {
  protocol::create_acls_request::acl_creation c;
  c.resource_type = type;
  c.resource_name = name;
  c.resource_pattern_type = literal;
  c.principal = principal;
  c.host = "*";
  c.operation = op;
  c.permission_type = allow;
  return c;
}

TEST(share_acl, share_apis_check_the_group_and_topic_acls_as_kafka) {
  broker_process broker({"--override",
                         "authorizer.class.name=org.apache.kafka.metadata.authorizer."
                         "StandardAuthorizer",
                         "--override", "allow.everyone.if.no.acl.found=true"});
  ASSERT_NE(broker.port(), 0) << broker.output();
  for (const char* t : {"q", "secret", "hidden"}) ASSERT_EQ(create_topic(broker.port(), t, 1), 0);
  raw_client producer(broker.port());
  for (int i = 0; i < 2; ++i) {
    ASSERT_EQ(produce_one(producer, i + 1, "q", 0, value_batch("v")).error_code, 0);
  }
  kafka_conn c(broker.port(), nullptr);
  protocol::create_acls_request create;
  create.creations = {acl(topic_type, "secret", op_all, "User:alice"),
                      acl(topic_type, "secret", op_describe, "User:ANONYMOUS"),
                      acl(topic_type, "hidden", op_all, "User:alice"),
                      acl(group_type, "gno", op_all, "User:alice"),
                      acl(group_type, "gread", op_read, "User:ANONYMOUS")};
  auto created = c.call<protocol::create_acls_response>(create, 3);
  ASSERT_TRUE(created);
  for (const auto& r : created->results) ASSERT_EQ(r.error_code, 0);

  auto beat = [&](std::string_view group, std::string_view member, int32_t epoch,
                  std::vector<std::string_view> topics) {
    protocol::share_group_heartbeat_request r;
    r.group_id = group;
    r.member_id = member;
    r.member_epoch = epoch;
    if (!topics.empty()) r.subscribed_topic_names = topics;
    return c.call<protocol::share_group_heartbeat_response>(r, 1);
  };
  // ShareGroupHeartbeat: the group first, then DESCRIBE on the subscribed topics.
  EXPECT_EQ(beat("gno", "m1", 0, {"q"})->error_code, code(error_code::group_authorization_failed));
  EXPECT_EQ(beat("g", "m1", 0, {"q", "hidden"})->error_code,
            code(error_code::topic_authorization_failed));
  // A member id longer than a UUID's 36 characters: INVALID_REQUEST, after the group's check and
  // before the topics'.
  const std::string long_id(37, 'm');
  EXPECT_EQ(beat("gno", long_id, 0, {"hidden"})->error_code,
            code(error_code::group_authorization_failed));
  EXPECT_EQ(beat("g", long_id, 0, {"hidden"})->error_code, code(error_code::invalid_request));
  auto joined = beat("g", "m1", 0, {"q", "secret"});
  ASSERT_TRUE(joined);
  ASSERT_EQ(joined->error_code, 0);
  ASSERT_TRUE(joined->assignment.has_value());
  protocol::uuid q_id{}, secret_id{};
  {
    protocol::metadata_request m;
    m.topics.emplace();
    m.topics->emplace_back().name = "q";
    m.topics->emplace_back().name = "secret";  // DESCRIBE is allowed: its id is shown
    auto md = c.call<protocol::metadata_response>(m, 12);
    ASSERT_TRUE(md);
    for (const auto& t : md->topics) {
      ASSERT_EQ(t.error_code, 0);
      (t.name.value_or("") == "q" ? q_id : secret_id) = t.topic_id;
    }
  }
  ASSERT_NE(q_id, protocol::uuid{});
  ASSERT_NE(secret_id, protocol::uuid{});

  // ShareFetch: READ on the group (top level), then on each topic (per partition).
  auto share_fetch = [&](std::string_view group, int32_t epoch,
                         std::vector<int8_t> secret_ack_types) {
    protocol::share_fetch_request f;
    f.group_id = group;
    f.member_id = "m1";
    f.share_session_epoch = epoch;
    f.max_wait_ms = 0;
    f.max_bytes = 1 << 20;
    f.max_records = 10;
    f.batch_size = 10;
    if (epoch == 0) {
      f.topics.emplace_back().topic_id = q_id;
      f.topics.back().partitions.emplace_back().partition_index = 0;
    }
    auto& st = f.topics.emplace_back();
    st.topic_id = secret_id;
    auto& sp = st.partitions.emplace_back();
    sp.partition_index = 0;
    if (!secret_ack_types.empty()) sp.acknowledgement_batches = {{0, 0, secret_ack_types}};
    return c.call<protocol::share_fetch_response>(f, 2);
  };
  auto refused = share_fetch("gno", 0, {});
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->error_code, code(error_code::group_authorization_failed));
  EXPECT_TRUE(refused->responses.empty());
  auto opened = share_fetch("g", 0, {});
  ASSERT_TRUE(opened);
  ASSERT_EQ(opened->error_code, 0);
  std::map<std::string, int16_t> errors;  // "q" / "secret" -> partition error
  for (const auto& t : opened->responses) {
    for (const auto& p : t.partitions) errors[t.topic_id == q_id ? "q" : "secret"] = p.error_code;
  }
  EXPECT_EQ(errors["q"], 0);
  EXPECT_EQ(errors["secret"], code(error_code::topic_authorization_failed));
  // An acknowledgement on the unreadable topic piggybacked on the next fetch.
  auto acked = share_fetch("g", 1, {1});
  ASSERT_TRUE(acked);
  ASSERT_EQ(acked->error_code, 0);
  bool seen = false;
  for (const auto& t : acked->responses) {
    if (t.topic_id != secret_id) continue;
    seen = true;
    EXPECT_EQ(t.partitions.at(0).error_code, code(error_code::topic_authorization_failed));
    EXPECT_EQ(t.partitions.at(0).acknowledge_error_code,
              code(error_code::topic_authorization_failed));
  }
  EXPECT_TRUE(seen);

  // ShareAcknowledge: READ on the group, then on each topic.
  auto acknowledge = [&](std::string_view group, int32_t epoch) {
    protocol::share_acknowledge_request a;
    a.group_id = group;
    a.member_id = "m1";
    a.share_session_epoch = epoch;
    auto& t = a.topics.emplace_back();
    t.topic_id = secret_id;
    auto& p = t.partitions.emplace_back();
    p.partition_index = 0;
    p.acknowledgement_batches = {{0, 0, {1}}};
    return c.call<protocol::share_acknowledge_response>(a, 2);
  };
  EXPECT_EQ(acknowledge("gno", 2)->error_code, code(error_code::group_authorization_failed));
  auto ack = acknowledge("g", 2);
  ASSERT_TRUE(ack);
  EXPECT_EQ(ack->error_code, 0);
  EXPECT_EQ(ack->responses.at(0).partitions.at(0).error_code,
            code(error_code::topic_authorization_failed));

  // ShareGroupDescribe: the refused group first; operations of the described one.
  protocol::share_group_describe_request d;
  std::vector<std::string_view> ids = {"g", "gno"};
  d.group_ids = ids;
  d.include_authorized_operations = true;
  auto described = c.call<protocol::share_group_describe_response>(d, 1);
  ASSERT_TRUE(described);
  ASSERT_EQ(described->groups.size(), 2u);
  EXPECT_EQ(described->groups[0].group_id, "gno");
  EXPECT_EQ(described->groups[0].error_code, code(error_code::group_authorization_failed));
  EXPECT_EQ(described->groups[1].group_id, "g");
  EXPECT_EQ(described->groups[1].error_code, 0);
  EXPECT_EQ(described->groups[1].members.size(), 1u);
  // No ACL on g and allow.everyone.if.no.acl.found: every group operation (READ 3, DELETE 6,
  // DESCRIBE 8, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11).
  EXPECT_EQ(described->groups[1].authorized_operations,
            (1 << 3) | (1 << 6) | (1 << 8) | (1 << 10) | (1 << 11));

  // DescribeShareGroupOffsets: DESCRIBE on the group; a refused named topic after the others.
  protocol::describe_share_group_offsets_request offsets;
  auto& og = offsets.groups.emplace_back();
  og.group_id = "g";
  og.topics.emplace();
  auto& hidden = og.topics->emplace_back();
  hidden.topic_name = "hidden";
  hidden.partitions = {0};
  auto& q = og.topics->emplace_back();
  q.topic_name = "q";
  q.partitions = {0};
  offsets.groups.emplace_back().group_id = "gno";
  auto listed = c.call<protocol::describe_share_group_offsets_response>(offsets, 1);
  ASSERT_TRUE(listed);
  ASSERT_EQ(listed->groups.size(), 2u);
  ASSERT_EQ(listed->groups[0].topics.size(), 2u);
  EXPECT_EQ(listed->groups[0].topics[0].topic_name, "q");
  EXPECT_EQ(listed->groups[0].topics[0].partitions.at(0).error_code, 0);
  EXPECT_EQ(listed->groups[0].topics[0].partitions.at(0).start_offset, 2);
  EXPECT_EQ(listed->groups[0].topics[1].topic_name, "hidden");
  EXPECT_EQ(listed->groups[0].topics[1].topic_id, protocol::uuid{});
  const auto& hp = listed->groups[0].topics[1].partitions.at(0);
  EXPECT_EQ(hp.error_code, code(error_code::topic_authorization_failed));
  EXPECT_EQ(hp.start_offset, -1);
  EXPECT_EQ(hp.lag, -1);
  EXPECT_EQ(listed->groups[1].error_code, code(error_code::group_authorization_failed));

  // AlterShareGroupOffsets: READ on the group (top level); refused topics answered first.
  protocol::alter_share_group_offsets_request alter;
  alter.group_id = "gno";
  auto& aq = alter.topics.emplace_back();
  aq.topic_name = "q";
  aq.partitions.push_back({0, 0});
  auto& as = alter.topics.emplace_back();
  as.topic_name = "secret";
  as.partitions.push_back({0, 0});
  auto alter_refused = c.call<protocol::alter_share_group_offsets_response>(alter, 0);
  ASSERT_TRUE(alter_refused);
  EXPECT_EQ(alter_refused->error_code, code(error_code::group_authorization_failed));
  EXPECT_TRUE(alter_refused->responses.empty());
  alter.group_id = "g2";
  auto altered = c.call<protocol::alter_share_group_offsets_response>(alter, 0);
  ASSERT_TRUE(altered);
  EXPECT_EQ(altered->error_code, 0);
  ASSERT_EQ(altered->responses.size(), 2u);
  EXPECT_EQ(altered->responses[0].topic_name, "secret");
  EXPECT_EQ(altered->responses[0].partitions.at(0).error_code,
            code(error_code::topic_authorization_failed));
  EXPECT_EQ(altered->responses[1].topic_name, "q");
  EXPECT_EQ(altered->responses[1].partitions.at(0).error_code, 0);

  // DeleteShareGroupOffsets: DELETE on the group (READ alone is not enough); READ on the topics.
  protocol::delete_share_group_offsets_request del;
  del.group_id = "gread";
  del.topics.emplace_back().topic_name = "q";
  del.topics.emplace_back().topic_name = "secret";
  auto del_refused = c.call<protocol::delete_share_group_offsets_response>(del, 0);
  ASSERT_TRUE(del_refused);
  EXPECT_EQ(del_refused->error_code, code(error_code::group_authorization_failed));
  del.group_id = "g2";
  auto deleted = c.call<protocol::delete_share_group_offsets_response>(del, 0);
  ASSERT_TRUE(deleted);
  EXPECT_EQ(deleted->error_code, 0);
  ASSERT_EQ(deleted->responses.size(), 2u);
  EXPECT_EQ(deleted->responses[0].topic_name, "secret");
  EXPECT_EQ(deleted->responses[0].error_code, code(error_code::topic_authorization_failed));
  EXPECT_EQ(deleted->responses[1].topic_name, "q");
  EXPECT_EQ(deleted->responses[1].error_code, 0);

  // Once ANONYMOUS may read "secret", the member's fetch starts its share-partition; when its
  // ACLs are gone again, the all-topics offsets leave it out and ShareGroupDescribe hides the
  // group whose member is assigned it.
  protocol::create_acls_request read_secret;
  read_secret.creations = {acl(topic_type, "secret", op_read, "User:ANONYMOUS")};
  ASSERT_EQ(c.call<protocol::create_acls_response>(read_secret, 3)->results.at(0).error_code, 0);
  auto fetched = share_fetch("g", 3, {});
  ASSERT_TRUE(fetched);
  ASSERT_EQ(fetched->error_code, 0);
  auto all_offsets = [&] {
    protocol::describe_share_group_offsets_request r;
    r.groups.emplace_back().group_id = "g";  // Topics null: every share-partition
    auto answer = c.call<protocol::describe_share_group_offsets_response>(r, 1);
    std::vector<std::string> names;
    if (answer) {
      for (const auto& t : answer->groups.at(0).topics) names.emplace_back(t.topic_name);
    }
    std::sort(names.begin(), names.end());  // the answer's order is the topic ids'
    return names;
  };
  EXPECT_EQ(all_offsets(), (std::vector<std::string>{"q", "secret"}));
  protocol::delete_acls_request revoke;
  auto& f = revoke.filters.emplace_back();
  f.resource_type_filter = topic_type;
  f.resource_name_filter = "secret";
  f.pattern_type_filter = any_pattern;
  f.principal_filter = "User:ANONYMOUS";
  f.host_filter = std::nullopt;
  f.operation = op_any;
  f.permission_type = permission_any;
  auto revoked = c.call<protocol::delete_acls_response>(revoke, 3);
  ASSERT_TRUE(revoked);
  ASSERT_EQ(revoked->filter_results.at(0).matching_acls.size(), 2u);  // DESCRIBE and READ
  EXPECT_EQ(all_offsets(), (std::vector<std::string>{"q"}));
  d.group_ids = {"g"};
  d.include_authorized_operations = false;
  auto hidden_group = c.call<protocol::share_group_describe_response>(d, 1);
  ASSERT_TRUE(hidden_group);
  ASSERT_EQ(hidden_group->groups.size(), 1u);
  EXPECT_EQ(hidden_group->groups[0].error_code, code(error_code::topic_authorization_failed));
  EXPECT_EQ(hidden_group->groups[0].error_message.value_or(""),
            "The group has described topic(s) that the client is not authorized to describe.");
  EXPECT_TRUE(hidden_group->groups[0].members.empty());

  // DescribeGroups of a share group, as Kafka answers a group that is not classic.
  protocol::describe_groups_request dg;
  dg.groups = {"g"};
  auto v6 = c.call<protocol::describe_groups_response>(dg, 6);
  ASSERT_TRUE(v6);
  EXPECT_EQ(v6->groups.at(0).error_code, code(error_code::group_id_not_found));
  EXPECT_EQ(v6->groups.at(0).group_state, "Dead");
  EXPECT_EQ(v6->groups.at(0).error_message.value_or(""), "Group g is not a classic group.");
  auto v5 = c.call<protocol::describe_groups_response>(dg, 5);
  ASSERT_TRUE(v5);
  EXPECT_EQ(v5->groups.at(0).error_code, 0);
  EXPECT_EQ(v5->groups.at(0).group_state, "Dead");

  // The share-state RPCs (83-87) are the share coordinator's: CLUSTER_ACTION on the cluster, else
  // every partition named CLUSTER_AUTHORIZATION_FAILED (Kafka's toGlobalErrorResponse). Open here
  // (no ACL on the cluster), refused once only another principal has one.
  protocol::read_share_group_state_summary_request summary;
  summary.group_id = "g";
  auto& st = summary.topics.emplace_back();
  st.topic_id = q_id;
  st.partitions = {{0, 0}, {0, 0}};
  auto open_summary = c.call<protocol::read_share_group_state_summary_response>(summary, 1);
  ASSERT_TRUE(open_summary);
  ASSERT_EQ(open_summary->results.size(), 1u);
  EXPECT_EQ(open_summary->results[0].partitions.at(0).error_code, 0);
  protocol::create_acls_request cluster_acl;
  cluster_acl.creations = {acl(cluster_type, "kafka-cluster", op_cluster_action, "User:alice")};
  auto made = c.call<protocol::create_acls_response>(cluster_acl, 3);
  ASSERT_TRUE(made);
  ASSERT_EQ(made->results.at(0).error_code, 0);
  auto denied = c.call<protocol::read_share_group_state_summary_response>(summary, 1);
  ASSERT_TRUE(denied);
  ASSERT_EQ(denied->results.size(), 1u);
  ASSERT_EQ(denied->results[0].partitions.size(), 2u);  // as named, not merged
  for (const auto& p : denied->results[0].partitions) {
    EXPECT_EQ(p.error_code, code(error_code::cluster_authorization_failed));
    EXPECT_EQ(p.error_message.value_or(""),
              protocol::describe(error_code::cluster_authorization_failed).message);
  }
  broker.stop();
}

}  // namespace
}  // namespace tarn::test
