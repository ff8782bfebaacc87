// Consumer-group administration over the classic group APIs (see group_admin.h).
#include "client/group_admin.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "protocol/error_codes.h"
#include "protocol/messages/alter_share_group_offsets_request.h"
#include "protocol/messages/alter_share_group_offsets_response.h"
#include "protocol/messages/consumer_group_describe_request.h"
#include "protocol/messages/consumer_group_describe_response.h"
#include "protocol/messages/delete_groups_request.h"
#include "protocol/messages/delete_groups_response.h"
#include "protocol/messages/delete_share_group_offsets_request.h"
#include "protocol/messages/delete_share_group_offsets_response.h"
#include "protocol/messages/describe_groups_request.h"
#include "protocol/messages/describe_groups_response.h"
#include "protocol/messages/describe_share_group_offsets_request.h"
#include "protocol/messages/describe_share_group_offsets_response.h"
#include "protocol/messages/list_groups_request.h"
#include "protocol/messages/list_groups_response.h"
#include "protocol/messages/list_offsets_request.h"
#include "protocol/messages/list_offsets_response.h"
#include "protocol/messages/offset_commit_request.h"
#include "protocol/messages/offset_commit_response.h"
#include "protocol/messages/offset_delete_request.h"
#include "protocol/messages/offset_delete_response.h"
#include "protocol/messages/offset_fetch_request.h"
#include "protocol/messages/offset_fetch_response.h"
#include "protocol/messages/share_group_describe_request.h"
#include "protocol/messages/share_group_describe_response.h"

