// Checkpoint files, partition.metadata, tarn-topics and the clean-shutdown marker: exact bytes
// and round trips.
#include "storage/checkpoint_file.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "storage/test_batches.h"
#include "storage/topic_metadata.h"

namespace tarn::storage {
namespace {

using testing::temp_dir;

std::string file_text(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(Checkpoint, OffsetCheckpointBytesAndRoundTrip) {
  temp_dir dir;
  std::vector<partition_offset> entries = {
      {{"orders", 0}, 42}, {{"orders", 1}, 0}, {{"a.b_c-d", 12}, 9007199254740993}};
  fs::path path = dir.path() / "recovery-point-offset-checkpoint";
  ASSERT_TRUE(write_offset_checkpoint(path, entries));
  EXPECT_EQ(file_text(path), "0\n3\norders 0 42\norders 1 0\na.b_c-d 12 9007199254740993\n");
  EXPECT_FALSE(fs::exists(dir.path() / "recovery-point-offset-checkpoint.tmp"));
  auto back = read_offset_checkpoint(path);
  ASSERT_TRUE(back);
  ASSERT_EQ(back->size(), 3u);
  EXPECT_EQ((*back)[2].tp.topic, "a.b_c-d");
  EXPECT_EQ((*back)[2].tp.partition, 12);
  EXPECT_EQ((*back)[2].offset, 9007199254740993);
}

// replication-offset-checkpoint as Kafka 4.4.0 wrote it (a single-node KRaft broker, topic t2
// of two partitions, three records in partition 1): the same format, read and written alike
// (Kafka lists the entries in its map's order, tarn sorted).
TEST(Checkpoint, ReplicationOffsetCheckpointAsKafkaWritesIt) {
  auto entries = decode_offset_checkpoint("0\n2\nt2 1 3\nt2 0 0\n", "x");
  ASSERT_TRUE(entries);
  ASSERT_EQ(entries->size(), 2u);
  EXPECT_EQ((*entries)[0].tp, (topic_partition{"t2", 1}));
  EXPECT_EQ((*entries)[0].offset, 3);
  EXPECT_EQ(encode_offset_checkpoint({(*entries)[1], (*entries)[0]}), "0\n2\nt2 0 0\nt2 1 3\n");
  EXPECT_EQ(encode_offset_checkpoint({}), "0\n0\n");
}

TEST(Checkpoint, MissingAndEmptyFilesAreNoEntries) {
  temp_dir dir;
  auto missing = read_offset_checkpoint(dir.path() / "nope");
  ASSERT_TRUE(missing);
  EXPECT_TRUE(missing->empty());
  auto empty = decode_offset_checkpoint("", "x");
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->empty());
}

TEST(Checkpoint, MalformedCheckpointsAreErrorsWithKafkasWording) {
  auto bad_version = decode_offset_checkpoint("1\n0\n", "f");
  ASSERT_FALSE(bad_version);
  EXPECT_EQ(bad_version.error().message,
            "Unrecognised version:1, expected version: 0 in checkpoint file at: f");
  auto bad_line = decode_offset_checkpoint("0\n1\norders zero 5\n", "f");
  ASSERT_FALSE(bad_line);
  EXPECT_EQ(bad_line.error().message, "Malformed line in checkpoint file [f]: orders zero 5");
  auto bad_count = decode_epoch_checkpoint("0\n2\n0 0\n", "f");
  ASSERT_FALSE(bad_count);
  EXPECT_EQ(bad_count.error().message,
            "Expected [2] entries in checkpoint file [f], but found only [1]");
  EXPECT_EQ(bad_count.error().code, storage_errc::corrupt);
}

TEST(Checkpoint, LeaderEpochCheckpointRoundTrip) {
  temp_dir dir;
  std::vector<epoch_entry> entries = {{0, 0}, {4, 1234}};
  fs::path path = dir.path() / "leader-epoch-checkpoint";
  ASSERT_TRUE(write_epoch_checkpoint(path, entries));
  EXPECT_EQ(file_text(path), "0\n2\n0 0\n4 1234\n");
  auto back = read_epoch_checkpoint(path);
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, entries);
}

TEST(Checkpoint, CleanShutdownMarker) {
  temp_dir dir;
  EXPECT_FALSE(has_clean_shutdown_marker(dir.path()));
  EXPECT_EQ(clean_shutdown_marker_broker_epoch(dir.path()), -1);
  ASSERT_TRUE(write_clean_shutdown_marker(dir.path(), 7));
  EXPECT_TRUE(has_clean_shutdown_marker(dir.path()));
  // KIP-966's PreviousBrokerEpoch at the next registration.
  EXPECT_EQ(clean_shutdown_marker_broker_epoch(dir.path()), 7);
  EXPECT_EQ(file_text(dir.path() / ".kafka_cleanshutdown"), R"({"version":0,"brokerEpoch":7})");
  ASSERT_TRUE(remove_clean_shutdown_marker(dir.path()));
  EXPECT_FALSE(has_clean_shutdown_marker(dir.path()));
}

TEST(TopicMetadata, PartitionMetadataExactBytes) {
  temp_dir dir;
  uuid id{0x0123456789abcdefull, 0xfedcba9876543210ull};
  ASSERT_TRUE(write_partition_metadata(dir.path(), id));
  EXPECT_EQ(file_text(dir.path() / "partition.metadata"),
            "version: 0\ntopic_id: ASNFZ4mrze_-3LqYdlQyEA");
  auto back = read_partition_metadata(dir.path());
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, id);
  EXPECT_FALSE(decode_partition_metadata("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA", "p"));
  EXPECT_FALSE(decode_partition_metadata("version 0\ntopic_id: ASNFZ4mrze_-3LqYdlQyEA", "p"));
  EXPECT_TRUE(decode_partition_metadata("version: 1\ntopic_id: ASNFZ4mrze_-3LqYdlQyEA\n", "p"));
}

