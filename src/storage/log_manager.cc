// The logs of one log directory: see log_manager.h. Kafka's LogManager is the model.
#include "storage/log_manager.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>

#include "fmt/format.h"

namespace tarn::storage {
namespace {

constexpr std::string_view kReplicationCheckpoint = "replication-offset-checkpoint";

// "<topic>-<partition>" -> (topic, partition); nullopt for other names.
std::optional<topic_partition> parse_partition_dir(std::string_view name) {
  size_t dash = name.rfind('-');
  if (dash == std::string_view::npos || dash == 0 || dash + 1 == name.size()) return std::nullopt;
  partition_id p = 0;
  std::string_view digits = name.substr(dash + 1);
  auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), p);
  if (ec != std::errc() || ptr != digits.data() + digits.size() || p < 0) return std::nullopt;
  return topic_partition{std::string(name.substr(0, dash)), p};
}

storage_error not_found(std::string_view topic) {
  return {storage_errc::not_found, fmt::format("This server does not host this topic: {}", topic)};
}

}  // namespace

log_manager::log_manager(const log_manager_options& options)
    : log_dir_(options.log_dir), broker_props_(options.broker_props), journal_(options.journal) {}

log_manager::~log_manager() {
  stop_checkpoints();
  stop_retention();
  stop_cleaner();
  for (auto& [tp, l] : logs_) (void)l->close();
}

result<void, storage_error> log_manager::start_cleaner(const cleaner_config& config,
                                                       cleaner_log_fn log_line) {
  if (cleaner_) return {};
  auto c = log_cleaner_manager::create(*this, config, std::move(log_line));
  if (!c) return fail(c.error());
  {
    // Readers of cleaner() (the metrics snapshot) hold the map lock shared.
    std::unique_lock maps(map_mu_);
    cleaner_ = std::move(*c);
  }
  cleaner_->start();
  return {};
}

void log_manager::stop_cleaner() {
  if (cleaner_) cleaner_->shutdown();
}

result<void, storage_error> log_manager::restart_cleaner(const cleaner_config& config,
                                                         cleaner_log_fn log_line) {
  stop_cleaner();
  std::unique_ptr<log_cleaner_manager> stopped;
  {
    std::unique_lock maps(map_mu_);
    stopped = std::move(cleaner_);
  }
  stopped.reset();
  if (!config.enable) return {};
  return start_cleaner(config, std::move(log_line));
}

std::vector<std::pair<topic_partition, storage::log*>> log_manager::all_logs() const {
  std::vector<std::pair<topic_partition, storage::log*>> out;
  out.reserve(logs_.size());
  for (const auto& [tp, l] : logs_) out.emplace_back(tp, l.get());
  return out;
}

result<std::unique_ptr<log_manager>, storage_error> log_manager::open(
    const log_manager_options& options, startup_report* report) {
  std::unique_ptr<log_manager> m(new log_manager(options));
  startup_report local;
  startup_report& r = report != nullptr ? *report : local;
  r = startup_report{};
  auto loaded = m->load(options, r);
  if (!loaded) return fail(loaded.error());
  return m;
}

void log_manager::set_append_listener(append_listener listener) {
  std::unique_lock maps(map_mu_);
  append_listener_ = std::move(listener);
  for (auto& [tp, l] : logs_) l->set_append_listener(append_listener_);
}

result<std::unique_ptr<storage::log>, storage_error> log_manager::open_partition(
    const topic_info& topic, partition_id partition, offset_t recovery_point,
    offset_t log_start_offset, bool clean, timestamp_ms now, recovery_report* report) {
  log_options o;
  o.tp = {topic.name, partition};
  o.dir = log_dir_ / partition_dir_name(o.tp);
  o.config = topic.config;
  o.recovery_point = recovery_point;
  o.log_start_offset = log_start_offset;
  o.had_clean_shutdown = clean;
  o.now = now;
  std::error_code ec;
  bool existed = fs::exists(o.dir, ec);
  auto l = log::open(o, report);
  if (!l) return l;
  if (append_listener_) (*l)->set_append_listener(append_listener_);
  auto id = read_partition_metadata(o.dir);
  if (!id || *id != topic.topic_id) {
    auto w = write_partition_metadata(o.dir, topic.topic_id);
    if (!w) return fail(w.error());
  }
  if (!existed) {
    auto s = fsync_directory(log_dir_);
    if (!s) return fail(s.error());
  }
  return l;
}

