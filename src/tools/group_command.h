// What `tarn groups` (groups.cc) and `tarn share-groups` (share_groups.cc) share, as Kafka's
// ConsumerGroupCommand and ShareGroupCommand share their printing and GroupOffsetsResetter: the
// options both take and their checks, connecting, the Java tool's padding, error texts and
// HashMap row order, --topic T:P,P arguments, partition checks, date parsing, the offsets of a
// reset (earliest, latest, by time, clamped, current) and the printed reset plan. The inline
// helpers are here; the larger pieces in group_command.cc.
#pragma once

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <ctime>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "client/group_admin.h"
#include "tools/client_settings.h"

namespace tarn::tools::group_command {

using client::client_error;
using client::topic_partition;

inline constexpr std::string_view missing = "-";  // MISSING_COLUMN_VALUE
// Kafka's error codes the tools name.
inline constexpr int16_t unknown_topic_or_partition = 3;
inline constexpr int16_t leader_not_available = 5;
inline constexpr int16_t group_id_not_found = 69;

// "consumer group" or "share group": the noun of the command's error lines ("Error: Executing
// share group command failed due to ..."). Set once by the subcommand before it runs.
inline std::string& command_noun() {
  static std::string noun = "consumer group";
  return noun;
}

// A failure the command prints and exits 1 for.
struct failure_text {
  std::string text;  // printed to stdout, as the Java tool prints its errors
};

inline void print(const std::string& s) { std::fwrite(s.data(), 1, s.size(), stdout); }
inline void print_err(const std::string& s) { std::fwrite(s.data(), 1, s.size(), stderr); }

// Java's printf("%-Ns").
inline std::string pad(std::string_view s, size_t width) {
  std::string out(s);
  if (out.size() < width) out.append(width - out.size(), ' ');
  return out;
}

// ---------------------------------------------------------------------------------------------
// What the Java tool's HashMaps do to the order of its rows.

// Java's String.hashCode over the UTF-16 code units of a UTF-8 string.
inline int32_t java_string_hash(std::string_view s) {
  uint32_t h = 0;
  auto add = [&](uint32_t unit) { h = 31 * h + unit; };
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    uint32_t cp = c;
    size_t len = 1;
    if (c >= 0xf0 && i + 3 < s.size()) {
      cp = (c & 0x07u) << 18 | (static_cast<unsigned char>(s[i + 1]) & 0x3fu) << 12 |
           (static_cast<unsigned char>(s[i + 2]) & 0x3fu) << 6 |
           (static_cast<unsigned char>(s[i + 3]) & 0x3fu);
      len = 4;
    } else if (c >= 0xe0 && i + 2 < s.size()) {
      cp = (c & 0x0fu) << 12 | (static_cast<unsigned char>(s[i + 1]) & 0x3fu) << 6 |
           (static_cast<unsigned char>(s[i + 2]) & 0x3fu);
      len = 3;
    } else if (c >= 0xc0 && i + 1 < s.size()) {
      cp = (c & 0x1fu) << 6 | (static_cast<unsigned char>(s[i + 1]) & 0x3fu);
      len = 2;
    }
    if (cp >= 0x10000) {
      cp -= 0x10000;
      add(0xd800 + (cp >> 10));
      add(0xdc00 + (cp & 0x3ff));
    } else {
      add(cp);
    }
    i += len;
  }
  return static_cast<int32_t>(h);
}

// TopicPartition.hashCode.
inline int32_t java_hash(const topic_partition& tp) {
  uint32_t h = 31u * (31u + static_cast<uint32_t>(tp.partition));
  return static_cast<int32_t>(h + static_cast<uint32_t>(java_string_hash(tp.topic)));
}
inline int32_t java_hash(const std::string& s) { return java_string_hash(s); }

// The keys in the order a java.util.HashMap filled with them in this order iterates them:
// by bucket (the spread hash masked by the table size the map grew to), then insertion order.
template <typename K>
std::vector<K> java_hash_map_order(std::vector<K> keys) {
  size_t capacity = 16;
  while (keys.size() > capacity * 3 / 4) capacity *= 2;
  auto bucket = [&](const K& k) {
    const auto h = static_cast<uint32_t>(java_hash(k));
    return (h ^ (h >> 16)) & (capacity - 1);
  };
  std::stable_sort(keys.begin(), keys.end(),
                   [&](const K& a, const K& b) { return bucket(a) < bucket(b); });
  return keys;
}

// ---------------------------------------------------------------------------------------------
// Errors as the Java tool prints them

