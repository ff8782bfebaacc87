// `tarn share-groups`: share-group (KIP-932) management like Kafka's kafka-share-groups.sh
// (ShareGroupCommand of Kafka 4.4), through src/client/group_admin:
//   --bootstrap-server H:P
//   --list [--state [S,S]]
//   --describe (--group G ... | --all-groups) [--offsets (default) | --members | --state]
//   [--verbose]
//   --delete (--group G ... | --all-groups)
//   --reset-offsets --group G (--topic T[:P,P] ... | --all-topics)
//       (--to-earliest | --to-latest | --to-current | --to-offset N |
//        --to-datetime YYYY-MM-DDTHH:mm:SS.sss[Z|+hh:mm]) (--dry-run | --execute) [--export]
//   --delete-offsets --group G --topic T ...
//   [--timeout MS (5000)] [--command-config FILE] [-X k=v ...] (security settings only)
// The tables and messages are the Java tool's (group_command.h for what both group tools
// share): the offsets view GROUP TOPIC PARTITION START-OFFSET LAG, sorted by topic and partition,
// groups in id order; rows of a reset in the order of the Java HashMap the tool prints from.
// Where the Java tool prints an error and exits 0, tarn prints the same text and exits 1.
// Not supported: --from-file.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <map>
#include <memory>
#include <optional>
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

// kafka-share-groups.sh has only the options both group tools have.
using share_groups_options = group_options;

// GroupState.groupStatesForType(SHARE), in the order tarn names them in its error.
const std::vector<std::string>& share_group_states() {
  static const std::vector<std::string> states = {"Dead", "Empty", "Stable"};
  return states;
}

// ---------------------------------------------------------------------------------------------
// --list

result<std::vector<client::group_listing>, failure_text> share_groups(
    client::group_admin& admin, const std::vector<std::string>& states = {}) {
  auto listed = admin.list_groups(states, {"share"});
  if (!listed) return fail(command_failed(java_error(listed.error())));
  return std::move(*listed);
}

result<void, failure_text> run_list(client::group_admin& admin, const share_groups_options& o) {
  std::vector<std::string> states;
  if (o.state_given && !o.state.empty()) {
    for (const auto& part : split(o.state, ',')) {
      const std::string want = lower(trim(part));
      auto it = std::find_if(share_group_states().begin(), share_group_states().end(),
                             [&](const std::string& s) { return lower(s) == want; });
      if (it == share_group_states().end()) {
        std::string valid;
        for (const auto& s : share_group_states()) {
          if (!valid.empty()) valid += ", ";
          valid += s;
        }
        return fail(failure_text{"Invalid state list '" + o.state +
                                 "'. Valid states are: " + valid + "\n"});
      }
      if (std::find(states.begin(), states.end(), *it) == states.end()) states.push_back(*it);
    }
  }
  auto groups = share_groups(admin, states);
  if (!groups) return fail(groups.error());
  if (!o.state_given) {
    for (const auto& g : *groups) print(g.group_id + "\n");
    return {};
  }
  size_t width = 15;
  for (const auto& g : *groups) width = std::max(width, g.group_id.size());
  print(pad("GROUP", width) + " STATE\n");
  for (const auto& g : *groups) {
    print(pad(g.group_id, width) + " " + (g.state.empty() ? "Unknown" : g.state) + "\n");
  }
  return {};
}

// ---------------------------------------------------------------------------------------------
// --describe

// ShareGroupService.maybePrintEmptyGroupState: whether the group's rows are printed.
bool note_state(const std::string& group, const std::string& state, size_t rows, bool& failed) {
  if (state == "Dead") {
    print("\nError: Share group '" + group + "' does not exist.\n");
    failed = true;
  } else if (state == "Empty") {
    print_err("\nShare group '" + group + "' has no active members.\n");
  }
  return state != "Dead" && rows > 0;
}

std::string assignment_string(const std::vector<client::topic_partitions>& assignment) {
  std::map<std::string, std::vector<int32_t>> by_topic;
  for (const auto& tp : assignment) {
    auto& ps = by_topic[tp.topic];
    ps.insert(ps.end(), tp.partitions.begin(), tp.partitions.end());
  }
  std::string out;
  for (auto& [topic, ps] : by_topic) {
    std::sort(ps.begin(), ps.end());
    std::string s = topic + ":";
    for (size_t i = 0; i < ps.size(); ++i) {
      if (i > 0) s += ',';
      s += std::to_string(ps[i]);
    }
    if (!out.empty()) out += ';';
    out += s;
  }
  return out;
}

