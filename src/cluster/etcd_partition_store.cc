// etcd_partition_store: partition states as JSON under <prefix>partitions/, compare-and-swap.
#include "cluster/etcd_partition_store.h"

#include <fmt/format.h>

#include <charconv>
#include <climits>
#include <nlohmann/json.hpp>

namespace tarn::cluster {

using json = nlohmann::json;

namespace {

bool read_int32(const json& j, const char* name, int32_t min, int32_t& out) {
  auto it = j.find(name);
  if (it == j.end() || !it->is_number_integer()) return false;
  const auto v = it->get<int64_t>();
  if (v < min || v > INT32_MAX) return false;
  out = static_cast<int32_t>(v);
  return true;
}

bool read_ids(const json& j, const char* name, std::vector<int32_t>& out) {
  auto it = j.find(name);
  if (it == j.end() || !it->is_array()) return false;
  for (const auto& v : *it) {
    if (!v.is_number_integer()) return false;
    const auto id = v.get<int64_t>();
    if (id < 0 || id > INT32_MAX) return false;
    out.push_back(static_cast<int32_t>(id));
  }
  return true;
}

}  // namespace

std::string encode_partition_state(const partition_state& p) {
  json j{{"replicas", p.replicas},
         {"isr", p.isr},
         {"leader", p.leader},
         {"leader_epoch", p.leader_epoch},
         {"partition_epoch", p.partition_epoch}};
  // Only while a reassignment runs, so that every other state keeps its bytes.
  if (!p.adding_replicas.empty()) j["adding_replicas"] = p.adding_replicas;
  if (!p.removing_replicas.empty()) j["removing_replicas"] = p.removing_replicas;
  // KIP-966's fields, only while they hold something (likewise).
  if (!p.elr.empty()) {
    j["elr"] = p.elr;
    j["elr_broker_epochs"] = p.elr_broker_epochs;
  }
  if (!p.last_known_elr.empty()) j["last_known_elr"] = p.last_known_elr;
  return j.dump();
}

std::optional<partition_state> decode_partition_state(std::string_view text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  partition_state p;
  if (!read_ids(j, "replicas", p.replicas) || !read_ids(j, "isr", p.isr) ||
      !read_int32(j, "leader", no_leader, p.leader) ||
      !read_int32(j, "leader_epoch", 0, p.leader_epoch) ||
      !read_int32(j, "partition_epoch", 0, p.partition_epoch)) {
    return std::nullopt;
  }
  // Absent (every state written before reassignments existed) is empty.
  if ((j.contains("adding_replicas") && !read_ids(j, "adding_replicas", p.adding_replicas)) ||
      (j.contains("removing_replicas") && !read_ids(j, "removing_replicas", p.removing_replicas))) {
    return std::nullopt;
  }
  if ((j.contains("elr") && !read_ids(j, "elr", p.elr)) ||
      (j.contains("last_known_elr") && !read_ids(j, "last_known_elr", p.last_known_elr))) {
    return std::nullopt;
  }
  // One epoch per ELR member (0, unknown, for any missing).
  if (auto it = j.find("elr_broker_epochs"); it != j.end()) {
    if (!it->is_array() || it->size() > p.elr.size()) return std::nullopt;
    for (const auto& v : *it) {
      if (!v.is_number_integer()) return std::nullopt;
      p.elr_broker_epochs.push_back(v.get<int64_t>());
    }
  }
  p.elr_broker_epochs.resize(p.elr.size(), 0);
  return p;
}

std::optional<std::pair<uuid, int32_t>> parse_partition_key(std::string_view key,
                                                            std::string_view dir) {
  if (!key.starts_with(dir)) return std::nullopt;
  key.remove_prefix(dir.size());
  const size_t slash = key.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  auto id = uuid::parse(key.substr(0, slash));
  const std::string_view tail = key.substr(slash + 1);
  int32_t index = -1;
  const auto [end, ec] = std::from_chars(tail.data(), tail.data() + tail.size(), index);
  if (!id || ec != std::errc() || end != tail.data() + tail.size() || index < 0) {
    return std::nullopt;
  }
  return std::make_pair(*id, index);
}

std::string etcd_partition_store::key(const uuid& topic_id, int32_t partition) const {
  return fmt::format("{}partitions/{}/{}", prefix_, topic_id.to_string(), partition);
}

result<std::optional<versioned_partition_state>, etcd::etcd_error> etcd_partition_store::read(
    const uuid& topic_id, int32_t partition) {
  const std::string k = key(topic_id, partition);
  auto r = client_.range(k);
  if (!r) return fail(r.error());
  if (r->kvs.empty()) return std::optional<versioned_partition_state>();
  auto state = decode_partition_state(r->kvs[0].value);
  if (!state) {
    return fail(etcd::etcd_error{etcd::etcd_error::internal, k + " is not a partition state"});
  }
  return std::optional<versioned_partition_state>(
      versioned_partition_state{std::move(*state), r->kvs[0].mod_revision});
}

result<std::map<int32_t, versioned_partition_state>, etcd::etcd_error>
etcd_partition_store::read_topic(const uuid& topic_id) {
  const std::string dir = fmt::format("{}partitions/{}/", prefix_, topic_id.to_string());
  auto r = client_.range(dir, etcd::prefix_end(dir));
  if (!r) return fail(r.error());
  std::map<int32_t, versioned_partition_state> out;
  for (const auto& kv : r->kvs) {
    int32_t index = -1;
    const std::string_view tail = std::string_view(kv.key).substr(dir.size());
    const auto [end, ec] = std::from_chars(tail.data(), tail.data() + tail.size(), index);
    auto state = decode_partition_state(kv.value);
    if (ec != std::errc() || end != tail.data() + tail.size() || index < 0 || !state) {
      return fail(
          etcd::etcd_error{etcd::etcd_error::internal, kv.key + " is not a partition state"});
    }
    out[index] = versioned_partition_state{std::move(*state), kv.mod_revision};
  }
  return out;
}

result<bool, etcd::etcd_error> etcd_partition_store::create(const uuid& topic_id, int32_t partition,
                                                            const partition_state& state) {
  return compare_and_set(topic_id, partition, 0, state);
}

result<std::optional<int64_t>, etcd::etcd_error> etcd_partition_store::create_all(
    const uuid& topic_id, int32_t first, const std::vector<partition_state>& states) {
  if (states.size() > max_states_per_txn) {
    return fail(etcd::etcd_error{etcd::etcd_error::invalid_argument,
                                 "too many partition states for one transaction"});
  }
  etcd::txn_request t;
  for (size_t i = 0; i < states.size(); ++i) {
    const std::string k = key(topic_id, first + static_cast<int32_t>(i));
    t.compares.push_back(
        {k, etcd::compare::target_kind::mod_revision, etcd::compare::result_kind::equal, 0, {}});
    t.success.push_back(etcd::request_op::put(k, encode_partition_state(states[i])));
  }
  auto r = client_.txn(t);
  if (!r) return fail(r.error());
  if (!r->succeeded) return std::optional<int64_t>();
  return std::optional<int64_t>(r->revision);
}

result<bool, etcd::etcd_error> etcd_partition_store::compare_and_set(const uuid& topic_id,
                                                                     int32_t partition,
                                                                     int64_t expected_mod_revision,
                                                                     const partition_state& state) {
  const std::string k = key(topic_id, partition);
  etcd::txn_request t;
  // A key that does not exist has mod_revision 0, so expected 0 means "create".
  t.compares.push_back({k,
                        etcd::compare::target_kind::mod_revision,
                        etcd::compare::result_kind::equal,
                        expected_mod_revision,
                        {}});
  t.success.push_back(etcd::request_op::put(k, encode_partition_state(state)));
  auto r = client_.txn(t);
  if (!r) return fail(r.error());
  return r->succeeded;
}

result<alter_partition_result, etcd::etcd_error> etcd_partition_store::alter_partition(
    const uuid& topic_id, int32_t partition, const alter_partition_request& request,
    const broker_states& brokers, const elr_options& elr) {
  while (true) {
    auto current = read(topic_id, partition);
    if (!current) return fail(current.error());
    if (!*current) {
      return alter_partition_result{protocol::error_code::unknown_topic_or_partition, {}};
    }
    auto decided = cluster::alter_partition((*current)->state, request, brokers, elr);
    if (decided.error != protocol::error_code::none || decided.state == (*current)->state) {
      return decided;
    }
    auto written = compare_and_set(topic_id, partition, (*current)->mod_revision, decided.state);
    if (!written) return fail(written.error());
    if (*written) return decided;
    // Changed since the read: decide again on the newer state (usually INVALID_UPDATE_VERSION).
  }
}

}  // namespace tarn::cluster
