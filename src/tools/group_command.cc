// The pieces of `tarn groups` and `tarn share-groups` that are too large to inline
// (group_command.h): option checks, connecting, the common reset scenarios and the reset plan.
#include "tools/group_command.h"

#include <chrono>

namespace tarn::tools::group_command {

std::optional<std::string> check_common_options(const group_options& o) {
  if (!o.groups.empty() && o.all_groups) return "Option [all-groups] is not valid with [group]";
  if (o.describe && int{o.members} + int{o.offsets} + int{o.state_given} > 1) {
    return "Option [describe] takes at most one of these options: [members], [offsets], [state]";
  }
  if (o.reset) {
    if (!o.all_topics && o.topics.empty()) {
      return "One of the reset scopes should be defined: --all-topics, --topic.";
    }
    if (o.all_topics && !o.topics.empty()) return "Option [all-topics] is not valid with [topic]";
  }
  return std::nullopt;
}

int usage_error(const std::string& message) {
  std::fprintf(stderr, "%s\n", message.c_str());
  return 1;
}

int run_with_admin(const group_options& o, std::string_view client_id,
                   const std::function<result<void, failure_text>(client::group_admin&)>& action) {
  auto security = o.client.security();
  if (!security) return usage_error(security.error());
  auto admin =
      client::group_admin::connect(o.bootstrap_server, std::chrono::milliseconds(o.timeout_ms),
                                   std::string(client_id), *security);
  if (!admin) {
    print(command_failed(java_error(admin.error())).text);
    return 1;
  }
  result<void, failure_text> r = action(**admin);
  std::fflush(stderr);
  if (!r) {
    print(r.error().text);
    return 1;
  }
  return 0;
}

result<std::map<topic_partition, int64_t>, failure_text> common_reset_offsets(
    client::group_admin& admin, const group_options& o, const std::vector<topic_partition>& tps,
    const std::map<topic_partition, int64_t>& current) {
  if (o.to_offset) {
    std::map<topic_partition, int64_t> requested;
    for (const auto& tp : tps) requested[tp] = *o.to_offset;
    return clamp_offsets(admin, requested);
  }
  if (o.to_earliest) return offsets_at(admin, tps, client::earliest_offset_spec, "starting offset");
  if (o.to_latest) return offsets_at(admin, tps, client::latest_offset_spec, "ending offset");
  if (!o.to_datetime.empty()) {
    auto ts = parse_datetime(o.to_datetime);
    if (!ts) return fail(ts.error());
    return offsets_for_time(admin, tps, *ts);
  }
  // --to-current.
  std::map<topic_partition, int64_t> out;
  std::vector<topic_partition> without;
  for (const auto& tp : tps) {
    auto it = current.find(tp);
    if (it != current.end()) {
      out[tp] = it->second;
    } else {
      without.push_back(tp);
    }
  }
  if (!without.empty()) {
    auto ends = offsets_at(admin, without, client::latest_offset_spec, "ending offset");
    if (!ends) return fail(ends.error());
    out.insert(ends->begin(), ends->end());
  }
  return out;
}

std::vector<std::pair<topic_partition, int64_t>> reset_rows(
    const std::vector<topic_partition>& tps, const std::map<topic_partition, int64_t>& prepared) {
  std::vector<topic_partition> keys;
  for (const auto& tp : tps) {
    if (prepared.count(tp) && std::find(keys.begin(), keys.end(), tp) == keys.end()) {
      keys.push_back(tp);
    }
  }
  std::vector<std::pair<topic_partition, int64_t>> out;
  for (const auto& tp : java_hash_map_order(keys)) out.emplace_back(tp, prepared.at(tp));
  return out;
}

void print_reset_plan(const std::vector<const group_reset*>& groups, bool export_csv,
                      bool group_column) {
  if (export_csv) {
    std::string out;
    for (const auto* r : groups) {
      for (const auto& [tp, off] : r->offsets) {
        if (group_column) out += r->group + ",";
        out += tp.topic + "," + std::to_string(tp.partition) + "," + std::to_string(off) + "\n";
      }
    }
    print(out + "\n");
    return;
  }
  size_t group_width = 15, topic_width = 15;
  for (const auto* r : groups) {
    group_width = std::max(group_width, r->group.size());
    for (const auto& [tp, off] : r->offsets) topic_width = std::max(topic_width, tp.topic.size());
  }
  auto line = [&](const std::string& g, const std::string& t, const std::string& p,
                  const std::string& n) {
    print("\n" + pad(g, group_width) + " " + pad(t, topic_width) + " " + pad(p, 10) + " " + n);
  };
  if (!groups.empty()) line("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET");
  for (const auto* r : groups) {
    for (const auto& [tp, off] : r->offsets) {
      line(r->group, tp.topic, std::to_string(tp.partition), std::to_string(off));
    }
  }
  print("\n");
}

std::string quoted_list(const std::vector<std::string>& groups) {
  std::string out;
  for (const auto& g : java_hash_map_order(groups)) out += (out.empty() ? "'" : ", '") + g + "'";
  return out;
}

}  // namespace tarn::tools::group_command