result<void, storage_error> log_manager::load(const log_manager_options& options,
                                              startup_report& report) {
  std::error_code ec;
  fs::create_directories(log_dir_, ec);
  if (ec) return fail(io_error("create directory", log_dir_, ec.value()));
  report.had_clean_shutdown = has_clean_shutdown_marker(log_dir_);
  if (report.had_clean_shutdown) {
    report.clean_shutdown_broker_epoch = clean_shutdown_marker_broker_epoch(log_dir_);
  }

  auto records = journal_ != nullptr ? journal_->load_topics() : read_topic_records(log_dir_);
  if (!records) return fail(records.error());
  for (topic_record& rec : *records) {
    auto config = resolve_log_config(rec.overrides, broker_props_);
    if (!config) return fail(config.error());
    auto info = std::make_unique<topic_info>();
    info->name = rec.name;
    info->topic_id = rec.topic_id;
    info->partitions = rec.partitions;
    info->overrides = std::move(rec.overrides);
    info->config = *config;
    topics_.emplace(info->name, std::move(info));
  }

  auto recovery_points = read_offset_checkpoint(log_dir_ / recovery_point_checkpoint_name);
  if (!recovery_points) return fail(recovery_points.error());
  auto log_starts = read_offset_checkpoint(log_dir_ / log_start_offset_checkpoint_name);
  if (!log_starts) return fail(log_starts.error());
  std::map<topic_partition, offset_t> rp, ls, hw;
  for (auto& e : *recovery_points) rp[e.tp] = e.offset;
  for (auto& e : *log_starts) ls[e.tp] = e.offset;
  // Read only where a replicated partition's high watermark starts from it (a single node's high
  // watermark is its log end offset).
  if (!options.replicated.empty()) {
    auto high_watermarks = read_offset_checkpoint(log_dir_ / kReplicationCheckpoint);
    if (!high_watermarks) return fail(high_watermarks.error());
    for (auto& e : *high_watermarks) hw[e.tp] = e.offset;
  }

  // Leftovers: finish interrupted deletions; set aside directories of unknown topics.
  std::vector<fs::directory_entry> entries;
  for (const auto& entry : fs::directory_iterator(log_dir_, ec)) {
    if (entry.is_directory()) entries.push_back(entry);
  }
  if (ec) return fail(io_error("list directory", log_dir_, ec.value()));
  for (const auto& entry : entries) {
    std::string name = entry.path().filename().string();
    if (name.ends_with("-delete")) {
      fs::remove_all(entry.path(), ec);
      report.removed_delete_dirs.push_back(name);
      continue;
    }
    if (name.ends_with("-stray") || name.ends_with("-future")) continue;
    auto tp = parse_partition_dir(name);
    if (!tp) continue;
    auto it = topics_.find(tp->topic);
    bool known = it != topics_.end() && tp->partition < it->second->partitions;
    if (known) {
      auto id = read_partition_metadata(entry.path());
      if (id && *id != it->second->topic_id) known = false;
    }
    if (!known) {
      fs::path target = log_dir_ / fmt::format("{}.{}-stray", name, uuid::random().to_hex());
      fs::rename(entry.path(), target, ec);
      if (ec) return fail(io_error("rename", entry.path(), ec.value()));
      report.stray_dirs.push_back(target.filename().string());
    }
  }

  for (const auto& [name, topic] : topics_) {
    for (partition_id p = 0; p < topic->partitions; ++p) {
      topic_partition tp{name, p};
      recovery_report rr;
      auto l = open_partition(*topic, p, rp.count(tp) ? rp[tp] : 0, ls.count(tp) ? ls[tp] : 0,
                              report.had_clean_shutdown, options.now, &rr);
      if (!l) return fail(l.error());
      if (options.replicated.contains({topic->topic_id, p})) {
        // Kafka's Partition.createLog: the checkpointed high watermark (0 when absent), bounded
        // by the log start and end offsets (UnifiedLog.updateHighWatermark).
        const offset_t checkpointed = hw.count(tp) ? hw[tp] : offset_t{0};
        (*l)->set_replicated(std::max(checkpointed, (*l)->log_start_offset()));
      }
      report.logs.push_back(std::move(rr));
      logs_.emplace(tp, std::move(*l));
    }
  }
  // From here on a crash is an unclean shutdown (LogManager deletes the marker after loading).
  if (report.had_clean_shutdown) {
    auto r = remove_clean_shutdown_marker(log_dir_);
    if (!r) return r;
  }
  return checkpoint();
}

