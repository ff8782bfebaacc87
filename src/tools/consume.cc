// `tarn consume`: prints records as kafka-console-consumer does, through src/client's consumer.
// With --group G (or --consumer-property group.id=G) it is a member of the consumer group
// (classic protocol, range assignor) subscribed to --topic: it starts from the group's committed
// offsets (auto.offset.reset where there are none: earliest with --from-beginning, else latest),
// commits every auto.commit.interval.ms and when it ends, and leaves the group. Without a group
// it reads one partition, --partition P (0), from --offset (as the console consumer's
// --partition/--offset: assign and seek, nothing committed). Options and output follow
// ConsoleConsumer and its DefaultMessageFormatter:
//   --bootstrap-server H:P --topic T [--group G] [--partition P (0)]
//   [--offset N|earliest|latest (latest)] [--from-beginning] [--max-messages N] [--timeout-ms N]
//   [--isolation-level read_committed] [--consumer-property k=v ...] [--consumer.config FILE]
//   [--property print.key=true --property print.timestamp=true --property print.headers=true
//    --property print.offset=true --property print.partition=true --property print.value=false
//    --property key.separator=S --property line.separator=S --property headers.separator=S
//    --property null.literal=S] (also as --formatter-property)
// One line per record: [CreateTime:ts] [Partition:p] [Offset:o] [h1:v1,h2:v2|NO_HEADERS] [key]
// value, separated by key.separator (a tab); nulls print as null.literal ("null"). On exit it
// prints "Processed a total of N messages" to stderr. --timeout-ms ends the run when no record
// arrived for that long. An offset out of range resets to latest (earliest with
// --from-beginning), as auto.offset.reset does for the console consumer. SIGINT and SIGTERM end
// the run as the message limit does (offsets committed, the group left).
#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>

#include "tarn/consumer.h"
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
  std::string group;
  std::vector<std::string> consumer_properties;  // k=v
  std::string consumer_config;                   // a properties file
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

void write(std::string& out, const std::optional<std::string>& b, const formatter& f) {
  if (!b) {
    out += f.null_literal;
  } else {
    out += *b;
  }
}

