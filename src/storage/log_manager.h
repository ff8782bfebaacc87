// All partition logs of one log directory (Kafka's LogManager for one log.dir): loads topics
// and partitions at startup (recovering after an unclean shutdown), creates and deletes topics,
// stores topic configs, writes the log-dir checkpoints and the clean-shutdown marker.
//
// Threading (docs/storage.md#threading): map_mutex() guards the topic and partition maps and the
// topic configs. Lookups and any use of a log hold it shared (and the log's own mutex() for the
// log's operations). The topic operations (create, delete, configs, partitions, broker props)
// must be serialised by the caller (the broker's control lock) and not hold map_mutex(): they do
// their file work (journal, directories, segment files) without it and take it exclusive only
// to change the maps, so appends to other topics never wait for a topic's creation or deletion.
// While a caller holds that serialisation it may also read the maps without map_mutex(), since
// only those operations change them. The methods here that work on every log (retention,
// flushes) take each log's mutex themselves; checkpoint writers are serialised inside.
#pragma once

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/result.h"
#include "storage/checkpoint_file.h"
#include "storage/log.h"
#include "storage/log_cleaner_manager.h"
#include "storage/log_config.h"
#include "storage/topic_metadata.h"

namespace tarn::storage {

struct log_manager_options {
  fs::path log_dir;
  config_map broker_props;  // server.properties: the broker defaults of topic configs
  timestamp_ms now = 0;
  // Where topic changes are recorded (topic_metadata.h); nullptr = the tarn-topics file.
  topic_journal* journal = nullptr;
  // In a cluster, the partitions (topic id, index) with more than one replica, this broker one
  // of them (docs/cluster.md, "Replication"): each such log is opened replicated, its high
  // watermark the replication-offset-checkpoint entry (0 when absent) bounded by its log start
  // and end offsets, as Kafka's Partition.createLog takes it, instead of its log end offset.
  std::set<std::pair<uuid, partition_id>> replicated;
};

struct startup_report {
  bool had_clean_shutdown = false;
  int64_t clean_shutdown_broker_epoch = -1;  // the marker's brokerEpoch (-1: none)
  std::vector<recovery_report> logs;
  std::vector<std::string> removed_delete_dirs;  // "<topic>-<p>.<id>-delete" leftovers removed
  std::vector<std::string> stray_dirs;  // partition dirs of no known topic, renamed "-stray"
};

struct topic_info {
  std::string name;
  uuid topic_id;
  int32_t partitions = 0;
  config_map overrides;
  log_config config;  // effective: overrides, then broker properties, then Kafka's defaults
};

class log_manager {
 public:
  static result<std::unique_ptr<log_manager>, storage_error> open(
      const log_manager_options& options, startup_report* report = nullptr);
  log_manager(const log_manager&) = delete;
  log_manager& operator=(const log_manager&) = delete;
  ~log_manager();

  const fs::path& log_dir() const { return log_dir_; }
  // The map lock (see Threading above); taken after the broker's control lock, before any log's
  // mutex().
  std::shared_mutex& map_mutex() const { return map_mu_; }
  const config_map& broker_props() const { return broker_props_; }
  // Dynamic broker configs changed the broker defaults of topic configs: every topic's effective
  // config is resolved again and handed to its logs (a topic without an override follows the new
  // default at once, as Kafka's DynamicLogConfig does). invalid_config leaves everything as it was.
  result<void, storage_error> set_broker_props(const config_map& broker_props);

  // CreateTopics: validates the name (invalid_topic, including '.'/'_' collisions), the
  // partition count (invalid_partitions) and the overrides (invalid_config); records the topic
  // (the commit point), then creates its partition directories. already_exists if present.
  result<const topic_info*, storage_error> create_topic(std::string_view name, int32_t partitions,
                                                        const config_map& overrides,
                                                        timestamp_ms now);
  // DeleteTopics: forgets the topic (commit point), renames each partition directory to
  // "<dir>.<uuid>-delete" as Kafka does, then removes it synchronously.
  // `record` false: a cluster follower's copy of a topic its leader deleted (and recorded).
  result<void, storage_error> delete_topic(std::string_view name, bool record = true);
  // Replaces the topic's overrides (the broker computes them from IncrementalAlterConfigs ops);
  // validated, persisted, and applied to the topic's logs.
  result<void, storage_error> set_topic_config(std::string_view name, const config_map& overrides);
  // CreatePartitions: grows the partition count.
  result<void, storage_error> create_partitions(std::string_view name, int32_t new_count,
                                                timestamp_ms now);

