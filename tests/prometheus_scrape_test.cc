// A real Prometheus (Debian's prometheus, started here on a loopback port) scrapes a real
// `tarn serve` every second while confluent-kafka produces at a steady 200 records a second and a
// kcat group member consumes; PromQL over Prometheus's HTTP API must give the rate the producer
// had acknowledged in the query's window (its own log of acknowledgements: on a loaded machine it
// falls behind 200 a second, then catches up) from kafka_server_brokertopicmetrics_messagesin_total
// within 10 %, see bytes flowing out and the group's lag series. Skipped when prometheus is missing
// and under sanitizers (the rate is the point, and a sanitized broker is too slow to hold it).
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <sstream>

#include "console_util.h"

namespace tarn::test {
namespace {

constexpr int records_per_second = 200;

// From paced_produce.py's "at T acked N" lines: the records acknowledged by CLOCK_MONOTONIC time
// `t` (seconds), from the last line at or before it.
std::optional<int64_t> acked_by(const std::string& output, double t) {
  std::optional<int64_t> out;
  std::istringstream lines(output);
  std::string line;
  while (std::getline(lines, line)) {
    double at = 0;
    long long acked = 0;
    if (std::sscanf(line.c_str(), "at %lf acked %lld", &at, &acked) != 2) continue;
    if (at > t) break;
    out = acked;
  }
  return out;
}

double monotonic_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The single value of an instant query, or nullopt (no series, or no answer).
std::optional<double> query(uint16_t prometheus_port, const std::string& promql) {
  httplib::Client c("127.0.0.1", prometheus_port);
  c.set_connection_timeout(5, 0);
  c.set_read_timeout(10, 0);
  auto r = c.Get("/api/v1/query?query=" + httplib::detail::encode_query_param(promql));
  if (!r || r->status != 200) return std::nullopt;
  auto body = json::parse(r->body, nullptr, false);
  if (body.is_discarded() || body["status"] != "success") return std::nullopt;
  const auto& result = body["data"]["result"];
  if (!result.is_array() || result.size() != 1) return std::nullopt;
  return std::stod(result[0]["value"][1].get<std::string>());
}

TEST(prometheus_scrape, promql_rate_matches_what_the_client_produced) {
#ifdef TARN_SANITIZED_BUILD
  GTEST_SKIP() << "skipped under sanitizers: the broker must keep up with a real-time rate";
#endif
  if (!std::filesystem::exists("/usr/bin/prometheus")) GTEST_SKIP() << "prometheus is missing";
  if (!have_program("kcat")) GTEST_SKIP() << "kcat is missing";
  if (run_command("/usr/bin/python3 -c 'import confluent_kafka'").first != 0) {
    GTEST_SKIP() << "python3-confluent-kafka is missing";
  }
  console_broker b;
  ASSERT_NE(b.http_port(), 0) << b.broker().output();
  temp_dir tmp;
  const auto config = tmp.write_file("prometheus.yml", fmt::format(R"(global:
  scrape_interval: 1s
  scrape_timeout: 900ms
scrape_configs:
  - job_name: tarn
    static_configs:
      - targets: ["127.0.0.1:{}"]
)",
                                                                   b.http_port()));
  const uint16_t prometheus_port = free_port();
  ASSERT_NE(prometheus_port, 0);
  child_process prometheus(std::vector<std::string>{
      "/usr/bin/prometheus", "--config.file=" + config.string(),
      "--storage.tsdb.path=" + (tmp.path() / "tsdb").string(),
      "--web.listen-address=127.0.0.1:" + std::to_string(prometheus_port), "--log.level=warn"});
  ASSERT_TRUE(eventually([&] { return query(prometheus_port, "up{job=\"tarn\"}") == 1.0; }, 30s))
      << prometheus.output();

  // The topic exists before the rate starts, so its first samples are already there.
  ASSERT_EQ(run_command("timeout 30 kcat -P -b " + b.bootstrap() + " -t paced </dev/null").first,
            0);
  // 13 s: still producing when the queries below run, at 12 s (the test waits for its end to
  // read its error count, so every second past the queries is idle).
  child_process producer(
      std::vector<std::string>{"/usr/bin/python3", TARN_SOURCE_DIR "/tests/python/paced_produce.py",
                               b.bootstrap(), "paced", std::to_string(records_per_second), "13"});
  ASSERT_TRUE(producer.wait_for_output("started", 30s)) << producer.output();
  const auto started = std::chrono::steady_clock::now();
  // kcat itself, not under timeout(1): a grandchild would keep the output pipe open after the
  // child_process is killed. Stopped with SIGTERM below, SIGKILL by the destructor otherwise.
  child_process consumer(std::vector<std::string>{"/usr/bin/kcat", "-b", b.bootstrap(), "-G",
                                                  "paced-readers", "-X",
                                                  "auto.commit.interval.ms=200", "-q", "paced"});

  // 12 s into the run: an 8 s window lies wholly inside the steady part.
  std::this_thread::sleep_until(started + 12s);
  const double window_end = monotonic_seconds();
  const auto rate = query(prometheus_port,
                          "rate(kafka_server_brokertopicmetrics_messagesin_total{topic=\"paced\"}"
                          "[8s])");
  const auto bytes_out = query(
      prometheus_port, "rate(kafka_server_brokertopicmetrics_bytesout_total{topic=\"paced\"}[8s])");
  const auto lag_series =
      query(prometheus_port, "count(kafka_consumergroup_lag{consumergroup=\"paced-readers\"})");
  std::cout << "PromQL messages in rate: " << rate.value_or(-1)
            << "/s, bytes out rate: " << bytes_out.value_or(-1) << " B/s\n";

  consumer.send_signal(SIGTERM);
  consumer.wait_exit(10s);
  auto done = producer.wait_exit(30s);
  ASSERT_TRUE(done);
  EXPECT_EQ(done->code, 0) << producer.output();
  const std::string& out = producer.output();
  std::cout << out.substr(out.rfind("\nacked ") + 1);  // the run's summary
  EXPECT_NE(producer.output().find("errors 0"), std::string::npos) << producer.output();

  ASSERT_TRUE(rate) << "no messagesin series for topic paced";
  const auto acked_before = acked_by(producer.output(), window_end - 8);
  const auto acked_at_end = acked_by(producer.output(), window_end);
  ASSERT_TRUE(acked_before && acked_at_end) << producer.output();
  const double produced_rate = static_cast<double>(*acked_at_end - *acked_before) / 8;
  std::cout << "the producer's acknowledged rate in the window: " << produced_rate << "/s\n";
  EXPECT_GT(produced_rate, records_per_second / 4) << "the producer hardly ran";
  EXPECT_NEAR(*rate, produced_rate, produced_rate * 0.10);
  ASSERT_TRUE(bytes_out);
  EXPECT_GT(*bytes_out, 0.0) << "the consumer fetched records";
  EXPECT_EQ(lag_series, 1.0) << "one lag series: paced-readers on paced-0";
}

}  // namespace
}  // namespace tarn::test
