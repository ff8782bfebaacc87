// `tarn perf produce`: kafka-producer-perf-test with tarn's producer. Same options (the common
// ones) and the same output lines, so results compare line for line with Kafka's tool.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "client/producer_config.h"
#include "tarn/producer.h"
#include "tools/subcommands.h"

namespace tarn::tools {
namespace {

using clock_type = std::chrono::steady_clock;

struct perf_options {
  std::string bootstrap_server;
  std::string topic;
  int64_t num_records = 0;
  int32_t record_size = 0;
  double throughput = -1;
  std::vector<std::string> producer_props;
  std::string producer_config_file;
  int64_t reporting_interval_ms = 5000;
};

// Kafka's ProducerPerformance.Stats: a window line every reporting interval, then the total
// with percentiles of sampled latencies. Called only on the producer's I/O thread.
class stats {
 public:
  stats(int64_t num_records, int64_t reporting_interval_ms)
      : sampling_(num_records / std::min<int64_t>(std::max<int64_t>(num_records, 1), 500000)),
        reporting_interval_ms_(reporting_interval_ms),
        start_(clock_type::now()),
        window_start_(start_) {
    latencies_.reserve(static_cast<size_t>(std::min<int64_t>(num_records, 500000)));
  }

  void record(int64_t latency_ms, int64_t bytes, clock_type::time_point now) {
    ++count_;
    bytes_ += bytes;
    total_latency_ += latency_ms;
    max_latency_ = std::max(max_latency_, latency_ms);
    ++window_count_;
    window_bytes_ += bytes;
    window_total_latency_ += latency_ms;
    window_max_latency_ = std::max(window_max_latency_, latency_ms);
    if (iteration_++ % std::max<int64_t>(sampling_, 1) == 0) latencies_.push_back(latency_ms);
    if (now - window_start_ >= std::chrono::milliseconds(reporting_interval_ms_)) {
      print_window(now);
      window_start_ = now;
      window_count_ = window_bytes_ = window_total_latency_ = window_max_latency_ = 0;
    }
  }

  void print_total() {
    const double elapsed_ms = std::max<double>(
        1, std::chrono::duration<double, std::milli>(clock_type::now() - start_).count());
    const double records_per_sec = 1000.0 * static_cast<double>(count_) / elapsed_ms;
    const double mb_per_sec = 1000.0 * static_cast<double>(bytes_) / elapsed_ms / (1024.0 * 1024.0);
    std::sort(latencies_.begin(), latencies_.end());
    auto percentile = [&](double p) -> long long {
      if (latencies_.empty()) return 0;
      return latencies_[static_cast<size_t>(p * static_cast<double>(latencies_.size()))];
    };
    std::printf(
        "%lld records sent, %f records/sec (%.2f MB/sec), %.2f ms avg latency, %.2f ms max "
        "latency, %lld ms 50th, %lld ms 95th, %lld ms 99th, %lld ms 99.9th.\n",
        static_cast<long long>(count_), records_per_sec, mb_per_sec,
        count_ ? static_cast<double>(total_latency_) / static_cast<double>(count_) : 0.0,
        static_cast<double>(max_latency_), percentile(0.5), percentile(0.95), percentile(0.99),
        percentile(0.999));
  }

 private:
  void print_window(clock_type::time_point now) {
    const double elapsed_ms =
        std::chrono::duration<double, std::milli>(now - window_start_).count();
    std::printf(
        "%lld records sent, %.1f records/sec (%.2f MB/sec), %.1f ms avg latency, %.1f ms max "
        "latency.\n",
        static_cast<long long>(window_count_),
        1000.0 * static_cast<double>(window_count_) / elapsed_ms,
        1000.0 * static_cast<double>(window_bytes_) / elapsed_ms / (1024.0 * 1024.0),
        window_count_
            ? static_cast<double>(window_total_latency_) / static_cast<double>(window_count_)
            : 0.0,
        static_cast<double>(window_max_latency_));
    std::fflush(stdout);
  }

