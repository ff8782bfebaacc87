// The broker's configuration mapped onto storage's topic-config table (the one definition of
// topic configs), and meta.properties.
#include "broker/topic_manager.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "storage/log_config.h"

namespace tarn::broker {
namespace {

broker_config make_ok(const properties& file) {
  auto r = make_broker_config(file, {});
  EXPECT_TRUE(r.has_value()) << (r ? "" : r.error());
  return r ? *r : broker_config{};
}

std::string effective(const broker_config& c, std::string_view name) {
  for (const auto& d : storage::describe_topic_configs({}, topic_defaults_from(c))) {
    if (d.definition->name == name) return d.value;
  }
  return "<missing>";
}

TEST(topic_defaults_from, broker_keys_become_topic_defaults_with_kafkas_units) {
  auto c = make_ok({{"log.retention.hours", "2"},
                    {"message.max.bytes", "2000000"},
                    {"log.message.timestamp.type", "LogAppendTime"},
                    {"log.cleanup.policy", "compact"}});
  EXPECT_EQ(effective(c, "retention.ms"), "7200000");
  EXPECT_EQ(effective(c, "max.message.bytes"), "2000000");
  EXPECT_EQ(effective(c, "message.timestamp.type"), "LogAppendTime");
  EXPECT_EQ(effective(c, "cleanup.policy"), "compact");
  EXPECT_EQ(effective(c, "segment.ms"), "604800000");
  EXPECT_EQ(effective(c, "flush.ms"), "9223372036854775807");
  EXPECT_EQ(effective(c, "segment.bytes"), "1073741824");
  EXPECT_EQ(effective(c, "compression.type"), "producer");
  auto resolved = storage::resolve_log_config({}, topic_defaults_from(c));
  ASSERT_TRUE(resolved.has_value());
  EXPECT_EQ(resolved->retention_ms, 7200000);
  EXPECT_TRUE(resolved->cleanup_compact);
  EXPECT_FALSE(resolved->cleanup_delete);
}

TEST(topic_defaults_from, only_keys_set_in_server_properties_are_broker_sources) {
  auto c = make_ok({{"log.segment.bytes", "2097152"}});
  auto props = topic_defaults_from(c);
  EXPECT_EQ(props.size(), 1u);
  for (const auto& d : storage::describe_topic_configs({}, props)) {
    if (d.definition->name == "segment.bytes") {
      EXPECT_EQ(d.source, storage::config_source::static_broker_config);
      EXPECT_EQ(d.value, "2097152");
    } else {
      EXPECT_EQ(d.source, storage::config_source::default_config) << d.definition->name;
    }
  }
}

// Every broker key storage names as a topic config's default must be one the broker accepts or
// a key tarn deliberately does not serve (tiered storage, the log cleaner), so that a
// server.properties setting is never silently dropped for a topic config tarn uses.
TEST(topic_defaults_from, storage_synonyms_are_broker_keys) {
  auto keys = known_broker_config_keys();
  for (const auto& def : storage::topic_config_definitions()) {
    std::string key(def.server_default_property);
    if (key.empty() || key.find("remote") != std::string::npos ||
        key.find("local") != std::string::npos || key.find("cleaner") != std::string::npos) {
      continue;
    }
    EXPECT_TRUE(std::binary_search(keys.begin(), keys.end(), key)) << def.name << " <- " << key;
  }
}

TEST(meta_properties, created_once_then_read_back_and_node_id_checked) {
  auto dir = std::filesystem::temp_directory_path() / "tarn-meta-properties-test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  auto first = load_or_create_meta_properties(dir.string(), 3);
  ASSERT_TRUE(first.has_value()) << first.error();
  EXPECT_EQ(first->size(), 22u);
  auto again = load_or_create_meta_properties(dir.string(), 3);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(*again, *first);
  std::ifstream in(dir / meta_properties_file_name);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("cluster.id=" + *first), std::string::npos) << text;
  EXPECT_NE(text.find("node.id=3\n"), std::string::npos) << text;
  EXPECT_NE(text.find("version=1\n"), std::string::npos) << text;
  auto other = load_or_create_meta_properties(dir.string(), 4);
  ASSERT_FALSE(other.has_value());
  EXPECT_NE(other.error().find("Stored node id"), std::string::npos);
  std::filesystem::remove_all(dir);
}

// In a cluster the id comes from etcd (agree_cluster_id, faked here): a fresh log directory
// adopts the cluster's; one that holds another id is refused (InconsistentClusterIdException).
TEST(meta_properties, a_cluster_member_adopts_the_cluster_id_and_refuses_another) {
  auto dir = std::filesystem::temp_directory_path() / "tarn-meta-properties-cluster-test";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string cluster = "AAAAAAAAAAAAAAAAAAAAAA";
  std::string proposed;
  auto etcd = [&](const std::string& p) -> result<std::string, std::string> {
    proposed = p;
    return cluster;
  };
  auto first = load_or_create_meta_properties(dir.string(), 2, etcd);
  ASSERT_TRUE(first.has_value()) << first.error();
  EXPECT_EQ(*first, cluster);
  EXPECT_EQ(proposed.size(), 22u) << "a fresh id is proposed";
  auto again = load_or_create_meta_properties(dir.string(), 2, etcd);
  ASSERT_TRUE(again.has_value()) << again.error();
  EXPECT_EQ(proposed, cluster) << "the stored id is proposed";
  auto other = load_or_create_meta_properties(
      dir.string(), 2, [](const std::string&) -> result<std::string, std::string> {
        return std::string("BBBBBBBBBBBBBBBBBBBBBB");
      });
  ASSERT_FALSE(other.has_value());
  EXPECT_NE(other.error().find("doesn't match stored clusterId"), std::string::npos)
      << other.error();
  auto down = load_or_create_meta_properties(
      dir.string(), 2, [](const std::string&) -> result<std::string, std::string> {
        return fail(std::string("etcd unreachable"));
      });
  ASSERT_FALSE(down.has_value());
  EXPECT_EQ(down.error(), "etcd unreachable");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tarn::broker
