// /metrics and /v1/status from hand-built broker snapshots: names, labels, values, the partition
// cut, consumer lag, both text formats. No server, no sockets.
#include "observe/metrics_export.h"

#include <gtest/gtest.h>

#include "observe/status_json.h"

namespace tarn::observe {
namespace {

using broker::broker_metrics;
using broker::broker_snapshot;

bool has_line(const std::string& text, const std::string& line) {
  return text.find("\n" + line + "\n") != std::string::npos || text.starts_with(line + "\n");
}

// A broker with topic a (2 partitions) and b (1), one group committed on a-0 and a-1.
struct fixture {
  broker_metrics metrics;
  broker_snapshot snap;

  fixture() {
    auto a = metrics.topic("a");
    metrics.topic("gone");  // a deleted topic's cells: dropped by topics_snapshot
    a->messages_in.add(10);
    a->bytes_in.add(1000);
    metrics.all_topics.messages_in.add(10);
    metrics.all_topics.bytes_in.add(1000);
    metrics.all_topics.bytes_out.add(500);
    a->bytes_out.add(500);
    const auto t0 = broker_metrics::time_point{};
    using std::chrono::milliseconds;
    for (int i = 1; i <= 100; ++i) {
      metrics.record_request(0, 9, t0, t0, t0 + milliseconds(i), t0 + milliseconds(i));
    }
    snap.node_id = 1;
    snap.ready = true;
    snap.metrics = &metrics;
    snap.apis = {{0, "Produce"}, {1, "Fetch"}};
    for (auto& [name, cells] : metrics.topics_snapshot({"a", "b"}))
      snap.topics.emplace_back(name, cells);
    snap.topic_count = 2;
    snap.partitions = {{"a", 0, 0, 7, 7, 700}, {"a", 1, 2, 3, 3, 300}, {"b", 0, 0, 0, 0, 0}};
    snap.committed_offsets = {{"g", "a", 0, 5}, {"g", "a", 1, 4}, {"g", "gone", 0, 1}};
    snap.group_members = {{"g", 2}, {"idle", 0}};
    snap.network_idle_ratio = {0.5, 1.0};
    snap.loop_connections = {2, 1};
    snap.active_connections = 3;
    snap.listeners = {{"PLAINTEXT", "127.0.0.1", 9092}};
  }
};

TEST(metrics_export, broker_topic_metrics_per_broker_and_per_topic) {
  fixture f;
  const auto text = to_prometheus_text(collect_metrics(f.snap, {}));
  EXPECT_TRUE(has_line(text, "# TYPE kafka_server_brokertopicmetrics_messagesin_total counter"));
  EXPECT_TRUE(has_line(text, "kafka_server_brokertopicmetrics_messagesin_total 10")) << text;
  EXPECT_TRUE(has_line(text, "kafka_server_brokertopicmetrics_messagesin_total{topic=\"a\"} 10"));
  EXPECT_TRUE(has_line(text, "kafka_server_brokertopicmetrics_bytesin_total{topic=\"a\"} 1000"));
  EXPECT_TRUE(has_line(text, "kafka_server_brokertopicmetrics_bytesout_total 500"));
  EXPECT_EQ(text.find("topic=\"gone\""), std::string::npos);  // deleted topic, no cells
}

TEST(metrics_export, request_metrics_by_api_and_version_with_times_in_ms) {
  fixture f;
  const auto text = to_prometheus_text(collect_metrics(f.snap, {}));
  EXPECT_TRUE(has_line(
      text, "kafka_network_requestmetrics_requests_total{request=\"Produce\",version=\"9\"} 100"));
  EXPECT_TRUE(has_line(text, "# TYPE kafka_network_requestmetrics_totaltimems summary"));
  EXPECT_TRUE(
      has_line(text, "kafka_network_requestmetrics_totaltimems_count{request=\"Produce\"} 100"));
  EXPECT_TRUE(
      has_line(text, "kafka_network_requestmetrics_totaltimems_sum{request=\"Produce\"} 5050"));
  EXPECT_EQ(text.find("request=\"Fetch\""), std::string::npos);  // no Fetch answered: no series
  // The 99th percentile of 1..100 ms is ~99 ms, within the histogram's bucket width.
  const std::string p99 =
      "kafka_network_requestmetrics_totaltimems{request=\"Produce\",quantile=\"0.99\"} ";
  const size_t at = text.find(p99);
  ASSERT_NE(at, std::string::npos) << text;
  EXPECT_NEAR(std::stod(text.substr(at + p99.size())), 99, 99 * 0.25);
}

// A consumer's Fetch is counted and timed under request="Fetch" and request="FetchConsumer", as
// Kafka's RequestChannel marks both (tarn has no follower fetches).
TEST(metrics_export, fetch_requests_also_as_fetch_consumer) {
  fixture f;
  const auto t0 = broker_metrics::time_point{};
  for (int i = 0; i < 3; ++i) {
    f.metrics.record_request(1, 16, t0, t0, t0 + std::chrono::milliseconds(2),
                             t0 + std::chrono::milliseconds(2));
  }
  const auto text = to_prometheus_text(collect_metrics(f.snap, {}));
  for (const std::string request : {"Fetch", "FetchConsumer"}) {
    EXPECT_TRUE(has_line(text, "kafka_network_requestmetrics_requests_total{request=\"" + request +
                                   "\",version=\"16\"} 3"))
        << text;
    EXPECT_TRUE(has_line(
        text, "kafka_network_requestmetrics_totaltimems_count{request=\"" + request + "\"} 3"));
    EXPECT_TRUE(has_line(
        text, "kafka_network_requestmetrics_localtimems_count{request=\"" + request + "\"} 3"));
  }
  EXPECT_EQ(text.find("request=\"FetchFollower\""), std::string::npos);
}

TEST(metrics_export, log_offsets_lag_and_the_partition_cut) {
  fixture f;
  auto families = collect_metrics(f.snap, {.max_partitions = 2});
  const auto text = to_prometheus_text(families);
  EXPECT_TRUE(has_line(text, "kafka_log_log_size{topic=\"a\",partition=\"0\"} 700"));
  EXPECT_TRUE(has_line(text, "kafka_log_log_logendoffset{topic=\"a\",partition=\"1\"} 3"));
  EXPECT_TRUE(has_line(text, "kafka_log_log_logstartoffset{topic=\"a\",partition=\"1\"} 2"));
  EXPECT_TRUE(
      has_line(text, "kafka_topic_partition_current_offset{topic=\"a\",partition=\"0\"} 7"));
  EXPECT_EQ(text.find("kafka_log_log_size{topic=\"b\""), std::string::npos);  // past the cut
  EXPECT_TRUE(has_line(text, "tarn_metrics_partitions_omitted 1"));
  EXPECT_TRUE(has_line(text, "kafka_topic_partitions{topic=\"b\"} 1"));  // topic-level stays
  EXPECT_TRUE(
      has_line(text, "kafka_consumergroup_lag{consumergroup=\"g\",topic=\"a\",partition=\"0\"} 2"));
  EXPECT_TRUE(has_line(
      text,
      "kafka_consumergroup_current_offset{consumergroup=\"g\",topic=\"a\",partition=\"1\"} 4"));
  EXPECT_TRUE(
      has_line(text, "kafka_consumergroup_lag{consumergroup=\"g\",topic=\"a\",partition=\"1\"} 0"));
  // kafka_exporter's per-topic sums and member counts.
  EXPECT_TRUE(has_line(text, "kafka_consumergroup_lag_sum{consumergroup=\"g\",topic=\"a\"} 2"));
  EXPECT_TRUE(
      has_line(text, "kafka_consumergroup_current_offset_sum{consumergroup=\"g\",topic=\"a\"} 9"));
  EXPECT_TRUE(has_line(text, "kafka_consumergroup_members{consumergroup=\"g\"} 2"));
  EXPECT_TRUE(has_line(text, "kafka_consumergroup_members{consumergroup=\"idle\"} 0"));
  EXPECT_TRUE(has_line(text, "# TYPE kafka_consumergroup_lag_sum gauge"));
  EXPECT_EQ(text.find("kafka_consumergroup_partitions"), std::string::npos);
  EXPECT_EQ(text.find("topic=\"gone\""), std::string::npos);

  const auto none = to_prometheus_text(collect_metrics(f.snap, {.max_partitions = 0}));
  EXPECT_EQ(none.find("kafka_log_log_size{"), std::string::npos);
  EXPECT_EQ(none.find("kafka_consumergroup_lag{"), std::string::npos);
  // The sums are per topic, so the cut leaves them whole: the lag of a-0 and a-1 both counted.
  EXPECT_TRUE(has_line(none, "kafka_consumergroup_lag_sum{consumergroup=\"g\",topic=\"a\"} 2"));
  EXPECT_TRUE(
      has_line(none, "kafka_consumergroup_current_offset_sum{consumergroup=\"g\",topic=\"a\"} 9"));
  EXPECT_TRUE(has_line(none, "tarn_metrics_partitions_omitted 3"));
}

TEST(metrics_export, log_cleaner_gauges_only_with_a_cleaner) {
  fixture f;
  EXPECT_EQ(to_prometheus_text(collect_metrics(f.snap, {})).find("logcleaner"), std::string::npos);
  f.snap.log_dir = "/data/tarn";
  f.snap.cleaner = broker::cleaner_snapshot{.max_dirty_percent = 83,
                                            .time_since_last_run_ms = 1500,
                                            .uncleanable_partitions_count = 1,
                                            .max_buffer_utilization_percent = 12,
                                            .cleaner_recopy_percent = 4,
                                            .max_clean_time_secs = 2,
                                            .max_compaction_delay_secs = 30};
  const auto text = to_prometheus_text(collect_metrics(f.snap, {}));
  EXPECT_TRUE(has_line(text, "kafka_log_logcleanermanager_max_dirty_percent 83")) << text;
  EXPECT_TRUE(has_line(text, "kafka_log_logcleanermanager_time_since_last_run_seconds 1.5"));
  EXPECT_TRUE(has_line(
      text,
      "kafka_log_logcleanermanager_uncleanable_partitions_count{logdirectory=\"/data/tarn\"} 1"));
  EXPECT_TRUE(has_line(text, "kafka_log_logcleaner_max_buffer_utilization_percent 12"));
  EXPECT_TRUE(has_line(text, "kafka_log_logcleaner_cleaner_recopy_percent 4"));
  EXPECT_TRUE(has_line(text, "kafka_log_logcleaner_max_clean_time_secs 2"));
  EXPECT_TRUE(has_line(text, "kafka_log_logcleaner_max_compaction_delay_secs 30"));
  EXPECT_TRUE(has_line(text, "# TYPE kafka_log_logcleanermanager_max_dirty_percent gauge"));
  EXPECT_TRUE(
      has_line(text, "# TYPE kafka_log_logcleanermanager_uncleanable_partitions_count untyped"));
}

TEST(metrics_export, http_gate_counters_when_given) {
  fixture f;
  const auto without = to_prometheus_text(collect_metrics(f.snap, {}));
  EXPECT_EQ(without.find("tarn_http_"), std::string::npos);
  export_options o;
  o.http = http_connection_counts{.accepted = 7, .refused = 2, .timed_out = 3};
  const auto text = to_prometheus_text(collect_metrics(f.snap, o));
  EXPECT_TRUE(has_line(text, "# TYPE tarn_http_connections_accepted_total counter"));
  EXPECT_TRUE(has_line(text, "tarn_http_connections_accepted_total 7")) << text;
  EXPECT_TRUE(has_line(text, "tarn_http_connections_refused_total 2"));
  EXPECT_TRUE(has_line(text, "tarn_http_requests_timed_out_total 3"));
}

TEST(metrics_export, network_and_single_node_gauges) {
  fixture f;
  const auto text = to_prometheus_text(collect_metrics(f.snap, {}));
  EXPECT_TRUE(has_line(text, "kafka_network_socketserver_networkprocessoravgidlepercent 0.75"));
  EXPECT_TRUE(has_line(text, "kafka_network_processor_idlepercent{networkprocessor=\"0\"} 0.5"));
  EXPECT_TRUE(has_line(text,
                       "kafka_server_socket_server_metrics_connection_count{listener=\"PLAINTEXT\","
                       "networkprocessor=\"0\"} 2"));
  EXPECT_TRUE(has_line(text, "kafka_server_replicamanager_underreplicatedpartitions 0"));
  EXPECT_TRUE(has_line(text, "kafka_controller_kafkacontroller_offlinepartitionscount 0"));
  EXPECT_TRUE(has_line(text, "kafka_controller_kafkacontroller_activecontrollercount 1"));
  const std::string partitions = std::to_string(f.snap.partitions.size());
  EXPECT_TRUE(has_line(text, "kafka_server_replicamanager_leadercount " + partitions));
  EXPECT_TRUE(has_line(text, "kafka_server_replicamanager_atminisrpartitioncount " + partitions));
  EXPECT_TRUE(has_line(text, "tarn_broker_ready 1"));
}

// In a cluster the gauges are the replica manager's counts over the partition states.
TEST(metrics_export, cluster_replication_gauges) {
  fixture f;
  f.snap.replication = broker::broker_snapshot::replication_gauges{3, 7, 2, 1, 1, 4, false};
  const auto text = to_prometheus_text(collect_metrics(f.snap, {}));
  EXPECT_TRUE(has_line(text, "kafka_server_replicamanager_leadercount 3"));
  EXPECT_TRUE(has_line(text, "kafka_server_replicamanager_partitioncount 7"));
  EXPECT_TRUE(has_line(text, "kafka_server_replicamanager_underreplicatedpartitions 2"));
  EXPECT_TRUE(has_line(text, "kafka_server_replicamanager_underminisrpartitioncount 1"));
  EXPECT_TRUE(has_line(text, "kafka_server_replicamanager_atminisrpartitioncount 1"));
  EXPECT_TRUE(has_line(text, "kafka_controller_kafkacontroller_offlinepartitionscount 4"));
  EXPECT_TRUE(has_line(text, "kafka_controller_kafkacontroller_activecontrollercount 0"));
}

TEST(metrics_export, openmetrics_names_counters_without_total_and_ends_with_eof) {
  fixture f;
  const auto text = to_openmetrics(collect_metrics(f.snap, {}));
  EXPECT_TRUE(has_line(text, "# TYPE kafka_server_brokertopicmetrics_messagesin counter"));
  EXPECT_TRUE(has_line(text, "kafka_server_brokertopicmetrics_messagesin_total{topic=\"a\"} 10"));
  EXPECT_TRUE(has_line(text, "# TYPE kafka_server_socket_server_metrics_connection_count unknown"));
  EXPECT_TRUE(
      has_line(text, "kafka_network_requestmetrics_totaltimems_count{request=\"Produce\"} 100"));
  EXPECT_TRUE(text.ends_with("\n# EOF\n"));
  EXPECT_TRUE(accepts_openmetrics("application/openmetrics-text;version=1.0.0,text/plain;q=0.5"));
  EXPECT_FALSE(accepts_openmetrics("text/plain;version=0.0.4;q=1,*/*;q=0.1"));
  EXPECT_FALSE(accepts_openmetrics(""));
}

TEST(metrics_export, label_values_are_escaped) {
  broker_metrics metrics;
  broker_snapshot snap;
  snap.metrics = &metrics;
  snap.partitions = {{"a", 0, 0, 1, 1, 1}};
  snap.committed_offsets = {{"we\"ird\\group\n", "a", 0, 0}};
  const auto text = to_openmetrics(collect_metrics(snap, {}));
  EXPECT_NE(text.find("consumergroup=\"we\\\"ird\\\\group\\n\""), std::string::npos) << text;
}

TEST(status_json, fields_and_escaping) {
  fixture f;
  f.snap.version = "v\"1";
  f.snap.uptime_ms = 1234;
  f.snap.log_dir = "/data";
  f.snap.log_dir_total_bytes = 100;
  f.snap.log_dir_free_bytes = 40;
  const auto json = status_json(f.snap);
  EXPECT_EQ(json,
            "{\"version\":\"v\\\"1\",\"kafka_version\":\"4.4.0\",\"node_id\":1,\"ready\":true,"
            "\"uptime_ms\":1234,\"listeners\":[{\"name\":\"PLAINTEXT\",\"host\":\"127.0.0.1\","
            "\"port\":9092}],\"log_dirs\":[{\"path\":\"/data\",\"total_bytes\":100,"
            "\"free_bytes\":40}],\"topics\":2,\"partitions\":3,\"log_size_bytes\":1000,"
            "\"connections\":3,\"groups_with_offsets\":1}");
  EXPECT_EQ(json_string(std::string("a\x01", 2)), "\"a\\u0001\"");
}

}  // namespace
}  // namespace tarn::observe
