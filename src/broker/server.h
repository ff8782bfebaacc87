// The broker process: one event loop per core (an asio::io_context run by one thread, not pinned),
// each owning the connections handed to it; one acceptor per listener on loop 0 handing each
// new socket to the loop with the fewest connections; clean shutdown on SIGTERM/SIGINT.
// docs/broker.md explains the choices.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/result.h"
#include "broker/broker_snapshot.h"
#include "broker/config.h"
#include "broker/console_backend.h"
#include "broker/handler.h"

namespace tarn::broker {

class server {
 public:
  explicit server(broker_config config);
  ~server();
  server(const server&) = delete;
  server& operator=(const server&) = delete;

  // Locks the log directory, reads the clean-shutdown marker, binds every listener and starts
  // the event loops. An error is a sentence for the operator (the address in use, the locked
  // directory, ...).
  result<void, std::string> start();

  // Serves until SIGTERM or SIGINT (or request_shutdown), then stops accepting, answers the
  // requests already read, closes every connection, flushes, writes the clean-shutdown marker.
  // Returns the process exit code. Runs loop 0 on the calling thread.
  int run();

  // Starts the clean shutdown from any thread.
  void request_shutdown();

  // The listeners with the ports actually bound (port 0 in the config means "any free port").
  const std::vector<listener_endpoint>& bound_listeners() const;

  // Whether the previous run shut down cleanly (valid after start()).
  bool had_clean_shutdown() const;

  // For src/observe, from any thread, from construction until run() returned: a copy of what the
  // metrics and status endpoints show. Takes the topic manager's lock for the topic and
  // partition part (and each group shard's lock for the committed offsets) only when asked.
  // Before start() has returned (the logs still being recovered) it holds only the node id,
  // uptime and the metric cells, and ready is false.
  struct snapshot_options {
    bool partitions = true;         // log offsets and sizes (and the per-topic cells)
    bool committed_offsets = true;  // consumer groups' committed offsets and member counts
  };
  broker_snapshot snapshot(const snapshot_options& options) const;

  // For src/observe's web console, from any thread, after start() returned and until run()
  // returned: topics, records and groups through the seam of console_backend.h.
  console_backend& console();

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace tarn::broker
