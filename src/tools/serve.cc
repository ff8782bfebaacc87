// `tarn serve [--config server.properties] [--override key=value]...`: runs the broker.
// Configuration errors are printed with the key and value at fault and exit with status 1.
#include <malloc.h>
#include <spdlog/cfg/env.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

#include <CLI/CLI.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "broker/config.h"
#include "broker/server.h"
#include "observe/http_server.h"
#include "tools/subcommands.h"

namespace tarn::tools {

namespace {

struct serve_options {
  std::string config_file;
  std::string positional_config_file;  // Kafka's kafka-server-start.sh style
  std::vector<std::string> overrides;
};

void setup_logging() {
  auto logger = spdlog::stderr_logger_mt("tarn");
  logger->set_pattern("[%Y-%m-%d %H:%M:%S.%e] %l %v");
  spdlog::set_default_logger(logger);
  spdlog::set_level(spdlog::level::info);
  spdlog::cfg::load_env_levels();  // SPDLOG_LEVEL=debug for per-connection detail
}

int run_serve(const serve_options& options) {
  setup_logging();
  std::string file = options.config_file;
  if (!options.positional_config_file.empty()) {
    if (!file.empty()) {
      spdlog::error("give the configuration file once (--config or positional), not both");
      return 1;
    }
    file = options.positional_config_file;
  }
  broker::properties file_props;
  if (!file.empty()) {
    auto loaded = broker::load_properties_file(file);
    if (!loaded) {
      spdlog::error("refusing to start: {}", loaded.error());
      return 1;
    }
    file_props = std::move(*loaded);
  }
  broker::properties override_props;
  for (const auto& o : options.overrides) {
    auto kv = broker::parse_override(o);
    if (!kv) {
      spdlog::error("refusing to start: {}", kv.error());
      return 1;
    }
    override_props.push_back(std::move(*kv));
  }
  auto config = broker::make_broker_config(file_props, override_props);
  if (!config) {
    spdlog::error("refusing to start: {}", config.error());
    return 1;
  }
  // Request frames of a few hundred KiB to a few MiB (a Produce of 1 MiB batches takes a 1 MiB
  // frame buffer) must come back from the heap already mapped. With glibc's
  // sliding thresholds, one event loop's frames were mmap'd or trimmed and faulted in again on
  // every request: 476,000 minor faults and twice the system time per GiB ingested
  // (docs/benchmarks.md, broker ingest ceiling). Fixed thresholds keep them: frames up to
  // 4 MiB from the heap, and at most 16 MiB of free heap kept beyond what is in use.
  mallopt(M_MMAP_THRESHOLD, 4 << 20);
  mallopt(M_TRIM_THRESHOLD, 16 << 20);
  const broker::broker_config http_config = *config;
  broker::server server(std::move(*config));
  // The HTTP listener (src/observe) on threads of its own, started before the broker so that
  // /livez answers and /readyz says 503 while the logs are recovered. A port taken by another
  // process must not keep the Kafka listeners down: that is logged as an error and the broker
  // serves on.
  std::optional<observe::http_server> http;
  if (http_config.http_enabled) {
    http.emplace(server, http_config,
                 [&server]() -> broker::console_backend& { return server.console(); });
    if (auto bound = http->start(); !bound) {
      spdlog::error("{}; serving Kafka without the HTTP endpoints", bound.error());
      http.reset();
    }
  }
  if (auto started = server.start(); !started) {
    spdlog::error("refusing to start: {}", started.error());
    return 1;
  }
  const int code = server.run();
  if (http) http->stop();
  return code;
}

}  // namespace

void add_serve(CLI::App& app) {
  auto options = std::make_shared<serve_options>();
  auto* cmd = app.add_subcommand("serve", "Run the broker (Kafka protocol, PLAINTEXT)");
  cmd->add_option("--config", options->config_file, "server.properties file (Kafka's keys)");
  cmd->add_option("config_file", options->positional_config_file,
                  "server.properties file, as kafka-server-start.sh takes it");
  cmd->add_option("--override", options->overrides, "key=value, wins over the file; repeatable")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->callback([options] { set_subcommand_exit_code(run_serve(*options)); });
}

}  // namespace tarn::tools