// The class of the exception Kafka's client raises for an error code.
inline std::string java_exception(int16_t code) {
  static const std::map<int16_t, std::string> special = {
      {-1, "UnknownServerException"},
      {2, "CorruptRecordException"},
      {7, "TimeoutException"},
      {12, "OffsetMetadataTooLarge"},
      {13, "NetworkException"},
      {29, "TopicAuthorizationException"},
      {30, "GroupAuthorizationException"},
      {31, "ClusterAuthorizationException"},
      {68, "GroupNotEmptyException"},
  };
  if (auto it = special.find(code); it != special.end()) {
    return "org.apache.kafka.common.errors." + it->second;
  }
  std::string name = client::error_name(code), out;
  bool upper = true;
  for (char c : name) {
    if (c == '_') {
      upper = true;
      continue;
    }
    out += upper ? c : static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    upper = false;
  }
  return "org.apache.kafka.common.errors." + out + "Exception";
}

// Throwable.toString of the error: "class: message" (the reason alone for a connection error).
inline std::string java_error(const client_error& e) {
  if (e.code == -1 && e.message.find(' ') != std::string::npos &&
      e.message != "The server experienced an unexpected error when processing the request.") {
    return e.message;
  }
  return java_exception(e.code) + ": " + e.message;
}

inline failure_text command_failed(const std::string& why) {
  return {"\nError: Executing " + command_noun() + " command failed due to " + why + "\n"};
}

inline std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t at = s.find(sep, start);
    out.push_back(s.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) break;
    start = at + 1;
  }
  return out;
}

inline std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

inline std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// "topic:0,1" -> those partitions.
inline result<std::vector<topic_partition>, failure_text> parse_topic_partitions(
    const std::string& arg) {
  const auto parts = split(arg, ':');
  if (parts.size() != 2) {
    return fail(
        failure_text{"Invalid topic arg '" + arg + "', expected topic name and partitions\n"});
  }
  std::vector<topic_partition> out;
  for (const auto& p : split(parts[1], ',')) {
    try {
      size_t used = 0;
      const int v = std::stoi(p, &used);
      if (used != p.size()) throw std::invalid_argument(p);
      out.push_back({parts[0], v});
    } catch (...) {
      return fail(
          failure_text{"Invalid partition '" + p + "' specified in topic arg '" + arg + "''\n"});
    }
  }
  return out;
}

// The --topic arguments as partitions: listed ones first, then every partition of the topics
// named without partitions.
inline result<std::vector<topic_partition>, failure_text> topic_args(
    client::group_admin& admin, const std::vector<std::string>& args) {
  std::vector<topic_partition> out;
  std::vector<std::string> whole;
  for (const auto& a : args) {
    if (a.find(':') != std::string::npos) {
      auto tps = parse_topic_partitions(a);
      if (!tps) return fail(tps.error());
      out.insert(out.end(), tps->begin(), tps->end());
    } else {
      whole.push_back(a);
    }
  }
  if (!whole.empty()) {
    auto md = admin.describe_topics(whole);
    if (!md) return fail(command_failed(java_error(md.error())));
    for (const auto& t : whole) {
      auto it = md->find(t);
      if (it == md->end() || it->second.error_code != 0) {
        const int16_t c = it == md->end() ? unknown_topic_or_partition : it->second.error_code;
        return fail(command_failed(client::kafka_error(c).message));
      }
      for (const auto& p : it->second.partitions) out.push_back({t, p.partition});
    }
  }
  return out;
}

inline std::string tp_name(const topic_partition& tp) {
  return tp.topic + "-" + std::to_string(tp.partition);
}

// GroupOffsetsResetter.checkAllTopicPartitionsValid.
inline result<void, failure_text> check_partitions(client::group_admin& admin,
                                                   const std::vector<topic_partition>& tps) {
  std::set<std::string> topics;
  for (const auto& tp : tps) topics.insert(tp.topic);
  if (topics.empty()) return {};
  auto md = admin.describe_topics(std::vector<std::string>(topics.begin(), topics.end()));
  if (!md) return fail(command_failed(java_error(md.error())));
  std::string missing_list, leaderless;
  for (const auto& tp : tps) {
    auto t = md->find(tp.topic);
    const client::partition_layout* found = nullptr;
    if (t != md->end() && t->second.error_code == 0) {
      for (const auto& p : t->second.partitions) {
        if (p.partition == tp.partition) found = &p;
      }
    }
    if (found == nullptr) {
      missing_list += (missing_list.empty() ? "" : ",") + tp_name(tp);
    } else if (found->leader < 0) {
      leaderless += (leaderless.empty() ? "" : ",") + tp_name(tp);
    }
  }
  if (!missing_list.empty()) {
    return fail(command_failed("The partitions \"" + missing_list + "\" do not exist"));
  }
  if (!leaderless.empty()) {
    return fail(command_failed("The partitions \"" + leaderless + "\" have no leader"));
  }
  return {};
}

