// The metric families of /metrics and the two serializations. Names follow the JMX exporter's
// kafka-2_0_0.yml: `kafka.<domain><type=T, name=N[PerSec]...><>Count` becomes
// kafka_<domain>_<t>_<n>_total, `...><>Value` kafka_<domain>_<t>_<n>, a Yammer histogram's
// percentiles kafka_<domain>_<t>_<n>{quantile="0.99"} and its count _count (here a real summary,
// so it carries _sum too), all lower case; the MBean's other keys become labels.
#include "observe/metrics_export.h"

#include <prometheus/text_serializer.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <sstream>
#include <tuple>

namespace tarn::observe {

namespace {

using prometheus::ClientMetric;
using prometheus::MetricFamily;
using prometheus::MetricType;
using labels = std::vector<ClientMetric::Label>;

MetricFamily family(std::string name, std::string help, MetricType type) {
  MetricFamily f;
  f.name = std::move(name);
  f.help = std::move(help);
  f.type = type;
  return f;
}

void add_value(MetricFamily& f, labels l, double value) {
  ClientMetric m;
  m.label = std::move(l);
  if (f.type == MetricType::Counter) {
    m.counter.value = value;
  } else if (f.type == MetricType::Untyped) {
    m.untyped.value = value;
  } else {
    m.gauge.value = value;
  }
  f.metric.push_back(std::move(m));
}

// The percentiles Kafka's Yammer histograms publish (50th ... 999th), in milliseconds as the
// MBeans' *TimeMs are.
void add_summary_ms(MetricFamily& f, labels l, const latency_histogram::snapshot& h) {
  ClientMetric m;
  m.label = std::move(l);
  m.summary.sample_count = h.count;
  m.summary.sample_sum = static_cast<double>(h.sum_us) / 1000.0;
  for (double q : {0.50, 0.75, 0.95, 0.98, 0.99, 0.999}) {
    m.summary.quantile.push_back({q, h.quantile_us(q) / 1000.0});
  }
  f.metric.push_back(std::move(m));
}

std::string escape_help(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

std::string escape_label(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"') {
      out += "\\\"";
    } else {
      out += c;
    }
  }
  return out;
}

std::string number(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  std::ostringstream o;
  o.imbue(std::locale::classic());
  o.precision(17);
  o << v;
  return o.str();
}

void write_sample(std::string& out, std::string_view name, const labels& l,
                  const ClientMetric::Label* extra, const std::string& value) {
  out += name;
  if (!l.empty() || extra != nullptr) {
    out += '{';
    bool first = true;
    auto put = [&](const ClientMetric::Label& x) {
      if (!first) out += ',';
      first = false;
      out += x.name;
      out += "=\"";
      out += escape_label(x.value);
      out += '"';
    };
    for (const auto& x : l) put(x);
    if (extra != nullptr) put(*extra);
    out += '}';
  }
  out += ' ';
  out += value;
  out += '\n';
}

// The partitions whose per-partition series are exported: the first `max` in (topic,
// partition) order (the snapshot is sorted so).
struct partition_cut {
  size_t kept = 0;
  size_t omitted = 0;
};

partition_cut cut(const broker::broker_snapshot& s, const export_options& o) {
  partition_cut c;
  c.kept = std::min(s.partitions.size(), static_cast<size_t>(std::max(o.max_partitions, 0)));
  c.omitted = s.partitions.size() - c.kept;
  return c;
}

bool partition_kept(const broker::broker_snapshot& s, size_t kept, std::string_view topic,
                    int32_t partition) {
  if (kept == 0) return false;
  const auto& last = s.partitions[kept - 1];
  return std::tie(topic, partition) <= std::tie(last.topic, last.partition);
}

void broker_topic_metrics(const broker::broker_snapshot& s, std::vector<MetricFamily>& out) {
  struct cell {
    const char* name;
    const char* help;
    metric_counter broker::topic_metrics::*member;
  };
  static const cell cells[] = {
      {"messagesin", "Records appended (BrokerTopicMetrics MessagesInPerSec)",
       &broker::topic_metrics::messages_in},
      {"bytesin", "Record batch bytes appended by producers (BytesInPerSec)",
       &broker::topic_metrics::bytes_in},
      {"bytesout", "Record batch bytes returned to fetchers (BytesOutPerSec)",
       &broker::topic_metrics::bytes_out},
      {"bytesrejected", "Bytes of batches refused as too large (BytesRejectedPerSec)",
       &broker::topic_metrics::bytes_rejected},
      {"failedproducerequests", "Partition appends that failed (FailedProduceRequestsPerSec)",
       &broker::topic_metrics::failed_produce_requests},
      {"failedfetchrequests", "Partition reads that failed (FailedFetchRequestsPerSec)",
       &broker::topic_metrics::failed_fetch_requests},
      {"totalproducerequests", "Partition appends asked for (TotalProduceRequestsPerSec)",
       &broker::topic_metrics::total_produce_requests},
      {"totalfetchrequests", "Partition reads asked for (TotalFetchRequestsPerSec)",
       &broker::topic_metrics::total_fetch_requests},
  };
  for (const auto& c : cells) {
    auto f = family(std::string("kafka_server_brokertopicmetrics_") + c.name + "_total",
                    std::string(c.help) + "; without a topic label: the whole broker",
                    MetricType::Counter);
    if (s.metrics != nullptr) {
      add_value(f, {}, static_cast<double>((s.metrics->all_topics.*c.member).value()));
    }
    for (const auto& [topic, cells_of_topic] : s.topics) {
      add_value(f, {{"topic", topic}}, static_cast<double>(((*cells_of_topic).*c.member).value()));
    }
    out.push_back(std::move(f));
  }
}

// The request label values of RequestMetrics and their cells. Kafka marks a consumer's Fetch
// twice, under "Fetch" and "FetchConsumer" (RequestChannel.updateRequestMetrics; a follower's
// under "FetchFollower"), and Kafka dashboards chart FetchConsumer. tarn serves no follower
// fetches, so every Fetch is a consumer's: the Fetch cells are exported under both names.
std::vector<std::pair<std::string, const broker::request_metrics*>> request_names(
    const broker::broker_snapshot& s) {
  std::vector<std::pair<std::string, const broker::request_metrics*>> out;
  for (const auto& api : s.apis) {
    const broker::request_metrics* m = s.metrics->api(api.key);
    if (m == nullptr) continue;
    out.emplace_back(api.name, m);
    if (api.key == 1) out.emplace_back("FetchConsumer", m);
  }
  return out;
}

void request_metrics(const broker::broker_snapshot& s, std::vector<MetricFamily>& out) {
  if (s.metrics == nullptr) return;
  const auto names = request_names(s);
  auto requests = family("kafka_network_requestmetrics_requests_total",
                         "Requests answered, by API and version (RequestMetrics RequestsPerSec)",
                         MetricType::Counter);
  for (const auto& [name, m] : names) {
    for (size_t v = 0; v < m->requests_by_version.size(); ++v) {
      const uint64_t n = m->requests_by_version[v].value();
      if (n == 0) continue;
      add_value(requests, {{"request", name}, {"version", std::to_string(v)}},
                static_cast<double>(n));
    }
  }
  out.push_back(std::move(requests));
  struct timing {
    const char* name;
    const char* help;
    latency_histogram broker::request_metrics::*member;
  };
  static const timing timings[] = {
      {"requestqueuetimems", "Time from read until the handler starts, ms (RequestQueueTimeMs)",
       &broker::request_metrics::request_queue_time},
      {"localtimems", "Time in the handler, ms (LocalTimeMs)",
       &broker::request_metrics::local_time},
      {"responsesendtimems", "Time from the answer until it is written, ms (ResponseSendTimeMs)",
       &broker::request_metrics::response_send_time},
      {"totaltimems", "Time from read until the answer is written, ms (TotalTimeMs)",
       &broker::request_metrics::total_time},
  };
  for (const auto& t : timings) {
    auto f =
        family(std::string("kafka_network_requestmetrics_") + t.name,
               std::string(t.help) + "; quantiles since the broker started", MetricType::Summary);
    for (const auto& [name, m] : names) {
      auto snap = ((*m).*t.member).read();
      if (snap.count == 0) continue;
      add_summary_ms(f, {{"request", name}}, snap);
    }
    out.push_back(std::move(f));
  }
}

void network_metrics(const broker::broker_snapshot& s, std::vector<MetricFamily>& out) {
  double avg = 0;
  for (double r : s.network_idle_ratio) avg += r;
  if (!s.network_idle_ratio.empty()) avg /= static_cast<double>(s.network_idle_ratio.size());
  auto avg_idle = family("kafka_network_socketserver_networkprocessoravgidlepercent",
                         "Share of time the event loops were idle, 0..1, over the last interval "
                         "(SocketServer NetworkProcessorAvgIdlePercent)",
                         MetricType::Gauge);
  add_value(avg_idle, {}, avg);
  out.push_back(std::move(avg_idle));
  auto idle = family("kafka_network_processor_idlepercent",
                     "Share of time one event loop was idle, 0..1 (Processor IdlePercent)",
                     MetricType::Gauge);
  for (size_t i = 0; i < s.network_idle_ratio.size(); ++i) {
    add_value(idle, {{"networkprocessor", std::to_string(i)}}, s.network_idle_ratio[i]);
  }
  out.push_back(std::move(idle));

  const std::string listener = s.listeners.empty() ? "" : s.listeners.front().name;
  // Untyped, as the JMX exporter exports an attribute its rule gives no type: a gauge named
  // *_count is what promtool's lint refuses (the name belongs to summaries and histograms).
  auto connections = family("kafka_server_socket_server_metrics_connection_count",
                            "Open client connections per event loop (socket-server-metrics "
                            "connection-count)",
                            MetricType::Untyped);
  for (size_t i = 0; i < s.loop_connections.size(); ++i) {
    add_value(connections, {{"listener", listener}, {"networkprocessor", std::to_string(i)}},
              static_cast<double>(s.loop_connections[i]));
  }
  out.push_back(std::move(connections));

  auto used = family("kafka_network_socketserver_memorypoolused",
                     "Bytes of requests read and not yet answered (SocketServer MemoryPoolUsed; "
                     "counted when queued.max.request.bytes bounds them)",
                     MetricType::Gauge);
  add_value(used, {}, static_cast<double>(s.request_memory_used_bytes));
  out.push_back(std::move(used));
  if (s.request_memory_limit_bytes > 0) {
    auto available =
        family("kafka_network_socketserver_memorypoolavailable",
               "Bytes left of queued.max.request.bytes (MemoryPoolAvailable)", MetricType::Gauge);
    add_value(available, {},
              static_cast<double>(std::max<int64_t>(
                  0, s.request_memory_limit_bytes - s.request_memory_used_bytes)));
    out.push_back(std::move(available));
  }
}

void replica_metrics(const broker::broker_snapshot& s, std::vector<MetricFamily>& out) {
  auto gauge = [&](const char* name, const char* help, double v) {
    auto f = family(name, help, MetricType::Gauge);
    add_value(f, {}, v);
    out.push_back(std::move(f));
  };
  // One node: every local partition is led, in sync, online and at its effective min ISR (as
  // Kafka's, min.insync.replicas capped by the replica count: 1), and the node is its own
  // controller. In a cluster: counted over the partition states (replica_manager::gauges).
  const auto local = static_cast<int64_t>(s.partitions.size());
  const broker::broker_snapshot::replication_gauges r =
      s.replication
          ? *s.replication
          : broker::broker_snapshot::replication_gauges{local, local, 0, 0, local, 0, true};
  gauge("kafka_server_replicamanager_underreplicatedpartitions",
        "Partitions led here with fewer in-sync replicas than replicas",
        static_cast<double>(r.under_replicated));
  gauge("kafka_server_replicamanager_underminisrpartitioncount",
        "Partitions led here with fewer in-sync replicas than min.insync.replicas",
        static_cast<double>(r.under_min_isr));
  gauge("kafka_server_replicamanager_atminisrpartitioncount",
        "Partitions led here with exactly min.insync.replicas in-sync replicas",
        static_cast<double>(r.at_min_isr));
  gauge("kafka_server_replicamanager_partitioncount", "Partitions with a replica on this broker",
        static_cast<double>(r.partitions));
  gauge("kafka_server_replicamanager_leadercount", "Partitions this broker leads",
        static_cast<double>(r.leaders));
  gauge("kafka_controller_kafkacontroller_offlinepartitionscount",
        "Partitions without a live leader (counted by the active controller only)",
        static_cast<double>(r.offline));
  gauge("kafka_controller_kafkacontroller_activecontrollercount",
        "Whether this node is the active controller", r.active_controller ? 1 : 0);
}

void log_metrics(const broker::broker_snapshot& s, const partition_cut& c,
                 std::vector<MetricFamily>& out) {
  auto size = family("kafka_log_log_size", "Bytes of the partition's log segments (Log Size)",
                     MetricType::Gauge);
  auto end = family("kafka_log_log_logendoffset", "The partition's log end offset (LogEndOffset)",
                    MetricType::Gauge);
  auto start = family("kafka_log_log_logstartoffset",
                      "The partition's log start offset (LogStartOffset)", MetricType::Gauge);
  auto current = family("kafka_topic_partition_current_offset",
                        "The partition's newest offset, the high watermark (kafka_exporter)",
                        MetricType::Gauge);
  auto oldest = family("kafka_topic_partition_oldest_offset",
                       "The partition's oldest offset, the log start offset (kafka_exporter)",
                       MetricType::Gauge);
  for (size_t i = 0; i < c.kept; ++i) {
    const auto& p = s.partitions[i];
    labels l{{"topic", p.topic}, {"partition", std::to_string(p.partition)}};
    add_value(size, l, static_cast<double>(p.size_bytes));
    add_value(end, l, static_cast<double>(p.log_end_offset));
    add_value(start, l, static_cast<double>(p.log_start_offset));
    add_value(current, l, static_cast<double>(p.high_watermark));
    add_value(oldest, l, static_cast<double>(p.log_start_offset));
  }
  out.push_back(std::move(size));
  out.push_back(std::move(end));
  out.push_back(std::move(start));
  out.push_back(std::move(current));
  out.push_back(std::move(oldest));

  auto partitions = family("kafka_topic_partitions", "Partitions of the topic (kafka_exporter)",
                           MetricType::Gauge);
  // The snapshot is in (topic, partition) order: a topic's partitions are one run (no map of
  // 10,000 string keys a scrape).
  for (size_t i = 0; i < s.partitions.size();) {
    size_t j = i + 1;
    while (j < s.partitions.size() && s.partitions[j].topic == s.partitions[i].topic) ++j;
    add_value(partitions, {{"topic", s.partitions[i].topic}}, static_cast<double>(j - i));
    i = j;
  }
  out.push_back(std::move(partitions));
  auto brokers = family("kafka_brokers", "Brokers in the cluster (kafka_exporter; one node)",
                        MetricType::Gauge);
  add_value(brokers, {}, 1);
  out.push_back(std::move(brokers));

  if (s.metrics != nullptr) {
    auto flush = family("kafka_log_logflushstats_logflushrateandtimems",
                        "Time of the scheduled flushes of dirty logs, ms (LogFlushStats "
                        "LogFlushRateAndTimeMs); quantiles since the broker started",
                        MetricType::Summary);
    add_summary_ms(flush, {}, s.metrics->log_flush_time.read());
    out.push_back(std::move(flush));
  }
}

// The log cleaner's gauges (kafka.log:type=LogCleanerManager and type=LogCleaner), only when the
// cleaner is enabled: Kafka registers them with the LogCleaner it creates then.
void cleaner_metrics(const broker::broker_snapshot& s, std::vector<MetricFamily>& out) {
  if (!s.cleaner) return;
  const auto& c = *s.cleaner;
  auto gauge = [&](const char* name, const char* help, double v) {
    auto f = family(name, help, MetricType::Gauge);
    add_value(f, {}, v);
    out.push_back(std::move(f));
  };
  gauge("kafka_log_logcleanermanager_max_dirty_percent",
        "Cleanable share of the dirtiest compacted log at the cleaner's last look, percent "
        "(max-dirty-percent)",
        c.max_dirty_percent);
  // The JMX exporter's names would be ..._time_since_last_run_ms and a gauge
  // ..._uncleanable_partitions_count; promtool's lint refuses an abbreviated unit and a gauge
  // named *_count, so the first is in seconds and the second untyped (as connection_count).
  gauge("kafka_log_logcleanermanager_time_since_last_run_seconds",
        "Seconds since a cleaner thread last looked for a log to clean (time-since-last-run-ms / "
        "1000)",
        static_cast<double>(c.time_since_last_run_ms) / 1000.0);
  auto uncleanable = family("kafka_log_logcleanermanager_uncleanable_partitions_count",
                            "Partitions the cleaner gave up on after an unexpected error "
                            "(uncleanable-partitions-count)",
                            MetricType::Untyped);
  add_value(uncleanable, {{"logdirectory", s.log_dir}}, c.uncleanable_partitions_count);
  out.push_back(std::move(uncleanable));
  gauge("kafka_log_logcleaner_max_buffer_utilization_percent",
        "Highest dedupe buffer use of the cleaner threads' last cleanings, percent "
        "(max-buffer-utilization-percent)",
        c.max_buffer_utilization_percent);
  gauge("kafka_log_logcleaner_cleaner_recopy_percent",
        "Bytes written per byte read by the cleaner threads' last cleanings, percent "
        "(cleaner-recopy-percent)",
        c.cleaner_recopy_percent);
  gauge("kafka_log_logcleaner_max_clean_time_secs",
        "Longest of the cleaner threads' last cleanings, whole seconds (max-clean-time-secs)",
        c.max_clean_time_secs);
  gauge("kafka_log_logcleaner_max_compaction_delay_secs",
        "Longest a compacted log's oldest dirty segment was past max.compaction.lag.ms when a "
        "cleaner thread last chose a log, whole seconds (max-compaction-delay-secs)",
        c.max_compaction_delay_secs);
}

// kafka_exporter's consumer group series, computed now from the committed offsets and the high
// watermarks: lag = high watermark - committed offset (never below 0). The per-partition series
// stop at the partition cut; the per-topic sums and the member counts are always complete, like
// the other per-topic series, so a group's total lag is right however many partitions it reads.
void consumer_group_metrics(const broker::broker_snapshot& s, const partition_cut& c,
                            std::vector<MetricFamily>& out) {
  auto current =
      family("kafka_consumergroup_current_offset",
             "The group's committed offset of the partition (kafka_exporter)", MetricType::Gauge);
  auto current_sum = family("kafka_consumergroup_current_offset_sum",
                            "The group's committed offsets summed over the topic's partitions "
                            "(kafka_exporter)",
                            MetricType::Gauge);
  auto lag = family("kafka_consumergroup_lag",
                    "Records between the group's committed offset and the high watermark "
                    "(kafka_exporter)",
                    MetricType::Gauge);
  auto lag_sum = family("kafka_consumergroup_lag_sum",
                        "The group's lag summed over the topic's partitions (kafka_exporter)",
                        MetricType::Gauge);
  auto members = family("kafka_consumergroup_members", "Members of the group (kafka_exporter)",
                        MetricType::Gauge);
  // A committed offset's high watermark by binary search in the sorted snapshot.
  auto hwm = [&s](std::string_view topic, int32_t partition) -> std::optional<int64_t> {
    auto it =
        std::lower_bound(s.partitions.begin(), s.partitions.end(),
                         std::pair<std::string_view, int32_t>{topic, partition},
                         [](const broker::partition_snapshot& p, const auto& key) {
                           return std::tie(p.topic, p.partition) < std::tie(key.first, key.second);
                         });
    if (it == s.partitions.end() || it->topic != topic || it->partition != partition) {
      return std::nullopt;
    }
    return it->high_watermark;
  };
  struct sums {
    int64_t current = 0;
    int64_t lag = 0;
  };
  std::map<std::pair<std::string_view, std::string_view>, sums> per_topic;  // group, topic
  for (const auto& o : s.committed_offsets) {
    const auto high_watermark = hwm(o.topic, o.partition);
    if (!high_watermark || o.offset < 0) continue;  // a deleted topic, or no offset
    const int64_t partition_lag = std::max<int64_t>(0, *high_watermark - o.offset);
    sums& t = per_topic[{o.group, o.topic}];
    t.current += o.offset;
    t.lag += partition_lag;
    if (!partition_kept(s, c.kept, o.topic, o.partition)) continue;
    labels l{
        {"consumergroup", o.group}, {"topic", o.topic}, {"partition", std::to_string(o.partition)}};
    add_value(current, l, static_cast<double>(o.offset));
    add_value(lag, l, static_cast<double>(partition_lag));
  }
  for (const auto& [key, t] : per_topic) {
    labels l{{"consumergroup", std::string(key.first)}, {"topic", std::string(key.second)}};
    add_value(current_sum, l, static_cast<double>(t.current));
    add_value(lag_sum, l, static_cast<double>(t.lag));
  }
  for (const auto& g : s.group_members) {
    add_value(members, {{"consumergroup", g.group}}, static_cast<double>(g.members));
  }
  out.push_back(std::move(current));
  out.push_back(std::move(current_sum));
  out.push_back(std::move(lag));
  out.push_back(std::move(lag_sum));
  out.push_back(std::move(members));
}

}  // namespace

