// A KIP-848 consumer group (consumer_group.h): the heartbeat, leave and fence paths, timers,
// describe and the offset checks. Its records and their replay are in consumer_group_records.cc,
// the reconciliation of a member in current_assignment.cc.
#include "coordinator/consumer_group.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <random>
#include <utility>

#include "base/regex.h"
#include "coordinator/consumer_group_internal.h"
#include "coordinator/consumer_group_records.h"
#include "coordinator/current_assignment.h"
#include "coordinator/group_coordinator.h"
#include "coordinator/group_records.h"

namespace tarn::coordinator {

using protocol::error_code;
using heartbeat_request = protocol::consumer_group_heartbeat_request;
using heartbeat_response = protocol::consumer_group_heartbeat_response;

namespace {

// ConsumerGroupHeartbeat v1 (KIP-1082): the consumer generates its member id.
constexpr int16_t consumer_generated_member_id_required_version = 1;
// Kafka's REGEX_BATCH_REFRESH_MIN_INTERVAL_MS: regexes are re-resolved at most this often.
constexpr int64_t regex_refresh_min_interval_ms = 10000;

// Java's value.trim().isEmpty(): trim drops every char up to ' ' at both ends.
bool blank(std::string_view s) {
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return static_cast<unsigned char>(c) <= ' '; });
}

// The matching topics the heartbeating member's principal may DESCRIBE (Kafka resolves and
// refreshes a group's regexes with the context of the heartbeat that triggers it).
resolved_regex resolve(const std::string& pattern, const metadata_view& metadata, int64_t now_ms,
                       const client_info& client) {
  resolved_regex out;
  out.timestamp_ms = now_ms;
  auto re = compile_re2_regex(pattern, nullptr);
  if (!re) return out;  // Kafka logs and ignores a regex that stopped compiling
  for (const auto& t : metadata.topics()) {
    if (!regex_full_match(*re, t.name)) continue;
    if (client.may_describe_topic && !client.may_describe_topic(t.name)) continue;
    out.topics.insert(t.name);
  }
  return out;
}

// The existing topics a member subscribes to, by id, with their partition counts.
std::set<topic_uuid> subscribed_ids(const consumer_group_member& m, const regex_map& regexes,
                                    const metadata_view& metadata,
                                    std::map<topic_uuid, int32_t>* partitions = nullptr) {
  std::set<topic_uuid> out;
  for_each_subscribed_name(m, regexes, [&](const std::string& name) {
    if (auto t = metadata.topic(name)) {
      out.insert(t->id);
      if (partitions) (*partitions)[t->id] = t->partitions;
    }
  });
  return out;
}

bool same_metadata(const consumer_group_member& a, const consumer_group_member& b) {
  return a.instance_id == b.instance_id && a.rack_id == b.rack_id &&
         a.rebalance_timeout_ms == b.rebalance_timeout_ms && a.client_id == b.client_id &&
         a.client_host == b.client_host && a.subscribed_topic_names == b.subscribed_topic_names &&
         a.subscribed_topic_regex == b.subscribed_topic_regex &&
         a.server_assignor == b.server_assignor && a.classic_member == b.classic_member;
}

group_error invalid_request(std::string message) {
  return {error_code::invalid_request, std::move(message)};
}

}  // namespace

std::string random_member_id() {
  static thread_local std::mt19937_64 rng{std::random_device{}()};
  std::array<uint8_t, 16> b{};
  for (size_t i = 0; i < b.size(); i += 8) {
    const uint64_t r = rng();
    for (size_t j = 0; j < 8; ++j) b[i + j] = static_cast<uint8_t>(r >> (8 * j));
  }
  static constexpr std::string_view alphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  for (uint8_t byte : b) {
    acc = (acc << 8) | byte;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out.push_back(alphabet[(acc >> bits) & 0x3f]);
    }
  }
  if (bits > 0) out.push_back(alphabet[(acc << (6 - bits)) & 0x3f]);
  return out;
}

int64_t topics_hash(const std::set<std::string>& names, const metadata_view& metadata) {
  uint64_t h = 14695981039346656037ull;
  bool any = false;
  auto mix = [&](uint8_t b) { h = (h ^ b) * 1099511628211ull; };
  for (const auto& name : names) {
    auto t = metadata.topic(name);
    if (!t) continue;
    any = true;
    for (char c : name) mix(static_cast<uint8_t>(c));
    mix(0);
    for (uint8_t b : t->id) mix(b);
    for (int i = 3; i >= 0; --i)
      mix(static_cast<uint8_t>(static_cast<uint32_t>(t->partitions) >> (8 * i)));
  }
  return any ? static_cast<int64_t>(h) : 0;
}

consumer_group::consumer_group(std::string group_id) : group_id_(std::move(group_id)) {}

// --- Heartbeat -----------------------------------------------------------------------------------