// Days since 1970-01-01 of a civil date (proleptic Gregorian).
inline int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const auto yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}

// Utils.getDateTime: yyyy-MM-ddTHH:mm:ss[.SSS] with an optional Z or +hh[:mm] / -hh[:mm]; without
// a zone the time is local.
inline result<int64_t, failure_text> parse_datetime(const std::string& s) {
  const auto bad = [&] {
    return failure_text{"\nError: Executing " + command_noun() +
                        " command failed due to "
                        "java.text.ParseException: Unparseable date: \"" +
                        s + "\"\n"};
  };
  int y = 0, mo = 0, d = 0, h = 0, mi = 0, sec = 0, ms = 0;
  int used = 0;
  if (std::sscanf(s.c_str(), "%4d-%2d-%2dT%2d:%2d:%2d%n", &y, &mo, &d, &h, &mi, &sec, &used) != 6) {
    return fail(bad());
  }
  size_t at = static_cast<size_t>(used);
  if (at < s.size() && s[at] == '.') {
    size_t end = at + 1;
    while (end < s.size() && std::isdigit(static_cast<unsigned char>(s[end]))) ++end;
    if (end == at + 1) return fail(bad());
    std::string frac = s.substr(at + 1, end - at - 1);
    frac.resize(3, '0');
    ms = std::stoi(frac.substr(0, 3));
    at = end;
  }
  std::optional<int64_t> offset_minutes;
  if (at < s.size()) {
    const std::string zone = s.substr(at);
    if (zone == "Z") {
      offset_minutes = 0;
    } else if (zone[0] == '+' || zone[0] == '-') {
      int zh = 0, zm = 0;
      std::string digits;
      for (char c : zone.substr(1)) {
        if (c != ':') digits += c;
      }
      if ((digits.size() != 2 && digits.size() != 4) ||
          !std::all_of(digits.begin(), digits.end(), [](char c) { return std::isdigit(c); })) {
        return fail(bad());
      }
      zh = std::stoi(digits.substr(0, 2));
      if (digits.size() == 4) zm = std::stoi(digits.substr(2));
      offset_minutes = (zone[0] == '-' ? -1 : 1) * (zh * 60 + zm);
    } else {
      return fail(bad());
    }
  }
  if (mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || sec > 60) return fail(bad());
  if (offset_minutes) {
    const int64_t secs =
        days_from_civil(y, static_cast<unsigned>(mo), static_cast<unsigned>(d)) * 86400 + h * 3600 +
        mi * 60 + sec - *offset_minutes * 60;
    return secs * 1000 + ms;
  }
  std::tm tm{};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = sec;
  tm.tm_isdst = -1;
  const std::time_t t = std::mktime(&tm);
  return static_cast<int64_t>(t) * 1000 + ms;
}

// The offsets for a spec (earliest/latest/timestamp); a partition without one fails as the
// Java tool's usage error does.
inline result<std::map<topic_partition, int64_t>, failure_text> offsets_at(
    client::group_admin& admin, const std::vector<topic_partition>& tps, int64_t spec,
    const std::string& what) {
  auto listed = admin.list_offsets(tps, spec);
  if (!listed) return fail(command_failed(java_error(listed.error())));
  std::map<topic_partition, int64_t> out;
  for (const auto& tp : tps) {
    auto it = listed->find(tp);
    if (it == listed->end() || it->second.error_code != 0) {
      return fail(
          failure_text{"Error getting " + what + " of topic partition: " + tp_name(tp) + "\n"});
    }
    out[tp] = it->second.offset;
  }
  return out;
}

// Clamps requested offsets into [log start, log end] as checkOffsetsRange does (its warnings go to
// the Java tool's log, which prints nothing by default).
inline result<std::map<topic_partition, int64_t>, failure_text> clamp_offsets(
    client::group_admin& admin, const std::map<topic_partition, int64_t>& requested) {
  std::vector<topic_partition> tps;
  for (const auto& [tp, off] : requested) tps.push_back(tp);
  auto starts = admin.list_offsets(tps, client::earliest_offset_spec);
  if (!starts) return fail(command_failed(java_error(starts.error())));
  auto ends = admin.list_offsets(tps, client::latest_offset_spec);
  if (!ends) return fail(command_failed(java_error(ends.error())));
  std::map<topic_partition, int64_t> out;
  for (const auto& [tp, offset] : requested) {
    auto e = ends->find(tp);
    auto s = starts->find(tp);
    if (e != ends->end() && e->second.error_code == 0 && offset > e->second.offset) {
      out[tp] = e->second.offset;
    } else if (s != starts->end() && s->second.error_code == 0 && offset < s->second.offset) {
      out[tp] = s->second.offset;
    } else {
      out[tp] = offset;
    }
  }
  return out;
}

