// `tarn groups`: consumer-group management like Kafka's kafka-consumer-groups.sh
// (ConsumerGroupCommand of Kafka 4.4), through src/client/group_admin:
//   --bootstrap-server H:P
//   --list [--state [S,S]] [--type [T,T]]
//   --describe (--group G ... | --all-groups) [--offsets (default) | --members | --state]
//   [--verbose]
//   --delete (--group G ... | --all-groups)
//   --reset-offsets (--group G ... | --all-groups) (--topic T[:P,P] ... | --all-topics)
//       (--to-earliest | --to-latest | --to-current | --to-offset N | --shift-by N |
//        --to-datetime YYYY-MM-DDTHH:mm:SS.sss[Z|+hh:mm] | --by-duration PnDTnHnMnS)
//       [--dry-run (default) | --execute] [--export]
//   --delete-offsets --group G --topic T[:P,P] ...
//   [--timeout MS (5000)] [--command-config FILE] [-X k=v ...] (security settings only)
// The tables, messages and their order are the Java tool's: columns padded as its printf
// formats pad them (at least 15 wide, wider for longer values), rows of a reset or a delete in the
// iteration order of the Java HashMap the tool prints from. Where the Java tool prints an error
// and exits 0, tarn prints the same text and exits 1.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "client/group_admin.h"
#include "tools/client_settings.h"
#include "tools/group_command.h"
#include "tools/subcommands.h"

