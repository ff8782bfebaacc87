// partition_controller: the controller's scans of the partition states against the live brokers
// (partition_controller.h).
#include "cluster/partition_controller.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <chrono>

#include "cluster/cluster_membership.h"
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

// The registrations' compare a write of a new leader carries: a leader that died or began
// shutting down since the read is not written.
etcd::compare registration_unchanged(const std::string& brokers_dir, int32_t node_id,
                                     const std::map<int32_t, int64_t>& registration_revisions) {
  auto found = registration_revisions.find(node_id);
  return {brokers_dir + std::to_string(node_id),
          etcd::compare::target_kind::mod_revision,
          etcd::compare::result_kind::equal,
          found == registration_revisions.end() ? int64_t{0} : found->second,
          {}};
}

// The compare-and-swap rounds of ElectLeaders and AlterPartitionReassignments: each round reads
// the live brokers and calls round(live, registration_revisions, pending), which decides what it
// can and returns the items whose write lost to a concurrent change. A write loses only to a
// change made between its read and itself, so five rounds are plenty; what still loses is
// returned (the callers answer it REQUEST_TIMED_OUT: it changes faster than it can be decided on).
template <typename Round>
result<std::vector<size_t>, etcd::etcd_error> cas_rounds(etcd::etcd_client& client,
                                                         const std::string& brokers_dir,
                                                         size_t count, Round round) {
  std::vector<size_t> pending(count);
  for (size_t i = 0; i < pending.size(); ++i) pending[i] = i;
  for (int r = 0; r < 5 && !pending.empty(); ++r) {
    auto registered = client.range(brokers_dir, etcd::prefix_end(brokers_dir));
    if (!registered) return fail(registered.error());
    std::map<int32_t, int64_t> registration_revisions;
    const broker_states live =
        live_brokers_of(registered->kvs, brokers_dir, &registration_revisions);
    auto again = round(live, registration_revisions, pending);
    if (!again) return fail(again.error());
    pending = std::move(*again);
  }
  return pending;
}

}  // namespace

result<std::unique_ptr<partition_controller>, etcd::etcd_error> partition_controller::start(
    partition_controller_options options, unclean_policy unclean, elr_policy elr) {
  auto client = etcd::etcd_client::create(options.client);
  if (!client) return fail(client.error());
  std::unique_ptr<partition_controller> c(new partition_controller(
      std::move(options), std::move(unclean), std::move(elr), std::move(*client)));
  c->thread_ = std::thread([self = c.get()] { self->run(); });
  return c;
}

partition_controller::partition_controller(partition_controller_options options,
                                           unclean_policy unclean, elr_policy elr,
                                           std::unique_ptr<etcd::etcd_client> client)
    : options_(std::move(options)),
      unclean_(std::move(unclean)),
      elr_(std::move(elr)),
      client_(std::move(client)) {}

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
  using clock = std::chrono::steady_clock;
  const auto imbalance_interval =
      std::chrono::milliseconds(std::max<int64_t>(options_.leader_imbalance_check_interval_ms, 1));
  // The first check one interval after this broker becomes controller, as Kafka's controller
  // schedules it.
  // (A time point and a flag rather than an optional: GCC 12 reports the optional's value as
  // maybe uninitialized at -O3.)
  bool rebalance_scheduled = false;
  clock::time_point next_rebalance{};
  std::unique_lock lock(mu_);
  while (!stopping_) {
    auto wait = std::chrono::milliseconds(options_.rescan_interval_ms);
    if (rebalance_scheduled) {
      wait = std::min(wait, std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::max(next_rebalance - clock::now(), clock::duration::zero())));
    }
    cv_.wait_for(lock, wait, [this] { return stopping_ || (is_controller_ && dirty_); });
    if (stopping_) break;
    if (!is_controller_) {
      known_epochs_.clear();
      rebalance_scheduled = false;
      continue;
    }
    bool rebalance = false;
    if (options_.auto_leader_rebalance) {
      if (!rebalance_scheduled) {
        rebalance_scheduled = true;
        next_rebalance = clock::now() + imbalance_interval;
      } else if (clock::now() >= next_rebalance) {
        rebalance = true;
        next_rebalance = clock::now() + imbalance_interval;
      }
    }
    dirty_ = false;
    const int64_t epoch = epoch_;
    lock.unlock();
    const bool done = scan(epoch, rebalance);
    // A check whose writes did not all go through is made again with the next scan.
    if (!done && rebalance) next_rebalance = clock::now();
    lock.lock();
    if (!done && !stopping_) {
      dirty_ = true;
      cv_.wait_for(lock, std::chrono::milliseconds(options_.retry_backoff_ms),
                   [this] { return stopping_; });
    }
  }
}

