// console_api: the /v1 routes of the web console and the static assets at /. JSON with
// nlohmann::json (parsed without exceptions; dumped replacing invalid UTF-8, so a binary key
// read as text still gives valid JSON).
#include "observe/console_api.h"

#include <fmt/format.h>

#include <charconv>
#include <nlohmann/json.hpp>
#include <set>

#include "observe/console_assets.h"
#include "observe/http_server.h"

namespace tarn::observe {

namespace {

using json = nlohmann::json;
using broker::console_errc;
using broker::console_error;

// Rates over this window (the sampler takes one sample a second).
constexpr auto rate_window = std::chrono::seconds(10);

void reply(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace) + "\n",
                  "application/json");
}

void reply_error(httplib::Response& res, int status, std::string_view message) {
  reply(res, status, json{{"error", message}});
}

int status_of(console_errc code) {
  switch (code) {
    case console_errc::not_found:
      return 404;
    case console_errc::invalid:
      return 400;
    case console_errc::conflict:
      return 409;
    case console_errc::forbidden:
      return 403;
    case console_errc::internal:
      return 500;
  }
  return 500;
}

void reply_error(httplib::Response& res, const console_error& e) {
  reply_error(res, status_of(e.code), e.message);
}

// An integer query parameter; `fallback` when absent, nullopt when not an integer.
std::optional<int64_t> int_param(const httplib::Request& req, const char* name, int64_t fallback) {
  if (!req.has_param(name)) return fallback;
  const std::string v = req.get_param_value(name);
  int64_t out = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (ec != std::errc() || end != v.data() + v.size()) return std::nullopt;
  return out;
}

