// The metadata log: replay, snapshots, a torn tail cut at every byte of the last entry, CRC
// damage, the import of an older tarn-topics file, and log_manager writing through the seam.
#include "cluster/metadata_log.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "cluster/metadata_store.h"
#include "storage/log_manager.h"
#include "storage/test_batches.h"

namespace tarn::cluster {
namespace {

using storage::testing::temp_dir;
namespace fs = std::filesystem;

std::string file_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
void write_bytes(const fs::path& p, const std::string& s) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << s;
}

storage::uuid id_of(uint64_t n) { return storage::uuid{n, n * 7 + 1}; }

metadata_log_options opts(const fs::path& dir, int64_t snapshot_every = 1000) {
  return metadata_log_options{dir / "m", snapshot_every};
}

TEST(MetadataRecords, EveryRecordTypeRoundTrips) {
  client_quota_record q;
  q.entities = {{"user", "alice"}, {"client-id", std::nullopt}};
  q.key = "producer_byte_rate";
  q.value = 1048576.5;
  metadata_entry e{
      42,
      {topic_record{"orders", id_of(1)}, partition_record{3, id_of(1)},
       config_record{config_resource_topic, "orders", "retention.ms", "1000"},
       config_record{config_resource_broker, "", "log.retention.ms", std::nullopt},
       remove_topic_record{id_of(2)}, feature_level_record{"metadata.version", 27}, q}};
  auto bytes = encode_entry(e);
  auto d = decode_entry(bytes);
  ASSERT_EQ(d.status, decode_status::ok) << d.message;
  EXPECT_EQ(d.bytes, bytes.size());
  EXPECT_EQ(d.entry.offset, 42);
  ASSERT_EQ(d.entry.records.size(), 7u);
  EXPECT_EQ(std::get<topic_record>(d.entry.records[0]).name, "orders");
  EXPECT_EQ(std::get<partition_record>(d.entry.records[1]).partition_id, 3);
  EXPECT_EQ(std::get<config_record>(d.entry.records[2]).value, "1000");
  EXPECT_FALSE(std::get<config_record>(d.entry.records[3]).value.has_value());
  EXPECT_EQ(std::get<remove_topic_record>(d.entry.records[4]).topic_id, id_of(2));
  EXPECT_EQ(std::get<feature_level_record>(d.entry.records[5]).feature_level, 27);
  EXPECT_EQ(std::get<partition_record>(d.entry.records[1]).leader, -1);
  const auto& q2 = std::get<client_quota_record>(d.entry.records[6]);
  EXPECT_EQ(q2.entities.size(), 2u);
  EXPECT_FALSE(q2.entities[1].entity_name.has_value());
  EXPECT_EQ(q2.value, 1048576.5);
}

TEST(MetadataRecords, DecodeNeverTrustsCounts) {
  metadata_entry e{0, {topic_record{"t", id_of(1)}}};
  auto bytes = encode_entry(e);
  for (size_t cut = 0; cut < bytes.size(); ++cut) {
    auto d = decode_entry(std::span(bytes).first(cut));
    EXPECT_EQ(d.status, decode_status::incomplete) << cut;
  }
  for (size_t i = 0; i < bytes.size(); ++i) {
    auto damaged = bytes;
    damaged[i] ^= 0x40;
    auto d = decode_entry(damaged);
    EXPECT_NE(d.status, decode_status::ok) << "byte " << i;
  }
}

TEST(MetadataLog, ReplaysEveryChangeAfterReopen) {
  temp_dir dir;
  {
    auto log = metadata_log::open(opts(dir.path()));
    ASSERT_TRUE(log) << log.error().message;
    EXPECT_TRUE((*log)->empty_at_open());
    ASSERT_TRUE((*log)->append({topic_record{"a", id_of(1)}, partition_record{0, id_of(1)}}));
    ASSERT_TRUE((*log)->append({partition_record{1, id_of(1)}, partition_record{2, id_of(1)}}));
    ASSERT_TRUE((*log)->append({config_record{config_resource_topic, "a", "retention.ms", "5"}}));
    ASSERT_TRUE(
        (*log)->append({config_record{config_resource_broker, "", "log.retention.ms", "77"}}));
    ASSERT_TRUE((*log)->append({feature_level_record{"metadata.version", 27}}));
    ASSERT_TRUE((*log)->append({topic_record{"b", id_of(2)}, partition_record{0, id_of(2)}}));
    ASSERT_TRUE((*log)->append({remove_topic_record{id_of(2)}}));
  }
  metadata_recovery rec;
  auto log = metadata_log::open(opts(dir.path()), &rec);
  ASSERT_TRUE(log) << log.error().message;
  EXPECT_EQ(rec.entries_replayed, 7);
  EXPECT_EQ(rec.torn_bytes, 0);
  const auto& image = (*log)->image();
  EXPECT_EQ(image.next_offset, 7);
  ASSERT_EQ(image.topics.size(), 1u);
  EXPECT_EQ(image.find_topic("a")->partitions, 3);
  EXPECT_EQ(image.find_topic("a")->topic_id, id_of(1));
  EXPECT_EQ(image.find_topic("b"), nullptr);
  EXPECT_EQ(image.find_configs(config_resource_topic, "a")->at("retention.ms"), "5");
  EXPECT_EQ(image.find_configs(config_resource_broker, "")->at("log.retention.ms"), "77");
  EXPECT_EQ(image.features.at("metadata.version"), 27);
}

TEST(MetadataLog, SnapshotEmptiesTheLogAndKeepsTheImage) {
  temp_dir dir;
  {
    auto log = metadata_log::open(opts(dir.path(), 3));
    ASSERT_TRUE(log);
    for (uint64_t i = 0; i < 7; ++i) {
      ASSERT_TRUE((*log)->append(
          {topic_record{"t" + std::to_string(i), id_of(i)}, partition_record{0, id_of(i)}}));
    }
    // 6 entries went into snapshots; the 7th is in the log.
    EXPECT_GT(fs::file_size(dir.path() / "m" / "snapshot"), 0u);
    metadata_entry last{6, {topic_record{"t6", id_of(6)}, partition_record{0, id_of(6)}}};
    EXPECT_EQ(fs::file_size(dir.path() / "m" / "log"), encode_entry(last).size());
  }
  metadata_recovery rec;
  auto log = metadata_log::open(opts(dir.path(), 3), &rec);
  ASSERT_TRUE(log) << log.error().message;
  EXPECT_TRUE(rec.had_snapshot);
  EXPECT_EQ(rec.entries_replayed, 1);
  EXPECT_EQ((*log)->image().topics.size(), 7u);
  EXPECT_EQ((*log)->image().next_offset, 7);
}

TEST(MetadataLog, EntriesAlreadyInTheSnapshotAreSkipped) {
  // A crash between writing the snapshot and emptying the log leaves both.
  temp_dir dir;
  std::string log_before;
  {
    auto log = metadata_log::open(opts(dir.path()));
    ASSERT_TRUE(log);
    ASSERT_TRUE((*log)->append({topic_record{"a", id_of(1)}, partition_record{0, id_of(1)}}));
    ASSERT_TRUE((*log)->append({partition_record{1, id_of(1)}}));
    log_before = file_bytes(dir.path() / "m" / "log");
    ASSERT_TRUE((*log)->snapshot());
  }
  write_bytes(dir.path() / "m" / "log", log_before);
  metadata_recovery rec;
  auto log = metadata_log::open(opts(dir.path()), &rec);
  ASSERT_TRUE(log) << log.error().message;
  EXPECT_EQ(rec.entries_replayed, 0);
  EXPECT_EQ((*log)->image().find_topic("a")->partitions, 2);
  ASSERT_TRUE((*log)->append({partition_record{2, id_of(1)}}));
  EXPECT_EQ((*log)->image().next_offset, 3);
}

TEST(MetadataLog, TornTailAtEveryByteOfTheLastEntryLosesOnlyThatEntry) {
  temp_dir dir;
  std::string full;
  size_t before_last = 0;
  {
    auto log = metadata_log::open(opts(dir.path()));
    ASSERT_TRUE(log);
    ASSERT_TRUE((*log)->append({topic_record{"a", id_of(1)}, partition_record{0, id_of(1)}}));
    ASSERT_TRUE((*log)->append({config_record{config_resource_topic, "a", "retention.ms", "9"}}));
    before_last = fs::file_size(dir.path() / "m" / "log");
    ASSERT_TRUE((*log)->append({partition_record{1, id_of(1)}, partition_record{2, id_of(1)}}));
    full = file_bytes(dir.path() / "m" / "log");
  }
  for (size_t cut = before_last; cut < full.size(); ++cut) {
    write_bytes(dir.path() / "m" / "log", full.substr(0, cut));
    metadata_recovery rec;
    auto log = metadata_log::open(opts(dir.path()), &rec);
    ASSERT_TRUE(log) << "cut at " << cut << ": " << log.error().message;
    EXPECT_EQ(rec.torn_bytes, static_cast<int64_t>(cut - before_last)) << cut;
    EXPECT_EQ((*log)->image().find_topic("a")->partitions, 1) << cut;
    EXPECT_EQ((*log)->image().find_configs(config_resource_topic, "a")->at("retention.ms"), "9");
    EXPECT_EQ(fs::file_size(dir.path() / "m" / "log"), before_last) << cut;
    // Appending after the cut continues at the lost entry's offset, and replays.
    ASSERT_TRUE((*log)->append({partition_record{1, id_of(1)}}));
    log = fail(storage::storage_error{});  // closes the file
    auto again = metadata_log::open(opts(dir.path()));
    ASSERT_TRUE(again) << again.error().message;
    EXPECT_EQ((*again)->image().find_topic("a")->partitions, 2);
    EXPECT_EQ((*again)->image().next_offset, 3);
  }
}

TEST(MetadataLog, CrcMismatchInTheLastEntryIsATornTailElsewhereCorruption) {
  temp_dir dir;
  std::string full;
  size_t first = 0;
  {
    auto log = metadata_log::open(opts(dir.path()));
    ASSERT_TRUE(log);
    ASSERT_TRUE((*log)->append({topic_record{"a", id_of(1)}, partition_record{0, id_of(1)}}));
    first = fs::file_size(dir.path() / "m" / "log");
    ASSERT_TRUE((*log)->append({partition_record{1, id_of(1)}}));
    full = file_bytes(dir.path() / "m" / "log");
  }
  // A flipped value byte in the last entry: its CRC fails at the end of the file.
  std::string damaged = full;
  damaged[full.size() - 3] ^= 0x01;
  write_bytes(dir.path() / "m" / "log", damaged);
  {
    metadata_recovery rec;
    auto log = metadata_log::open(opts(dir.path()), &rec);
    ASSERT_TRUE(log) << log.error().message;
    EXPECT_EQ(rec.torn_bytes, static_cast<int64_t>(full.size() - first));
    EXPECT_EQ((*log)->image().find_topic("a")->partitions, 1);
  }
  // The same flip in the first entry, with a valid entry after it: acknowledged data is damaged,
  // and the log refuses to open rather than drop it.
  damaged = full;
  damaged[first - 3] ^= 0x01;
  write_bytes(dir.path() / "m" / "log", damaged);
  auto log = metadata_log::open(opts(dir.path()));
  ASSERT_FALSE(log);
  EXPECT_EQ(log.error().code, storage::storage_errc::corrupt);
  EXPECT_NE(log.error().message.find("valid bytes follow"), std::string::npos);
}

TEST(MetadataLog, DamagedSnapshotRefusesToOpen) {
  temp_dir dir;
  {
    auto log = metadata_log::open(opts(dir.path()));
    ASSERT_TRUE(log);
    ASSERT_TRUE((*log)->append({topic_record{"a", id_of(1)}}));
    ASSERT_TRUE((*log)->snapshot());
  }
  std::string s = file_bytes(dir.path() / "m" / "snapshot");
  s[s.size() / 2] ^= 0x10;
  write_bytes(dir.path() / "m" / "snapshot", s);
  auto log = metadata_log::open(opts(dir.path()));
  ASSERT_FALSE(log);
  EXPECT_EQ(log.error().code, storage::storage_errc::corrupt);
}

TEST(LocalMetadataStore, LogManagerTopicsGoThroughTheLogAndSurviveReopen) {
  temp_dir dir;
  storage::uuid id;
  {
    auto store = local_metadata_store::open(dir.path());
    ASSERT_TRUE(store) << store.error().message;
    storage::log_manager_options o;
    o.log_dir = dir.path();
    o.journal = &(*store)->topic_journal();
    auto m = storage::log_manager::open(o);
    ASSERT_TRUE(m) << m.error().message;
    auto t = (*m)->create_topic("orders", 2, {{"retention.ms", "60000"}}, 1000);
    ASSERT_TRUE(t);
    id = (*t)->topic_id;
    ASSERT_TRUE((*m)->create_partitions("orders", 5, 1000));
    ASSERT_TRUE((*m)->set_topic_config("orders", {{"cleanup.policy", "compact"}}));
    ASSERT_TRUE((*m)->create_topic("gone", 1, {}, 1000));
    ASSERT_TRUE((*m)->delete_topic("gone"));
    ASSERT_TRUE((*store)->set_broker_configs("", {{"log.retention.ms", "1234"}}));
    ASSERT_TRUE((*store)->set_feature_levels({{"metadata.version", 27}}));
    EXPECT_FALSE(fs::exists(dir.path() / storage::topic_metadata_file_name));
  }
  auto store = local_metadata_store::open(dir.path());
  ASSERT_TRUE(store) << store.error().message;
  storage::log_manager_options o;
  o.log_dir = dir.path();
  o.journal = &(*store)->topic_journal();
  auto m = storage::log_manager::open(o);
  ASSERT_TRUE(m) << m.error().message;
  const auto* t = (*m)->find_topic("orders");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->topic_id, id);
  EXPECT_EQ(t->partitions, 5);
  EXPECT_EQ(t->overrides, (storage::config_map{{"cleanup.policy", "compact"}}));
  EXPECT_EQ((*m)->find_topic("gone"), nullptr);
  EXPECT_NE((*m)->get_log("orders", 4), nullptr);
  EXPECT_EQ((*store)->broker_configs("").at("log.retention.ms"), "1234");
  EXPECT_EQ((*store)->finalized_features().at("metadata.version"), 27);
}

