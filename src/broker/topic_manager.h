// The broker's view of its topics: storage's log_manager for the one log directory, the cluster
// id (Kafka's meta.properties), and the mapping of the broker configuration onto the topic-config
// defaults (storage/log_config.h is the one definition of topic configs; the broker only hands it
// the server.properties keys that were set). Handlers on every event loop share one instance:
// every access to the log manager holds read_lock() (lookups; a log's own operations also take
// that log's mutex()) or control_lock() (creating, deleting and reconfiguring topics, which take
// the map lock exclusively themselves only while they change the maps). Appends to different
// partitions thus run at once on different loops, as under Kafka's per-log locks, and a topic's
// creation or deletion holds them back only for that moment (docs/broker.md).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "broker/config.h"
#include "cluster/metadata_store.h"
#include "storage/log_manager.h"

namespace tarn::cluster {
class etcd_metadata_log;
}

namespace tarn::broker {

inline constexpr const char* meta_properties_file_name = "meta.properties";
// A cluster's keys in etcd: the cluster id at <root>cluster/id, everything else under
// cluster_prefix(id) = <root><cluster.id>/ (docs/cluster.md).
inline constexpr std::string_view cluster_key_root = "/tarn/";
std::string cluster_prefix(std::string_view cluster_id);

// The server.properties keys that were set, as storage's config_map: the broker-level defaults
// (and their DescribeConfigs synonyms) of the topic configs. Keys left at Kafka's default are not
// passed, so a topic config falls back to Kafka's topic default with source DEFAULT_CONFIG.
storage::config_map topic_defaults_from(const broker_config& config);

// meta.properties in the log directory (Kafka's MetaProperties v1: version, cluster.id, node.id,
// directory.id). Written on first start with a fresh cluster id; a node.id that differs from the
// configuration refuses the start, as Kafka does. In a cluster, `agree` turns the id this broker
// has (or a fresh one) into the cluster's (cluster_membership.h: agree_cluster_id); a stored id
// that differs refuses the start (Kafka's InconsistentClusterIdException). Returns the cluster id.
using cluster_id_agreement = std::function<result<std::string, std::string>(const std::string&)>;
result<std::string, std::string> load_or_create_meta_properties(
    const std::string& log_dir, int32_t node_id, const cluster_id_agreement& agree = {});

// In a cluster, a topic another broker created and leads (docs/cluster.md: for now its only
// replica); this broker has no log of it.
struct remote_topic {
  std::string name;
  storage::uuid topic_id;
  int32_t partitions = 0;
  int32_t leader = -1;
};

class topic_manager {
 public:
  // Loads every topic from the log directory (recovering after an unclean shutdown).
  static result<std::unique_ptr<topic_manager>, std::string> open(const broker_config& config,
                                                                  const std::string& log_dir);

  const std::string& cluster_id() const { return cluster_id_; }
  bool had_clean_shutdown() const { return had_clean_shutdown_; }
  // The broker epoch the clean-shutdown marker held (-1: none, or no marker).
  int64_t clean_shutdown_broker_epoch() const { return clean_shutdown_broker_epoch_; }

  // Serialises the topic operations (log_manager's create/delete/config/partitions and the
  // broker config): hold it around them, without read_lock(). While held, the maps may be read
  // without read_lock() (only its holders change them); a log's own operations still need the
  // log's mutex(). Creating a topic holds it for a metadata-log append, three to four fsyncs a
  // partition and, in a cluster, the partition states' etcd transactions: that runs on the
  // control worker (control_worker.h), never on an event loop; the other topic operations are
  // short and their handlers take it on their loop.
  std::unique_lock<std::mutex> control_lock() const { return std::unique_lock(control_mu_); }
  // A topic whose creation is under way (CreateTopics, auto-creation, the coordinators' topics):
  // from before its logs are made until, in a cluster, its partition states are written and
  // applied here. Metadata answers it as not there yet, as a Kafka broker answers a topic its
  // metadata image does not hold yet (Kafka's controller commits a topic and its partitions in
  // one batch, so no broker lists a topic without its partitions' leaders). Mark it under
  // control_lock(), before the creation; the mark goes with the returned object. Any thread.
  class creation_mark {
   public:
    creation_mark(const topic_manager& topics, std::string name);
    ~creation_mark();
    creation_mark(const creation_mark&) = delete;
    creation_mark& operator=(const creation_mark&) = delete;

