// The cluster metadata as the records of the metadata log build it (Kafka's MetadataImage, the
// parts a single node keeps): topics with their ids and partition counts, topic configs, dynamic
// broker configs, client quotas, SCRAM credentials, ACLs and finalized feature levels. Replaying
// the log applies each record in order; a snapshot is the image written back as records.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cluster/metadata_records.h"
#include "storage/log_config.h"

namespace tarn::cluster {

struct topic_image {
  std::string name;
  storage::uuid topic_id;
  int32_t partitions = 0;
  int32_t leader = -1;  // in a cluster, the broker leading its partitions (-1 on a single node)
};

using quota_entity = std::vector<std::pair<std::string, std::optional<std::string>>>;

struct metadata_image {
  int64_t next_offset = 0;  // the offset the next entry gets
  std::map<storage::uuid, topic_image> topics;
  // ConfigRecords by (resource type, resource name): topic names, broker ids and "" (the
  // cluster-wide broker default).
  std::map<std::pair<int8_t, std::string>, storage::config_map> configs;
  std::map<quota_entity, std::map<std::string, double>> quotas;
  std::map<std::string, int16_t, std::less<>> features;
  // UserScramCredentialRecords by (user, mechanism).
  std::map<std::pair<std::string, int8_t>, user_scram_credential_record> scram_credentials;
  // ACL bindings by id (AccessControlEntryRecord; RemoveAccessControlEntryRecord drops one).
  std::map<storage::uuid, access_control_entry_record> acls;

  // Applies one record (a PartitionRecord grows its topic's count to cover it; a ConfigRecord
  // without value removes the key; RemoveTopicRecord also drops the topic's configs; a feature
  // level of 0 removes the feature, as Kafka's FeaturesDelta does). Records that name an unknown
  // topic id are ignored.
  void apply(const metadata_record& record);
  const topic_image* find_topic(std::string_view name) const;
  const storage::config_map* find_configs(int8_t resource_type, std::string_view name) const;
  // The whole image as records (a snapshot), in an order apply() rebuilds it from.
  std::vector<metadata_record> to_records() const;
};

}  // namespace tarn::cluster