group_error consumer_group::validate_heartbeat(const heartbeat_request& r, int16_t version,
                                               const group_config& config) {
  if (version >= consumer_generated_member_id_required_version || r.member_epoch > 0 ||
      r.member_epoch == leave_group_member_epoch) {
    if (blank(r.member_id)) return invalid_request("MemberId can't be empty.");
  }
  if (blank(r.group_id)) return invalid_request("GroupId can't be empty.");
  if (r.instance_id && blank(*r.instance_id)) return invalid_request("InstanceId can't be empty.");
  if (r.rack_id && blank(*r.rack_id)) return invalid_request("RackId can't be empty.");
  if (r.member_epoch == 0) {
    if (r.rebalance_timeout_ms == -1) {
      return invalid_request("RebalanceTimeoutMs must be provided in first request.");
    }
    if (!r.topic_partitions || !r.topic_partitions->empty()) {
      return invalid_request("TopicPartitions must be empty when (re-)joining.");
    }
    if (!r.subscribed_topic_names && !r.subscribed_topic_regex) {
      return invalid_request(
          "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when "
          "(re-)joining.");
    }
  } else if (r.member_epoch == leave_group_static_member_epoch) {
    if (!r.instance_id) return invalid_request("InstanceId can't be null.");
  } else if (r.member_epoch < leave_group_static_member_epoch) {
    return invalid_request("MemberEpoch is invalid.");
  }
  if (r.server_assignor) {
    const auto& names = config.group_consumer_assignors;
    const bool known = find_assignor(*r.server_assignor) != nullptr &&
                       std::find(names.begin(), names.end(), *r.server_assignor) != names.end();
    if (!known) {
      return {error_code::unsupported_assignor,
              fmt::format("ServerAssignor {} is not supported. Supported assignors: {}.",
                          *r.server_assignor, fmt::join(names, ", "))};
    }
  }
  return {};
}

group_error consumer_group::not_found_error(std::string_view group_id) {
  return {error_code::group_id_not_found, fmt::format("Consumer group {} not found.", group_id)};
}

group_error consumer_group::not_found_error(std::string_view group_id, int32_t member_epoch) {
  if (member_epoch == leave_group_member_epoch || member_epoch == leave_group_static_member_epoch) {
    return {error_code::group_id_not_found, fmt::format("Group {} not found.", group_id)};
  }
  return not_found_error(group_id);
}

owned_message<heartbeat_response> consumer_group::error_response(const group_error& error) {
  owned_message<heartbeat_response> out;
  out.message.error_code = static_cast<int16_t>(error.code);
  if (!error.message.empty()) out.message.error_message = out.arena.keep(error.message);
  return out;
}

owned_message<heartbeat_response> consumer_group::heartbeat(const heartbeat_request& request,
                                                            int16_t version,
                                                            const client_info& client,
                                                            group_context& ctx) {
  if (auto e = validate_heartbeat(request, version, ctx.config)) return error_response(e);
  if (dead_) return error_response(not_found_error(group_id_, request.member_epoch));
  if (request.member_epoch == leave_group_member_epoch ||
      request.member_epoch == leave_group_static_member_epoch) {
    return leave(request, ctx);
  }
  return join_or_heartbeat(request, client, ctx);
}

