// Classic-protocol members of a KIP-848 consumer group (consumer_group.h), Kafka 4.4's online
// migration (GroupMetadataManager's classicGroupJoinToConsumerGroup,
// classicGroupSyncToConsumerGroup, classicGroupHeartbeatToConsumerGroup,
// classicGroupLeaveToConsumerGroup), the group a classic group becomes on upgrade
// (ConsumerGroup.fromClassicGroup) and the classic group a consumer group becomes on downgrade
// (ClassicGroup.fromConsumerGroup).
//
// A classic member joins with JoinGroup and gets its member epoch as the generation; the group
// computes its target assignment as for any member and the member reconciles at each JoinGroup
// (its owned partitions come from its subscription). SyncGroup gives it its current assignment.
// Heartbeat answers REBALANCE_IN_PROGRESS when it must rejoin: the group epoch moved past its
// epoch, it must revoke partitions, or partitions it waits for were released. A member told to
// rejoin must do so within its rebalance timeout, and one that joined must sync within it, or
// it is fenced; its session is its own session timeout.
#include <algorithm>
#include <cctype>
#include <utility>

#include "coordinator/consumer_group.h"
#include "coordinator/consumer_group_internal.h"
#include "coordinator/consumer_group_records.h"
#include "coordinator/current_assignment.h"
#include "coordinator/group_coordinator.h"
#include "coordinator/group_records.h"
#include "coordinator/wire_ids.h"
#include "protocol/messages/consumer_protocol_assignment.h"
#include "protocol/messages/consumer_protocol_subscription.h"
#include "protocol/reader.h"
#include "protocol/writer.h"

namespace tarn::coordinator {

using protocol::error_code;

namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

// Kafka's ConsumerProtocol: an int16 version, then the struct at min(version, the highest).
template <class M>
result<M, std::string> decode_prefixed(std::span<const uint8_t> bytes, int16_t* version_out) {
  protocol::reader r(bytes);
  const int16_t version = r.read_int16();
  if (!r.ok() || version < M::min_version) {
    return fail(std::string(M::kafka_name) + ": no valid version");
  }
  auto m = M::decode(r, std::min(version, M::max_version));
  if (!m) return fail(std::string(M::kafka_name) + ": malformed");
  if (version_out) *version_out = version;
  return std::move(*m);
}

}  // namespace

bool online_upgrade_enabled(const group_config& config) {
  const std::string p = lower(config.group_consumer_migration_policy);
  return p == "upgrade" || p == "bidirectional";
}

bool online_downgrade_enabled(const group_config& config) {
  const std::string p = lower(config.group_consumer_migration_policy);
  return p == "downgrade" || p == "bidirectional";
}

result<consumer_subscription, std::string> decode_consumer_subscription(
    std::span<const uint8_t> bytes) {
  consumer_subscription out;
  auto m = decode_prefixed<protocol::consumer_protocol_subscription>(bytes, &out.version);
  if (!m) return fail(m.error());
  for (auto t : m->topics) out.topics.emplace_back(t);
  for (const auto& tp : m->owned_partitions) {
    out.owned_partitions.emplace_back(std::string(tp.topic), tp.partitions);
  }
  if (m->rack_id) out.rack_id = std::string(*m->rack_id);
  return out;
}

result<std::vector<std::pair<std::string, std::vector<int32_t>>>, std::string>
decode_consumer_assignment(std::span<const uint8_t> bytes) {
  auto m = decode_prefixed<protocol::consumer_protocol_assignment>(bytes, nullptr);
  if (!m) return fail(m.error());
  std::vector<std::pair<std::string, std::vector<int32_t>>> out;
  for (const auto& tp : m->assigned_partitions) {
    out.emplace_back(std::string(tp.topic), tp.partitions);
  }
  return out;
}