std::vector<MetricFamily> collect_metrics(const broker::broker_snapshot& s,
                                          const export_options& options) {
  std::vector<MetricFamily> out;
  const partition_cut c = cut(s, options);
  broker_topic_metrics(s, out);
  request_metrics(s, out);
  network_metrics(s, out);
  replica_metrics(s, out);
  log_metrics(s, c, out);
  cleaner_metrics(s, out);
  consumer_group_metrics(s, c, out);
  auto omitted = family("tarn_metrics_partitions_omitted",
                        "Partitions left out of the per-partition series "
                        "(http.metrics.max.partitions)",
                        MetricType::Gauge);
  add_value(omitted, {}, static_cast<double>(c.omitted));
  out.push_back(std::move(omitted));
  auto up = family("tarn_broker_ready", "1 once the logs are recovered and the listeners accept",
                   MetricType::Gauge);
  add_value(up, {}, s.ready ? 1 : 0);
  out.push_back(std::move(up));
  if (options.http) {
    const struct {
      const char* name;
      const char* help;
      uint64_t value;
    } gate[] = {
        {"tarn_http_connections_accepted_total", "HTTP connections accepted",
         options.http->accepted},
        {"tarn_http_connections_refused_total",
         "HTTP connections answered 503 because too many were open", options.http->refused},
        {"tarn_http_requests_timed_out_total",
         "HTTP connections answered 408 because their request did not arrive in time",
         options.http->timed_out},
    };
    for (const auto& h : gate) {
      auto f = family(h.name, h.help, MetricType::Counter);
      add_value(f, {}, static_cast<double>(h.value));
      out.push_back(std::move(f));
    }
  }
  return out;
}

