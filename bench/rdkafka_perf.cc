// rdkafka_perf: librdkafka (Debian's librdkafka-dev, C API) as a load generator, so scripts/bench
// can set the producer library beside `tarn perf produce` and Kafka's kafka-producer-perf-test,
// and drive both brokers with the same C consumer.
//
//   rdkafka_perf produce --bootstrap-server H:P --topic T --num-records N --record-size S
//                        --throughput R [--producer-props k=v ...]
//                        [--key-distribution none|range --record-key-range K]
//   rdkafka_perf consume --bootstrap-server H:P --topic T [--partition P] [--num-records N]
//                        [--passes K] [--consumer-props k=v ...]
//   rdkafka_perf e2e     --bootstrap-server H:P --topic T --num-records N --record-size S
//                        --throughput R [--producer-props k=v ...]
//
// `produce` mirrors org.apache.kafka.tools.ProducerPerformance: a random A-Z payload drawn anew
// for every record (tools/perf_payload.h, as tarn perf produce) and copied into librdkafka, a
// throttle to R records/s (-1: none), the latency of a record from its send call to its delivery
// report, and the same final summary line (percentiles with fractional ms). Producer properties
// take Java's names; librdkafka accepts linger.ms, batch.size, acks, compression.type and
// enable.idempotence under those names. The partitioner is murmur2_random, Java's for keyed records
// (librdkafka's default hashes with CRC32); null keys are sticky in both. `consume` reads one
// partition from its start to its end with the legacy simple consumer (no group), K times over so
// that a run from the page cache lasts long enough to time. `e2e` produces records stamped with the
// send time to partition 0 at a fixed rate while a consumer in the same process reads them:
// produce-to-consume latency.
#include <librdkafka/rdkafka.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tools/perf_payload.h"

namespace {

using steady = std::chrono::steady_clock;

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(steady::now().time_since_epoch())
      .count();
}

struct options {
  std::string bootstrap_server;
  std::string topic;
  int64_t num_records = -1;
  int record_size = 1024;
  double throughput = -1;
  std::vector<std::string> props;
  std::string key_distribution = "none";
  int64_t record_key_range = 0;
  int partition = 0;
  int passes = 1;
};

// Latency samples in microseconds; percentiles as ProducerPerformance takes them (index p * n).
struct latency_stats {
  std::vector<uint32_t> samples_us;
  double max_ms = 0;
  double sum_ms = 0;

  void add(int64_t latency_ns) {
    double ms = static_cast<double>(latency_ns) / 1e6;
    samples_us.push_back(static_cast<uint32_t>(std::min<int64_t>(latency_ns / 1000, UINT32_MAX)));
    max_ms = std::max(max_ms, ms);
    sum_ms += ms;
  }
  // Sorts the samples; call once, after the last add().
  std::vector<double> percentiles_ms(const std::vector<double>& ps) {
    std::sort(samples_us.begin(), samples_us.end());
    std::vector<double> out;
    for (double p : ps) {
      if (samples_us.empty()) {
        out.push_back(0);
        continue;
      }
      auto i = std::min(samples_us.size() - 1, static_cast<size_t>(p * samples_us.size()));
      out.push_back(samples_us[i] / 1000.0);
    }
    return out;
  }
};

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "rdkafka_perf: %s\n", what.c_str());
  std::exit(1);
}

void set(rd_kafka_conf_t* conf, const std::string& key, const std::string& value) {
  char err[512];
  if (rd_kafka_conf_set(conf, key.c_str(), value.c_str(), err, sizeof err) != RD_KAFKA_CONF_OK) {
    die(key + "=" + value + ": " + err);
  }
}

void set_props(rd_kafka_conf_t* conf, const std::vector<std::string>& props) {
  for (const auto& kv : props) {
    auto eq = kv.find('=');
    if (eq == std::string::npos) die("a property is key=value, got '" + kv + "'");
    set(conf, kv.substr(0, eq), kv.substr(eq + 1));
  }
}

rd_kafka_t* make_client(rd_kafka_type_t type, rd_kafka_conf_t* conf) {
  char err[512];
  rd_kafka_t* rk = rd_kafka_new(type, conf, err, sizeof err);
  if (rk == nullptr) die(std::string("rd_kafka_new: ") + err);
  return rk;
}

