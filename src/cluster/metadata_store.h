// The cluster metadata seam: what the broker asks of the cluster's metadata (topics, partition
// counts, topic configs, dynamic broker configs, finalized features), with nothing saying what
// backs it. local_metadata_store (the metadata log in the log directory, docs/metadata.md) is the
// first implementation; the cluster issue backs the same interface with etcd.
//
// Thread-safety: every member may be called from any thread; implementations serialize.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "base/result.h"
#include "cluster/metadata_journal.h"
#include "cluster/metadata_log.h"
#include "storage/log_config.h"
#include "storage/topic_metadata.h"

namespace tarn::cluster {

using feature_map = std::map<std::string, int16_t, std::less<>>;
// A resource of ConfigRecords: its type (config_resource_topic, _broker, _group) and name.
using config_resource = std::pair<int8_t, std::string>;

class metadata_store {
 public:
  virtual ~metadata_store() = default;

  // The face storage::log_manager records topic changes through.
  virtual storage::topic_journal& topic_journal() = 0;

  // Dynamic broker configs of `resource_name`: a node id, or "" for the cluster-wide default.
  virtual storage::config_map broker_configs(std::string_view resource_name) const = 0;
  // Replaces the dynamic configs of `resource_name` with `configs` (one change, durable on
  // return).
  virtual result<void, storage::storage_error> set_broker_configs(
      std::string_view resource_name, const storage::config_map& configs) = 0;
  // The configs of topic `name` as the metadata has them (in a cluster, whichever broker holds
  // the topic's logs), and a change of them from `from` to `to`, recorded as the keys that differ
  // (one change, durable on return; a key changed meanwhile through another broker and not
  // touched here stays): a cluster's IncrementalAlterConfigs and AlterConfigs of a topic this
  // broker holds no copy of. not_found for a topic the metadata does not have.
  virtual storage::config_map topic_configs(std::string_view name) const = 0;
  virtual result<void, storage::storage_error> change_topic_configs(
      std::string_view name, const storage::config_map& from, const storage::config_map& to) = 0;
  // Tells `fn` the resources whose configs a change set or removed, for every change: the ones
  // this broker makes and, in a cluster, the ones other brokers make (the metadata log's watch).
  // Called under the store's lock, on the writing or the watching thread, so it must only take
  // note (never call into the store). One observer; an empty function removes it.
  virtual void observe_config_changes(
      std::function<void(const std::vector<config_resource>&)> fn) = 0;
  // Group configs (ConfigRecords of GROUP resources, as Kafka keeps them): every group's, and
  // one group's replaced (one change, durable on return).
  virtual std::map<std::string, storage::config_map> group_configs() const = 0;
  virtual result<void, storage::storage_error> set_group_configs(
      std::string_view group_id, const storage::config_map& configs) = 0;

  // Client quotas (ClientQuotaRecords): what is set, and a batch of changes as one durable change.
  virtual std::map<quota_entity, std::map<std::string, double>> client_quotas() const = 0;
  virtual result<void, storage::storage_error> change_client_quotas(
      std::vector<client_quota_record> changes) = 0;

  // SCRAM credentials (UserScramCredentialRecords): every user's, one user's for a mechanism
  // (nullopt when it has none), and a batch of upserts and removals as one durable change.
  virtual std::map<std::pair<std::string, int8_t>, user_scram_credential_record> scram_credentials()
      const = 0;
  virtual std::optional<user_scram_credential_record> scram_credential(const std::string& user,
                                                                       int8_t mechanism) const = 0;
  virtual result<void, storage::storage_error> change_scram_credentials(
      std::vector<metadata_record> changes) = 0;
  // ACL bindings (AccessControlEntryRecords) by id, and a batch of creations and removals as
  // one durable change (CreateAcls and DeleteAcls: the authorizer is updated after it returns).
  virtual std::map<storage::uuid, access_control_entry_record> acls() const = 0;
  virtual result<void, storage::storage_error> change_acls(
      std::vector<metadata_record> changes) = 0;

  // The offset the next change gets: every change before it is durable (committed), so it is
  // both the log's end and its high watermark (DescribeQuorum reports it as both).
  virtual int64_t end_offset() const = 0;

  virtual feature_map finalized_features() const = 0;
  // The epoch of the finalized features ApiVersions reports: the offset of the last change.
  virtual int64_t finalized_features_epoch() const = 0;
  // Sets each feature to its level (0: no longer finalized, kept as 0), as one change.
  virtual result<void, storage::storage_error> set_feature_levels(const feature_map& levels) = 0;
};

struct local_store_report {
  metadata_recovery recovery;
  int32_t imported_topics = -1;  // >= 0 when an older tarn-topics file was imported
};

// A metadata_store over a journal: every change is computed from the journal's image and
// appended to it as one entry, under the journal's lock.
class journal_metadata_store : public metadata_store, private storage::topic_journal {
 public:
  explicit journal_metadata_store(std::unique_ptr<metadata_journal> journal)
      : journal_(std::move(journal)) {}