// SCRAM credentials: records round trip, apply and removal, a snapshot keeps them, a reopen
// replays them.
TEST(LocalMetadataStore, ScramCredentialsSurviveSnapshotsAndReopen) {
  temp_dir dir;
  user_scram_credential_record alice{"alice", 2, {1, 2, 3}, {4, 5}, {6, 7}, 8192};
  {
    auto bytes = encode_entry({0, {alice, remove_user_scram_credential_record{"bob", 1}}});
    auto d = decode_entry(bytes);
    ASSERT_EQ(d.status, decode_status::ok) << d.message;
    const auto& a = std::get<user_scram_credential_record>(d.entry.records[0]);
    EXPECT_EQ(a.salt, (std::vector<uint8_t>{1, 2, 3}));
    EXPECT_EQ(a.server_key, (std::vector<uint8_t>{6, 7}));
    EXPECT_EQ(a.iterations, 8192);
    EXPECT_EQ(std::get<remove_user_scram_credential_record>(d.entry.records[1]).mechanism, 1);
  }
  {
    // Snapshot after every change: the credentials must come back from the snapshot alone.
    auto store = local_metadata_store::open(dir.path(), 1);
    ASSERT_TRUE(store) << store.error().message;
    user_scram_credential_record bob{"bob", 1, {9}, {9}, {9}, 4096};
    ASSERT_TRUE((*store)->change_scram_credentials({alice, bob}));
    ASSERT_TRUE(
        (*store)->change_scram_credentials({remove_user_scram_credential_record{"bob", 1}}));
    EXPECT_FALSE((*store)->scram_credential("bob", 1));
  }
  auto store = local_metadata_store::open(dir.path(), 1);
  ASSERT_TRUE(store) << store.error().message;
  auto a = (*store)->scram_credential("alice", 2);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->stored_key, (std::vector<uint8_t>{4, 5}));
  EXPECT_FALSE((*store)->scram_credential("alice", 1));
  EXPECT_EQ((*store)->scram_credentials().size(), 1u);
}