  // In a cluster, a topic another broker created and recorded, of which this broker holds
  // `partitions` as a follower (docs/cluster.md, "Replication"): those logs are opened (created,
  // or recovered when their directories exist) and nothing is recorded. Serialised like
  // create_topic. already_exists when the topic is known.
  result<const topic_info*, storage_error> adopt_topic(const topic_record& topic,
                                                       const std::vector<partition_id>& partitions,
                                                       timestamp_ms now);

  // In a cluster, partitions its leader added (CreatePartitions, recorded by the leader) to a
  // topic this broker follows: the topic's count grows to `partition_count` and the logs of
  // `partitions` not open yet are opened (created, or recovered when their directories exist);
  // nothing is recorded. Serialised like create_topic. not_found when the topic is unknown.
  result<void, storage_error> adopt_partitions(std::string_view name, int32_t partition_count,
                                               const std::vector<partition_id>& partitions,
                                               timestamp_ms now);

  // In a cluster, the overrides another broker recorded for a topic this broker holds (its
  // ConfigRecords, arriving by the metadata log's watch): applied to the topic's logs as
  // set_topic_config applies them, and nothing is recorded. Serialised like create_topic.
  // not_found when the topic is unknown.
  result<void, storage_error> adopt_topic_config(std::string_view name,
                                                 const config_map& overrides);

  // In a cluster, a partition this broker no longer replicates (a reassignment moved it away,
  // Kafka's stopPartitions with deleteLocalLog): its log is closed, its directory renamed
  // "-delete" and removed as delete_topic does, and an empty log opened in its place, as
  // adopt_topic keeps for the partitions of a topic this broker does not replicate. Nothing is
  // recorded. not_found when the topic or the partition's log is unknown. Serialised like
  // create_topic.
  result<void, storage_error> reset_partition_copy(std::string_view name, partition_id partition,
                                                   timestamp_ms now);

  const topic_info* find_topic(std::string_view name) const;
  std::vector<const topic_info*> topics() const;
  // Installs `listener` on every log, present and future (see storage::append_listener).
  void set_append_listener(append_listener listener);

  // nullptr when the partition does not exist.
  storage::log* get_log(std::string_view topic, partition_id partition) const;
  // Every partition log, in topic-partition order.
  std::vector<std::pair<topic_partition, storage::log*>> all_logs() const;

  // The log cleaner (log_cleaner_manager.h), its threads started when config.enable; they take
  // map_mutex() shared. stop_cleaner() joins them (shutdown() and the destructor call it first).
  result<void, storage_error> start_cleaner(const cleaner_config& config, cleaner_log_fn log_line);
  void stop_cleaner();
  // Replaces a stopped cleaner with one of `config` (started when config.enable): dynamic
  // log.cleaner.* changes, as Kafka's LogCleaner.reconfigure shuts down and starts anew.
  result<void, storage_error> restart_cleaner(const cleaner_config& config,
                                              cleaner_log_fn log_line);
  // Hold map_mutex() (shared) or the topic operations' serialisation: restart_cleaner() replaces
  // it.
  log_cleaner_manager* cleaner() const { return cleaner_.get(); }

