// Decodes the golden messages Kafka's own classes wrote (tests/java/GoldenMessages.java) for
// every API and version tarn parses, re-encodes them and demands the same bytes. Also cuts each
// golden message at every byte position: the decoder must report an error, never crash.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <type_traits>
#include <vector>

#include "protocol/headers.h"
#include "protocol/messages.h"

namespace tarn::protocol {
namespace {

std::vector<uint8_t> read_golden(const std::string& name) {
  std::string path = std::string(TARN_PROTOCOL_GOLDEN_DIR) + "/" + name;
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "missing golden file " << path;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string golden_name(std::string_view message, int16_t version, bool populated) {
  std::string name(message);
  name += "_v" + std::to_string(version);
  if (!populated) name += "_default";
  return name + ".bin";
}

// Decode, check everything was consumed, re-encode, compare; returns the decoded message.
template <typename M>
M round_trip(const std::vector<uint8_t>& bytes, int16_t version, const std::string& what) {
  reader r(bytes);
  auto decoded = M::decode(r, version);
  EXPECT_TRUE(decoded.has_value())
      << what << ": " << describe(decoded.error().code) << " at " << decoded.error().offset;
  if (!decoded) return M{};
  EXPECT_EQ(r.remaining(), 0u) << what;
  std::vector<uint8_t> out;
  writer w(out);
  decoded->encode(w, version);
  EXPECT_EQ(out, bytes) << what << ": re-encoding differs";
  EXPECT_EQ(decoded->encoded_size(version), bytes.size()) << what;
  return std::move(decoded).value();
}

// Every strict prefix of a golden message must fail cleanly (a message never ends early).
template <typename M>
void check_truncations(const std::vector<uint8_t>& bytes, int16_t version,
                       const std::string& what) {
  for (size_t n = 0; n < bytes.size(); ++n) {
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + static_cast<ptrdiff_t>(n));
    reader r(cut);
    auto decoded = M::decode(r, version);
    EXPECT_FALSE(decoded.has_value()) << what << " cut at " << n;
  }
}

template <typename M>
void check_message(int16_t version, int& files) {
  for (bool populated : {true, false}) {
    std::string name = golden_name(M::type_name, version, populated);
    std::vector<uint8_t> bytes = read_golden(name);
    round_trip<M>(bytes, version, name);
    check_truncations<M>(bytes, version, name);
    ++files;
  }
}

TEST(golden, every_api_every_version_round_trips_byte_for_byte) {
  int files = 0;
  for (const api_info& api : all_apis) {
    bool known = visit_api(api.api_key, [&]<typename Req, typename Resp>() {
      for (int16_t v = api.min_version; v <= api.max_version; ++v) {
        check_message<Req>(v, files);
        check_message<Resp>(v, files);
      }
    });
    EXPECT_TRUE(known) << api.name;
  }
  for (int16_t v = request_header::min_version; v <= request_header::max_version; ++v) {
    check_message<request_header>(v, files);
  }
  for (int16_t v = response_header::min_version; v <= response_header::max_version; ++v) {
    check_message<response_header>(v, files);
  }
  int versions = 0;
  for (const api_info& api : all_apis) versions += api.max_version - api.min_version + 1;
  // the ranges of the task, plus FindCoordinator 0-6, plus the consumer-group APIs (OffsetCommit
  // 2-10, OffsetFetch 1-10, JoinGroup 0-9, Heartbeat 0-4, LeaveGroup 0-5, SyncGroup 0-5,
  // DescribeGroups 0-6, ListGroups 0-5, DeleteGroups 0-3, OffsetDelete 0,
  // ConsumerGroupHeartbeat 0-1, ConsumerGroupDescribe 0-1), plus DeleteRecords 0-2, plus the
  // describe/inspect admin APIs (OffsetForLeaderEpoch 2-4, DescribeLogDirs 1-5, ElectLeaders 0-2,
  // AlterPartitionReassignments 0-1, ListPartitionReassignments 0, DescribeCluster 0-2,
  // DescribeTopicPartitions 0), plus CreatePartitions 0-3, AlterConfigs 0-2, plus the quota APIs
  // (DescribeClientQuotas 0-1, AlterClientQuotas 0-1, DescribeUserScramCredentials 0), plus
  // UpdateFeatures 0-2, plus the transaction APIs (AddPartitionsToTxn 0-5, AddOffsetsToTxn 0-4,
  // EndTxn 0-5, TxnOffsetCommit 0-6), plus DescribeQuorum 0-2, plus the transaction admin APIs
  // (WriteTxnMarkers 1-2, DescribeProducers 0, DescribeTransactions 0, ListTransactions 0-2),
  // plus the ACL APIs (DescribeAcls 1-3, CreateAcls 1-3, DeleteAcls 1-3), plus the security APIs
  // (SaslHandshake 0-1, SaslAuthenticate 0-2, AlterUserScramCredentials 0), plus the share-group
  // APIs (ShareGroupHeartbeat 1, ShareGroupDescribe 1, ShareFetch 1-2, ShareAcknowledge 1-2,
  // DescribeShareGroupOffsets 0-1, AlterShareGroupOffsets 0, DeleteShareGroupOffsets 0), plus
  // the share-state RPCs (InitializeShareGroupState 0, ReadShareGroupState 0,
  // WriteShareGroupState 0-1, DeleteShareGroupState 0, ReadShareGroupStateSummary 0-1)
  EXPECT_EQ(versions, 11 + 15 + 11 + 14 + 6 + 6 + 6 + 6 + 4 + 2 + 7 + 9 + 10 + 10 + 5 + 6 + 6 + 7 +
                          6 + 4 + 1 + 2 + 2 + 3 + 3 + 5 + 3 + 2 + 1 + 3 + 1 + 4 + 3 + 2 + 2 + 1 +
                          3 + 6 + 5 + 6 + 7 + 3 + 2 + 1 + 1 + 3 + 3 + 3 + 3 + 2 + 3 + 1 + 1 + 1 +
                          2 + 2 + 2 + 1 + 1 + 1 + 1 + 2 + 1 + 2);
  EXPECT_EQ(files, 2 * 2 * versions + 2 * (2 + 2));
}

// Field values GoldenMessages.java assigned (a counter bumped for every value it builds, arrays
// and structs included, in declaration order), read back.
TEST(golden, api_versions_response_fields) {
  auto bytes = read_golden("api_versions_response_v3.bin");
  auto m = round_trip<api_versions_response>(bytes, 3, "api_versions_response v3");
  EXPECT_EQ(m.error_code, 1);
  ASSERT_EQ(m.api_keys.size(), 2u);
  EXPECT_EQ(m.api_keys[0].api_key, 4);  // counter 2 is the array, 3 the element
  EXPECT_EQ(m.api_keys[0].max_version, 6);
  EXPECT_EQ(m.api_keys[1].api_key, 8);
  EXPECT_EQ(m.throttle_time_ms, 1000 + 11);
  ASSERT_EQ(m.supported_features.size(), 2u);
  EXPECT_EQ(m.supported_features[0].name, "s14");
  EXPECT_EQ(m.finalized_features_epoch, 1'000'000'000'000 + 21);
  EXPECT_TRUE(m.zk_migration_ready);
}

TEST(golden, produce_request_borrows_records) {
  auto bytes = read_golden("produce_request_v9.bin");
  reader r(bytes);
  auto m = produce_request::decode(r, 9);
  ASSERT_TRUE(m.has_value());
  ASSERT_TRUE(m->transactional_id.has_value());
  EXPECT_EQ(*m->transactional_id, "s1");
  EXPECT_EQ(m->acks, 2);
  ASSERT_EQ(m->topic_data.size(), 2u);
  EXPECT_EQ(m->topic_data[0].name, "s6");
  const auto& records = m->topic_data[0].partition_data[0].records;
  ASSERT_TRUE(records.has_value());
  // Zero copy: the records view points into the request buffer.
  EXPECT_GE(records->data(), bytes.data());
  EXPECT_LE(records->data() + records->size(), bytes.data() + bytes.size());
  EXPECT_EQ((*records)[16], 2);  // record batch magic
}

TEST(golden, metadata_response_v12_fields) {
  auto bytes = read_golden("metadata_response_v12.bin");
  auto m = round_trip<metadata_response>(bytes, 12, "metadata_response v12");
  ASSERT_EQ(m.brokers.size(), 2u);
  EXPECT_EQ(m.brokers[0].host.substr(0, 1), "s");
  ASSERT_EQ(m.topics.size(), 2u);
  ASSERT_TRUE(m.topics[0].name.has_value());
  EXPECT_FALSE(m.topics[0].topic_id.is_zero());
  ASSERT_EQ(m.topics[0].partitions.size(), 2u);
  EXPECT_EQ(m.topics[0].partitions[0].replica_nodes.size(), 2u);
}

// A nullable struct: an int8 marker (-1 null, 1 present) before the struct.
TEST(golden, consumer_group_heartbeat_response_nullable_assignment) {
  auto bytes = read_golden("consumer_group_heartbeat_response_v1.bin");
  auto m = round_trip<consumer_group_heartbeat_response>(bytes, 1, "v1");
  ASSERT_TRUE(m.member_id.has_value());
  EXPECT_EQ(*m.member_id, "s4");
  EXPECT_EQ(m.heartbeat_interval_ms, 1000 + 6);
  ASSERT_TRUE(m.assignment.has_value());
  ASSERT_EQ(m.assignment->topic_partitions.size(), 2u);
  EXPECT_FALSE(m.assignment->topic_partitions[0].topic_id.is_zero());
  EXPECT_EQ(m.assignment->topic_partitions[0].partitions.size(), 2u);

  auto empty = read_golden("consumer_group_heartbeat_response_v1_default.bin");
  auto d = round_trip<consumer_group_heartbeat_response>(empty, 1, "v1 default");
  EXPECT_FALSE(d.assignment.has_value());
  EXPECT_EQ(empty[empty.size() - 2], 0xff);  // the null marker, then the tagged-field count
}

// Assignment and TargetAssignment share one struct type (Kafka's commonStructs).
TEST(golden, consumer_group_describe_response_shared_struct) {
  using member = consumer_group_describe_response::member;
  static_assert(std::is_same_v<decltype(member::assignment), decltype(member::target_assignment)>);
  auto bytes = read_golden("consumer_group_describe_response_v1.bin");
  auto m = round_trip<consumer_group_describe_response>(bytes, 1, "v1");
  ASSERT_EQ(m.groups.size(), 2u);
  ASSERT_EQ(m.groups[0].members.size(), 2u);
  const member& first = m.groups[0].members[0];
  ASSERT_EQ(first.assignment.topic_partitions.size(), 2u);
  ASSERT_EQ(first.target_assignment.topic_partitions.size(), 2u);
  EXPECT_NE(first.assignment.topic_partitions[0].topic_name,
            first.target_assignment.topic_partitions[0].topic_name);
  EXPECT_NE(first.member_type, -1);
}

TEST(golden, request_header_v2_and_header_rules) {
  auto bytes = read_golden("request_header_v2.bin");
  reader r(bytes);
  auto h = decode_request_header(r);
  ASSERT_TRUE(h.has_value());
  EXPECT_EQ(h->request_api_key, 1);
  EXPECT_EQ(h->request_api_version, 2);
  EXPECT_EQ(h->correlation_id, 1003);
  ASSERT_TRUE(h->client_id.has_value());
  EXPECT_EQ(*h->client_id, "s4");

  EXPECT_EQ(request_header_version(18, 2), 1);
  EXPECT_EQ(request_header_version(18, 3), 2);
  EXPECT_EQ(request_header_version(18, 7), 2);   // too new, still flexible (KIP-511)
  EXPECT_EQ(response_header_version(18, 4), 0);  // ApiVersions: always header v0
  EXPECT_EQ(request_header_version(0, 8), 1);
  EXPECT_EQ(request_header_version(0, 9), 2);
  EXPECT_EQ(response_header_version(0, 9), 1);
  EXPECT_EQ(response_header_version(1, 11), 0);
  EXPECT_EQ(response_header_version(1, 12), 1);
  EXPECT_EQ(request_header_version(9999, 3), 1);
}

TEST(tables, api_and_error_tables) {
  const api_info* produce = find_api(0);
  ASSERT_NE(produce, nullptr);
  EXPECT_EQ(produce->min_version, 3);
  EXPECT_EQ(produce->max_version, 13);
  EXPECT_EQ(produce->flexible_from, 9);
  EXPECT_EQ(find_api(18)->max_version, 5);
  EXPECT_EQ(find_api(8)->min_version, 2);  // OffsetCommit: Kafka 4.0 removed 0-1
  EXPECT_EQ(find_api(4), nullptr);         // LeaderAndIsr: removed in Kafka 4.0
  EXPECT_EQ(describe(error_code::not_leader_or_follower).name, "NOT_LEADER_OR_FOLLOWER");
  EXPECT_TRUE(is_retriable(error_code::not_leader_or_follower));
  EXPECT_FALSE(is_retriable(error_code::unsupported_version));
  EXPECT_EQ(static_cast<int16_t>(error_code::unsupported_version), 35);
  EXPECT_EQ(find_error(-1)->name, "UNKNOWN_SERVER_ERROR");
  EXPECT_EQ(find_error(20000), nullptr);
}

}  // namespace
}  // namespace tarn::protocol