// Paces a sender to `rate` records/s, like Kafka's ThroughputThrottler; rate <= 0 never waits.
class throttler {
 public:
  throttler(double rate, int64_t start_ns) : rate_(rate), start_ns_(start_ns) {}
  void wait_for(int64_t sent, rd_kafka_t* rk) const {
    if (rate_ <= 0) return;
    auto due = start_ns_ + static_cast<int64_t>(static_cast<double>(sent) * 1e9 / rate_);
    while (true) {
      int64_t ahead_ns = due - now_ns();
      if (ahead_ns <= 0) return;
      rd_kafka_poll(rk, 0);
      std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<int64_t>(ahead_ns, 1000000)));
    }
  }

 private:
  double rate_;
  int64_t start_ns_;
};

// ---- produce ---------------------------------------------------------------------------------

struct produce_state {
  latency_stats stats;
  int64_t acked = 0;
  int64_t failed = 0;
  std::string first_error;
  // The current reporting window, printed every 5 s like ProducerPerformance.
  int64_t window_start_ns = 0;
  int64_t window_count = 0;
  double window_max_ms = 0;
  double window_sum_ms = 0;
  int record_size = 0;
};

void delivery_report(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
  auto* s = static_cast<produce_state*>(opaque);
  int64_t now = now_ns();
  if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    if (s->failed++ == 0) s->first_error = rd_kafka_err2str(m->err);
    return;
  }
  int64_t sent_ns = reinterpret_cast<intptr_t>(m->_private);
  int64_t latency_ns = now - sent_ns;
  s->stats.add(latency_ns);
  ++s->acked;
  double ms = static_cast<double>(latency_ns) / 1e6;
  ++s->window_count;
  s->window_sum_ms += ms;
  s->window_max_ms = std::max(s->window_max_ms, ms);
  int64_t elapsed_ns = now - s->window_start_ns;
  if (elapsed_ns >= 5'000'000'000) {
    double secs = static_cast<double>(elapsed_ns) / 1e9;
    double rate = static_cast<double>(s->window_count) / secs;
    std::printf("%" PRId64
                " records sent, %.1f records/sec (%.2f MB/sec), %.1f ms avg latency, "
                "%.1f ms max latency.\n",
                s->window_count, rate, rate * s->record_size / (1024.0 * 1024.0),
                s->window_sum_ms / static_cast<double>(s->window_count), s->window_max_ms);
    std::fflush(stdout);
    s->window_start_ns = now;
    s->window_count = 0;
    s->window_sum_ms = 0;
    s->window_max_ms = 0;
  }
}

