// UpdateFeatures' decisions, as Kafka 4.4's controller makes them (FeatureControlManager
// .updateFeatures, QuorumFeatures.reasonNotSupported), without sockets: each update checked
// against the upgrade type, the levels this node supports (features.h) and, for
// metadata.version, whether a downgrade would lose metadata; the first failure fails them all.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/result.h"
#include "cluster/metadata_store.h"

namespace tarn::broker {

// FeatureUpdate.UpgradeType codes (UpdateFeatures v1+; v0's AllowDowngrade maps to 1 or 2).
enum class upgrade_type : int8_t {
  unknown = 0,
  upgrade = 1,
  safe_downgrade = 2,
  unsafe_downgrade = 3
};

struct feature_update {
  std::string name;
  int16_t level = 0;
  int8_t type = static_cast<int8_t>(upgrade_type::upgrade);
};

struct feature_update_error {
  int16_t code = 0;  // INVALID_UPDATE_VERSION
  std::string message;
};

// The levels to record (0 = the feature is no longer finalized) for `updates`, given the levels
// finalized now (every supported feature, features.h's finalized_features), or the first
// update's error in Kafka's words ("Invalid update version 2 for feature group.version. Local
// controller 1 only supports versions 0-1"). A feature named twice takes its last update.
result<cluster::feature_map, feature_update_error> decide_feature_updates(
    const cluster::feature_map& finalized, const std::vector<feature_update>& updates,
    int32_t node_id);

}  // namespace tarn::broker