void print_members(const client::share_group_description& d, bool verbose, bool& failed) {
  auto members = d.members;
  std::stable_sort(members.begin(), members.end(),
                   [](const auto& a, const auto& b) { return a.member_id < b.member_id; });
  if (!note_state(d.group_id, d.state, members.size(), failed)) return;
  size_t group = std::max<size_t>(15, d.group_id.size()), consumer = 15, host = 15, client_id = 15;
  for (const auto& m : members) {
    consumer = std::max(consumer, m.member_id.size());
    host = std::max(host, m.client_host.size());
    client_id = std::max(client_id, m.client_id.size());
  }
  auto line = [&](const std::string& g, const std::string& c, const std::string& h,
                  const std::string& cl, const std::string& n, const std::string& epoch,
                  const std::string& a) {
    std::string out = "\n" + pad(g, group) + " " + pad(c, consumer) + " " + pad(h, host) + " " +
                      pad(cl, client_id) + " " + pad(n, 12) + " ";
    if (verbose) out += pad(epoch, 13) + " ";
    print(out + a);
  };
  line("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "MEMBER-EPOCH", "ASSIGNMENT");
  for (const auto& m : members) {
    size_t n = 0;
    for (const auto& tp : m.assignment) n += tp.partitions.size();
    line(d.group_id, m.member_id, m.client_host, m.client_id, std::to_string(n),
         std::to_string(m.member_epoch), assignment_string(m.assignment));
  }
  print("\n");
}

void print_state(const client::share_group_description& d, bool verbose, bool& failed) {
  note_state(d.group_id, d.state, 1, failed);
  const size_t group = std::max<size_t>(15, d.group_id.size());
  const std::string coordinator = d.coordinator.host + ":" + std::to_string(d.coordinator.port) +
                                  "  (" + std::to_string(d.coordinator.node_id) + ")";
  const size_t coordinator_width = std::max<size_t>(25, coordinator.size());
  auto line = [&](const std::string& g, const std::string& c, const std::string& s,
                  const std::string& ge, const std::string& ae, const std::string& n) {
    std::string out =
        "\n" + pad(g, group) + " " + pad(c, coordinator_width) + " " + pad(s, 15) + " ";
    if (verbose) out += pad(ge, 12) + " " + pad(ae, 17) + " ";
    print(out + n);
  };
  line("GROUP", "COORDINATOR (ID)", "STATE", "GROUP-EPOCH", "ASSIGNMENT-EPOCH", "#MEMBERS");
  line(d.group_id, coordinator, d.state, std::to_string(d.group_epoch),
       std::to_string(d.assignment_epoch), std::to_string(d.members.size()));
  print("\n");
}

std::string value_or_missing(const auto& v) {
  return v ? std::to_string(*v) : std::string(missing);
}

void print_offsets(const std::string& group,
                   const std::map<topic_partition, client::share_partition_offset>& offsets,
                   bool verbose) {
  if (offsets.empty()) {
    print("\nShare group '" + group + "' has no offset information.\n");
    return;
  }
  const size_t group_width = std::max<size_t>(15, group.size());
  size_t topic = 15;
  for (const auto& [tp, o] : offsets) topic = std::max(topic, tp.topic.size());
  auto line = [&](const std::string& g, const std::string& t, const std::string& p,
                  const std::string& epoch, const std::string& start, const std::string& lag) {
    std::string out = "\n" + pad(g, group_width) + " " + pad(t, topic) + " " + pad(p, 10) + " ";
    if (verbose) out += pad(epoch, 13) + " ";
    print(out + pad(start, 13) + " " + lag);
  };
  line("GROUP", "TOPIC", "PARTITION", "LEADER-EPOCH", "START-OFFSET", "LAG");
  for (const auto& [tp, o] : offsets) {  // a std::map: by topic, then partition
    line(group, tp.topic, std::to_string(tp.partition), value_or_missing(o.leader_epoch),
         value_or_missing(o.start_offset), value_or_missing(o.lag));
  }
  print("\n");
}

result<std::vector<std::string>, failure_text> target_groups(client::group_admin& admin,
                                                             const share_groups_options& o) {
  if (!o.all_groups) return o.groups;
  auto listed = share_groups(admin);
  if (!listed) return fail(listed.error());
  std::vector<std::string> out;
  for (const auto& g : *listed) out.push_back(g.group_id);
  return out;
}

result<void, failure_text> run_describe(client::group_admin& admin, const share_groups_options& o) {
  auto groups = target_groups(admin, o);
  if (!groups) return fail(groups.error());
  // Every group is described (and its offsets listed) before anything is printed, as the Java
  // tool collects them first; then by group id (its TreeMap).
  std::map<std::string, client::share_group_description> described;
  for (const auto& g : *groups) {
    auto d = admin.describe_share_group(g);
    if (!d) return fail(command_failed(java_error(d.error())));
    described[g] = std::move(*d);
  }
  const bool offsets_view = !o.members && !o.state_given;
  std::map<std::string, std::map<topic_partition, client::share_partition_offset>> offsets;
  if (offsets_view) {
    for (const auto& [g, d] : described) {
      auto listed = admin.list_share_group_offsets(g);
      if (!listed) {
        return fail(command_failed("java.lang.RuntimeException: " + java_error(listed.error())));
      }
      offsets[g] = std::move(*listed);
    }
  }
  bool failed = false;
  for (const auto& [group, d] : described) {
    if (o.members) {
      print_members(d, o.verbose, failed);
    } else if (o.state_given) {
      print_state(d, o.verbose, failed);
    } else {
      print_offsets(group, offsets[group], o.verbose);
    }
  }
  if (failed) return fail(failure_text{""});
  return {};
}

// ---------------------------------------------------------------------------------------------
// --delete

result<void, failure_text> run_delete(client::group_admin& admin, const share_groups_options& o) {
  auto listed = share_groups(admin);
  if (!listed) return fail(listed.error());
  std::vector<std::string> ids;
  if (o.all_groups) {
    for (const auto& g : *listed) ids.push_back(g.group_id);
  } else {
    for (const auto& g : o.groups) {
      if (std::find(ids.begin(), ids.end(), g) == ids.end()) ids.push_back(g);
    }
  }
  // The tool's checks before it asks: a share group, and an empty one.
  std::map<std::string, std::string> errors;  // group -> Throwable.toString
  std::vector<std::string> to_delete;
  for (const auto& g : ids) {
    auto it = std::find_if(listed->begin(), listed->end(),
                           [&](const client::group_listing& l) { return l.group_id == g; });
    if (it == listed->end()) {
      errors[g] = "java.lang.IllegalArgumentException: Group '" + g + "' is not a share group.";
    } else if (it->state == "Dead") {
      errors[g] = "java.lang.IllegalStateException: Share group '" + g + "' group state is DEAD.";
    } else if (!it->state.empty() && it->state != "Empty") {
      errors[g] = "org.apache.kafka.common.errors.GroupNotEmptyException: Share group '" + g +
                  "' is not EMPTY.";
    } else {
      to_delete.push_back(g);
    }
  }
  std::vector<std::string> ok;
  if (!to_delete.empty()) {
    auto results = admin.delete_groups(to_delete);
    if (!results) return fail(command_failed(java_error(results.error())));
    for (const auto& g : to_delete) {
      const client_error& e = results->at(g);
      if (e.code == 0) {
        ok.push_back(g);
      } else {
        errors[g] = java_error(e);
      }
    }
  }
  if (errors.empty()) {
    print("Deletion of requested share groups (" + quoted_list(ok) + ") was successful.\n");
    return {};
  }
  std::vector<std::string> failed;
  for (const auto& [g, e] : errors) failed.push_back(g);
  std::string out = "\nError: Deletion of some share groups failed:\n";
  for (const auto& g : java_hash_map_order(failed)) {
    out += "* Group '" + g + "' could not be deleted due to: " + errors[g] + "\n";
  }
  if (!ok.empty())
    out += "\nThese share groups were deleted successfully: " + quoted_list(ok) + "\n";
  return fail(failure_text{out});
}

// ---------------------------------------------------------------------------------------------
// --reset-offsets

result<void, failure_text> run_reset(client::group_admin& admin, const share_groups_options& o) {
  const std::string& group = o.groups.front();
  auto d = admin.describe_share_group(group);
  if (d && d->state != "Empty" && d->state != "Dead") {
    print_err("Share group '" + group + "' is not empty.\n");
    return fail(failure_text{""});
  }
  if (!d && d.error().code != group_id_not_found) {
    print_err(d.error().message + "\n");
    return fail(failure_text{""});
  }
  std::map<topic_partition, client::share_partition_offset> current;
  if (d) {
    auto listed = admin.list_share_group_offsets(group);
    if (!listed) return fail(command_failed(java_error(listed.error())));
    current = std::move(*listed);
  }
  std::vector<topic_partition> tps;
  if (!o.topics.empty()) {
    auto parsed = topic_args(admin, o.topics);
    if (!parsed) return fail(parsed.error());
    tps = std::move(*parsed);
  } else {
    for (const auto& [tp, off] : current) tps.push_back(tp);
  }
  if (auto ok = check_partitions(admin, tps); !ok) return fail(ok.error());
  // --to-current (resetToCurrentForShareGroup): the start offsets.
  std::map<topic_partition, int64_t> start_offsets;
  for (const auto& [tp, off] : current) {
    if (off.start_offset) start_offsets[tp] = *off.start_offset;
  }
  auto prepared = common_reset_offsets(admin, o, tps, start_offsets);
  if (!prepared) return fail(prepared.error());
  if (o.execute && !prepared->empty()) {
    auto altered = admin.alter_share_group_offsets(group, *prepared);
    if (!altered) return fail(command_failed(altered.error().message));
    for (const auto& [tp, e] : *altered) {
      if (e.code != 0) return fail(command_failed(e.message));
    }
  }
  const group_reset plan{group, reset_rows(tps, *prepared)};
  print_reset_plan({&plan}, o.export_csv, false);
  return {};
}

// ---------------------------------------------------------------------------------------------
// --delete-offsets

result<void, failure_text> run_delete_offsets(client::group_admin& admin,
                                              const share_groups_options& o) {
  const std::string& group = o.groups.front();
  std::vector<std::string> topics = o.topics;
  std::sort(topics.begin(), topics.end());
  topics.erase(std::unique(topics.begin(), topics.end()), topics.end());
  auto r = admin.delete_share_group_offsets(group, topics);
  std::map<std::string, std::string> status;  // topic -> "" (deleted) or the error's message
  bool failed = false;
  if (!r) {
    print("\nError: " + r.error().message + "\n");
    for (const auto& t : topics) status[t] = r.error().message;
    failed = true;
  } else if (r->error.code != 0) {
    const int16_t c = r->error.code;
    if (c == 24 || c == group_id_not_found || c == 30 || c == 68) {
      print("\nError: " + r->error.message + "\n");
    } else if (c != 29 && c != unknown_topic_or_partition) {
      print("\nError: Encounter some unknown error: " + java_error(r->error) + "\n");
    }
    for (const auto& t : topics) status[t] = r->error.message;
    failed = true;
  } else {
    for (const auto& t : topics) {
      auto it = r->topics.find(t);
      if (it == r->topics.end()) {
        status[t] =
            "Offset deletion result for topic \"" + t + "\" was not included in the response";
        failed = true;
      } else if (it->second.code != 0) {
        status[t] = it->second.message;
        failed = true;
      } else {
        status[t] = "";
      }
    }
  }
  size_t width = 15;
  for (const auto& [t, s] : status) width = std::max(width, t.size());
  std::string out = "\n" + pad("TOPIC", width) + " STATUS";
  for (const auto& [t, s] : status) {
    out += "\n" + pad(t, width) + " " + (s.empty() ? std::string("Successful") : "Error: " + s);
  }
  print(out + "\n");
  if (failed) return fail(failure_text{""});
  return {};
}

// ---------------------------------------------------------------------------------------------

int run_share_groups(const share_groups_options& o) {
  command_noun() = "share group";
  if (o.action_count() != 1) {
    return usage_error(
        "Command must include exactly one action: --list, --describe, --delete, "
        "--reset-offsets, --delete-offsets.");
  }
  const bool has_groups = !o.groups.empty() || o.all_groups;
  if ((o.describe || o.remove) && !has_groups) {
    return usage_error(std::string("Option [") + (o.describe ? "describe" : "delete") +
                       "] takes one of these options: [all-groups], [group]");
  }
  if (!o.groups.empty() && o.all_groups) {
    return usage_error("Option [all-groups] is not valid with [group]");
  }
  if ((o.reset || o.delete_offsets) && o.groups.size() != 1) {
    return usage_error(std::string("Option [") + (o.reset ? "reset-offsets" : "delete-offsets") +
                       "] takes the option: [group]");
  }
  if (o.delete_offsets && o.topics.empty()) {
    return usage_error("Option [delete-offsets] takes the following options: [topic], [group]");
  }
  if (o.reset) {
    // Kafka 4.4's share tool, unlike the consumer-group one, has no default: one of the two.
    if (o.dry_run == o.execute) {
      return usage_error("Option [reset-offsets] takes the option: [execute] or [dry-run]");
    }
    const int scenarios = int{o.to_earliest} + int{o.to_latest} + int{o.to_current} +
                          int{o.to_offset.has_value()} + int{!o.to_datetime.empty()};
    if (scenarios != 1) {
      return usage_error(
          "Option '[reset-offsets]' requires one of the following scenarios: [to-offset], "
          "[from-file], [to-datetime], [to-earliest], [to-latest], [to-current]");
    }
  }
  if (auto message = check_common_options(o)) return usage_error(*message);
  return run_with_admin(o, "tarn-share-groups", [&](client::group_admin& admin) {
    return o.list       ? run_list(admin, o)
           : o.describe ? run_describe(admin, o)
           : o.remove   ? run_delete(admin, o)
           : o.reset    ? run_reset(admin, o)
                        : run_delete_offsets(admin, o);
  });
}

}  // namespace

