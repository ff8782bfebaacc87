// http_server: the routes, the limits on hostile clients (only GET and HEAD, timeouts, a bounded
// worker pool, cpp-httplib's own caps on the request line and headers) and the listener thread.
#include "observe/http_server.h"

#include <httplib.h>
#include <spdlog/spdlog.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <thread>

#include "observe/console_api.h"
#include "observe/metrics_export.h"
#include "observe/status_json.h"

#ifndef TARN_VERSION
#define TARN_VERSION "unknown"
#endif

namespace tarn::observe {

const char* tarn_version() { return TARN_VERSION; }

namespace {

// cpp-httplib's ThreadPool queues without bound; this one runs a connection on the acceptor's
// thread when `max_queued` are already waiting, so the kernel's backlog holds the rest.
class bounded_pool : public httplib::TaskQueue {
 public:
  bounded_pool(size_t threads, size_t max_queued) : max_queued_(max_queued) {
    for (size_t i = 0; i < threads; ++i) threads_.emplace_back([this] { work(); });
  }

  void enqueue(std::function<void()> fn) override {
    {
      std::unique_lock lock(mu_);
      if (jobs_.size() < max_queued_) {
        jobs_.push_back(std::move(fn));
        cv_.notify_one();
        return;
      }
    }
    fn();
  }

  void shutdown() override {
    {
      std::unique_lock lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }

 private:
  void work() {
    for (;;) {
      std::function<void()> fn;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return stopping_ || !jobs_.empty(); });
        if (jobs_.empty()) return;
        fn = std::move(jobs_.front());
        jobs_.pop_front();
      }
      fn();
    }
  }

  const size_t max_queued_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> jobs_;
  std::vector<std::thread> threads_;
  bool stopping_ = false;
};

}  // namespace

struct http_server::impl {
  impl(const broker::server& b, const broker::broker_config& c, console_source k)
      : broker(b), config(c), console(std::move(k)) {}

  const broker::server& broker;
  const broker::broker_config& config;
  console_source console;  // empty: no console routes
  topic_rates rates;
  std::optional<rate_sampler> sampler;  // from start() to stop()
  httplib::Server http;
  std::thread thread;

  void routes();
};

void http_server::impl::routes() {
  http.new_task_queue = [] { return new bounded_pool(worker_threads, max_queued_connections); };
  // A slow client holds a worker at most this long per read or write.
  http.set_read_timeout(5, 0);
  http.set_write_timeout(5, 0);
  http.set_keep_alive_max_count(100);
  http.set_keep_alive_timeout(5);
  http.set_payload_max_length(64 * 1024);  // the console's JSON bodies are far smaller
  http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    auto ready = [this] {
      return broker.snapshot({.partitions = false, .committed_offsets = false}).ready;
    };
    if (req.method == "GET" || req.method == "HEAD") {
      // Topics and groups exist once the logs are recovered; from the start of a clean shutdown
      // the broker is going away. The status, cluster and rate routes answer throughout.
      if (console && needs_ready_broker(req) && !ready()) {
        res.status = 503;
        res.set_content("{\"error\":\"the broker is not ready\"}\n", "application/json");
        return httplib::Server::HandlerResponse::Handled;
      }
      return httplib::Server::HandlerResponse::Unhandled;
    }
    if (console && is_console_change(req)) {
      if (config.http_console_read_only) {
        res.status = 403;
        res.set_content("{\"error\":\"the console is read-only (http.console.read.only)\"}\n",
                        "application/json");
        return httplib::Server::HandlerResponse::Handled;
      }
      // Before the logs are recovered and from the start of a clean shutdown, nothing changes.
      if (!ready()) {
        res.status = 503;
        res.set_content("{\"error\":\"the broker is not ready\"}\n", "application/json");
        return httplib::Server::HandlerResponse::Handled;
      }
      // A JSON content type makes a browser ask before sending a change from another origin
      // (a CORS preflight, which is not answered), so no other page can change the broker. A
      // DELETE without a body is preflighted for its method alone.
      if (req.method != "DELETE" &&
          !req.get_header_value("Content-Type").starts_with("application/json")) {
        res.status = 415;
        res.set_content("{\"error\":\"Content-Type must be application/json\"}\n",
                        "application/json");
        return httplib::Server::HandlerResponse::Handled;
      }
      return httplib::Server::HandlerResponse::Unhandled;
    }
    res.status = 405;
    res.set_header("Allow", "GET, HEAD");
    res.set_content("method not allowed\n", "text/plain");
    return httplib::Server::HandlerResponse::Handled;
  });
  http.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (res.body.empty()) {
      res.set_content(fmt::format("error {}\n", res.status), "text/plain");
    }
  });

  http.Get("/livez", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain");
  });
  http.Get("/readyz", [this](const httplib::Request&, httplib::Response& res) {
    const bool ready = broker.snapshot({.partitions = false, .committed_offsets = false}).ready;
    res.status = ready ? 200 : 503;
    res.set_content(ready ? "ready\n" : "not ready\n", "text/plain");
  });
  http.Get("/metrics", [this](const httplib::Request& req, httplib::Response& res) {
    auto snapshot = broker.snapshot({});
    export_options options;
    options.max_partitions = config.http_metrics_max_partitions;
    const auto families = collect_metrics(snapshot, options);
    if (accepts_openmetrics(req.get_header_value("Accept"))) {
      res.set_content(to_openmetrics(families), openmetrics_content_type);
    } else {
      res.set_content(to_prometheus_text(families), prometheus_text_content_type);
    }
  });
  http.Get("/v1/status", [this](const httplib::Request&, httplib::Response& res) {
    auto snapshot = broker.snapshot({.partitions = true, .committed_offsets = true});
    snapshot.version = tarn_version();
    res.set_content(status_json(snapshot), "application/json");
  });
  if (console) mount_console(http, broker, console, config, rates);
}

http_server::http_server(const broker::server& broker, const broker::broker_config& config,
                         console_source console)
    : impl_(std::make_unique<impl>(broker, config, std::move(console))) {
  impl_->routes();
}

http_server::~http_server() { stop(); }

result<uint16_t, std::string> http_server::start() {
  auto& s = *impl_;
  const std::string host = s.config.http_host.empty() ? "0.0.0.0" : s.config.http_host;
  int port = s.config.http_port;
  if (port == 0) {
    port = s.http.bind_to_any_port(host);
    if (port < 0) port = 0;
  } else if (!s.http.bind_to_port(host, port)) {
    port = 0;
  }
  if (port == 0) {
    return fail(fmt::format("cannot listen on http.listener={}:{}", s.config.http_host,
                            s.config.http_port));
  }
  if (s.console) {
    s.sampler.emplace(
        s.rates,
        [&s] { return s.broker.snapshot({.partitions = true, .committed_offsets = false}); },
        rate_interval);
  }
  s.thread = std::thread([&s] { s.http.listen_after_bind(); });
  spdlog::info("http listening on {}:{}", host, port);
  return static_cast<uint16_t>(port);
}

void http_server::stop() {
  auto& s = *impl_;
  if (!s.thread.joinable()) return;
  s.http.stop();
  s.thread.join();
  s.sampler.reset();
}

}  // namespace tarn::observe