  // Writes recovery-point-offset-checkpoint, log-start-offset-checkpoint and
  // replication-offset-checkpoint (high watermarks) for every log.
  result<void, storage_error> checkpoint();
  // Only replication-offset-checkpoint (Kafka's ReplicaManager.checkpointHighWatermarks, every
  // replica.high.watermark.checkpoint.interval.ms), and only recovery-point-offset-checkpoint
  // (LogManager.checkpointLogRecoveryOffsets, every log.flush.offset.checkpoint.interval.ms).
  // Each rewrites its file only when an entry changed since this log manager last wrote it, so
  // an idle broker does not fsync every few seconds. Read the logs' atomic offsets only.
  result<void, storage_error> checkpoint_high_watermarks();
  result<void, storage_error> checkpoint_recovery_points();
  // Only log-start-offset-checkpoint, after DeleteRecords or retention moved a log start offset
  // (Kafka writes it every log.flush.start.offset.checkpoint.interval.ms; tarn at once, so a
  // deletion survives a crash). Reads the logs' atomic offsets only.
  result<void, storage_error> checkpoint_log_start_offsets();
  // Retention over every log (log::delete_old_segments), for the broker's
  // log.retention.check.interval.ms timer; checkpoints the log start offsets when a segment
  // went. Returns the segments deleted; the first error after trying every log.
  result<int32_t, storage_error> delete_old_segments(timestamp_ms now);
  // The retention task (Kafka's "kafka-log-retention", scheduled by LogManager.startup): a thread
  // that runs delete_old_segments every `interval_ms` (log.retention.check.interval.ms), the
  // first time after min(interval_ms, 30 s) (Kafka: always 30 s), holding map_mutex() shared
  // (taken with try_lock, as the cleaner does) while it runs. `log_line` gets one line per pass
  // that deleted something or failed. stop_retention() joins it (shutdown() and the destructor call
  // it).
  void start_retention(int64_t interval_ms, cleaner_log_fn log_line);
  void stop_retention();
  // The checkpoint task (Kafka's "highwatermark-checkpoint" and "kafka-recovery-point-checkpoint"
  // schedules): a thread that runs checkpoint_high_watermarks() every `high_watermark_interval_ms`
  // and checkpoint_recovery_points() every `recovery_point_interval_ms` (an interval <= 0: never;
  // open() and shutdown() write both anyway), holding map_mutex() shared (try_lock, as retention
  // takes it) while it writes. `log_line` gets one line per failed write. stop_checkpoints()
  // joins it (shutdown() and the destructor call it).
  void start_checkpoints(int64_t high_watermark_interval_ms, int64_t recovery_point_interval_ms,
                         cleaner_log_fn log_line);
  void stop_checkpoints();
  // Kafka's LogManager.flushDirtyLogs: flushes every log whose flush.ms has passed since its
  // last flush. Every log is tried; the first error is returned.
  result<void, storage_error> flush_dirty_logs(timestamp_ms now);
  // Clean shutdown: flush and close every log, checkpoint, then write .kafka_cleanshutdown.
  result<void, storage_error> shutdown(int64_t broker_epoch, timestamp_ms now);

 private:
  explicit log_manager(const log_manager_options& options);
  result<void, storage_error> load(const log_manager_options& options, startup_report& report);
  // The topic records as they are, and the tarn-topics file (without a journal) written from a
  // list that already holds the pending change.
  std::vector<topic_record> topic_records() const;
  // The same with `changed` in place of the record of its topic.
  std::vector<topic_record> topic_records_with(const topic_record& changed) const;
  result<void, storage_error> persist_topics(const std::vector<topic_record>& records) const;
  topic_record record_of(const topic_info& t) const;
  // The topic takes `overrides` (resolved into `config`), and so do its logs.
  void install_overrides(topic_info& t, const config_map& overrides, const log_config& config);
  result<std::unique_ptr<storage::log>, storage_error> open_partition(
      const topic_info& topic, partition_id partition, offset_t recovery_point,
      offset_t log_start_offset, bool clean, timestamp_ms now, recovery_report* report);

  fs::path log_dir_;
  config_map broker_props_;
  topic_journal* journal_ = nullptr;
  std::map<std::string, std::unique_ptr<topic_info>, std::less<>> topics_;
  std::map<topic_partition, std::unique_ptr<storage::log>> logs_;
  append_listener append_listener_;
  std::unique_ptr<log_cleaner_manager> cleaner_;
  bool shut_down_ = false;
  std::thread retention_thread_;
  std::mutex retention_mu_;
  std::mutex checkpoint_mu_;  // one writer of the checkpoint files at a time
  // What the last write of each file held (under checkpoint_mu_), to skip unchanged rewrites.
  std::vector<partition_offset> written_high_watermarks_;
  std::vector<partition_offset> written_recovery_points_;
  std::thread checkpoint_thread_;
  std::mutex checkpoint_task_mu_;
  std::condition_variable checkpoint_wake_;
  bool checkpoint_stopping_ = false;
  mutable std::shared_mutex map_mu_;
  std::condition_variable retention_wake_;
  bool retention_stopping_ = false;
};

}  // namespace tarn::storage