topic_record log_manager::record_of(const topic_info& t) const {
  return topic_record{t.name, t.topic_id, t.partitions, t.overrides};
}

result<void, storage_error> log_manager::set_broker_props(const config_map& broker_props) {
  std::map<std::string, log_config, std::less<>> resolved;
  for (const auto& [name, t] : topics_) {
    auto config = resolve_log_config(t->overrides, broker_props);
    if (!config) return fail(config.error());
    resolved.emplace(name, *config);
  }
  std::unique_lock maps(map_mu_);
  broker_props_ = broker_props;
  for (auto& [name, t] : topics_) {
    t->config = resolved.at(name);
    for (partition_id i = 0; i < t->partitions; ++i) {
      if (storage::log* l = get_log(t->name, i)) l->update_config(t->config);
    }
  }
  return {};
}

std::vector<topic_record> log_manager::topic_records() const {
  std::vector<topic_record> records;
  records.reserve(topics_.size());
  for (const auto& [name, t] : topics_) records.push_back(record_of(*t));
  return records;
}

std::vector<topic_record> log_manager::topic_records_with(const topic_record& changed) const {
  std::vector<topic_record> records = topic_records();
  for (auto& r : records) {
    if (r.name == changed.name) r = changed;
  }
  return records;
}

result<void, storage_error> log_manager::persist_topics(
    const std::vector<topic_record>& records) const {
  return write_topic_records(log_dir_, records);
}

result<const topic_info*, storage_error> log_manager::create_topic(std::string_view name,
                                                                   int32_t partitions,
                                                                   const config_map& overrides,
                                                                   timestamp_ms now) {
  auto valid = validate_topic_name(name);
  if (!valid) return fail(valid.error());
  if (topics_.count(name) != 0) {
    return fail(storage_error{storage_errc::already_exists,
                              fmt::format("Topic '{}' already exists.", name)});
  }
  for (const auto& [existing, t] : topics_) {
    if (topics_collide(existing, name)) {
      return fail(storage_error{
          storage_errc::invalid_topic,
          fmt::format("Topic '{}' collides with existing topic: {}", name, existing)});
    }
  }
  if (partitions <= 0) {
    return fail(storage_error{storage_errc::invalid_partitions,
                              "Number of partitions was set to an invalid non-positive value."});
  }
  auto checked = validate_topic_configs(overrides);
  if (!checked) return fail(checked.error());
  auto config = resolve_log_config(overrides, broker_props_);
  if (!config) return fail(config.error());

  auto info = std::make_unique<topic_info>();
  info->name = std::string(name);
  info->topic_id = uuid::random();
  info->partitions = partitions;
  info->overrides = overrides;
  info->config = *config;
  topic_info* raw = info.get();
  // The commit point, then the directories and segment files, all without the map lock.
  std::vector<topic_record> records;
  if (journal_ == nullptr) {
    records = topic_records();
    records.push_back(record_of(*raw));
  }
  auto p = journal_ != nullptr ? journal_->topic_created(record_of(*raw)) : persist_topics(records);
  if (!p) return fail(p.error());
  std::vector<std::unique_ptr<log>> opened;
  std::optional<storage_error> failed;
  for (partition_id i = 0; i < partitions && !failed; ++i) {
    auto l = open_partition(*raw, i, 0, 0, true, now, nullptr);
    if (l) {
      opened.push_back(std::move(*l));
    } else {
      failed = std::move(l.error());
    }
  }
  // Recorded, so it exists even when a directory failed (the next start opens it again).
  std::unique_lock maps(map_mu_);
  topics_.emplace(raw->name, std::move(info));
  for (auto& l : opened) {
    topic_partition tp = l->tp();
    logs_.emplace(std::move(tp), std::move(l));
  }
  if (failed) return fail(std::move(*failed));
  return raw;
}