void add_share_groups(CLI::App& app) {
  auto o = std::make_shared<share_groups_options>();
  auto* cmd = app.add_subcommand(
      "share-groups",
      "List, describe, delete share groups and reset their offsets, like kafka-share-groups");
  cmd->add_option("--bootstrap-server", o->bootstrap_server, "host:port of a broker")->required();
  cmd->add_flag("--list", o->list, "List all share groups");
  cmd->add_flag("--describe", o->describe, "Describe the group(s): offsets, members or state");
  cmd->add_flag("--delete", o->remove, "Delete the group(s) (empty ones only)");
  cmd->add_flag("--reset-offsets", o->reset, "Reset the group's start offsets (empty group)");
  cmd->add_flag("--delete-offsets", o->delete_offsets, "Delete the group's offsets of topics");
  cmd->add_option("--group", o->groups, "The share group; repeatable")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_flag("--all-groups", o->all_groups, "Every share group");
  cmd->add_option("--topic", o->topics, "Topic, or topic:p,p (reset); repeatable")
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_flag("--all-topics", o->all_topics, "Every topic the group has offsets for (reset)");
  auto* state = cmd->add_option("--state", o->state,
                                "With --describe: the group's state; with --list: the states "
                                "column, or only groups in these states (S,S)")
                    ->expected(0, 1);
  cmd->add_flag("--members", o->members, "With --describe: the members");
  cmd->add_flag("--offsets", o->offsets, "With --describe: the offsets (the default)");
  cmd->add_flag("--verbose", o->verbose, "With --describe: more columns");
  cmd->add_flag("--to-earliest", o->to_earliest, "Reset to the earliest offsets");
  cmd->add_flag("--to-latest", o->to_latest, "Reset to the latest offsets");
  cmd->add_flag("--to-current", o->to_current, "Reset to the current start offsets");
  cmd->add_option("--to-offset", o->to_offset, "Reset to this offset");
  cmd->add_option("--to-datetime", o->to_datetime,
                  "Reset to the first offset at or after YYYY-MM-DDTHH:mm:SS.sss[Z|+hh:mm]");
  cmd->add_flag("--dry-run", o->dry_run, "Print the new offsets only");
  cmd->add_flag("--execute", o->execute, "Set the new offsets");
  cmd->add_flag("--export", o->export_csv, "Print the reset plan as CSV");
  cmd->add_option("--timeout", o->timeout_ms, "Timeout of each operation in ms (5000)");
  o->client.add_to(cmd);
  cmd->callback([o, state] {
    o->state_given = state->count() > 0;
    set_subcommand_exit_code(run_share_groups(*o));
  });
}

}  // namespace tarn::tools