owned_message<heartbeat_response> consumer_group::join_or_heartbeat(const heartbeat_request& req,
                                                                    const client_info& client,
                                                                    group_context& ctx) {
  const int64_t now = ctx.now_ms;
  const metadata_view& metadata = ctx.metadata;
  const owned_topic_partitions* owned = req.topic_partitions ? &*req.topic_partitions : nullptr;
  const bool joining = req.member_epoch == 0;
  std::string member_id(req.member_id);
  const auto instance_id = owned_copy(req.instance_id);
  change c;

  // The group's capacity (a static member coming back does not count).
  const bool returning_static = instance_id && static_members_.contains(*instance_id);
  const auto max_size = static_cast<size_t>(std::max(ctx.config.group_consumer_max_size, 0));
  if (!returning_static && members_.size() >= max_size &&
      (member_id.empty() || !members_.contains(member_id))) {
    return error_response({error_code::group_max_size_reached,
                           fmt::format("The consumer group has reached its maximum capacity of "
                                       "{} members.",
                                       ctx.config.group_consumer_max_size)});
  }
  if (member_id.empty()) member_id = random_member_id();  // v0 only

  auto check_epoch = [&](const consumer_group_member& m) -> group_error {
    // Epoch 0 (re)joins under the member's own id (KIP-1082) and is never fenced.
    if (req.member_epoch == 0) return {};
    if (req.member_epoch > m.member_epoch) {
      return {error_code::fenced_member_epoch,
              fmt::format("The consumer group member has a greater member epoch ({}) than the one "
                          "known by the group coordinator ({}). The member must abandon all its "
                          "partitions and rejoin.",
                          req.member_epoch, m.member_epoch)};
    }
    // The previous epoch with a subset of the assignment: the response that bumped the epoch
    // was lost.
    if (req.member_epoch < m.member_epoch &&
        (req.member_epoch != m.previous_member_epoch || !is_subset(owned, m.assigned_partitions))) {
      return {error_code::fenced_member_epoch,
              fmt::format("The consumer group member has a smaller member epoch ({}) than the one "
                          "known by the group coordinator ({}). The member must abandon all its "
                          "partitions and rejoin.",
                          req.member_epoch, m.member_epoch)};
    }
    return {};
  };

  // The member as it is, or a new one.
  consumer_group_member member;
  auto existing_or_new = [&]() {
    if (auto it = members_.find(member_id); it != members_.end()) return it->second;
    consumer_group_member m;
    m.member_id = member_id;
    return m;
  };
  std::optional<std::string> replaced;  // the static member this one takes over from
  if (!instance_id) {
    if (!joining && !members_.contains(member_id)) {
      return error_response(
          {error_code::unknown_member_id,
           fmt::format("Member {} is not a member of group {}.", member_id, group_id_)});
    }
    member = existing_or_new();
    if (auto e = check_epoch(member)) return error_response(e);
  } else {
    const consumer_group_member* previous = static_member(*instance_id);
    if (joining) {
      if (!previous) {
        member = existing_or_new();
      } else {
        if (previous->member_epoch != leave_group_static_member_epoch) {
          return error_response(
              {error_code::unreleased_instance_id,
               fmt::format("Static member {} with instance id {} cannot join the group because "
                           "the instance id is owned by {} member.",
                           member_id, *instance_id, previous->member_id)});
        }
        member = replace_static_member(*previous, member_id, c);
        replaced = previous->member_id;
      }
    } else {
      if (!previous) {
        return error_response({error_code::unknown_member_id,
                               fmt::format("Instance id {} is unknown.", *instance_id)});
      }
      if (previous->member_id != member_id) {
        return error_response({error_code::fenced_instance_id,
                               fmt::format("Static member {} with instance id {} was fenced by "
                                           "member {}.",
                                           member_id, *instance_id, previous->member_id)});
      }
      if (auto e = check_epoch(*previous)) return error_response(e);
      member = *previous;
    }
  }

  // 1. The member's new metadata and subscription.
  consumer_group_member updated = member;
  if (instance_id) updated.instance_id = instance_id;
  if (req.rack_id) updated.rack_id = std::string(*req.rack_id);
  if (req.rebalance_timeout_ms != -1) updated.rebalance_timeout_ms = req.rebalance_timeout_ms;
  if (req.server_assignor) updated.server_assignor = std::string(*req.server_assignor);
  if (req.subscribed_topic_names) {
    updated.subscribed_topic_names = {req.subscribed_topic_names->begin(),
                                      req.subscribed_topic_names->end()};
  }
  if (req.subscribed_topic_regex) updated.subscribed_topic_regex = *req.subscribed_topic_regex;
  updated.client_id = client.client_id;
  updated.client_host = client.client_host;
  updated.classic_member.reset();  // it uses the consumer protocol now

  bool names_changed = false;
  if (!same_metadata(member, updated)) {
    c.records.push_back(member_metadata_record(group_id_, updated));
    names_changed = member.subscribed_topic_names != updated.subscribed_topic_names;
  }

  // Regular expressions: a new one is checked and resolved now; the group's are refreshed at
  // most every 10 s.
  regex_map regexes = regexes_;
  auto subscribers = [&](const std::string& regex) {
    return std::count_if(members_.begin(), members_.end(),
                         [&](const auto& kv) { return kv.second.subscribed_topic_regex == regex; });
  };
  bool regex_updated = false, regex_resolved = false;
  const std::string& old_regex = member.subscribed_topic_regex;
  const std::string& new_regex = updated.subscribed_topic_regex;
  if (old_regex != new_regex) {
    regex_updated = true;
    if (!old_regex.empty() && subscribers(old_regex) == 1) {
      c.records.push_back(regex_tombstone(group_id_, old_regex));
      regexes.erase(old_regex);
    }
    if (!new_regex.empty()) {
      if (!regexes.contains(new_regex)) {
        std::string why;
        if (!compile_re2_regex(new_regex, &why)) {
          return error_response({error_code::invalid_regular_expression,
                                 fmt::format("SubscribedTopicRegex `{}` is not a valid regular "
                                             "expression: {}.",
                                             new_regex, why)});
        }
        auto r = resolve(new_regex, metadata, now, client);
        c.records.push_back(regex_record(group_id_, new_regex, r));
        regexes[new_regex] = std::move(r);
      }
      regex_resolved = true;
    } else if (!old_regex.empty()) {
      regex_resolved = true;
    }
  }
  bool regexes_refreshed = false;
  if (!regexes.empty() && now >= last_regex_refresh_ms_ + regex_refresh_min_interval_ms) {
    c.regex_refresh_ms = now;
    for (auto& [pattern, r] : regexes) {
      if (r.timestamp_ms == now) continue;  // just resolved by this heartbeat
      auto fresh = resolve(pattern, metadata, now, client);
      if (fresh.topics == r.topics) continue;
      c.records.push_back(regex_record(group_id_, pattern, fresh));
      r = std::move(fresh);
      regexes_refreshed = true;
    }
  }

  const bool subscription_changed = names_changed || regex_updated;
  const bool bump = names_changed || (regex_updated && regex_resolved) || regexes_refreshed;
  auto next = update_and_reconcile(member, updated, replaced, regexes, bump, subscription_changed,
                                   owned, ctx, c);
  if (!next) return error_response(next.error());
  const consumer_group_member reconciled = std::move(*next);
  const consumer_group_settings settings = consumer_settings(ctx, group_id_);
  c.sessions.emplace_back(reconciled.member_id, now + session_timeout_ms(reconciled, settings));

  if (auto e = commit(c, ctx)) return error_response(e);

  owned_message<heartbeat_response> out;
  out.message.member_id = out.arena.keep(reconciled.member_id);
  out.message.member_epoch = reconciled.member_epoch;
  out.message.heartbeat_interval_ms = settings.heartbeat_interval_ms;
  // The assignment goes to a member that joins, that sent a full request (as it does after an
  // error), or whose assignment changed.
  const bool full_request = req.rebalance_timeout_ms != -1 &&
                            (req.subscribed_topic_names || req.subscribed_topic_regex) && owned;
  if (joining || full_request || member.assigned_partitions != reconciled.assigned_partitions) {
    auto& a = out.message.assignment.emplace();
    for (const auto& [t, parts] : reconciled.assigned_partitions) {
      auto& tp = a.topic_partitions.emplace_back();
      tp.topic_id = to_wire(t);
      for (const auto& [p, e] : parts) tp.partitions.push_back(p);
    }
  }
  return out;
}

