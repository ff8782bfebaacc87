// A client of etcd v3 over its JSON gateway (HTTP/1.1, cpp-httplib): key ranges, puts, deletes,
// transactions (compare-and-swap: the cluster's state is only ever written by a transaction that
// compares the revision it read), leases, and watches that deliver every change in revision
// order on a thread of their own. Why the gateway rather than gRPC: docs/cluster.md.
//
// Thread-safety: etcd_client's members may be called from any thread (one request at a time per
// client; a broker keeps a client for its requests and a watch per prefix). Errors are values:
// etcd_error with etcd's gRPC code, or `unavailable` when no endpoint answered.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "cluster/etcd_wire.h"

namespace httplib {
class Client;
}

namespace tarn::cluster::etcd {

struct client_options {
  // "http://host:port" of each etcd member; requests go to one until it fails, then the next.
  std::vector<std::string> endpoints;
  int64_t request_timeout_ms = 5000;
  int64_t connect_timeout_ms = 1000;
};

class etcd_client {
 public:
  // Fails (invalid_argument) when an endpoint is not an http://host:port URL; does not connect.
  static result<std::unique_ptr<etcd_client>, etcd_error> create(client_options options);
  ~etcd_client();
  etcd_client(const etcd_client&) = delete;
  etcd_client& operator=(const etcd_client&) = delete;

  result<range_response, etcd_error> range(std::string_view key, std::string_view range_end = {},
                                           int64_t revision = 0, int64_t limit = 0);
  // Returns the store's revision after the write.
  result<int64_t, etcd_error> put(std::string_view key, std::string_view value, int64_t lease = 0);
  result<int64_t, etcd_error> delete_range(std::string_view key, std::string_view range_end = {});
  result<txn_response, etcd_error> txn(const txn_request& txn);

  result<lease_grant_response, etcd_error> lease_grant(int64_t ttl_s);
  // One renewal; returns the lease's TTL, 0 when the lease has expired or was revoked.
  result<int64_t, etcd_error> lease_keep_alive(int64_t id);
  result<void, etcd_error> lease_revoke(int64_t id);

  const client_options& options() const { return options_; }

 private:
  struct endpoint {
    std::string host;
    int port = 0;
  };
  etcd_client(client_options options, std::vector<endpoint> endpoints);
  // POSTs `body` to `path` on the current endpoint, failing over to the next on a transport
  // error; returns the answer's body (etcd's error answers included: the decoders read them).
  result<std::string, etcd_error> post(const char* path, const std::string& body);

  friend class etcd_watch;
  static result<std::vector<endpoint>, etcd_error> parse_endpoints(
      const std::vector<std::string>& urls);

  client_options options_;
  std::vector<endpoint> endpoints_;
  std::mutex mu_;
  size_t current_ = 0;
  std::unique_ptr<httplib::Client> http_;  // to endpoints_[current_]
};

// A watch on a key or a range (range_end as in etcd_client::range): `on_response` gets every
// message of the stream in order (events, and progress notifications) on the watch's thread.
// When the stream breaks (etcd restarted, a member failed) it reconnects, to the next endpoint
// after a failure, resuming after the last revision it delivered, so no event is missed or
// repeated. It stops for good, calling `on_error` once, when the revision it needs has been
// compacted away (the watcher must then reread the range) or etcd refuses the watch.
class etcd_watch {
 public:
  using response_handler = std::function<void(const watch_response&)>;
  using error_handler = std::function<void(const etcd_error&)>;

  etcd_watch(client_options options, std::string key, std::string range_end, int64_t start_revision,
             response_handler on_response, error_handler on_error);
  ~etcd_watch();  // stops the stream and joins the thread
  etcd_watch(const etcd_watch&) = delete;
  etcd_watch& operator=(const etcd_watch&) = delete;

  // The revision the next event will have at least (the last delivered + 1).
  int64_t next_revision() const { return next_revision_.load(); }

 private:
  void run();
  // One stream: returns when it ends; false when the watch must stop for good.
  bool stream_once(size_t endpoint_index);

  client_options options_;
  std::string key_;
  std::string range_end_;
  response_handler on_response_;
  error_handler on_error_;
  std::atomic<int64_t> next_revision_;
  std::vector<etcd_client::endpoint> endpoints_;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  bool done_ = false;
  httplib::Client* active_ = nullptr;  // the stream's client while one is open
  std::thread thread_;
};

}  // namespace tarn::cluster::etcd
