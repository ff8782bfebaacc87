// status_json: a hand-written JSON object (a few fixed fields; no JSON library needed).
#include "observe/status_json.h"

#include <fmt/format.h>

#include <set>

namespace tarn::observe {

std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"') {
      out += "\\\"";
    } else if (c == '\\') {
      out += "\\\\";
    } else if (u < 0x20) {
      out += fmt::format("\\u{:04x}", u);
    } else {
      out += c;
    }
  }
  out += '"';
  return out;
}

std::string status_json(const broker::broker_snapshot& s) {
  std::string out = "{";
  out += fmt::format("\"version\":{},\"kafka_version\":\"4.4.0\",\"node_id\":{},",
                     json_string(s.version), s.node_id);
  out += fmt::format("\"ready\":{},\"uptime_ms\":{},", s.ready ? "true" : "false", s.uptime_ms);
  out += "\"listeners\":[";
  for (size_t i = 0; i < s.listeners.size(); ++i) {
    const auto& l = s.listeners[i];
    out += fmt::format("{}{{\"name\":{},\"host\":{},\"port\":{}}}", i ? "," : "",
                       json_string(l.name), json_string(l.host), l.port);
  }
  out += "],\"log_dirs\":[";
  out += fmt::format("{{\"path\":{},\"total_bytes\":{},\"free_bytes\":{}}}", json_string(s.log_dir),
                     s.log_dir_total_bytes, s.log_dir_free_bytes);
  int64_t size = 0;
  for (const auto& p : s.partitions) size += p.size_bytes;
  out += fmt::format("],\"topics\":{},\"partitions\":{},\"log_size_bytes\":{},", s.topic_count,
                     s.partitions.size(), size);
  std::set<std::string_view> groups;
  for (const auto& o : s.committed_offsets) groups.insert(o.group);
  out += fmt::format("\"connections\":{},\"groups_with_offsets\":{}}}", s.active_connections,
                     groups.size());
  return out;
}

}  // namespace tarn::observe
