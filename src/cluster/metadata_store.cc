// journal_metadata_store: the metadata seam over a journal of changes, and local_metadata_store
// opening it on the local metadata log (metadata_store.h).
#include "cluster/metadata_store.h"

#include <algorithm>

#include "fmt/format.h"

namespace tarn::cluster {

using storage::storage_error;

std::vector<metadata_record> config_changes(int8_t resource_type, const std::string& resource_name,
                                            const storage::config_map& from,
                                            const storage::config_map& to) {
  std::vector<metadata_record> out;
  for (const auto& [k, v] : from) {
    if (to.find(k) == to.end()) out.push_back(config_record{resource_type, resource_name, k, {}});
  }
  for (const auto& [k, v] : to) {
    auto it = from.find(k);
    if (it == from.end() || it->second != v) {
      out.push_back(config_record{resource_type, resource_name, k, v});
    }
  }
  return out;
}

std::vector<config_resource> config_resources_of(const std::vector<metadata_record>& records) {
  std::vector<config_resource> touched;
  for (const auto& r : records) {
    const auto* c = std::get_if<config_record>(&r);
    if (c == nullptr) continue;
    config_resource res{c->resource_type, c->resource_name};
    if (std::find(touched.begin(), touched.end(), res) == touched.end()) {
      touched.push_back(std::move(res));
    }
  }
  return touched;
}

namespace {

std::vector<metadata_record> records_of_new_topic(const storage::topic_record& t,
                                                  int32_t leader = -1) {
  std::vector<metadata_record> out;
  out.push_back(topic_record{t.name, t.topic_id});
  for (int32_t p = 0; p < t.partitions; ++p) {
    out.push_back(partition_record{p, t.topic_id, leader});
  }
  for (auto& c : config_changes(config_resource_topic, t.name, {}, t.overrides)) {
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace

result<std::unique_ptr<local_metadata_store>, storage_error> local_metadata_store::open(
    const storage::fs::path& log_dir, int64_t snapshot_every, local_store_report* report) {
  local_store_report local;
  local_store_report& r = report != nullptr ? *report : local;
  metadata_log_options o;
  o.dir = log_dir / metadata_dir_name;
  o.snapshot_every = snapshot_every;
  const auto old_file = log_dir / storage::topic_metadata_file_name;
  std::error_code ec;
  bool old_exists = storage::fs::exists(old_file, ec);
  auto log = metadata_log::open(o, &r.recovery);
  if (!log) return fail(log.error());
  if (old_exists) {
    if ((*log)->empty_at_open()) {
      auto old = storage::read_topic_records(log_dir);
      if (!old) return fail(old.error());
      std::vector<metadata_record> records;
      for (const auto& t : *old) {
        for (auto& rec : records_of_new_topic(t)) records.push_back(std::move(rec));
      }
      auto a = (*log)->append(std::move(records));
      if (!a) return fail(a.error());
      auto s = (*log)->snapshot();
      if (!s) return fail(s.error());
      r.imported_topics = static_cast<int32_t>(old->size());
    }
    // Imported now, or by an earlier open that crashed before removing it.
    storage::fs::remove(old_file, ec);
    if (ec) return fail(storage::io_error("remove", old_file, ec.value()));
    auto d = storage::fsync_directory(log_dir);
    if (!d) return fail(d.error());
  }
  return std::unique_ptr<local_metadata_store>(new local_metadata_store(std::move(*log)));
}

storage::config_map journal_metadata_store::broker_configs(std::string_view resource_name) const {
  auto g = journal_->lock();
  const auto* c = journal_->image().find_configs(config_resource_broker, resource_name);
  return c != nullptr ? *c : storage::config_map{};
}

result<void, storage_error> journal_metadata_store::set_broker_configs(
    std::string_view resource_name, const storage::config_map& configs) {
  auto g = journal_->lock();
  return append_decided([&](const metadata_image& image) -> decision {
    const auto* c = image.find_configs(config_resource_broker, resource_name);
    return config_changes(config_resource_broker, std::string(resource_name),
                          c != nullptr ? *c : storage::config_map{}, configs);
  });
}

storage::config_map journal_metadata_store::topic_configs(std::string_view name) const {
  auto g = journal_->lock();
  const auto* c = journal_->image().find_configs(config_resource_topic, name);
  return c != nullptr ? *c : storage::config_map{};
}

result<void, storage_error> journal_metadata_store::change_topic_configs(
    std::string_view name, const storage::config_map& from, const storage::config_map& to) {
  auto g = journal_->lock();
  const auto changes = config_changes(config_resource_topic, std::string(name), from, to);
  return append_decided([&](const metadata_image& image) -> decision {
    if (image.find_topic(name) == nullptr) {
      return fail(storage_error{storage::storage_errc::not_found,
                                fmt::format("The topic '{}' does not exist.", name)});
    }
    return changes;
  });
}

void journal_metadata_store::observe_config_changes(
    std::function<void(const std::vector<config_resource>&)> fn) {
  auto g = journal_->lock();
  config_observer_ = std::move(fn);
}

void journal_metadata_store::note_config_changes(
    const std::vector<config_resource>& touched) const {
  if (config_observer_ && !touched.empty()) config_observer_(touched);
}

std::map<std::string, storage::config_map> journal_metadata_store::group_configs() const {
  auto g = journal_->lock();
  std::map<std::string, storage::config_map> out;
  for (const auto& [key, configs] : journal_->image().configs) {
    if (key.first == config_resource_group && !configs.empty()) out.emplace(key.second, configs);
  }
  return out;
}

result<void, storage_error> journal_metadata_store::set_group_configs(
    std::string_view group_id, const storage::config_map& configs) {
  auto g = journal_->lock();
  return append_decided([&](const metadata_image& image) -> decision {
    const auto* c = image.find_configs(config_resource_group, group_id);
    return config_changes(config_resource_group, std::string(group_id),
                          c != nullptr ? *c : storage::config_map{}, configs);
  });
}

std::map<quota_entity, std::map<std::string, double>> journal_metadata_store::client_quotas()
    const {
  auto g = journal_->lock();
  return journal_->image().quotas;
}

result<void, storage_error> journal_metadata_store::change_client_quotas(
    std::vector<client_quota_record> changes) {
  auto g = journal_->lock();
  if (changes.empty()) return {};
  std::vector<metadata_record> records(std::make_move_iterator(changes.begin()),
                                       std::make_move_iterator(changes.end()));
  return append_caught_up(std::move(records));
}

std::map<std::pair<std::string, int8_t>, user_scram_credential_record>
journal_metadata_store::scram_credentials() const {
  auto g = journal_->lock();
  return journal_->image().scram_credentials;
}

std::optional<user_scram_credential_record> journal_metadata_store::scram_credential(
    const std::string& user, int8_t mechanism) const {
  auto g = journal_->lock();
  const auto& all = journal_->image().scram_credentials;
  auto it = all.find({user, mechanism});
  if (it == all.end()) return std::nullopt;
  return it->second;
}

result<void, storage_error> journal_metadata_store::change_scram_credentials(
    std::vector<metadata_record> changes) {
  auto g = journal_->lock();
  if (changes.empty()) return {};
  return append_caught_up(std::move(changes));
}

std::map<storage::uuid, access_control_entry_record> journal_metadata_store::acls() const {
  auto g = journal_->lock();
  return journal_->image().acls;
}

result<void, storage_error> journal_metadata_store::change_acls(
    std::vector<metadata_record> changes) {
  auto g = journal_->lock();
  if (changes.empty()) return {};
  return append_caught_up(std::move(changes));
}

feature_map journal_metadata_store::finalized_features() const {
  auto g = journal_->lock();
  return journal_->image().features;
}

int64_t journal_metadata_store::end_offset() const {
  auto g = journal_->lock();
  return journal_->image().next_offset;
}

int64_t journal_metadata_store::finalized_features_epoch() const {
  auto g = journal_->lock();
  return std::max<int64_t>(0, journal_->image().next_offset - 1);
}

result<void, storage_error> journal_metadata_store::set_feature_levels(const feature_map& levels) {
  auto g = journal_->lock();
  std::vector<metadata_record> records;
  for (const auto& [name, level] : levels) records.push_back(feature_level_record{name, level});
  if (records.empty()) return {};
  return append_caught_up(std::move(records));
}

metadata_image journal_metadata_store::image() const {
  auto g = journal_->lock();
  return journal_->image();
}

result<std::vector<storage::topic_record>, storage_error> journal_metadata_store::load_topics() {
  auto g = journal_->lock();
  std::vector<storage::topic_record> out;
  const metadata_image& image = journal_->image();
  for (const auto& [id, t] : image.topics) {
    // In a cluster, the topics other brokers lead are theirs: no log here (docs/cluster.md).
    if (!hosted_here(t)) continue;
    storage::topic_record rec{t.name, id, t.partitions, {}};
    if (const auto* c = image.find_configs(config_resource_topic, t.name)) rec.overrides = *c;
    out.push_back(std::move(rec));
  }
  return out;
}

result<void, storage_error> journal_metadata_store::append_decided(
    const std::function<decision(const metadata_image&)>& decide) {
  for (int attempt = 1;; ++attempt) {
    auto records = decide(journal_->image());
    if (!records) return fail(records.error());
    if (records->empty()) return {};
    const std::vector<config_resource> touched = config_resources_of(*records);
    auto appended = journal_->append(std::move(*records));
    if (appended) {
      note_config_changes(touched);
      return appended;
    }
    // Lost to another writer (a cluster's journal): decide again on the image it caught up to.
    if (attempt == max_append_attempts || !journal_->catch_up()) return appended;
  }
}

result<void, storage_error> journal_metadata_store::append_caught_up(
    std::vector<metadata_record> records) {
  return append_decided([&](const metadata_image&) -> decision { return records; });
}

bool journal_metadata_store::hosted_here(const topic_image& t) const {
  return local_leader_ < 0 || t.leader < 0 || t.leader == local_leader_ ||
         followed_here_.contains(t.topic_id);
}

result<void, storage_error> journal_metadata_store::topic_created(const storage::topic_record& t) {
  auto g = journal_->lock();
  return append_decided([&](const metadata_image& image) -> decision {
    // In a cluster the log manager knows only its own topics; the image knows every broker's.
    // Every name is one for the cluster, the internal topics' too (__consumer_offsets,
    // __transaction_state, __share_group_state): two brokers creating one at once (FindCoordinator
    // on one, Metadata with auto-creation on another) must not both lead a partition of it.
    if (local_leader_ >= 0) {
      if (const topic_image* other = image.find_topic(t.name)) {
        return fail(storage_error{
            storage::storage_errc::already_exists,
            fmt::format("Topic '{}' already exists (led by broker {}).", t.name, other->leader)});
      }
    }
    return records_of_new_topic(t, local_leader_);
  });
}

result<void, storage_error> journal_metadata_store::topic_deleted(const storage::topic_record& t) {
  auto g = journal_->lock();
  return append_caught_up({remove_topic_record{t.topic_id}});
}

result<void, storage_error> journal_metadata_store::partitions_created(
    const storage::topic_record& t, int32_t old_count) {
  auto g = journal_->lock();
  std::vector<metadata_record> records;
  for (int32_t p = old_count; p < t.partitions; ++p) {
    records.push_back(partition_record{p, t.topic_id, local_leader_});
  }
  return append_caught_up(std::move(records));
}

result<void, storage_error> journal_metadata_store::topic_config_changed(
    const storage::topic_record& t, const storage::config_map& old_overrides) {
  auto g = journal_->lock();
  // Only the keys this change sets or removes: in a cluster, a key another broker changed since
  // this broker's copy took its configs stays as the metadata has it (and the copy follows the
  // metadata: broker::config_follower).
  auto changes = config_changes(config_resource_topic, t.name, old_overrides, t.overrides);
  if (changes.empty()) return {};
  return append_caught_up(std::move(changes));
}

}  // namespace tarn::cluster
