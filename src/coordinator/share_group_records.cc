// A share group's __consumer_offsets records (share_group_records.h): built with the codecs
// generated from schema/records/share_group_*.schema, diffed between two states of the group,
// and replayed.
#include "coordinator/share_group_records.h"

#include <algorithm>
#include <utility>

#include "coordinator/wire_ids.h"
#include "protocol/reader.h"
#include "protocol/records.h"
#include "record/batch_builder.h"

namespace tarn::coordinator {

namespace {

template <class K>
coordinator_record share_tombstone(const K& key) {
  return {protocol::encode_record_key(key), std::nullopt};
}
template <class K, class V>
coordinator_record share_record(const K& key, const V& value) {
  return {protocol::encode_record_key(key), protocol::encode_record_value(value, 0)};
}

template <class K>
K share_group_key(std::string_view group) {
  K k;
  k.group_id = group;
  return k;
}
template <class K>
K share_member_key(std::string_view group, std::string_view member) {
  K k;
  k.group_id = group;
  k.member_id = member;
  return k;
}

coordinator_record share_epoch_record(const share_group_state& g) {
  protocol::share_group_metadata_value v;
  v.epoch = g.group_epoch;
  v.metadata_hash = g.metadata_hash;
  return share_record(share_group_key<protocol::share_group_metadata_key>(g.group_id), v);
}

coordinator_record share_subscription_record(std::string_view group, const share_group_member& m) {
  protocol::share_group_member_metadata_value v;
  // Null without a rack (the generated default is Kafka's "", which its helper never writes).
  v.rack_id = m.rack_id ? std::optional<std::string_view>(*m.rack_id) : std::nullopt;
  v.client_id = m.client_id;
  v.client_host = m.client_host;
  for (const auto& n : m.subscribed_topic_names) v.subscribed_topic_names.push_back(n);
  return share_record(
      share_member_key<protocol::share_group_member_metadata_key>(group, m.member_id), v);
}

coordinator_record share_target_member_record(std::string_view group, const share_group_member& m) {
  protocol::share_group_target_assignment_member_value v;
  for (const auto& [topic, parts] : m.assignment) {
    auto& tp = v.topic_partitions.emplace_back();
    tp.topic_id = to_wire(topic);
    tp.partitions = parts;
  }
  return share_record(
      share_member_key<protocol::share_group_target_assignment_member_key>(group, m.member_id), v);
}

coordinator_record share_target_metadata_record(const share_group_state& g) {
  protocol::share_group_target_assignment_metadata_value v;
  v.assignment_epoch = g.assignment_epoch;
  v.assignment_timestamp = g.assignment_timestamp_ms;
  return share_record(
      share_group_key<protocol::share_group_target_assignment_metadata_key>(g.group_id), v);
}

coordinator_record share_current_assignment_record(std::string_view group,
                                                   const share_group_member& m) {
  protocol::share_group_current_member_assignment_value v;
  v.member_epoch = m.member_epoch;
  v.previous_member_epoch = m.previous_member_epoch;
  v.state = share_member_state_stable;
  for (const auto& [topic, parts] : m.current_assignment) {
    auto& tp = v.assigned_partitions.emplace_back();
    tp.topic_id = to_wire(topic);
    tp.partitions = parts;
  }
  return share_record(
      share_member_key<protocol::share_group_current_member_assignment_key>(group, m.member_id), v);
}

coordinator_record share_state_partition_record(const share_group_state& g) {
  protocol::share_group_state_partition_metadata_value v;
  for (const auto& [topic, t] : g.initialized) {
    auto& info = v.initialized_topics.emplace_back();
    info.topic_id = to_wire(topic);
    info.topic_name = t.topic_name;
    info.partitions = t.partitions;
  }
  return share_record(
      share_group_key<protocol::share_group_state_partition_metadata_key>(g.group_id), v);
}

bool same_share_subscription(const share_group_member& a, const share_group_member& b) {
  return a.rack_id == b.rack_id && a.client_id == b.client_id && a.client_host == b.client_host &&
         a.subscribed_topic_names == b.subscribed_topic_names;
}
bool same_share_current(const share_group_member& a, const share_group_member& b) {
  return a.member_epoch == b.member_epoch && a.previous_member_epoch == b.previous_member_epoch &&
         a.current_assignment == b.current_assignment;
}

template <class K>
std::optional<K> decode_share_key(protocol::reader& r) {
  auto k = K::decode(r, 0);
  if (!k) return std::nullopt;
  return std::move(*k);
}

template <class V>
std::optional<V> decode_share_value(std::span<const uint8_t> bytes) {
  protocol::reader r(bytes);
  const int16_t version = r.read_int16();
  if (!r.ok() || version < V::min_version || version > V::max_version) return std::nullopt;
  auto v = V::decode(r, version);
  if (!v) return std::nullopt;
  return std::move(*v);
}

template <class TopicPartitions>
share_assignment share_assignment_of(const std::vector<TopicPartitions>& tps) {
  share_assignment out;
  for (const auto& tp : tps) {
    if (tp.partitions.empty()) continue;
    auto& parts = out[from_wire(tp.topic_id)];
    parts.assign(tp.partitions.begin(), tp.partitions.end());
    std::sort(parts.begin(), parts.end());
  }
  return out;
}

}  // namespace

std::vector<coordinator_record> share_group_change_records(
    const std::optional<share_group_state>& before, const share_group_state& after) {
  std::vector<coordinator_record> out;
  const std::string_view group = after.group_id;
  static const share_group_state none;
  const share_group_state& b = before ? *before : none;
  for (const auto& [id, m] : b.members) {
    if (after.members.contains(id)) continue;
    out.push_back(share_tombstone(
        share_member_key<protocol::share_group_current_member_assignment_key>(group, id)));
    out.push_back(share_tombstone(
        share_member_key<protocol::share_group_target_assignment_member_key>(group, id)));
    out.push_back(
        share_tombstone(share_member_key<protocol::share_group_member_metadata_key>(group, id)));
  }
  auto old_member = [&b](const std::string& id) -> const share_group_member* {
    auto it = b.members.find(id);
    return it == b.members.end() ? nullptr : &it->second;
  };
  for (const auto& [id, m] : after.members) {
    const auto* o = old_member(id);
    if (o == nullptr || !same_share_subscription(*o, m))
      out.push_back(share_subscription_record(group, m));
  }
  if (!before || b.group_epoch != after.group_epoch || b.metadata_hash != after.metadata_hash) {
    out.push_back(share_epoch_record(after));
  }
  bool target_changed = false;
  for (const auto& [id, m] : after.members) {
    const auto* o = old_member(id);
    if (o == nullptr || o->assignment != m.assignment) {
      out.push_back(share_target_member_record(group, m));
      target_changed = true;
    }
  }
  if (target_changed || b.assignment_epoch != after.assignment_epoch) {
    out.push_back(share_target_metadata_record(after));
  }
  for (const auto& [id, m] : after.members) {
    const auto* o = old_member(id);
    if (o == nullptr || !same_share_current(*o, m))
      out.push_back(share_current_assignment_record(group, m));
  }
  if (b.initialized != after.initialized) out.push_back(share_state_partition_record(after));
  return out;
}

std::vector<coordinator_record> share_group_tombstones(const share_group_state& g) {
  std::vector<coordinator_record> out;
  const std::string_view group = g.group_id;
  for (const auto& [id, m] : g.members) {
    out.push_back(share_tombstone(
        share_member_key<protocol::share_group_current_member_assignment_key>(group, id)));
  }
  for (const auto& [id, m] : g.members) {
    out.push_back(share_tombstone(
        share_member_key<protocol::share_group_target_assignment_member_key>(group, id)));
  }
  out.push_back(share_tombstone(
      share_group_key<protocol::share_group_target_assignment_metadata_key>(group)));
  for (const auto& [id, m] : g.members) {
    out.push_back(
        share_tombstone(share_member_key<protocol::share_group_member_metadata_key>(group, id)));
  }
  out.push_back(
      share_tombstone(share_group_key<protocol::share_group_state_partition_metadata_key>(group)));
  out.push_back(share_tombstone(share_group_key<protocol::share_group_metadata_key>(group)));
  return out;
}

std::vector<uint8_t> build_coordinator_batch(const std::vector<coordinator_record>& records,
                                             int64_t now_ms) {
  record::batch_builder_config bc;
  // The records' own size with a bound on each record's framing: the builder reserves it.
  size_t bytes = record::record_batch_overhead + 64;
  for (const auto& r : records) bytes += r.key.size() + (r.value ? r.value->size() : 0) + 40;
  bc.batch_size = bytes;
  bc.base_sequence = 0;
  record::batch_builder builder(bc);
  for (const auto& r : records) {
    std::optional<record::bytes_view> value;
    if (r.value) value = record::bytes_view(*r.value);
    if (builder.try_append(now_ms, record::bytes_view(r.key), value) !=
        record::append_result::appended) {
      return {};
    }
  }
  auto built = builder.build();
  return built ? std::move(*built) : std::vector<uint8_t>{};
}

share_group_state& share_group_replay::group(std::string_view id) {
  auto it = groups_.find(id);
  if (it == groups_.end()) {
    it = groups_.emplace(std::string(id), share_group_state{}).first;
    it->second.group_id = std::string(id);
  }
  return it->second;
}

void share_group_replay::apply(std::span<const uint8_t> key,
                               std::optional<std::span<const uint8_t>> value) {
  protocol::reader kr(key);
  const int16_t type = kr.read_int16();
  if (!kr.ok() || !is_share_group_record_type(type)) return;
  auto skip = [this] { ++skipped_; };
  // Every share-group key starts with the group id; the member keys then hold the member id.
  auto find_group = [this](std::string_view id) -> share_group_state* {
    auto it = groups_.find(id);
    return it == groups_.end() ? nullptr : &it->second;
  };
  switch (type) {
    case record_type_share_group_metadata: {
      auto k = decode_share_key<protocol::share_group_metadata_key>(kr);
      if (!k) return skip();
      if (!value) {
        if (auto it = groups_.find(k->group_id); it != groups_.end()) groups_.erase(it);
        return;
      }
      auto v = decode_share_value<protocol::share_group_metadata_value>(*value);
      if (!v) return skip();
      auto& g = group(k->group_id);
      g.group_epoch = v->epoch;
      g.metadata_hash = v->metadata_hash;
      return;
    }
    case record_type_share_group_target_assignment_metadata: {
      auto k = decode_share_key<protocol::share_group_target_assignment_metadata_key>(kr);
      if (!k) return skip();
      if (!value) {
        if (auto* g = find_group(k->group_id)) g->assignment_epoch = 0;
        return;
      }
      auto v = decode_share_value<protocol::share_group_target_assignment_metadata_value>(*value);
      if (!v) return skip();
      auto& g = group(k->group_id);
      g.assignment_epoch = v->assignment_epoch;
      g.assignment_timestamp_ms = v->assignment_timestamp;
      return;
    }
    case record_type_share_group_state_partition_metadata: {
      auto k = decode_share_key<protocol::share_group_state_partition_metadata_key>(kr);
      if (!k) return skip();
      if (!value) {
        if (auto* g = find_group(k->group_id)) g->initialized.clear();
        return;
      }
      auto v = decode_share_value<protocol::share_group_state_partition_metadata_value>(*value);
      if (!v) return skip();
      auto& g = group(k->group_id);
      g.initialized.clear();
      // Initializing share-partitions count as initialized: tarn writes their state before it
      // answers, so one that is there after a restart was initialized (Kafka's coordinator
      // retries the initialization).
      for (const auto* list : {&v->initializing_topics, &v->initialized_topics}) {
        for (const auto& t : *list) {
          auto& it = g.initialized[from_wire(t.topic_id)];
          it.topic_name = std::string(t.topic_name);
          it.partitions.insert(it.partitions.end(), t.partitions.begin(), t.partitions.end());
          std::sort(it.partitions.begin(), it.partitions.end());
          it.partitions.erase(std::unique(it.partitions.begin(), it.partitions.end()),
                              it.partitions.end());
        }
      }
      return;
    }
    default:
      break;
  }
  // The member records (10, 13, 14): GroupId then MemberId.
  std::string group_id;
  std::string member_id;
  if (type == record_type_share_group_member_metadata) {
    auto k = decode_share_key<protocol::share_group_member_metadata_key>(kr);
    if (!k) return skip();
    group_id = std::string(k->group_id);
    member_id = std::string(k->member_id);
  } else if (type == record_type_share_group_target_assignment_member) {
    auto k = decode_share_key<protocol::share_group_target_assignment_member_key>(kr);
    if (!k) return skip();
    group_id = std::string(k->group_id);
    member_id = std::string(k->member_id);
  } else {
    auto k = decode_share_key<protocol::share_group_current_member_assignment_key>(kr);
    if (!k) return skip();
    group_id = std::string(k->group_id);
    member_id = std::string(k->member_id);
  }
  if (!value) {
    auto* g = find_group(group_id);
    if (g == nullptr) return;
    auto it = g->members.find(member_id);
    if (it == g->members.end()) return;
    if (type == record_type_share_group_member_metadata) {
      g->members.erase(it);
    } else if (type == record_type_share_group_target_assignment_member) {
      it->second.assignment.clear();
    } else {
      it->second.current_assignment.clear();
      it->second.member_epoch = 0;
      it->second.previous_member_epoch = 0;
    }
    return;
  }
  // The value decodes before anything is made: a torn record leaves no member behind.
  auto member = [&]() -> share_group_member& {
    auto& g = group(group_id);
    auto [mit, fresh] = g.members.try_emplace(member_id);
    if (fresh) mit->second.member_id = member_id;
    return mit->second;
  };
  if (type == record_type_share_group_member_metadata) {
    auto v = decode_share_value<protocol::share_group_member_metadata_value>(*value);
    if (!v) return skip();
    share_group_member& m = member();
    m.rack_id = v->rack_id ? std::optional<std::string>(*v->rack_id) : std::nullopt;
    m.client_id = std::string(v->client_id);
    m.client_host = std::string(v->client_host);
    m.subscribed_topic_names.assign(v->subscribed_topic_names.begin(),
                                    v->subscribed_topic_names.end());
    std::sort(m.subscribed_topic_names.begin(), m.subscribed_topic_names.end());
  } else if (type == record_type_share_group_target_assignment_member) {
    auto v = decode_share_value<protocol::share_group_target_assignment_member_value>(*value);
    if (!v) return skip();
    member().assignment = share_assignment_of(v->topic_partitions);
  } else {
    auto v = decode_share_value<protocol::share_group_current_member_assignment_value>(*value);
    if (!v) return skip();
    share_group_member& m = member();
    m.member_epoch = v->member_epoch;
    m.previous_member_epoch = v->previous_member_epoch;
    m.current_assignment = share_assignment_of(v->assigned_partitions);
  }
}

}  // namespace tarn::coordinator