int run_produce(const options& o) {
  if (o.num_records <= 0) die("--num-records must be positive");
  if (o.key_distribution != "none" && o.record_key_range <= 0) {
    die("--key-distribution range needs --record-key-range > 0");
  }
  produce_state state;
  state.record_size = o.record_size;
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  set(conf, "bootstrap.servers", o.bootstrap_server);
  set(conf, "partitioner", "murmur2_random");
  // Java's defaults where librdkafka's differ, so "equivalent settings" is the default.
  set(conf, "linger.ms", "5");
  set(conf, "batch.size", "16384");
  set(conf, "acks", "all");
  set_props(conf, o.props);
  rd_kafka_conf_set_opaque(conf, &state);
  rd_kafka_conf_set_dr_msg_cb(conf, delivery_report);
  rd_kafka_t* rk = make_client(RD_KAFKA_PRODUCER, conf);
  rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk, o.topic.c_str(), nullptr);

  // Kafka 4.4's ProducerPerformance draws every record's payload anew; tarn perf produce does
  // the same with the same generator, so both tools send the same kind of records.
  std::vector<char> payload(static_cast<size_t>(o.record_size));
  tarn::tools::payload_letters letters(0);
  const bool keyed = o.key_distribution != "none";
  char key[24];
  int64_t start = now_ns();
  state.window_start_ns = start;
  throttler pace(o.throughput, start);
  for (int64_t i = 0; i < o.num_records; ++i) {
    pace.wait_for(i, rk);
    size_t key_len = 0;
    if (keyed) {
      key_len =
          static_cast<size_t>(std::snprintf(key, sizeof key, "%" PRId64, i % o.record_key_range));
    }
    letters.fill(payload);
    int64_t sent = now_ns();
    while (rd_kafka_produce(rkt, RD_KAFKA_PARTITION_UA, RD_KAFKA_MSG_F_COPY, payload.data(),
                            payload.size(), keyed ? key : nullptr, key_len,
                            reinterpret_cast<void*>(static_cast<intptr_t>(sent))) != 0) {
      rd_kafka_resp_err_t err = rd_kafka_last_error();
      if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL) die(rd_kafka_err2str(err));
      rd_kafka_poll(rk, 1);
    }
    rd_kafka_poll(rk, 0);
  }
  while (rd_kafka_outq_len(rk) > 0) rd_kafka_poll(rk, 50);
  double secs = static_cast<double>(now_ns() - start) / 1e9;
  rd_kafka_topic_destroy(rkt);
  rd_kafka_destroy(rk);

  auto p = state.stats.percentiles_ms({0.5, 0.95, 0.99, 0.999});
  double rate = static_cast<double>(state.acked) / secs;
  std::printf("%" PRId64
              " records sent, %f records/sec (%.2f MB/sec), %.2f ms avg latency, %.2f ms max "
              "latency, %.2f ms 50th, %.2f ms 95th, %.2f ms 99th, %.2f ms 99.9th.\n",
              state.acked, rate, rate * o.record_size / (1024.0 * 1024.0),
              state.acked ? state.stats.sum_ms / static_cast<double>(state.acked) : 0.0,
              state.stats.max_ms, p[0], p[1], p[2], p[3]);
  if (state.failed > 0) {
    std::fprintf(stderr, "rdkafka_perf: %" PRId64 " records failed, first: %s\n", state.failed,
                 state.first_error.c_str());
    return 1;
  }
  return 0;
}

// ---- consume ---------------------------------------------------------------------------------

struct consume_state {
  int64_t records = 0;
  int64_t bytes = 0;
  int64_t pass_records = 0;  // records of the pass under way
  int64_t first_ns = 0;      // its first record
  int64_t last_ns = 0;       // its latest record
  int64_t timed_ns = 0;      // first to last record, summed over the passes done
  bool eof = false;
  std::string error;
};

void on_consumed(rd_kafka_message_t* m, void* opaque) {
  auto* s = static_cast<consume_state*>(opaque);
  if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
    s->eof = true;
    return;
  }
  if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    if (s->error.empty()) s->error = rd_kafka_message_errstr(m);
    return;
  }
  int64_t now = now_ns();
  if (s->pass_records++ == 0) s->first_ns = now;
  s->last_ns = now;
  ++s->records;
  s->bytes += static_cast<int64_t>(m->len + m->key_len);
}

