// `tarn consume`: reads one partition and prints its records as kafka-console-consumer does for
// `--partition P --offset ...` (assign + seek, no consumer group). Options and output follow
// ConsoleConsumer and its DefaultMessageFormatter:
//   --bootstrap-server H:P --topic T [--partition P (0)] [--offset N|earliest|latest (latest)]
//   [--from-beginning] [--max-messages N] [--timeout-ms N] [--isolation-level ...]
//   [--property print.key=true --property print.timestamp=true --property print.headers=true
//    --property print.offset=true --property print.partition=true --property print.value=false
//    --property key.separator=S --property line.separator=S --property headers.separator=S
//    --property null.literal=S]
// One line per record: [CreateTime:ts] [Partition:p] [Offset:o] [h1:v1,h2:v2|NO_HEADERS] [key]
// value, separated by key.separator (a tab); nulls print as null.literal ("null"). On exit it
// prints "Processed a total of N messages" to stderr. --timeout-ms ends the run when no record
// arrived for that long. An offset out of range resets to latest (earliest with
// --from-beginning), as auto.offset.reset does for the console consumer.
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <map>
#include <string>

#include "protocol/error_codes.h"
#include "protocol/messages/api_versions_request.h"
#include "protocol/messages/api_versions_response.h"
#include "protocol/messages/fetch_request.h"
#include "protocol/messages/fetch_response.h"
#include "protocol/messages/list_offsets_request.h"
#include "protocol/messages/list_offsets_response.h"
#include "record/record_batch.h"
#include "tools/kafka_client.h"
#include "tools/subcommands.h"

