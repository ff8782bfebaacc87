// The log cleaner of one log directory (Kafka's LogCleaner + LogCleanerManager): a pool of
// log.cleaner.threads threads, each with its own offset map of dedupe.buffer.size / threads
// bytes, repeatedly picking the compacted log with the highest cleanable ratio (above its
// min.cleanable.dirty.ratio, or with a dirty segment past max.compaction.lag.ms), cleaning it,
// and recording where it stopped in cleaner-offset-checkpoint; log.cleaner.backoff.ms between
// rounds that found nothing; all threads sharing one log.cleaner.io.max.bytes.per.second.
// A partition whose cleaning fails on its data is left alone until restart (Kafka's uncleanable
// partitions); one whose system call failed (a full disk) is tried again after the backoff.
//
// Threading: a cleaner thread takes the log manager's map_mutex() shared, with the log's own
// mutex(), only to choose a log (copying what it will read) and to swap a cleaned group in, so
// appends go on meanwhile. The cleaner's own state has its own mutex, never held while waiting
// for the map lock.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/result.h"
#include "storage/cleaner_checkpoint.h"
#include "storage/log_cleaner.h"

namespace tarn::storage {

class log_manager;

// Receives the cleaner's log lines (one per cleaning, as Kafka's log-cleaner.log; warnings for
// partitions it gives up on).
using cleaner_log_fn = std::function<void(bool warning, const std::string& line)>;

// The gauges Kafka registers under kafka.log:type=LogCleanerManager and type=LogCleaner, computed
// as Kafka computes them (integer percents and seconds, truncated). Not here: LogCleaner's
// DeadThreadCount (tarn's threads do not die on an error), LogCleanerManager's uncleanable-bytes.
struct cleaner_metrics {
  int32_t max_dirty_percent = 0;       // 100 x the last round's highest cleanable ratio
  int64_t time_since_last_run_ms = 0;  // since a thread last looked for a log to clean
  int32_t uncleanable_partitions_count = 0;
  // Over each thread's last cleaning (zeros before its first): the highest dedupe buffer use,
  // bytes written / read of all of them, the longest.
  int32_t max_buffer_utilization_percent = 0;
  int32_t cleaner_recopy_percent = 0;
  int32_t max_clean_time_secs = 0;
  // Over each thread's last round that chose a log: the longest any compacted log's oldest dirty
  // segment was past max.compaction.lag.ms then.
  int32_t max_compaction_delay_secs = 0;
};

class log_cleaner_manager {
 public:
  static result<std::unique_ptr<log_cleaner_manager>, storage_error> create(
      log_manager& logs, const cleaner_config& config, cleaner_log_fn log_line);
  log_cleaner_manager(const log_cleaner_manager&) = delete;
  log_cleaner_manager& operator=(const log_cleaner_manager&) = delete;
  ~log_cleaner_manager();

  // Starts the threads (none when log.cleaner.enable is false or threads is 0).
  void start();
  // Stops and joins the threads; a cleaning in progress is abandoned (its .cleaned files
  // removed). Safe with or without the map lock held.
  void shutdown();

  // One round on the calling thread with cleaner `thread_id` (< threads): the filthiest log is
  // cleaned; false when no log needed it. The threads run this in a loop.
  result<bool, storage_error> clean_filthiest_log(int32_t thread_id, timestamp_ms now);

  // Topic deletion: cleanings of its partitions stop before their
  // swap, and their checkpoint entries go.
  void abort_and_forget(std::string_view topic);

  // The highest cleanable ratio seen by the last round (Kafka's max-dirty-percent metric).
  double dirtiest_log_cleanable_ratio() const { return dirtiest_ratio_.load(); }
  bool enabled() const { return config_.enable; }
  cleaner_metrics metrics(timestamp_ms now) const;
  cleaner_offsets checkpoints() const;
  std::set<topic_partition> uncleanable_partitions() const;

 private:
  log_cleaner_manager(log_manager& logs, const cleaner_config& config, cleaner_log_fn log_line);
  // The map lock shared, unless shutdown() began first.
  std::optional<std::shared_lock<std::shared_mutex>> lock_owner();
  void run(int32_t thread_id);

  log_manager& logs_;
  const cleaner_config config_;
  cleaner_log_fn log_line_;
  throttler throttle_;
  std::vector<std::unique_ptr<cleaner>> cleaners_;  // one per thread
  std::vector<std::thread> threads_;
  std::atomic<bool> stopping_{false};
  std::atomic<double> dirtiest_ratio_{0};
  std::atomic<timestamp_ms> last_run_ms_{0};  // Kafka's timeOfLastRun: creation, then each round

  mutable std::mutex mu_;  // guards what follows
  std::condition_variable wake_;
  cleaner_offsets checkpoints_;
  std::map<topic_partition, std::shared_ptr<std::atomic<bool>>> in_progress_;  // -> aborted
  std::set<topic_partition> uncleanable_;
  std::vector<cleaner_stats> last_stats_;              // per thread: its last finished cleaning
  std::vector<int64_t> last_max_compaction_delay_ms_;  // per thread (Kafka's lastPreCleanStats)
};

}  // namespace tarn::storage