TEST(LocalMetadataStore, ImportsAnOlderTarnTopicsFileOnce) {
  temp_dir dir;
  storage::uuid id;
  {
    // An older tarn: topics in tarn-topics, no metadata log.
    storage::log_manager_options o;
    o.log_dir = dir.path();
    auto m = storage::log_manager::open(o);
    ASSERT_TRUE(m);
    auto t = (*m)->create_topic("legacy", 3, {{"retention.ms", "1000"}}, 1000);
    ASSERT_TRUE(t);
    id = (*t)->topic_id;
    ASSERT_TRUE((*m)->shutdown(-1, 1000));
  }
  ASSERT_TRUE(fs::exists(dir.path() / storage::topic_metadata_file_name));
  {
    local_store_report report;
    auto store = local_metadata_store::open(dir.path(), 1000, &report);
    ASSERT_TRUE(store) << store.error().message;
    EXPECT_EQ(report.imported_topics, 1);
    EXPECT_FALSE(fs::exists(dir.path() / storage::topic_metadata_file_name));
  }
  local_store_report report;
  auto store = local_metadata_store::open(dir.path(), 1000, &report);
  ASSERT_TRUE(store);
  EXPECT_EQ(report.imported_topics, -1);
  storage::log_manager_options o;
  o.log_dir = dir.path();
  o.journal = &(*store)->topic_journal();
  auto m = storage::log_manager::open(o);
  ASSERT_TRUE(m) << m.error().message;
  const auto* t = (*m)->find_topic("legacy");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->topic_id, id);
  EXPECT_EQ(t->partitions, 3);
  EXPECT_EQ(t->overrides.at("retention.ms"), "1000");
  EXPECT_NE((*m)->get_log("legacy", 2), nullptr);
}

