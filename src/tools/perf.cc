// `tarn perf produce`: kafka-producer-perf-test with tarn's producer. Same options (the common
// ones) and the same output lines, so results compare line for line with Kafka's tool.
// (`tarn perf consume` is in perf_consume.cc, `tarn perf share-consume` in
// perf_share_consume.cc.)
// --transactional-id sends in transactions, committed every --transaction-duration-ms (Kafka's
// option, 3000 by default) or every --transaction-records records (tarn's).
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
#include "tools/perf_payload.h"
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
  int64_t warmup_records = 0;
  std::string payload_file;
  std::string payload_delimiter = "\\n";
  bool payload_monotonic = false;
  std::string key_distribution = "none";
  int32_t record_key_range = 0;
  int64_t random_seed = 0;
  std::string transactional_id;
  int64_t transaction_duration_ms = 0;  // 0: 3000 when transactional and no record count
  int64_t transaction_records = 0;      // 0: by duration
};

int64_t wall_clock_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Kafka's ProducerPerformance.Stats: a window line every reporting interval, then the total
// with percentiles of sampled latencies. Called only on the producer's I/O thread.
class stats {
 public:
  stats(int64_t num_records, int64_t reporting_interval_ms, bool steady_state = false)
      : steady_state_(steady_state),
        sampling_(num_records / std::min<int64_t>(std::max<int64_t>(num_records, 1), 500000)),
        reporting_interval_ms_(reporting_interval_ms),
        start_(clock_type::now()),
        window_start_ms_(wall_clock_ms()) {
    latencies_.reserve(static_cast<size_t>(std::min<int64_t>(num_records, 500000)));
  }

  // now_ms: the wall clock, as Kafka's Stats.record takes System.currentTimeMillis().
  void record(int64_t latency_ms, int64_t bytes, int64_t now_ms) {
    ++count_;
    bytes_ += bytes;
    total_latency_ += latency_ms;
    max_latency_ = std::max(max_latency_, latency_ms);
    ++window_count_;
    window_bytes_ += bytes;
    window_total_latency_ += latency_ms;
    window_max_latency_ = std::max(window_max_latency_, latency_ms);
    // Every sampling_-th latency, as Kafka's iteration % sampling == 0, counted down: a division
    // a record was a few percent of the tool's CPU at 100 B records.
    if (--until_sample_ == 0) {
      latencies_.push_back(latency_ms);
      until_sample_ = std::max<int64_t>(sampling_, 1);
    }
    if (now_ms - window_start_ms_ >= reporting_interval_ms_) {
      if (steady_state_ && count_ == window_count_) std::printf("In steady state.\n");
      if (!suppress_print_) print_window(now_ms);
      window_start_ms_ = now_ms;
      window_count_ = window_bytes_ = window_total_latency_ = window_max_latency_ = 0;
    }
  }

