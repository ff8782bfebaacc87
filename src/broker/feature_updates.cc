// UpdateFeatures' decisions (see feature_updates.h).
#include "broker/feature_updates.h"

#include <fmt/format.h>

#include <algorithm>

#include "broker/features.h"
#include "protocol/error_codes.h"

namespace tarn::broker {

namespace {

constexpr std::string_view metadata_version = "metadata.version";

// MetadataVersion.didMetadataChange of Kafka 4.4.0's levels 7 (3.3-IV3) to 33 (4.4-IV2): a
// downgrade across one of these could drop metadata the older format cannot hold.
bool metadata_changed_at(int16_t level) {
  static constexpr int16_t changed[] = {7, 8, 11, 13, 14, 15, 17, 23, 30, 32, 33};
  return std::find(std::begin(changed), std::end(changed), level) != std::end(changed);
}

feature_update_error invalid_update(const feature_update& u, const std::string& why) {
  return {static_cast<int16_t>(protocol::error_code::invalid_update_version),
          fmt::format("Invalid update version {} for feature {}. {}", u.level, u.name, why)};
}

feature_update_error refused_downgrade(int16_t from, int16_t to, const std::string& why) {
  return {static_cast<int16_t>(protocol::error_code::invalid_update_version),
          fmt::format("Unsupported metadata.version downgrade from {} to {}. {}", from, to, why)};
}

// Kafka 4.4's FeatureVersion.dependencies() of the levels tarn supports: a level that needs
// another feature at a level at least this (Feature.validateVersion).
struct feature_dependency {
  std::string_view feature;
  int16_t level;
  std::string_view depends_on;
  int16_t depends_on_level;
};
constexpr feature_dependency dependencies[] = {
    // EligibleLeaderReplicasVersion.ELRV_1: metadata.version 4.0-IV1.
    {"eligible.leader.replicas.version", 1, metadata_version, 23},
};

const supported_feature* find_supported(std::string_view name) {
  for (const supported_feature& f : tarn_supported_features) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

}  // namespace

result<cluster::feature_map, feature_update_error> decide_feature_updates(
    const cluster::feature_map& finalized, const std::vector<feature_update>& updates,
    int32_t node_id) {
  // A name given twice: Kafka's controller keeps the last in its map.
  std::vector<feature_update> last;
  for (const auto& u : updates) {
    auto it = std::find_if(last.begin(), last.end(), [&](auto& x) { return x.name == u.name; });
    if (it != last.end()) {
      *it = u;
    } else {
      last.push_back(u);
    }
  }
  cluster::feature_map out;
  for (const feature_update& u : last) {
    const auto type = static_cast<upgrade_type>(u.type);
    if (u.type < 1 || u.type > 3) {
      return fail(invalid_update(u, "The controller does not support the given upgrade type."));
    }
    auto cur = finalized.find(u.name);
    const int16_t current = cur == finalized.end() ? 0 : cur->second;
    if (u.level < 0) return fail(invalid_update(u, "A feature version cannot be less than 0."));
    const supported_feature* f = find_supported(u.name);
    const int16_t min = f ? f->min_version : 0, max = f ? f->max_version : 0;
    if (u.level < min || u.level > max) {
      const std::string who = fmt::format("Local controller {}", node_id);
      return fail(invalid_update(
          u, max == 0 ? who + " does not support this feature."
                      : fmt::format("{} only supports versions {}-{}", who, min, max)));
    }
    if (u.level < current && type == upgrade_type::upgrade) {
      return fail(invalid_update(u,
                                 "Can't downgrade the version of this feature without setting the "
                                 "upgrade type to either safe or unsafe downgrade."));
    }
    if (u.level > current && type != upgrade_type::upgrade) {
      return fail(invalid_update(u, "Can't downgrade to a newer version."));
    }
    if (u.name == metadata_version) {
      bool changed = false;
      for (int16_t l = static_cast<int16_t>(u.level + 1); l <= current; ++l) {
        changed = changed || metadata_changed_at(l);
      }
      if (u.level < current && changed) {
        return fail(refused_downgrade(
            current, u.level,
            type == upgrade_type::unsafe_downgrade
                ? "Unsafe metadata downgrade is not supported in this version."
                : "Refusing to perform the requested downgrade because it might delete "
                  "metadata information."));
      }
    } else if (f == nullptr) {
      // Level 0 of a feature nobody knows: Kafka's Feature.featureFromName fails.
      return fail(invalid_update(u, fmt::format("Feature {} not found.", u.name)));
    }
    out[u.name] = u.level;
  }
  // Dependencies against the levels as they would be (Kafka's proposedUpdatedVersions: the
  // finalized levels with these updates applied).
  for (const feature_update& u : last) {
    for (const feature_dependency& d : dependencies) {
      if (u.name != d.feature || u.level < d.level) continue;
      auto proposed = out.find(std::string(d.depends_on));
      auto cur = finalized.find(std::string(d.depends_on));
      const int16_t level = proposed != out.end()    ? proposed->second
                            : cur != finalized.end() ? cur->second
                                                     : int16_t{0};
      if (level < d.depends_on_level) {
        return fail(invalid_update(
            u, fmt::format("{} could not be set to {} because it depends on {} level {}", u.name,
                           u.level, d.depends_on, d.depends_on_level)));
      }
    }
  }
  return out;
}

}  // namespace tarn::broker