result<const topic_info*, storage_error> log_manager::adopt_topic(
    const topic_record& topic, const std::vector<partition_id>& partitions, timestamp_ms now) {
  if (topics_.count(topic.name) != 0) {
    return fail(storage_error{storage_errc::already_exists,
                              fmt::format("Topic '{}' already exists.", topic.name)});
  }
  auto config = resolve_log_config(topic.overrides, broker_props_);
  if (!config) return fail(config.error());
  auto info = std::make_unique<topic_info>();
  info->name = topic.name;
  info->topic_id = topic.topic_id;
  info->partitions = topic.partitions;
  info->overrides = topic.overrides;
  info->config = *config;
  topic_info* raw = info.get();
  std::vector<std::unique_ptr<log>> opened;
  for (partition_id p : partitions) {
    if (p < 0 || p >= topic.partitions) continue;
    auto l = open_partition(*raw, p, 0, 0, false, now, nullptr);
    if (!l) return fail(l.error());
    opened.push_back(std::move(*l));
  }
  std::unique_lock maps(map_mu_);
  topics_.emplace(raw->name, std::move(info));
  for (auto& l : opened) {
    topic_partition tp = l->tp();
    logs_.emplace(std::move(tp), std::move(l));
  }
  return raw;
}

result<void, storage_error> log_manager::adopt_partitions(
    std::string_view name, int32_t partition_count, const std::vector<partition_id>& partitions,
    timestamp_ms now) {
  auto it = topics_.find(name);
  if (it == topics_.end()) return fail(not_found(name));
  topic_info& t = *it->second;
  const int32_t count = std::max(t.partitions, partition_count);
  std::vector<std::unique_ptr<log>> opened;
  for (partition_id p : partitions) {
    if (p < 0 || p >= count || logs_.count(topic_partition{t.name, p}) != 0) continue;
    auto l = open_partition(t, p, 0, 0, false, now, nullptr);
    if (!l) return fail(l.error());
    opened.push_back(std::move(*l));
  }
  std::unique_lock maps(map_mu_);
  t.partitions = count;
  for (auto& l : opened) {
    topic_partition tp = l->tp();
    logs_.emplace(std::move(tp), std::move(l));
  }
  return {};
}