   private:
    const topic_manager& topics_;
    std::string name_;
  };
  bool being_created(std::string_view name) const;
  // Shared: finding topics and logs, and using a log under its own mutex() (appends, reads,
  // DeleteRecords), which is taken after this lock and never before it.
  std::shared_lock<std::shared_mutex> read_lock() const {
    return std::shared_lock(logs_->map_mutex());
  }
  storage::log_manager& logs() { return *logs_; }
  // The cluster metadata seam (the metadata log, docs/metadata.md); thread-safe on its own.
  cluster::metadata_store& metadata() { return *metadata_; }
  // Whether the metadata is the cluster's, in etcd (etcd.connect is set).
  bool in_cluster() const { return in_cluster_; }
  // In a cluster, the topics other brokers lead (as etcd_metadata_log::on_remote_change keeps
  // them), by name; empty on a single node. Any thread; takes a lock of its own.
  std::vector<remote_topic> remote_topics() const;
  std::optional<remote_topic> find_remote_topic(std::string_view name) const;
  // A topic of the cluster by name, this broker's copy or one another broker created: its id and
  // partition count (what the handlers that act on any broker's partitions need). Any thread.
  struct topic_ref {
    storage::uuid id;
    int32_t partitions = 0;
  };
  std::optional<topic_ref> find_cluster_topic(std::string_view name);
  // In a cluster, a topic of the cluster's metadata (any broker's) by id, with its configs;
  // nullopt when unknown (or on a single node). Any thread; takes the journal's lock, so not
  // from inside on_cluster_topics_changed.
  std::optional<storage::topic_record> cluster_topic(const storage::uuid& topic_id) const;
  // Called (on the metadata log's watch thread, under its lock: only signal from it) whenever
  // another broker created or deleted a topic; the replica manager then looks again for topics
  // it replicates.
  void on_cluster_topics_changed(std::function<void()> handler);

  // The static configuration overlaid by the dynamic broker configs of the metadata store: the
  // cluster-wide default (resource "") first, then this node's, as Kafka's DynamicBrokerConfig
  // merges them. Keys tarn does not know are kept in the store but not applied.
  static result<broker_config, std::string> effective_config(const broker_config& static_config,
                                                             cluster::metadata_store& store);
  // After a change of dynamic broker configs: every topic follows the new topic defaults at once
  // (a topic override still wins), and the log cleaner restarts when its log.cleaner.* settings
  // changed (Kafka's LogCleaner.reconfigure). Call without holding lock(). true when the
  // effective configuration changed.
  result<bool, std::string> apply_dynamic_configs(const broker_config& static_config);
  // The effective configuration (static + dynamic) last applied; hold control_lock() or
  // read_lock().
  const broker_config& effective() const { return effective_; }
  // The overrides of a topic: this broker's copy's, else, in a cluster, the metadata's of a topic
  // only other brokers hold; nullopt for an unknown topic. Hold control_lock().
  std::optional<storage::config_map> topic_overrides(std::string_view name);
  // Changes a topic's overrides from `from` (what topic_overrides() said) to `to`
  // (IncrementalAlterConfigs, AlterConfigs): a copy held here records and applies them
  // (log_manager::set_topic_config); in a cluster, a topic only other brokers hold has them
  // validated and the keys that differ recorded in the cluster's metadata, and the brokers
  // holding it apply them (config_follower), as Kafka's controller records any broker's
  // request. Hold control_lock().
  result<void, storage::storage_error> set_topic_overrides(std::string_view name,
                                                           const storage::config_map& from,
                                                           const storage::config_map& to);
  // In a cluster, after a topic's configs changed in the metadata (another broker may have
  // changed them): this broker's copy of the topic, if it holds one, takes the overrides the
  // metadata has, without recording anything. true when they changed here. Takes control_lock().
  result<bool, std::string> adopt_topic_configs(const std::string& name);
  // In a cluster, every topic of the cluster's metadata by id with its configs (empty on a
  // single node). Takes the journal's lock.
  std::map<storage::uuid, storage::config_map> cluster_topic_configs() const;

  // Flushes and closes every log, checkpoints, writes the clean-shutdown marker.
  result<void, std::string> shutdown(int64_t broker_epoch = -1);

 private:
  topic_manager() = default;

  // Rebuilds remote_ from the image (under the journal's lock, which the caller holds).
  void refresh_remote_topics(const cluster::metadata_image& image, int32_t node_id);

  mutable std::mutex control_mu_;
  mutable std::mutex creating_mu_;
  mutable std::set<std::string, std::less<>> creating_;  // guarded by creating_mu_
  bool in_cluster_ = false;
  mutable std::mutex remote_mu_;
  std::map<std::string, remote_topic, std::less<>> remote_;
  std::function<void()> on_topics_changed_;            // guarded by remote_mu_
  cluster::etcd_metadata_log* etcd_log_ = nullptr;     // in a cluster: the journal metadata_ owns
  std::unique_ptr<cluster::metadata_store> metadata_;  // outlives logs_, which writes through it
  std::unique_ptr<storage::log_manager> logs_;
  std::string cluster_id_;
  bool had_clean_shutdown_ = false;
  int64_t clean_shutdown_broker_epoch_ = -1;
  broker_config effective_;
};

// Milliseconds since the Unix epoch, for storage calls that take `now`.
int64_t wall_clock_ms();

}  // namespace tarn::broker