result<consumer_group_member, group_error> consumer_group::update_and_reconcile(
    const consumer_group_member& member, const consumer_group_member& updated,
    const std::optional<std::string>& replaced, const regex_map& regexes, bool bump,
    bool subscription_changed, const owned_topic_partitions* owned, group_context& ctx, change& c) {
  const int64_t now = ctx.now_ms;
  const metadata_view& metadata = ctx.metadata;
  // The preferred server assignor: the one most members name.
  const std::string default_assignor = ctx.config.group_consumer_assignors.empty()
                                           ? std::string(uniform_assignor::assignor_name)
                                           : ctx.config.group_consumer_assignors.front();
  auto preferred = [&](bool with_update) {
    std::map<std::string, int> counts;
    for (const auto& [id, m] : members_) {
      if (m.server_assignor) ++counts[*m.server_assignor];
    }
    if (with_update) {
      if (member.server_assignor && members_.contains(member.member_id)) {
        --counts[*member.server_assignor];
      }
      if (updated.server_assignor) ++counts[*updated.server_assignor];
    }
    std::string best = default_assignor;
    int most = 0;
    for (const auto& [name, n] : counts) {
      if (n > most) {
        most = n;
        best = name;
      }
    }
    return best;
  };
  const std::string assignor_name = preferred(true);
  const bool assignor_changed = assignor_name != preferred(false);

  if (assignor_changed) bump = true;

  // The subscribed topics of the group with the updated member, and their hash.
  std::set<std::string> group_topics;
  for (const auto& [id, m] : members_) {
    if (id == member.member_id) continue;
    for_each_subscribed_name(m, regexes, [&](const std::string& n) { group_topics.insert(n); });
  }
  for_each_subscribed_name(updated, regexes, [&](const std::string& n) { group_topics.insert(n); });
  const int64_t hash = topics_hash(group_topics, metadata);
  if (hash != metadata_hash_) bump = true;
  int32_t epoch = group_epoch_;
  if (bump) {
    ++epoch;
    c.records.push_back(group_epoch_record(group_id_, epoch, hash));
    if (has_partition_metadata_record_) {
      c.records.push_back(partition_metadata_tombstone(group_id_));
    }
  }

  // 2. A new target assignment, if the group epoch moved and the last one is old enough.
  int32_t target_epoch = assignment_epoch_;
  topic_assignment target;
  auto target_of = [&](const std::string& id) {
    auto it = target_.find(id);
    return it == target_.end() ? topic_assignment{} : it->second;
  };
  // consumer.assignment.interval.ms, else group.consumer.assignment.interval.ms (KIP-1263, Kafka
  // 4.3+): a new target assignment is computed at most this often; in between, members
  // reconcile to the last one.
  const int32_t interval_ms = consumer_settings(ctx, group_id_).assignment_interval_ms;
  const bool can_assign = assignment_timestamp_ms_ == 0 || interval_ms == 0 ||
                          now >= assignment_timestamp_ms_ + interval_ms;
  if (epoch > assignment_epoch_ && can_assign) {
    group_spec spec;
    auto add = [&](const consumer_group_member& m, topic_assignment current) {
      assignor_member& a = spec.members.emplace_back();
      a.member_id = m.member_id;
      a.instance_id = m.instance_id;
      a.rack_id = m.rack_id;
      a.subscribed_topics = subscribed_ids(m, regexes, metadata, &spec.partitions);
      a.assignment = std::move(current);
    };
    for (const auto& [id, m] : members_) {
      if (id != updated.member_id && id != replaced) add(m, target_of(id));
    }
    add(updated, target_of(replaced ? *replaced : updated.member_id));
    const partition_assignor* assignor = find_assignor(assignor_name);
    if (!assignor) assignor = find_assignor(default_assignor);
    if (!assignor) assignor = find_assignor(uniform_assignor::assignor_name);
    group_assignment result = assignor->assign(spec);
    for (const auto& a : spec.members) {
      auto it = target_.find(a.member_id);
      if (it == target_.end() || it->second != result[a.member_id]) {
        c.records.push_back(target_member_record(group_id_, a.member_id, result[a.member_id]));
      }
    }
    c.records.push_back(target_metadata_record(group_id_, epoch, now));
    target_epoch = epoch;
    target = result[updated.member_id];
  } else {
    // Kafka's targetAssignment(memberId, instanceId): a static member's by its instance id.
    std::string id = updated.member_id;
    if (updated.instance_id) {
      if (auto s = static_members_.find(*updated.instance_id); s != static_members_.end()) {
        id = s->second;
      }
    }
    target = target_of(id);
  }

  // 3. Reconcile the member towards its target.
  consumer_group_member reconciled = updated;
  if (subscription_changed || !is_reconciled_to(updated, target_epoch)) {
    reconcile_input in;
    in.target_epoch = target_epoch;
    in.target = &target;
    in.subscribed = subscribed_ids(updated, regexes, metadata);
    in.subscription_changed = subscription_changed;
    in.owned = owned;
    in.partition_epoch = [this](const topic_uuid& t, int32_t p) {
      return current_partition_epoch(t, p);
    };
    auto next = reconcile(updated, in);
    if (!next) return fail(next.error());
    reconciled = std::move(*next);
    if (!same_assignment(reconciled, updated)) {
      c.records.push_back(current_assignment_record(group_id_, reconciled));
      if (reconciled.classic_member) {
        // A classic member has its join and sync timers instead (Kafka's maybeReconcile).
      } else if (reconciled.state == member_state::unrevoked_partitions) {
        c.rebalances.emplace_back(
            reconciled.member_id,
            rebalance_timer{now + reconciled.rebalance_timeout_ms, reconciled.member_epoch});
      } else {
        c.rebalances.emplace_back(reconciled.member_id, std::nullopt);
      }
    }
  }
  return reconciled;
}