broker_states live_brokers_of(const std::vector<etcd::key_value>& registrations,
                              std::string_view brokers_dir,
                              std::map<int32_t, int64_t>* mod_revisions) {
  broker_states live;
  for (const auto& kv : registrations) {
    const int32_t id = node_id_of(kv.key, brokers_dir);
    if (id < 0) continue;
    // A value that does not decode is still a live broker (its lease lives); it just is not
    // known to be shutting down.
    auto r = decode_broker_registration(kv.value);
    live[id] = broker_state{kv.create_revision, false, r && r->in_controlled_shutdown,
                            r ? r->previous_broker_epoch : -1};
    if (mod_revisions != nullptr) (*mod_revisions)[id] = kv.mod_revision;
  }
  return live;
}

result<std::vector<election_result>, etcd::etcd_error> elect_leaders(
    etcd::etcd_client& client, const std::string& prefix, election_type type,
    const std::vector<std::pair<uuid, int32_t>>& partitions, const elr_policy& elr) {
  const std::string brokers_dir = prefix + "brokers/";
  const std::string partitions_dir = prefix + "partitions/";
  std::vector<election_result> out(partitions.size());
  auto round =
      [&](const broker_states& live, const std::map<int32_t, int64_t>& registration_revisions,
          const std::vector<size_t>& pending) -> result<std::vector<size_t>, etcd::etcd_error> {
    auto states = client.range(partitions_dir, etcd::prefix_end(partitions_dir));
    if (!states) return fail(states.error());
    std::map<std::pair<uuid, int32_t>, const etcd::key_value*> by_key;
    for (const auto& kv : states->kvs) {
      if (auto key = parse_partition_key(kv.key, partitions_dir)) by_key[*key] = &kv;
    }
    std::vector<size_t> again;
    for (size_t i : pending) {
      auto found = by_key.find(partitions[i]);
      std::optional<partition_state> state;
      if (found != by_key.end()) state = decode_partition_state(found->second->value);
      if (!state) {
        out[i] = {protocol::error_code::unknown_topic_or_partition, {}};
        continue;
      }
      election_result decided =
          elect_leader(*state, type, live, elr ? elr(partitions[i].first) : elr_options{});
      if (decided.error != protocol::error_code::none) {
        out[i] = std::move(decided);
        continue;
      }
      etcd::txn_request t;
      t.compares.push_back({found->second->key,
                            etcd::compare::target_kind::mod_revision,
                            etcd::compare::result_kind::equal,
                            found->second->mod_revision,
                            {}});
      t.compares.push_back(
          registration_unchanged(brokers_dir, decided.state.leader, registration_revisions));
      t.success.push_back(
          etcd::request_op::put(found->second->key, encode_partition_state(decided.state)));
      auto written = client.txn(t);
      if (!written) return fail(written.error());
      if (!written->succeeded) {
        again.push_back(i);
        continue;
      }
      spdlog::info(
          "ElectLeaders ({}): partition {}-{}: leader {} -> {} (leader epoch {}), ISR [{}] -> [{}]",
          type == election_type::preferred ? "PREFERRED" : "UNCLEAN",
          partitions[i].first.to_string(), partitions[i].second, state->leader,
          decided.state.leader, decided.state.leader_epoch, fmt::join(state->isr, ","),
          fmt::join(decided.state.isr, ","));
      out[i] = std::move(decided);
    }
    return again;
  };
  auto lost = cas_rounds(client, brokers_dir, partitions.size(), round);
  if (!lost) return fail(lost.error());
  for (size_t i : *lost) out[i] = {protocol::error_code::request_timed_out, {}};
  return out;
}