result<void, storage_error> log_manager::reset_partition_copy(std::string_view name,
                                                              partition_id partition,
                                                              timestamp_ms now) {
  auto it = topics_.find(name);
  if (it == topics_.end()) return fail(not_found(name));
  const topic_info& t = *it->second;
  const topic_partition tp{t.name, partition};
  // Out of the map under the map lock (which waits for the appends, reads and cleanings in
  // progress), then closed and removed without it.
  std::unique_ptr<log> closing;
  {
    std::unique_lock maps(map_mu_);
    auto l = logs_.find(tp);
    if (l == logs_.end()) return fail(not_found(name));
    closing = std::move(l->second);
    logs_.erase(l);
  }
  (void)closing->close();
  closing.reset();
  const fs::path dir = log_dir_ / partition_dir_name(tp);
  const fs::path doomed =
      log_dir_ / fmt::format("{}.{}-delete", partition_dir_name(tp), uuid::random().to_hex());
  std::error_code ec;
  fs::rename(dir, doomed, ec);
  if (ec && ec != std::errc::no_such_file_or_directory) {
    return fail(io_error("rename", dir, ec.value()));
  }
  const bool renamed = !ec;
  auto s = fsync_directory(log_dir_);
  if (!s) return s;
  if (renamed) {
    fs::remove_all(doomed, ec);
    if (ec) return fail(io_error("remove", doomed, ec.value()));
  }
  auto fresh = open_partition(t, partition, 0, 0, false, now, nullptr);
  if (!fresh) return fail(fresh.error());
  {
    std::unique_lock maps(map_mu_);
    logs_.emplace(tp, std::move(*fresh));
  }
  return checkpoint();
}

result<void, storage_error> log_manager::delete_topic(std::string_view name, bool record) {
  auto it = topics_.find(name);
  if (it == topics_.end()) return fail(not_found(name));
  // A cleaning of its partitions must not swap into a log about to go (LogManager.asyncDelete
  // aborts cleaning first).
  if (cleaner_) cleaner_->abort_and_forget(name);
  std::vector<topic_record> records;
  if (journal_ == nullptr) {
    records = topic_records();
    std::erase_if(records, [&](const topic_record& r) { return r.name == name; });
  }
  auto p = !record               ? result<void, storage_error>{}
           : journal_ != nullptr ? journal_->topic_deleted(record_of(*it->second))
                                 : persist_topics(records);
  if (!p) return p;
  // Out of the maps under the map lock (which waits for the appends and reads in progress), then
  // closed and removed without it.
  std::unique_ptr<topic_info> topic;
  std::vector<std::unique_ptr<log>> closing;
  {
    std::unique_lock maps(map_mu_);
    topic = std::move(it->second);
    topics_.erase(it);
    for (partition_id i = 0; i < topic->partitions; ++i) {
      auto l = logs_.find(topic_partition{topic->name, i});
      if (l == logs_.end()) continue;
      closing.push_back(std::move(l->second));
      logs_.erase(l);
    }
  }
  for (auto& l : closing) (void)l->close();
  closing.clear();
  std::vector<fs::path> doomed;
  for (partition_id i = 0; i < topic->partitions; ++i) {
    topic_partition tp{topic->name, i};
    fs::path dir = log_dir_ / partition_dir_name(tp);
    fs::path target =
        log_dir_ / fmt::format("{}.{}-delete", partition_dir_name(tp), uuid::random().to_hex());
    std::error_code ec;
    fs::rename(dir, target, ec);
    if (ec && ec != std::errc::no_such_file_or_directory)
      return fail(io_error("rename", dir, ec.value()));
    if (!ec) doomed.push_back(target);
  }
  auto s = fsync_directory(log_dir_);
  if (!s) return s;
  for (const fs::path& dir : doomed) {
    std::error_code ec;
    fs::remove_all(dir, ec);
    if (ec) return fail(io_error("remove", dir, ec.value()));
  }
  return checkpoint();
}

result<void, storage_error> log_manager::set_topic_config(std::string_view name,
                                                          const config_map& overrides) {
  auto it = topics_.find(name);
  if (it == topics_.end()) return fail(not_found(name));
  auto checked = validate_topic_configs(overrides);
  if (!checked) return fail(checked.error());
  auto config = resolve_log_config(overrides, broker_props_);
  if (!config) return fail(config.error());
  topic_info& t = *it->second;
  topic_record changed = record_of(t);
  changed.overrides = overrides;
  auto p = journal_ != nullptr ? journal_->topic_config_changed(changed, t.overrides)
                               : persist_topics(topic_records_with(changed));
  if (!p) return p;
  install_overrides(t, overrides, *config);
  return {};
}

