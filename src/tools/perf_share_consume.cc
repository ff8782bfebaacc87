// `tarn perf share-consume`: --consumers share consumers (include/tarn/share_consumer.h, a thread
// each, records as views, implicit acknowledgement) in one share group read a topic's
// --num-records records, as bench/ShareConsumePerf.java does with Kafka's KafkaShareConsumer, so
// `make bench` section 13 compares the two clients against both brokers. The group's
// share.auto.offset.reset is set to earliest first (IncrementalAlterConfigs on the GROUP
// resource), so the records already there are read. It prints the summary line of
// bench/rdkafka_perf consume, the process's CPU, and the records delivered twice:
//
//   N records consumed, B bytes, S s, R records/sec (M MB/sec), T s including connect.
//   cpu_s=C cpu_us_per_record=U
//   duplicates=D consumers=K
//
// Only the time from the first record any consumer got to the one that made --num-records
// counts (joining the group is the benchmark's, not the consumers'); CPU time (getrusage, user +
// system, every thread) covers the whole run.

#include <CLI/CLI.hpp>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "client/config_admin.h"
#include "tarn/share_consumer.h"
#include "tools/process_cpu.h"
#include "tools/subcommands.h"

namespace tarn::tools {
namespace {

using clock_type = std::chrono::steady_clock;

struct perf_share_options {
  std::string bootstrap_server;
  std::string topic;
  std::string group;
  int32_t consumers = 1;
  int64_t num_records = 0;
  bool earliest = true;
  std::vector<std::string> consumer_props;
};

// What the consumer threads share.
struct run_state {
  std::atomic<int64_t> records{0};
  std::atomic<int64_t> bytes{0};
  std::atomic<int64_t> first_ns{0};
  std::atomic<int64_t> last_ns{0};
  std::atomic<int64_t> duplicates{0};
  std::atomic<bool> failed{false};
  std::mutex seen_mutex;
  std::map<int32_t, std::vector<bool>> seen;  // offsets delivered, per partition
};

void consume(const perf_share_options& o,
             const std::vector<std::pair<std::string, std::string>>& props, run_state& s) {
  auto created = client::share_consumer::create(props);
  if (!created) {
    std::fprintf(stderr, "%s\n", created.error().message.c_str());
    s.failed = true;
    return;
  }
  auto& consumer = **created;
  consumer.subscribe({o.topic});
  client::consumer_records polled;  // one batch, so its fetch buffers are reused
  auto idle_since = clock_type::now();
  while (!s.failed && s.records.load() < o.num_records) {
    if (auto r = consumer.poll(polled, std::chrono::milliseconds(100)); !r) {
      std::fprintf(stderr, "share-consume: %s\n", r.error().message.c_str());
      s.failed = true;
      break;
    }
    // Once another consumer made the count the run is over (records polled now may be ones the
    // closing consumers gave back).
    if (s.records.load() >= o.num_records) break;
    const auto now = clock_type::now();
    if (polled.empty()) {
      if (now - idle_since > std::chrono::seconds(60)) {
        std::fprintf(stderr, "share-consume: no record for 60 s after %" PRId64 "\n",
                     s.records.load());
        s.failed = true;
      }
      continue;
    }
    idle_since = now;
    const int64_t now_ns = now.time_since_epoch().count();
    int64_t expected_zero = 0;
    s.first_ns.compare_exchange_strong(expected_zero, now_ns);
    int64_t b = 0;
    int64_t dups = 0;
    {
      std::lock_guard lock(s.seen_mutex);
      for (const auto& r : polled) {
        b += static_cast<int64_t>((r.key ? r.key->size() : 0) + (r.value ? r.value->size() : 0));
        auto& bits = s.seen[r.partition];
        const auto at = static_cast<size_t>(r.offset);
        if (bits.size() <= at) bits.resize(std::max(at + 1, bits.size() * 2));
        if (bits[at]) ++dups;
        bits[at] = true;
      }
    }
    s.bytes += b;
    s.duplicates += dups;
    if (s.records.fetch_add(static_cast<int64_t>(polled.size())) +
            static_cast<int64_t>(polled.size()) >=
        o.num_records) {
      int64_t zero = 0;
      s.last_ns.compare_exchange_strong(zero, now_ns);
    }
  }
  polled.clear();
  (void)consumer.close();  // accepts the last poll's records, gives back the rest, leaves
}

int run_perf_share_consume(const perf_share_options& o) {
  const double cpu_start = process_cpu_seconds();
  const auto start = clock_type::now();
  std::vector<std::pair<std::string, std::string>> props = {
      {"bootstrap.servers", o.bootstrap_server}, {"group.id", o.group}};
  for (const auto& kv : o.consumer_props) {
    const auto eq = kv.find('=');
    if (eq == std::string::npos) {
      std::fprintf(stderr, "--consumer-props %s: expected key=value\n", kv.c_str());
      return 1;
    }
    props.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
  }
  if (o.earliest) {
    auto admin = client::config_admin::connect(o.bootstrap_server);
    if (!admin) {
      std::fprintf(stderr, "%s\n", admin.error().message.c_str());
      return 1;
    }
    auto set = (*admin)->alter_configs(
        client::config_resource_type::group, o.group,
        {{"share.auto.offset.reset", client::config_op::set, std::string("earliest")}});
    if (!set) {
      std::fprintf(stderr, "share.auto.offset.reset=earliest for %s: %s\n", o.group.c_str(),
                   set.error().message.c_str());
      return 1;
    }
  }
  run_state s;
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(o.consumers));
  for (int32_t i = 0; i < o.consumers; ++i) {
    threads.emplace_back([&] { consume(o, props, s); });
  }
  for (auto& t : threads) t.join();
  if (s.failed) return 1;
  const int64_t records = s.records.load();
  const double secs = static_cast<double>(s.last_ns.load() - s.first_ns.load()) / 1e9;
  if (records < 2 || secs <= 0) {
    std::fprintf(stderr, "consumed too few records to time\n");
    return 1;
  }
  const double total_s = std::chrono::duration<double>(clock_type::now() - start).count();
  const double cpu = process_cpu_seconds() - cpu_start;
  const auto bytes = s.bytes.load();
  std::printf("%" PRId64 " records consumed, %" PRId64
              " bytes, %.3f s, %f records/sec (%.2f MB/sec), %.3f s including connect.\n",
              records, bytes, secs, static_cast<double>(records) / secs,
              static_cast<double>(bytes) / secs / (1024.0 * 1024.0), total_s);
  std::printf("cpu_s=%.3f cpu_us_per_record=%.4f\n", cpu, cpu * 1e6 / static_cast<double>(records));
  std::printf("duplicates=%" PRId64 " consumers=%d\n", s.duplicates.load(), o.consumers);
  return 0;
}

}  // namespace

void add_perf_share_consume(CLI::App& perf) {
  auto o = std::make_shared<perf_share_options>();
  auto* cmd = perf.add_subcommand(
      "share-consume",
      "Read a topic with N share consumers of one share group (KIP-932); records/s, MB/s, CPU");
  cmd->add_option("--bootstrap-server", o->bootstrap_server, "host:port[,host:port...]")
      ->required();
  cmd->add_option("--topic", o->topic, "The topic to read.")->required();
  cmd->add_option("--group", o->group, "The share group (a new one reads from the start).")
      ->required();
  cmd->add_option("--consumers", o->consumers, "Share consumers, a thread each (default 1)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--num-records", o->num_records,
                  "Stop once all consumers together have this many records")
      ->required()
      ->check(CLI::PositiveNumber);
  cmd->add_flag("!--no-earliest", o->earliest,
                "Leave the group's share.auto.offset.reset as it is (default: set earliest)");
  cmd->add_option("--consumer-props", o->consumer_props,
                  "Share consumer settings as key=value (KafkaShareConsumer's names)");
  cmd->callback([o] { set_subcommand_exit_code(run_perf_share_consume(*o)); });
}

}  // namespace tarn::tools
