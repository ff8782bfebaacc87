// The features tarn supports and finalizes (Kafka's KRaft feature flags, as ApiVersions v3+ and
// kafka-features.sh describe report them). The levels are Kafka 4.4.0's for the features tarn
// implements: metadata.version 3.3-IV3 (7) to 4.4-IV2 (33), group.version 1 (KIP-848 consumer
// groups), transaction.version 2 (KIP-890 part 2: clients bump the epoch at every EndTxn and let
// Produce add partitions; 0 and 1 keep transactions v1), share.version 2 (KIP-932 share groups,
// with RENEW acknowledgements: Kafka 4.4's latest production level, which a fresh cluster
// finalizes; 0 turns share groups off), eligible.leader.replicas.version 1 (KIP-966's eligible
// leader replicas, finalized on a new cluster since Kafka 4.1; 0 turns them off, and the
// controller then empties every partition's ELR). A FeatureLevelRecord in the metadata
// log overrides the default finalized level.
#pragma once

#include <cstdint>
#include <string_view>

#include "cluster/metadata_store.h"

namespace tarn::broker {

struct supported_feature {
  std::string_view name;
  int16_t min_version;
  int16_t max_version;
  int16_t default_level;  // finalized when the metadata log holds no level for it
};

inline constexpr supported_feature tarn_supported_features[] = {
    {"eligible.leader.replicas.version", 0, 1, 1},
    {"group.version", 0, 1, 1},
    {"metadata.version", 7, 33, 33},
    {"share.version", 0, 2, 2},
    {"transaction.version", 0, 2, 2},
};

// Every supported feature's finalized level (a level of 0 is not finalized, as Kafka omits it).
inline cluster::feature_map finalized_features(const cluster::metadata_store& store) {
  cluster::feature_map recorded = store.finalized_features();
  cluster::feature_map out;
  for (const supported_feature& f : tarn_supported_features) {
    auto it = recorded.find(f.name);
    int16_t level = it != recorded.end() ? it->second : f.default_level;
    if (level > 0) out.emplace(std::string(f.name), level);
  }
  return out;
}

// Share groups (KIP-932) are served while share.version is finalized at 1 or more, as Kafka 4.4's
// ShareVersion.supportsShareGroups.
inline bool share_groups_enabled(const cluster::metadata_store& store) {
  const cluster::feature_map finalized = finalized_features(store);
  auto it = finalized.find("share.version");
  return it != finalized.end() && it->second >= 1;
}

// KIP-966's eligible leader replicas are kept while eligible.leader.replicas.version is
// finalized at 1 or more (on by default, as in a new Kafka 4.4 cluster).
inline bool elr_enabled(const cluster::metadata_store& store) {
  const cluster::feature_map finalized = finalized_features(store);
  auto it = finalized.find("eligible.leader.replicas.version");
  return it != finalized.end() && it->second >= 1;
}

}  // namespace tarn::broker
