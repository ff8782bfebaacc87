// The web console's JSON API under /v1 (docs/http-api.md lists every endpoint): topics (list,
// describe, create, delete, configs), the records of a partition, consumer groups with lag, and
// rates. It reads and changes the broker only through broker::console_backend and the server's
// snapshot; every request is bounded (records, bytes, body size) so it never holds up produce or
// fetch for longer than a small admin request.
#pragma once

#include <httplib.h>

#include "broker/config.h"
#include "broker/console_backend.h"
#include "broker/server.h"
#include "observe/http_server.h"
#include "observe/topic_rates.h"

namespace tarn::observe {

// Registers the /v1 console routes (and the static console at /) on `http`.
void mount_console(httplib::Server& http, const broker::server& broker,
                   const console_source& console, const broker::broker_config& config,
                   const topic_rates& rates);

// True for the requests that change something (the methods besides GET and HEAD that the API
// serves); http_server refuses them with 403 when http.console.read.only is set.
bool is_console_change(const httplib::Request& req);

// True for the routes that read or change topics and groups through the console's backend.
bool needs_ready_broker(const httplib::Request& req);

}  // namespace tarn::observe
