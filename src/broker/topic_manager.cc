// The broker's topics: log manager, cluster id, topic-config defaults (see topic_manager.h).
#include "broker/topic_manager.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <ctime>
#include <utility>

#include "broker/dynamic_config.h"
#include "broker/properties.h"
#include "cluster/cluster_membership.h"
#include "cluster/etcd_metadata_log.h"
#include "cluster/etcd_partition_store.h"
#include "coordinator/offsets_log.h"
#include "storage/io.h"
#include "storage/topic_metadata.h"

namespace tarn::broker {

int64_t wall_clock_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

storage::config_map topic_defaults_from(const broker_config& config) {
  storage::config_map out;
  for (const auto& [key, value] : config.explicitly_set) out.emplace(key, value);
  return out;
}

result<std::string, std::string> load_or_create_meta_properties(const std::string& log_dir,
                                                                int32_t node_id,
                                                                const cluster_id_agreement& agree) {
  const std::string path = log_dir + "/" + meta_properties_file_name;
  std::error_code ec;
  if (std::filesystem::exists(path, ec)) {
    auto props = load_properties_file(path);
    if (!props) return fail(props.error());
    std::string cluster_id, stored_node;
    for (const auto& [k, v] : *props) {
      if (k == "cluster.id") cluster_id = v;
      if (k == "node.id") stored_node = v;
    }
    if (cluster_id.empty()) return fail(fmt::format("{} has no cluster.id", path));
    if (!stored_node.empty() && stored_node != std::to_string(node_id)) {
      return fail(fmt::format(
          "Stored node id {} doesn't match previous node id {} in {}. If you moved your data, "
          "make sure your configured node id matches. If you intend to create a new node, you "
          "should remove all data in your data directories.",
          node_id, stored_node, path));
    }
    if (agree) {
      auto agreed = agree(cluster_id);
      if (!agreed) return fail(agreed.error());
      if (*agreed != cluster_id) {
        return fail(fmt::format(
            "The Cluster ID {} doesn't match stored clusterId {} in meta.properties. The broker "
            "is trying to join the wrong cluster. Configured etcd.connect may be wrong.",
            *agreed, cluster_id));
      }
    }
    return cluster_id;
  }
  std::string cluster_id = storage::uuid::random().to_string();
  if (agree) {
    auto agreed = agree(cluster_id);
    if (!agreed) return fail(agreed.error());
    cluster_id = *agreed;
  }
  std::time_t t = std::time(nullptr);
  char when[64];
  std::strftime(when, sizeof(when), "%a %b %d %H:%M:%S UTC %Y", std::gmtime(&t));
  std::string text = fmt::format("#\n#{}\nnode.id={}\ndirectory.id={}\nversion=1\ncluster.id={}\n",
                                 when, node_id, storage::uuid::random().to_string(), cluster_id);
  if (auto w = storage::write_file_atomic(path, text); !w) return fail(w.error().message);
  return cluster_id;
}

namespace {

void log_cleaner_line(bool warning, const std::string& line) {
  if (warning) {
    spdlog::warn("log cleaner: {}", line);
  } else {
    spdlog::info("log cleaner: {}", line);
  }
}

storage::cleaner_config cleaner_config_of(const broker_config& config) {
  storage::cleaner_config cleaner;
  cleaner.enable = config.log_cleaner_enable;
  cleaner.threads = config.log_cleaner_threads;
  cleaner.dedupe_buffer_size = config.log_cleaner_dedupe_buffer_size;
  cleaner.dedupe_buffer_load_factor = config.log_cleaner_io_buffer_load_factor;
  cleaner.io_buffer_size = config.log_cleaner_io_buffer_size;
  cleaner.max_message_size = config.message_max_bytes;
  cleaner.max_io_bytes_per_second = config.log_cleaner_io_max_bytes_per_second;
  cleaner.backoff_ms = config.log_cleaner_backoff_ms;
  return cleaner;
}

bool same_cleaner(const storage::cleaner_config& a, const storage::cleaner_config& b) {
  return a.enable == b.enable && a.threads == b.threads &&
         a.dedupe_buffer_size == b.dedupe_buffer_size &&
         a.dedupe_buffer_load_factor == b.dedupe_buffer_load_factor &&
         a.io_buffer_size == b.io_buffer_size && a.max_message_size == b.max_message_size &&
         a.max_io_bytes_per_second == b.max_io_bytes_per_second && a.backoff_ms == b.backoff_ms;
}

result<std::unique_ptr<cluster::metadata_store>, std::string> open_local_store(
    const std::string& log_dir) {
  cluster::local_store_report store_report;
  auto store = cluster::local_metadata_store::open(log_dir, 1000, &store_report);
  if (!store) {
    return fail(
        fmt::format("cannot open the metadata log in {}: {}", log_dir, store.error().message));
  }
  if (store_report.imported_topics >= 0) {
    spdlog::info("log directory {}: {} topic(s) imported from {} into the metadata log", log_dir,
                 store_report.imported_topics, storage::topic_metadata_file_name);
  }
  if (store_report.recovery.torn_bytes > 0) {
    spdlog::warn("metadata log in {}: cut a torn tail of {} byte(s) (a change never acknowledged)",
                 log_dir, store_report.recovery.torn_bytes);
  }
  return std::unique_ptr<cluster::metadata_store>(std::move(*store));
}

}  // namespace

result<broker_config, std::string> topic_manager::effective_config(
    const broker_config& static_config, cluster::metadata_store& store) {
  const auto dynamic_default = store.broker_configs("");
  const auto dynamic_node = store.broker_configs(std::to_string(static_config.node_id));
  if (dynamic_default.empty() && dynamic_node.empty()) return static_config;
  const auto known = known_broker_config_keys();
  auto is_known = [&](const std::string& k) {
    return std::binary_search(known.begin(), known.end(), k);
  };
  std::map<std::string, std::string> merged = static_config.explicitly_set;
  for (const auto* layer : {&dynamic_default, &dynamic_node}) {
    for (const auto& [k, v] : *layer) {
      if (is_known(k)) merged[k] = v;
    }
  }
  properties overrides(merged.begin(), merged.end());
  return make_broker_config(properties{}, overrides);
}

result<bool, std::string> topic_manager::apply_dynamic_configs(const broker_config& static_config) {
  result<broker_config, std::string> config = static_config;
  storage::cleaner_config before;
  {
    // Read under the control lock, so that of two callers (a handler and the config follower)
    // the later one applies the newer configs.
    auto guard = control_lock();
    config = effective_config(static_config, *metadata_);
    if (!config) return fail(config.error());
    if (config->explicitly_set == effective_.explicitly_set) return false;
    before = cleaner_config_of(effective_);
    if (auto s = logs_->set_broker_props(topic_defaults_from(*config)); !s) {
      return fail(s.error().message);
    }
    std::unique_lock maps(logs_->map_mutex());  // read_lock() holders read effective_
    effective_ = *config;
  }
  const storage::cleaner_config after = cleaner_config_of(*config);
  if (same_cleaner(before, after)) return true;
  logs_->stop_cleaner();
  auto guard = control_lock();
  auto restarted = logs_->restart_cleaner(after, log_cleaner_line);
  if (!restarted) return fail(restarted.error().message);
  spdlog::info("log cleaner reconfigured: {} thread(s){}", after.threads,
               after.enable ? "" : " (disabled)");
  return true;
}

std::optional<storage::config_map> topic_manager::topic_overrides(std::string_view name) {
  if (const storage::topic_info* t = logs_->find_topic(name)) return t->overrides;
  if (find_remote_topic(name)) return metadata_->topic_configs(name);
  return std::nullopt;
}

result<void, storage::storage_error> topic_manager::set_topic_overrides(
    std::string_view name, const storage::config_map& from, const storage::config_map& to) {
  if (logs_->find_topic(name) != nullptr || !find_remote_topic(name)) {
    return logs_->set_topic_config(name, to);
  }
  if (auto v = storage::validate_topic_configs(to); !v) return fail(v.error());
  if (auto v = storage::resolve_log_config(to, logs_->broker_props()); !v) return fail(v.error());
  return metadata_->change_topic_configs(name, from, to);
}

result<bool, std::string> topic_manager::adopt_topic_configs(const std::string& name) {
  auto guard = control_lock();  // before the journal's lock, as the log manager's writes
  const storage::config_map recorded = metadata_->topic_configs(name);
  const storage::topic_info* t = logs_->find_topic(name);
  if (t == nullptr || t->overrides == recorded) return false;
  if (auto a = logs_->adopt_topic_config(name, recorded); !a) return fail(a.error().message);
  return true;
}

std::map<storage::uuid, storage::config_map> topic_manager::cluster_topic_configs() const {
  std::map<storage::uuid, storage::config_map> out;
  if (etcd_log_ == nullptr) return out;
  auto g = etcd_log_->lock();
  const cluster::metadata_image& image = etcd_log_->image();
  for (const auto& [id, t] : image.topics) {
    const auto* c = image.find_configs(cluster::config_resource_topic, t.name);
    out.emplace(id, c != nullptr ? *c : storage::config_map{});
  }
  return out;
}

std::string cluster_prefix(std::string_view cluster_id) {
  return fmt::format("{}{}/", cluster_key_root, cluster_id);
}

void topic_manager::refresh_remote_topics(const cluster::metadata_image& image, int32_t node_id) {
  std::map<std::string, remote_topic, std::less<>> remote;
  for (const auto& [id, t] : image.topics) {
    // The internal topics are listed like any other: one for the cluster each.
    if (t.leader < 0 || t.leader == node_id) continue;
    remote.emplace(t.name, remote_topic{t.name, id, t.partitions, t.leader});
  }
  std::lock_guard g(remote_mu_);
  remote_ = std::move(remote);
  if (on_topics_changed_) on_topics_changed_();
}

void topic_manager::on_cluster_topics_changed(std::function<void()> handler) {
  std::lock_guard g(remote_mu_);
  on_topics_changed_ = std::move(handler);
}

std::optional<storage::topic_record> topic_manager::cluster_topic(
    const storage::uuid& topic_id) const {
  if (etcd_log_ == nullptr) return std::nullopt;
  auto g = etcd_log_->lock();
  const cluster::metadata_image& image = etcd_log_->image();
  auto it = image.topics.find(topic_id);
  if (it == image.topics.end()) return std::nullopt;
  storage::topic_record r{it->second.name, topic_id, it->second.partitions, {}};
  if (const auto* c = image.find_configs(cluster::config_resource_topic, it->second.name)) {
    r.overrides = *c;
  }
  return r;
}

topic_manager::creation_mark::creation_mark(const topic_manager& topics, std::string name)
    : topics_(topics), name_(std::move(name)) {
  std::lock_guard g(topics_.creating_mu_);
  topics_.creating_.insert(name_);
}

topic_manager::creation_mark::~creation_mark() {
  std::lock_guard g(topics_.creating_mu_);
  topics_.creating_.erase(name_);
}

bool topic_manager::being_created(std::string_view name) const {
  std::lock_guard g(creating_mu_);
  return creating_.find(name) != creating_.end();
}

std::vector<remote_topic> topic_manager::remote_topics() const {
  std::lock_guard g(remote_mu_);
  std::vector<remote_topic> out;
  out.reserve(remote_.size());
  for (const auto& [name, t] : remote_) out.push_back(t);
  return out;
}

std::optional<remote_topic> topic_manager::find_remote_topic(std::string_view name) const {
  std::lock_guard g(remote_mu_);
  auto it = remote_.find(name);
  if (it == remote_.end()) return std::nullopt;
  return it->second;
}

std::optional<topic_manager::topic_ref> topic_manager::find_cluster_topic(std::string_view name) {
  {
    auto maps = read_lock();
    if (const storage::topic_info* t = logs().find_topic(name)) {
      return topic_ref{t->topic_id, t->partitions};
    }
  }
  if (auto r = find_remote_topic(name)) return topic_ref{r->topic_id, r->partitions};
  return std::nullopt;
}

result<std::unique_ptr<topic_manager>, std::string> topic_manager::open(
    const broker_config& config, const std::string& log_dir) {
  std::unique_ptr<topic_manager> m(new topic_manager());
  const std::vector<std::string> etcd_endpoints = cluster::etcd_endpoint_urls(config.etcd_connect);
  m->in_cluster_ = !etcd_endpoints.empty();
  cluster_id_agreement agree;
  if (m->in_cluster_) {
    agree = [&etcd_endpoints](const std::string& proposed) {
      return cluster::agree_cluster_id(etcd_endpoints, std::string(cluster_key_root), proposed);
    };
  }
  auto cluster = load_or_create_meta_properties(log_dir, config.node_id, agree);
  if (!cluster) return fail(cluster.error());
  m->cluster_id_ = std::move(*cluster);

  std::set<std::pair<storage::uuid, int32_t>> replicated;
  if (m->in_cluster_) {
    // The cluster's metadata log in etcd (docs/cluster.md) instead of the local one.
    cluster::etcd_metadata_options o;
    o.client.endpoints = etcd_endpoints;
    o.prefix = cluster_prefix(m->cluster_id_);
    o.node_id = config.node_id;
    // The topics this broker replicates (their partition states name it a replica, leading or
    // following: leadership moves): loaded like its own, so that a restart keeps their logs
    // instead of setting them aside as stray.
    std::set<storage::uuid> followed;
    if (auto client = cluster::etcd::etcd_client::create(o.client)) {
      const std::string dir = o.prefix + "partitions/";
      if (auto states = (*client)->range(dir, cluster::etcd::prefix_end(dir))) {
        for (const auto& kv : states->kvs) {
          auto state = cluster::decode_partition_state(kv.value);
          const std::string_view rest = std::string_view(kv.key).substr(dir.size());
          auto id = storage::uuid::parse(rest.substr(0, rest.find('/')));
          // Replicated partitions of this broker, led or followed: their high watermarks start
          // from replication-offset-checkpoint (storage::log_manager_options::replicated).
          int32_t index = -1;
          if (const size_t slash = rest.find('/'); slash != std::string_view::npos) {
            const std::string_view tail = rest.substr(slash + 1);
            const auto [end, ec] = std::from_chars(tail.data(), tail.data() + tail.size(), index);
            if (ec != std::errc() || end != tail.data() + tail.size()) index = -1;
          }
          if (state && id && index >= 0 && state->replicas.size() > 1 &&
              std::find(state->replicas.begin(), state->replicas.end(), config.node_id) !=
                  state->replicas.end()) {
            replicated.insert({*id, index});
          }
          if (!state || !id) continue;
          if (std::find(state->replicas.begin(), state->replicas.end(), config.node_id) !=
              state->replicas.end()) {
            followed.insert(*id);
          }
        }
      }
    }
    auto store = cluster::etcd_metadata_store::open(o, std::move(followed));
    if (!store) {
      return fail(fmt::format("cannot open the cluster metadata log in etcd under {}: {}", o.prefix,
                              store.error().message));
    }
    cluster::etcd_metadata_log& log = (*store)->log();
    // Topics other brokers create or delete arrive here, on the log's watch thread, under the
    // journal's lock: the image is read directly, not through the store (which would take it).
    log.on_remote_change(
        [mgr = m.get(), &log, node_id = config.node_id](const cluster::metadata_entry& entry) {
          for (const auto& r : entry.records) {
            if (const auto* t = std::get_if<cluster::topic_record>(&r)) {
              spdlog::info("cluster metadata: topic {} created by another broker (offset {})",
                           t->name, entry.offset);
            } else if (const auto* d = std::get_if<cluster::remove_topic_record>(&r)) {
              spdlog::info("cluster metadata: topic id {} deleted by another broker (offset {})",
                           d->topic_id.to_string(), entry.offset);
            }
          }
          mgr->refresh_remote_topics(log.image(), node_id);
        });
    {
      // After the hook is in place, under the journal's lock: no change slips between the two.
      auto g = log.lock();
      m->refresh_remote_topics(log.image(), config.node_id);
    }
    spdlog::info("cluster metadata in etcd ({}) under {}: {} topic(s) led by other brokers",
                 fmt::join(config.etcd_connect, ","), o.prefix, m->remote_topics().size());
    m->etcd_log_ = &log;
    m->metadata_ = std::move(*store);
  } else {
    auto opened = open_local_store(log_dir);
    if (!opened) return fail(opened.error());
    m->metadata_ = std::move(*opened);
  }

  // As a new Kafka 4.4 cluster: min.insync.replicas a cluster default while ELR is on.
  if (auto elr = record_elr_min_isr_default(*m->metadata_, config); !elr) {
    spdlog::warn("min.insync.replicas not recorded as the cluster default (KIP-966): {}",
                 elr.error());
  } else if (!elr->empty()) {
    spdlog::info("eligible leader replicas on (KIP-966): {}", *elr);
  }
  auto effective = effective_config(config, *m->metadata_);
  if (!effective) {
    spdlog::warn(
        "dynamic broker configs in the metadata log do not apply ({}); using the static "
        "configuration",
        effective.error());
    effective = config;
  }
  m->effective_ = *effective;

  storage::log_manager_options options;
  options.log_dir = log_dir;
  options.journal = &m->metadata_->topic_journal();
  options.broker_props = topic_defaults_from(m->effective_);
  options.now = wall_clock_ms();
  options.replicated = std::move(replicated);
  storage::startup_report report;
  auto logs = storage::log_manager::open(options, &report);
  if (!logs) {
    return fail(fmt::format("cannot load log directory {}: {}", log_dir, logs.error().message));
  }
  m->logs_ = std::move(*logs);
  m->had_clean_shutdown_ = report.had_clean_shutdown;
  m->clean_shutdown_broker_epoch_ = report.clean_shutdown_broker_epoch;
  for (const auto& d : report.removed_delete_dirs) {
    spdlog::info("log directory {}: removed {} left by an interrupted deletion", log_dir, d);
  }
  for (const auto& d : report.stray_dirs) {
    spdlog::warn("log directory {}: {} belongs to no known topic; set aside", log_dir, d);
  }
  spdlog::info("log directory {}: cluster id {}, {} topic(s), {} partition log(s) loaded{}",
               log_dir, m->cluster_id_, m->logs_->topics().size(), report.logs.size(),
               report.had_clean_shutdown ? "" : " (no clean-shutdown marker: recovered)");
  for (const auto& r : report.logs) {
    for (const auto& step : r.swap_recovery) {
      spdlog::info("log {}: interrupted cleaning recovered: {}", storage::partition_dir_name(r.tp),
                   step);
    }
  }
  // The log cleaner (Kafka's LogCleaner): its threads take the map lock shared, with the chosen
  // log's own mutex, only to pick a log and to swap cleaned segments in.
  storage::cleaner_config cleaner = cleaner_config_of(m->effective_);
  if (cleaner.enable) {
    auto started = m->logs_->start_cleaner(cleaner, log_cleaner_line);
    if (!started) return fail(fmt::format("log cleaner: {}", started.error().message));
  }
  // Retention (log.retention.check.interval.ms), on its own thread, taking the map lock shared for
  // each pass and each log's mutex in turn.
  m->logs_->start_retention(config.log_retention_check_interval_ms,
                            [](bool warning, const std::string& line) {
                              if (warning) {
                                spdlog::warn("log retention: {}", line);
                              } else {
                                spdlog::info("log retention: {}", line);
                              }
                            });
  // Kafka's high-watermark and recovery-point checkpoint schedules, for every partition (a
  // single node's high watermark is its log end offset, as Kafka's is on a one-broker ISR).
  m->logs_->start_checkpoints(config.replica_high_watermark_checkpoint_interval_ms,
                              config.log_flush_offset_checkpoint_interval_ms,
                              [](bool warning, const std::string& line) {
                                if (warning) {
                                  spdlog::warn("log checkpoints: {}", line);
                                } else {
                                  spdlog::info("log checkpoints: {}", line);
                                }
                              });
  return m;
}

result<void, std::string> topic_manager::shutdown(int64_t broker_epoch) {
  logs_->stop_checkpoints();
  logs_->stop_retention();
  logs_->stop_cleaner();
  auto guard = control_lock();
  if (auto r = logs_->shutdown(broker_epoch, wall_clock_ms()); !r) {
    return fail(r.error().message);
  }
  return {};
}

}  // namespace tarn::broker