TEST(TopicMetadata, TopicNameRules) {
  EXPECT_TRUE(validate_topic_name("orders.v2_x-1"));
  EXPECT_TRUE(validate_topic_name(std::string(249, 'a')));
  auto too_long = validate_topic_name(std::string(250, 'a'));
  ASSERT_FALSE(too_long);
  EXPECT_EQ(too_long.error().code, storage_errc::invalid_topic);
  EXPECT_EQ(validate_topic_name("").error().message,
            "Topic name is invalid: the empty string is not allowed");
  EXPECT_EQ(validate_topic_name(".").error().message, "Topic name is invalid: '.' is not allowed");
  EXPECT_EQ(validate_topic_name("..").error().message,
            "Topic name is invalid: '..' is not allowed");
  EXPECT_EQ(validate_topic_name("a b").error().message,
            "Topic name is invalid: 'a b' contains one or more characters other than ASCII "
            "alphanumerics, '.', '_' and '-'");
  EXPECT_TRUE(topics_collide("a.b", "a_b"));
  EXPECT_FALSE(topics_collide("a.b", "a-b"));
}

TEST(TopicMetadata, TopicRecordsRoundTrip) {
  temp_dir dir;
  std::vector<topic_record> topics = {
      {"orders", uuid{1, 2}, 3, {{"retention.ms", "1000"}, {"cleanup.policy", "compact,delete"}}},
      {"logs", uuid{3, 4}, 1, {}}};
  ASSERT_TRUE(write_topic_records(dir.path(), topics));
  EXPECT_EQ(file_text(dir.path() / "tarn-topics"),
            "0\n2\norders AAAAAAAAAAEAAAAAAAAAAg 3 2\ncleanup.policy=compact,delete\n"
            "retention.ms=1000\nlogs AAAAAAAAAAMAAAAAAAAABA 1 0\n");
  auto back = read_topic_records(dir.path());
  ASSERT_TRUE(back);
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[0].name, "orders");
  EXPECT_EQ((*back)[0].topic_id, (uuid{1, 2}));
  EXPECT_EQ((*back)[0].overrides.at("cleanup.policy"), "compact,delete");
  EXPECT_EQ((*back)[1].partitions, 1);
  EXPECT_FALSE(decode_topic_records("0\n1\norders x 3 0\n", "f"));
  EXPECT_FALSE(decode_topic_records("0\n5\n", "f"));
}

}  // namespace
}  // namespace tarn::storage