namespace tarn::client {

namespace {

using protocol::error_code;

}  // namespace

result<std::unique_ptr<group_admin>, client_error> group_admin::connect(
    const std::string& bootstrap, std::chrono::milliseconds timeout, std::string client_id,
    const security_config& security) {
  auto cluster = cluster_client::connect(bootstrap, std::move(client_id), timeout, security);
  if (!cluster) return fail(cluster.error());
  return std::unique_ptr<group_admin>(new group_admin(std::move(*cluster), timeout));
}

template <typename T, typename Attempt>
result<T, client_error> group_admin::with_coordinator(const std::string& group, Attempt&& attempt) {
  const auto until = deadline();
  bool reconnected = false;
  while (true) {
    auto c = cluster_->coordinator(group, until);
    if (!c) {
      if (is_retriable(c.error().code) && backoff_until(until)) continue;
      return fail(c.error());
    }
    result<T, client_error> r = attempt(**c);
    if (r) return r;
    const int16_t err = r.error().code;
    if (err == -1 && !(*c)->is_open()) {
      // The connection broke (the coordinator restarted or moved): find it again, once.
      cluster_->forget_coordinator(group);
      if (!reconnected) {
        reconnected = true;
        continue;
      }
      return r;
    }
    if (is_coordinator_error(err)) cluster_->forget_coordinator(group);
    if (is_retriable(err) && backoff_until(until)) continue;
    return r;
  }
}

result<std::vector<group_listing>, client_error> group_admin::list_groups(
    const std::vector<std::string>& states, const std::vector<std::string>& types) {
  // Every broker coordinates some groups: ask each one Metadata names, as Admin.listGroups does.
  auto md = cluster_->metadata(std::vector<std::string>{});
  if (!md) return fail(md.error());
  std::vector<group_listing> out;
  std::set<std::string> seen;
  auto ask = [&](blocking_client& c) -> result<void, client_error> {
    auto v = version_or_fail<protocol::list_groups_request>(c);
    if (!v) return fail(v.error());
    if (!states.empty() && *v < 4) {
      return fail(client_error{code(error_code::unsupported_version),
                               "the broker cannot filter groups by state (ListGroups v4)"});
    }
    if (!types.empty() && *v < 5) {
      return fail(client_error{code(error_code::unsupported_version),
                               "the broker cannot filter groups by type (ListGroups v5)"});
    }
    protocol::list_groups_request req;
    req.states_filter.assign(states.begin(), states.end());
    req.types_filter.assign(types.begin(), types.end());
    const auto until = deadline();
    while (true) {
      std::vector<uint8_t> buffer;
      auto resp = call<protocol::list_groups_response>(c, req, *v, buffer);
      if (!resp) return fail(transport_error(resp.error()));
      if (resp->error_code != 0) {
        if (is_retriable(resp->error_code) && backoff_until(until)) continue;
        return fail(kafka_error(resp->error_code));
      }
      for (const auto& g : resp->groups) {
        if (!seen.insert(std::string(g.group_id)).second) continue;
        out.push_back({std::string(g.group_id), std::string(g.protocol_type),
                       std::string(g.group_state), std::string(g.group_type)});
      }
      return {};
    }
  };
  const auto ids = cluster_->broker_ids();
  if (ids.empty()) {
    auto b = cluster_->bootstrap();
    if (!b) return fail(b.error());
    if (auto r = ask(**b); !r) return fail(r.error());
  }
  for (int32_t id : ids) {
    auto c = cluster_->node(id);
    if (!c) return fail(c.error());
    if (auto r = ask(**c); !r) return fail(r.error());
  }
  return out;
}

namespace {

// A KIP-848 consumer group as ConsumerGroupDescribe tells it; nullopt when the group is not one
// (GROUP_ID_NOT_FOUND: a classic group, or none) or the broker does not serve the API, so the
// caller asks DescribeGroups, as Kafka's Admin.describeConsumerGroups does.
result<std::optional<group_description>, client_error> describe_consumer_protocol_group(
    blocking_client& c, const std::string& group) {
  const int16_t v = c.version_for<protocol::consumer_group_describe_request>();
  if (v < 0) return std::optional<group_description>();
  protocol::consumer_group_describe_request req;
  req.group_ids.push_back(group);
  std::vector<uint8_t> buffer;
  auto resp = call<protocol::consumer_group_describe_response>(c, req, v, buffer);
  if (!resp) return fail(transport_error(resp.error()));
  if (resp->groups.size() != 1) {
    return fail(transport_error("ConsumerGroupDescribe: no group described"));
  }
  const auto& g = resp->groups[0];
  if (g.error_code == protocol::code(protocol::error_code::group_id_not_found)) {
    return std::optional<group_description>();
  }
  if (g.error_code != 0) return fail(kafka_error(g.error_code, g.error_message));
  group_description d;
  d.group_id = std::string(g.group_id);
  d.state = std::string(g.group_state);
  d.protocol_type = "consumer";
  d.protocol = std::string(g.assignor_name);
  d.coordinator = {-1, c.host(), c.port()};
  for (const auto& m : g.members) {
    group_member member;
    member.member_id = std::string(m.member_id);
    if (m.instance_id) member.group_instance_id = std::string(*m.instance_id);
    member.client_id = std::string(m.client_id);
    member.client_host = std::string(m.client_host);
    for (const auto& t : m.assignment.topic_partitions) {
      member.assignment.push_back({std::string(t.topic_name), t.partitions});
    }
    d.members.push_back(std::move(member));
  }
  return std::optional<group_description>(std::move(d));
}

}  // namespace

result<group_description, client_error> group_admin::describe_group(const std::string& group) {
  return with_coordinator<group_description>(
      group, [&](blocking_client& c) -> result<group_description, client_error> {
        auto consumer_protocol = describe_consumer_protocol_group(c, group);
        if (!consumer_protocol) return fail(consumer_protocol.error());
        if (*consumer_protocol) {
          group_description d = std::move(**consumer_protocol);
          if (auto known = cluster_->known_coordinator(group)) d.coordinator = *known;
          return d;
        }
        auto v = version_or_fail<protocol::describe_groups_request>(c);
        if (!v) return fail(v.error());
        protocol::describe_groups_request req;
        req.groups.push_back(group);
        std::vector<uint8_t> buffer;
        auto resp = call<protocol::describe_groups_response>(c, req, *v, buffer);
        if (!resp) return fail(transport_error(resp.error()));
        if (resp->groups.size() != 1)
          return fail(transport_error("DescribeGroups: no group described"));
        const auto& g = resp->groups[0];
        if (g.error_code != 0) return fail(kafka_error(g.error_code, g.error_message));
        group_description d;
        d.group_id = std::string(g.group_id);
        d.state = std::string(g.group_state);
        d.protocol_type = std::string(g.protocol_type);
        d.protocol = std::string(g.protocol_data);
        d.coordinator = {-1, c.host(), c.port()};
        for (const auto& m : g.members) {
          group_member member;
          member.member_id = std::string(m.member_id);
          if (m.group_instance_id) member.group_instance_id = std::string(*m.group_instance_id);
          member.client_id = std::string(m.client_id);
          member.client_host = std::string(m.client_host);
          if (d.protocol_type == "consumer" && !m.member_assignment.empty()) {
            if (auto a = decode_assignment(m.member_assignment)) {
              member.assignment = std::move(a->partitions);
            }
          }
          d.members.push_back(std::move(member));
        }
        if (auto known = cluster_->known_coordinator(group)) d.coordinator = *known;
        return d;
      });
}

result<std::map<topic_partition, committed_offset>, client_error> group_admin::fetch_offsets(
    const std::string& group) {
  using out_type = std::map<topic_partition, committed_offset>;
  return with_coordinator<out_type>(
      group, [&](blocking_client& c) -> result<out_type, client_error> {
        auto v = version_or_fail<protocol::offset_fetch_request>(c, offset_fetch_max_version);
        if (!v) return fail(v.error());
        protocol::offset_fetch_request req;
        if (*v >= 8) {
          protocol::offset_fetch_request::offset_fetch_request_group g;
          g.group_id = group;
          g.topics = std::nullopt;  // every topic
          req.groups.push_back(std::move(g));
        } else {
          req.group_id = group;
          req.topics = std::nullopt;
        }
        std::vector<uint8_t> buffer;
        auto resp = call<protocol::offset_fetch_response>(c, req, *v, buffer);
        if (!resp) return fail(transport_error(resp.error()));
        out_type out;
        auto take = [&](std::string_view topic, const auto& p) -> result<void, client_error> {
          if (p.error_code != 0) return fail(kafka_error(p.error_code));
          if (p.committed_offset < 0) return {};
          committed_offset o;
          o.offset = p.committed_offset;
          o.leader_epoch = p.committed_leader_epoch;
          if (p.metadata) o.metadata = std::string(*p.metadata);
          out[{std::string(topic), p.partition_index}] = std::move(o);
          return {};
        };
        if (*v >= 8) {
          if (resp->groups.size() != 1)
            return fail(transport_error("OffsetFetch: no group in the response"));
          const auto& g = resp->groups[0];
          if (g.error_code != 0) return fail(kafka_error(g.error_code));
          for (const auto& t : g.topics) {
            for (const auto& p : t.partitions) {
              if (auto r = take(t.name, p); !r) return fail(r.error());
            }
          }
        } else {
          if (resp->error_code != 0) return fail(kafka_error(resp->error_code));
          for (const auto& t : resp->topics) {
            for (const auto& p : t.partitions) {
              if (auto r = take(t.name, p); !r) return fail(r.error());
            }
          }
        }
        return out;
      });
}

result<std::map<std::string, topic_layout>, client_error> group_admin::describe_topics(
    const std::vector<std::string>& topics) {
  return cluster_->metadata(topics);
}

result<std::map<topic_partition, listed_offset>, client_error> group_admin::list_offsets(
    const std::vector<topic_partition>& partitions, int64_t spec) {
  std::map<topic_partition, listed_offset> out;
  std::set<topic_partition> pending(partitions.begin(), partitions.end());
  const auto until = deadline();
  while (!pending.empty()) {
    std::set<std::string> topic_names;
    for (const auto& tp : pending) topic_names.insert(tp.topic);
    auto md = cluster_->metadata(std::vector<std::string>(topic_names.begin(), topic_names.end()));
    if (!md) return fail(md.error());
    // leader -> its partitions; partitions without a topic or leader are answered here.
    std::map<int32_t, std::vector<topic_partition>> by_leader;
    for (const auto& tp : pending) {
      auto t = md->find(tp.topic);
      const partition_layout* p = nullptr;
      if (t != md->end() && t->second.error_code == 0) {
        for (const auto& candidate : t->second.partitions) {
          if (candidate.partition == tp.partition) p = &candidate;
        }
      }
      if (p == nullptr) {
        out[tp] = {code(error_code::unknown_topic_or_partition), -1, -1};
      } else if (p->leader < 0) {
        out[tp] = {code(error_code::leader_not_available), -1, -1};
      } else {
        by_leader[p->leader].push_back(tp);
      }
    }
    std::set<topic_partition> retry;
    for (const auto& [leader, tps] : by_leader) {
      auto c = cluster_->node(leader);
      if (!c) return fail(c.error());
      auto v = version_or_fail<protocol::list_offsets_request>(**c);
      if (!v) return fail(v.error());
      protocol::list_offsets_request req;
      req.replica_id = -1;
      req.isolation_level = 0;
      req.timeout_ms = static_cast<int32_t>(timeout_.count());
      const auto grouped = by_topic(tps);  // the request's names point into it
      for (const auto& [topic, ps] : grouped) {
        protocol::list_offsets_request::list_offsets_topic t;
        t.name = topic;
        for (int32_t p : ps) t.partitions.push_back({p, -1, spec});
        req.topics.push_back(std::move(t));
      }
      std::vector<uint8_t> buffer;
      auto resp = call<protocol::list_offsets_response>(**c, req, *v, buffer);
      if (!resp) {
        cluster_->drop(leader);
        return fail(transport_error(resp.error()));
      }
      for (const auto& t : resp->topics) {
        for (const auto& p : t.partitions) {
          topic_partition tp{std::string(t.name), p.partition_index};
          const bool stale_leader = p.error_code == code(error_code::not_leader_or_follower) ||
                                    p.error_code == code(error_code::leader_not_available) ||
                                    p.error_code == code(error_code::unknown_leader_epoch) ||
                                    p.error_code == code(error_code::fenced_leader_epoch);
          if (stale_leader && std::chrono::steady_clock::now() < until) {
            retry.insert(tp);
            continue;
          }
          out[tp] = {p.error_code, p.offset, p.timestamp};
        }
      }
    }
    pending = std::move(retry);
    if (!pending.empty() && !backoff_until(until)) {
      for (const auto& tp : pending) out[tp] = {code(error_code::leader_not_available), -1, -1};
      break;
    }
  }
  return out;
}

result<std::map<topic_partition, int16_t>, client_error> group_admin::commit_offsets(
    const std::string& group, const std::map<topic_partition, int64_t>& offsets) {
  using out_type = std::map<topic_partition, int16_t>;
  return with_coordinator<out_type>(
      group, [&](blocking_client& c) -> result<out_type, client_error> {
        auto v = version_or_fail<protocol::offset_commit_request>(c, offset_commit_max_version);
        if (!v) return fail(v.error());
        protocol::offset_commit_request req;
        req.group_id = group;
        req.generation_id_or_member_epoch = -1;
        req.member_id = "";
        req.group_instance_id = std::nullopt;
        std::map<std::string, std::vector<std::pair<int32_t, int64_t>>> topics;
        for (const auto& [tp, offset] : offsets) topics[tp.topic].push_back({tp.partition, offset});
        for (const auto& [topic, ps] : topics) {
          protocol::offset_commit_request::offset_commit_request_topic t;
          t.name = topic;
          for (const auto& [p, offset] : ps) {
            protocol::offset_commit_request::offset_commit_request_partition rp;
            rp.partition_index = p;
            rp.committed_offset = offset;
            rp.committed_leader_epoch = -1;
            rp.committed_metadata = "";
            t.partitions.push_back(rp);
          }
          req.topics.push_back(std::move(t));
        }
        std::vector<uint8_t> buffer;
        auto resp = call<protocol::offset_commit_response>(c, req, *v, buffer);
        if (!resp) return fail(transport_error(resp.error()));
        out_type out;
        for (const auto& t : resp->topics) {
          for (const auto& p : t.partitions) {
            if (is_coordinator_error(p.error_code)) return fail(kafka_error(p.error_code));
            out[{std::string(t.name), p.partition_index}] = p.error_code;
          }
        }
        return out;
      });
}

result<std::map<std::string, client_error>, client_error> group_admin::delete_groups(
    const std::vector<std::string>& groups) {
  std::map<std::string, client_error> out;
  for (const auto& group : groups) {
    auto r = with_coordinator<
        client_error>(group, [&](blocking_client& c) -> result<client_error, client_error> {
      auto v = version_or_fail<protocol::delete_groups_request>(c);
      if (!v) return fail(v.error());
      protocol::delete_groups_request req;
      req.groups_names.push_back(group);
      std::vector<uint8_t> buffer;
      auto resp = call<protocol::delete_groups_response>(c, req, *v, buffer);
      if (!resp) return fail(transport_error(resp.error()));
      for (const auto& g : resp->results) {
        if (g.group_id != group) continue;
        if (g.error_code != 0 && (is_retriable(g.error_code))) {
          return fail(kafka_error(g.error_code, g.error_message));
        }
        return g.error_code == 0 ? client_error{0, ""} : kafka_error(g.error_code, g.error_message);
      }
      return fail(transport_error("DeleteGroups: the group is not in the response"));
    });
    out[group] = r ? *r : r.error();
  }
  return out;
}

result<offset_delete_result, client_error> group_admin::delete_offsets(
    const std::string& group, const std::vector<topic_partition>& partitions) {
  return with_coordinator<offset_delete_result>(
      group, [&](blocking_client& c) -> result<offset_delete_result, client_error> {
        auto v = version_or_fail<protocol::offset_delete_request>(c);
        if (!v) return fail(v.error());
        protocol::offset_delete_request req;
        req.group_id = group;
        const auto grouped = by_topic(partitions);  // the request's names point into it
        for (const auto& [topic, ps] : grouped) {
          protocol::offset_delete_request::offset_delete_request_topic t;
          t.name = topic;
          for (int32_t p : ps) t.partitions.push_back({p});
          req.topics.push_back(std::move(t));
        }
        std::vector<uint8_t> buffer;
        auto resp = call<protocol::offset_delete_response>(c, req, *v, buffer);
        if (!resp) return fail(transport_error(resp.error()));
        if (is_retriable(resp->error_code)) return fail(kafka_error(resp->error_code));
        offset_delete_result out;
        out.error_code = resp->error_code;
        for (const auto& t : resp->topics) {
          for (const auto& p : t.partitions) {
            out.partitions[{std::string(t.name), p.partition_index}] = p.error_code;
          }
        }
        return out;
      });
}

// ---------------------------------------------------------------------------------------------
// Share groups (KIP-932)

result<share_group_description, client_error> group_admin::describe_share_group(
    const std::string& group) {
  return with_coordinator<share_group_description>(
      group, [&](blocking_client& c) -> result<share_group_description, client_error> {
        auto v = version_or_fail<protocol::share_group_describe_request>(c);
        if (!v) return fail(v.error());
        protocol::share_group_describe_request req;
        req.group_ids.push_back(group);
        std::vector<uint8_t> buffer;
        auto resp = call<protocol::share_group_describe_response>(c, req, *v, buffer);
        if (!resp) return fail(transport_error(resp.error()));
        if (resp->groups.size() != 1) {
          return fail(transport_error("ShareGroupDescribe: no group described"));
        }
        const auto& g = resp->groups[0];
        if (g.error_code != 0) return fail(kafka_error(g.error_code, g.error_message));
        share_group_description d;
        d.group_id = std::string(g.group_id);
        d.state = std::string(g.group_state);
        d.group_epoch = g.group_epoch;
        d.assignment_epoch = g.assignment_epoch;
        d.assignor = std::string(g.assignor_name);
        d.coordinator = {-1, c.host(), c.port()};
        for (const auto& m : g.members) {
          share_group_member member;
          member.member_id = std::string(m.member_id);
          member.client_id = std::string(m.client_id);
          member.client_host = std::string(m.client_host);
          member.member_epoch = m.member_epoch;
          for (const auto& tp : m.assignment.topic_partitions) {
            member.assignment.push_back(
                {std::string(tp.topic_name), {tp.partitions.begin(), tp.partitions.end()}});
          }
          d.members.push_back(std::move(member));
        }
        if (auto known = cluster_->known_coordinator(group)) d.coordinator = *known;
        return d;
      });
}

result<std::map<topic_partition, share_partition_offset>, client_error>
group_admin::list_share_group_offsets(const std::string& group) {
  using out_type = std::map<topic_partition, share_partition_offset>;
  return with_coordinator<out_type>(
      group, [&](blocking_client& c) -> result<out_type, client_error> {
        auto v = version_or_fail<protocol::describe_share_group_offsets_request>(c);
        if (!v) return fail(v.error());
        protocol::describe_share_group_offsets_request req;
        auto& g = req.groups.emplace_back();
        g.group_id = group;
        g.topics = std::nullopt;  // every share-partition
        std::vector<uint8_t> buffer;
        auto resp = call<protocol::describe_share_group_offsets_response>(c, req, *v, buffer);
        if (!resp) return fail(transport_error(resp.error()));
        if (resp->groups.size() != 1) {
          return fail(transport_error("DescribeShareGroupOffsets: no group in the response"));
        }
        const auto& rg = resp->groups[0];
        if (rg.error_code != 0) return fail(kafka_error(rg.error_code, rg.error_message));
        out_type out;
        for (const auto& t : rg.topics) {
          for (const auto& p : t.partitions) {
            if (p.error_code != 0) continue;
            share_partition_offset o;
            if (p.start_offset >= 0) {
              o.start_offset = p.start_offset;
              if (p.leader_epoch >= 0) o.leader_epoch = p.leader_epoch;
              if (*v >= 1 && p.lag >= 0) o.lag = p.lag;
            }
            out[{std::string(t.topic_name), p.partition_index}] = o;
          }
        }
        return out;
      });
}

result<std::map<topic_partition, client_error>, client_error>
group_admin::alter_share_group_offsets(const std::string& group,
                                       const std::map<topic_partition, int64_t>& offsets) {
  using out_type = std::map<topic_partition, client_error>;
  return with_coordinator<out_type>(
      group, [&](blocking_client& c) -> result<out_type, client_error> {
        auto v = version_or_fail<protocol::alter_share_group_offsets_request>(c);
        if (!v) return fail(v.error());
        protocol::alter_share_group_offsets_request req;
        req.group_id = group;
        std::map<std::string, std::vector<std::pair<int32_t, int64_t>>> topics;
        for (const auto& [tp, offset] : offsets) topics[tp.topic].push_back({tp.partition, offset});
        for (const auto& [topic, ps] : topics) {
          auto& t = req.topics.emplace_back();
          t.topic_name = topic;
          for (const auto& [p, offset] : ps) t.partitions.push_back({p, offset});
        }
        std::vector<uint8_t> buffer;
        auto resp = call<protocol::alter_share_group_offsets_response>(c, req, *v, buffer);
        if (!resp) return fail(transport_error(resp.error()));
        if (resp->error_code != 0) return fail(kafka_error(resp->error_code, resp->error_message));
        out_type out;
        for (const auto& t : resp->responses) {
          for (const auto& p : t.partitions) {
            out[{std::string(t.topic_name), p.partition_index}] =
                p.error_code == 0 ? client_error{0, ""}
                                  : kafka_error(p.error_code, p.error_message);
          }
        }
        return out;
      });
}

result<share_offsets_delete_result, client_error> group_admin::delete_share_group_offsets(
    const std::string& group, const std::vector<std::string>& topics) {
  return with_coordinator<share_offsets_delete_result>(
      group, [&](blocking_client& c) -> result<share_offsets_delete_result, client_error> {
        auto v = version_or_fail<protocol::delete_share_group_offsets_request>(c);
        if (!v) return fail(v.error());
        protocol::delete_share_group_offsets_request req;
        req.group_id = group;
        for (const auto& t : topics) req.topics.emplace_back().topic_name = t;
        std::vector<uint8_t> buffer;
        auto resp = call<protocol::delete_share_group_offsets_response>(c, req, *v, buffer);
        if (!resp) return fail(transport_error(resp.error()));
        if (is_retriable(resp->error_code)) return fail(kafka_error(resp->error_code));
        share_offsets_delete_result out;
        if (resp->error_code != 0) out.error = kafka_error(resp->error_code, resp->error_message);
        for (const auto& t : resp->responses) {
          out.topics[std::string(t.topic_name)] =
              t.error_code == 0 ? client_error{0, ""} : kafka_error(t.error_code, t.error_message);
        }
        return out;
      });
}

}  // namespace tarn::client