std::vector<uint8_t> encode_consumer_assignment(const topic_assignment& partitions,
                                                const metadata_view& metadata, int16_t version) {
  using M = protocol::consumer_protocol_assignment;
  version = std::clamp(version, M::min_version, M::max_version);
  std::vector<std::string> names;  // the views below point into these
  names.reserve(partitions.size());
  M m;
  for (const auto& [id, parts] : partitions) {
    auto desc = metadata.topic_by_id(id);
    if (!desc) continue;
    names.push_back(desc->name);
  }
  size_t i = 0;
  for (const auto& [id, parts] : partitions) {
    if (!metadata.topic_by_id(id)) continue;
    auto& tp = m.assigned_partitions.emplace_back();
    tp.topic = names[i++];
    tp.partitions.assign(parts.begin(), parts.end());
  }
  std::vector<uint8_t> out;
  out.reserve(2 + m.encoded_size(version));
  protocol::writer w(out);
  w.write_int16(version);
  m.encode(w, version);
  return out;
}

// --- Policy and membership checks -----------------------------------------------------------

bool consumer_group::validate_online_downgrade(std::string_view member_id,
                                               const group_config& config) const {
  auto it = members_.find(member_id);
  if (it == members_.end() || it->second.uses_classic_protocol()) return false;
  const auto classic = std::count_if(members_.begin(), members_.end(), [](const auto& kv) {
    return kv.second.uses_classic_protocol();
  });
  if (static_cast<size_t>(classic) != members_.size() - 1) return false;
  if (members_.size() <= 1) return false;  // it would be empty: it stays a consumer group
  if (!online_downgrade_enabled(config)) return false;
  return members_.size() - 1 <= static_cast<size_t>(std::max(config.group_max_size, 0));
}

bool consumer_group::validate_online_downgrade_replacing(std::string_view replaced_member_id,
                                                         const group_config& config) const {
  auto it = members_.find(replaced_member_id);
  if (it == members_.end() || it->second.uses_classic_protocol()) return false;
  const auto classic = std::count_if(members_.begin(), members_.end(), [](const auto& kv) {
    return kv.second.uses_classic_protocol();
  });
  if (static_cast<size_t>(classic) != members_.size() - 1) return false;
  if (!online_downgrade_enabled(config)) return false;
  return members_.size() <= static_cast<size_t>(std::max(config.group_max_size, 0));
}

std::optional<std::string> consumer_group::leaving_member(
    const protocol::consumer_group_heartbeat_request& request) const {
  if (request.member_epoch != leave_group_member_epoch) return std::nullopt;
  if (!request.instance_id) {
    if (!members_.contains(request.member_id)) return std::nullopt;
    return std::string(request.member_id);
  }
  const consumer_group_member* m = static_member(*request.instance_id);
  if (!m || m->member_id != request.member_id) return std::nullopt;
  return m->member_id;
}

bool consumer_group::waiting_on_unreleased_partition(const consumer_group_member& m) const {
  if (m.state != member_state::unreleased_partitions) return false;
  auto t = target_.find(m.member_id);
  if (t == target_.end()) return false;
  for (const auto& [topic, parts] : t->second) {
    auto a = m.assigned_partitions.find(topic);
    for (int32_t p : parts) {
      const bool assigned = a != m.assigned_partitions.end() && a->second.contains(p);
      if (!assigned && current_partition_epoch(topic, p) != -1) return true;
    }
  }
  return false;
}

result<const consumer_group_member*, error_code> consumer_group::classic_request_member(
    std::string_view member_id, const std::optional<std::string_view>& instance_id) const {
  const consumer_group_member* m = nullptr;
  if (!instance_id) {
    auto it = members_.find(member_id);
    if (it == members_.end()) return fail(error_code::unknown_member_id);
    m = &it->second;
  } else {
    m = static_member(*instance_id);
    if (!m) return fail(error_code::unknown_member_id);
    if (m->member_id != member_id) return fail(error_code::fenced_instance_id);
  }
  // Kafka's throwIfMemberDoesNotUseClassicProtocol.
  if (!m->uses_classic_protocol()) return fail(error_code::unknown_member_id);
  return m;
}

// --- JoinGroup ------------------------------------------------------------------------------

