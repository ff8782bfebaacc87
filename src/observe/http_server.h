// The HTTP listener (http.listener): /metrics, /livez, /readyz, /v1/status, and the web console
// (at / and its JSON API under /v1, observe/console_api.h), served by cpp-httplib on threads of
// its own (an acceptor, the gate of http_gate.h and a few workers), never on the Kafka event
// loops. Metrics and status read the broker through server::snapshot(), the console through
// broker::console_backend. docs/http-api.md documents the endpoints.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "base/result.h"
#include "broker/config.h"
#include "broker/console_backend.h"
#include "broker/server.h"

namespace tarn::observe {

// The console's backend. server::start() builds it, and HTTP starts before that (so /readyz
// can answer while the logs are recovered): it is asked for only by the routes of
// needs_ready_broker (console_api.h), which http_server answers 503 until the broker is ready.
using console_source = std::function<broker::console_backend&()>;

// The tarn version reported by /v1/status (git describe at configure time).
const char* tarn_version();

class http_server {
 public:
  // Worker threads, and the connections open at once (waiting for their request, queued for a
  // worker or served) beyond which a new one is answered 503: bounded threads, descriptors and
  // memory however many clients connect, and slow ones never hold a worker (http_gate.h).
  static constexpr size_t worker_threads = 4;
  static constexpr size_t max_connections = 512;
  // From accept to the whole request (line, headers, body) arrived; then 408.
  static constexpr std::chrono::milliseconds request_timeout{5000};
  static constexpr int listen_backlog = 1024;

  // How often the console's rates sample the metric cells.
  static constexpr std::chrono::milliseconds rate_interval{1000};

  // `console` may be empty: no console routes then (only /metrics, health and status). The
  // server may be started before `broker` is (it answers /readyz 503 while the logs are
  // recovered); `console` is called only once the broker is ready.
  http_server(const broker::server& broker, const broker::broker_config& config,
              console_source console);
  ~http_server();
  http_server(const http_server&) = delete;
  http_server& operator=(const http_server&) = delete;

  // Binds config.http_host:http_port and starts serving; returns the port bound (the config's
  // port 0 means any free port). An error is a sentence for the operator.
  result<uint16_t, std::string> start();
  // Stops accepting, finishes the requests in progress and joins the threads.
  void stop();

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace tarn::observe