// DefaultMessageFormatter.writeTo.
void format_record(std::string& out, const formatter& f, const client::consumer_record& r) {
  const bool more_after_timestamp =
      f.print_partition || f.print_offset || f.print_headers || f.print_key || f.print_value;
  if (f.print_timestamp) {
    out += r.log_append_time ? "LogAppendTime:" : "CreateTime:";
    out += std::to_string(r.timestamp);
    if (more_after_timestamp) out += f.key_separator;
  }
  if (f.print_partition) {
    out += "Partition:" + std::to_string(r.partition);
    if (f.print_offset || f.print_headers || f.print_key || f.print_value) out += f.key_separator;
  }
  if (f.print_offset) {
    out += "Offset:" + std::to_string(r.offset);
    if (f.print_headers || f.print_key || f.print_value) out += f.key_separator;
  }
  if (f.print_headers) {
    if (r.headers.empty()) {
      out += "NO_HEADERS";
    } else {
      bool first = true;
      for (const auto& [key, value] : r.headers) {
        if (!first) out += f.headers_separator;
        first = false;
        out += key;
        out += ':';
        write(out, value, f);
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

// The consumer being polled, for the signal handler.
std::atomic<client::consumer*> g_consumer{nullptr};
std::atomic<bool> g_stop{false};

extern "C" void on_stop_signal(int) {
  g_stop.store(true);
  if (auto* c = g_consumer.load()) c->wakeup();
}

// "k=v" lines of a Java properties file (# and ! comments, blank lines skipped).
result<std::vector<std::pair<std::string, std::string>>, std::string> read_properties(
    const std::string& path) {
  std::ifstream in(path);
  if (!in) return fail("cannot read " + path);
  std::vector<std::pair<std::string, std::string>> out;
  std::string line;
  while (std::getline(in, line)) {
    const auto first = line.find_first_not_of(" \t");
    if (first == std::string::npos || line[first] == '#' || line[first] == '!') continue;
    const auto eq = line.find_first_of("=:", first);
    if (eq == std::string::npos) continue;
    auto trim = [](std::string s) {
      const auto b = s.find_first_not_of(" \t\r");
      const auto e = s.find_last_not_of(" \t\r");
      return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
    };
    out.emplace_back(trim(line.substr(first, eq - first)), trim(line.substr(eq + 1)));
  }
  return out;
}

using properties = std::vector<std::pair<std::string, std::string>>;

// The consumer's properties from the options, as ConsoleConsumerOptions builds them (the last
// value of a key wins).
result<properties, std::string> make_config(const consume_options& o) {
  properties props{{"client.id", "console-consumer"}};
  if (!o.consumer_config.empty()) {
    auto file = read_properties(o.consumer_config);
    if (!file) return fail(file.error());
    props.insert(props.end(), file->begin(), file->end());
  }
  for (const auto& p : o.consumer_properties) {
    const auto eq = p.find('=');
    if (eq == std::string::npos) return fail("Invalid consumer property: " + p);
    props.emplace_back(p.substr(0, eq), p.substr(eq + 1));
  }
  std::optional<std::string> reset;
  for (const auto& [k, v] : props) {
    if (k == "auto.offset.reset") reset = v;
    if (k == "group.id" && !o.group.empty() && v != o.group) {
      return fail("Group id passed in --group (" + o.group + ") and in consumer properties (" + v +
                  ") conflict");
    }
  }
  if (!o.group.empty()) props.emplace_back("group.id", o.group);
  props.emplace_back("bootstrap.servers", o.bootstrap_server);
  props.emplace_back("isolation.level", o.isolation_level);
  if (o.from_beginning && reset && *reset != "earliest") {
    return fail("Can't simultaneously specify --from-beginning and 'auto.offset.reset=" + *reset +
                "', choose only one");
  }
  if (o.from_beginning) {
    props.emplace_back("auto.offset.reset", "earliest");
  } else if (!reset) {
    props.emplace_back("auto.offset.reset", "latest");
  }
  return props;
}

bool has_group(const properties& props) {
  for (auto it = props.rbegin(); it != props.rend(); ++it) {
    if (it->first == "group.id") return !it->second.empty();
  }
  return false;
}

int run_consume(const consume_options& o) {
  auto f = make_formatter(o.properties);
  if (!f) {
    std::fprintf(stderr, "%s\n", f.error().c_str());
    return 1;
  }
  auto config = make_config(o);
  if (!config) {
    std::fprintf(stderr, "%s\n", config.error().c_str());
    return 1;
  }
  const bool in_group = has_group(*config);
  int64_t start = client::offset_end;
  if (!in_group) {
    const std::string from = o.from_beginning ? "earliest" : o.offset;
    if (from == "earliest") {
      start = client::offset_beginning;
    } else if (from != "latest") {
      try {
        size_t used = 0;
        start = std::stoll(from, &used);
        if (used != from.size()) start = -1;
      } catch (...) {
        start = -1;
      }
      if (start < 0) {
        std::fprintf(stderr, "--offset must be earliest, latest or a non-negative number\n");
        return 1;
      }
    }
  }
  auto consumer = client::consumer::create(*config);
  if (!consumer) {
    std::fprintf(stderr, "%s\n", consumer.error().message.c_str());
    return 1;
  }
  client::consumer& c = **consumer;
  if (in_group) {
    c.subscribe({o.topic});
  } else {
    const client::topic_partition tp{o.topic, o.partition};
    c.assign({tp});
    c.seek(tp, start);
  }

  g_stop.store(false);
  g_consumer.store(&c);
  auto old_int = std::signal(SIGINT, on_stop_signal);
  auto old_term = std::signal(SIGTERM, on_stop_signal);

  int64_t processed = 0;
  auto last_progress = std::chrono::steady_clock::now();
  std::string out;
  std::vector<client::consumer_record> records;  // polled into again and again: strings reused
  int exit_code = 0;
  while (!g_stop.load() && (o.max_messages < 0 || processed < o.max_messages)) {
    auto wait = std::chrono::milliseconds(500);
    if (o.timeout_ms >= 0) {
      const auto left = std::chrono::milliseconds(o.timeout_ms) -
                        std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::steady_clock::now() - last_progress);
      if (left <= std::chrono::milliseconds(0)) {
        std::fprintf(stderr,
                     "[tarn consume] ERROR Error processing message, terminating consumer "
                     "process: TimeoutException\n");
        break;
      }
      wait = std::min(wait, left);
    }
    const size_t limit =
        o.max_messages < 0 ? SIZE_MAX : static_cast<size_t>(o.max_messages - processed);
    if (auto polled = c.poll(records, wait, limit); !polled) {
      std::fprintf(stderr, "%s\n", polled.error().message.c_str());
      exit_code = 1;
      break;
    }
    for (const auto& r : records) {
      out.clear();
      format_record(out, *f, r);
      std::fwrite(out.data(), 1, out.size(), stdout);
      ++processed;
    }
    if (!records.empty()) {
      last_progress = std::chrono::steady_clock::now();
      std::fflush(stdout);
    }
  }
  std::fflush(stdout);
  if (auto closed = c.close(); !closed && exit_code == 0) {
    std::fprintf(stderr, "%s\n", closed.error().message.c_str());
  }
  g_consumer.store(nullptr);
  std::signal(SIGINT, old_int);
  std::signal(SIGTERM, old_term);
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
  cmd->add_option("--group", opts->group,
                  "Consume as a member of this consumer group (committing its offsets)");
  cmd->add_option("--partition", opts->partition, "The partition to read (default 0)");
  cmd->add_option("--offset", opts->offset,
                  "Where to start: earliest, latest (default) or an offset");
  cmd->add_flag("--from-beginning", opts->from_beginning, "Start at the earliest offset");
  cmd->add_option("--max-messages", opts->max_messages, "Exit after this many records");
  cmd->add_option("--timeout-ms", opts->timeout_ms, "Exit when no record arrived for this long");
  cmd->add_option("--isolation-level", opts->isolation_level,
                  "read_uncommitted (default) or read_committed");
  cmd->add_option("--property,--formatter-property", opts->properties,
                  "Formatter property key=value (print.key, print.timestamp, print.headers, "
                  "print.offset, print.partition, print.value, key.separator, ...)");
  cmd->add_option("--consumer-property", opts->consumer_properties,
                  "Consumer config key=value (group.id, auto.offset.reset, enable.auto.commit, "
                  "auto.commit.interval.ms, session.timeout.ms, client.id, ...)");
  cmd->add_option("-X", opts->consumer_properties,
                  "Same as --consumer-property (security.protocol, ssl.*, sasl.*, ...)");
  cmd->add_option("--consumer.config,--command-config", opts->consumer_config,
                  "A properties file of consumer configs");
  cmd->callback([opts] { set_subcommand_exit_code(run_consume(*opts)); });
}

}  // namespace tarn::tools