std::string base64(std::string_view in) {
  static constexpr char table[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t n = (uint32_t{static_cast<uint8_t>(in[i])} << 16) |
                       (uint32_t{static_cast<uint8_t>(in[i + 1])} << 8) |
                       static_cast<uint8_t>(in[i + 2]);
    out += table[(n >> 18) & 63];
    out += table[(n >> 12) & 63];
    out += table[(n >> 6) & 63];
    out += table[n & 63];
  }
  if (i < in.size()) {
    uint32_t n = uint32_t{static_cast<uint8_t>(in[i])} << 16;
    if (i + 1 < in.size()) n |= uint32_t{static_cast<uint8_t>(in[i + 1])} << 8;
    out += table[(n >> 18) & 63];
    out += table[(n >> 12) & 63];
    out += i + 1 < in.size() ? table[(n >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

std::string hex(std::string_view in) {
  std::string out;
  out.reserve(in.size() * 2);
  for (char c : in) out += fmt::format("{:02x}", static_cast<uint8_t>(c));
  return out;
}

enum class encoding { text, base64, hex };

json encoded(const std::optional<std::string>& bytes, encoding e) {
  if (!bytes) return nullptr;
  switch (e) {
    case encoding::text:
      return *bytes;
    case encoding::base64:
      return base64(*bytes);
    case encoding::hex:
      return hex(*bytes);
  }
  return nullptr;
}

json rate_json(const rate& r) {
  return {{"messages_in_per_sec", r.messages_in_per_sec},
          {"bytes_in_per_sec", r.bytes_in_per_sec},
          {"bytes_out_per_sec", r.bytes_out_per_sec}};
}

json topic_json(const broker::console_topic& t, const rate* r) {
  json out = {{"name", t.name},
              {"topic_id", t.topic_id},
              {"internal", t.internal},
              {"partitions", t.partition_count},
              {"size_bytes", t.size_bytes},
              {"messages", t.messages}};
  if (r) out.update(rate_json(*r));
  return out;
}

json topic_detail_json(const broker::console_topic& t, const rate* r) {
  json out = topic_json(t, r);
  json parts = json::array();
  for (const auto& p : t.partitions) {
    json segments = json::array();
    for (const auto& seg : p.segment_files) {
      segments.push_back({{"name", seg.file_name},
                          {"base_offset", seg.base_offset},
                          {"size_bytes", seg.size_bytes}});
    }
    parts.push_back({{"partition", p.partition},
                     {"log_start_offset", p.log_start_offset},
                     {"log_end_offset", p.log_end_offset},
                     {"high_watermark", p.high_watermark},
                     {"size_bytes", p.size_bytes},
                     {"segments", p.segments},
                     {"segment_files", std::move(segments)}});
  }
  out["partition_detail"] = std::move(parts);
  json configs = json::array();
  for (const auto& c : t.configs) {
    configs.push_back({{"name", c.name},
                       {"value", c.sensitive ? json(nullptr) : json(c.value)},
                       {"source", c.source},
                       {"sensitive", c.sensitive}});
  }
  out["configs"] = std::move(configs);
  return out;
}

json group_json(const broker::console_group& g, bool detail) {
  json out = {{"group_id", g.group_id},     {"state", g.state},
              {"group_type", g.group_type}, {"protocol_type", g.protocol_type},
              {"total_lag", g.total_lag},   {"partitions", g.offsets.size()}};
  if (!detail) return out;
  out["protocol"] = g.protocol;
  json members = json::array();
  for (const auto& m : g.members) {
    json assignment = json::array();
    for (const auto& [topic, partitions] : m.assignment) {
      assignment.push_back({{"topic", topic}, {"partitions", partitions}});
    }
    members.push_back(
        {{"member_id", m.member_id},
         {"group_instance_id", m.group_instance_id ? json(*m.group_instance_id) : json(nullptr)},
         {"client_id", m.client_id},
         {"client_host", m.client_host},
         {"assignment", std::move(assignment)}});
  }
  out["members"] = std::move(members);
  json offsets = json::array();
  for (const auto& o : g.offsets) {
    offsets.push_back({{"topic", o.topic},
                       {"partition", o.partition},
                       {"committed_offset", o.committed_offset},
                       {"high_watermark", o.high_watermark},
                       {"lag", o.lag}});
  }
  out["offsets"] = std::move(offsets);
  return out;
}

// The JSON body of a change; a 400 already answered when it is not a JSON object.
std::optional<json> json_body(const httplib::Request& req, httplib::Response& res) {
  json body = json::parse(req.body, nullptr, false);
  if (body.is_discarded() || !body.is_object()) {
    reply_error(res, 400, "the body must be a JSON object");
    return std::nullopt;
  }
  return body;
}

// A config value as text: strings as they are, numbers and booleans printed; null stays null.
std::optional<std::optional<std::string>> config_value(const json& v) {
  if (v.is_null()) return std::optional<std::string>();
  if (v.is_string()) return std::optional<std::string>(v.get<std::string>());
  if (v.is_boolean()) return std::optional<std::string>(v.get<bool>() ? "true" : "false");
  if (v.is_number_integer()) return std::optional<std::string>(std::to_string(v.get<int64_t>()));
  return std::nullopt;
}

}  // namespace

bool is_console_change(const httplib::Request& req) {
  return (req.method == "POST" || req.method == "DELETE" || req.method == "PATCH") &&
         req.path.starts_with("/v1/");
}

bool needs_ready_broker(const httplib::Request& req) {
  return req.path.starts_with("/v1/topics") || req.path.starts_with("/v1/groups");
}

void mount_console(httplib::Server& http, const broker::server& broker,
                   const console_source& console, const broker::broker_config& config,
                   const topic_rates& rates) {
  for (const auto& asset : console_assets()) {
    http.Get(std::string(asset.path), [&asset](const httplib::Request&, httplib::Response& res) {
      res.set_header("Cache-Control", "no-cache");
      res.set_header("X-Content-Type-Options", "nosniff");
      res.set_content(asset.body.data(), asset.body.size(), std::string(asset.content_type));
    });
  }

  http.Get("/v1/cluster", [&](const httplib::Request&, httplib::Response& res) {
    auto s = broker.snapshot({.partitions = true, .committed_offsets = true});
    int64_t size = 0;
    for (const auto& p : s.partitions) size += p.size_bytes;
    json listeners = json::array();
    for (const auto& l : s.listeners) {
      listeners.push_back({{"name", l.name}, {"host", l.host}, {"port", l.port}});
    }
    std::set<std::string_view> groups;
    for (const auto& o : s.committed_offsets) groups.insert(o.group);
    json out = {{"version", tarn_version()},
                {"kafka_version", "4.4.0"},
                {"node_id", s.node_id},
                {"ready", s.ready},
                {"uptime_ms", s.uptime_ms},
                {"listeners", std::move(listeners)},
                {"log_dir",
                 {{"path", s.log_dir},
                  {"total_bytes", s.log_dir_total_bytes},
                  {"free_bytes", s.log_dir_free_bytes}}},
                {"topics", s.topic_count},
                {"partitions", s.partitions.size()},
                {"log_size_bytes", size},
                {"connections", s.active_connections},
                {"groups_with_offsets", groups.size()},
                {"read_only", config.http_console_read_only}};
    out.update(rate_json(rates.broker_rate_over(rate_window)));
    reply(res, 200, out);
  });

  http.Get("/v1/rates", [&](const httplib::Request&, httplib::Response& res) {
    json series = json::array();
    for (const auto& p : rates.broker_series()) {
      json point = rate_json(p.broker);
      point["at_ms"] = p.at_ms;
      point["requests_per_sec"] = p.requests_per_sec;
      point["requests_per_sec_by_api"] = p.requests_per_sec_by_api;
      series.push_back(std::move(point));
    }
    json topics = json::object();
    for (const auto& [name, r] : rates.topic_rates_over(rate_window)) topics[name] = rate_json(r);
    json requests = json::object();
    for (const auto& [name, r] : rates.request_rates_over(rate_window)) requests[name] = r;
    reply(res, 200,
          {{"window_seconds", rate_window.count()},
           {"broker", rate_json(rates.broker_rate_over(rate_window))},
           {"topics", std::move(topics)},
           {"requests_per_sec", std::move(requests)},
           {"series", std::move(series)}});
  });

  http.Get("/v1/topics", [&](const httplib::Request&, httplib::Response& res) {
    const auto r = rates.topic_rates_over(rate_window);
    json topics = json::array();
    for (const auto& t : console().list_topics()) {
      auto it = r.find(t.name);
      topics.push_back(topic_json(t, it == r.end() ? nullptr : &it->second));
    }
    reply(res, 200, {{"topics", std::move(topics)}});
  });

  http.Post("/v1/topics", [&](const httplib::Request& req, httplib::Response& res) {
    auto body = json_body(req, res);
    if (!body) return;
    broker::console_topic_spec spec;
    const json& name = (*body)["name"];
    if (!name.is_string()) return reply_error(res, 400, "\"name\" must be a string");
    spec.name = name.get<std::string>();
    if (body->contains("partitions")) {
      const json& p = (*body)["partitions"];
      if (!p.is_number_integer() || p.get<int64_t>() < -1 || p.get<int64_t>() > INT32_MAX) {
        return reply_error(res, 400, "\"partitions\" must be a positive integer or -1");
      }
      spec.partitions = static_cast<int32_t>(p.get<int64_t>());
    }
    if (body->contains("configs")) {
      const json& configs = (*body)["configs"];
      if (!configs.is_object()) return reply_error(res, 400, "\"configs\" must be an object");
      for (const auto& [key, value] : configs.items()) {
        auto v = config_value(value);
        if (!v || !*v) {
          return reply_error(res, 400, fmt::format("config {}: a string value is needed", key));
        }
        spec.configs[key] = **v;
      }
    }
    auto created = console().create_topic(spec);
    if (!created) return reply_error(res, created.error());
    reply(res, 201, topic_detail_json(*created, nullptr));
  });

  http.Get(R"(/v1/topics/([^/]+))", [&](const httplib::Request& req, httplib::Response& res) {
    auto t = console().describe_topic(req.matches[1].str());
    if (!t) return reply_error(res, t.error());
    const auto r = rates.topic_rates_over(rate_window);
    auto it = r.find(t->name);
    reply(res, 200, topic_detail_json(*t, it == r.end() ? nullptr : &it->second));
  });

  http.Delete(R"(/v1/topics/([^/]+))", [&](const httplib::Request& req, httplib::Response& res) {
    const std::string name = req.matches[1].str();
    if (auto d = console().delete_topic(name); !d) return reply_error(res, d.error());
    reply(res, 200, {{"deleted", name}});
  });

  http.Patch(R"(/v1/topics/([^/]+)/configs)",
             [&](const httplib::Request& req, httplib::Response& res) {
               auto body = json_body(req, res);
               if (!body) return;
               const json& configs = (*body)["configs"];
               if (!configs.is_object()) {
                 return reply_error(res, 400, "\"configs\" must be an object");
               }
               std::map<std::string, std::optional<std::string>> changes;
               for (const auto& [key, value] : configs.items()) {
                 auto v = config_value(value);
                 if (!v) {
                   return reply_error(
                       res, 400, fmt::format("config {}: a string value or null is needed", key));
                 }
                 changes[key] = *v;
               }
               auto t = console().alter_topic_configs(req.matches[1].str(), changes);
               if (!t) return reply_error(res, t.error());
               reply(res, 200, topic_detail_json(*t, nullptr));
             });

  http.Get(R"(/v1/topics/([^/]+)/partitions/(\d{1,9})/records)", [&](const httplib::Request& req,
                                                                     httplib::Response& res) {
    broker::console_read_request r;
    r.topic = req.matches[1].str();
    r.partition = std::stoi(req.matches[2].str());
    const auto offset = int_param(req, "offset", 0);
    const auto limit = int_param(req, "limit", 50);
    const auto max_bytes = int_param(req, "max_bytes", 1 << 20);
    if (!offset || !limit || !max_bytes || *limit < 1 || *max_bytes < 1) {
      return reply_error(res, 400,
                         "offset, limit and max_bytes must be integers (limit and "
                         "max_bytes at least 1)");
    }
    const std::string enc_name =
        req.has_param("encoding") ? req.get_param_value("encoding") : "text";
    encoding enc = encoding::text;
    if (enc_name == "base64") {
      enc = encoding::base64;
    } else if (enc_name == "hex") {
      enc = encoding::hex;
    } else if (enc_name != "text") {
      return reply_error(res, 400, "encoding must be text, base64 or hex");
    }
    r.offset = *offset;
    if (req.has_param("timestamp")) {
      const auto ts = int_param(req, "timestamp", 0);
      if (!ts) return reply_error(res, 400, "timestamp must be milliseconds since the epoch");
      r.timestamp_ms = *ts;
    }
    r.max_records =
        static_cast<int32_t>(std::min<int64_t>(*limit, broker::console_backend::max_records_limit));
    r.max_bytes = static_cast<int32_t>(
        std::min<int64_t>(*max_bytes, broker::console_backend::max_bytes_limit));
    auto read = console().read_records(r);
    if (!read) return reply_error(res, read.error());
    json records = json::array();
    for (const auto& c : read->records) {
      json headers = json::array();
      for (const auto& h : c.headers) {
        headers.push_back({{"key", h.key}, {"value", encoded(h.value, enc)}});
      }
      records.push_back({{"partition", c.partition},
                         {"offset", c.offset},
                         {"timestamp", c.timestamp},
                         {"timestamp_type", c.log_append_time ? "LogAppendTime" : "CreateTime"},
                         {"key", encoded(c.key, enc)},
                         {"value", encoded(c.value, enc)},
                         {"headers", std::move(headers)}});
    }
    reply(res, 200,
          {{"topic", r.topic},
           {"partition", r.partition},
           {"encoding", enc_name},
           {"records", std::move(records)},
           {"next_offset", read->next_offset},
           {"log_start_offset", read->log_start_offset},
           {"high_watermark", read->high_watermark}});
  });

  http.Get(R"(/v1/topics/([^/]+)/partitions/(\d{1,9})/batches)", [&](const httplib::Request& req,
                                                                     httplib::Response& res) {
    const auto offset = int_param(req, "offset", 0);
    const auto limit = int_param(req, "limit", 5);
    if (!offset || !limit || *limit < 1) {
      return reply_error(res, 400, "offset and limit must be integers (limit at least 1)");
    }
    auto batches =
        console().read_batches(req.matches[1].str(), std::stoi(req.matches[2].str()), *offset,
                               static_cast<int32_t>(std::min<int64_t>(*limit, 20)));
    if (!batches) return reply_error(res, batches.error());
    json out = json::array();
    for (const auto& b : *batches) {
      json records = json::array();
      for (const auto& r : b.records) {
        records.push_back({{"size_bytes", r.size_bytes},
                           {"attributes", r.attributes},
                           {"timestamp_delta", r.timestamp_delta},
                           {"offset_delta", r.offset_delta},
                           {"key_length", r.key_length},
                           {"value_length", r.value_length},
                           {"header_count", r.header_count}});
      }
      out.push_back({{"base_offset", b.base_offset},
                     {"last_offset", b.base_offset + b.last_offset_delta},
                     {"batch_length", b.batch_length},
                     {"partition_leader_epoch", b.partition_leader_epoch},
                     {"magic", b.magic},
                     {"crc", b.crc},
                     {"crc_valid", b.crc_valid},
                     {"attributes", b.attributes},
                     {"compression", b.compression},
                     {"timestamp_type", b.log_append_time ? "LogAppendTime" : "CreateTime"},
                     {"transactional", b.transactional},
                     {"control", b.control},
                     {"last_offset_delta", b.last_offset_delta},
                     {"base_timestamp", b.base_timestamp},
                     {"max_timestamp", b.max_timestamp},
                     {"producer_id", b.producer_id},
                     {"producer_epoch", b.producer_epoch},
                     {"base_sequence", b.base_sequence},
                     {"records_count", b.records_count},
                     {"records", std::move(records)},
                     {"hex", hex(b.bytes)},
                     {"hex_truncated", b.bytes_truncated}});
    }
    reply(res, 200, {{"batches", std::move(out)}});
  });

  http.Post(R"(/v1/topics/([^/]+)/partitions/(\d{1,9})/records)", [&](const httplib::Request& req,
                                                                      httplib::Response& res) {
    auto body = json_body(req, res);
    if (!body) return;
    broker::console_produce_request p;
    p.topic = req.matches[1].str();
    p.partition = std::stoi(req.matches[2].str());
    auto text = [&](const char* field, std::optional<std::string>& out) {
      if (!body->contains(field)) return true;
      const json& v = (*body)[field];
      if (v.is_null()) return true;
      if (!v.is_string()) return false;
      out = v.get<std::string>();
      return true;
    };
    if (!text("key", p.key) || !text("value", p.value)) {
      return reply_error(res, 400, "\"key\" and \"value\" must be strings or null");
    }
    if (body->contains("headers")) {
      const json& headers = (*body)["headers"];
      if (!headers.is_array()) return reply_error(res, 400, "\"headers\" must be an array");
      for (const auto& h : headers) {
        if (!h.is_object() || !h.contains("key") || !h["key"].is_string() ||
            (h.contains("value") && !h["value"].is_string() && !h["value"].is_null())) {
          return reply_error(res, 400, "a header is {\"key\": string, \"value\": string or null}");
        }
        broker::console_record_header ch;
        ch.key = h["key"].get<std::string>();
        if (h.contains("value") && h["value"].is_string()) {
          ch.value = h["value"].get<std::string>();
        }
        p.headers.push_back(std::move(ch));
      }
    }
    auto offset = console().produce_record(p);
    if (!offset) return reply_error(res, offset.error());
    reply(res, 201, {{"topic", p.topic}, {"partition", p.partition}, {"offset", *offset}});
  });

  http.Post(
      R"(/v1/groups/([^/]+)/offsets)", [&](const httplib::Request& req, httplib::Response& res) {
        auto body = json_body(req, res);
        if (!body) return;
        broker::console_offset_reset reset;
        reset.group_id = req.matches[1].str();
        const json& topic = (*body)["topic"];
        if (!topic.is_string()) return reply_error(res, 400, "\"topic\" must be a string");
        reset.topic = topic.get<std::string>();
        const json& to = (*body)["to"];
        if (to == "earliest") {
          reset.to = broker::console_offset_reset::target::earliest;
        } else if (to == "latest") {
          reset.to = broker::console_offset_reset::target::latest;
        } else if (to.is_number_integer()) {
          reset.to = broker::console_offset_reset::target::offset;
          reset.offset = to.get<int64_t>();
        } else {
          return reply_error(res, 400, "\"to\" must be \"earliest\", \"latest\" or an offset");
        }
        if (body->contains("partitions")) {
          const json& partitions = (*body)["partitions"];
          if (!partitions.is_array() || partitions.size() > 100000) {
            return reply_error(res, 400, "\"partitions\" must be an array of partition numbers");
          }
          for (const auto& p : partitions) {
            if (!p.is_number_integer() || p.get<int64_t>() < 0 || p.get<int64_t>() > INT32_MAX) {
              return reply_error(res, 400, "\"partitions\" must be an array of partition numbers");
            }
            reset.partitions.push_back(static_cast<int32_t>(p.get<int64_t>()));
          }
        }
        auto g = console().reset_group_offsets(reset);
        if (!g) return reply_error(res, g.error());
        reply(res, 200, group_json(*g, true));
      });

  http.Get("/v1/groups", [&](const httplib::Request&, httplib::Response& res) {
    json groups = json::array();
    for (const auto& g : console().list_groups()) groups.push_back(group_json(g, false));
    reply(res, 200, {{"groups", std::move(groups)}});
  });

  http.Get(R"(/v1/groups/([^/]+))", [&](const httplib::Request& req, httplib::Response& res) {
    auto g = console().describe_group(req.matches[1].str());
    if (!g) return reply_error(res, g.error());
    reply(res, 200, group_json(*g, true));
  });
}

}  // namespace tarn::observe