void log_manager::install_overrides(topic_info& t, const config_map& overrides,
                                    const log_config& config) {
  std::unique_lock maps(map_mu_);
  t.overrides = overrides;
  t.config = config;
  for (partition_id i = 0; i < t.partitions; ++i) {
    if (storage::log* l = get_log(t.name, i)) l->update_config(t.config);
  }
}

result<void, storage_error> log_manager::adopt_topic_config(std::string_view name,
                                                            const config_map& overrides) {
  auto it = topics_.find(name);
  if (it == topics_.end()) return fail(not_found(name));
  auto config = resolve_log_config(overrides, broker_props_);
  if (!config) return fail(config.error());
  install_overrides(*it->second, overrides, *config);
  return {};
}

result<void, storage_error> log_manager::create_partitions(std::string_view name, int32_t new_count,
                                                           timestamp_ms now) {
  auto it = topics_.find(name);
  if (it == topics_.end()) return fail(not_found(name));
  topic_info& t = *it->second;
  // Kafka's messages (ReplicationControlManager.createPartitions).
  if (new_count == t.partitions) {
    return fail(storage_error{storage_errc::invalid_partitions,
                              fmt::format("Topic already has {} partition(s).", t.partitions)});
  }
  if (new_count < t.partitions) {
    return fail(storage_error{
        storage_errc::invalid_partitions,
        fmt::format("The topic {} currently has {} partition(s); {} would not be an increase.",
                    t.name, t.partitions, new_count)});
  }
  const int32_t old_count = t.partitions;
  topic_record grown = record_of(t);
  grown.partitions = new_count;
  auto p = journal_ != nullptr ? journal_->partitions_created(grown, old_count)
                               : persist_topics(topic_records_with(grown));
  if (!p) return p;
  std::vector<std::unique_ptr<log>> opened;
  std::optional<storage_error> failed;
  for (partition_id i = old_count; i < new_count && !failed; ++i) {
    auto l = open_partition(t, i, 0, 0, true, now, nullptr);
    if (l) {
      opened.push_back(std::move(*l));
    } else {
      failed = std::move(l.error());
    }
  }
  std::unique_lock maps(map_mu_);
  t.partitions = new_count;
  for (auto& l : opened) {
    topic_partition tp = l->tp();
    logs_.emplace(std::move(tp), std::move(l));
  }
  if (failed) return fail(std::move(*failed));
  return {};
}

const topic_info* log_manager::find_topic(std::string_view name) const {
  auto it = topics_.find(name);
  return it == topics_.end() ? nullptr : it->second.get();
}

std::vector<const topic_info*> log_manager::topics() const {
  std::vector<const topic_info*> out;
  out.reserve(topics_.size());
  for (const auto& [name, t] : topics_) out.push_back(t.get());
  return out;
}

storage::log* log_manager::get_log(std::string_view topic, partition_id partition) const {
  auto it = logs_.find(topic_partition{std::string(topic), partition});
  return it == logs_.end() ? nullptr : it->second.get();
}

result<void, storage_error> log_manager::checkpoint() {
  std::lock_guard writer(checkpoint_mu_);
  std::vector<partition_offset> rp, ls, hw;
  rp.reserve(logs_.size());
  ls.reserve(logs_.size());
  hw.reserve(logs_.size());
  for (const auto& [tp, l] : logs_) {
    rp.push_back({tp, l->recovery_point()});
    ls.push_back({tp, l->log_start_offset()});
    hw.push_back({tp, l->high_watermark()});
  }
  written_recovery_points_.clear();
  written_high_watermarks_.clear();
  auto a = write_offset_checkpoint(log_dir_ / recovery_point_checkpoint_name, rp);
  if (!a) return a;
  written_recovery_points_ = std::move(rp);
  auto b = write_offset_checkpoint(log_dir_ / log_start_offset_checkpoint_name, ls);
  if (!b) return b;
  auto c = write_offset_checkpoint(log_dir_ / kReplicationCheckpoint, hw);
  if (!c) return c;
  written_high_watermarks_ = std::move(hw);
  return {};
}