std::optional<consumer_group::replacing_downgrade> consumer_group::classic_join(
    const protocol::join_group_request& req, int16_t version, const client_info& client,
    group_context& ctx, join_callback done) {
  auto answer =
      [&](owned_message<protocol::join_group_response> r) -> std::optional<replacing_downgrade> {
    auto shared = std::make_shared<owned_message<protocol::join_group_response>>(std::move(r));
    ctx.deferred.push_back([done, shared]() mutable { done(std::move(*shared)); });
    return std::nullopt;
  };
  const bool unknown_member = req.member_id.empty();
  std::string member_id = unknown_member ? random_member_id() : std::string(req.member_id);
  const auto instance_id = owned_copy(req.group_instance_id);

  // Kafka's throwIfConsumerGroupIsFull and throwIfClassicProtocolIsNotSupported.
  const auto max_size = static_cast<size_t>(std::max(ctx.config.group_consumer_max_size, 0));
  if (!members_.contains(member_id) && members_.size() >= max_size) {
    return answer(join_error(member_id, error_code::group_max_size_reached));
  }
  std::vector<classic_protocol> protocols;
  for (const auto& p : req.protocols) {
    protocols.push_back(
        {std::string(p.name), std::vector<uint8_t>(p.metadata.begin(), p.metadata.end())});
  }
  if (!supports_classic_protocols(req.protocol_type, protocols)) {
    return answer(join_error(member_id, error_code::inconsistent_group_protocol));
  }
  // JoinGroup v4+ (KIP-394): a dynamic member first gets its id.
  if (unknown_member && !instance_id && version >= 4) {
    return answer(join_error(member_id, error_code::member_id_required));
  }

  change c;
  consumer_group_member member;
  std::optional<std::string> replaced;
  if (!instance_id) {
    if (auto it = members_.find(member_id); it != members_.end()) {
      member = it->second;
    } else {
      member.member_id = member_id;
    }
  } else {
    const consumer_group_member* previous = static_member(*instance_id);
    if (unknown_member) {
      if (!previous) {
        member.member_id = member_id;
      } else {
        member = replace_static_member(*previous, member_id, c);
        replaced = previous->member_id;
      }
    } else {
      if (!previous) return answer(join_error(member_id, error_code::unknown_member_id));
      if (previous->member_id != member_id) {
        return answer(join_error(member_id, error_code::fenced_instance_id));
      }
      member = *previous;
    }
  }

  // Every protocol carries the same subscription: the first is read.
  auto subscription = decode_consumer_subscription(protocols.front().metadata);
  if (!subscription) return answer(join_error(member_id, error_code::unknown_server_error));

  // 1. The member's new metadata and subscription.
  consumer_group_member updated = member;
  if (instance_id) updated.instance_id = instance_id;
  if (subscription->rack_id) updated.rack_id = subscription->rack_id;
  if (req.rebalance_timeout_ms != -1) updated.rebalance_timeout_ms = req.rebalance_timeout_ms;
  updated.subscribed_topic_names = {subscription->topics.begin(), subscription->topics.end()};
  updated.client_id = client.client_id;
  updated.client_host = client.client_host;
  updated.classic_member = classic_member_metadata{req.session_timeout_ms, protocols};
  bool names_changed = false;
  if (member.instance_id != updated.instance_id || member.rack_id != updated.rack_id ||
      member.rebalance_timeout_ms != updated.rebalance_timeout_ms ||
      member.client_id != updated.client_id || member.client_host != updated.client_host ||
      member.subscribed_topic_names != updated.subscribed_topic_names ||
      member.classic_member != updated.classic_member) {
    c.records.push_back(member_metadata_record(group_id_, updated));
    names_changed = member.subscribed_topic_names != updated.subscribed_topic_names;
  }

  // 2-3. The group epoch, the target assignment, the member's reconciliation; what it owns is
  // in its subscription (topics by name).
  owned_topic_partitions owned;
  for (const auto& [topic, parts] : subscription->owned_partitions) {
    auto desc = ctx.metadata.topic(topic);
    if (!desc) continue;
    auto& tp = owned.emplace_back();
    tp.topic_id = to_wire(desc->id);
    tp.partitions = parts;
  }
  auto next = update_and_reconcile(member, updated, replaced, regexes_, names_changed,
                                   names_changed, &owned, ctx, c);
  if (!next) return answer(join_error(member_id, next.error().code));
  const consumer_group_member reconciled = std::move(*next);

  // 4. The last consumer-protocol member replaced by this static member: a downgrade.
  if (replaced && validate_online_downgrade_replacing(*replaced, ctx.config)) {
    replacing_downgrade d;
    d.records = std::move(c.records);
    delete_records(d.records, *replaced, reconciled.member_id);
    d.joining = reconciled;
    d.replaced_member_id = *replaced;
    return d;
  }
  c.sessions.emplace_back(reconciled.member_id, ctx.now_ms + req.session_timeout_ms);
  if (auto e = commit(c, ctx)) return answer(join_error(member_id, e.code));
  classic_join_deadline_ms_.erase(reconciled.member_id);
  classic_sync_deadline_ms_[reconciled.member_id] = ctx.now_ms + req.rebalance_timeout_ms;

  owned_message<protocol::join_group_response> out;
  out.message.member_id = out.arena.keep(reconciled.member_id);
  out.message.generation_id = reconciled.member_epoch;
  out.message.protocol_type = consumer_protocol_type;
  out.message.protocol_name = out.arena.keep(protocols.front().name);
  out.message.leader = "";
  return answer(std::move(out));
}

