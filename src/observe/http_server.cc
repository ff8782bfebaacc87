// http_server: the routes, the limits on hostile clients (only GET and HEAD, the gate of
// http_gate.h in front of a few workers, cpp-httplib's own caps on the request line and headers)
// and the listener thread.
#include "observe/http_server.h"

#include <httplib.h>
#include <spdlog/spdlog.h>

#include <atomic>
#include <chrono>
#include <optional>
#include <thread>

#include "observe/console_api.h"
#include "observe/http_gate.h"
#include "observe/metrics_export.h"
#include "observe/status_json.h"

#ifndef TARN_VERSION
#define TARN_VERSION "unknown"
#endif

namespace tarn::observe {

const char* tarn_version() { return TARN_VERSION; }

struct http_server::impl {
  impl(const broker::server& b, const broker::broker_config& c, console_source k)
      : broker(b), config(c), console(std::move(k)) {}

  const broker::server& broker;
  const broker::broker_config& config;
  console_source console;  // empty: no console routes
  topic_rates rates;
  std::optional<rate_sampler> sampler;  // from start() to stop()
  gated_server http{gate_limits{.workers = worker_threads,
                                .max_connections = max_connections,
                                .request_timeout = request_timeout}};
  std::thread thread;
  std::atomic<bool> listen_returned{false};  // set by `thread` when listen_after_bind() returns

  void routes();
};

void http_server::impl::routes() {
  // The gate (http_gate.h) bounds the time to receive a request and to answer it, and the
  // connections open; a connection serves one request.
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
    const auto& gate = http.counts();
    options.http = http_connection_counts{gate.accepted.load(std::memory_order_relaxed),
                                          gate.refused.load(std::memory_order_relaxed),
                                          gate.timed_out.load(std::memory_order_relaxed)};
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
  s.http.set_backlog(listen_backlog);
  if (s.console) {
    s.sampler.emplace(
        s.rates,
        [&s] { return s.broker.snapshot({.partitions = true, .committed_offsets = false}); },
        rate_interval);
  }
  s.thread = std::thread([&s] {
    s.http.listen_after_bind();
    s.listen_returned = true;
  });
  spdlog::info("http listening on {}:{}", host, port);
  return static_cast<uint16_t>(port);
}

void http_server::stop() {
  auto& s = *impl_;
  if (!s.thread.joinable()) return;
  // cpp-httplib's stop() does nothing until listen_after_bind() has set is_running() on the
  // listener thread: a stop right after start (SIGTERM while a loaded machine has not run that
  // thread yet) would leave it accepting forever and the join below waiting for it.
  while (!s.http.is_running() && !s.listen_returned) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  s.http.stop();
  s.thread.join();
  s.http.close_gate();
  s.sampler.reset();
}

}  // namespace tarn::observe