namespace tarn::tools {

namespace {

using client::client_error;
using client::topic_partition;
using namespace group_command;

// kafka-consumer-groups.sh's options: both group tools' and its own.
struct groups_options : group_options {
  std::string type;
  std::optional<int64_t> shift_by;
  std::string by_duration;
  bool type_given = false;  // set from the parsed options
};

// ---------------------------------------------------------------------------------------------
// Names

std::string capitalized(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (!s.empty()) s[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(s[0])));
  return s;
}

// Kafka's GroupState names (GroupState.parse is case-insensitive).
const std::vector<std::string>& consumer_group_states() {
  static const std::vector<std::string> states = {
      "PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty",
      "Assigning",          "Reconciling"};
  return states;
}

result<std::vector<std::string>, failure_text> parse_states(const std::string& input) {
  std::vector<std::string> out;
  for (const auto& part : split(input, ',')) {
    const std::string want = lower(trim(part));
    auto it = std::find_if(consumer_group_states().begin(), consumer_group_states().end(),
                           [&](const std::string& s) { return lower(s) == want; });
    if (it == consumer_group_states().end()) {
      std::string valid;
      for (const auto& s : consumer_group_states()) valid += (valid.empty() ? "" : ", ") + s;
      return fail(
          failure_text{"Invalid state list '" + input + "'. Valid states are: " + valid + "\n"});
    }
    if (std::find(out.begin(), out.end(), *it) == out.end()) out.push_back(*it);
  }
  return out;
}

result<std::vector<std::string>, failure_text> parse_types(const std::string& input) {
  std::vector<std::string> out;
  for (const auto& part : split(lower(input), ',')) {
    const std::string t = trim(part);
    if (t != "classic" && t != "consumer") {
      return fail(
          failure_text{"Invalid types list '" + input + "'. Valid types are: Classic, Consumer\n"});
    }
    if (std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// --list

result<void, failure_text> run_list(client::group_admin& admin, const groups_options& o) {
  std::vector<std::string> states, types;
  if (o.state_given && !o.state.empty()) {
    auto s = parse_states(o.state);
    if (!s) return fail(s.error());
    states = std::move(*s);
  }
  if (o.type_given && !o.type.empty()) {
    auto t = parse_types(o.type);
    if (!t) return fail(t.error());
    types = std::move(*t);
  }
  auto listed = admin.list_groups(states, types);
  if (!listed) return fail(command_failed(java_error(listed.error())));
  // Consumer groups only: classic groups of protocol type "consumer" (or none yet) and groups
  // of the consumer protocol, as ListGroupsOptions.forConsumerGroups() selects them.
  std::vector<client::group_listing> groups;
  for (auto& g : *listed) {
    const std::string type = lower(g.type);
    if (type == "share" || type == "streams") continue;
    if (type != "consumer" && !g.protocol_type.empty() && g.protocol_type != "consumer") {
      continue;
    }
    groups.push_back(std::move(g));
  }
  if (!o.state_given && !o.type_given) {
    for (const auto& g : groups) print(g.group_id + "\n");
    return {};
  }
  size_t width = 15;
  for (const auto& g : groups) width = std::max(width, g.group_id.size());
  width += 10;
  auto line = [&](const std::string& id, const std::string& type, const std::string& state) {
    std::string out = pad(id, width);
    if (o.type_given) out += " " + pad(type, 20);
    if (o.state_given) out += " " + pad(state, 20);
    print(out + "\n");
  };
  line("GROUP", "TYPE", "STATE");
  for (const auto& g : groups) {
    line(g.group_id, g.type.empty() ? "Unknown" : capitalized(g.type),
         g.state.empty() ? "Unknown" : g.state);
  }
  return {};
}

// ---------------------------------------------------------------------------------------------
// --describe

// ConsumerGroupCommand.shouldPrintMemberState: the note about the group's state; false when
// there is nothing to print after it.
bool note_state(const std::string& group, const std::string& state, size_t rows, bool& failed) {
  if (state == "Dead") {
    print("\nError: Consumer group '" + group + "' does not exist.\n");
    failed = true;
    return false;
  }
  if (state == "Empty") {
    print_err("\nConsumer group '" + group + "' has no active members.\n");
  } else if (state == "PreparingRebalance" || state == "CompletingRebalance" ||
             state == "Assigning" || state == "Reconciling") {
    print_err("\nWarning: Consumer group '" + group + "' is rebalancing.\n");
  }
  return rows > 0;
}

struct offset_row {
  std::string group, topic, partition, leader_epoch, offset, log_end, lag, consumer, host, client;
};

result<std::vector<offset_row>, failure_text> offset_rows(client::group_admin& admin,
                                                          const client::group_description& d) {
  auto committed = admin.fetch_offsets(d.group_id);
  if (!committed) return fail(command_failed(java_error(committed.error())));
  std::vector<const client::group_member*> members;
  for (const auto& m : d.members) {
    if (!m.assignment.empty()) members.push_back(&m);
  }
  auto count = [](const client::group_member* m) {
    size_t n = 0;
    for (const auto& tp : m->assignment) n += tp.partitions.size();
    return n;
  };
  std::stable_sort(members.begin(), members.end(),
                   [&](auto* a, auto* b) { return count(a) > count(b); });
  std::vector<std::pair<const client::group_member*, std::vector<topic_partition>>> blocks;
  std::set<topic_partition> assigned;
  for (const auto* m : members) {
    std::vector<topic_partition> tps;
    for (const auto& tp : m->assignment) {
      for (int32_t p : tp.partitions) tps.push_back({tp.topic, p});
    }
    std::sort(tps.begin(), tps.end());
    assigned.insert(tps.begin(), tps.end());
    blocks.emplace_back(m, std::move(tps));
  }
  std::vector<topic_partition> unassigned;
  for (const auto& [tp, off] : *committed) {
    if (!assigned.count(tp)) unassigned.push_back(tp);
  }
  if (!unassigned.empty()) blocks.emplace_back(nullptr, unassigned);
  std::vector<topic_partition> all(assigned.begin(), assigned.end());
  all.insert(all.end(), unassigned.begin(), unassigned.end());
  std::map<topic_partition, client::listed_offset> ends;
  if (!all.empty()) {
    auto listed = admin.list_offsets(all, client::latest_offset_spec);
    if (!listed) return fail(command_failed(java_error(listed.error())));
    ends = std::move(*listed);
  }
  std::vector<offset_row> rows;
  for (const auto& [member, tps] : blocks) {
    for (const auto& tp : tps) {
      offset_row r;
      r.group = d.group_id;
      r.topic = tp.topic;
      r.partition = std::to_string(tp.partition);
      auto c = committed->find(tp);
      std::optional<int64_t> offset, end;
      if (c != committed->end()) {
        offset = c->second.offset;
        if (c->second.leader_epoch >= 0) r.leader_epoch = std::to_string(c->second.leader_epoch);
      }
      if (auto e = ends.find(tp); e != ends.end() && e->second.error_code == 0) {
        end = e->second.offset;
      }
      r.offset = offset ? std::to_string(*offset) : std::string(missing);
      r.log_end = end ? std::to_string(*end) : std::string(missing);
      r.lag =
          offset && *offset != -1 && end ? std::to_string(*end - *offset) : std::string(missing);
      if (r.leader_epoch.empty()) r.leader_epoch = missing;
      r.consumer = member ? member->member_id : std::string(missing);
      r.host = member ? member->client_host : std::string(missing);
      r.client = member ? member->client_id : std::string(missing);
      rows.push_back(std::move(r));
    }
  }
  return rows;
}

void print_offsets(const std::vector<offset_row>& rows, bool verbose) {
  size_t group = 15, topic = 15, consumer = 15, host = 15;
  for (const auto& r : rows) {
    group = std::max(group, r.group.size());
    topic = std::max(topic, r.topic.size());
    consumer = std::max(consumer, r.consumer.size());
    host = std::max(host, r.host.size());
  }
  auto line = [&](const offset_row& r) {
    std::string out =
        "\n" + pad(r.group, group) + " " + pad(r.topic, topic) + " " + pad(r.partition, 10) + " ";
    if (verbose) out += pad(r.leader_epoch, 15) + " ";
    out += pad(r.offset, 15) + " " + pad(r.log_end, 15) + " " + pad(r.lag, 15) + " " +
           pad(r.consumer, consumer) + " " + pad(r.host, host) + " " + r.client;
    print(out);
  };
  line({"GROUP", "TOPIC", "PARTITION", "LEADER-EPOCH", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
        "CONSUMER-ID", "HOST", "CLIENT-ID"});
  for (const auto& r : rows) line(r);
  print("\n");
}

std::string assignment_string(const std::vector<client::topic_partitions>& assignment) {
  std::map<std::string, std::vector<int32_t>> by_topic;
  for (const auto& tp : assignment) {
    auto& ps = by_topic[tp.topic];
    ps.insert(ps.end(), tp.partitions.begin(), tp.partitions.end());
  }
  std::vector<std::string> parts;
  for (auto& [topic, ps] : by_topic) {
    std::sort(ps.begin(), ps.end());
    std::string s = topic + ":";
    for (size_t i = 0; i < ps.size(); ++i) {
      if (i) s += ',';
      s += std::to_string(ps[i]);
    }
    parts.push_back(std::move(s));
  }
  std::sort(parts.begin(), parts.end());
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : ";") + p;
  return out;
}

void print_members(const client::group_description& d, bool show_rows, bool verbose) {
  size_t group = 15, consumer = 15, instance = 17, host = 15, client_id = 15, current = 20,
         target = 20;
  bool with_instance = false;
  if (show_rows) {
    for (const auto& m : d.members) {
      group = std::max(group, d.group_id.size());
      consumer = std::max(consumer, m.member_id.size());
      instance = std::max(instance, m.group_instance_id.value_or("").size());
      host = std::max(host, m.client_host.size());
      client_id = std::max(client_id, m.client_id.size());
      with_instance = with_instance || m.group_instance_id.has_value();
      const std::string a =
          m.assignment.empty() ? std::string(missing) : assignment_string(m.assignment);
      current = std::max(current, a.size());
    }
  }
  auto head = [&](const std::string& g, const std::string& c, const std::string& i,
                  const std::string& h, const std::string& cl, const std::string& n) {
    std::string out = pad(g, group) + " " + pad(c, consumer) + " ";
    if (with_instance) out += pad(i, instance) + " ";
    out += pad(h, host) + " " + pad(cl, client_id) + " " + pad(n, 15) + " ";
    return out;
  };
  auto tail = [&](const std::string& ce, const std::string& ca, const std::string& te,
                  const std::string& ta) {
    return pad(ce, 15) + " " + pad(ca, current) + " " + pad(te, 15) + " " + pad(ta, target);
  };
  std::string out =
      "\n" + head("GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS");
  if (verbose)
    out += tail("CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT");
  print(out + "\n");
  if (!show_rows) return;
  for (const auto& m : d.members) {
    size_t n = 0;
    for (const auto& tp : m.assignment) n += tp.partitions.size();
    std::string row = head(d.group_id, m.member_id, m.group_instance_id.value_or(""), m.client_host,
                           m.client_id, std::to_string(n));
    if (verbose) {
      // Classic members have no epochs and no target assignment.
      row += tail(std::string(missing),
                  m.assignment.empty() ? std::string(missing) : assignment_string(m.assignment),
                  std::string(missing), std::string(missing));
    }
    print(row + "\n");
  }
}

void print_state(const client::group_description& d, bool verbose) {
  const std::string coordinator = d.coordinator.host + ":" + std::to_string(d.coordinator.port) +
                                  "  (" + std::to_string(d.coordinator.node_id) + ")";
  const size_t coordinator_width = std::max<size_t>(25, coordinator.size());
  const size_t group_width = std::max<size_t>(15, d.group_id.size());
  const std::string strategy = d.protocol.empty() ? std::string(missing) : d.protocol;
  auto line = [&](const std::string& g, const std::string& c, const std::string& a,
                  const std::string& s, const std::string& ge, const std::string& te,
                  const std::string& n) {
    std::string out = "\n" + pad(g, group_width) + " " + pad(c, coordinator_width) + " " +
                      pad(a, 20) + " " + pad(s, 20) + " ";
    if (verbose) out += pad(ge, 15) + " " + pad(te, 25) + " ";
    print(out + n);
  };
  line("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "GROUP-EPOCH",
       "TARGET-ASSIGNMENT-EPOCH", "#MEMBERS");
  line(d.group_id, coordinator, strategy, d.state, std::string(missing), std::string(missing),
       std::to_string(d.members.size()));
  print("\n");
}

result<std::vector<std::string>, failure_text> target_groups(client::group_admin& admin,
                                                             const groups_options& o) {
  if (!o.all_groups) return o.groups;
  auto listed = admin.list_groups();
  if (!listed) return fail(command_failed(java_error(listed.error())));
  std::vector<std::string> out;
  for (const auto& g : *listed) {
    if (g.protocol_type.empty() || g.protocol_type == "consumer") out.push_back(g.group_id);
  }
  return out;
}

result<void, failure_text> run_describe(client::group_admin& admin, const groups_options& o) {
  auto groups = target_groups(admin, o);
  if (!groups) return fail(groups.error());
  // Every group is described before anything is printed, as the Java tool collects them first.
  std::map<std::string, client::group_description> described;
  for (const auto& g : *groups) {
    auto d = admin.describe_group(g);
    if (!d) return fail(command_failed(java_error(d.error())));
    described[g] = std::move(*d);
  }
  bool failed = false;
  for (const auto& [group, d] : described) {
    if (o.members && !o.offsets) {
      const bool rows = note_state(group, d.state, d.members.size(), failed);
      print_members(d, rows, o.verbose);
    } else if (!o.members && !o.offsets && o.state_given) {
      if (note_state(group, d.state, 1, failed)) print_state(d, o.verbose);
    } else {
      std::vector<offset_row> rows;
      if (d.state != "Dead") {
        auto r = offset_rows(admin, d);
        if (!r) return fail(r.error());
        rows = std::move(*r);
      }
      if (note_state(group, d.state, rows.size(), failed)) print_offsets(rows, o.verbose);
    }
  }
  if (failed) return fail(failure_text{""});
  return {};
}

// ---------------------------------------------------------------------------------------------
// --delete

result<void, failure_text> run_delete(client::group_admin& admin, const groups_options& o) {
  auto groups = target_groups(admin, o);
  if (!groups) return fail(groups.error());
  auto results = admin.delete_groups(*groups);
  if (!results) return fail(command_failed(java_error(results.error())));
  std::vector<std::string> ok, failed;
  for (const auto& g : *groups) {
    (results->at(g).code == 0 ? ok : failed).push_back(g);
  }
  if (failed.empty()) {
    print("Deletion of requested consumer groups (" + quoted_list(ok) + ") was successful.\n");
    return {};
  }
  std::string out = "\nError: Deletion of some consumer groups failed:\n";
  for (const auto& g : java_hash_map_order(failed)) {
    out += "* Group '" + g + "' could not be deleted due to: " + java_error(results->at(g)) + "\n";
  }
  if (!ok.empty()) {
    out += "\nThese consumer groups were deleted successfully: " + quoted_list(ok) + "\n";
  }
  return fail(failure_text{out});
}

// ---------------------------------------------------------------------------------------------
// --reset-offsets

// java.time.Duration.parse for PnDTnHnMn.nS (days, hours, minutes, seconds; signs allowed).
result<int64_t, failure_text> parse_duration_ms(const std::string& s) {
  const auto bad = [&] {
    return failure_text{
        "\nError: Executing consumer group command failed due to Text cannot be "
        "parsed to a Duration\n"};
  };
  size_t i = 0;
  int sign = 1;
  if (i < s.size() && (s[i] == '-' || s[i] == '+')) sign = s[i++] == '-' ? -1 : 1;
  if (i >= s.size() || (s[i] != 'P' && s[i] != 'p')) return fail(bad());
  ++i;
  bool in_time = false, any = false;
  double total_ms = 0;
  while (i < s.size()) {
    if (s[i] == 'T' || s[i] == 't') {
      if (in_time) return fail(bad());
      in_time = true;
      ++i;
      continue;
    }
    size_t end = i;
    if (end < s.size() && (s[end] == '-' || s[end] == '+')) ++end;
    while (end < s.size() && (std::isdigit(static_cast<unsigned char>(s[end])) || s[end] == '.')) {
      ++end;
    }
    if (end == i || end >= s.size()) return fail(bad());
    const double v = std::stod(s.substr(i, end - i));
    const char unit = static_cast<char>(std::toupper(static_cast<unsigned char>(s[end])));
    if (!in_time && unit == 'D') {
      total_ms += v * 86400000.0;
    } else if (in_time && unit == 'H') {
      total_ms += v * 3600000.0;
    } else if (in_time && unit == 'M') {
      total_ms += v * 60000.0;
    } else if (in_time && unit == 'S') {
      total_ms += v * 1000.0;
    } else {
      return fail(bad());
    }
    any = true;
    i = end + 1;
  }
  if (!any) return fail(bad());
  return static_cast<int64_t>(sign * total_ms);
}

result<std::map<topic_partition, int64_t>, failure_text> prepare_offsets(
    client::group_admin& admin, const groups_options& o, const std::vector<topic_partition>& tps,
    const std::map<topic_partition, client::committed_offset>& committed) {
  if (o.shift_by) {
    std::map<topic_partition, int64_t> requested;
    for (const auto& tp : tps) {
      auto it = committed.find(tp);
      if (it == committed.end()) {
        return fail(failure_text{"Cannot shift offset for partition " + tp_name(tp) +
                                 " since there is no current committed offset\n"});
      }
      requested[tp] = it->second.offset + *o.shift_by;
    }
    return clamp_offsets(admin, requested);
  }
  if (!o.by_duration.empty()) {
    auto d = parse_duration_ms(o.by_duration);
    if (!d) return fail(d.error());
    const int64_t now = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    return offsets_for_time(admin, tps, now - *d);
  }
  // The rest, --to-current from the committed offsets (the log end where there is none).
  std::map<topic_partition, int64_t> current;
  for (const auto& [tp, c] : committed) current[tp] = c.offset;
  return common_reset_offsets(admin, o, tps, current);
}

result<void, failure_text> run_reset(client::group_admin& admin, const groups_options& o) {
  auto groups = target_groups(admin, o);
  if (!groups) return fail(groups.error());
  const bool dry_run = o.dry_run || !o.execute;
  std::vector<group_reset> resets;
  std::string errors;
  for (const auto& group : *groups) {
    auto d = admin.describe_group(group);
    if (!d && d.error().code != group_id_not_found) {
      return fail(command_failed(java_error(d.error())));
    }
    const std::string state = d ? d->state : "Dead";
    if (state != "Empty" && state != "Dead") {
      print("\nError: Assignments can only be reset if the group '" + group +
            "' is inactive, but the current state is " + state + ".\n");
      errors = "failed";
      resets.push_back({group, {}});
      continue;
    }
    auto committed = admin.fetch_offsets(group);
    if (!committed) return fail(command_failed(java_error(committed.error())));
    std::vector<topic_partition> tps;
    if (o.all_topics) {
      for (const auto& [tp, off] : *committed) tps.push_back(tp);
    } else {
      auto parsed = topic_args(admin, o.topics);
      if (!parsed) return fail(parsed.error());
      tps = std::move(*parsed);
    }
    if (auto ok = check_partitions(admin, tps); !ok) return fail(ok.error());
    auto prepared = prepare_offsets(admin, o, tps, *committed);
    if (!prepared) return fail(prepared.error());
    if (!dry_run && !prepared->empty()) {
      auto committed_now = admin.commit_offsets(group, *prepared);
      if (!committed_now) return fail(command_failed(committed_now.error().message));
      for (const auto& [tp, err] : *committed_now) {
        if (err != 0) return fail(command_failed(client::kafka_error(err).message));
      }
    }
    resets.push_back({group, reset_rows(tps, *prepared)});
  }
  // Groups in the order of the tool's HashMap of group ids.
  std::vector<std::string> ids;
  for (const auto& r : resets) ids.push_back(r.group);
  std::vector<const group_reset*> ordered;
  for (const auto& id : java_hash_map_order(ids)) {
    for (const auto& r : resets) {
      if (r.group == id) ordered.push_back(&r);
    }
  }
  print_reset_plan(ordered, o.export_csv, o.groups.size() != 1);
  if (!errors.empty()) return fail(failure_text{""});
  return {};
}

// ---------------------------------------------------------------------------------------------
// --delete-offsets

result<void, failure_text> run_delete_offsets(client::group_admin& admin, const groups_options& o) {
  const std::string& group = o.groups.front();
  std::vector<topic_partition> tps;
  std::vector<std::string> whole;
  for (const auto& t : o.topics) {
    if (t.find(':') != std::string::npos) {
      auto parsed = parse_topic_partitions(t);
      if (!parsed) return fail(parsed.error());
      tps.insert(tps.end(), parsed->begin(), parsed->end());
    } else {
      whole.push_back(t);
    }
  }
  std::map<topic_partition, std::string> status;  // "" for success
  if (!whole.empty()) {
    auto md = admin.describe_topics(whole);
    if (!md) return fail(command_failed(java_error(md.error())));
    for (const auto& t : whole) {
      auto it = md->find(t);
      if (it == md->end() || it->second.error_code != 0) {
        const int16_t c = it == md->end() ? unknown_topic_or_partition : it->second.error_code;
        status[{t, -1}] = java_error(client::kafka_error(c));
        continue;
      }
      for (const auto& p : it->second.partitions) tps.push_back({t, p.partition});
    }
  }
  std::sort(tps.begin(), tps.end());
  tps.erase(std::unique(tps.begin(), tps.end()), tps.end());
  auto r = admin.delete_offsets(group, tps);
  int16_t top = 0;
  std::string top_message;
  if (!r) {
    top = r.error().code;
    top_message = r.error().message;
    for (const auto& tp : tps) status[tp] = java_error(r.error());
  } else {
    top = r->error_code;
    top_message = client::kafka_error(top).message;
    for (const auto& tp : tps) {
      auto it = r->partitions.find(tp);
      const int16_t c = it == r->partitions.end() ? int16_t{0} : it->second;
      if (top != 0) {
        status[tp] = java_error(client::kafka_error(top));
      } else {
        status[tp] = c == 0 ? "" : java_error(client::kafka_error(c));
      }
      if (top == 0 && c != 0) top = c;
    }
  }
  bool failed = true;
  if (top == 0) {
    print("Request succeeded for deleting offsets from group " + group + ".\n");
    failed = false;
  } else if (top == 24 || top == group_id_not_found || top == 30 || top == 68) {
    print("\nError: " + top_message + "\n");
  } else if (top == 86 || top == 29 || top == unknown_topic_or_partition) {
    print("\nError: Encountered some partition-level error, see the follow-up details.\n");
  } else {
    print("\nError: Encountered some unknown error: " + client::error_name(top) + "\n");
  }
  if (!status.empty() && !failed) {
    for (const auto& [tp, s] : status) {
      if (!s.empty()) failed = true;
    }
  }
  size_t width = 15;
  for (const auto& [tp, s] : status) width = std::max(width, tp.topic.size());
  std::vector<std::pair<std::string, const std::pair<const topic_partition, std::string>*>> rows;
  for (const auto& e : status)
    rows.emplace_back(e.first.topic + std::to_string(e.first.partition), &e);
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string out =
      "\n" + pad("TOPIC", width) + " " + pad("PARTITION", 10) + " " + pad("STATUS", 15);
  for (const auto& [key, e] : rows) {
    const auto& [tp, s] = *e;
    out += "\n" + pad(tp.topic, width) + " " +
           pad(tp.partition >= 0 ? std::to_string(tp.partition) : std::string(missing), 10) + " " +
           pad(s.empty() ? "Successful" : "Error: " + s, 15);
  }
  print(out + "\n");
  if (failed) return fail(failure_text{""});
  return {};
}

// ---------------------------------------------------------------------------------------------

int run_groups(const groups_options& o) {
  if (o.action_count() != 1) {
    return usage_error(
        "Command must include exactly one action: --list, --describe, --delete, "
        "--reset-offsets, --delete-offsets");
  }
  const bool has_groups = !o.groups.empty() || o.all_groups;
  for (const auto& [asked, name] :
       {std::pair{o.describe, "describe"}, std::pair{o.remove, "delete"},
        std::pair{o.reset, "reset-offsets"}}) {
    if (asked && !has_groups) {
      return usage_error(std::string("Option [") + name +
                         "] takes one of these options: [all-groups], [group]");
    }
  }
  if (o.delete_offsets && (o.groups.size() != 1 || o.topics.empty())) {
    return usage_error("Option [delete-offsets] takes the following options: [topic], [group]");
  }
  if (!o.groups.empty() && o.all_groups) {
    return usage_error("Option [all-groups] is not valid with [group]");
  }
  if (o.describe && int{o.members} + int{o.offsets} + int{o.state_given} > 1) {
    return usage_error(
        "Option [describe] takes at most one of these options: [members], [offsets], [state]");
  }
  if (o.reset) {
    if (o.dry_run && o.execute) {
      return usage_error(
          "Option [reset-offsets] takes at most one of these options: [dry-run], [execute]");
    }
    const int scenarios = int{o.to_earliest} + int{o.to_latest} + int{o.to_current} +
                          int{o.to_offset.has_value()} + int{o.shift_by.has_value()} +
                          int{!o.to_datetime.empty()} + int{!o.by_duration.empty()};
    if (scenarios != 1) {
      return usage_error(
          "Option '[reset-offsets]' requires one of the following scenarios: [to-offset], "
          "[to-datetime], [by-duration], [to-earliest], [to-latest], [shift-by], [from-file], "
          "[to-current]");
    }
    if (auto message = check_common_options(o)) return usage_error(*message);
    if (!o.dry_run && !o.execute) {
      std::fprintf(stderr,
                   "WARN: No action will be performed as the --execute option is missing. In "
                   "version 5.0, this command will require either --dry-run or --execute to be "
                   "specified. You should add the --dry-run option explicitly if you are "
                   "scripting this command and want to keep the current default behavior "
                   "without prompting.\n");
    }
  }
  return run_with_admin(o, "tarn-groups", [&](client::group_admin& admin) {
    return o.list       ? run_list(admin, o)
           : o.describe ? run_describe(admin, o)
           : o.remove   ? run_delete(admin, o)
           : o.reset    ? run_reset(admin, o)
                        : run_delete_offsets(admin, o);
  });
}

}  // namespace

void add_groups(CLI::App& app) {
  auto o = std::make_shared<groups_options>();
  auto* cmd =
      app.add_subcommand("groups",
                         "List, describe, delete consumer groups and reset their offsets, like "
                         "kafka-consumer-groups");
  cmd->add_option("--bootstrap-server", o->bootstrap_server, "host:port of a broker")->required();
  cmd->add_flag("--list", o->list, "List all consumer groups");
  cmd->add_flag("--describe", o->describe, "Describe the group(s): offsets, members or state");
  cmd->add_flag("--delete", o->remove, "Delete the group(s)");
  cmd->add_flag("--reset-offsets", o->reset, "Reset the group's offsets (inactive groups only)");
  cmd->add_flag("--delete-offsets", o->delete_offsets, "Delete the group's offsets of topics");
  cmd->add_option("--group", o->groups, "The group; repeatable")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_flag("--all-groups", o->all_groups, "Every consumer group");
  cmd->add_option("--topic", o->topics, "Topic, or topic:p,p (reset, delete-offsets); repeatable")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_flag("--all-topics", o->all_topics, "Every topic the group has offsets for (reset)");
  auto* state = cmd->add_option("--state", o->state,
                                "With --describe: the group's state; with --list: the states "
                                "column, or only groups in these states (S,S)")
                    ->expected(0, 1);
  auto* type = cmd->add_option("--type", o->type,
                               "With --list: the type column, or only groups of these types")
                   ->expected(0, 1);
  cmd->add_flag("--members", o->members, "With --describe: the members");
  cmd->add_flag("--offsets", o->offsets, "With --describe: the offsets (the default)");
  cmd->add_flag("--verbose", o->verbose, "With --describe: more columns");
  cmd->add_flag("--to-earliest", o->to_earliest, "Reset to the earliest offsets");
  cmd->add_flag("--to-latest", o->to_latest, "Reset to the latest offsets");
  cmd->add_flag("--to-current", o->to_current, "Reset to the current (committed) offsets");
  cmd->add_option("--to-offset", o->to_offset, "Reset to this offset");
  cmd->add_option("--shift-by", o->shift_by, "Move the committed offsets by N (+/-)");
  cmd->add_option("--to-datetime", o->to_datetime,
                  "Reset to the first offset at or after YYYY-MM-DDTHH:mm:SS.sss[Z|+hh:mm]");
  cmd->add_option("--by-duration", o->by_duration, "Reset to this long ago (PnDTnHnMnS)");
  cmd->add_flag("--dry-run", o->dry_run, "Print the new offsets only (the default)");
  cmd->add_flag("--execute", o->execute, "Commit the new offsets");
  cmd->add_flag("--export", o->export_csv, "Print the reset plan as CSV");
  cmd->add_option("--timeout", o->timeout_ms, "Timeout of each operation in ms (5000)");
  o->client.add_to(cmd);
  cmd->callback([o, state, type] {
    o->state_given = state->count() > 0;
    o->type_given = type->count() > 0;
    set_subcommand_exit_code(run_groups(*o));
  });
}

}  // namespace tarn::tools