int run_consume(const options& o) {
  rd_kafka_conf_t* conf = rd_kafka_conf_new();
  set(conf, "bootstrap.servers", o.bootstrap_server);
  set(conf, "enable.partition.eof", "true");
  set_props(conf, o.props);
  rd_kafka_t* rk = make_client(RD_KAFKA_CONSUMER, conf);
  rd_kafka_topic_t* rkt = rd_kafka_topic_new(rk, o.topic.c_str(), nullptr);
  consume_state state;
  int64_t start = now_ns();
  // Each pass restarts at the partition's start. Only the time from a pass's first record to its
  // last counts: the restart between passes (stop, offset lookup, the Fetch long-poll that was
  // waiting at the end of the log) is the benchmark's, not the fetch path's.
  for (int pass = 0; pass < o.passes; ++pass) {
    if (pass > 0) rd_kafka_consume_stop(rkt, o.partition);
    state.eof = false;
    state.pass_records = 0;
    if (rd_kafka_consume_start(rkt, o.partition, RD_KAFKA_OFFSET_BEGINNING) != 0) {
      die(std::string("consume_start: ") + rd_kafka_err2str(rd_kafka_last_error()));
    }
    int64_t idle_since = now_ns();
    while (!state.eof && (o.num_records < 0 || state.records < o.num_records)) {
      int64_t before = state.records;
      if (rd_kafka_consume_callback(rkt, o.partition, 100, on_consumed, &state) < 0) {
        die(std::string("consume: ") + rd_kafka_err2str(rd_kafka_last_error()));
      }
      if (!state.error.empty()) die("consume: " + state.error);
      if (state.records != before) {
        idle_since = now_ns();
      } else if (now_ns() - idle_since > 30'000'000'000) {
        die("no record for 30 s after " + std::to_string(state.records));
      }
    }
    if (state.pass_records > 0) state.timed_ns += state.last_ns - state.first_ns;
  }
  int64_t end = now_ns();
  rd_kafka_consume_stop(rkt, o.partition);
  rd_kafka_topic_destroy(rkt);
  rd_kafka_destroy(rk);
  // Throughput from the first record to the last: the rate of the fetch path itself.
  double secs = static_cast<double>(state.timed_ns) / 1e9;
  if (state.records < 2 || secs <= 0) die("consumed too few records to time");
  std::printf("%" PRId64 " records consumed, %" PRId64
              " bytes, %.3f s, %f records/sec (%.2f MB/sec), "
              "%.3f s including connect.\n",
              state.records, state.bytes, secs, static_cast<double>(state.records) / secs,
              static_cast<double>(state.bytes) / secs / (1024.0 * 1024.0),
              static_cast<double>(end - start) / 1e9);
  return 0;
}

// ---- e2e -------------------------------------------------------------------------------------

struct e2e_consumer {
  latency_stats stats;
  std::atomic<int64_t> received{0};
  std::string error;
};

void on_e2e_consumed(rd_kafka_message_t* m, void* opaque) {
  auto* c = static_cast<e2e_consumer*>(opaque);
  if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) return;
  if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
    if (c->error.empty()) c->error = rd_kafka_message_errstr(m);
    return;
  }
  int64_t sent_ns = 0;
  if (m->len >= sizeof sent_ns) std::memcpy(&sent_ns, m->payload, sizeof sent_ns);
  c->stats.add(now_ns() - sent_ns);
  c->received.fetch_add(1, std::memory_order_release);
}