int32_t consumer_group::session_timeout_ms(const consumer_group_member& m,
                                           const consumer_group_settings& settings) const {
  return m.classic_member ? m.classic_member->session_timeout_ms : settings.session_timeout_ms;
}

consumer_group_member consumer_group::replace_static_member(const consumer_group_member& previous,
                                                            const std::string& member_id,
                                                            change& c) const {
  // The new member takes over the previous one's assignment, at epoch 0 (Kafka's replaceMember).
  consumer_group_member member = previous;
  member.member_id = member_id;
  member.member_epoch = 0;
  member.previous_member_epoch = 0;
  for (auto& [topic, parts] : member.assigned_partitions) {
    for (auto& [p, e] : parts) e = 0;  // as the away member's record has them
  }
  remove_member_records(group_id_, previous.member_id, c.records);
  c.records.push_back(member_metadata_record(group_id_, member));
  auto t = target_.find(previous.member_id);
  c.records.push_back(target_member_record(group_id_, member_id,
                                           t == target_.end() ? topic_assignment{} : t->second));
  c.records.push_back(current_assignment_record(group_id_, member));
  return member;
}

owned_message<heartbeat_response> consumer_group::leave(const heartbeat_request& req,
                                                        group_context& ctx) {
  const std::string member_id(req.member_id);
  change c;
  owned_message<heartbeat_response> out;
  if (!req.instance_id) {
    if (!members_.contains(member_id)) {
      return error_response(
          {error_code::unknown_member_id,
           fmt::format("Member {} is not a member of group {}.", member_id, group_id_)});
    }
    fence({member_id}, ctx.metadata, c);
    out.message.member_id = out.arena.keep(member_id);
  } else {
    const std::string instance_id(*req.instance_id);
    const consumer_group_member* m = static_member(instance_id);
    if (!m) {
      return error_response(
          {error_code::unknown_member_id, fmt::format("Instance id {} is unknown.", instance_id)});
    }
    if (m->member_id != member_id) {
      return error_response({error_code::fenced_instance_id,
                             fmt::format("Static member {} with instance id {} was fenced by "
                                         "member {}.",
                                         member_id, instance_id, m->member_id)});
    }
    out.message.member_id = out.arena.keep(m->member_id);
    if (req.member_epoch == leave_group_static_member_epoch) {
      // Away, not gone: it keeps its assignment until its session times out.
      consumer_group_member away = *m;
      away.member_epoch = leave_group_static_member_epoch;
      away.partitions_pending_revocation.clear();
      // Kafka 4.4 records the away member's partitions at assignment epoch 0 (make interop's
      // consumer-group-heartbeat reads it from Kafka's log).
      for (auto& [topic, parts] : away.assigned_partitions) {
        for (auto& [p, e] : parts) e = 0;
      }
      c.records.push_back(current_assignment_record(group_id_, away));
    } else {
      fence({member_id}, ctx.metadata, c);
    }
  }
  if (auto e = commit(c, ctx)) return error_response(e);
  out.message.member_epoch = req.member_epoch;
  return out;
}