result<void, storage_error> log_manager::checkpoint_high_watermarks() {
  std::lock_guard writer(checkpoint_mu_);
  std::vector<partition_offset> hw;
  hw.reserve(logs_.size());
  for (const auto& [tp, l] : logs_) hw.push_back({tp, l->high_watermark()});
  if (hw == written_high_watermarks_) return {};
  written_high_watermarks_.clear();  // unknown until the write succeeds
  auto w = write_offset_checkpoint(log_dir_ / kReplicationCheckpoint, hw);
  if (!w) return w;
  written_high_watermarks_ = std::move(hw);
  return {};
}

result<void, storage_error> log_manager::checkpoint_recovery_points() {
  std::lock_guard writer(checkpoint_mu_);
  std::vector<partition_offset> rp;
  rp.reserve(logs_.size());
  for (const auto& [tp, l] : logs_) rp.push_back({tp, l->recovery_point()});
  if (rp == written_recovery_points_) return {};
  written_recovery_points_.clear();
  auto w = write_offset_checkpoint(log_dir_ / recovery_point_checkpoint_name, rp);
  if (!w) return w;
  written_recovery_points_ = std::move(rp);
  return {};
}

result<void, storage_error> log_manager::checkpoint_log_start_offsets() {
  std::lock_guard writer(checkpoint_mu_);
  std::vector<partition_offset> ls;
  ls.reserve(logs_.size());
  for (const auto& [tp, l] : logs_) ls.push_back({tp, l->log_start_offset()});
  return write_offset_checkpoint(log_dir_ / log_start_offset_checkpoint_name, ls);
}

result<int32_t, storage_error> log_manager::delete_old_segments(timestamp_ms now) {
  int32_t deleted = 0;
  std::optional<storage_error> first;
  for (auto& [tp, l] : logs_) {
    std::unique_lock log_lock(l->mutex());
    auto r = l->delete_old_segments(now);
    log_lock.unlock();
    if (r) {
      deleted += *r;
    } else if (!first) {
      first = std::move(r.error());
    }
  }
  if (deleted > 0) {
    auto c = checkpoint_log_start_offsets();
    if (!c && !first) first = std::move(c.error());
  }
  if (first) return fail(std::move(*first));
  return deleted;
}

void log_manager::start_retention(int64_t interval_ms, cleaner_log_fn log_line) {
  if (retention_thread_.joinable()) return;
  retention_stopping_ = false;
  retention_thread_ = std::thread([this, interval_ms, log_line = std::move(log_line)] {
    auto wait = std::chrono::milliseconds(std::min<int64_t>(interval_ms, 30000));
    for (;;) {
      {
        std::unique_lock lock(retention_mu_);
        if (retention_wake_.wait_for(lock, wait, [&] { return retention_stopping_; })) return;
      }
      wait = std::chrono::milliseconds(interval_ms);
      // Not a blocking lock: stop_retention() may run on a thread that holds map_mu_.
      std::shared_lock owner(map_mu_, std::defer_lock);
      while (!owner.try_lock()) {
        std::unique_lock lock(retention_mu_);
        if (retention_wake_.wait_for(lock, std::chrono::milliseconds(1),
                                     [&] { return retention_stopping_; })) {
          return;
        }
      }
      const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
      auto deleted = delete_old_segments(now);
      owner.unlock();
      if (!deleted) {
        log_line(true, fmt::format("retention pass failed: {}", deleted.error().message));
      } else if (*deleted > 0) {
        log_line(false, fmt::format("retention deleted {} segment(s)", *deleted));
      }
    }
  });
}

