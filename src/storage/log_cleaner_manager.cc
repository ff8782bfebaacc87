// The log directory's cleaner threads: see log_cleaner_manager.h. Kafka's LogCleaner.CleanerThread
// and LogCleanerManager.grabFilthiestCompactedLog / doneCleaning are the models.
#include "storage/log_cleaner_manager.h"

#include <algorithm>
#include <chrono>

#include "fmt/format.h"
#include "storage/log_manager.h"

namespace tarn::storage {
namespace {

timestamp_ms wall_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

log_cleaner_manager::log_cleaner_manager(log_manager& logs, const cleaner_config& config,
                                         cleaner_log_fn log_line)
    : logs_(logs),
      config_(config),
      log_line_(std::move(log_line)),
      throttle_(config.max_io_bytes_per_second) {}

log_cleaner_manager::~log_cleaner_manager() { shutdown(); }

result<std::unique_ptr<log_cleaner_manager>, storage_error> log_cleaner_manager::create(
    log_manager& logs, const cleaner_config& config, cleaner_log_fn log_line) {
  std::unique_ptr<log_cleaner_manager> m(
      new log_cleaner_manager(logs, config, std::move(log_line)));
  auto offsets = read_cleaner_checkpoint(logs.log_dir());
  if (!offsets) return fail(offsets.error());
  m->checkpoints_ = std::move(*offsets);
  m->last_run_ms_.store(wall_now_ms());
  const int32_t threads = std::max(config.threads, 1);
  // Kafka: at most 2 GiB of map per thread; the I/O buffer is split between threads and between
  // the read and write buffers.
  const size_t map_bytes = static_cast<size_t>(
      std::min<int64_t>(config.dedupe_buffer_size / threads, int64_t{INT32_MAX}));
  const size_t io_bytes = static_cast<size_t>(std::max(config.io_buffer_size / threads / 2, 1));
  for (int32_t i = 0; i < threads; ++i) {
    auto c =
        cleaner::create(i, map_bytes, config.dedupe_buffer_load_factor, io_bytes, &m->throttle_);
    if (!c) return fail(c.error());
    m->cleaners_.push_back(std::move(*c));
  }
  m->last_stats_.resize(m->cleaners_.size());
  m->last_max_compaction_delay_ms_.resize(m->cleaners_.size());
  return m;
}

void log_cleaner_manager::start() {
  if (!config_.enable || config_.threads <= 0 || !threads_.empty()) return;
  for (int32_t i = 0; i < static_cast<int32_t>(cleaners_.size()); ++i) {
    threads_.emplace_back([this, i] { run(i); });
  }
}

void log_cleaner_manager::shutdown() {
  {
    std::lock_guard lock(mu_);
    stopping_.store(true);
    for (auto& [tp, aborted] : in_progress_) aborted->store(true);
    wake_.notify_all();
  }
  throttle_.stop();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

std::optional<std::shared_lock<std::shared_mutex>> log_cleaner_manager::lock_owner() {
  // Not a blocking lock: shutdown() may run on a thread that holds the map lock (exclusively)
  // while it waits for this one.
  std::shared_lock lock(logs_.map_mutex(), std::defer_lock);
  while (!lock.try_lock()) {
    if (stopping_.load()) return std::nullopt;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return lock;
}

void log_cleaner_manager::run(int32_t thread_id) {
  while (!stopping_.load()) {
    auto cleaned = clean_filthiest_log(thread_id, wall_now_ms());
    if (cleaned && *cleaned) continue;
    std::unique_lock lock(mu_);
    wake_.wait_for(lock, std::chrono::milliseconds(config_.backoff_ms),
                   [&] { return stopping_.load(); });
  }
}

result<bool, storage_error> log_cleaner_manager::clean_filthiest_log(int32_t thread_id,
                                                                     timestamp_ms now) {
  cleaner& c = *cleaners_.at(static_cast<size_t>(thread_id));
  std::optional<log_to_clean> chosen;
  const log* chosen_log = nullptr;
  std::shared_ptr<std::atomic<bool>> aborted;
  {
    auto owner = lock_owner();
    if (!owner) return false;
    std::lock_guard lock(mu_);
    last_run_ms_.store(now);
    // As Kafka's updateCheckpoints, every write keeps only the partitions this broker has: an
    // entry whose log went without a deletion through abort_and_forget (its directory removed
    // while the broker was down) is dropped with the next write.
    std::erase_if(checkpoints_, [&](const auto& e) {
      return logs_.get_log(e.first.topic, e.first.partition) == nullptr;
    });
    double dirtiest = 0;
    int64_t max_compaction_delay_ms = 0;
    bool checkpoints_changed = false;
    for (const auto& [tp, l] : logs_.all_logs()) {
      if (!l->config().cleanup_compact || in_progress_.count(tp) || uncleanable_.count(tp)) {
        continue;
      }
      auto it = checkpoints_.find(tp);
      std::optional<offset_t> last_clean;
      if (it != checkpoints_.end()) last_clean = it->second;
      std::unique_lock log_lock(l->mutex());
      log_to_clean t = make_log_to_clean(*l, last_clean, now);
      log_lock.unlock();
      if (t.force_update_checkpoint) {
        checkpoints_[tp] = t.first_dirty_offset;
        checkpoints_changed = true;
      }
      max_compaction_delay_ms = std::max(max_compaction_delay_ms, t.max_compaction_delay_ms);
      if (t.clean_bytes + t.cleanable_bytes == 0) continue;
      dirtiest = std::max(dirtiest, t.cleanable_ratio());
      const bool cleanable = (t.need_compaction_now && t.cleanable_bytes > 0) ||
                             t.cleanable_ratio() > t.config.min_cleanable_dirty_ratio;
      if (cleanable && (!chosen || t.cleanable_ratio() > chosen->cleanable_ratio())) {
        chosen = std::move(t);
        chosen_log = l;
      }
    }
    dirtiest_ratio_.store(dirtiest);
    if (checkpoints_changed) (void)write_cleaner_checkpoint(logs_.log_dir(), checkpoints_);
    if (!chosen) return false;
    last_max_compaction_delay_ms_.at(static_cast<size_t>(thread_id)) = max_compaction_delay_ms;
    aborted = std::make_shared<std::atomic<bool>>(stopping_.load());
    in_progress_.emplace(chosen->tp, aborted);
  }

  const topic_partition tp = chosen->tp;
  auto swap = [&](cleaned_group g) -> result<bool, storage_error> {
    auto owner = lock_owner();
    // The log must still be the one chosen: a deletion sets `aborted` before it takes the map
    // lock to drop the log.
    if (!owner || aborted->load() || logs_.get_log(tp.topic, tp.partition) != chosen_log) {
      (void)g.segment->remove();
      return false;
    }
    log* l = logs_.get_log(tp.topic, tp.partition);
    std::lock_guard log_lock(l->mutex());
    return l->replace_segments(std::move(g.segment), g.replaces);
  };
  auto result = c.clean(*chosen, now, swap, [&] { return aborted->load(); });

  std::lock_guard lock(mu_);
  in_progress_.erase(tp);
  if (!result) {
    // A deletion or shutdown pulled the files away mid-cleaning: not the partition's fault.
    if (aborted->load()) return false;
    if (result.error().code == storage_errc::io_error) {
      // A failed system call (a full disk, most often) is not the partition's fault either.
      // Kafka takes the log dir offline for it; tarn keeps serving (as for appends, see
      // docs/compatibility.md), so the cleaner tries the log again after its backoff. The
      // round's .cleaned files are gone (removed by the cleaner, or by the next try's start).
      if (log_line_) {
        log_line_(true, fmt::format("Failed to clean log {}: {}. The cleaning will be retried",
                                    partition_dir_name(tp), result.error().message));
      }
      return false;
    }
    // LogCleaningException: Kafka marks the partition uncleanable and goes on with the others.
    uncleanable_.insert(tp);
    if (log_line_) {
      log_line_(true, fmt::format("Unexpected error while cleaning log {}: {}. Marking its "
                                  "partition as uncleanable",
                                  partition_dir_name(tp), result.error().message));
    }
    return false;
  }
  if (aborted->load()) return true;
  // doneCleaning: the checkpoint moves to where this round stopped.
  checkpoints_[tp] = result->next_dirty_offset;
  auto w = write_cleaner_checkpoint(logs_.log_dir(), checkpoints_);
  if (!w && log_line_) {
    log_line_(true, fmt::format("Failed to write cleaner checkpoint: {}", w.error().message));
  }
  last_stats_.at(static_cast<size_t>(thread_id)) = result->stats;
  if (log_line_) {
    log_line_(false, format_cleaner_stats(thread_id, tp, chosen->first_dirty_offset,
                                          result->next_dirty_offset, result->stats));
  }
  return true;
}

void log_cleaner_manager::abort_and_forget(std::string_view topic) {
  std::lock_guard lock(mu_);
  for (auto& [tp, aborted] : in_progress_) {
    if (tp.topic == topic) aborted->store(true);
  }
  const size_t before = checkpoints_.size();
  std::erase_if(checkpoints_, [&](const auto& e) { return e.first.topic == topic; });
  std::erase_if(uncleanable_, [&](const topic_partition& tp) { return tp.topic == topic; });
  if (checkpoints_.size() != before) (void)write_cleaner_checkpoint(logs_.log_dir(), checkpoints_);
}

cleaner_metrics log_cleaner_manager::metrics(timestamp_ms now) const {
  cleaner_metrics m;
  m.max_dirty_percent = static_cast<int32_t>(100 * dirtiest_ratio_.load());
  m.time_since_last_run_ms = now - last_run_ms_.load();
  std::lock_guard lock(mu_);
  m.uncleanable_partitions_count = static_cast<int32_t>(uncleanable_.size());
  double utilization = 0, clean_secs = 0;
  int64_t read = 0, written = 0;
  for (const cleaner_stats& s : last_stats_) {
    utilization = std::max(utilization, s.buffer_utilization);
    clean_secs = std::max(clean_secs, static_cast<double>(s.end_ms - s.start_ms) / 1000.0);
    read += s.bytes_read;
    written += s.bytes_written;
  }
  m.max_buffer_utilization_percent = static_cast<int32_t>(utilization * 100);
  m.cleaner_recopy_percent = static_cast<int32_t>(
      100 * (static_cast<double>(written) / static_cast<double>(std::max<int64_t>(read, 1))));
  m.max_clean_time_secs = static_cast<int32_t>(clean_secs);
  int64_t delay_ms = 0;
  for (int64_t d : last_max_compaction_delay_ms_) delay_ms = std::max(delay_ms, d);
  m.max_compaction_delay_secs = static_cast<int32_t>(static_cast<double>(delay_ms) / 1000);
  return m;
}

cleaner_offsets log_cleaner_manager::checkpoints() const {
  std::lock_guard lock(mu_);
  return checkpoints_;
}

std::set<topic_partition> log_cleaner_manager::uncleanable_partitions() const {
  std::lock_guard lock(mu_);
  return uncleanable_;
}

}  // namespace tarn::storage