  storage::topic_journal& topic_journal() override { return *this; }
  storage::config_map broker_configs(std::string_view resource_name) const override;
  result<void, storage::storage_error> set_broker_configs(
      std::string_view resource_name, const storage::config_map& configs) override;
  storage::config_map topic_configs(std::string_view name) const override;
  result<void, storage::storage_error> change_topic_configs(std::string_view name,
                                                            const storage::config_map& from,
                                                            const storage::config_map& to) override;
  void observe_config_changes(std::function<void(const std::vector<config_resource>&)> fn) override;
  std::map<std::string, storage::config_map> group_configs() const override;
  result<void, storage::storage_error> set_group_configs(
      std::string_view group_id, const storage::config_map& configs) override;
  std::map<quota_entity, std::map<std::string, double>> client_quotas() const override;
  result<void, storage::storage_error> change_client_quotas(
      std::vector<client_quota_record> changes) override;
  std::map<std::pair<std::string, int8_t>, user_scram_credential_record> scram_credentials()
      const override;
  std::optional<user_scram_credential_record> scram_credential(const std::string& user,
                                                               int8_t mechanism) const override;
  result<void, storage::storage_error> change_scram_credentials(
      std::vector<metadata_record> changes) override;
  std::map<storage::uuid, access_control_entry_record> acls() const override;
  result<void, storage::storage_error> change_acls(std::vector<metadata_record> changes) override;
  int64_t end_offset() const override;
  feature_map finalized_features() const override;
  int64_t finalized_features_epoch() const override;
  result<void, storage::storage_error> set_feature_levels(const feature_map& levels) override;

  // For tests and tools: a copy of the whole image.
  metadata_image image() const;

 protected:
  // In a cluster, this broker's node id: the topics it creates are recorded with it as their
  // leader, and the log manager loads only those (and internal topics). -1 on a single node.
  int32_t local_leader_ = -1;
  // In a cluster, the topics another broker leads of which this broker is a follower (their
  // partition states in etcd name it): loaded too, so that a restart keeps their logs.
  std::set<storage::uuid> followed_here_;

  // Tells the observer of config changes which resources a change touched (under the
  // journal's lock): for the changes appended here, and those another broker appended.
  void note_config_changes(const std::vector<config_resource>& touched) const;

 private:
  bool hosted_here(const topic_image& t) const;
  // Appends what `decide` makes of the image (nothing when it decides no records). When another
  // writer appended first (a cluster's journal, metadata_journal::catch_up), decides again on the
  // image caught up, at most max_append_attempts times in all. Call under the journal's lock.
  using decision = result<std::vector<metadata_record>, storage::storage_error>;
  static constexpr int max_append_attempts = 5;
  result<void, storage::storage_error> append_decided(
      const std::function<decision(const metadata_image&)>& decide);
  // The same for a change that does not depend on the image: appended after what it missed.
  result<void, storage::storage_error> append_caught_up(std::vector<metadata_record> records);
  // storage::topic_journal
  result<std::vector<storage::topic_record>, storage::storage_error> load_topics() override;
  result<void, storage::storage_error> topic_created(const storage::topic_record& topic) override;
  result<void, storage::storage_error> topic_deleted(const storage::topic_record& topic) override;
  result<void, storage::storage_error> partitions_created(const storage::topic_record& topic,
                                                          int32_t old_count) override;
  result<void, storage::storage_error> topic_config_changed(
      const storage::topic_record& topic, const storage::config_map& old_overrides) override;

  std::unique_ptr<metadata_journal> journal_;
  std::function<void(const std::vector<config_resource>&)> config_observer_;  // journal's lock
};

// The metadata log in <log_dir>/tarn-metadata/. On its first open in a log directory written by
// an older tarn (topics in the `tarn-topics` file), the topics are imported into a first snapshot
// and the old file removed; topic ids and configs carry over unchanged.
class local_metadata_store final : public journal_metadata_store {
 public:
  static result<std::unique_ptr<local_metadata_store>, storage::storage_error> open(
      const storage::fs::path& log_dir, int64_t snapshot_every = 1000,
      local_store_report* report = nullptr);

 private:
  using journal_metadata_store::journal_metadata_store;
};

// The resources whose configs `records` set or remove, each once, in the order they come.
std::vector<config_resource> config_resources_of(const std::vector<metadata_record>& records);

// The ConfigRecords that turn `from` into `to` for one resource.
std::vector<metadata_record> config_changes(int8_t resource_type, const std::string& resource_name,
                                            const storage::config_map& from,
                                            const storage::config_map& to);

}  // namespace tarn::cluster