result<std::vector<reassignment_result>, etcd::etcd_error> alter_reassignments(
    etcd::etcd_client& client, const std::string& prefix,
    const std::vector<reassignment_request>& requests) {
  const std::string brokers_dir = prefix + "brokers/";
  const std::string partitions_dir = prefix + "partitions/";
  std::vector<reassignment_result> out(requests.size());
  auto round =
      [&](const broker_states& live, const std::map<int32_t, int64_t>& registration_revisions,
          const std::vector<size_t>& pending) -> result<std::vector<size_t>, etcd::etcd_error> {
    std::vector<size_t> again;
    for (size_t i : pending) {
      const reassignment_request& req = requests[i];
      const std::string key =
          fmt::format("{}{}/{}", partitions_dir, req.topic_id.to_string(), req.partition);
      auto read = client.range(key);
      if (!read) return fail(read.error());
      std::optional<partition_state> state;
      if (!read->kvs.empty()) state = decode_partition_state(read->kvs[0].value);
      if (!state) {
        out[i] = {protocol::error_code::unknown_topic_or_partition, {}, {}};
        continue;
      }
      reassignment_result decided =
          req.target ? reassign(*state, *req.target, req.allow_rf_change, live, req.elr)
                     : cancel_reassignment(*state, req.name, req.unclean_ok, live, req.elr);
      if (decided.error != protocol::error_code::none || !decided.state) {
        out[i] = std::move(decided);
        continue;
      }
      etcd::txn_request t;
      t.compares.push_back({key,
                            etcd::compare::target_kind::mod_revision,
                            etcd::compare::result_kind::equal,
                            read->kvs[0].mod_revision,
                            {}});
      if (decided.state->leader != state->leader && decided.state->has_leader()) {
        // A new leader that died or began shutting down since the read is not written.
        t.compares.push_back(
            registration_unchanged(brokers_dir, decided.state->leader, registration_revisions));
      }
      t.success.push_back(etcd::request_op::put(key, encode_partition_state(*decided.state)));
      auto written = client.txn(t);
      if (!written) return fail(written.error());
      if (!written->succeeded) {
        again.push_back(i);
        continue;
      }
      spdlog::info(
          "AlterPartitionReassignments: partition {}: replicas [{}] -> [{}] (adding [{}], "
          "removing [{}]), leader {} -> {} (leader epoch {}), ISR [{}] -> [{}]",
          req.name, fmt::join(state->replicas, ","), fmt::join(decided.state->replicas, ","),
          fmt::join(decided.state->adding_replicas, ","),
          fmt::join(decided.state->removing_replicas, ","), state->leader, decided.state->leader,
          decided.state->leader_epoch, fmt::join(state->isr, ","),
          fmt::join(decided.state->isr, ","));
      out[i] = std::move(decided);
    }
    return again;
  };
  auto lost = cas_rounds(client, brokers_dir, requests.size(), round);
  if (!lost) return fail(lost.error());
  for (size_t i : *lost) out[i] = {protocol::error_code::request_timed_out, {}, {}};
  return out;
}