void consumer_group::fence(const std::vector<std::string>& member_ids,
                           const metadata_view& metadata, change& c) const {
  std::map<std::string, int> leaving_regexes;
  for (const auto& id : member_ids) {
    remove_member_records(group_id_, id, c.records);
    auto it = members_.find(id);
    if (it != members_.end() && !it->second.subscribed_topic_regex.empty()) {
      ++leaving_regexes[it->second.subscribed_topic_regex];
    }
  }
  regex_map regexes = regexes_;
  for (const auto& [regex, n] : leaving_regexes) {
    const auto subscribed = std::count_if(
        members_.begin(), members_.end(),
        [&, &regex = regex](const auto& kv) { return kv.second.subscribed_topic_regex == regex; });
    if (subscribed == n) {
      c.records.push_back(regex_tombstone(group_id_, regex));
      regexes.erase(regex);
    }
  }
  std::set<std::string> topics;
  for (const auto& [id, m] : members_) {
    if (std::find(member_ids.begin(), member_ids.end(), id) != member_ids.end()) continue;
    for_each_subscribed_name(m, regexes, [&](const std::string& n) { topics.insert(n); });
  }
  c.records.push_back(
      group_epoch_record(group_id_, group_epoch_ + 1, topics_hash(topics, metadata)));
  // The last members gone: the (empty) target assignment is at the new epoch too.
  if (member_ids.size() >= members_.size()) {
    c.records.push_back(target_metadata_record(group_id_, group_epoch_ + 1, 0));
  }
}

group_error consumer_group::commit(change& c, group_context& ctx) {
  if (!c.records.empty() || !pending_records_.empty()) {
    // An upgrade's records (already applied) go first, in the same batch.
    std::vector<coordinator_record> batch = pending_records_;
    batch.insert(batch.end(), c.records.begin(), c.records.end());
    const error_code e = ctx.write(std::move(batch));
    if (e != error_code::none) return {append_error_to_response_error(e), ""};
    pending_records_.clear();
    for (const auto& r : c.records) {
      protocol::reader rd(r.key);
      const int16_t type = rd.read_int16();
      std::optional<std::span<const uint8_t>> value;
      if (r.value) value = std::span<const uint8_t>(*r.value);
      replay(type, r.key, value);
    }
  }
  for (const auto& [id, deadline] : c.sessions) session_deadline_ms_[id] = deadline;
  for (const auto& [id, timer] : c.rebalances) {
    if (timer) {
      rebalance_timers_[id] = *timer;
    } else {
      rebalance_timers_.erase(id);
    }
  }
  if (c.regex_refresh_ms) last_regex_refresh_ms_ = *c.regex_refresh_ms;
  // Members that are gone (fenced, left, replaced) have no timers.
  std::erase_if(session_deadline_ms_, [&](const auto& kv) { return !members_.contains(kv.first); });
  std::erase_if(rebalance_timers_, [&](const auto& kv) { return !members_.contains(kv.first); });
  std::erase_if(classic_join_deadline_ms_,
                [&](const auto& kv) { return !members_.contains(kv.first); });
  std::erase_if(classic_sync_deadline_ms_,
                [&](const auto& kv) { return !members_.contains(kv.first); });
  return {};
}

// --- Timers --------------------------------------------------------------------------------------

std::optional<std::string> consumer_group::poll(group_context& ctx) {
  if (dead_) return std::nullopt;
  const int64_t now = ctx.now_ms;
  std::vector<std::string> expired;
  auto due = [&](const std::map<std::string, int64_t, std::less<>>& deadlines,
                 const std::string& id) {
    auto d = deadlines.find(id);
    return d != deadlines.end() && d->second <= now;
  };
  const consumer_group_settings settings = consumer_settings(ctx, group_id_);
  for (const auto& [id, m] : members_) {
    auto [it, fresh] = session_deadline_ms_.try_emplace(
        id, now + session_timeout_ms(m, settings));  // after a load: a new session
    if (!fresh && it->second <= now) {
      expired.push_back(id);
      continue;
    }
    if (due(classic_join_deadline_ms_, id) || due(classic_sync_deadline_ms_, id)) {
      expired.push_back(id);  // a classic member that did not rejoin or sync in time
      continue;
    }
    auto r = rebalance_timers_.find(id);
    if (r == rebalance_timers_.end() || r->second.deadline_ms > now) continue;
    if (m.member_epoch == r->second.member_epoch) {
      expired.push_back(id);  // it did not revoke within its rebalance timeout
    } else {
      rebalance_timers_.erase(r);
    }
  }
  // One write per member, as Kafka's timers each run their own operation; a failed write is
  // retried at the next poll.
  for (const auto& id : expired) {
    if (!members_.contains(id)) continue;
    if (validate_online_downgrade(id, ctx.config)) return id;
    change c;
    fence({id}, ctx.metadata, c);
    (void)commit(c, ctx);
  }
  return std::nullopt;
}

std::optional<int64_t> consumer_group::next_deadline_ms() const {
  std::optional<int64_t> next;
  auto consider = [&](int64_t t) {
    if (!next || t < *next) next = t;
  };
  for (const auto& [id, t] : session_deadline_ms_) consider(t);
  for (const auto& [id, t] : rebalance_timers_) consider(t.deadline_ms);
  for (const auto& [id, t] : classic_join_deadline_ms_) consider(t);
  for (const auto& [id, t] : classic_sync_deadline_ms_) consider(t);
  return next;
}

