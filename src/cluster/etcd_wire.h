// etcd v3's messages as its JSON gateway speaks them (etcd 3.4: POST /v3/kv/range, /v3/kv/txn,
// /v3/lease/grant, /v3/watch ...; keys and values base64, 64-bit integers as decimal strings,
// fields at their default left out). Requests are built and responses parsed here without I/O,
// so etcd_client's HTTP transport is the only part that needs a server. Decoders never throw:
// malformed or unexpected JSON is an etcd_error.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace tarn::cluster::etcd {

// An error from etcd (its gRPC status code and message, as the gateway reports them) or from
// talking to it (code unavailable: no endpoint answered; code internal: an answer we could not
// read).
struct etcd_error {
  // gRPC status codes the cluster code acts on.
  static constexpr int not_found = 5;         // e.g. "requested lease not found"
  static constexpr int invalid_argument = 3;  // a malformed request
  static constexpr int failed_precondition = 9;
  static constexpr int out_of_range = 11;  // "mvcc: required revision has been compacted"
  static constexpr int internal = 13;      // an answer tarn could not read
  static constexpr int unavailable = 14;   // no endpoint reachable
  int code = internal;
  std::string message;
};

struct key_value {
  std::string key;
  std::string value;
  int64_t create_revision = 0;
  int64_t mod_revision = 0;
  int64_t version = 0;  // 0: the key does not exist (a deletion event's kv)
  int64_t lease = 0;
};

// The range_end that makes a range cover every key starting with `prefix` (etcd's convention:
// the prefix with its last byte below 0xff incremented; "\0" for an empty prefix: every key).
std::string prefix_end(std::string_view prefix);

// A comparison of a transaction: key's `target` compared with `number` (or `value`).
struct compare {
  enum class target_kind { version, create_revision, mod_revision, value, lease };
  enum class result_kind { equal, greater, less, not_equal };
  std::string key;
  target_kind target = target_kind::mod_revision;
  result_kind result = result_kind::equal;
  int64_t number = 0;
  std::string value;
};

struct request_op {
  enum class kind { range, put, delete_range };
  kind op = kind::range;
  std::string key;
  std::string range_end;  // range and delete_range
  std::string value;      // put
  int64_t lease = 0;      // put

  static request_op range(std::string key, std::string range_end = {});
  static request_op put(std::string key, std::string value, int64_t lease = 0);
  static request_op delete_range(std::string key, std::string range_end = {});
};

struct txn_request {
  std::vector<compare> compares;
  std::vector<request_op> success;
  std::vector<request_op> failure;
};

struct op_response {
  request_op::kind op = request_op::kind::range;
  std::vector<key_value> kvs;  // range
  int64_t deleted = 0;         // delete_range
};

struct txn_response {
  bool succeeded = false;
  int64_t revision = 0;  // the store's revision after the transaction
  std::vector<op_response> responses;
};

struct range_response {
  int64_t revision = 0;
  std::vector<key_value> kvs;
  bool more = false;
  int64_t count = 0;
};

struct lease_grant_response {
  int64_t id = 0;
  int64_t ttl_s = 0;
};

struct watch_event {
  enum class kind { put, delete_key };
  kind type = kind::put;
  key_value kv;
};

// One message of a watch stream: the creation acknowledgement, a batch of events (in revision
// order), a progress notification (no events), or the watch's cancellation (compact_revision >
// 0 when the requested start revision was compacted away).
struct watch_response {
  int64_t revision = 0;
  int64_t watch_id = 0;
  bool created = false;
  bool canceled = false;
  int64_t compact_revision = 0;
  std::string cancel_reason;
  std::vector<watch_event> events;
};

// Request bodies (JSON).
std::string encode_range(std::string_view key, std::string_view range_end = {},
                         int64_t revision = 0, int64_t limit = 0);
std::string encode_put(std::string_view key, std::string_view value, int64_t lease = 0);
std::string encode_delete_range(std::string_view key, std::string_view range_end = {});
std::string encode_txn(const txn_request& txn);
std::string encode_lease_grant(int64_t ttl_s);
std::string encode_lease_id(int64_t id);  // keepalive and revoke
std::string encode_watch_create(std::string_view key, std::string_view range_end,
                                int64_t start_revision, bool progress_notify);

// Response bodies. Each first turns the gateway's error object ({"error", "code", "message"})
// into an etcd_error.
result<range_response, etcd_error> decode_range(std::string_view body);
result<int64_t, etcd_error> decode_revision(std::string_view body);  // put, delete_range
result<txn_response, etcd_error> decode_txn(std::string_view body);
result<lease_grant_response, etcd_error> decode_lease_grant(std::string_view body);
// The lease's remaining TTL after a keepalive: 0 when the lease no longer exists.
result<int64_t, etcd_error> decode_lease_keep_alive(std::string_view body);
result<void, etcd_error> decode_lease_revoke(std::string_view body);
// One line of a watch stream ({"result": {...}} or {"error": {...}}).
result<watch_response, etcd_error> decode_watch(std::string_view line);

}  // namespace tarn::cluster::etcd