bool consumer_group::supports_classic_protocols(std::string_view protocol_type,
                                                const std::vector<classic_protocol>& p) const {
  if (protocol_type != consumer_protocol_type) return false;
  if (members_.empty()) return !p.empty();
  size_t classic = 0;
  std::map<std::string, size_t, std::less<>> supported;
  for (const auto& [id, m] : members_) {
    if (!m.classic_member) continue;
    ++classic;
    for (const auto& sp : m.classic_member->supported_protocols) ++supported[sp.name];
  }
  return std::any_of(p.begin(), p.end(), [&](const classic_protocol& cp) {
    auto it = supported.find(cp.name);
    return (it == supported.end() ? 0 : it->second) == classic;
  });
}

// --- SyncGroup, Heartbeat -------------------------------------------------------------------

void consumer_group::classic_sync(const protocol::sync_group_request& req, group_context& ctx,
                                  sync_callback done) {
  auto answer = [&](owned_message<protocol::sync_group_response> r) {
    auto shared = std::make_shared<owned_message<protocol::sync_group_response>>(std::move(r));
    ctx.deferred.push_back([done, shared]() mutable { done(std::move(*shared)); });
  };
  auto found = classic_request_member(req.member_id, req.group_instance_id);
  if (!found) return answer(sync_error(found.error()));
  const consumer_group_member& m = **found;
  if (req.generation_id != m.member_epoch)
    return answer(sync_error(error_code::illegal_generation));
  const std::string& protocol_name = m.classic_member->supported_protocols.front().name;
  if ((req.protocol_type && *req.protocol_type != consumer_protocol_type) ||
      (req.protocol_name && *req.protocol_name != protocol_name)) {
    return answer(sync_error(error_code::inconsistent_group_protocol));
  }
  // Kafka's throwIfRebalanceInProgress: a member revoking finishes that first.
  if (group_epoch_ > m.member_epoch && m.state != member_state::unrevoked_partitions) {
    classic_join_deadline_ms_.try_emplace(m.member_id, ctx.now_ms + m.rebalance_timeout_ms);
    return answer(sync_error(error_code::rebalance_in_progress));
  }
  classic_sync_deadline_ms_.erase(m.member_id);
  session_deadline_ms_[m.member_id] =
      ctx.now_ms + session_timeout_ms(m, consumer_settings(ctx, group_id_));

  topic_assignment assigned;
  for (const auto& [t, parts] : m.assigned_partitions) {
    for (const auto& [p, e] : parts) assigned[t].insert(p);
  }
  int16_t version = 0;
  const auto& metadata = m.classic_member->supported_protocols.front().metadata;
  if (metadata.size() >= 2) version = static_cast<int16_t>((metadata[0] << 8) | metadata[1]);
  owned_message<protocol::sync_group_response> out;
  if (req.protocol_type) out.message.protocol_type = out.arena.keep(*req.protocol_type);
  if (req.protocol_name) out.message.protocol_name = out.arena.keep(*req.protocol_name);
  out.message.assignment =
      out.arena.keep(encode_consumer_assignment(assigned, ctx.metadata, version));
  answer(std::move(out));
}