// --- Describe, list, delete ----------------------------------------------------------------------

std::string_view consumer_group::state_name() const {
  if (dead_) return "Dead";
  if (members_.empty()) return "Empty";
  if (group_epoch_ > assignment_epoch_) return "Assigning";
  for (const auto& [id, m] : members_) {
    if (!is_reconciled_to(m, assignment_epoch_)) return "Reconciling";
  }
  return "Stable";
}

void consumer_group::describe(protocol::consumer_group_describe_response::described_group& out,
                              message_arena& arena, int16_t version, const group_config& config,
                              const metadata_view& metadata) const {
  using described = protocol::consumer_group_describe_response;
  out.group_id = arena.keep(group_id_);
  out.group_state = arena.keep(state_name());
  out.group_epoch = group_epoch_;
  out.assignment_epoch = assignment_epoch_;
  std::map<std::string, int> counts;
  for (const auto& [id, m] : members_) {
    if (m.server_assignor) ++counts[*m.server_assignor];
  }
  std::string assignor = config.group_consumer_assignors.empty()
                             ? std::string(uniform_assignor::assignor_name)
                             : config.group_consumer_assignors.front();
  int most = 0;
  for (const auto& [name, n] : counts) {
    if (n > most) {
      most = n;
      assignor = name;
    }
  }
  out.assignor_name = arena.keep(assignor);

  auto topic_partitions = [&](const std::map<topic_uuid, partition_set>& a) {
    std::vector<described::topic_partitions_data> tps;
    for (const auto& [t, parts] : a) {
      auto desc = metadata.topic_by_id(t);
      if (!desc) continue;  // deleted
      auto& tp = tps.emplace_back();
      tp.topic_id = to_wire(t);
      tp.topic_name = arena.keep(desc->name);
      tp.partitions.assign(parts.begin(), parts.end());
    }
    return tps;
  };
  for (const auto& [id, m] : members_) {
    auto& d = out.members.emplace_back();
    d.member_id = arena.keep(m.member_id);
    if (m.instance_id) d.instance_id = arena.keep(*m.instance_id);
    if (m.rack_id) d.rack_id = arena.keep(*m.rack_id);
    d.member_epoch = m.member_epoch;
    d.client_id = arena.keep(m.client_id);
    d.client_host = arena.keep(m.client_host);
    for (const auto& n : m.subscribed_topic_names)
      d.subscribed_topic_names.push_back(arena.keep(n));
    d.subscribed_topic_regex = arena.keep(m.subscribed_topic_regex);  // "" for none, as Kafka
    // The current assignment is what the member owns: assigned and pending revocation.
    std::map<topic_uuid, partition_set> current;
    for (const auto* a : {&m.assigned_partitions, &m.partitions_pending_revocation}) {
      for (const auto& [t, parts] : *a) {
        for (const auto& [p, e] : parts) current[t].insert(p);
      }
    }
    d.assignment.topic_partitions = topic_partitions(current);
    auto t = target_.find(id);
    if (t != target_.end()) d.target_assignment.topic_partitions = topic_partitions(t->second);
    if (version >= 1) d.member_type = m.classic_member ? 0 : 1;  // classic 0, consumer 1
  }
}

group_error consumer_group::validate_delete() const {
  if (members_.empty() && !dead_) return {};
  return {error_code::non_empty_group, ""};
}

// --- Offsets -------------------------------------------------------------------------------------

offset_commit_check consumer_group::validate_offset_commit(
    std::string_view member_id, std::optional<std::string_view> instance_id, int32_t member_epoch,
    bool is_transactional, int16_t api_version) const {
  // A commit from outside the group protocol (the admin client, manual assignment) is accepted
  // by an empty group; a transactional one without member fields too.
  if (member_epoch < 0 && members_.empty()) return {};
  if (is_transactional && member_epoch == -1 && member_id.empty() && !instance_id) return {};
  auto it = members_.find(member_id);
  if (it == members_.end()) {
    return {{error_code::unknown_member_id,
             fmt::format("Member {} is not a member of group {}.", member_id, group_id_)}};
  }
  const consumer_group_member& m = it->second;
  if (m.classic_member) {
    // A classic member commits with its generation, the member epoch (Kafka's
    // validateMemberEpoch for the classic protocol).
    if (member_epoch == m.member_epoch) return {};
    return {{error_code::illegal_generation,
             fmt::format("The received generation id {} does not match the expected member "
                         "epoch {}.",
                         member_epoch, m.member_epoch)}};
  }
  if (!is_transactional && api_version < 9) {
    return {{error_code::unsupported_version,
             "OffsetCommit version 9 or above must be used by members using the consumer group "
             "protocol"}};
  }
  if (member_epoch == m.member_epoch) return {};
  if (member_epoch > m.member_epoch) {
    return {{error_code::stale_member_epoch,
             fmt::format("Received member epoch {} is newer than current member epoch {}.",
                         member_epoch, m.member_epoch)}};
  }
  return {{}, true};
}