namespace tarn::tools {

namespace {

struct consume_options {
  std::string bootstrap_server;
  std::string topic;
  int32_t partition = 0;
  std::string offset = "latest";
  bool from_beginning = false;
  int64_t max_messages = -1;
  int64_t timeout_ms = -1;
  std::string isolation_level = "read_uncommitted";
  std::vector<std::string> properties;
};

struct formatter {
  bool print_timestamp = false, print_partition = false, print_offset = false;
  bool print_headers = false, print_key = false, print_value = true;
  std::string key_separator = "\t", line_separator = "\n", headers_separator = ",";
  std::string null_literal = "null";
};

bool parse_bool(const std::string& v) { return v == "true" || v == "TRUE" || v == "True"; }

result<formatter, std::string> make_formatter(const std::vector<std::string>& props) {
  formatter f;
  for (const auto& p : props) {
    const auto eq = p.find('=');
    if (eq == std::string::npos) return fail("property must be key=value: " + p);
    const std::string k = p.substr(0, eq), v = p.substr(eq + 1);
    if (k == "print.timestamp")
      f.print_timestamp = parse_bool(v);
    else if (k == "print.partition")
      f.print_partition = parse_bool(v);
    else if (k == "print.offset")
      f.print_offset = parse_bool(v);
    else if (k == "print.headers")
      f.print_headers = parse_bool(v);
    else if (k == "print.key")
      f.print_key = parse_bool(v);
    else if (k == "print.value")
      f.print_value = parse_bool(v);
    else if (k == "key.separator")
      f.key_separator = v;
    else if (k == "line.separator")
      f.line_separator = v;
    else if (k == "headers.separator")
      f.headers_separator = v;
    else if (k == "null.literal")
      f.null_literal = v;
    // Other properties (deserializers, ...) are accepted and ignored: bytes are printed raw.
  }
  return f;
}

void write(std::string& out, const std::optional<record::bytes_view>& b, const formatter& f) {
  if (!b) {
    out += f.null_literal;
  } else {
    out.append(reinterpret_cast<const char*>(b->data()), b->size());
  }
}

// DefaultMessageFormatter.writeTo.
void format_record(std::string& out, const formatter& f, int32_t partition, int64_t offset,
                   int64_t timestamp, bool log_append_time, const record::record_view& r) {
  const bool more_after_timestamp =
      f.print_partition || f.print_offset || f.print_headers || f.print_key || f.print_value;
  if (f.print_timestamp) {
    out += log_append_time ? "LogAppendTime:" : "CreateTime:";
    out += std::to_string(timestamp);
    if (more_after_timestamp) out += f.key_separator;
  }
  if (f.print_partition) {
    out += "Partition:" + std::to_string(partition);
    if (f.print_offset || f.print_headers || f.print_key || f.print_value) out += f.key_separator;
  }
  if (f.print_offset) {
    out += "Offset:" + std::to_string(offset);
    if (f.print_headers || f.print_key || f.print_value) out += f.key_separator;
  }
  if (f.print_headers) {
    if (r.header_count == 0) {
      out += "NO_HEADERS";
    } else {
      bool first = true;
      for (const auto& h : r.headers()) {
        if (!first) out += f.headers_separator;
        first = false;
        out.append(reinterpret_cast<const char*>(h.key.data()), h.key.size());
        out += ':';
        write(out, h.value, f);
      }
    }
    if (f.print_key || f.print_value) out += f.key_separator;
  }
  if (f.print_key) {
    write(out, r.key, f);
    if (f.print_value) out += f.key_separator;
  }
  if (f.print_value) write(out, r.value, f);
  out += f.line_separator;
}

// The broker's version range per API key, from ApiVersions (v3, else v0).
using version_map = std::map<int16_t, std::pair<int16_t, int16_t>>;

result<version_map, std::string> api_versions(kafka_client& client) {
  protocol::api_versions_request req;
  req.client_software_name = "tarn";
  req.client_software_version = "0.1.0";
  std::vector<uint8_t> buffer;
  for (int16_t version : {int16_t{3}, int16_t{0}}) {
    auto resp = call<protocol::api_versions_response>(client, req, version, buffer);
    if (!resp) return fail(resp.error());
    if (resp->error_code == static_cast<int16_t>(protocol::error_code::unsupported_version)) {
      continue;
    }
    if (resp->error_code != 0) {
      return fail("ApiVersions failed with error " + std::to_string(resp->error_code));
    }
    version_map out;
    for (const auto& k : resp->api_keys) out[k.api_key] = {k.min_version, k.max_version};
    return out;
  }
  return fail(std::string("the broker refused ApiVersions v0"));
}

// The highest version of Req both sides serve, or -1.
template <typename Req>
int16_t version_for(const version_map& versions) {
  auto it = versions.find(Req::api_key);
  if (it == versions.end()) return -1;
  const int16_t hi = std::min<int16_t>(it->second.second, Req::max_version);
  const int16_t lo = std::max<int16_t>(it->second.first, Req::min_version);
  return hi >= lo ? hi : -1;
}

std::string error_name(int16_t code) {
  if (const auto* e = protocol::find_error(code)) return std::string(e->name);
  return "error " + std::to_string(code);
}

result<int64_t, std::string> list_offset(kafka_client& client, const version_map& versions,
                                         const consume_options& o, int64_t timestamp,
                                         int8_t isolation) {
  const int16_t v = version_for<protocol::list_offsets_request>(versions);
  if (v < 0) return fail(std::string("the broker serves no ListOffsets version we speak"));
  protocol::list_offsets_request req;
  req.replica_id = -1;
  req.isolation_level = isolation;
  auto& t = req.topics.emplace_back();
  t.name = o.topic;
  auto& p = t.partitions.emplace_back();
  p.partition_index = o.partition;
  p.timestamp = timestamp;
  std::vector<uint8_t> buffer;
  auto resp = call<protocol::list_offsets_response>(client, req, v, buffer);
  if (!resp) return fail(resp.error());
  if (resp->topics.size() != 1 || resp->topics[0].partitions.size() != 1) {
    return fail(std::string("ListOffsets response does not decode"));
  }
  const auto& pr = resp->topics[0].partitions[0];
  if (pr.error_code != 0) {
    return fail("ListOffsets for " + o.topic + "-" + std::to_string(o.partition) + ": " +
                error_name(pr.error_code));
  }
  return pr.offset;
}

int run_consume(const consume_options& o) {
  auto f = make_formatter(o.properties);
  if (!f) {
    std::fprintf(stderr, "%s\n", f.error().c_str());
    return 1;
  }
  const int8_t isolation = o.isolation_level == "read_committed" ? 1 : 0;
  auto client = kafka_client::connect(o.bootstrap_server);
  if (!client) {
    std::fprintf(stderr, "%s\n", client.error().c_str());
    return 1;
  }
  kafka_client& c = **client;
  auto versions = api_versions(c);
  if (!versions) {
    std::fprintf(stderr, "%s\n", versions.error().c_str());
    return 1;
  }
  // Fetch by topic name: v12 at most (v13+ needs the topic ID from Metadata).
  const int16_t fetch_version =
      std::min<int16_t>(version_for<protocol::fetch_request>(*versions), 12);
  if (fetch_version < 0) {
    std::fprintf(stderr, "the broker serves no Fetch version we speak\n");
    return 1;
  }

  const int64_t reset_to = o.from_beginning ? -2 : -1;
  int64_t position = 0;
  std::string start = o.from_beginning ? "earliest" : o.offset;
  if (start == "earliest" || start == "latest") {
    auto off = list_offset(c, *versions, o, start == "earliest" ? -2 : -1, isolation);
    if (!off) {
      std::fprintf(stderr, "%s\n", off.error().c_str());
      return 1;
    }
    position = *off;
  } else {
    try {
      position = std::stoll(start);
    } catch (...) {
      std::fprintf(stderr, "--offset must be earliest, latest or a non-negative number\n");
      return 1;
    }
    if (position < 0) {
      std::fprintf(stderr, "--offset must be earliest, latest or a non-negative number\n");
      return 1;
    }
  }

  int64_t processed = 0;
  auto last_progress = std::chrono::steady_clock::now();
  std::string out;
  std::vector<uint8_t> fetch_buffer;
  int exit_code = 0;
  while (o.max_messages < 0 || processed < o.max_messages) {
    if (o.timeout_ms >= 0 && std::chrono::steady_clock::now() - last_progress >=
                                 std::chrono::milliseconds(o.timeout_ms)) {
      std::fprintf(stderr,
                   "[tarn consume] ERROR Error processing message, terminating consumer process: "
                   "TimeoutException\n");
      break;
    }
    protocol::fetch_request req;
    req.replica_id = -1;
    req.max_wait_ms =
        o.timeout_ms >= 0 ? static_cast<int32_t>(std::min<int64_t>(o.timeout_ms, 500)) : 500;
    req.min_bytes = 1;
    req.max_bytes = 52428800;
    req.isolation_level = isolation;
    req.session_id = 0;
    req.session_epoch = -1;
    auto& t = req.topics.emplace_back();
    t.topic = o.topic;
    auto& p = t.partitions.emplace_back();
    p.partition = o.partition;
    p.fetch_offset = position;
    p.partition_max_bytes = 1048576;
    auto resp = call<protocol::fetch_response>(c, req, fetch_version, fetch_buffer);
    if (!resp) {
      std::fprintf(stderr, "%s\n", resp.error().c_str());
      exit_code = 1;
      break;
    }
    if (resp->error_code != 0) {
      std::fprintf(stderr, "Fetch failed: %s\n", error_name(resp->error_code).c_str());
      exit_code = 1;
      break;
    }
    if (resp->responses.size() != 1 || resp->responses[0].partitions.size() != 1) continue;
    const auto& pd = resp->responses[0].partitions[0];
    if (pd.error_code == static_cast<int16_t>(protocol::error_code::offset_out_of_range)) {
      auto off = list_offset(c, *versions, o, reset_to, isolation);
      if (!off) {
        std::fprintf(stderr, "%s\n", off.error().c_str());
        exit_code = 1;
        break;
      }
      position = *off;
      continue;
    }
    if (pd.error_code != 0) {
      std::fprintf(stderr, "Fetch %s-%d: %s\n", o.topic.c_str(), o.partition,
                   error_name(pd.error_code).c_str());
      exit_code = 1;
      break;
    }
    if (!pd.records || pd.records->empty()) continue;
    record::batch_reader batches(*pd.records);
    record::record_batch_view batch;
    bool done = false;
    while (!done && batches.next(batch)) {
      if (batch.next_offset() <= position) continue;
      if (batch.is_control()) {
        position = batch.next_offset();
        continue;
      }
      auto records = record::batch_records::open(batch, 1u << 30);
      if (!records) {
        std::fprintf(stderr, "batch at offset %lld does not decompress\n",
                     static_cast<long long>(batch.base_offset()));
        return 1;
      }
      const bool log_append_time =
          batch.timestamp_type() == record::timestamp_type::log_append_time;
      auto reader = records->reader();
      record::record_view rec;
      while (reader.next(rec)) {
        const int64_t offset = batch.base_offset() + rec.offset_delta;
        if (offset < position) continue;
        const int64_t ts =
            log_append_time ? batch.max_timestamp() : batch.base_timestamp() + rec.timestamp_delta;
        out.clear();
        format_record(out, *f, o.partition, offset, ts, log_append_time, rec);
        std::fwrite(out.data(), 1, out.size(), stdout);
        position = offset + 1;
        ++processed;
        last_progress = std::chrono::steady_clock::now();
        if (o.max_messages >= 0 && processed >= o.max_messages) {
          done = true;
          break;
        }
      }
      if (!done) position = std::max(position, batch.next_offset());
    }
    std::fflush(stdout);
  }
  std::fflush(stdout);
  std::fprintf(stderr, "Processed a total of %lld messages\n", static_cast<long long>(processed));
  return exit_code;
}

}  // namespace

void add_consume(CLI::App& app) {
  auto opts = std::make_shared<consume_options>();
  auto* cmd = app.add_subcommand(
      "consume", "Read a partition and print its records, like kafka-console-consumer");
  cmd->add_option("--bootstrap-server", opts->bootstrap_server, "host:port of the broker")
      ->required();
  cmd->add_option("--topic", opts->topic, "The topic to read")->required();
  cmd->add_option("--partition", opts->partition, "The partition to read (default 0)");
  cmd->add_option("--offset", opts->offset,
                  "Where to start: earliest, latest (default) or an offset");
  cmd->add_flag("--from-beginning", opts->from_beginning, "Start at the earliest offset");
  cmd->add_option("--max-messages", opts->max_messages, "Exit after this many records");
  cmd->add_option("--timeout-ms", opts->timeout_ms, "Exit when no record arrived for this long");
  cmd->add_option("--isolation-level", opts->isolation_level,
                  "read_uncommitted (default) or read_committed");
  cmd->add_option("--property", opts->properties,
                  "Formatter property key=value (print.key, print.timestamp, print.headers, "
                  "print.offset, print.partition, print.value, key.separator, ...)");
  cmd->callback([opts] { set_subcommand_exit_code(run_consume(*opts)); });
}

}  // namespace tarn::tools
