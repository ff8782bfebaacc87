// `tarn perf consume`: reads one partition from its start to its end with tarn's consumer
// (include/tarn/consumer.h, assign mode, records as views into the fetched bytes:
// tarn/consumer_record_view.h), --passes times over, and prints what
// bench/rdkafka_perf consume prints for librdkafka's consumer, so `make bench` compares the two
// line for line, plus the process's CPU time per record:
//
//   N records consumed, B bytes, S s, R records/sec (M MB/sec), T s including connect.
//   cpu_s=C cpu_us_per_record=U
//
// Only the time from a pass's first record to its last counts (as rdkafka_perf): the seek and
// the first Fetch of each pass are the benchmark's, not the consumer's. CPU time (getrusage,
// user + system, every thread) covers the whole run.

#include <CLI/CLI.hpp>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "tarn/consumer.h"
#include "tools/process_cpu.h"
#include "tools/subcommands.h"

namespace tarn::tools {
namespace {

using clock_type = std::chrono::steady_clock;

struct perf_consume_options {
  std::string bootstrap_server;
  std::string topic;
  int32_t partition = 0;
  int64_t num_records = -1;  // -1: to the partition's end
  int32_t passes = 1;
  std::vector<std::string> consumer_props;
};

int run_perf_consume(const perf_consume_options& o) {
  const double cpu_start = process_cpu_seconds();
  const auto start = clock_type::now();
  std::vector<std::pair<std::string, std::string>> props = {
      {"bootstrap.servers", o.bootstrap_server}};
  for (const auto& kv : o.consumer_props) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos) {
      std::fprintf(stderr, "--consumer-props %s: expected key=value\n", kv.c_str());
      return 1;
    }
    props.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
  }
  auto created = client::consumer::create(props);
  if (!created) {
    std::fprintf(stderr, "%s\n", created.error().message.c_str());
    return 1;
  }
  auto& consumer = **created;
  const client::topic_partition tp{o.topic, o.partition};
  consumer.assign({tp});
  auto ends = consumer.end_offsets({tp});
  if (!ends) {
    std::fprintf(stderr, "%s\n", ends.error().message.c_str());
    return 1;
  }
  const int64_t end = ends->at(tp);
  int64_t records = 0;
  int64_t bytes = 0;
  clock_type::duration timed{};
  client::consumer_records polled;  // one batch, so its fetch buffers are reused
  for (int32_t pass = 0; pass < o.passes; ++pass) {
    consumer.seek(tp, client::offset_beginning);
    int64_t pass_records = 0;
    clock_type::time_point first;
    clock_type::time_point last;
    auto idle_since = clock_type::now();
    while (o.num_records < 0 || records < o.num_records) {
      if (auto r = consumer.poll(polled, std::chrono::milliseconds(100)); !r) {
        std::fprintf(stderr, "consume: %s\n", r.error().message.c_str());
        return 1;
      }
      const auto now = clock_type::now();
      if (polled.empty()) {
        if (consumer.position(tp).value_or(0) >= end) break;
        if (now - idle_since > std::chrono::seconds(30)) {
          std::fprintf(stderr, "no record for 30 s after %" PRId64 "\n", records);
          return 1;
        }
        continue;
      }
      idle_since = now;
      if (pass_records == 0) first = now;
      last = now;
      for (const auto& r : polled) {
        bytes +=
            static_cast<int64_t>((r.key ? r.key->size() : 0) + (r.value ? r.value->size() : 0));
      }
      pass_records += static_cast<int64_t>(polled.size());
      records += static_cast<int64_t>(polled.size());
      if (polled.back().offset + 1 >= end) break;
    }
    if (pass_records > 0) timed += last - first;
  }
  (void)consumer.close();
  const double total_s = std::chrono::duration<double>(clock_type::now() - start).count();
  const double secs = std::chrono::duration<double>(timed).count();
  if (records < 2 || secs <= 0) {
    std::fprintf(stderr, "consumed too few records to time\n");
    return 1;
  }
  const double cpu = process_cpu_seconds() - cpu_start;
  std::printf("%" PRId64 " records consumed, %" PRId64
              " bytes, %.3f s, %f records/sec (%.2f MB/sec), %.3f s including connect.\n",
              records, bytes, secs, static_cast<double>(records) / secs,
              static_cast<double>(bytes) / secs / (1024.0 * 1024.0), total_s);
  std::printf("cpu_s=%.3f cpu_us_per_record=%.4f\n", cpu, cpu * 1e6 / static_cast<double>(records));
  return 0;
}

}  // namespace

void add_perf_consume(CLI::App& perf) {
  auto o = std::make_shared<perf_consume_options>();
  auto* cmd = perf.add_subcommand(
      "consume", "Read a partition start to end with tarn's consumer; records/s, MB/s, CPU");
  cmd->add_option("--bootstrap-server", o->bootstrap_server, "host:port[,host:port...]")
      ->required();
  cmd->add_option("--topic", o->topic, "The topic to read.")->required();
  cmd->add_option("--partition", o->partition, "The partition to read (default 0).");
  cmd->add_option("--num-records", o->num_records,
                  "Stop after this many records (default: the partition's end, every pass)");
  cmd->add_option("--passes", o->passes, "Read the partition this many times (default 1)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--consumer-props", o->consumer_props,
                  "Consumer settings as key=value (Java's names)");
  cmd->callback([o] { set_subcommand_exit_code(run_perf_consume(*o)); });
}

}  // namespace tarn::tools
