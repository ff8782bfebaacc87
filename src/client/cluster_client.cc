// Connections to a cluster's brokers and group coordinators (see cluster_client.h).
#include "client/cluster_client.h"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

#include "protocol/error_codes.h"
#include "protocol/messages/find_coordinator_request.h"
#include "protocol/messages/find_coordinator_response.h"
#include "protocol/messages/metadata_request.h"
#include "protocol/messages/metadata_response.h"

namespace tarn::client {

namespace {

// Metadata by topic name: v12 at most (v13 adds nothing we read).
constexpr int16_t metadata_max_version = 12;

using protocol::error_code;

}  // namespace

client_error kafka_error(int16_t c, std::optional<std::string_view> message) {
  client_error e;
  e.code = c;
  if (message && !message->empty()) {
    e.message = std::string(*message);
  } else if (const auto* info = protocol::find_error(c)) {
    e.message = std::string(info->message);
  } else {
    e.message = fmt::format("error code {}", c);
  }
  return e;
}

std::string error_name(int16_t c) {
  if (const auto* info = protocol::find_error(c)) return std::string(info->name);
  return fmt::format("UNKNOWN({})", c);
}

bool is_retriable(int16_t c) {
  const auto* info = protocol::find_error(c);
  return info != nullptr && info->retriable;
}

bool backoff_until(std::chrono::steady_clock::time_point deadline,
                   std::chrono::milliseconds backoff) {
  const auto now = std::chrono::steady_clock::now();
  if (now >= deadline) return false;
  std::this_thread::sleep_for(
      std::min<std::chrono::steady_clock::duration>(backoff, deadline - now));
  return true;
}

result<std::unique_ptr<cluster_client>, client_error> cluster_client::connect(
    const std::string& bootstrap, std::string client_id, std::chrono::milliseconds request_timeout,
    const security_config& security) {
  auto c = blocking_client::connect(bootstrap, request_timeout, client_id, security);
  if (!c) return fail(client_error{-1, c.error()});
  if (auto v = (*c)->negotiate_versions(); !v) return fail(client_error{-1, v.error()});
  std::unique_ptr<cluster_client> cluster(
      new cluster_client(std::move(*c), std::move(client_id), request_timeout));
  cluster->security_ = security;
  return cluster;
}

result<void, client_error> cluster_client::ensure_bootstrap() {
  if (bootstrap_->is_open()) return {};
  auto c = blocking_client::connect(bootstrap_->host(), bootstrap_->port(), request_timeout_,
                                    client_id_, security_);
  if (!c) return fail(client_error{-1, c.error()});
  if (auto v = (*c)->negotiate_versions(); !v) return fail(client_error{-1, v.error()});
  bootstrap_ = std::move(*c);
  return {};
}

result<blocking_client*, client_error> cluster_client::bootstrap() {
  if (auto b = ensure_bootstrap(); !b) return fail(b.error());
  return bootstrap_.get();
}

result<std::map<std::string, topic_layout>, client_error> cluster_client::metadata(
    const std::optional<std::vector<std::string>>& topics) {
  if (auto b = ensure_bootstrap(); !b) return fail(b.error());
  const int16_t v = bootstrap_->version_for<protocol::metadata_request>(metadata_max_version);
  if (v < 0) return fail(client_error{-1, "the broker serves no Metadata version we speak"});
  protocol::metadata_request req;
  req.allow_auto_topic_creation = false;
  if (topics) {
    req.topics.emplace();
    for (const auto& t : *topics) {
      protocol::metadata_request::metadata_request_topic rt;
      rt.name = t;
      req.topics->push_back(rt);
    }
  } else if (v < 1) {
    req.topics.emplace();  // v0: an empty list means all topics
  }
  std::vector<uint8_t> buffer;
  auto resp = call<protocol::metadata_response>(*bootstrap_, req, v, buffer);
  if (!resp) return fail(client_error{-1, resp.error()});
  for (const auto& b : resp->brokers) {
    broker_info info{b.node_id, std::string(b.host), b.port};
    auto known = brokers_.find(b.node_id);
    if (known != brokers_.end() &&
        (known->second.host != info.host || known->second.port != info.port)) {
      nodes_.erase(b.node_id);  // the broker moved
    }
    brokers_[b.node_id] = std::move(info);
  }
  std::map<std::string, topic_layout> out;
  for (const auto& t : resp->topics) {
    topic_layout layout;
    layout.name = std::string(t.name.value_or(""));
    layout.error_code = t.error_code;
    layout.topic_id = uuid_from_wire(t.topic_id);
    for (const auto& p : t.partitions) {
      layout.partitions.push_back({p.partition_index, p.leader_id, p.error_code});
    }
    std::sort(layout.partitions.begin(), layout.partitions.end(),
              [](const auto& a, const auto& b) { return a.partition < b.partition; });
    out[layout.name] = std::move(layout);
  }
  return out;
}

std::optional<broker_info> cluster_client::broker(int32_t node_id) const {
  auto it = brokers_.find(node_id);
  if (it == brokers_.end()) return std::nullopt;
  return it->second;
}

result<blocking_client*, client_error> cluster_client::node(int32_t node_id) {
  if (auto it = nodes_.find(node_id); it != nodes_.end()) {
    if (it->second->is_open()) return it->second.get();
    nodes_.erase(it);
  }
  auto info = brokers_.find(node_id);
  if (info == brokers_.end()) {
    if (auto md = metadata(std::vector<std::string>{}); !md) return fail(md.error());
    info = brokers_.find(node_id);
    if (info == brokers_.end()) {
      return fail(client_error{-1, fmt::format("broker {} is not in the cluster", node_id)});
    }
  }
  if (info->second.host == bootstrap_->host() && info->second.port == bootstrap_->port()) {
    if (auto b = ensure_bootstrap(); !b) return fail(b.error());
    return bootstrap_.get();
  }
  auto c = blocking_client::connect(info->second.host, info->second.port, request_timeout_,
                                    client_id_, security_);
  if (!c) return fail(client_error{-1, c.error()});
  if (auto v = (*c)->negotiate_versions(); !v) return fail(client_error{-1, v.error()});
  blocking_client* raw = c->get();
  nodes_[node_id] = std::move(*c);
  return raw;
}

std::vector<int32_t> cluster_client::broker_ids() const {
  std::vector<int32_t> out;
  for (const auto& [id, info] : brokers_) out.push_back(id);
  return out;
}

std::optional<broker_info> cluster_client::known_coordinator(const std::string& key,
                                                             int8_t key_type) const {
  auto it = coordinators_.find({key_type, key});
  if (it == coordinators_.end()) return std::nullopt;
  return it->second;
}

void cluster_client::drop(int32_t node_id) { nodes_.erase(node_id); }

result<broker_info, client_error> cluster_client::find_coordinator(
    const std::string& group, std::chrono::steady_clock::time_point deadline, int8_t key_type) {
  if (auto b = ensure_bootstrap(); !b) return fail(b.error());
  const int16_t v = bootstrap_->version_for<protocol::find_coordinator_request>();
  if (v < 0) return fail(client_error{-1, "the broker serves no FindCoordinator version we speak"});
  while (true) {
    protocol::find_coordinator_request req;
    req.key_type = key_type;
    if (v >= 4) {
      req.coordinator_keys.push_back(group);
    } else {
      req.key = group;
    }
    std::vector<uint8_t> buffer;
    auto resp = call<protocol::find_coordinator_response>(*bootstrap_, req, v, buffer);
    if (!resp) return fail(client_error{-1, resp.error()});
    int16_t err = resp->error_code;
    std::optional<std::string_view> message = resp->error_message;
    broker_info found{resp->node_id, std::string(resp->host), resp->port};
    if (v >= 4) {
      if (resp->coordinators.size() != 1) {
        return fail(client_error{-1, "FindCoordinator answered for another number of groups"});
      }
      const auto& c = resp->coordinators[0];
      err = c.error_code;
      message = c.error_message;
      found = {c.node_id, std::string(c.host), c.port};
    }
    if (err == 0) {
      brokers_[found.node_id] = found;
      return found;
    }
    if (!is_retriable(err) || !backoff_until(deadline)) return fail(kafka_error(err, message));
  }
}

result<blocking_client*, client_error> cluster_client::coordinator(
    const std::string& key, std::chrono::steady_clock::time_point deadline, int8_t key_type) {
  auto known = coordinators_.find({key_type, key});
  if (known == coordinators_.end()) {
    auto found = find_coordinator(key, deadline, key_type);
    if (!found) return fail(found.error());
    known = coordinators_.emplace(std::pair{key_type, key}, *found).first;
  }
  auto c = node(known->second.node_id);
  if (!c) coordinators_.erase(known);
  return c;
}

void cluster_client::forget_coordinator(const std::string& key, int8_t key_type) {
  auto it = coordinators_.find({key_type, key});
  if (it == coordinators_.end()) return;
  drop(it->second.node_id);
  coordinators_.erase(it);
}

}  // namespace tarn::client