error_code consumer_group::classic_heartbeat(const protocol::heartbeat_request& req,
                                             group_context& ctx) {
  auto found = classic_request_member(req.member_id, req.group_instance_id);
  if (!found) return found.error();
  const consumer_group_member& m = **found;
  if (req.generation_id != m.member_epoch) return error_code::illegal_generation;
  session_deadline_ms_[m.member_id] =
      ctx.now_ms + session_timeout_ms(m, consumer_settings(ctx, group_id_));
  // It rejoins when the group epoch moved, when it must revoke partitions, or when partitions
  // it waits for are free now.
  if (m.member_epoch < group_epoch_ || m.state == member_state::unrevoked_partitions ||
      (m.state == member_state::unreleased_partitions && !waiting_on_unreleased_partition(m))) {
    classic_join_deadline_ms_.try_emplace(m.member_id, ctx.now_ms + m.rebalance_timeout_ms);
    return error_code::rebalance_in_progress;
  }
  return error_code::none;
}

// --- LeaveGroup -----------------------------------------------------------------------------

error_code consumer_group::classic_leave(const protocol::leave_group_request& req, int16_t version,
                                         group_context& ctx,
                                         owned_message<protocol::leave_group_response>& out) {
  struct identity {
    std::string member_id;
    std::optional<std::string> instance_id;
  };
  std::vector<identity> who;
  if (version < 3) {
    who.push_back({std::string(req.member_id), std::nullopt});
  } else {
    for (const auto& m : req.members) {
      who.push_back({std::string(m.member_id), owned_copy(m.group_instance_id)});
    }
  }
  std::vector<std::string> leaving;
  std::vector<std::pair<identity, error_code>> answers;
  for (auto& w : who) {
    error_code e = error_code::none;
    const consumer_group_member* m = nullptr;
    if (!w.instance_id) {
      auto it = members_.find(w.member_id);
      if (it == members_.end()) {
        e = error_code::unknown_member_id;
      } else {
        m = &it->second;
      }
    } else {
      m = static_member(*w.instance_id);
      // An administrative removal names the instance id only.
      if (!m) {
        e = error_code::unknown_member_id;
      } else if (!w.member_id.empty() && m->member_id != w.member_id) {
        e = error_code::fenced_instance_id;
        m = nullptr;
      }
    }
    if (m && !m->uses_classic_protocol()) {
      e = error_code::unknown_member_id;
      m = nullptr;
    }
    if (m) {
      w.member_id = m->member_id;
      if (std::find(leaving.begin(), leaving.end(), m->member_id) == leaving.end()) {
        leaving.push_back(m->member_id);
      }
    }
    answers.emplace_back(w, e);
  }
  if (!leaving.empty()) {
    change c;
    fence(leaving, ctx.metadata, c);
    if (auto e = commit(c, ctx)) return e.code;
  }
  error_code single = error_code::none;
  for (const auto& [w, e] : answers) {
    if (version >= 3) {
      add_leave_member_response(out, w.member_id, to_view(w.instance_id), e);
    } else {
      single = e;
    }
  }
  return single;
}

// --- Upgrade --------------------------------------------------------------------------------

