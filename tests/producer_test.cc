// tarn's producer library (include/tarn/producer.h) against the real tarn broker and against
// Apache Kafka 4.4.0, read back with real consumers:
//   - every codec x every acks value: records arrive once and in order, with the offsets and
//     timestamps the futures reported, read by kcat and by the Java KafkaConsumer;
//   - keyed records land on the partitions the Java producer picks for the same keys;
//   - a tarn broker SIGKILLed and SIGTERMed mid-stream (restarted on the same port and log
//     directory) while the idempotent producer keeps sending: every acknowledged record is in
//     the log exactly once, in send order per partition; the failures are delivery timeouts;
//   - a batch rejected with MESSAGE_TOO_LARGE is split and re-sent; a lone record too large
//     fails with RECORD_TOO_LARGE.
// kcat, java and the Kafka jars are optional: the parts needing them skip when missing.
#include "tarn/producer.h"

#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <mutex>
#include <set>

#include "kafka_test_names.h"
#include "offsets_util.h"
#include "test_util.h"

namespace tarn::test {
namespace {

using client::delivery_result;
using client::producer;
using client::producer_error;
using client::producer_record;
using client::record_metadata;

std::string source(const std::string& rel) { return std::string(TARN_SOURCE_DIR) + "/" + rel; }
std::string address(uint16_t port) { return std::string("127.0.0.1:") + std::to_string(port); }

// "" when Java or the Kafka jars are missing.
std::string kafka_libs() {
  auto [rc, libs] = run_command(source("scripts/kafka-ref") + " libs");
  while (!libs.empty() && (libs.back() == '\n' || libs.back() == ' ')) libs.pop_back();
  libs = libs.substr(libs.rfind('\n') + 1);
  if (!have_program("java") || rc != 0 || !std::filesystem::exists(libs)) return "";
  return libs;
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

std::vector<std::string> split_words(const std::string& line) {
  std::vector<std::string> words;
  std::istringstream in(line);
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

std::string base64(std::string_view in) {
  static constexpr char table[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    const uint32_t n =
        uint32_t(uint8_t(in[i])) << 16 | uint32_t(uint8_t(in[i + 1])) << 8 | uint8_t(in[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out += table[(n >> s) & 63];
  }
  if (i + 1 == in.size()) {
    const uint32_t n = uint32_t(uint8_t(in[i])) << 16;
    out += table[(n >> 18) & 63];
    out += table[(n >> 12) & 63];
    out += "==";
  } else if (i + 2 == in.size()) {
    const uint32_t n = uint32_t(uint8_t(in[i])) << 16 | uint32_t(uint8_t(in[i + 1])) << 8;
    out += table[(n >> 18) & 63];
    out += table[(n >> 12) & 63];
    out += table[(n >> 6) & 63];
    out += '=';
  }
  return out;
}

// `tarn topics --create`; works against tarn and Kafka alike.
void create_topic(uint16_t port, const std::string& topic, int partitions,
                  const std::vector<std::string>& configs = {}) {
  std::string command = std::string(TARN_BINARY) + " topics --bootstrap-server " + address(port) +
                        " --create --topic " + topic + " --partitions " +
                        std::to_string(partitions);
  for (const auto& c : configs) command += " --config " + c;
  auto [rc, out] = run_command("timeout 30 " + command);
  ASSERT_EQ(rc, 0) << command << ": " << out;
}

// kcat reads the whole topic (every partition) from the beginning and exits at its end:
// one "PARTITION OFFSET KEY VALUE" line per record.
std::vector<std::string> kcat_read(uint16_t port, const std::string& topic,
                                   const std::string& format = "%p %o %k %s") {
  auto [rc, out] = run_command("timeout 60 kcat -C -q -e -b " + address(port) + " -t " + topic +
                               " -o beginning -f '" + format + "\\n'");
  EXPECT_EQ(rc, 0) << out;
  return split_lines(out);
}

std::unique_ptr<producer> make_producer(uint16_t port,
                                        std::vector<std::pair<std::string, std::string>> props) {
  props.insert(props.begin(), {"bootstrap.servers", address(port)});
  auto p = producer::create(props);
  EXPECT_TRUE(p) << (p ? "" : p.error().message);
  return p ? std::move(*p) : nullptr;
}

// A record as sent and as acknowledged.
struct sent_record {
  std::string key;
  std::string value;
  int64_t timestamp_ms;
  std::future<delivery_result> future;
  record_metadata metadata;
};

constexpr const char* codecs[] = {"none", "gzip", "snappy", "lz4", "zstd"};
constexpr const char* acks_values[] = {"0", "1", "all"};

// One codec/acks combination: `count` records with keys, values and one header to a
// one-partition topic (linger and batch size small enough for several batches); returns them
// acknowledged.
std::vector<sent_record> send_sweep(uint16_t port, const std::string& topic, const char* codec,
                                    const char* acks, int count) {
  auto p = make_producer(port, {{"compression.type", codec},
                                {"acks", acks},
                                {"batch.size", "2048"},
                                {"linger.ms", "2"},
                                {"delivery.timeout.ms", "30000"},
                                {"request.timeout.ms", "10000"}});
  std::vector<sent_record> sent;
  if (!p) return sent;
  // Explicit timestamps, recent enough that Kafka's 7-day retention keeps them.
  const int64_t base_timestamp = std::chrono::duration_cast<std::chrono::milliseconds>(
                                     std::chrono::system_clock::now().time_since_epoch())
                                     .count() -
                                 60'000;
  sent.reserve(static_cast<size_t>(count));
  for (int i = 0; i < count; ++i) {
    sent_record s{std::string("k") + std::to_string(i),
                  topic + std::string("-value-") + std::to_string(i) +
                      std::string(static_cast<size_t>(i % 50), 'x'),
                  base_timestamp + i,
                  {},
                  {}};
    const std::string header_value = std::to_string(i);
    const client::header_view header{"h", header_value};
    producer_record r;
    r.topic = topic;
    r.key = s.key;
    r.value = s.value;
    r.headers = std::span(&header, 1);
    r.timestamp_ms = s.timestamp_ms;
    s.future = p->send(r);
    sent.push_back(std::move(s));
  }
  p->flush();
  for (auto& s : sent) {
    auto r = s.future.get();
    EXPECT_TRUE(r) << topic << ": " << r.error().message;
    if (r) s.metadata = *r;
  }
  p->close();
  return sent;
}

// The futures, kcat and (once, for every topic) the Java consumer agree: each record exactly
// once, at offset = its send index.
void check_sweep(uint16_t port, const std::string& topic, const char* acks,
                 const std::vector<sent_record>& sent, const std::filesystem::path& json) {
  for (size_t i = 0; i < sent.size(); ++i) {
    EXPECT_EQ(sent[i].metadata.partition, 0) << topic;
    EXPECT_EQ(sent[i].metadata.offset, std::string(acks) == "0" ? -1 : static_cast<int64_t>(i))
        << topic << " record " << i;
    EXPECT_EQ(sent[i].metadata.timestamp_ms, sent[i].timestamp_ms) << topic;
  }
  // With acks=0 a send is done once its bytes are written: the broker may not have appended the
  // last of them yet when the readers below reach what was then the end. Wait until it has (the
  // readers still check that nothing beyond the records sent is there).
  ASSERT_GE(wait_for_latest_offset(port, topic, 0, static_cast<int64_t>(sent.size())),
            static_cast<int64_t>(sent.size()))
      << topic << ": records missing";
  if (have_program("kcat")) {
    auto lines = kcat_read(port, topic);
    ASSERT_EQ(lines.size(), sent.size()) << topic;
    for (size_t i = 0; i < sent.size(); ++i) {
      EXPECT_EQ(lines[i],
                std::string("0 ") + std::to_string(i) + " " + sent[i].key + " " + sent[i].value)
          << topic;
    }
  }
  // The records as ConsumeCheck.java expects them.
  std::ofstream out(json);
  out << "{\"records\": [\n";
  for (size_t i = 0; i < sent.size(); ++i) {
    out << (i ? ",\n" : "") << "{\"offset\": " << i << ", \"timestamp\": " << sent[i].timestamp_ms
        << ", \"key\": \"" << base64(sent[i].key) << "\", \"value\": \"" << base64(sent[i].value)
        << "\", \"headers\": [{\"key\": \"h\", \"value\": \"" << base64(std::to_string(i))
        << "\"}]}";
  }
  out << "]}\n";
}

// Java's ConsumeCheck over the given (topic, json) pairs in one JVM.
void java_consume_check(uint16_t port, const std::vector<std::pair<std::string, std::string>>& t,
                        size_t count) {
  const std::string libs = kafka_libs();
  if (libs.empty()) {
    std::cout << "java or the Kafka jars are missing: Java consumer check skipped\n";
    return;
  }
  std::string args;
  for (const auto& [topic, json] : t) args += " " + topic + " " + json;
  auto [rc, out] =
      run_command("timeout 90 java -cp '" + libs + "/*' " + source("tests/java/ConsumeCheck.java") +
                  " " + address(port) + args + " 2>/dev/null");
  EXPECT_EQ(rc, 0) << out;
  for (const auto& [topic, json] : t) {
    EXPECT_NE(
        out.find("java: " + topic + std::string(": ") + std::to_string(count) + " records match"),
        std::string::npos)
        << out;
  }
}

void codec_acks_sweep(uint16_t port, const temp_dir& tmp, int count) {
  std::vector<std::pair<std::string, std::string>> checked;
  for (const char* codec : codecs) {
    for (const char* acks : acks_values) {
      const std::string topic = std::string("sweep-") + codec + "-" + acks;
      create_topic(port, topic, 1);
      auto sent = send_sweep(port, topic, codec, acks, count);
      ASSERT_EQ(sent.size(), static_cast<size_t>(count));
      const auto json = tmp.path() / (topic + ".json");
      check_sweep(port, topic, acks, sent, json);
      checked.emplace_back(topic, json.string());
    }
  }
  java_consume_check(port, checked, static_cast<size_t>(count));
}

TEST(producer_against_tarn, every_codec_and_acks_arrive_once_in_order) {
  broker_process broker;
  ASSERT_NE(broker.port(), 0) << broker.output();
  temp_dir tmp;
  codec_acks_sweep(broker.port(), tmp, 300);
  broker.stop();
}

// The same keys sent by tarn's producer and by the Java producer to two topics of 7 partitions
// land on the same partitions; kcat confirms where tarn's records were stored.
TEST(producer_against_tarn, keys_land_where_the_java_producer_puts_them) {
  broker_process broker;
  ASSERT_NE(broker.port(), 0) << broker.output();
  constexpr int count = 200;
  create_topic(broker.port(), "keys-tarn", 7);
  auto p = make_producer(broker.port(), {{"linger.ms", "1"}});
  ASSERT_TRUE(p);
  std::vector<std::future<delivery_result>> futures;
  for (int i = 0; i < count; ++i) {
    const std::string key = std::string("key-") + std::to_string(i);
    const std::string value = std::string("tarn-") + std::to_string(i);
    producer_record r;
    r.topic = "keys-tarn";
    r.key = key;
    r.value = value;  // producer_record holds views: the strings must outlive send()
    futures.push_back(p->send(r));
  }
  p->flush();
  std::map<std::string, int32_t> tarn_partition;
  for (int i = 0; i < count; ++i) {
    auto r = futures[static_cast<size_t>(i)].get();
    ASSERT_TRUE(r) << r.error().message;
    tarn_partition[std::string("key-") + std::to_string(i)] = r->partition;
  }
  p->close();
  std::set<int32_t> used;
  for (const auto& [_, partition] : tarn_partition) used.insert(partition);
  EXPECT_EQ(used.size(), 7u) << "200 keys spread over every partition";
  if (have_program("kcat")) {
    auto lines = kcat_read(broker.port(), "keys-tarn");
    ASSERT_EQ(lines.size(), static_cast<size_t>(count));
    for (const auto& line : lines) {
      auto w = split_words(line);
      ASSERT_EQ(w.size(), 4u) << line;
      EXPECT_EQ(std::stoi(w[0]), tarn_partition.at(w[2])) << line;
    }
  }
  const std::string libs = kafka_libs();
  if (libs.empty()) GTEST_SKIP() << "java or the Kafka 4.4.0 jars are not available";
  create_topic(broker.port(), "keys-java", 7);
  auto [rc, out] = run_command(
      "timeout 60 java -cp '" + libs + "/*' " + source("tests/java/KeyPartitions.java") + " " +
      address(broker.port()) + std::string(" keys-java ") + std::to_string(count) + " 2>/dev/null");
  ASSERT_EQ(rc, 0) << out;
  auto lines = split_lines(out);
  ASSERT_EQ(lines.size(), static_cast<size_t>(count)) << out;
  for (const auto& line : lines) {
    auto w = split_words(line);
    ASSERT_EQ(w.size(), 2u) << line;
    EXPECT_EQ(tarn_partition.at(w[0]), std::stoi(w[1])) << w[0];
  }
  broker.stop();
}

// A topic whose max.message.bytes lets one record through but not a batch of them: the
// producer splits the rejected batches (Java's splitAndReenqueue) and every record arrives once,
// in order; a record alone over the limit fails with MESSAGE_TOO_LARGE.
TEST(producer_against_tarn, batches_too_large_for_the_topic_are_split) {
  broker_process broker;
  ASSERT_NE(broker.port(), 0) << broker.output();
  create_topic(broker.port(), "small", 1, {"max.message.bytes=1200"});
  for (const char* codec : {"none", "lz4"}) {
    auto p = make_producer(broker.port(), {{"batch.size", "16384"},
                                           {"linger.ms", "50"},
                                           {"compression.type", codec},
                                           {"delivery.timeout.ms", "30000"},
                                           {"request.timeout.ms", "10000"}});
    ASSERT_TRUE(p);
    std::vector<std::future<delivery_result>> futures;
    std::vector<std::string> values;
    for (int i = 0; i < 60; ++i) {
      // Random-looking bytes, so lz4 cannot squeeze a batch under the limit.
      std::string value(200, ' ');
      uint32_t x = static_cast<uint32_t>(i) * 2654435761u + 1;
      for (auto& c : value) {
        x = x * 1103515245u + 12345u;
        c = static_cast<char>('a' + (x >> 16) % 26);
      }
      values.push_back(std::string(codec) + std::string("-") + std::to_string(i) + "-" + value);
      producer_record r;
      r.topic = "small";
      r.value = values.back();
      futures.push_back(p->send(r));
    }
    p->flush();
    int64_t previous = -1;
    for (auto& f : futures) {
      auto r = f.get();
      ASSERT_TRUE(r) << codec << ": " << r.error().message;
      EXPECT_GT(r->offset, previous);
      previous = r->offset;
    }
    std::string big(3000, 'b');  // random-looking, so lz4 cannot squeeze it under the limit
    uint32_t x = 7;
    for (auto& c : big) {
      x = x * 1103515245u + 12345u;
      c = static_cast<char>('a' + (x >> 16) % 26);
    }
    producer_record r;
    r.topic = "small";
    r.value = big;
    auto too_large = p->send(r).get();
    ASSERT_FALSE(too_large);
    EXPECT_EQ(too_large.error().kafka_error_code, 10) << too_large.error().message;
    EXPECT_NE(too_large.error().message.find("MESSAGE_TOO_LARGE"), std::string::npos)
        << too_large.error().message;
    p->close();
    if (have_program("kcat")) {
      auto lines = kcat_read(broker.port(), "small", "%s");
      std::vector<std::string> got;
      for (const auto& line : lines) {
        if (line.starts_with(std::string(codec) + "-")) got.push_back(line);
      }
      EXPECT_EQ(got, values) << codec;
    }
  }
  broker.stop();
}

// `tarn perf produce` prints kafka-producer-perf-test's lines, the steady-state summary after
// --warmup-records, and sends keys (--key-distribution range), monotonic payloads and payloads
// from a file as Kafka 4.4's ProducerPerformance does.
TEST(producer_against_tarn, perf_produce_options) {
  broker_process broker;
  ASSERT_NE(broker.port(), 0) << broker.output();
  temp_dir tmp;
  const std::string perf = std::string(TARN_BINARY) + " perf produce --bootstrap-server " +
                           address(broker.port()) + " --throughput -1";
  create_topic(broker.port(), "perf-keys", 3);
  auto [rc, out] =
      run_command(std::string("timeout 60 ") + perf +
                  " --topic perf-keys --num-records 2000 --record-size 50 --warmup-records 500"
                  " --key-distribution range --record-key-range 10 --producer-props linger.ms=1");
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(("\n" + out).find("\n2000 records sent, "), std::string::npos) << out;
  EXPECT_NE(("\n" + out).find("\n1500 steady state records sent, "), std::string::npos) << out;
  EXPECT_NE(out.find(" ms 99.9th.\n"), std::string::npos) << out;

  create_topic(broker.port(), "perf-mono", 1);
  auto [mrc, mout] = run_command(std::string("timeout 60 ") + perf +
                                 " --topic perf-mono --num-records 100 --payload-monotonic");
  ASSERT_EQ(mrc, 0) << mout;

  create_topic(broker.port(), "perf-file", 1);
  const auto file = tmp.write_file("payloads", "alpha|beta|gamma");
  auto [frc, fout] = run_command(std::string("timeout 60 ") + perf +
                                 " --topic perf-file --num-records 60 --payload-delimiter '|'"
                                 " --payload-file " +
                                 file.string());
  ASSERT_EQ(frc, 0) << fout;
  EXPECT_NE(fout.find("Number of messages read: 3"), std::string::npos) << fout;

  auto [brc, bout] = run_command(std::string("timeout 60 ") + perf +
                                 " --topic perf-file --num-records 1");  // no payload
  EXPECT_NE(brc, 0);
  EXPECT_NE(bout.find("exactly one of --record-size, --payload-file or --payload-monotonic"),
            std::string::npos)
      << bout;

  if (!have_program("kcat")) GTEST_SKIP() << "kcat not installed";
  std::map<std::string, int> per_key;
  for (const auto& key : kcat_read(broker.port(), "perf-keys", "%k")) ++per_key[key];
  ASSERT_EQ(per_key.size(), 10u);
  for (int k = 0; k < 10; ++k) EXPECT_EQ(per_key[std::to_string(k)], 200) << k;
  // --record-size: as Kafka 4.4's tool, every record's payload is drawn anew, A-Z only.
  auto values = kcat_read(broker.port(), "perf-keys", "%s");
  ASSERT_EQ(values.size(), 2000u);
  for (const auto& v : values) {
    ASSERT_EQ(v.size(), 50u);
    ASSERT_EQ(v.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ"), std::string::npos) << v;
  }
  EXPECT_EQ(std::set<std::string>(values.begin(), values.end()).size(), 2000u);
  auto mono = kcat_read(broker.port(), "perf-mono", "%s");
  ASSERT_EQ(mono.size(), 100u);
  for (size_t i = 0; i < mono.size(); ++i) EXPECT_EQ(mono[i], std::to_string(i));
  auto files = kcat_read(broker.port(), "perf-file", "%s");
  ASSERT_EQ(files.size(), 60u);
  std::set<std::string> distinct(files.begin(), files.end());
  EXPECT_EQ(distinct, (std::set<std::string>{"alpha", "beta", "gamma"}));
  broker.stop();
}

// Restarts: a tarn broker on a fixed port and log directory.
class restartable_broker {
 public:
  explicit restartable_broker(std::filesystem::path data_dir) : data_dir_(std::move(data_dir)) {}

  bool start() {
    std::vector<std::string> args = {
        "serve",
        "--override",
        std::string("listeners=PLAINTEXT://127.0.0.1:") + std::to_string(port_),
        "--override",
        "log.dirs=" + data_dir_.string(),
        "--override",
        "num.partitions=3"};
    process_ = run_tarn(args);
    auto port =
        process_->wait_for_number_after("listening on PLAINTEXT://127.0.0.1:", startup_timeout);
    if (!port) return false;
    port_ = static_cast<uint16_t>(std::stoi(*port));
    return true;
  }
  void kill(int sig) {
    process_->send_signal(sig);
    auto status = process_->wait_exit(20s);
    ASSERT_TRUE(status) << "the broker did not exit on signal " << sig;
  }
  uint16_t port() const { return port_; }
  std::string output() const { return process_ ? process_->output() : ""; }

 private:
  std::filesystem::path data_dir_;
  uint16_t port_ = 0;
  std::unique_ptr<child_process> process_;
};

TEST(producer_against_tarn, idempotent_producer_survives_broker_restarts) {
  temp_dir tmp;
  restartable_broker broker(tmp.path() / "data");
  ASSERT_TRUE(broker.start()) << broker.output();
  create_topic(broker.port(), "restarts", 3);

  constexpr int64_t delivery_timeout_ms = 3000;
  auto p =
      make_producer(broker.port(), {{"enable.idempotence", "true"},
                                    {"acks", "all"},
                                    {"linger.ms", "2"},
                                    {"batch.size", "4096"},
                                    {"request.timeout.ms", "1000"},
                                    {"delivery.timeout.ms", std::to_string(delivery_timeout_ms)},
                                    {"retry.backoff.ms", "20"},
                                    {"retry.backoff.max.ms", "200"},
                                    {"reconnect.backoff.ms", "20"},
                                    {"reconnect.backoff.max.ms", "200"},
                                    {"max.block.ms", "20000"}});
  ASSERT_TRUE(p);

  struct outcome {
    std::chrono::steady_clock::time_point sent;
    std::chrono::steady_clock::time_point done;
    bool completed = false;
    bool ok = false;
    record_metadata metadata;
    producer_error error;
  };
  std::mutex mutex;
  std::vector<outcome> outcomes;
  outcomes.reserve(2'000'000);
  std::atomic<bool> stop{false};
  std::atomic<int> sent_count{0};
  std::thread sender([&] {
    for (int i = 0; !stop; ++i) {
      const std::string value = std::string("v") + std::to_string(i);
      const std::string key = std::string("k") + std::to_string(i % 64);
      {
        std::lock_guard lock(mutex);
        outcomes.push_back({std::chrono::steady_clock::now(), {}, false, false, {}, {}});
      }
      producer_record r;
      r.topic = "restarts";
      r.key = key;
      r.value = value;
      auto sent = p->send_async(r, [&, i](const record_metadata& m, const producer_error* e) {
        std::lock_guard lock(mutex);
        auto& o = outcomes[static_cast<size_t>(i)];
        o.done = std::chrono::steady_clock::now();
        o.completed = true;
        o.ok = e == nullptr;
        o.metadata = m;
        if (e) o.error = *e;
      });
      sent_count = i + 1;
      (void)sent;  // an immediate error reaches the callback too
      if (i % 100 == 99) std::this_thread::sleep_for(2ms);  // at most ~50,000 records/s
    }
  });

  std::this_thread::sleep_for(700ms);
  // SIGKILL, down for longer than delivery.timeout.ms: some records must expire.
  broker.kill(SIGKILL);
  std::this_thread::sleep_for(std::chrono::milliseconds(delivery_timeout_ms + 800));
  ASSERT_TRUE(broker.start()) << broker.output();
  std::this_thread::sleep_for(1500ms);
  // SIGKILL, back quickly: retries must not duplicate.
  broker.kill(SIGKILL);
  std::this_thread::sleep_for(300ms);
  ASSERT_TRUE(broker.start()) << broker.output();
  std::this_thread::sleep_for(1500ms);
  // SIGTERM: a clean shutdown mid-stream.
  broker.kill(SIGTERM);
  std::this_thread::sleep_for(300ms);
  ASSERT_TRUE(broker.start()) << broker.output();
  std::this_thread::sleep_for(1500ms);
  stop = true;
  sender.join();
  p->flush();
  p->close();

  std::lock_guard lock(mutex);
  const size_t total = static_cast<size_t>(sent_count.load());
  ASSERT_GT(total, 1000u);
  size_t ok = 0, failed = 0;
  std::map<std::string, size_t> index_of_value;
  for (size_t i = 0; i < total; ++i) {
    const auto& o = outcomes[i];
    ASSERT_TRUE(o.completed) << "record " << i << " never completed";
    index_of_value[std::string("v") + std::to_string(i)] = i;
    if (o.ok) {
      ++ok;
      continue;
    }
    ++failed;
    // Only the records caught by the long outage may fail, and only by expiring:
    // delivery.timeout.ms after their batch was created (the record joined it a little later).
    EXPECT_EQ(o.error.code, client::producer_errc::delivery_timeout)
        << "record " << i << ": " << o.error.message;
    const std::string& m = o.error.message;
    const size_t end = m.find(" ms has passed since batch creation");
    ASSERT_NE(end, std::string::npos) << m;
    const size_t begin = m.rfind(':', end);
    ASSERT_NE(begin, std::string::npos) << m;
    EXPECT_GE(std::stoll(m.substr(begin + 1, end - begin - 1)), delivery_timeout_ms) << m;
    EXPECT_GE(o.done - o.sent, std::chrono::milliseconds(delivery_timeout_ms / 2)) << m;
  }
  std::cout << total << " records sent, " << ok << " acknowledged, " << failed << " expired\n";
  EXPECT_GT(failed, 0u) << "the 3.8 s outage should expire some records";
  EXPECT_GT(ok, total / 2);

  if (!have_program("kcat")) GTEST_SKIP() << "kcat not installed";
  auto lines = kcat_read(broker.port(), "restarts");
  std::map<std::string, int> seen;
  std::map<int32_t, size_t> last_index;  // per partition: the send index of the last record
  std::map<int32_t, int64_t> last_offset;
  for (const auto& line : lines) {
    auto w = split_words(line);
    ASSERT_EQ(w.size(), 4u) << line;
    const int32_t partition = std::stoi(w[0]);
    const int64_t offset = std::stoll(w[1]);
    const auto it = index_of_value.find(w[3]);
    ASSERT_NE(it, index_of_value.end()) << "a record never sent: " << line;
    const size_t i = it->second;
    EXPECT_EQ(++seen[w[3]], 1) << "duplicate: " << line;
    if (last_index.contains(partition)) {
      EXPECT_GT(i, last_index[partition]) << "reordered in partition " << partition << ": " << line;
    }
    last_index[partition] = i;
    last_offset[partition] = offset;
    const auto& o = outcomes[i];
    if (o.ok) {
      EXPECT_EQ(o.metadata.partition, partition) << line;
      EXPECT_EQ(o.metadata.offset, offset) << line;
    }
  }
  for (size_t i = 0; i < total; ++i) {
    if (outcomes[i].ok) {
      EXPECT_EQ(seen[std::string("v") + std::to_string(i)], 1)
          << "acknowledged record " << i << " lost";
    }
  }
  broker.kill(SIGTERM);
}

// The same codec x acks sweep against Apache Kafka 4.4.0 (started with scripts/kafka-ref).
TEST(producer_against_kafka, every_codec_and_acks_arrive_once_in_order) {
  ASSERT_EQ(kafka_test_name_error(), "");
  if (kafka_libs().empty()) GTEST_SKIP() << "java or the Kafka 4.4.0 jars are not available";
  auto [prc, port_text] = run_command(
      "python3 -c 'import socket; s=socket.socket(); s.bind((\"127.0.0.1\",0)); "
      "print(s.getsockname()[1])'");
  ASSERT_EQ(prc, 0) << port_text;
  const uint16_t port = static_cast<uint16_t>(std::stoi(port_text));
  auto [rc, out] = run_command(source("scripts/kafka-ref") + " start --timeout 60 --port " +
                               std::to_string(port));
  ASSERT_EQ(rc, 0) << out;
  struct stopper {
    uint16_t port;
    ~stopper() {
      run_command(source("scripts/kafka-ref") + std::string(" stop --port ") +
                  std::to_string(port));
    }
  } stop_kafka{port};
  temp_dir tmp;
  codec_acks_sweep(port, tmp, 100);
}

}  // namespace
}  // namespace tarn::test