  // After warm-up the steady-state stats print the windows (Kafka's suppressPrinting).
  void suppress_printing() { suppress_print_ = true; }

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
        "%lld%s records sent, %f records/sec (%.2f MB/sec), %.2f ms avg latency, %.2f ms max "
        "latency, %lld ms 50th, %lld ms 95th, %lld ms 99th, %lld ms 99.9th.\n",
        static_cast<long long>(count_), steady_state_ ? " steady state" : "", records_per_sec,
        mb_per_sec,
        count_ ? static_cast<double>(total_latency_) / static_cast<double>(count_) : 0.0,
        static_cast<double>(max_latency_), percentile(0.5), percentile(0.95), percentile(0.99),
        percentile(0.999));
  }

 private:
  void print_window(int64_t now_ms) {
    const auto elapsed_ms = static_cast<double>(std::max<int64_t>(now_ms - window_start_ms_, 1));
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

  const bool steady_state_;
  bool suppress_print_ = false;
  const int64_t sampling_;
  const int64_t reporting_interval_ms_;
  const clock_type::time_point start_;
  int64_t window_start_ms_;
  int64_t until_sample_ = 1;  // records until the next sampled latency (the first is)
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
  const bool transactional = !o.transactional_id.empty();
  if (transactional) props.emplace_back("transactional.id", o.transactional_id);
  const int64_t transaction_duration_ms = o.transaction_duration_ms > 0
                                              ? o.transaction_duration_ms
                                              : (o.transaction_records > 0 ? 0 : 3000);
  auto producer = client::producer::create(props);
  if (!producer) {
    std::fprintf(stderr, "%s\n", producer.error().message.c_str());
    return 1;
  }
  if (transactional) {
    if (auto init = (*producer)->init_transactions(); !init) {
      std::fprintf(stderr, "initTransactions failed: %s\n", init.error().message.c_str());
      return 1;
    }
  }
  // The open transaction: its start (wall clock ms, as Kafka's tool) and records so far.
  bool in_transaction = false;
  int64_t transaction_start_ms = 0;
  int64_t transaction_size = 0;
  auto commit = [&]() -> bool {
    in_transaction = false;
    transaction_size = 0;
    if (auto committed = (*producer)->commit_transaction(); !committed) {
      std::fprintf(stderr, "commitTransaction failed: %s\n", committed.error().message.c_str());
      return false;
    }
    return true;
  };
  // Kafka's payloads: random uppercase letters drawn anew for every record (--record-size),
  // lines of a file picked at random (--payload-file), or the record's index
  // (--payload-monotonic).
  std::mt19937_64 random(static_cast<uint64_t>(o.random_seed));
  payload_letters letters(static_cast<uint64_t>(o.random_seed));
  std::string payload(static_cast<size_t>(std::max(o.record_size, 0)), 'A');
  std::vector<std::string> payloads;
  if (!o.payload_file.empty()) {
    std::ifstream in(o.payload_file, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    const std::string delimiter = o.payload_delimiter == "\\n" ? "\n" : o.payload_delimiter;
    const std::string all = text.str();
    for (size_t at = 0; at < all.size() && !delimiter.empty();) {
      size_t end = all.find(delimiter, at);
      if (end == std::string::npos) end = all.size();
      if (end > at) payloads.push_back(all.substr(at, end - at));
      at = end + delimiter.size();
    }
    if (payloads.empty()) {
      std::fprintf(stderr, "File does not exist or empty file provided.\n");
      return 1;
    }
    std::printf("Number of messages read: %zu\n", payloads.size());
  }
  enum class key_distribution { none, range, random } keys = key_distribution::none;
  if (o.key_distribution == "range") keys = key_distribution::range;
  if (o.key_distribution == "random") keys = key_distribution::random;

  stats s(o.num_records, o.reporting_interval_ms);
  std::unique_ptr<stats> steady;
  client::producer_record record;
  record.topic = o.topic;
  record.value = payload;
  std::string key, monotonic;
  const auto start = clock_type::now();
  const int64_t start_ms = wall_clock_ms();
  struct callback_context {
    int64_t start_ms;
    stats* total;
    stats* steady = nullptr;
    int64_t failures = 0;  // the I/O thread's; read after close()
  } context{start_ms, &s};
  for (int64_t i = 0; i < o.num_records; ++i) {
    if (!payloads.empty()) {
      record.value = payloads[random() % payloads.size()];
    } else if (o.record_size > 0) {
      letters.fill(payload);  // send() copies the bytes, so the buffer is reused
    } else if (o.payload_monotonic) {
      monotonic = std::to_string(i);
      record.value = monotonic;
    }
    if (keys != key_distribution::none) {
      const auto k =
          keys == key_distribution::range
              ? i % o.record_key_range
              : static_cast<int64_t>(random() % static_cast<uint64_t>(o.record_key_range));
      key = std::to_string(k);
      record.key = key;
    }
    if (o.warmup_records > 0 && i == o.warmup_records) {
      steady =
          std::make_unique<stats>(o.num_records - o.warmup_records, o.reporting_interval_ms, true);
      s.suppress_printing();
      context.steady = steady.get();
    }
    // As Kafka's tool, the send time is the wall clock in ms (System.currentTimeMillis), read
    // once: it is also the record's timestamp, so send() reads no clock of its own for it.
    // The callback captures 16 trivially copyable bytes, so std::function keeps it inline
    // (no allocation per record): the context, and the send time since the start, the
    // steady-state flag and the size packed in one word.
    record.timestamp_ms = wall_clock_ms();
    if (transactional && !in_transaction) {
      if (auto begun = (*producer)->begin_transaction(); !begun) {
        std::fprintf(stderr, "beginTransaction failed: %s\n", begun.error().message.c_str());
        return 1;
      }
      in_transaction = true;
      transaction_start_ms = *record.timestamp_ms;
    }
    const auto sent_ms =
        static_cast<uint64_t>(std::max<int64_t>(*record.timestamp_ms - start_ms, 0));
    const uint64_t packed = sent_ms << 25 | uint64_t{steady != nullptr} << 24 |
                            std::min<uint64_t>(record.value->size(), (1u << 24) - 1);
    auto sent = (*producer)->send_async(
        record, [context = &context, packed](const client::record_metadata&,
                                             const client::producer_error* e) {
          if (e) {
            ++context->failures;
            return;
          }
          const int64_t now = wall_clock_ms();  // one clock read per record
          const int64_t latency =
              std::max<int64_t>(now - context->start_ms - static_cast<int64_t>(packed >> 25), 0);
          const auto bytes = static_cast<int64_t>(packed & ((1u << 24) - 1));
          context->total->record(latency, bytes, now);
          if (packed >> 24 & 1) context->steady->record(latency, bytes, now);
        });
    if (!sent) {
      std::fprintf(stderr, "%s\n", sent.error().message.c_str());
      return 1;
    }
    if (in_transaction) {
      ++transaction_size;
      const bool by_count = o.transaction_records > 0 && transaction_size >= o.transaction_records;
      const bool by_time = transaction_duration_ms > 0 &&
                           *record.timestamp_ms - transaction_start_ms >= transaction_duration_ms;
      if ((by_count || by_time) && !commit()) return 1;
    }
    if (o.throughput > 0) {  // ThroughputThrottler: stay at or below the target rate
      const auto due = start + std::chrono::duration_cast<clock_type::duration>(
                                   std::chrono::duration<double>((i + 1) / o.throughput));
      if (due > clock_type::now()) std::this_thread::sleep_until(due);
    }
  }
  if (in_transaction && !commit()) return 1;
  (*producer)->flush();
  (*producer)->close();
  s.print_total();
  if (steady) steady->print_total();
  if (context.failures) {
    std::fprintf(stderr, "%lld records failed\n", static_cast<long long>(context.failures));
  }
  return context.failures ? 1 : 0;
}

}  // namespace