group_error consumer_group::validate_offset_commit_partition(std::string_view member_id,
                                                             int32_t member_epoch,
                                                             std::string_view topic_name,
                                                             const topic_uuid& topic_id,
                                                             int32_t partition) const {
  auto it = members_.find(member_id);
  if (it == members_.end()) {
    return {error_code::unknown_member_id,
            fmt::format("Member {} is not a member of group {}.", member_id, group_id_)};
  }
  const consumer_group_member& m = it->second;
  std::optional<int32_t> assigned_at;
  for (const auto* a : {&m.assigned_partitions, &m.partitions_pending_revocation}) {
    auto t = a->find(topic_id);
    if (t == a->end()) continue;
    if (auto p = t->second.find(partition); p != t->second.end()) {
      assigned_at = p->second;
      break;
    }
  }
  if (!assigned_at) {
    return {error_code::stale_member_epoch,
            fmt::format("Partition {}-{} is not assigned or pending revocation for member.",
                        topic_name, partition)};
  }
  if (member_epoch < *assigned_at) {
    return {error_code::stale_member_epoch,
            fmt::format("Received member epoch {} is older than assignment epoch {} for partition "
                        "{}-{}.",
                        member_epoch, *assigned_at, topic_name, partition)};
  }
  return {};
}

error_code consumer_group::validate_offset_commit(std::string_view member_id,
                                                  int32_t member_epoch) const {
  if (member_epoch < 0 && members_.empty()) return error_code::none;
  auto it = members_.find(member_id);
  if (it == members_.end()) return error_code::unknown_member_id;
  return member_epoch == it->second.member_epoch ? error_code::none
                                                 : error_code::stale_member_epoch;
}

group_error consumer_group::validate_offset_fetch(std::optional<std::string_view> member_id,
                                                  int32_t member_epoch) const {
  if (!member_id && member_epoch < 0) return {};
  const std::string_view id = member_id.value_or("");
  auto it = members_.find(id);
  if (it == members_.end()) {
    return {error_code::unknown_member_id,
            fmt::format("Member {} is not a member of group {}.", id, group_id_)};
  }
  if (member_epoch != it->second.member_epoch && it->second.classic_member) {
    return {error_code::illegal_generation,
            fmt::format("The received generation id {} does not match the expected member epoch "
                        "{}.",
                        member_epoch, it->second.member_epoch)};
  }
  if (member_epoch != it->second.member_epoch) {
    return {error_code::stale_member_epoch,
            fmt::format("The received member epoch {} does not match the expected member epoch "
                        "{}.",
                        member_epoch, it->second.member_epoch)};
  }
  return {};
}

std::vector<std::string> consumer_group::subscribed_topics() const {
  std::set<std::string> topics;
  for (const auto& [id, m] : members_) {
    for_each_subscribed_name(m, regexes_, [&](const std::string& n) { topics.insert(n); });
  }
  return {topics.begin(), topics.end()};
}

bool consumer_group::is_subscribed_to(std::string_view topic) const {
  for (const auto& [id, m] : members_) {
    bool found = false;
    for_each_subscribed_name(m, regexes_,
                             [&](const std::string& n) { found = found || n == topic; });
    if (found) return true;
  }
  return false;
}

// --- State ---------------------------------------------------------------------------------------

const consumer_group_member* consumer_group::static_member(std::string_view instance_id) const {
  auto s = static_members_.find(instance_id);
  if (s == static_members_.end()) return nullptr;
  auto m = members_.find(s->second);
  return m == members_.end() ? nullptr : &m->second;
}

int32_t consumer_group::current_partition_epoch(const topic_uuid& topic, int32_t partition) const {
  auto t = owners_.find(topic);
  if (t == owners_.end()) return -1;
  auto p = t->second.find(partition);
  return p == t->second.end() ? -1 : p->second.second;
}

void consumer_group::index_member_partitions(const consumer_group_member& m, bool add) {
  for (const auto* a : {&m.assigned_partitions, &m.partitions_pending_revocation}) {
    for (const auto& [t, parts] : *a) {
      auto& owners = owners_[t];
      for (const auto& [p, e] : parts) {
        if (add) {
          owners[p] = {m.member_id, m.member_epoch};
        } else if (auto o = owners.find(p); o != owners.end() && o->second.first == m.member_id) {
          owners.erase(o);
        }
      }
      if (owners.empty()) owners_.erase(t);
    }
  }
}

bool consumer_group::same_state(const consumer_group& o) const {
  return group_id_ == o.group_id_ && group_epoch_ == o.group_epoch_ &&
         metadata_hash_ == o.metadata_hash_ && assignment_epoch_ == o.assignment_epoch_ &&
         assignment_timestamp_ms_ == o.assignment_timestamp_ms_ && members_ == o.members_ &&
         target_ == o.target_ && regexes_ == o.regexes_ && dead_ == o.dead_ &&
         has_partition_metadata_record_ == o.has_partition_metadata_record_ &&
         static_members_ == o.static_members_ && owners_ == o.owners_;
}

}  // namespace tarn::coordinator