TEST(LocalMetadataStore, AclsSurviveReopenAndSnapshots) {
  temp_dir dir;
  access_control_entry_record a{id_of(10), 2, "orders", 3, "User:alice", "*", 4, 3};
  access_control_entry_record b{id_of(11), 3, "app-", 4, "User:*", "10.0.0.1", 3, 2};
  {
    // snapshot_every 2: the second change writes a snapshot, the third goes behind it
    auto store = local_metadata_store::open(dir.path(), 2);
    ASSERT_TRUE(store) << store.error().message;
    ASSERT_TRUE((*store)->change_acls({a}));
    ASSERT_TRUE((*store)->change_acls({b}));
    ASSERT_TRUE((*store)->change_acls({remove_access_control_entry_record{id_of(10)}, a}));
    ASSERT_TRUE((*store)->change_acls({remove_access_control_entry_record{id_of(11)}}));
  }
  auto store = local_metadata_store::open(dir.path(), 2);
  ASSERT_TRUE(store) << store.error().message;
  auto acls = (*store)->acls();
  ASSERT_EQ(acls.size(), 1u);
  EXPECT_EQ(acls.at(id_of(10)), a);
  // the records round-trip through the entry framing
  auto bytes = encode_entry(metadata_entry{1, {b, remove_access_control_entry_record{id_of(3)}}});
  auto d = decode_entry(bytes);
  ASSERT_EQ(d.status, decode_status::ok) << d.message;
  EXPECT_EQ(std::get<access_control_entry_record>(d.entry.records[0]), b);
  EXPECT_EQ(std::get<remove_access_control_entry_record>(d.entry.records[1]).id, id_of(3));
}

}  // namespace
// A cluster's PartitionRecord carries its leader (version 1); a single node's stays version 0,
// byte for byte what it was, and both decode, and a snapshot keeps the leader.
TEST(metadata_records, partition_leader_round_trips_as_version_1) {
  metadata_entry single{0, {partition_record{0, id_of(1)}}};
  metadata_entry cluster{0, {partition_record{0, id_of(1), 3}}};
  auto a = encode_entry(single);
  auto b = encode_entry(cluster);
  EXPECT_EQ(b.size(), a.size() + 4);
  auto da = decode_entry(a);
  auto db = decode_entry(b);
  ASSERT_EQ(da.status, decode_status::ok) << da.message;
  ASSERT_EQ(db.status, decode_status::ok) << db.message;
  EXPECT_EQ(std::get<partition_record>(da.entry.records[0]).leader, -1);
  EXPECT_EQ(std::get<partition_record>(db.entry.records[0]).leader, 3);

  metadata_image image;
  image.apply(topic_record{"t", id_of(1)});
  image.apply(partition_record{0, id_of(1), 3});
  image.apply(partition_record{1, id_of(1), 3});
  EXPECT_EQ(image.topics.at(id_of(1)).leader, 3);
  metadata_image rebuilt;
  for (const auto& r : image.to_records()) rebuilt.apply(r);
  EXPECT_EQ(rebuilt.topics.at(id_of(1)).leader, 3);
  EXPECT_EQ(rebuilt.topics.at(id_of(1)).partitions, 2);
}

}  // namespace tarn::cluster