void add_perf(CLI::App& app) {
  auto* perf = app.add_subcommand("perf", "Performance tools (like kafka-*-perf-test)");
  perf->require_subcommand(1);
  auto o = std::make_shared<perf_options>();
  add_perf_consume(*perf);
  add_perf_share_consume(*perf);
  auto* cmd = perf->add_subcommand("produce", "kafka-producer-perf-test with tarn's producer");
  cmd->add_option("--bootstrap-server", o->bootstrap_server, "host:port[,host:port...]");
  cmd->add_option("--topic", o->topic, "Produce records to this topic.")->required();
  cmd->add_option("--num-records", o->num_records, "Number of records to produce.")->required();
  auto* size = cmd->add_option("--record-size", o->record_size, "Record size in bytes.");
  auto* file = cmd->add_option("--payload-file", o->payload_file,
                               "File of payloads (split at --payload-delimiter), picked at random");
  auto* monotonic = cmd->add_flag("--payload-monotonic", o->payload_monotonic,
                                  "Payload is the record's index as a decimal string");
  size->excludes(file, monotonic);
  file->excludes(monotonic);
  cmd->add_option("--payload-delimiter", o->payload_delimiter,
                  "Delimiter of --payload-file (default \\n, a new line)");
  cmd->add_option("--throughput", o->throughput,
                  "Throttle to about THROUGHPUT records/sec; -1 disables throttling.")
      ->required();
  cmd->add_option("--producer-props,--command-property", o->producer_props,
                  "Producer settings as key=value (Java's names)");
  cmd->add_option("--producer.config,--command-config", o->producer_config_file,
                  "A Java .properties file of producer settings");
  cmd->add_option("--reporting-interval", o->reporting_interval_ms,
                  "Milliseconds between window reports (default 5000)");
  cmd->add_option("--warmup-records", o->warmup_records,
                  "Records not counted in the steady-state summary printed last (default 0)");
  cmd->add_option("--key-distribution", o->key_distribution,
                  "none (null keys), range (keys 0..KEY-RANGE-1 in turn) or random")
      ->check(CLI::IsMember({"none", "range", "random"}));
  cmd->add_option("--record-key-range", o->record_key_range,
                  "Keys are decimal integers in [0, KEY-RANGE) (range and random)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--random-seed", o->random_seed,
                  "Seed of the keys and payloads drawn at random (default 0)");
  cmd->add_option("--transactional-id", o->transactional_id,
                  "Send in transactions with this transactional.id (Kafka's option)");
  cmd->add_option("--transaction-duration-ms", o->transaction_duration_ms,
                  "Commit the transaction after this many ms (default 3000 with "
                  "--transactional-id, unless --transaction-records is given)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--transaction-records", o->transaction_records,
                  "Commit the transaction every N records (tarn's option)")
      ->check(CLI::PositiveNumber);
  cmd->callback([o] {
    if (o->transactional_id.empty() &&
        (o->transaction_records > 0 || o->transaction_duration_ms > 0)) {
      std::fprintf(stderr,
                   "--transaction-records and --transaction-duration-ms need "
                   "--transactional-id\n");
      return set_subcommand_exit_code(1);
    }
    if (o->record_size <= 0 && o->payload_file.empty() && !o->payload_monotonic) {
      std::fprintf(stderr,
                   "Note that you must provide exactly one of --record-size, --payload-file or "
                   "--payload-monotonic.\n");
      return set_subcommand_exit_code(1);
    }
    if (o->key_distribution != "none" && o->record_key_range <= 0) {
      std::fprintf(stderr, "--record-key-range is required with --key-distribution %s\n",
                   o->key_distribution.c_str());
      return set_subcommand_exit_code(1);
    }
    set_subcommand_exit_code(run_perf_produce(*o));
  });
}

}  // namespace tarn::tools