// getLogTimestampOffsets: by timestamp, falling back to the log end where no record is as new.
inline result<std::map<topic_partition, int64_t>, failure_text> offsets_for_time(
    client::group_admin& admin, const std::vector<topic_partition>& tps, int64_t timestamp) {
  auto listed = admin.list_offsets(tps, timestamp);
  if (!listed) return fail(command_failed(java_error(listed.error())));
  std::map<topic_partition, int64_t> out;
  std::vector<topic_partition> empty;
  for (const auto& tp : tps) {
    auto it = listed->find(tp);
    if (it == listed->end() || it->second.error_code != 0) {
      return fail(failure_text{
          "Error getting offset by timestamp of topic partition: " + tp_name(tp) + "\n"});
    }
    if (it->second.offset == -1) {
      empty.push_back(tp);
    } else {
      out[tp] = it->second.offset;
    }
  }
  for (const auto& tp : java_hash_map_order(empty)) {
    print("\nWarn: Partition " + std::to_string(tp.partition) + " from topic " + tp.topic +
          " is empty. Falling back to latest known offset.\n");
  }
  if (!empty.empty()) {
    auto ends = offsets_at(admin, empty, client::latest_offset_spec, "offset by timestamp");
    if (!ends) return fail(ends.error());
    out.insert(ends->begin(), ends->end());
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// What both commands take, check, connect with and print (group_command.cc)

// The options kafka-consumer-groups.sh and kafka-share-groups.sh have in common.
struct group_options {
  std::string bootstrap_server;
  bool list = false, describe = false, remove = false, reset = false, delete_offsets = false;
  std::vector<std::string> groups;
  bool all_groups = false;
  std::vector<std::string> topics;
  bool all_topics = false;
  std::string state;  // --state's value (with --list), when given
  bool members = false, offsets = false, verbose = false;
  bool to_earliest = false, to_latest = false, to_current = false;
  std::optional<int64_t> to_offset;
  std::string to_datetime;
  bool dry_run = false, execute = false, export_csv = false;
  int64_t timeout_ms = 5000;
  client_settings client;    // -X, --command-config
  bool state_given = false;  // set from the parsed options

  int action_count() const {
    return int{list} + int{describe} + int{remove} + int{reset} + int{delete_offsets};
  }
};

// The usage checks the two tools word alike (nullopt when they pass): --all-groups with --group,
// more than one of --describe's views, the reset's scope (--topic or --all-topics).
std::optional<std::string> check_common_options(const group_options& o);

// Prints a usage error to stderr; the exit code 1.
int usage_error(const std::string& message);

// Connects to the bootstrap server with the command's security settings and runs `action` on
// the admin client; prints a failure as the Java tool does. The exit code.
int run_with_admin(const group_options& o, std::string_view client_id,
                   const std::function<result<void, failure_text>(client::group_admin&)>& action);

// The offsets a reset moves `tps` to, for the scenarios both tools have: --to-offset (clamped
// into the log), --to-earliest, --to-latest, --to-datetime, else --to-current from `current`
// (the log end for a partition without one). A tool's own scenarios are handled before.
result<std::map<topic_partition, int64_t>, failure_text> common_reset_offsets(
    client::group_admin& admin, const group_options& o, const std::vector<topic_partition>& tps,
    const std::map<topic_partition, int64_t>& current);

// A group's row of a reset plan: its partitions and new offsets in the Java tool's order.
struct group_reset {
  std::string group;
  std::vector<std::pair<topic_partition, int64_t>> offsets;
};

// The partitions of `tps` with a new offset in `prepared`, once each, in the order of the Java
// tool's HashMap.
std::vector<std::pair<topic_partition, int64_t>> reset_rows(
    const std::vector<topic_partition>& tps, const std::map<topic_partition, int64_t>& prepared);

// The plan as printed: CSV with --export (the group as a first column when `group_column`),
// else GROUP TOPIC PARTITION NEW-OFFSET.
void print_reset_plan(const std::vector<const group_reset*>& groups, bool export_csv,
                      bool group_column);

// 'a', 'b' in the order of the Java tool's HashMap of group ids.
std::string quoted_list(const std::vector<std::string>& groups);

}  // namespace tarn::tools::group_command
