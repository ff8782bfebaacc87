// The records of a KIP-848 consumer group (consumer_group_records.h) and their replay into the
// group (consumer_group::replay, as Kafka's GroupMetadataManager.replay), and the tombstones that
// delete it.
#include "coordinator/consumer_group_records.h"

#include <utility>

namespace tarn::coordinator {

namespace {

template <class K>
coordinator_record tombstone(const K& key) {
  return {protocol::encode_record_key(key), std::nullopt};
}
template <class K, class V>
coordinator_record make_record(const K& key, const V& value) {
  return {protocol::encode_record_key(key), protocol::encode_record_value(value, 0)};
}

template <class K>
std::optional<K> decode_key(std::span<const uint8_t> bytes, int16_t type) {
  protocol::reader r(bytes);
  if (r.read_int16() != type || !r.ok()) return std::nullopt;
  auto k = K::decode(r, 0);
  if (!k) return std::nullopt;
  return std::move(*k);
}

template <class V>
std::optional<V> decode_value(std::span<const uint8_t> bytes) {
  protocol::reader r(bytes);
  const int16_t version = r.read_int16();
  if (!r.ok()) return std::nullopt;
  auto v = V::decode(r, version);
  if (!v) return std::nullopt;
  return std::move(*v);
}

epoch_assignment from_record(
    const std::vector<protocol::consumer_group_current_member_assignment_value::topic_partitions>&
        tps,
    int32_t member_epoch) {
  epoch_assignment out;
  for (const auto& tp : tps) {
    auto& parts = out[from_wire(tp.topic_id)];
    const bool epochs =
        tp.assignment_epochs && tp.assignment_epochs->size() == tp.partitions.size();
    for (size_t i = 0; i < tp.partitions.size(); ++i) {
      // Records written before KIP-1251 carry no epochs: the member epoch stands in.
      parts[tp.partitions[i]] = epochs ? (*tp.assignment_epochs)[i] : member_epoch;
    }
    if (parts.empty()) out.erase(from_wire(tp.topic_id));
  }
  return out;
}

}  // namespace

coordinator_record group_epoch_record(std::string_view group, int32_t epoch, int64_t hash) {
  protocol::consumer_group_metadata_key k;
  k.group_id = group;
  protocol::consumer_group_metadata_value v;
  v.epoch = epoch;
  v.metadata_hash = hash;
  return make_record(k, v);
}

coordinator_record member_metadata_record(std::string_view group, const consumer_group_member& m) {
  protocol::consumer_group_member_metadata_key k;
  k.group_id = group;
  k.member_id = m.member_id;
  protocol::consumer_group_member_metadata_value v;
  v.instance_id = to_view(m.instance_id);
  v.rack_id = to_view(m.rack_id);
  v.client_id = m.client_id;
  v.client_host = m.client_host;
  for (const auto& n : m.subscribed_topic_names) v.subscribed_topic_names.push_back(n);
  v.subscribed_topic_regex = std::string_view(m.subscribed_topic_regex);
  v.rebalance_timeout_ms = m.rebalance_timeout_ms;
  v.server_assignor = to_view(m.server_assignor);
  if (m.classic_member) {
    // Assigned, not emplace()d: clang 14 refuses emplace() for the nested struct.
    v.classic_member_metadata =
        protocol::consumer_group_member_metadata_value::classic_member_metadata_data{};
    auto& cm = *v.classic_member_metadata;
    cm.session_timeout_ms = m.classic_member->session_timeout_ms;
    for (const auto& p : m.classic_member->supported_protocols) {
      auto& sp = cm.supported_protocols.emplace_back();
      sp.name = p.name;
      sp.metadata = p.metadata;
    }
  } else {
    v.classic_member_metadata = std::nullopt;  // Kafka's orElse(null): written as null
  }
  return make_record(k, v);
}

coordinator_record member_metadata_tombstone(std::string_view group, std::string_view member) {
  protocol::consumer_group_member_metadata_key k;
  k.group_id = group;
  k.member_id = member;
  return tombstone(k);
}

coordinator_record target_member_record(std::string_view group, std::string_view member,
                                        const topic_assignment& a) {
  protocol::consumer_group_target_assignment_member_key k;
  k.group_id = group;
  k.member_id = member;
  protocol::consumer_group_target_assignment_member_value v;
  for (const auto& [t, parts] : a) {
    auto& tp = v.topic_partitions.emplace_back();
    tp.topic_id = to_wire(t);
    tp.partitions.assign(parts.begin(), parts.end());
  }
  return make_record(k, v);
}

coordinator_record target_member_tombstone(std::string_view group, std::string_view member) {
  protocol::consumer_group_target_assignment_member_key k;
  k.group_id = group;
  k.member_id = member;
  return tombstone(k);
}

coordinator_record target_metadata_record(std::string_view group, int32_t epoch, int64_t ts) {
  protocol::consumer_group_target_assignment_metadata_key k;
  k.group_id = group;
  protocol::consumer_group_target_assignment_metadata_value v;
  v.assignment_epoch = epoch;
  v.assignment_timestamp = ts;
  return make_record(k, v);
}

void add_topic_partitions(
    std::vector<protocol::consumer_group_current_member_assignment_value::topic_partitions>& out,
    const epoch_assignment& a) {
  for (const auto& [t, parts] : a) {
    auto& tp = out.emplace_back();
    tp.topic_id = to_wire(t);
    std::vector<int32_t> epochs;
    for (const auto& [p, e] : parts) {
      tp.partitions.push_back(p);
      epochs.push_back(e);
    }
    tp.assignment_epochs = std::move(epochs);
  }
}

coordinator_record current_assignment_record(std::string_view group,
                                             const consumer_group_member& m) {
  protocol::consumer_group_current_member_assignment_key k;
  k.group_id = group;
  k.member_id = m.member_id;
  protocol::consumer_group_current_member_assignment_value v;
  v.member_epoch = m.member_epoch;
  v.previous_member_epoch = m.previous_member_epoch;
  v.state = static_cast<int8_t>(m.state);
  add_topic_partitions(v.assigned_partitions, m.assigned_partitions);
  add_topic_partitions(v.partitions_pending_revocation, m.partitions_pending_revocation);
  return make_record(k, v);
}

coordinator_record current_assignment_tombstone(std::string_view group, std::string_view member) {
  protocol::consumer_group_current_member_assignment_key k;
  k.group_id = group;
  k.member_id = member;
  return tombstone(k);
}

coordinator_record regex_record(std::string_view group, std::string_view regex,
                                const resolved_regex& r) {
  protocol::consumer_group_regular_expression_key k;
  k.group_id = group;
  k.regular_expression = regex;
  protocol::consumer_group_regular_expression_value v;
  for (const auto& t : r.topics) v.topics.push_back(t);
  v.version_ = r.version;
  v.timestamp = r.timestamp_ms;
  return make_record(k, v);
}

coordinator_record regex_tombstone(std::string_view group, std::string_view regex) {
  protocol::consumer_group_regular_expression_key k;
  k.group_id = group;
  k.regular_expression = regex;
  return tombstone(k);
}

void remove_member_records(std::string_view group, std::string_view member,
                           std::vector<coordinator_record>& out) {
  out.push_back(current_assignment_tombstone(group, member));
  out.push_back(target_member_tombstone(group, member));
  out.push_back(member_metadata_tombstone(group, member));
}

coordinator_record target_metadata_tombstone(std::string_view group) {
  protocol::consumer_group_target_assignment_metadata_key k;
  k.group_id = group;
  return tombstone(k);
}

coordinator_record partition_metadata_tombstone(std::string_view group) {
  protocol::consumer_group_partition_metadata_key k;
  k.group_id = group;
  return tombstone(k);
}

coordinator_record consumer_group_metadata_tombstone(std::string_view group) {
  protocol::consumer_group_metadata_key k;
  k.group_id = group;
  return tombstone(k);
}

// --- Delete --------------------------------------------------------------------------------------

void consumer_group::delete_records(std::vector<coordinator_record>& out, std::string_view replaced,
                                    std::string_view joining) const {
  std::vector<std::string_view> ids;
  for (const auto& [id, m] : members_) {
    ids.push_back(!replaced.empty() && id == replaced ? joining : std::string_view(id));
  }
  for (auto id : ids) out.push_back(current_assignment_tombstone(group_id_, id));
  for (auto id : ids) out.push_back(target_member_tombstone(group_id_, id));
  out.push_back(target_metadata_tombstone(group_id_));
  for (auto id : ids) out.push_back(member_metadata_tombstone(group_id_, id));
  for (const auto& [regex, r] : regexes_) out.push_back(regex_tombstone(group_id_, regex));
  out.push_back(partition_metadata_tombstone(group_id_));
  out.push_back(consumer_group_metadata_tombstone(group_id_));
}

// --- Replay --------------------------------------------------------------------------------------

void consumer_group::apply_group_metadata(const std::optional<std::pair<int32_t, int64_t>>& value) {
  if (value) {
    group_epoch_ = value->first;
    metadata_hash_ = value->second;
    dead_ = false;
  } else {
    dead_ = true;  // Kafka removes the group
  }
}

void consumer_group::apply_member_metadata(const std::string& member_id,
                                           const std::optional<consumer_group_member>& md) {
  auto it = members_.find(member_id);
  if (it != members_.end() && it->second.instance_id) {
    auto s = static_members_.find(*it->second.instance_id);
    if (s != static_members_.end() && s->second == member_id) static_members_.erase(s);
  }
  if (!md) {
    if (it == members_.end()) return;
    index_member_partitions(it->second, false);
    members_.erase(it);
    return;
  }
  if (it == members_.end()) {
    it = members_.emplace(member_id, consumer_group_member{}).first;
    it->second.member_id = member_id;
  }
  consumer_group_member& m = it->second;
  m.instance_id = md->instance_id;
  m.rack_id = md->rack_id;
  m.rebalance_timeout_ms = md->rebalance_timeout_ms;
  m.client_id = md->client_id;
  m.client_host = md->client_host;
  m.subscribed_topic_names = md->subscribed_topic_names;
  m.subscribed_topic_regex = md->subscribed_topic_regex;
  m.server_assignor = md->server_assignor;
  m.classic_member = md->classic_member;
  if (m.instance_id) static_members_[*m.instance_id] = member_id;
}

void consumer_group::apply_current_assignment(const std::string& member_id,
                                              const std::optional<consumer_group_member>& a) {
  auto it = members_.find(member_id);
  if (it == members_.end()) {
    if (!a) return;
    it = members_.emplace(member_id, consumer_group_member{}).first;
    it->second.member_id = member_id;
  }
  consumer_group_member& m = it->second;
  index_member_partitions(m, false);
  if (a) {
    m.member_epoch = a->member_epoch;
    m.previous_member_epoch = a->previous_member_epoch;
    m.state = a->state;
    m.assigned_partitions = a->assigned_partitions;
    m.partitions_pending_revocation = a->partitions_pending_revocation;
  } else {
    m.member_epoch = leave_group_member_epoch;
    m.previous_member_epoch = leave_group_member_epoch;
    m.assigned_partitions.clear();
    m.partitions_pending_revocation.clear();
  }
  index_member_partitions(m, true);
}

bool consumer_group::replay(int16_t record_type, std::span<const uint8_t> key,
                            std::optional<std::span<const uint8_t>> value) {
  namespace p = protocol;
  auto group_matches = [&](const auto& k) { return k && k->group_id == group_id_; };
  switch (record_type) {
    case record_type_consumer_group_metadata: {
      auto k = decode_key<p::consumer_group_metadata_key>(key, record_type);
      if (!group_matches(k)) return false;
      if (!value) {
        apply_group_metadata(std::nullopt);
        break;
      }
      auto v = decode_value<p::consumer_group_metadata_value>(*value);
      if (!v) return false;
      apply_group_metadata(std::pair{v->epoch, v->metadata_hash});
      break;
    }
    case record_type_consumer_group_partition_metadata: {
      auto k = decode_key<p::consumer_group_partition_metadata_key>(key, record_type);
      if (!group_matches(k)) return false;
      has_partition_metadata_record_ = value.has_value();  // superseded by MetadataHash (4.1)
      break;
    }
    case record_type_consumer_group_member_metadata: {
      auto k = decode_key<p::consumer_group_member_metadata_key>(key, record_type);
      if (!group_matches(k)) return false;
      const std::string id(k->member_id);
      if (!value) {
        apply_member_metadata(id, std::nullopt);
        break;
      }
      auto v = decode_value<p::consumer_group_member_metadata_value>(*value);
      if (!v) return false;
      consumer_group_member md;
      md.instance_id = owned_copy(v->instance_id);
      md.rack_id = owned_copy(v->rack_id);
      md.rebalance_timeout_ms = v->rebalance_timeout_ms;
      md.client_id = v->client_id;
      md.client_host = v->client_host;
      md.subscribed_topic_names = {v->subscribed_topic_names.begin(),
                                   v->subscribed_topic_names.end()};
      md.subscribed_topic_regex = v->subscribed_topic_regex.value_or("");
      md.server_assignor = owned_copy(v->server_assignor);
      if (v->classic_member_metadata) {
        auto& cm = md.classic_member.emplace();
        cm.session_timeout_ms = v->classic_member_metadata->session_timeout_ms;
        for (const auto& p : v->classic_member_metadata->supported_protocols) {
          cm.supported_protocols.push_back(
              {std::string(p.name), std::vector<uint8_t>(p.metadata.begin(), p.metadata.end())});
        }
      }
      apply_member_metadata(id, md);
      break;
    }
    case record_type_consumer_group_target_assignment_metadata: {
      auto k = decode_key<p::consumer_group_target_assignment_metadata_key>(key, record_type);
      if (!group_matches(k)) return false;
      if (!value) {
        assignment_epoch_ = -1;
        assignment_timestamp_ms_ = 0;
        break;
      }
      auto v = decode_value<p::consumer_group_target_assignment_metadata_value>(*value);
      if (!v) return false;
      assignment_epoch_ = v->assignment_epoch;
      assignment_timestamp_ms_ = v->assignment_timestamp;
      break;
    }
    case record_type_consumer_group_target_assignment_member: {
      auto k = decode_key<p::consumer_group_target_assignment_member_key>(key, record_type);
      if (!group_matches(k)) return false;
      const std::string id(k->member_id);
      if (!value) {
        target_.erase(id);
        break;
      }
      auto v = decode_value<p::consumer_group_target_assignment_member_value>(*value);
      if (!v) return false;
      topic_assignment a;
      for (const auto& tp : v->topic_partitions) {
        if (!tp.partitions.empty())
          a[from_wire(tp.topic_id)].insert(tp.partitions.begin(), tp.partitions.end());
      }
      target_[id] = std::move(a);
      break;
    }
    case record_type_consumer_group_current_assignment: {
      auto k = decode_key<p::consumer_group_current_member_assignment_key>(key, record_type);
      if (!group_matches(k)) return false;
      const std::string id(k->member_id);
      if (!value) {
        apply_current_assignment(id, std::nullopt);
        break;
      }
      auto v = decode_value<p::consumer_group_current_member_assignment_value>(*value);
      if (!v) return false;
      consumer_group_member a;
      a.member_epoch = v->member_epoch;
      a.previous_member_epoch = v->previous_member_epoch;
      switch (v->state) {
        case 0:
        case 1:
        case 2:
          a.state = static_cast<member_state>(v->state);
          break;
        default:
          a.state = member_state::unknown;  // a state of a newer Kafka: the member is fenced
      }
      a.assigned_partitions = from_record(v->assigned_partitions, v->member_epoch);
      a.partitions_pending_revocation =
          from_record(v->partitions_pending_revocation, v->member_epoch);
      apply_current_assignment(id, a);
      break;
    }
    case record_type_consumer_group_regular_expression: {
      auto k = decode_key<p::consumer_group_regular_expression_key>(key, record_type);
      if (!group_matches(k)) return false;
      const std::string regex(k->regular_expression);
      if (!value) {
        regexes_.erase(regex);
        break;
      }
      auto v = decode_value<p::consumer_group_regular_expression_value>(*value);
      if (!v) return false;
      resolved_regex r;
      r.topics = {v->topics.begin(), v->topics.end()};
      r.version = v->version_;
      r.timestamp_ms = v->timestamp;
      regexes_[regex] = std::move(r);
      break;
    }
    default:
      return false;
  }
  pristine_ = false;
  return true;
}

}  // namespace tarn::coordinator
