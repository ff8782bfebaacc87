// etcd_client and etcd_watch: the HTTP side of etcd's JSON gateway (cpp-httplib, blocking, one
// connection kept alive per client), with endpoint failover and watch resumption.
#include "cluster/etcd_client.h"

#include <httplib.h>

#include <charconv>
#include <chrono>
#include <optional>

namespace tarn::cluster::etcd {

namespace {

etcd_error unavailable(std::string message) {
  return etcd_error{etcd_error::unavailable, std::move(message)};
}

std::unique_ptr<httplib::Client> make_http(const std::string& host, int port,
                                           const client_options& options, int64_t read_timeout_ms) {
  auto http = std::make_unique<httplib::Client>(host, port);
  http->set_keep_alive(true);
  http->set_connection_timeout(std::chrono::milliseconds(options.connect_timeout_ms));
  http->set_read_timeout(std::chrono::milliseconds(read_timeout_ms));
  http->set_write_timeout(std::chrono::milliseconds(options.request_timeout_ms));
  return http;
}

}  // namespace

result<std::vector<etcd_client::endpoint>, etcd_error> etcd_client::parse_endpoints(
    const std::vector<std::string>& urls) {
  std::vector<endpoint> out;
  for (const auto& url : urls) {
    constexpr std::string_view scheme = "http://";
    std::string_view rest = url;
    if (!rest.starts_with(scheme)) {
      return fail(etcd_error{etcd_error::invalid_argument,
                             "etcd endpoint '" + url + "' is not an http://host:port URL"});
    }
    rest.remove_prefix(scheme.size());
    if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
    const auto colon = rest.rfind(':');
    int port = 0;
    if (colon == std::string_view::npos || colon == 0 ||
        std::from_chars(rest.data() + colon + 1, rest.data() + rest.size(), port).ec !=
            std::errc() ||
        port <= 0 || port > 65535) {
      return fail(
          etcd_error{etcd_error::invalid_argument, "etcd endpoint '" + url + "' has no host:port"});
    }
    out.push_back({std::string(rest.substr(0, colon)), port});
  }
  if (out.empty()) return fail(etcd_error{etcd_error::invalid_argument, "no etcd endpoints"});
  return out;
}

result<std::unique_ptr<etcd_client>, etcd_error> etcd_client::create(client_options options) {
  auto endpoints = parse_endpoints(options.endpoints);
  if (!endpoints) return fail(endpoints.error());
  return std::unique_ptr<etcd_client>(new etcd_client(std::move(options), std::move(*endpoints)));
}

etcd_client::etcd_client(client_options options, std::vector<endpoint> endpoints)
    : options_(std::move(options)), endpoints_(std::move(endpoints)) {}

etcd_client::~etcd_client() = default;

result<std::string, etcd_error> etcd_client::post(const char* path, const std::string& body) {
  std::lock_guard lock(mu_);
  std::string last_error;
  // Each endpoint once, starting from the one that answered last. A kept-alive connection the
  // server has closed meanwhile (the gateway ends a connection after a streaming call such as
  // a lease keepalive) fails without saying anything about the endpoint: that one is retried on
  // a new connection before moving on.
  for (size_t attempt = 0; attempt < endpoints_.size();) {
    const bool reused = http_ != nullptr;
    if (!http_) {
      const auto& e = endpoints_[current_];
      http_ = make_http(e.host, e.port, options_, options_.request_timeout_ms);
    }
    // The body is collected by a receiver rather than into the response: the gateway ends an
    // error answer (a non-200 status with etcd's error object) with HTTP trailers, which
    // cpp-httplib 0.11 cannot read past, so such an answer fails the request after its whole
    // body has arrived. A failed request with a status and a body is that answer (the decoders
    // check it is a whole JSON object); the connection is dropped since its state is unknown.
    std::string answer;
    httplib::Request req;
    req.method = "POST";
    req.path = path;
    req.set_header("Content-Type", "application/json");
    req.body = body;
    req.content_receiver = [&answer](const char* data, size_t size, uint64_t, uint64_t) {
      answer.append(data, size);
      return true;
    };
    httplib::Response res;
    httplib::Error error = httplib::Error::Success;
    const bool ok = http_->send(req, res, error);
    if (ok || (error == httplib::Error::Read && res.status > 0 && !answer.empty())) {
      if (!ok) http_.reset();
      return answer;
    }
    const auto& e = endpoints_[current_];
    last_error = e.host + ":" + std::to_string(e.port) + ": " + httplib::to_string(error);
    http_.reset();
    if (reused) continue;
    current_ = (current_ + 1) % endpoints_.size();
    ++attempt;
  }
  return fail(unavailable("no etcd endpoint answered (last: " + last_error + ")"));
}

result<range_response, etcd_error> etcd_client::range(std::string_view key,
                                                      std::string_view range_end, int64_t revision,
                                                      int64_t limit) {
  auto body = post("/v3/kv/range", encode_range(key, range_end, revision, limit));
  if (!body) return fail(body.error());
  return decode_range(*body);
}

result<int64_t, etcd_error> etcd_client::put(std::string_view key, std::string_view value,
                                             int64_t lease) {
  auto body = post("/v3/kv/put", encode_put(key, value, lease));
  if (!body) return fail(body.error());
  return decode_revision(*body);
}

result<int64_t, etcd_error> etcd_client::delete_range(std::string_view key,
                                                      std::string_view range_end) {
  auto body = post("/v3/kv/deleterange", encode_delete_range(key, range_end));
  if (!body) return fail(body.error());
  return decode_revision(*body);
}

result<txn_response, etcd_error> etcd_client::txn(const txn_request& txn) {
  auto body = post("/v3/kv/txn", encode_txn(txn));
  if (!body) return fail(body.error());
  return decode_txn(*body);
}

result<lease_grant_response, etcd_error> etcd_client::lease_grant(int64_t ttl_s) {
  auto body = post("/v3/lease/grant", encode_lease_grant(ttl_s));
  if (!body) return fail(body.error());
  return decode_lease_grant(*body);
}

result<int64_t, etcd_error> etcd_client::lease_keep_alive(int64_t id) {
  auto body = post("/v3/lease/keepalive", encode_lease_id(id));
  if (!body) return fail(body.error());
  return decode_lease_keep_alive(*body);
}

result<void, etcd_error> etcd_client::lease_revoke(int64_t id) {
  auto body = post("/v3/lease/revoke", encode_lease_id(id));
  if (!body) return fail(body.error());
  return decode_lease_revoke(*body);
}

etcd_watch::etcd_watch(client_options options, std::string key, std::string range_end,
                       int64_t start_revision, response_handler on_response, error_handler on_error)
    : options_(std::move(options)),
      key_(std::move(key)),
      range_end_(std::move(range_end)),
      on_response_(std::move(on_response)),
      on_error_(std::move(on_error)),
      next_revision_(start_revision) {
  auto endpoints = etcd_client::parse_endpoints(options_.endpoints);
  if (endpoints) endpoints_ = std::move(*endpoints);
  thread_ = std::thread([this, error = endpoints ? std::optional<etcd_error>()
                                                 : std::optional<etcd_error>(endpoints.error())] {
    if (error) {
      on_error_(*error);
    } else {
      run();
    }
    std::lock_guard lock(mu_);
    done_ = true;
    cv_.notify_all();
  });
}

etcd_watch::~etcd_watch() {
  std::unique_lock lock(mu_);
  stopping_ = true;
  cv_.notify_all();
  // httplib's stop() closes the stream's socket, which ends a blocked read; it is repeated until
  // the thread is done because a stop that comes before the socket exists has nothing to close.
  while (!done_) {
    if (active_) active_->stop();
    cv_.wait_for(lock, std::chrono::milliseconds(20));
  }
  lock.unlock();
  thread_.join();
}

void etcd_watch::run() {
  size_t endpoint_index = 0;
  auto backoff = std::chrono::milliseconds(50);
  while (true) {
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
    }
    const int64_t before = next_revision_.load();
    if (!stream_once(endpoint_index)) return;
    // The stream ended: etcd went away or the connection broke. Next endpoint, after a pause
    // that grows while nothing is delivered (a dead cluster is not polled in a tight loop).
    endpoint_index = (endpoint_index + 1) % endpoints_.size();
    backoff = next_revision_.load() != before
                  ? std::chrono::milliseconds(50)
                  : std::min(backoff * 2, std::chrono::milliseconds(1000));
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, backoff, [this] { return stopping_; });
  }
}