  const int64_t sampling_;
  const int64_t reporting_interval_ms_;
  const clock_type::time_point start_;
  clock_type::time_point window_start_;
  int64_t iteration_ = 0;
  int64_t count_ = 0, bytes_ = 0, total_latency_ = 0, max_latency_ = 0;
  int64_t window_count_ = 0, window_bytes_ = 0, window_total_latency_ = 0, window_max_latency_ = 0;
  std::vector<int64_t> latencies_;
};

int run_perf_produce(const perf_options& o) {
  std::vector<client::property> props;
  if (!o.producer_config_file.empty()) {
    std::ifstream in(o.producer_config_file);
    std::stringstream text;
    text << in.rdbuf();
    auto parsed = client::parse_properties_text(text.str());
    if (!in || !parsed) {
      std::fprintf(stderr, "Cannot read %s\n", o.producer_config_file.c_str());
      return 1;
    }
    props = *parsed;
  }
  for (const auto& p : o.producer_props) {
    auto eq = p.find('=');
    if (eq == std::string::npos) {
      std::fprintf(stderr, "Invalid producer property %s: expected key=value\n", p.c_str());
      return 1;
    }
    props.emplace_back(p.substr(0, eq), p.substr(eq + 1));
  }
  // --bootstrap-server takes precedence, as in Kafka's tool; client.id as Kafka's default.
  if (!o.bootstrap_server.empty()) props.emplace_back("bootstrap.servers", o.bootstrap_server);
  if (std::none_of(props.begin(), props.end(),
                   [](const auto& kv) { return kv.first == "client.id"; }))
    props.emplace_back("client.id", "perf-producer-client");
  auto producer = client::producer::create(props);
  if (!producer) {
    std::fprintf(stderr, "%s\n", producer.error().message.c_str());
    return 1;
  }
  // Kafka's payload: random uppercase letters.
  std::string payload(static_cast<size_t>(o.record_size), 'A');
  std::mt19937 random(12345);
  for (auto& ch : payload) ch = static_cast<char>('A' + random() % 26);

  stats s(o.num_records, o.reporting_interval_ms);
  int64_t failures = 0;
  client::producer_record record;
  record.topic = o.topic;
  record.value = payload;
  const auto start = clock_type::now();
  for (int64_t i = 0; i < o.num_records; ++i) {
    const auto sent_at = clock_type::now();
    auto sent = (*producer)->send_async(
        record, [&s, &failures, sent_at, bytes = o.record_size](const client::record_metadata&,
                                                                const client::producer_error* e) {
          const auto now = clock_type::now();
          if (e) {
            ++failures;
            return;
          }
          s.record(std::chrono::duration_cast<std::chrono::milliseconds>(now - sent_at).count(),
                   bytes, now);
        });
    if (!sent) {
      std::fprintf(stderr, "%s\n", sent.error().message.c_str());
      return 1;
    }
    if (o.throughput > 0) {  // ThroughputThrottler: stay at or below the target rate
      const auto due = start + std::chrono::duration_cast<clock_type::duration>(
                                   std::chrono::duration<double>((i + 1) / o.throughput));
      if (due > clock_type::now()) std::this_thread::sleep_until(due);
    }
  }
  (*producer)->flush();
  (*producer)->close();
  s.print_total();
  if (failures) std::fprintf(stderr, "%lld records failed\n", static_cast<long long>(failures));
  return failures ? 1 : 0;
}

}  // namespace

void add_perf(CLI::App& app) {
  auto* perf = app.add_subcommand("perf", "Performance tools (like kafka-*-perf-test)");
  perf->require_subcommand(1);
  auto o = std::make_shared<perf_options>();
  auto* cmd = perf->add_subcommand("produce", "kafka-producer-perf-test with tarn's producer");
  cmd->add_option("--bootstrap-server", o->bootstrap_server, "host:port[,host:port...]");
  cmd->add_option("--topic", o->topic, "Produce records to this topic.")->required();
  cmd->add_option("--num-records", o->num_records, "Number of records to produce.")->required();
  cmd->add_option("--record-size", o->record_size, "Record size in bytes.")->required();
  cmd->add_option("--throughput", o->throughput,
                  "Throttle to about THROUGHPUT records/sec; -1 disables throttling.")
      ->required();
  cmd->add_option("--producer-props,--command-property", o->producer_props,
                  "Producer settings as key=value (Java's names)");
  cmd->add_option("--producer.config,--command-config", o->producer_config_file,
                  "A Java .properties file of producer settings");
  cmd->add_option("--reporting-interval", o->reporting_interval_ms,
                  "Milliseconds between window reports (default 5000)");
  cmd->callback([o] { set_subcommand_exit_code(run_perf_produce(*o)); });
}

}  // namespace tarn::tools