result<int32_t, etcd::etcd_error> clear_elrs(etcd::etcd_client& client, const std::string& prefix,
                                             const std::vector<uuid>& topics) {
  const std::string partitions_dir = prefix + "partitions/";
  int32_t written = 0;
  for (int r = 0; r < 5; ++r) {
    auto states = client.range(partitions_dir, etcd::prefix_end(partitions_dir));
    if (!states) return fail(states.error());
    bool lost = false;
    for (const auto& kv : states->kvs) {
      auto key = parse_partition_key(kv.key, partitions_dir);
      if (!key) continue;
      if (!topics.empty() && std::find(topics.begin(), topics.end(), key->first) == topics.end()) {
        continue;
      }
      auto state = decode_partition_state(kv.value);
      if (!state) continue;
      auto cleared = clear_elr_on_min_isr_change(*state);
      if (!cleared) continue;
      etcd::txn_request t;
      t.compares.push_back({kv.key,
                            etcd::compare::target_kind::mod_revision,
                            etcd::compare::result_kind::equal,
                            kv.mod_revision,
                            {}});
      t.success.push_back(etcd::request_op::put(kv.key, encode_partition_state(*cleared)));
      auto done = client.txn(t);
      if (!done) return fail(done.error());
      if (!done->succeeded) {
        lost = true;
        continue;
      }
      ++written;
      spdlog::info(
          "min.insync.replicas changed: partition {}-{}: ELR [{}] -> [], LastKnownElr [{}] -> [] "
          "(partition epoch {})",
          key->first.to_string(), key->second, fmt::join(state->elr, ","),
          fmt::join(state->last_known_elr, ","), cleared->partition_epoch);
    }
    if (!lost) break;
  }
  return written;
}

bool partition_controller::scan(int64_t epoch, bool rebalance) {
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
  const broker_states live = live_brokers_of(registered->kvs, brokers_dir);
  std::vector<int32_t> live_ids, shutting_down;
  for (const auto& [id, b] : live) {
    live_ids.push_back(id);
    if (b.in_controlled_shutdown) shutting_down.push_back(id);
  }
  // The brokers this controller saw registered that are gone now are fenced entries with the
  // epoch they had: what an ELR records of a member entering it (KIP-966).
  broker_states known = live;
  for (const auto& [id, epoch] : known_epochs_) {
    if (!live.contains(id)) known[id] = broker_state{epoch, /*fenced=*/true, false};
  }
  // Brokers whose registration changed since the last scan: they restarted in between.
  broker_states before_restart = known;
  std::vector<int32_t> restarted;
  for (const auto& [id, b] : live) {
    auto found = known_epochs_.find(id);
    if (found != known_epochs_.end() && found->second != b.epoch) {
      restarted.push_back(id);
      before_restart[id] = broker_state{found->second, /*fenced=*/true, false};
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
    const elr_options elr = elr_ ? elr_(key->first) : elr_options{};
    std::optional<partition_state> next;
    if (!restarted.empty()) next = reconcile(*state, before_restart, unclean, elr);
    if (auto after = reconcile(next ? *next : *state, known, unclean, elr)) next = std::move(after);
    if (!next && rebalance) next = rebalance_to_preferred(*state, live);
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
        "[{}] (partition epoch {}){}{}, live brokers [{}]{}",
        epoch, c.key.first.to_string(), c.key.second, c.from.leader, c.to.leader, c.to.leader_epoch,
        fmt::join(c.from.isr, ","), fmt::join(c.to.isr, ","), c.to.partition_epoch,
        c.from.elr == c.to.elr && c.from.last_known_elr == c.to.last_known_elr
            ? std::string()
            : fmt::format(", ELR [{}] -> [{}], LastKnownElr [{}] -> [{}]",
                          fmt::join(c.from.elr, ","), fmt::join(c.to.elr, ","),
                          fmt::join(c.from.last_known_elr, ","),
                          fmt::join(c.to.last_known_elr, ",")),
        c.from.replicas == c.to.replicas && !c.to.reassigning()
            ? std::string()
            : fmt::format(", replicas [{}] -> [{}] (adding [{}], removing [{}])",
                          fmt::join(c.from.replicas, ","), fmt::join(c.to.replicas, ","),
                          fmt::join(c.to.adding_replicas, ","),
                          fmt::join(c.to.removing_replicas, ",")),
        fmt::join(live_ids, ","),
        shutting_down.empty()
            ? std::string()
            : fmt::format(", in controlled shutdown [{}]", fmt::join(shutting_down, ",")));
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