std::string to_prometheus_text(const std::vector<MetricFamily>& families) {
  return prometheus::TextSerializer().Serialize(families);
}

std::string to_openmetrics(const std::vector<MetricFamily>& families) {
  std::string out;
  out.reserve(4096);
  for (const auto& f : families) {
    std::string name = f.name;
    const char* type = "unknown";
    switch (f.type) {
      case MetricType::Counter:
        type = "counter";
        if (name.ends_with("_total")) name.resize(name.size() - 6);
        break;
      case MetricType::Gauge:
        type = "gauge";
        break;
      case MetricType::Summary:
        type = "summary";
        break;
      case MetricType::Histogram:
        type = "histogram";
        break;
      default:
        break;
    }
    out += "# TYPE " + name + " " + type + "\n";
    out += "# HELP " + name + " " + escape_help(f.help) + "\n";
    for (const auto& m : f.metric) {
      switch (f.type) {
        case MetricType::Counter:
          write_sample(out, name + "_total", m.label, nullptr, number(m.counter.value));
          break;
        case MetricType::Summary:
          for (const auto& q : m.summary.quantile) {
            const ClientMetric::Label ql{"quantile", number(q.quantile)};
            write_sample(out, name, m.label, &ql, number(q.value));
          }
          write_sample(out, name + "_sum", m.label, nullptr, number(m.summary.sample_sum));
          write_sample(out, name + "_count", m.label, nullptr,
                       std::to_string(m.summary.sample_count));
          break;
        case MetricType::Untyped:
          write_sample(out, name, m.label, nullptr, number(m.untyped.value));
          break;
        default:
          write_sample(out, name, m.label, nullptr, number(m.gauge.value));
          break;
      }
    }
  }
  out += "# EOF\n";
  return out;
}

bool accepts_openmetrics(std::string_view accept) {
  return accept.find("application/openmetrics-text") != std::string_view::npos;
}

}  // namespace tarn::observe