bool etcd_watch::stream_once(size_t endpoint_index) {
  const auto& e = endpoints_[endpoint_index];
  // No read timeout worth the name: a quiet range sends nothing for as long as it stays quiet;
  // the destructor ends the stream with stop().
  auto http = make_http(e.host, e.port, options_, /*read_timeout_ms=*/24LL * 3600 * 1000);
  {
    std::lock_guard lock(mu_);
    if (stopping_) return false;
    active_ = http.get();
  }
  bool keep_watching = true;
  std::string pending;
  httplib::Request req;
  req.method = "POST";
  req.path = "/v3/watch";
  req.set_header("Content-Type", "application/json");
  req.body = encode_watch_create(key_, range_end_, next_revision_.load(), true);
  req.content_receiver = [&](const char* data, size_t size, uint64_t, uint64_t) {
    pending.append(data, size);
    size_t start = 0;
    for (size_t nl; (nl = pending.find('\n', start)) != std::string::npos; start = nl + 1) {
      const std::string_view line(pending.data() + start, nl - start);
      if (line.find_first_not_of(" \r\t") == std::string_view::npos) continue;
      auto w = decode_watch(line);
      if (!w) {
        on_error_(w.error());
        keep_watching = false;
        return false;
      }
      if (w->canceled) {
        etcd_error err{
            w->compact_revision > 0 ? etcd_error::out_of_range : etcd_error::failed_precondition,
            w->cancel_reason.empty() ? "etcd canceled the watch (compacted at revision " +
                                           std::to_string(w->compact_revision) + ")"
                                     : w->cancel_reason};
        on_error_(err);
        keep_watching = false;
        return false;
      }
      if (w->created && next_revision_.load() == 0) {
        // A watch from "now": a reconnection must resume after the revision it started at.
        next_revision_.store(w->revision + 1);
      } else if (!w->events.empty()) {
        next_revision_.store(w->events.back().kv.mod_revision + 1);
      } else if (!w->created && w->revision >= next_revision_.load()) {
        // A progress notification: every change up to its revision has been delivered.
        next_revision_.store(w->revision + 1);
      }
      on_response_(*w);
    }
    pending.erase(0, start);
    std::lock_guard lock(mu_);
    return !stopping_;
  };
  httplib::Response res;
  httplib::Error error = httplib::Error::Success;
  http->send(req, res, error);
  if (keep_watching && !pending.empty()) {
    // A last message without its newline: an error answer ends the watch, anything else is a
    // broken stream to resume.
    if (auto w = decode_watch(pending); !w && w.error().code != etcd_error::internal) {
      on_error_(w.error());
      keep_watching = false;
    }
  }
  std::lock_guard lock(mu_);
  active_ = nullptr;
  return keep_watching && !stopping_;
}

}  // namespace tarn::cluster::etcd