int run_e2e(const options& o) {
  if (o.num_records <= 0) die("--num-records must be positive");
  if (o.record_size < 8) die("--record-size must hold the 8-byte send time");
  rd_kafka_conf_t* cconf = rd_kafka_conf_new();
  set(cconf, "bootstrap.servers", o.bootstrap_server);
  rd_kafka_t* consumer = make_client(RD_KAFKA_CONSUMER, cconf);
  rd_kafka_topic_t* ckt = rd_kafka_topic_new(consumer, o.topic.c_str(), nullptr);
  int64_t low = 0, high = 0;
  rd_kafka_resp_err_t err =
      rd_kafka_query_watermark_offsets(consumer, o.topic.c_str(), o.partition, &low, &high, 10000);
  if (err != RD_KAFKA_RESP_ERR_NO_ERROR) die(std::string("watermarks: ") + rd_kafka_err2str(err));
  if (rd_kafka_consume_start(ckt, o.partition, high) != 0) {
    die(std::string("consume_start: ") + rd_kafka_err2str(rd_kafka_last_error()));
  }
  e2e_consumer c;
  std::atomic<bool> stop{false};
  std::thread reader([&] {
    while (!stop.load() && c.received.load(std::memory_order_acquire) < o.num_records) {
      rd_kafka_consume_callback(ckt, o.partition, 100, on_e2e_consumed, &c);
    }
  });

  produce_state state;
  state.record_size = o.record_size;
  rd_kafka_conf_t* pconf = rd_kafka_conf_new();
  set(pconf, "bootstrap.servers", o.bootstrap_server);
  set(pconf, "linger.ms", "5");
  set(pconf, "batch.size", "16384");
  set(pconf, "acks", "all");
  set_props(pconf, o.props);
  rd_kafka_conf_set_opaque(pconf, &state);
  rd_kafka_conf_set_dr_msg_cb(pconf, delivery_report);
  rd_kafka_t* producer = make_client(RD_KAFKA_PRODUCER, pconf);
  rd_kafka_topic_t* pkt = rd_kafka_topic_new(producer, o.topic.c_str(), nullptr);
  std::vector<char> payload(static_cast<size_t>(o.record_size));
  tarn::tools::payload_letters letters(0);  // as `produce`: every record's payload drawn anew
  int64_t start = now_ns();
  state.window_start_ns = start;
  throttler pace(o.throughput, start);
  for (int64_t i = 0; i < o.num_records; ++i) {
    pace.wait_for(i, producer);
    letters.fill(payload);
    int64_t sent = now_ns();
    std::memcpy(payload.data(), &sent, sizeof sent);
    while (rd_kafka_produce(pkt, o.partition, RD_KAFKA_MSG_F_COPY, payload.data(), payload.size(),
                            nullptr, 0,
                            reinterpret_cast<void*>(static_cast<intptr_t>(sent))) != 0) {
      if (rd_kafka_last_error() != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
        die(rd_kafka_err2str(rd_kafka_last_error()));
      }
      rd_kafka_poll(producer, 1);
    }
    rd_kafka_poll(producer, 0);
  }
  while (rd_kafka_outq_len(producer) > 0) rd_kafka_poll(producer, 50);
  int64_t deadline = now_ns() + 30'000'000'000;
  while (c.received.load() < o.num_records && now_ns() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  stop = true;
  reader.join();
  rd_kafka_topic_destroy(pkt);
  rd_kafka_destroy(producer);
  rd_kafka_consume_stop(ckt, o.partition);
  rd_kafka_topic_destroy(ckt);
  rd_kafka_destroy(consumer);

  int64_t got = c.received.load();
  auto p = c.stats.percentiles_ms({0.5, 0.95, 0.99, 0.999});
  std::printf("%" PRId64
              " records received, %.2f ms avg latency, %.2f ms max latency, %.2f ms 50th, "
              "%.2f ms 95th, %.2f ms 99th, %.2f ms 99.9th.\n",
              got, got ? c.stats.sum_ms / static_cast<double>(got) : 0.0, c.stats.max_ms, p[0],
              p[1], p[2], p[3]);
  if (!c.error.empty()) die("consume: " + c.error);
  if (state.failed > 0) die(std::to_string(state.failed) + " sends failed: " + state.first_error);
  if (got < o.num_records) {
    die("received " + std::to_string(got) + " of " + std::to_string(o.num_records) + " records");
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"librdkafka load generator for scripts/bench"};
  app.require_subcommand(1);
  options o;
  auto common = [&](CLI::App* cmd) {
    cmd->add_option("--bootstrap-server", o.bootstrap_server, "host:port")->required();
    cmd->add_option("--topic", o.topic, "topic")->required();
  };
  auto producing = [&](CLI::App* cmd) {
    common(cmd);
    cmd->add_option("--num-records", o.num_records, "records to send")->required();
    cmd->add_option("--record-size", o.record_size, "value size in bytes")->required();
    cmd->add_option("--throughput", o.throughput, "records/s, -1 for unthrottled")->required();
    cmd->add_option("--producer-props", o.props, "k=v producer properties (Java names)");
  };
  auto* produce = app.add_subcommand("produce", "ProducerPerformance with librdkafka");
  producing(produce);
  produce->add_option("--key-distribution", o.key_distribution, "none or range")
      ->check(CLI::IsMember({"none", "range"}));
  produce->add_option("--record-key-range", o.record_key_range, "keys are 0..K-1, round robin");
  auto* consume = app.add_subcommand("consume", "read one partition from start to end");
  common(consume);
  consume->add_option("--partition", o.partition, "partition (default 0)");
  consume->add_option("--num-records", o.num_records, "stop after N records (default: at end)");
  consume->add_option("--passes", o.passes, "read the partition this many times (default 1)")
      ->check(CLI::Range(1, 1000));
  consume->add_option("--consumer-props", o.props, "k=v consumer properties");
  auto* e2e = app.add_subcommand("e2e", "produce-to-consume latency at a fixed rate");
  producing(e2e);
  CLI11_PARSE(app, argc, argv);
  if (produce->parsed()) return run_produce(o);
  if (consume->parsed()) return run_consume(o);
  return run_e2e(o);
}
