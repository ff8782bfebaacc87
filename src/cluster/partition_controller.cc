// partition_controller: the controller's scans of the partition states against the live brokers
// (partition_controller.h).
#include "cluster/partition_controller.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <chrono>

#include "cluster/etcd_partition_store.h"

namespace tarn::cluster {

namespace {

// The node id at the end of a brokers/<id> key, or -1.
int32_t node_id_of(std::string_view key, std::string_view dir) {
  if (!key.starts_with(dir)) return -1;
  key.remove_prefix(dir.size());
  int32_t id = -1;
  const auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
  return ec == std::errc() && end == key.data() + key.size() ? id : -1;
}

}  // namespace

result<std::unique_ptr<partition_controller>, etcd::etcd_error> partition_controller::start(
    partition_controller_options options, unclean_policy unclean) {
  auto client = etcd::etcd_client::create(options.client);
  if (!client) return fail(client.error());
  std::unique_ptr<partition_controller> c(
      new partition_controller(std::move(options), std::move(unclean), std::move(*client)));
  c->thread_ = std::thread([self = c.get()] { self->run(); });
  return c;
}

partition_controller::partition_controller(partition_controller_options options,
                                           unclean_policy unclean,
                                           std::unique_ptr<etcd::etcd_client> client)
    : options_(std::move(options)), unclean_(std::move(unclean)), client_(std::move(client)) {}

partition_controller::~partition_controller() {
  {
    std::lock_guard g(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void partition_controller::set_controller(bool is_controller, int64_t epoch) {
  {
    std::lock_guard g(mu_);
    is_controller_ = is_controller;
    epoch_ = epoch;
    dirty_ = is_controller;
  }
  cv_.notify_all();
}

void partition_controller::brokers_changed() {
  {
    std::lock_guard g(mu_);
    dirty_ = true;
  }
  cv_.notify_all();
}

void partition_controller::run() {
  std::unique_lock lock(mu_);
  while (!stopping_) {
    cv_.wait_for(lock, std::chrono::milliseconds(options_.rescan_interval_ms),
                 [this] { return stopping_ || (is_controller_ && dirty_); });
    if (stopping_) break;
    if (!is_controller_) {
      known_epochs_.clear();
      continue;
    }
    dirty_ = false;
    const int64_t epoch = epoch_;
    lock.unlock();
    const bool done = scan(epoch);
    lock.lock();
    if (!done && !stopping_) {
      dirty_ = true;
      cv_.wait_for(lock, std::chrono::milliseconds(options_.retry_backoff_ms),
                   [this] { return stopping_; });
    }
  }
}

bool partition_controller::scan(int64_t epoch) {
  const std::string brokers_dir = options_.prefix + "brokers/";
  const std::string partitions_dir = options_.prefix + "partitions/";
  const std::string controller_key = options_.prefix + "controller";
  auto registered = client_->range(brokers_dir, etcd::prefix_end(brokers_dir));
  if (!registered) {
    spdlog::warn("controller: cannot read the brokers: {}", registered.error().message);
    return false;
  }
  // Every registration is a live broker (it goes with its lease); its epoch is the key's create
  // revision, as KIP-903 compares it.
  broker_states live;
  std::vector<int32_t> live_ids;
  for (const auto& kv : registered->kvs) {
    const int32_t id = node_id_of(kv.key, brokers_dir);
    if (id < 0) continue;
    live[id] = broker_state{kv.create_revision, false, false};
    live_ids.push_back(id);
  }
  // Brokers whose registration changed since the last scan: they restarted in between.
  broker_states before_restart = live;
  std::vector<int32_t> restarted;
  for (const auto& [id, b] : live) {
    auto known = known_epochs_.find(id);
    if (known != known_epochs_.end() && known->second != b.epoch) {
      restarted.push_back(id);
      before_restart.erase(id);
    }
  }
  auto states = client_->range(partitions_dir, etcd::prefix_end(partitions_dir));
  if (!states) {
    spdlog::warn("controller: cannot read the partition states: {}", states.error().message);
    return false;
  }
  // The decisions, then their writes: up to max_changes_per_txn in one transaction (etcd's
  // default --max-txn-ops is 128: one compare and one put each, plus the controller key's
  // compare), so that a broker leading many partitions hands them over in one round trip; a
  // batch that loses its compare-and-swap is retried one change at a time, to keep the others.
  struct change {
    const etcd::key_value* kv;
    std::pair<uuid, int32_t> key;
    partition_state from, to;
  };
  std::vector<change> changes;
  for (const auto& kv : states->kvs) {
    auto key = parse_partition_key(kv.key, partitions_dir);
    auto state = decode_partition_state(kv.value);
    if (!key || !state) continue;
    const bool unclean = unclean_ && unclean_(key->first);
    std::optional<partition_state> next;
    if (!restarted.empty()) next = reconcile(*state, before_restart, unclean);
    if (auto after = reconcile(next ? *next : *state, live, unclean)) next = std::move(after);
    if (next) changes.push_back({&kv, *key, std::move(*state), std::move(*next)});
  }
  // One transaction for changes[from, to): whether it was written.
  auto write = [&](size_t from, size_t to) -> result<bool, etcd::etcd_error> {
    etcd::txn_request t;
    t.compares.push_back({controller_key,
                          etcd::compare::target_kind::create_revision,
                          etcd::compare::result_kind::equal,
                          epoch,
                          {}});
    for (size_t i = from; i < to; ++i) {
      t.compares.push_back({changes[i].kv->key,
                            etcd::compare::target_kind::mod_revision,
                            etcd::compare::result_kind::equal,
                            changes[i].kv->mod_revision,
                            {}});
      t.success.push_back(
          etcd::request_op::put(changes[i].kv->key, encode_partition_state(changes[i].to)));
    }
    auto written = client_->txn(t);
    if (!written) return fail(written.error());
    return written->succeeded;
  };
  auto report = [&](const change& c) {
    changes_written_.fetch_add(1);
    spdlog::info(
        "controller (epoch {}): partition {}-{}: leader {} -> {} (leader epoch {}), ISR [{}] -> "
        "[{}] (partition epoch {}), live brokers [{}]",
        epoch, c.key.first.to_string(), c.key.second, c.from.leader, c.to.leader, c.to.leader_epoch,
        fmt::join(c.from.isr, ","), fmt::join(c.to.isr, ","), c.to.partition_epoch,
        fmt::join(live_ids, ","));
  };
  constexpr size_t max_changes_per_txn = 60;
  bool done = true;
  for (size_t from = 0; from < changes.size(); from += max_changes_per_txn) {
    const size_t to = std::min(changes.size(), from + max_changes_per_txn);
    auto batch = write(from, to);
    if (!batch) {
      spdlog::warn("controller: writing partition states: {}", batch.error().message);
      return false;
    }
    if (*batch) {
      for (size_t i = from; i < to; ++i) report(changes[i]);
      continue;
    }
    for (size_t i = from; i < to; ++i) {
      auto one = to - from == 1 ? batch : write(i, i + 1);
      if (!one) {
        spdlog::warn("controller: writing {}: {}", changes[i].kv->key, one.error().message);
        return false;
      }
      if (*one) {
        report(changes[i]);
      } else {
        // The partition changed since the read (a leader's AlterPartition), or this broker is no
        // longer the controller: read again and decide on what is there now.
        done = false;
      }
    }
  }
  known_epochs_.clear();
  for (const auto& [id, b] : live) known_epochs_[id] = b.epoch;
  if (!restarted.empty()) {
    spdlog::info("controller (epoch {}): broker(s) [{}] registered again since the last scan",
                 epoch, fmt::join(restarted, ","));
  }
  return done;
}

}  // namespace tarn::cluster
