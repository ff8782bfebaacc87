// The __consumer_offsets records Kafka 4.4.0's group coordinator writes
// (tests/java/OffsetsRecordsGolden.java -> tests/fixtures/offsets-records/), decoded with the
// codecs generated from schema/records/: every key and value decodes, its fields are the ones
// Kafka wrote, it re-encodes to the same bytes, and a record built from scratch encodes to
// Kafka's bytes. The framing is described in docs/groups.md.
#include "protocol/records.h"

#include <gtest/gtest.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace tarn::protocol {
namespace {

constexpr int64_t now = 1'700'000'000'123;
// The two topic ids of the Java program.
constexpr uuid topic_a{{0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0x11, 0x22, 0x33, 0x44,
                        0x55, 0x66, 0x77, 0x88}};
constexpr uuid topic_b{{0x7e, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10, 0x0f, 0x0e, 0x0d, 0x0c,
                        0x0b, 0x0a, 0x09, 0x08}};

std::string fixture_path(const std::string& file) {
  return std::string(TARN_OFFSETS_RECORDS_DIR) + "/" + file;
}

std::optional<std::vector<uint8_t>> read_file(const std::string& file) {
  std::ifstream in(fixture_path(file), std::ios::binary);
  if (!in.good()) return std::nullopt;
  return std::vector<uint8_t>{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// One record as Kafka wrote it: its key bytes and its value bytes (none for a tombstone).
struct golden_record {
  std::vector<uint8_t> key;
  std::optional<std::vector<uint8_t>> value;
};

golden_record read_record(const std::string& name) {
  auto key = read_file(name + ".key.bin");
  EXPECT_TRUE(key.has_value()) << "missing " << fixture_path(name + ".key.bin");
  return {key.value_or(std::vector<uint8_t>{}), read_file(name + ".value.bin")};
}

int16_t prefix(const std::vector<uint8_t>& bytes) {
  reader r(bytes);
  return r.read_int16();
}

// Decodes a key (record type, then the key at version 0) and demands all bytes were read and
// that encode_record_key gives the same bytes back.
template <typename Key>
Key decode_key(const std::vector<uint8_t>& bytes, const std::string& what) {
  reader r(bytes);
  EXPECT_EQ(r.read_int16(), Key::record_type) << what;
  auto key = Key::decode(r, 0);
  EXPECT_TRUE(key.has_value()) << what << ": " << describe(key.error().code) << " at "
                               << key.error().offset;
  if (!key) return Key{};
  EXPECT_EQ(r.remaining(), 0u) << what;
  EXPECT_EQ(encode_record_key(*key), bytes) << what << ": re-encoded key differs";
  return std::move(key).value();
}

// Decodes a value (version, then the value at that version) the same way; expects `version`.
template <typename Value>
Value decode_value(const std::vector<uint8_t>& bytes, int16_t version, const std::string& what) {
  reader r(bytes);
  EXPECT_EQ(r.read_int16(), version) << what;
  auto value = Value::decode(r, version);
  EXPECT_TRUE(value.has_value()) << what << ": " << describe(value.error().code) << " at "
                                 << value.error().offset;
  if (!value) return Value{};
  EXPECT_EQ(r.remaining(), 0u) << what;
  EXPECT_EQ(value->encoded_size(version) + 2, bytes.size()) << what;
  EXPECT_EQ(encode_record_value(*value, version), bytes) << what << ": re-encoded value differs";
  return std::move(value).value();
}

// Every strict prefix of a body must fail to decode (a record never ends early).
template <typename M>
void check_truncations(const std::vector<uint8_t>& bytes, int16_t version,
                       const std::string& what) {
  for (size_t n = 2; n < bytes.size(); ++n) {
    std::vector<uint8_t> cut(bytes.begin() + 2, bytes.begin() + static_cast<ptrdiff_t>(n));
    reader r(cut);
    EXPECT_FALSE(M::decode(r, version).has_value()) << what << " cut at " << n;
  }
}

struct index_line {
  std::string name;
  int16_t record_type = 0;
  std::optional<int16_t> value_version;  // nullopt: a tombstone
};

std::vector<index_line> read_index() {
  std::vector<index_line> lines;
  std::ifstream in(fixture_path("index.txt"));
  EXPECT_TRUE(in.good()) << "missing " << fixture_path("index.txt");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string name, type, version;
    std::getline(fields, name, '\t');
    std::getline(fields, type, '\t');
    std::getline(fields, version, '\t');
    index_line l{name, static_cast<int16_t>(std::stoi(type)), std::nullopt};
    if (version != "tombstone")
      l.value_version = static_cast<int16_t>(std::stoi(version.substr(1)));
    lines.push_back(l);
  }
  return lines;
}

TEST(offsets_records, every_golden_record_round_trips_byte_for_byte) {
  std::vector<index_line> index = read_index();
  ASSERT_GE(index.size(), 30u);
  int values = 0, tombstones = 0;
  for (const index_line& line : index) {
    golden_record rec = read_record(line.name);
    EXPECT_EQ(prefix(rec.key), line.record_type) << line.name;
    EXPECT_EQ(rec.value.has_value(), line.value_version.has_value()) << line.name;
    bool known = visit_record(line.record_type, [&]<typename Key, typename Value>() {
      static_assert(Key::is_key && !Value::is_key);
      static_assert(Key::record_type == Value::record_type);
      decode_key<Key>(rec.key, line.name + " key");
      check_truncations<Key>(rec.key, 0, line.name + " key");
      if (!rec.value) {
        ++tombstones;
        return;
      }
      ++values;
      int16_t v = *line.value_version;
      EXPECT_GE(v, Value::min_version) << line.name;
      EXPECT_LE(v, Value::max_version) << line.name;
      decode_value<Value>(*rec.value, v, line.name + " value");
      check_truncations<Value>(*rec.value, v, line.name + " value");
    });
    EXPECT_TRUE(known) << line.name << ": no schema for record type " << line.record_type;
  }
  EXPECT_EQ(values + tombstones, static_cast<int>(index.size()));
  EXPECT_EQ(tombstones, 15);
}

TEST(offsets_records, record_types_are_kafkas) {
  EXPECT_EQ(legacy_offset_commit_key::record_type, 0);
  EXPECT_EQ(offset_commit_key::record_type, 1);
  EXPECT_EQ(group_metadata_key::record_type, 2);
  EXPECT_EQ(consumer_group_metadata_key::record_type, 3);
  EXPECT_EQ(consumer_group_partition_metadata_key::record_type, 4);
  EXPECT_EQ(consumer_group_member_metadata_key::record_type, 5);
  EXPECT_EQ(consumer_group_target_assignment_metadata_key::record_type, 6);
  EXPECT_EQ(consumer_group_target_assignment_member_key::record_type, 7);
  EXPECT_EQ(consumer_group_current_member_assignment_key::record_type, 8);
  EXPECT_EQ(consumer_group_regular_expression_key::record_type, 16);
  EXPECT_EQ(share_group_member_metadata_key::record_type, 10);
  EXPECT_EQ(share_group_metadata_key::record_type, 11);
  EXPECT_EQ(share_group_target_assignment_metadata_key::record_type, 12);
  EXPECT_EQ(share_group_target_assignment_member_key::record_type, 13);
  EXPECT_EQ(share_group_current_member_assignment_key::record_type, 14);
  EXPECT_EQ(share_group_state_partition_metadata_key::record_type, 15);
  EXPECT_EQ(offset_commit_value::max_version, 4);
  EXPECT_EQ(offset_commit_value::flexible_from, 4);
  EXPECT_EQ(group_metadata_value::flexible_from, 4);
  EXPECT_EQ(offset_commit_key::flexible_from, -1);
  // Streams-group (17-23) records have no schema in tarn; 9 is unused.
  for (int16_t t : {9, 17, 23, 24, -1}) {
    EXPECT_FALSE(visit_record(t, []<typename K, typename V>() {})) << t;
  }
}

TEST(offsets_records, offset_commit_fields) {
  golden_record rec = read_record("offset_commit");
  auto key = decode_key<offset_commit_key>(rec.key, "key");
  EXPECT_EQ(key.group, "group-a");
  EXPECT_EQ(key.topic, "orders");
  EXPECT_EQ(key.partition, 3);
  ASSERT_TRUE(rec.value.has_value());
  EXPECT_EQ(prefix(*rec.value), 4);  // what Kafka 4.4 writes without an expire timestamp
  auto value = decode_value<offset_commit_value>(*rec.value, 4, "value");
  EXPECT_EQ(value.offset, 1234);
  EXPECT_EQ(value.leader_epoch, 7);
  EXPECT_EQ(value.metadata, "meta");
  EXPECT_EQ(value.commit_timestamp, now);
  EXPECT_EQ(value.expire_timestamp, -1);  // not in v4
  EXPECT_EQ(value.topic_id, topic_a);

  golden_record no_id = read_record("offset_commit_no_topic_id");
  auto v2 = decode_value<offset_commit_value>(*no_id.value, 4, "no topic id");
  EXPECT_TRUE(v2.topic_id.is_zero());
  EXPECT_EQ(v2.leader_epoch, -1);
  EXPECT_EQ(v2.metadata, "");
  EXPECT_EQ(no_id.value->back(), 0);  // no tagged fields

  golden_record expire = read_record("offset_commit_expire");
  ASSERT_TRUE(expire.value.has_value());
  EXPECT_EQ(prefix(*expire.value), 1);  // with an expire timestamp: version 1
  auto v1 = decode_value<offset_commit_value>(*expire.value, 1, "expire");
  EXPECT_EQ(v1.offset, 99);
  EXPECT_EQ(v1.expire_timestamp, now + 86'400'000);
  EXPECT_TRUE(v1.topic_id.is_zero());  // not in v1

  golden_record v3rec = read_record("offset_commit_value_v3");
  auto v3 = decode_value<offset_commit_value>(*v3rec.value, 3, "v3");
  EXPECT_EQ(v3.leader_epoch, 11);
  EXPECT_EQ(v3.offset, 503);

  golden_record tomb = read_record("offset_commit_tombstone");
  EXPECT_FALSE(tomb.value.has_value());
  EXPECT_EQ(decode_key<offset_commit_key>(tomb.key, "tombstone").partition, 3);

  // Record type 0 has the same key layout; only the prefix tells them apart.
  golden_record legacy = read_record("legacy_offset_commit");
  EXPECT_EQ(prefix(legacy.key), 0);
  auto lkey = decode_key<legacy_offset_commit_key>(legacy.key, "legacy key");
  EXPECT_EQ(lkey.group, "old-group");
  auto lvalue = decode_value<legacy_offset_commit_value>(*legacy.value, 0, "legacy value");
  EXPECT_EQ(lvalue.offset, 77);
  EXPECT_EQ(lvalue.commit_timestamp, now);
}

// tarn's coordinator builds these from scratch: they must be Kafka's bytes exactly.
TEST(offsets_records, offset_commit_built_by_tarn_is_kafkas) {
  golden_record rec = read_record("offset_commit");
  offset_commit_key key;
  key.group = "group-a";
  key.topic = "orders";
  key.partition = 3;
  EXPECT_EQ(encode_record_key(key), rec.key);
  offset_commit_value value;
  value.offset = 1234;
  value.leader_epoch = 7;
  value.metadata = "meta";
  value.commit_timestamp = now;
  value.topic_id = topic_a;
  EXPECT_EQ(encode_record_value(value, 4), *rec.value);

  golden_record expire = read_record("offset_commit_expire");
  offset_commit_value v1;
  v1.offset = 99;
  v1.metadata = "m";
  v1.commit_timestamp = now;
  v1.expire_timestamp = now + 86'400'000;
  v1.topic_id = topic_a;  // not written in v1
  EXPECT_EQ(encode_record_value(v1, 1), *expire.value);
}

TEST(offsets_records, group_metadata_fields) {
  for (int16_t v = 0; v <= 4; ++v) {
    std::string name = "group_metadata_v" + std::to_string(v);
    golden_record rec = read_record(name);
    EXPECT_EQ(decode_key<group_metadata_key>(rec.key, name).group, "group-a");
    auto g = decode_value<group_metadata_value>(*rec.value, v, name);
    EXPECT_EQ(g.protocol_type, "consumer");
    EXPECT_EQ(g.generation, 4);
    EXPECT_EQ(g.protocol, "range");
    EXPECT_EQ(g.leader, "member-1");
    EXPECT_EQ(g.current_state_timestamp, v >= 2 ? now : -1);
    ASSERT_EQ(g.members.size(), 2u);
    const auto& m1 = g.members[0];
    const auto& m2 = g.members[1];
    EXPECT_EQ(m1.member_id, "member-1");
    EXPECT_EQ(m1.group_instance_id, std::nullopt);
    EXPECT_EQ(m2.group_instance_id,
              v >= 3 ? std::optional<std::string_view>("instance-2") : std::nullopt);
    EXPECT_EQ(m2.client_id, "client-2");
    EXPECT_EQ(m2.client_host, "/127.0.0.2");
    EXPECT_EQ(m2.rebalance_timeout, v >= 1 ? 300'000 : -1);
    EXPECT_EQ(m2.session_timeout, 45'000);
    std::string_view sub(reinterpret_cast<const char*>(m2.subscription.data()),
                         m2.subscription.size());
    std::string_view assignment(reinterpret_cast<const char*>(m2.assignment.data()),
                                m2.assignment.size());
    EXPECT_EQ(sub, "subscription-2");
    EXPECT_EQ(assignment, "assignment-2");
  }
  golden_record empty = read_record("group_metadata_empty");
  ASSERT_EQ(prefix(*empty.value), 3);  // the version Kafka 4.4 writes
  auto e = decode_value<group_metadata_value>(*empty.value, 3, "empty");
  EXPECT_EQ(e.protocol_type, "");
  EXPECT_EQ(e.generation, 0);
  EXPECT_EQ(e.protocol, std::nullopt);
  EXPECT_EQ(e.leader, std::nullopt);
  EXPECT_TRUE(e.members.empty());
  EXPECT_FALSE(read_record("group_metadata_tombstone").value.has_value());
}

std::vector<uint8_t> to_bytes(std::string_view s) { return {s.begin(), s.end()}; }

TEST(offsets_records, group_metadata_built_by_tarn_is_kafkas) {
  std::vector<uint8_t> sub1 = to_bytes("subscription-1"), sub2 = to_bytes("subscription-2");
  std::vector<uint8_t> as1 = to_bytes("assignment-1"), as2 = to_bytes("assignment-2");
  group_metadata_value g;
  g.protocol_type = "consumer";
  g.generation = 4;
  g.protocol = "range";
  g.leader = "member-1";
  g.current_state_timestamp = now;
  group_metadata_value::member_metadata m1, m2;
  m1.member_id = "member-1";
  m1.client_id = "client-1";
  m1.client_host = "/127.0.0.1";
  m1.rebalance_timeout = 300'000;
  m1.session_timeout = 45'000;
  m1.subscription = sub1;
  m1.assignment = as1;
  m2 = m1;
  m2.member_id = "member-2";
  m2.group_instance_id = "instance-2";
  m2.client_id = "client-2";
  m2.client_host = "/127.0.0.2";
  m2.subscription = sub2;
  m2.assignment = as2;
  g.members = {m1, m2};
  for (int16_t v = 0; v <= 4; ++v) {
    EXPECT_EQ(encode_record_value(g, v), *read_record("group_metadata_v" + std::to_string(v)).value)
        << "v" << v;
  }
  group_metadata_key key;
  key.group = "group-a";
  EXPECT_EQ(encode_record_key(key), read_record("group_metadata_tombstone").key);
}

TEST(offsets_records, consumer_group_metadata_and_target_assignment_fields) {
  golden_record rec = read_record("consumer_group_metadata");
  EXPECT_EQ(decode_key<consumer_group_metadata_key>(rec.key, "key").group_id, "cg");
  auto m = decode_value<consumer_group_metadata_value>(*rec.value, 0, "value");
  EXPECT_EQ(m.epoch, 12);
  EXPECT_EQ(m.metadata_hash, 0x1234'5678'9abc'def0);
  auto no_hash = decode_value<consumer_group_metadata_value>(
      *read_record("consumer_group_metadata_no_hash").value, 0, "no hash");
  EXPECT_EQ(no_hash.metadata_hash, 0);

  consumer_group_metadata_value built;
  built.epoch = 12;
  built.metadata_hash = 0x1234'5678'9abc'def0;
  EXPECT_EQ(encode_record_value(built, 0), *rec.value);
  consumer_group_metadata_key key;
  key.group_id = "cg";
  EXPECT_EQ(encode_record_key(key), read_record("consumer_group_metadata_tombstone").key);

  golden_record meta = read_record("consumer_group_target_assignment_metadata");
  auto tm = decode_value<consumer_group_target_assignment_metadata_value>(*meta.value, 0, "tam");
  EXPECT_EQ(tm.assignment_epoch, 12);
  EXPECT_EQ(tm.assignment_timestamp, now);

  golden_record member = read_record("consumer_group_target_assignment_member");
  auto mk = decode_key<consumer_group_target_assignment_member_key>(member.key, "member key");
  EXPECT_EQ(mk.group_id, "cg");
  EXPECT_EQ(mk.member_id, "m-1");
  auto target =
      decode_value<consumer_group_target_assignment_member_value>(*member.value, 0, "target");
  ASSERT_EQ(target.topic_partitions.size(), 2u);
  EXPECT_EQ(target.topic_partitions[0].topic_id, topic_a);
  EXPECT_EQ(target.topic_partitions[0].partitions, (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(target.topic_partitions[1].topic_id, topic_b);
  EXPECT_EQ(target.topic_partitions[1].partitions, (std::vector<int32_t>{1}));

  consumer_group_target_assignment_member_value built_target;
  built_target.topic_partitions.push_back({topic_a, {0, 2}});
  built_target.topic_partitions.push_back({topic_b, {1}});
  EXPECT_EQ(encode_record_value(built_target, 0), *member.value);
}

TEST(offsets_records, consumer_group_member_metadata_fields) {
  // ClassicMemberMetadata null: Kafka writes tagged field 0 as a null (its default is the empty
  // struct, not null): one tagged field, tag 0, size 1, marker 0.
  golden_record rec = read_record("consumer_group_member_metadata");
  auto key = decode_key<consumer_group_member_metadata_key>(rec.key, "key");
  EXPECT_EQ(key.member_id, "m-1");
  auto m = decode_value<consumer_group_member_metadata_value>(*rec.value, 0, "value");
  EXPECT_EQ(m.instance_id, std::nullopt);
  EXPECT_EQ(m.rack_id, std::nullopt);
  EXPECT_EQ(m.client_id, "client-1");
  EXPECT_EQ(m.client_host, "/10.0.0.1");
  EXPECT_EQ(m.subscribed_topic_names, (std::vector<std::string_view>{"orders", "payments"}));
  EXPECT_EQ(m.subscribed_topic_regex, std::nullopt);
  EXPECT_EQ(m.rebalance_timeout_ms, 60'000);
  EXPECT_EQ(m.server_assignor, "uniform");
  EXPECT_FALSE(m.classic_member_metadata.has_value());
  const std::vector<uint8_t>& v = *rec.value;
  ASSERT_GE(v.size(), 4u);
  EXPECT_EQ(std::vector<uint8_t>(v.end() - 4, v.end()), (std::vector<uint8_t>{1, 0, 1, 0}));

  consumer_group_member_metadata_value built;
  built.instance_id = std::nullopt;
  built.rack_id = std::nullopt;
  built.client_id = "client-1";
  built.client_host = "/10.0.0.1";
  built.subscribed_topic_names = {"orders", "payments"};
  built.subscribed_topic_regex = std::nullopt;
  built.rebalance_timeout_ms = 60'000;
  built.server_assignor = "uniform";
  built.classic_member_metadata = std::nullopt;
  EXPECT_EQ(encode_record_value(built, 0), v);

  golden_record classic = read_record("consumer_group_member_metadata_classic");
  auto c = decode_value<consumer_group_member_metadata_value>(*classic.value, 0, "classic");
  EXPECT_EQ(c.instance_id, "instance-2");
  EXPECT_EQ(c.rack_id, "rack-a");
  EXPECT_TRUE(c.subscribed_topic_names.empty());
  EXPECT_EQ(c.subscribed_topic_regex, "orders-.*");
  EXPECT_EQ(c.server_assignor, std::nullopt);
  ASSERT_TRUE(c.classic_member_metadata.has_value());
  EXPECT_EQ(c.classic_member_metadata->session_timeout_ms, 45'000);
  ASSERT_EQ(c.classic_member_metadata->supported_protocols.size(), 2u);
  EXPECT_EQ(c.classic_member_metadata->supported_protocols[0].name, "range");
  EXPECT_EQ(c.classic_member_metadata->supported_protocols[0].metadata.size(), 14u);
  EXPECT_EQ(c.classic_member_metadata->supported_protocols[1].name, "cooperative-sticky");
  EXPECT_TRUE(c.classic_member_metadata->supported_protocols[1].metadata.empty());

  // A default-constructed value has Kafka's default: the empty struct, which is not written.
  consumer_group_member_metadata_value fresh;
  ASSERT_TRUE(fresh.classic_member_metadata.has_value());
  std::vector<uint8_t> out = encode_record_value(fresh, 0);
  EXPECT_EQ(out.back(), 0);  // no tagged fields
}

TEST(offsets_records, consumer_group_current_member_assignment_fields) {
  golden_record rec = read_record("consumer_group_current_member_assignment");
  auto a =
      decode_value<consumer_group_current_member_assignment_value>(*rec.value, 0, "assignment");
  EXPECT_EQ(a.member_epoch, 12);
  EXPECT_EQ(a.previous_member_epoch, 11);
  EXPECT_EQ(a.state, 0);
  ASSERT_EQ(a.assigned_partitions.size(), 2u);
  EXPECT_EQ(a.assigned_partitions[0].topic_id, topic_a);
  EXPECT_EQ(a.assigned_partitions[0].partitions, (std::vector<int32_t>{0, 2}));
  EXPECT_EQ(a.assigned_partitions[0].assignment_epochs, (std::vector<int32_t>{10, 12}));
  // Not set: Kafka's default, the empty list (not written).
  EXPECT_EQ(a.assigned_partitions[1].assignment_epochs, std::vector<int32_t>{});
  ASSERT_EQ(a.partitions_pending_revocation.size(), 1u);
  EXPECT_EQ(a.partitions_pending_revocation[0].assignment_epochs, std::nullopt);  // written null

  using tp = consumer_group_current_member_assignment_value::topic_partitions;
  consumer_group_current_member_assignment_value built;
  built.member_epoch = 12;
  built.previous_member_epoch = 11;
  built.state = 0;
  tp first;
  first.topic_id = topic_a;
  first.partitions = {0, 2};
  first.assignment_epochs = std::vector<int32_t>{10, 12};
  tp second;
  second.topic_id = topic_b;
  second.partitions = {1};
  tp revoked;
  revoked.topic_id = topic_b;
  revoked.partitions = {0};
  revoked.assignment_epochs = std::nullopt;
  built.assigned_partitions = {first, second};
  built.partitions_pending_revocation = {revoked};
  EXPECT_EQ(encode_record_value(built, 0), *rec.value);
}

TEST(offsets_records, consumer_group_partition_metadata_and_regex_fields) {
  golden_record rec = read_record("consumer_group_partition_metadata");
  auto p = decode_value<consumer_group_partition_metadata_value>(*rec.value, 0, "partition md");
  ASSERT_EQ(p.topics.size(), 2u);
  EXPECT_EQ(p.topics[0].topic_id, topic_a);
  EXPECT_EQ(p.topics[0].topic_name, "orders");
  EXPECT_EQ(p.topics[0].num_partitions, 3);
  ASSERT_EQ(p.topics[0].partition_metadata.size(), 1u);
  EXPECT_EQ(p.topics[0].partition_metadata[0].racks,
            (std::vector<std::string_view>{"rack-a", "rack-b"}));
  EXPECT_TRUE(p.topics[1].partition_metadata.empty());
  EXPECT_FALSE(read_record("consumer_group_partition_metadata_tombstone").value.has_value());

  golden_record regex = read_record("consumer_group_regular_expression");
  auto key = decode_key<consumer_group_regular_expression_key>(regex.key, "regex key");
  EXPECT_EQ(key.regular_expression, "orders-.*");
  auto r = decode_value<consumer_group_regular_expression_value>(*regex.value, 0, "regex");
  EXPECT_EQ(r.topics, (std::vector<std::string_view>{"orders-eu", "orders-us"}));
  EXPECT_EQ(r.version_, 345);  // Kafka's Version: a trailing underscore beside decode's version
  EXPECT_EQ(r.timestamp, now);
}

TEST(offsets_records, bad_versions_and_prefixes_fail) {
  golden_record rec = read_record("offset_commit");
  reader r(*rec.value);
  r.read_int16();
  auto v5 = offset_commit_value::decode(r, 5);
  ASSERT_FALSE(v5.has_value());
  EXPECT_EQ(v5.error().code, decode_errc::unsupported_version);
  std::vector<uint8_t> key_body(rec.key.begin() + 2, rec.key.end());
  reader kr(key_body);
  EXPECT_FALSE(offset_commit_key::decode(kr, 1).has_value());  // keys are version 0 only
}

}  // namespace
}  // namespace tarn::protocol
