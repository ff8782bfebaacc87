// Applying metadata records to the image, and writing it back as records (metadata_image.h).
#include "cluster/metadata_image.h"

namespace tarn::cluster {

void metadata_image::apply(const metadata_record& record) {
  std::visit(
      [&](const auto& r) {
        using T = std::decay_t<decltype(r)>;
        if constexpr (std::is_same_v<T, topic_record>) {
          topics[r.topic_id] = topic_image{r.name, r.topic_id, 0};
        } else if constexpr (std::is_same_v<T, partition_record>) {
          auto it = topics.find(r.topic_id);
          if (it != topics.end() && r.partition_id >= it->second.partitions) {
            it->second.partitions = r.partition_id + 1;
          }
          if (it != topics.end() && r.leader >= 0) it->second.leader = r.leader;
        } else if constexpr (std::is_same_v<T, config_record>) {
          auto key = std::make_pair(r.resource_type, r.resource_name);
          if (r.value) {
            configs[key][r.name] = *r.value;
          } else if (auto it = configs.find(key); it != configs.end()) {
            it->second.erase(r.name);
            if (it->second.empty()) configs.erase(it);
          }
        } else if constexpr (std::is_same_v<T, remove_topic_record>) {
          auto it = topics.find(r.topic_id);
          if (it != topics.end()) {
            configs.erase({config_resource_topic, it->second.name});
            topics.erase(it);
          }
        } else if constexpr (std::is_same_v<T, feature_level_record>) {
          // Level 0 is kept: the feature is no longer finalized, which differs from a feature
          // never set (then the broker's default level is finalized, features.h).
          features[r.name] = r.feature_level;
        } else if constexpr (std::is_same_v<T, user_scram_credential_record>) {
          scram_credentials[{r.name, r.mechanism}] = r;
        } else if constexpr (std::is_same_v<T, remove_user_scram_credential_record>) {
          scram_credentials.erase({r.name, r.mechanism});
        } else if constexpr (std::is_same_v<T, access_control_entry_record>) {
          acls[r.id] = r;
        } else if constexpr (std::is_same_v<T, remove_access_control_entry_record>) {
          acls.erase(r.id);
        } else {
          static_assert(std::is_same_v<T, client_quota_record>);
          quota_entity entity;
          for (const auto& e : r.entities) entity.emplace_back(e.entity_type, e.entity_name);
          if (r.remove) {
            auto it = quotas.find(entity);
            if (it != quotas.end()) {
              it->second.erase(r.key);
              if (it->second.empty()) quotas.erase(it);
            }
          } else {
            quotas[entity][r.key] = r.value;
          }
        }
      },
      record);
}

const topic_image* metadata_image::find_topic(std::string_view name) const {
  for (const auto& [id, t] : topics) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

const storage::config_map* metadata_image::find_configs(int8_t resource_type,
                                                        std::string_view name) const {
  auto it = configs.find({resource_type, std::string(name)});
  return it == configs.end() ? nullptr : &it->second;
}

std::vector<metadata_record> metadata_image::to_records() const {
  std::vector<metadata_record> out;
  for (const auto& [name, level] : features) out.push_back(feature_level_record{name, level});
  for (const auto& [id, t] : topics) {
    out.push_back(topic_record{t.name, id});
    for (int32_t p = 0; p < t.partitions; ++p) out.push_back(partition_record{p, id, t.leader});
  }
  for (const auto& [key, map] : configs) {
    for (const auto& [k, v] : map) out.push_back(config_record{key.first, key.second, k, v});
  }
  for (const auto& [entity, values] : quotas) {
    for (const auto& [k, v] : values) {
      client_quota_record q;
      for (const auto& [type, name] : entity) q.entities.push_back({type, name});
      q.key = k;
      q.value = v;
      out.push_back(std::move(q));
    }
  }
  for (const auto& [key, credential] : scram_credentials) out.push_back(credential);
  for (const auto& [id, acl] : acls) out.push_back(acl);
  return out;
}

}  // namespace tarn::cluster