result<std::unique_ptr<consumer_group>, std::string> consumer_group::from_classic_group(
    const classic_group& classic, const metadata_view& metadata) {
  const std::string& group_id = classic.group_id();
  const int32_t generation = classic.generation();
  const std::string protocol_name = classic.protocol_name().value_or("");
  std::vector<consumer_group_member> members;
  std::set<std::string> topics;
  for (const auto& [id, cm] : classic.members()) {
    const std::vector<uint8_t>* subscription_bytes = cm.metadata(protocol_name);
    if (!subscription_bytes) return fail("no subscription for the group's protocol");
    auto subscription = decode_consumer_subscription(*subscription_bytes);
    if (!subscription) return fail(subscription.error());
    auto assignment = decode_consumer_assignment(cm.assignment);
    if (!assignment) return fail(assignment.error());
    consumer_group_member m;
    m.member_id = id;
    m.member_epoch = generation;
    m.previous_member_epoch = generation;
    m.state = member_state::stable;
    m.instance_id = cm.group_instance_id;
    m.rack_id = subscription->rack_id;
    m.rebalance_timeout_ms = cm.rebalance_timeout_ms;
    m.client_id = cm.client_id;
    m.client_host = cm.client_host;
    m.subscribed_topic_names = {subscription->topics.begin(), subscription->topics.end()};
    topics.insert(subscription->topics.begin(), subscription->topics.end());
    for (const auto& [topic, parts] : *assignment) {
      auto desc = metadata.topic(topic);
      if (!desc) continue;  // Kafka's toTopicPartitionMap skips topics it does not know
      for (int32_t p : parts) m.assigned_partitions[desc->id][p] = generation;
    }
    m.classic_member = classic_member_metadata{cm.session_timeout_ms, cm.protocols};
    members.push_back(std::move(m));
  }
  auto target_of = [](const consumer_group_member& m) {
    topic_assignment a;
    for (const auto& [t, parts] : m.assigned_partitions) {
      for (const auto& [p, e] : parts) a[t].insert(p);
    }
    return a;
  };
  // Kafka's createGroupTombstoneRecords of the classic group, then createConsumerGroupRecords.
  std::vector<coordinator_record> records;
  records.push_back(group_metadata_tombstone(group_id));
  for (const auto& m : members) records.push_back(member_metadata_record(group_id, m));
  records.push_back(group_epoch_record(group_id, generation, topics_hash(topics, metadata)));
  for (const auto& m : members) {
    records.push_back(target_member_record(group_id, m.member_id, target_of(m)));
  }
  records.push_back(target_metadata_record(group_id, generation, 0));
  for (const auto& m : members) records.push_back(current_assignment_record(group_id, m));

  auto group = std::make_unique<consumer_group>(group_id);
  for (size_t i = 1; i < records.size(); ++i) {
    const auto& r = records[i];
    protocol::reader rd(r.key);
    const int16_t type = rd.read_int16();
    std::optional<std::span<const uint8_t>> value;
    if (r.value) value = std::span<const uint8_t>(*r.value);
    if (!group->replay(type, r.key, value)) return fail("a conversion record did not replay");
  }
  group->pending_records_ = std::move(records);
  return group;
}

// --- Downgrade ------------------------------------------------------------------------------

std::unique_ptr<classic_group> classic_group::from_consumer_group(
    const consumer_group& group, std::string_view leaving_member_id, const metadata_view& metadata,
    int64_t now_ms, const consumer_group_member* joining) {
  classic_group_snapshot s;
  s.protocol_type = std::string(consumer_protocol_type);
  s.generation = group.group_epoch();
  s.current_state_timestamp_ms = now_ms;
  std::vector<const consumer_group_member*> members;
  for (const auto& [id, m] : group.members()) {
    if (id != leaving_member_id && m.classic_member) members.push_back(&m);
  }
  if (joining && joining->classic_member) members.push_back(joining);
  for (const consumer_group_member* mp : members) {
    const consumer_group_member& m = *mp;
    const std::string& id = m.member_id;
    classic_member cm;
    cm.member_id = id;
    cm.group_instance_id = m.instance_id;
    cm.client_id = m.client_id;
    cm.client_host = m.client_host;
    cm.rebalance_timeout_ms = m.rebalance_timeout_ms;
    cm.session_timeout_ms = m.classic_member->session_timeout_ms;
    cm.protocol_type = std::string(consumer_protocol_type);
    cm.protocols = m.classic_member->supported_protocols;
    s.members.push_back(std::move(cm));
  }
  // ClassicGroup.add makes the first member added the leader (Kafka adds them in its map's
  // order, tarn in member id order).
  if (!s.members.empty()) s.leader = s.members.front().member_id;
  auto out = std::make_unique<classic_group>(group.group_id(), now_ms);
  out->restore(std::move(s), now_ms);
  out->protocol_name_ = out->select_protocol();
  // Each member's assignment is its target in the consumer group, at the consumer protocol
  // version of its metadata for the selected protocol.
  for (auto& [id, m] : out->members_) {
    const std::vector<uint8_t>* md = m.metadata(*out->protocol_name_);
    int16_t version = 0;
    if (md && md->size() >= 2) version = static_cast<int16_t>(((*md)[0] << 8) | (*md)[1]);
    // A joining member that replaced the leaving one takes its assignment.
    auto t = group.target_assignment().find(
        joining && id == joining->member_id ? std::string(leaving_member_id) : id);
    m.assignment = encode_consumer_assignment(
        t == group.target_assignment().end() ? topic_assignment{} : t->second, metadata, version);
  }
  out->subscribed_topics_ = out->compute_subscribed_topics();
  return out;
}

}  // namespace tarn::coordinator