void log_manager::start_checkpoints(int64_t high_watermark_interval_ms,
                                    int64_t recovery_point_interval_ms, cleaner_log_fn log_line) {
  if (checkpoint_thread_.joinable()) return;
  if (high_watermark_interval_ms <= 0 && recovery_point_interval_ms <= 0) return;
  checkpoint_stopping_ = false;
  checkpoint_thread_ = std::thread([this, high_watermark_interval_ms, recovery_point_interval_ms,
                                    log_line = std::move(log_line)] {
    using clock = std::chrono::steady_clock;
    using ms = std::chrono::milliseconds;
    struct task {
      int64_t interval_ms;
      clock::time_point next;
      result<void, storage_error> (log_manager::*write)();
      const char* what;
    };
    const auto start = clock::now();
    std::vector<task> tasks;
    if (high_watermark_interval_ms > 0) {
      tasks.push_back({high_watermark_interval_ms, start + ms(high_watermark_interval_ms),
                       &log_manager::checkpoint_high_watermarks, "high watermark"});
    }
    if (recovery_point_interval_ms > 0) {
      tasks.push_back({recovery_point_interval_ms, start + ms(recovery_point_interval_ms),
                       &log_manager::checkpoint_recovery_points, "recovery point"});
    }
    for (;;) {
      clock::time_point due = tasks.front().next;
      for (const auto& t : tasks) due = std::min(due, t.next);
      {
        // Woken at least once a minute, so no deadline is ever far enough to overflow.
        std::unique_lock lock(checkpoint_task_mu_);
        const auto wait = std::min<clock::duration>(due - clock::now(), std::chrono::minutes(1));
        if (checkpoint_wake_.wait_for(lock, wait, [&] { return checkpoint_stopping_; })) return;
      }
      const auto now = clock::now();
      if (now < due) continue;
      // Not a blocking lock: stop_checkpoints() may run on a thread that holds map_mu_.
      std::shared_lock owner(map_mu_, std::defer_lock);
      while (!owner.try_lock()) {
        std::unique_lock lock(checkpoint_task_mu_);
        if (checkpoint_wake_.wait_for(lock, ms(1), [&] { return checkpoint_stopping_; })) return;
      }
      for (auto& t : tasks) {
        if (now < t.next) continue;
        t.next = now + ms(t.interval_ms);
        if (auto w = (this->*t.write)(); !w) {
          log_line(true, fmt::format("{} checkpoint failed: {}", t.what, w.error().message));
        }
      }
    }
  });
}

void log_manager::stop_checkpoints() {
  {
    std::lock_guard lock(checkpoint_task_mu_);
    checkpoint_stopping_ = true;
  }
  checkpoint_wake_.notify_all();
  if (checkpoint_thread_.joinable()) checkpoint_thread_.join();
}

void log_manager::stop_retention() {
  {
    std::lock_guard lock(retention_mu_);
    retention_stopping_ = true;
  }
  retention_wake_.notify_all();
  if (retention_thread_.joinable()) retention_thread_.join();
}

result<void, storage_error> log_manager::flush_dirty_logs(timestamp_ms now) {
  result<void, storage_error> first{};
  for (auto& [tp, l] : logs_) {
    std::lock_guard log_lock(l->mutex());
    auto f = l->maybe_flush(now);
    if (!f && first) first = std::move(f);
  }
  return first;
}

result<void, storage_error> log_manager::shutdown(int64_t broker_epoch, timestamp_ms now) {
  if (shut_down_) return {};
  stop_checkpoints();
  stop_retention();
  stop_cleaner();
  std::unique_lock maps(map_mu_);
  for (auto& [tp, l] : logs_) {
    auto f = l->flush(now);
    if (!f) return f;
    auto c = l->close();
    if (!c) return c;
  }
  auto cp = checkpoint();
  if (!cp) return cp;
  shut_down_ = true;
  return write_clean_shutdown_marker(log_dir_, broker_epoch);
}

}  // namespace tarn::storage
