// etcd's JSON gateway messages: encoding with nlohmann-json, base64 with OpenSSL's EVP blocks,
// decoding without exceptions (json::parse with exceptions off, every field checked for its
// type before it is read).
#include "cluster/etcd_wire.h"

#include <openssl/evp.h>

#include <cctype>
#include <charconv>
#include <nlohmann/json.hpp>

namespace tarn::cluster::etcd {

using json = nlohmann::json;

namespace {

std::string to_base64(std::string_view data) {
  std::string out(4 * ((data.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(data.data()),
                                static_cast<int>(data.size()));
  out.resize(static_cast<size_t>(n));
  return out;
}

bool from_base64(std::string_view text, std::string& out) {
  if (text.size() % 4 != 0) return false;
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (!(std::isalnum(u) || c == '+' || c == '/' || c == '=')) return false;
  }
  out.assign(3 * (text.size() / 4) + 1, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                reinterpret_cast<const unsigned char*>(text.data()),
                                static_cast<int>(text.size()));
  if (n < 0) return false;
  auto size = static_cast<size_t>(n);
  // EVP_DecodeBlock counts the padding as decoded zero bytes.
  if (!text.empty() && text.back() == '=') --size;
  if (text.size() >= 2 && text[text.size() - 2] == '=') --size;
  out.resize(size);
  return true;
}

etcd_error bad_answer(std::string what) {
  return etcd_error{etcd_error::internal, "unreadable etcd answer: " + std::move(what)};
}

// int64 fields come as decimal strings (proto3's JSON mapping); accept numbers too.
bool read_int(const json& object, const char* name, int64_t& out) {
  auto it = object.find(name);
  if (it == object.end()) {
    out = 0;  // proto3 leaves defaults out
    return true;
  }
  if (it->is_number_integer()) {
    out = it->get<int64_t>();
    return true;
  }
  if (!it->is_string()) return false;
  const auto& s = it->get_ref<const std::string&>();
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size();
}

bool read_bool(const json& object, const char* name, bool& out) {
  auto it = object.find(name);
  if (it == object.end()) {
    out = false;
    return true;
  }
  if (!it->is_boolean()) return false;
  out = it->get<bool>();
  return true;
}

bool read_bytes(const json& object, const char* name, std::string& out) {
  auto it = object.find(name);
  if (it == object.end()) {
    out.clear();
    return true;
  }
  return it->is_string() && from_base64(it->get_ref<const std::string&>(), out);
}

bool read_kv(const json& j, key_value& kv) {
  return j.is_object() && read_bytes(j, "key", kv.key) && read_bytes(j, "value", kv.value) &&
         read_int(j, "create_revision", kv.create_revision) &&
         read_int(j, "mod_revision", kv.mod_revision) && read_int(j, "version", kv.version) &&
         read_int(j, "lease", kv.lease);
}

bool read_kvs(const json& object, std::vector<key_value>& out) {
  out.clear();
  auto it = object.find("kvs");
  if (it == object.end()) return true;
  if (!it->is_array()) return false;
  out.reserve(it->size());
  for (const auto& j : *it) {
    if (!read_kv(j, out.emplace_back())) return false;
  }
  return true;
}

bool read_header_revision(const json& object, int64_t& revision) {
  auto it = object.find("header");
  if (it == object.end()) {
    revision = 0;
    return true;
  }
  return it->is_object() && read_int(*it, "revision", revision);
}

// Parses `body` as a JSON object and turns the gateway's error answer into an etcd_error.
result<json, etcd_error> parse_answer(std::string_view body) {
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return fail(bad_answer("not a JSON object"));
  if (auto it = j.find("error"); it != j.end()) {
    etcd_error e;
    int64_t code = etcd_error::internal;
    if (!read_int(j, "code", code)) code = etcd_error::internal;
    e.code = static_cast<int>(code);
    if (auto m = j.find("message"); m != j.end() && m->is_string()) {
      e.message = m->get<std::string>();
    } else if (it->is_string()) {
      e.message = it->get<std::string>();
    } else {
      e.message = "etcd error";
    }
    return fail(std::move(e));
  }
  return j;
}

const char* target_name(compare::target_kind t) {
  switch (t) {
    case compare::target_kind::version:
      return "VERSION";
    case compare::target_kind::create_revision:
      return "CREATE";
    case compare::target_kind::mod_revision:
      return "MOD";
    case compare::target_kind::value:
      return "VALUE";
    case compare::target_kind::lease:
      return "LEASE";
  }
  return "MOD";
}

// The field of Compare's target_union each target compares with.
const char* target_field(compare::target_kind t) {
  switch (t) {
    case compare::target_kind::version:
      return "version";
    case compare::target_kind::create_revision:
      return "create_revision";
    case compare::target_kind::mod_revision:
      return "mod_revision";
    case compare::target_kind::value:
      return "value";
    case compare::target_kind::lease:
      return "lease";
  }
  return "mod_revision";
}

const char* result_name(compare::result_kind r) {
  switch (r) {
    case compare::result_kind::equal:
      return "EQUAL";
    case compare::result_kind::greater:
      return "GREATER";
    case compare::result_kind::less:
      return "LESS";
    case compare::result_kind::not_equal:
      return "NOT_EQUAL";
  }
  return "EQUAL";
}

json range_json(std::string_view key, std::string_view range_end, int64_t revision, int64_t limit) {
  json j = {{"key", to_base64(key)}};
  if (!range_end.empty()) j["range_end"] = to_base64(range_end);
  if (revision != 0) j["revision"] = std::to_string(revision);
  if (limit != 0) j["limit"] = std::to_string(limit);
  return j;
}

json put_json(std::string_view key, std::string_view value, int64_t lease) {
  json j = {{"key", to_base64(key)}, {"value", to_base64(value)}};
  if (lease != 0) j["lease"] = std::to_string(lease);
  return j;
}

json delete_json(std::string_view key, std::string_view range_end) {
  json j = {{"key", to_base64(key)}};
  if (!range_end.empty()) j["range_end"] = to_base64(range_end);
  return j;
}

json op_json(const request_op& op) {
  switch (op.op) {
    case request_op::kind::range:
      return {{"request_range", range_json(op.key, op.range_end, 0, 0)}};
    case request_op::kind::put:
      return {{"request_put", put_json(op.key, op.value, op.lease)}};
    case request_op::kind::delete_range:
      return {{"request_delete_range", delete_json(op.key, op.range_end)}};
  }
  return json::object();
}

bool read_op_response(const json& j, op_response& out) {
  if (!j.is_object()) return false;
  if (auto it = j.find("response_range"); it != j.end()) {
    out.op = request_op::kind::range;
    return it->is_object() && read_kvs(*it, out.kvs);
  }
  if (auto it = j.find("response_put"); it != j.end()) {
    out.op = request_op::kind::put;
    return it->is_object();
  }
  if (auto it = j.find("response_delete_range"); it != j.end()) {
    out.op = request_op::kind::delete_range;
    return it->is_object() && read_int(*it, "deleted", out.deleted);
  }
  return false;
}

}  // namespace

std::string prefix_end(std::string_view prefix) {
  std::string end(prefix);
  while (!end.empty()) {
    auto& last = reinterpret_cast<unsigned char&>(end.back());
    if (last < 0xff) {
      ++last;
      return end;
    }
    end.pop_back();
  }
  return std::string(1, '\0');  // every key
}

request_op request_op::range(std::string key, std::string range_end) {
  return {kind::range, std::move(key), std::move(range_end), {}, 0};
}
request_op request_op::put(std::string key, std::string value, int64_t lease) {
  return {kind::put, std::move(key), {}, std::move(value), lease};
}
request_op request_op::delete_range(std::string key, std::string range_end) {
  return {kind::delete_range, std::move(key), std::move(range_end), {}, 0};
}

std::string encode_range(std::string_view key, std::string_view range_end, int64_t revision,
                         int64_t limit) {
  return range_json(key, range_end, revision, limit).dump();
}

std::string encode_put(std::string_view key, std::string_view value, int64_t lease) {
  return put_json(key, value, lease).dump();
}

std::string encode_delete_range(std::string_view key, std::string_view range_end) {
  return delete_json(key, range_end).dump();
}

std::string encode_txn(const txn_request& txn) {
  json compares = json::array();
  for (const auto& c : txn.compares) {
    json j = {{"key", to_base64(c.key)},
              {"target", target_name(c.target)},
              {"result", result_name(c.result)}};
    if (c.target == compare::target_kind::value) {
      j["value"] = to_base64(c.value);
    } else {
      j[target_field(c.target)] = std::to_string(c.number);
    }
    compares.push_back(std::move(j));
  }
  json success = json::array();
  for (const auto& op : txn.success) success.push_back(op_json(op));
  json failure = json::array();
  for (const auto& op : txn.failure) failure.push_back(op_json(op));
  return json{{"compare", std::move(compares)},
              {"success", std::move(success)},
              {"failure", std::move(failure)}}
      .dump();
}

std::string encode_lease_grant(int64_t ttl_s) {
  return json{{"TTL", std::to_string(ttl_s)}}.dump();
}

std::string encode_lease_id(int64_t id) { return json{{"ID", std::to_string(id)}}.dump(); }

std::string encode_watch_create(std::string_view key, std::string_view range_end,
                                int64_t start_revision, bool progress_notify) {
  json create = {{"key", to_base64(key)}};
  if (!range_end.empty()) create["range_end"] = to_base64(range_end);
  if (start_revision != 0) create["start_revision"] = std::to_string(start_revision);
  if (progress_notify) create["progress_notify"] = true;
  return json{{"create_request", std::move(create)}}.dump();
}

result<range_response, etcd_error> decode_range(std::string_view body) {
  auto j = parse_answer(body);
  if (!j) return fail(j.error());
  range_response r;
  if (!read_header_revision(*j, r.revision) || !read_kvs(*j, r.kvs) ||
      !read_bool(*j, "more", r.more) || !read_int(*j, "count", r.count)) {
    return fail(bad_answer("range response"));
  }
  return r;
}

result<int64_t, etcd_error> decode_revision(std::string_view body) {
  auto j = parse_answer(body);
  if (!j) return fail(j.error());
  int64_t revision = 0;
  if (!read_header_revision(*j, revision)) return fail(bad_answer("response header"));
  return revision;
}

result<txn_response, etcd_error> decode_txn(std::string_view body) {
  auto j = parse_answer(body);
  if (!j) return fail(j.error());
  txn_response r;
  if (!read_header_revision(*j, r.revision) || !read_bool(*j, "succeeded", r.succeeded)) {
    return fail(bad_answer("txn response"));
  }
  if (auto it = j->find("responses"); it != j->end()) {
    if (!it->is_array()) return fail(bad_answer("txn responses"));
    for (const auto& op : *it) {
      if (!read_op_response(op, r.responses.emplace_back())) {
        return fail(bad_answer("txn operation response"));
      }
    }
  }
  return r;
}

result<lease_grant_response, etcd_error> decode_lease_grant(std::string_view body) {
  auto j = parse_answer(body);
  if (!j) return fail(j.error());
  lease_grant_response r;
  if (!read_int(*j, "ID", r.id) || !read_int(*j, "TTL", r.ttl_s)) {
    return fail(bad_answer("lease grant"));
  }
  if (r.id == 0) return fail(bad_answer("lease grant without an ID"));
  return r;
}

result<int64_t, etcd_error> decode_lease_keep_alive(std::string_view body) {
  auto j = parse_answer(body);
  if (!j) return fail(j.error());
  // A streaming RPC: the gateway wraps its one answer in "result".
  auto it = j->find("result");
  if (it == j->end() || !it->is_object()) return fail(bad_answer("keepalive response"));
  int64_t ttl = 0;
  if (!read_int(*it, "TTL", ttl)) return fail(bad_answer("keepalive TTL"));
  return ttl;
}

result<void, etcd_error> decode_lease_revoke(std::string_view body) {
  auto j = parse_answer(body);
  if (!j) return fail(j.error());
  return {};
}

result<watch_response, etcd_error> decode_watch(std::string_view line) {
  json j = json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return fail(bad_answer("watch message"));
  if (auto e = j.find("error"); e != j.end()) {
    // A stream's error: {"error": {"grpc_code": N, "message": "..."}}.
    etcd_error err{etcd_error::internal, "watch stream error"};
    if (e->is_object()) {
      int64_t code = etcd_error::internal;
      if (read_int(*e, "grpc_code", code)) err.code = static_cast<int>(code);
      if (auto m = e->find("message"); m != e->end() && m->is_string()) {
        err.message = m->get<std::string>();
      }
    }
    return fail(std::move(err));
  }
  auto it = j.find("result");
  if (it == j.end() || !it->is_object()) return fail(bad_answer("watch message without result"));
  const json& r = *it;
  watch_response w;
  if (!read_header_revision(r, w.revision) || !read_int(r, "watch_id", w.watch_id) ||
      !read_bool(r, "created", w.created) || !read_bool(r, "canceled", w.canceled) ||
      !read_int(r, "compact_revision", w.compact_revision)) {
    return fail(bad_answer("watch response"));
  }
  if (auto reason = r.find("cancel_reason"); reason != r.end() && reason->is_string()) {
    w.cancel_reason = reason->get<std::string>();
  }
  if (auto events = r.find("events"); events != r.end()) {
    if (!events->is_array()) return fail(bad_answer("watch events"));
    for (const auto& e : *events) {
      if (!e.is_object()) return fail(bad_answer("watch event"));
      watch_event& ev = w.events.emplace_back();
      if (auto type = e.find("type"); type != e.end()) {
        if (!type->is_string()) return fail(bad_answer("watch event type"));
        const auto& t = type->get_ref<const std::string&>();
        if (t == "DELETE") {
          ev.type = watch_event::kind::delete_key;
        } else if (t != "PUT") {
          return fail(bad_answer("watch event type " + t));
        }
      }
      auto kv = e.find("kv");
      if (kv == e.end() || !read_kv(*kv, ev.kv)) return fail(bad_answer("watch event kv"));
    }
  }
  return w;
}

}  // namespace tarn::cluster::etcd
