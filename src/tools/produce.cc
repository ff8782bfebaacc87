// `tarn produce`: reads records from stdin, one per line, and sends them with tarn's producer,
// like Kafka's kafka-console-producer (same option names; linger.ms defaults to 1000 as there).
#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "client/producer_config.h"
#include "tarn/producer.h"
#include "tools/subcommands.h"

namespace tarn::tools {
namespace {

struct produce_options {
  std::string bootstrap_server;
  std::string topic;
  std::vector<std::string> producer_properties;
  std::string producer_config_file;
  std::vector<std::string> reader_properties;
  std::string compression_codec;
  std::string acks = "-1";
  int64_t linger_ms = 1000;
  int32_t batch_size = 16384;
  bool sync = false;
};

// "k=v" -> {k, v}; false when there is no '='.
bool split_property(const std::string& text, std::pair<std::string, std::string>& out) {
  auto eq = text.find('=');
  if (eq == std::string::npos) return false;
  out = {text.substr(0, eq), text.substr(eq + 1)};
  return true;
}

int run_produce(const produce_options& o) {
  std::vector<client::property> props = {{"bootstrap.servers", o.bootstrap_server},
                                         {"acks", o.acks},
                                         {"linger.ms", std::to_string(o.linger_ms)},
                                         {"batch.size", std::to_string(o.batch_size)}};
  if (!o.compression_codec.empty()) props.emplace_back("compression.type", o.compression_codec);
  if (!o.producer_config_file.empty()) {
    std::ifstream in(o.producer_config_file);
    if (!in) {
      std::fprintf(stderr, "Cannot read %s\n", o.producer_config_file.c_str());
      return 1;
    }
    std::stringstream text;
    text << in.rdbuf();
    auto parsed = client::parse_properties_text(text.str());
    if (!parsed) {
      std::fprintf(stderr, "%s: %s\n", o.producer_config_file.c_str(),
                   parsed.error().message.c_str());
      return 1;
    }
    props.insert(props.end(), parsed->begin(), parsed->end());
  }
  for (const auto& p : o.producer_properties) {
    std::pair<std::string, std::string> kv;
    if (!split_property(p, kv)) {
      std::fprintf(stderr, "Invalid producer property %s: expected key=value\n", p.c_str());
      return 1;
    }
    props.push_back(kv);
  }
  bool parse_key = false;
  std::string key_separator = "\t";
  std::string null_marker;
  bool has_null_marker = false;
  for (const auto& p : o.reader_properties) {
    std::pair<std::string, std::string> kv;
    if (!split_property(p, kv)) {
      std::fprintf(stderr, "Invalid property %s: expected key=value\n", p.c_str());
      return 1;
    }
    if (kv.first == "parse.key") {
      parse_key = kv.second == "true";
    } else if (kv.first == "key.separator") {
      key_separator = kv.second;
    } else if (kv.first == "null.marker") {
      null_marker = kv.second;
      has_null_marker = true;
    } else {
      std::fprintf(stderr,
                   "Unsupported property %s (tarn knows parse.key, key.separator, "
                   "null.marker)\n",
                   kv.first.c_str());
      return 1;
    }
  }
  auto producer = client::producer::create(props);
  if (!producer) {
    std::fprintf(stderr, "%s\n", producer.error().message.c_str());
    return 1;
  }
  int failures = 0;
  auto report = [&failures, topic = o.topic](const client::record_metadata&,
                                             const client::producer_error* e) {
    if (e) {
      // As Kafka's ErrorLoggingCallback.
      std::fprintf(stderr, "Error when sending message to topic %s with error: %s\n", topic.c_str(),
                   e->message.c_str());
      ++failures;  // callbacks run on the one I/O thread
    }
  };
  std::string line;
  int64_t line_number = 0;
  while (std::getline(std::cin, line)) {
    ++line_number;
    client::producer_record record;
    record.topic = o.topic;
    std::string_view value = line;
    std::string_view key;
    if (parse_key) {
      auto at = line.find(key_separator);
      if (at == std::string::npos) {
        std::fprintf(stderr, "No key separator found on line number %lld: '%s'\n",
                     static_cast<long long>(line_number), line.c_str());
        return 1;
      }
      key = std::string_view(line).substr(0, at);
      value = std::string_view(line).substr(at + key_separator.size());
      if (!(has_null_marker && key == null_marker)) record.key = key;
    }
    if (!(has_null_marker && value == null_marker)) record.value = value;
    if (o.sync) {
      auto result = (*producer)->send(record, report).get();
      (void)result;  // reported by the callback
    } else {
      (void)(*producer)->send_async(record, report);
    }
  }
  (*producer)->close();
  return failures == 0 ? 0 : 1;
}

}  // namespace

void add_produce(CLI::App& app) {
  auto options = std::make_shared<produce_options>();
  auto* cmd = app.add_subcommand("produce",
                                 "Send lines from stdin as records (like kafka-console-producer)");
  cmd->add_option("--bootstrap-server", options->bootstrap_server, "host:port[,host:port...]")
      ->required();
  cmd->add_option("--topic", options->topic, "The topic to produce to")->required();
  cmd->add_option("--producer-property", options->producer_properties,
                  "A producer setting as key=value (Java's names); repeatable");
  cmd->add_option("-X", options->producer_properties,
                  "Same as --producer-property (security.protocol, ssl.*, sasl.*, ...)");
  cmd->add_option("--producer.config,--command-config", options->producer_config_file,
                  "A Java .properties file of producer settings");
  cmd->add_option("--property", options->reader_properties,
                  "Line reader settings: parse.key=true, key.separator=<sep>, null.marker=<m>");
  cmd->add_option("--compression-codec", options->compression_codec,
                  "none, gzip, snappy, lz4 or zstd");
  cmd->add_option("--request-required-acks", options->acks, "acks (default -1)");
  cmd->add_option("--timeout", options->linger_ms, "linger.ms (default 1000, as Kafka's tool)");
  cmd->add_option("--batch-size", options->batch_size, "batch.size (default 16384)");
  cmd->add_flag("--sync", options->sync, "Wait for each record's acknowledgement");
  cmd->callback([options] { set_subcommand_exit_code(run_produce(*options)); });
}

}  // namespace tarn::tools
