// The replica manager: partition states from etcd, replica logs, the leader's ISR and high
// watermark, and the follower's replica fetchers (replica_manager.h).
#include "broker/replica_manager.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <functional>
#include <numeric>
#include <set>

#include "broker/broker_connection.h"
#include "broker/features.h"
#include "broker/fetch_waiters.h"
#include "broker/topic_handler_util.h"
#include "broker/topic_manager.h"
#include "protocol/headers.h"
#include "protocol/messages/fetch_request.h"
#include "protocol/messages/fetch_response.h"
#include "protocol/messages/list_offsets_request.h"
#include "protocol/messages/list_offsets_response.h"
#include "protocol/writer.h"

namespace tarn::broker {

namespace {

using protocol::error_code;

int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Fetch v15: the first version with ReplicaState (KIP-903) and topic ids.
constexpr int16_t replica_fetch_version = 15;
// Kafka's replica.fetch.response.max.bytes default: the whole response's bound.
constexpr int32_t replica_fetch_response_max_bytes = 10485760;

using cluster::parse_partition_key;

bool is_replica(const std::vector<int32_t>& replicas, int32_t id) {
  return std::find(replicas.begin(), replicas.end(), id) != replicas.end();
}

// Which of num.replica.fetchers serves a partition (of those following one leader).
int fetcher_index(const std::pair<storage::uuid, int32_t>& key, int32_t fetchers) {
  const size_t h =
      std::hash<std::string>{}(key.first.to_string()) + static_cast<size_t>(key.second);
  return static_cast<int>(h % static_cast<size_t>(std::max(fetchers, 1)));
}

}  // namespace

replica_manager::replica_manager(const broker_config& config, std::string prefix,
                                 topic_manager& topics, cluster::cluster_membership& membership,
                                 fetch_waiters& waiters)
    : config_(config),
      prefix_(std::move(prefix)),
      node_id_(config.node_id),
      topics_(topics),
      membership_(membership),
      waiters_(waiters) {}

result<std::unique_ptr<replica_manager>, std::string> replica_manager::start(
    const broker_config& config, std::string prefix, topic_manager& topics,
    cluster::cluster_membership& membership, fetch_waiters& waiters) {
  std::unique_ptr<replica_manager> m(
      new replica_manager(config, std::move(prefix), topics, membership, waiters));
  cluster::etcd::client_options o;
  o.endpoints = cluster::etcd_endpoint_urls(config.etcd_connect);
  auto client = cluster::etcd::etcd_client::create(o);
  if (!client) return fail("etcd: " + client.error().message);
  m->client_ = std::move(*client);
  m->store_ = std::make_unique<cluster::etcd_partition_store>(*m->client_, m->prefix_);
  const std::string dir = m->prefix_ + "partitions/";
  auto states = m->client_->range(dir, cluster::etcd::prefix_end(dir));
  if (!states) return fail("cannot read the partition states from etcd: " + states.error().message);
  {
    std::vector<storage::uuid> ids;
    for (const auto& kv : states->kvs) {
      if (auto key = parse_partition_key(kv.key, dir)) ids.push_back(key->first);
    }
    const auto names = m->topic_names(ids);
    auto maps = topics.read_lock();
    std::lock_guard g(m->mu_);
    std::vector<storage::topic_partition> wake;
    for (const auto& kv : states->kvs) {
      auto key = parse_partition_key(kv.key, dir);
      auto state = cluster::decode_partition_state(kv.value);
      if (!key || !state) continue;
      m->apply_state(key->first, key->second, {std::move(*state), kv.mod_revision}, names, wake);
    }
    // A copy a reassignment removed while this broker was down: its log was loaded from the data
    // directory, but the states no longer name this broker, so the worker deletes it as it would
    // have at the move (an empty log of a partition never replicated here is left alone).
    for (auto& [key, e] : m->partitions_) {
      if (e.local_log || e.topic.empty() || is_replica(e.state.state.replicas, m->node_id_)) {
        continue;
      }
      const storage::log* log = topics.logs().get_log(e.topic, key.second);
      if (log != nullptr && log->log_end_offset() > 0) e.local_log = true;
    }
    m->work_pending_ = true;
  }
  m->apply_throttle_configs();  // then at each change (config_follower)
  replica_manager* self = m.get();
  topics.on_cluster_topics_changed([self] {
    std::lock_guard g(self->mu_);
    self->work_pending_ = true;
    self->cv_.notify_all();
  });
  m->worker_ = std::thread([self] { self->run_worker(); });  // it starts the fetchers
  m->watch_ = std::make_unique<cluster::etcd::etcd_watch>(
      o, dir, cluster::etcd::prefix_end(dir), states->revision + 1,
      [self](const cluster::etcd::watch_response& w) { self->on_watch(w); },
      [](const cluster::etcd::etcd_error& e) {
        spdlog::error("partition states: the watch stopped ({})", e.message);
      });
  // The controller's part: active while this broker holds the role (docs/cluster.md).
  cluster::partition_controller_options co;
  co.client = o;
  co.prefix = m->prefix_;
  co.auto_leader_rebalance = config.auto_leader_rebalance_enable;
  co.leader_imbalance_check_interval_ms = config.leader_imbalance_check_interval_seconds * 1000;
  auto controller = cluster::partition_controller::start(
      co, [self](const storage::uuid& topic_id) { return self->unclean_allowed(topic_id); },
      [self](const storage::uuid& topic_id) { return self->elr_for(topic_id); });
  if (!controller) return fail("etcd: " + controller.error().message);
  m->controller_ = std::move(*controller);
  membership.set_listener([self] {
    self->controller_->set_controller(self->membership_.is_controller(),
                                      self->membership_.controller_epoch());
    self->controller_->brokers_changed();
  });
  spdlog::info("replica manager: {} partition state(s) in etcd, {} replica fetcher(s) per leader",
               states->kvs.size(), config.num_replica_fetchers);
  return m;
}

replica_manager::~replica_manager() {
  if (controller_) {
    membership_.set_listener({});
    controller_.reset();
  }
  topics_.on_cluster_topics_changed({});
  watch_.reset();
  stop_fetchers_.store(true);
  {
    std::lock_guard g(mu_);
    stopping_ = true;
    cv_.notify_all();
    leadership_cv_.notify_all();
  }
  if (worker_.joinable()) worker_.join();
  // The worker starts no fetcher once stopping_ is set: these are all there are.
  std::map<std::pair<int32_t, int>, std::unique_ptr<fetcher>> fetchers;
  {
    std::lock_guard g(mu_);
    fetchers.swap(fetchers_);
  }
  for (auto& [key, f] : fetchers) f->thread.join();
  if (leadership_notifier_.joinable()) leadership_notifier_.join();
}

void replica_manager::watch_leadership(std::string topic, leadership_fn fn) {
  std::lock_guard g(mu_);
  for (const auto& [key, e] : partitions_) {
    if (e.leader && e.topic == topic) {
      leadership_events_.push_back({topic, e.partition, true, e.state.state.leader_epoch});
    }
  }
  leadership_fns_[std::move(topic)] = std::move(fn);
  if (!leadership_notifier_.joinable()) {
    leadership_notifier_ = std::thread([this] { run_leadership_notifier(); });
  }
  leadership_cv_.notify_all();
}

void replica_manager::note_leadership(const entry& e, bool leads) {
  if (!e.topic.empty() && leadership_fns_.contains(e.topic)) {
    leadership_events_.push_back({e.topic, e.partition, leads, e.state.state.leader_epoch});
    leadership_cv_.notify_all();
  }
}

void replica_manager::run_leadership_notifier() {
  std::unique_lock lock(mu_);
  while (true) {
    leadership_cv_.wait(lock, [this] { return stopping_ || !leadership_events_.empty(); });
    if (stopping_) break;
    auto events = std::move(leadership_events_);
    leadership_events_.clear();
    std::vector<std::pair<leadership_fn, leadership_event>> calls;
    for (auto& ev : events) {
      auto it = leadership_fns_.find(ev.topic);
      if (it != leadership_fns_.end()) calls.emplace_back(it->second, std::move(ev));
    }
    lock.unlock();
    for (const auto& [fn, ev] : calls) fn(ev.partition, ev.leads, ev.leader_epoch);
    lock.lock();
  }
}

bool replica_manager::unclean_allowed(const storage::uuid& topic_id) const {
  constexpr std::string_view key = "unclean.leader.election.enable";
  if (auto topic = topics_.cluster_topic(topic_id)) {
    if (auto it = topic->overrides.find(key); it != topic->overrides.end()) {
      return it->second == "true";
    }
  }
  auto maps = topics_.read_lock();
  const storage::config_map& broker = topics_.logs().broker_props();
  auto it = broker.find(key);
  return it != broker.end() && it->second == "true";
}

cluster::elr_options replica_manager::elr_for(const storage::uuid& topic_id) const {
  cluster::elr_options out;
  out.enabled = elr_enabled(topics_.metadata());
  constexpr std::string_view key = "min.insync.replicas";
  std::optional<std::string> value;
  if (auto topic = topics_.cluster_topic(topic_id)) {
    if (auto it = topic->overrides.find(key); it != topic->overrides.end()) value = it->second;
  }
  if (!value) {
    auto maps = topics_.read_lock();
    const storage::config_map& broker = topics_.logs().broker_props();
    if (auto it = broker.find(key); it != broker.end()) value = it->second;
  }
  int32_t min_isr = 1;
  if (value) {
    const auto [end, ec] = std::from_chars(value->data(), value->data() + value->size(), min_isr);
    if (ec != std::errc() || min_isr < 1) min_isr = 1;
  }
  out.min_isr = min_isr;
  return out;
}

std::map<storage::uuid, std::string> replica_manager::topic_names(
    const std::vector<storage::uuid>& topic_ids) const {
  std::map<storage::uuid, std::string> out;
  for (const auto& id : topic_ids) {
    if (out.contains(id)) continue;
    if (auto topic = topics_.cluster_topic(id)) out.emplace(id, topic->name);
  }
  return out;
}

void replica_manager::apply_state(const storage::uuid& topic_id, int32_t partition,
                                  cluster::versioned_partition_state state,
                                  const std::map<storage::uuid, std::string>& names,
                                  std::vector<storage::topic_partition>& wake) {
  entry& e = partitions_[{topic_id, partition}];
  // An older read: by revision, or by partition epoch (every change grows it) when the entry
  // holds a state this broker wrote itself, whose revision it does not know (maybe_change_isr).
  // A state read before that write (the partition states read again at unfence) would otherwise
  // take back the ISR this leader had already grown, and the high watermark would pass a member
  // the controller may elect.
  if (e.state.mod_revision > state.mod_revision ||
      e.state.state.partition_epoch > state.state.partition_epoch) {
    return;
  }
  // Named at once when the metadata log has the topic: the handlers find partitions by name,
  // and one they cannot find follows the single-node rules (a broker restarted on the logs of a
  // partition it used to lead must not serve it before its role is settled).
  if (auto n = names.find(topic_id); e.topic.empty() && n != names.end()) {
    name_entry({topic_id, partition}, e, n->second);
  }
  if (e.state.state.leader != state.state.leader ||
      e.state.state.leader_epoch != state.state.leader_epoch) {
    leadership_changes_.fetch_add(1);
    // A new leader to follow may need a fetcher: the worker starts it.
    work_pending_ = true;
    cv_.notify_all();
  }
  e.topic_id = topic_id;
  e.partition = partition;
  e.state = std::move(state);
  settle_role(e, wake);
  // A replica to open, or one a reassignment removed: the worker's.
  if (e.local_log != is_replica(e.state.state.replicas, node_id_)) {
    work_pending_ = true;
    cv_.notify_all();
  }
}

void replica_manager::settle_role(entry& e, std::vector<storage::topic_partition>& wake) {
  const cluster::partition_state& s = e.state.state;
  storage::log* log = e.local_log ? topics_.logs().get_log(e.topic, e.partition) : nullptr;
  if (s.leader == node_id_ && log != nullptr && !fenced_) {
    // A single replica given more by a reassignment: from now on its high watermark follows
    // the ISR, starting where the single-replica rule left it (its log end: all of it was on the
    // whole ISR). Before, its leader refused the new replica's fetches (the log was not
    // replicated) and the move never completed.
    if (s.replicas.size() > 1 && !log->replicated()) log->set_replicated(log->high_watermark());
    if (e.leader && e.leader->state().leader_epoch == s.leader_epoch) {
      e.leader->update_state(s, steady_ms());  // an ISR change
    } else {
      // Kafka's Partition.makeLeader: the fetcher leaves the partition (it follows only states
      // naming another leader, and still_following() stops a fetch in flight from appending),
      // the followers start unknown (they hold the high watermark until they fetch) and caught
      // up as of now, and the high watermark stays where this replica had it; it moves once the
      // ISR has reached it. Batches appended from now on carry the new leader epoch.
      e.leader.emplace(node_id_, s, log->high_watermark(), steady_ms(), log->log_end_offset());
      const int64_t hw =
          e.leader->update_high_watermark(log->log_end_offset(), log->config().min_insync_replicas);
      log->set_high_watermark(hw);
      spdlog::info(
          "leader of {}-{} at leader epoch {} from log end offset {} (high watermark {}), ISR "
          "[{}]",
          e.topic, e.partition, s.leader_epoch, log->log_end_offset(), log->high_watermark(),
          fmt::join(s.isr, ","));
      wake.push_back({e.topic, e.partition});
      note_leadership(e, true);
    }
    return;
  }
  if (e.leader) {
    // Kafka's Partition.makeFollower: produces waiting for the ISR get NOT_LEADER_OR_FOLLOWER;
    // the fetcher follows the new leader from this replica's log end offset and truncates where
    // the new leader's log diverges.
    if (fenced_) {
      spdlog::info("{}-{}: this broker is fenced and stops leading it (leader epoch {})", e.topic,
                   e.partition, s.leader_epoch);
    } else {
      spdlog::info("{}-{}: leader {} at leader epoch {}; this broker follows", e.topic, e.partition,
                   s.leader, s.leader_epoch);
    }
    e.leader.reset();
    wake.push_back({e.topic, e.partition});
    note_leadership(e, false);
  }
}

void replica_manager::fence() {
  std::vector<storage::topic_partition> wake;
  {
    auto maps = topics_.read_lock();
    std::lock_guard g(mu_);
    fenced_ = true;
    for (auto& [key, e] : partitions_) settle_role(e, wake);
  }
  leadership_changes_.fetch_add(1);
  for (const auto& tp : wake) waiters_.notify(tp);
}

replica_manager::states_read replica_manager::read_states(const broker_config& config,
                                                          const std::string& prefix) {
  cluster::etcd::client_options o;
  o.endpoints = cluster::etcd_endpoint_urls(config.etcd_connect);
  auto client = cluster::etcd::etcd_client::create(o);
  if (!client) return fail(client.error());
  const std::string dir = prefix + "partitions/";
  return (*client)->range(dir, cluster::etcd::prefix_end(dir));
}

void replica_manager::unfence(const states_read& states) {
  const std::string dir = prefix_ + "partitions/";
  // Read after the registration again: what the controller decided while this broker was gone
  // is in it, so a leadership taken away is not taken again from a watch that lags behind.
  if (!states) {
    spdlog::warn("partition states after registering again: {}; taking the roles the watch had",
                 states.error().message);
  }
  std::vector<storage::uuid> ids;
  if (states) {
    for (const auto& kv : states->kvs) {
      if (auto key = parse_partition_key(kv.key, dir)) ids.push_back(key->first);
    }
  }
  const auto names = topic_names(ids);
  std::vector<storage::topic_partition> wake;
  {
    auto maps = topics_.read_lock();
    std::lock_guard g(mu_);
    if (states) {
      for (const auto& kv : states->kvs) {
        auto key = parse_partition_key(kv.key, dir);
        auto state = cluster::decode_partition_state(kv.value);
        if (!key || !state) continue;
        apply_state(key->first, key->second, {std::move(*state), kv.mod_revision}, names, wake);
      }
    }
    fenced_ = false;
    for (auto& [key, e] : partitions_) settle_role(e, wake);
    work_pending_ = true;
    cv_.notify_all();
  }
  for (const auto& tp : wake) waiters_.notify(tp);
}

void replica_manager::on_watch(const cluster::etcd::watch_response& w) {
  const std::string dir = prefix_ + "partitions/";
  std::vector<storage::topic_partition> wake;
  std::vector<storage::uuid> ids;
  for (const auto& ev : w.events) {
    if (auto key = parse_partition_key(ev.kv.key, dir)) ids.push_back(key->first);
  }
  const auto names = topic_names(ids);  // the metadata log's lock, before the others
  {
    auto maps = topics_.read_lock();
    std::lock_guard g(mu_);
    for (const auto& ev : w.events) {
      auto key = parse_partition_key(ev.kv.key, dir);
      if (!key) continue;
      if (ev.type == cluster::etcd::watch_event::kind::delete_key) {
        erase_entry({key->first, key->second});
        work_pending_ = true;
        cv_.notify_all();
        continue;
      }
      auto state = cluster::decode_partition_state(ev.kv.value);
      if (!state) continue;
      apply_state(key->first, key->second, {std::move(*state), ev.kv.mod_revision}, names, wake);
    }
  }
  for (const auto& tp : wake) waiters_.notify(tp);
}

result<void, std::string> replica_manager::create_partition_states(
    const storage::uuid& topic_id, const std::string& topic,
    const std::vector<std::vector<int32_t>>& assignment, int32_t first_partition) {
  std::vector<storage::topic_partition> wake;
  // The watch brings each state too; applied now, with the log the caller created, so that this
  // broker leads at once.
  auto take = [&](int32_t index, const cluster::versioned_partition_state& state) {
    storage::log* log = topics_.logs().get_log(topic, index);
    if (log == nullptr) return;
    if (state.state.replicas.size() > 1 && !log->replicated()) log->set_replicated(0);
    std::lock_guard g(mu_);
    entry& e = partitions_[{topic_id, index}];
    name_entry({topic_id, index}, e, topic);
    e.local_log = true;
    adopted_[topic_id] = topic;
    apply_state(topic_id, index, state, {}, wake);
  };
  // A transaction for up to 60 partitions at once: a topic of 50 partitions is one round trip
  // to etcd instead of 100 (the caller holds the control lock on an event loop meanwhile).
  const size_t batch = cluster::etcd_partition_store::max_states_per_txn;
  for (size_t from = 0; from < assignment.size(); from += batch) {
    const size_t to = std::min(assignment.size(), from + batch);
    std::vector<cluster::partition_state> states;
    for (size_t p = from; p < to; ++p) {
      states.push_back({assignment[p], assignment[p], assignment[p][0], 0, 0});
    }
    const int32_t first = first_partition + static_cast<int32_t>(from);
    auto created = store_->create_all(topic_id, first, states);
    if (!created) return fail("etcd: " + created.error().message);
    if (*created) {
      for (size_t i = 0; i < states.size(); ++i) {
        take(first + static_cast<int32_t>(i), {states[i], **created});
      }
      continue;
    }
    // One of them has a state already (created only if absent): one at a time, each as etcd
    // has it.
    for (size_t i = 0; i < states.size(); ++i) {
      const int32_t index = first + static_cast<int32_t>(i);
      auto one = store_->create(topic_id, index, states[i]);
      if (!one) return fail("etcd: " + one.error().message);
      if (auto read = store_->read(topic_id, index); read && *read) take(index, **read);
    }
  }
  return {};
}

result<void, std::string> replica_manager::delete_partition_states(const storage::uuid& topic_id) {
  const std::string dir = fmt::format("{}partitions/{}/", prefix_, topic_id.to_string());
  auto deleted = client_->delete_range(dir, cluster::etcd::prefix_end(dir));
  if (!deleted) return fail("etcd: " + deleted.error().message);
  std::lock_guard g(mu_);
  std::vector<entry_key> gone;
  for (const auto& [key, e] : partitions_) {
    if (key.first == topic_id) gone.push_back(key);
  }
  for (const auto& key : gone) erase_entry(key);
  return {};
}

void replica_manager::delete_unreplicated_copies() {
  std::vector<std::pair<storage::uuid, std::string>> gone;
  {
    std::lock_guard g(mu_);
    for (const auto& [id, name] : adopted_) {
      const bool any = std::any_of(partitions_.begin(), partitions_.end(),
                                   [&](const auto& p) { return p.first.first == id; });
      if (!any) gone.emplace_back(id, name);
    }
    for (const auto& [id, name] : gone) adopted_.erase(id);
  }
  for (const auto& [id, name] : gone) {
    auto guard = topics_.control_lock();
    storage::log_manager& logs = topics_.logs();
    const storage::topic_info* info = logs.find_topic(name);
    if (info == nullptr || info->topic_id != id) continue;
    if (auto d = logs.delete_topic(name, false); !d) {
      spdlog::error("deleting the copy of {}: {}", name, d.error().message);
    } else {
      spdlog::info("deleted the copy of topic {} (its leader deleted it)", name);
    }
  }
}

void replica_manager::delete_removed_replicas() {
  std::vector<std::pair<std::string, int32_t>> removed;
  {
    std::lock_guard g(mu_);
    for (auto& [key, e] : partitions_) {
      if (!e.local_log || e.topic.empty() || is_replica(e.state.state.replicas, node_id_)) continue;
      // settle_role() gave up a leadership already (the state names another leader, or none).
      e.local_log = false;
      e.leader.reset();
      removed.emplace_back(e.topic, key.second);
    }
  }
  for (const auto& [topic, partition] : removed) {
    auto guard = topics_.control_lock();
    storage::log_manager& logs = topics_.logs();
    if (logs.get_log(topic, partition) == nullptr) continue;
    if (auto r = logs.reset_partition_copy(topic, partition, wall_clock_ms()); !r) {
      spdlog::error("deleting the copy of {}-{}: {}", topic, partition, r.error().message);
    } else {
      spdlog::info("deleted the copy of {}-{} (a reassignment removed this broker)", topic,
                   partition);
    }
  }
}

const replica_manager::entry* replica_manager::find(std::string_view topic,
                                                    int32_t partition) const {
  auto t = by_name_.find(topic);
  if (t == by_name_.end()) return nullptr;
  auto p = t->second.find(partition);
  if (p == t->second.end()) return nullptr;
  auto it = partitions_.find(p->second);
  return it == partitions_.end() ? nullptr : &it->second;
}

void replica_manager::name_entry(const entry_key& key, entry& e, std::string topic) {
  if (!e.topic.empty() && e.topic != topic) {
    auto t = by_name_.find(e.topic);
    if (t != by_name_.end()) {
      if (auto p = t->second.find(key.second); p != t->second.end() && p->second == key) {
        t->second.erase(p);
      }
      if (t->second.empty()) by_name_.erase(t);
    }
  }
  by_name_[topic][key.second] = key;
  e.topic = std::move(topic);
}

void replica_manager::erase_entry(const entry_key& key) {
  auto it = partitions_.find(key);
  if (it == partitions_.end()) return;
  if (auto t = by_name_.find(it->second.topic); t != by_name_.end()) {
    if (auto p = t->second.find(key.second); p != t->second.end() && p->second == key) {
      t->second.erase(p);
    }
    if (t->second.empty()) by_name_.erase(t);
  }
  partitions_.erase(it);
}

replica_manager::entry* replica_manager::find(std::string_view topic, int32_t partition) {
  return const_cast<entry*>(std::as_const(*this).find(topic, partition));
}

std::optional<cluster::partition_state> replica_manager::state(std::string_view topic,
                                                               int32_t partition) const {
  std::lock_guard g(mu_);
  const entry* e = find(topic, partition);
  if (e == nullptr) return std::nullopt;
  return e->state.state;
}

std::optional<cluster::partition_state> replica_manager::state(const storage::uuid& topic_id,
                                                               int32_t partition) const {
  std::lock_guard g(mu_);
  auto it = partitions_.find({topic_id, partition});
  if (it == partitions_.end()) return std::nullopt;
  return it->second.state.state;
}

std::optional<replica_manager::partition_role> replica_manager::role(std::string_view topic,
                                                                     int32_t partition) const {
  std::lock_guard g(mu_);
  const entry* e = find(topic, partition);
  if (e == nullptr) return std::nullopt;
  const cluster::partition_state& st = e->state.state;
  const bool follower =
      e->local_log && !e->leader && st.leader != node_id_ && is_replica(st.replicas, node_id_);
  return partition_role{st.leader, st.leader_epoch, e->leader.has_value(), follower};
}

std::optional<int32_t> replica_manager::preferred_read_replica(
    std::string_view topic, int32_t partition, const std::string& client_rack,
    const std::vector<cluster::read_replica_candidate>& brokers, int64_t fetch_offset) const {
  std::lock_guard g(mu_);
  const entry* e = find(topic, partition);
  if (e == nullptr || !e->leader) return std::nullopt;
  return cluster::preferred_read_replica(*e->leader, client_rack, brokers, fetch_offset,
                                         steady_ms());
}

bool replica_manager::follows(std::string_view topic, int32_t partition) const {
  std::lock_guard g(mu_);
  const entry* e = find(topic, partition);
  return e != nullptr && !e->leader;
}

bool replica_manager::still_following(const storage::uuid& topic_id, int32_t partition,
                                      int32_t leader_epoch) const {
  std::lock_guard g(mu_);
  auto it = partitions_.find({topic_id, partition});
  if (it == partitions_.end() || !it->second.local_log || it->second.leader) return false;
  const cluster::partition_state& s = it->second.state.state;
  // A replica a reassignment removed appends nothing more (its copy is about to go).
  return s.leader != node_id_ && s.leader >= 0 && s.leader_epoch == leader_epoch &&
         is_replica(s.replicas, node_id_);
}

void replica_manager::on_leader_append(std::string_view topic, int32_t partition,
                                       storage::log& log) {
  int64_t before = 0, after = 0;
  {
    std::lock_guard g(mu_);
    entry* e = find(topic, partition);
    if (e == nullptr || !e->leader || !log.replicated()) return;
    before = log.high_watermark();
    after =
        e->leader->update_high_watermark(log.log_end_offset(), log.config().min_insync_replicas);
    log.set_high_watermark(after);
  }
  if (after > before) waiters_.notify(log.tp());
}

replica_manager::follower_fetch_result replica_manager::on_follower_fetch(
    std::string_view topic, int32_t partition, int32_t replica, int32_t current_leader_epoch,
    int64_t fetch_offset, int32_t last_fetched_epoch, int64_t log_start_offset, storage::log& log) {
  follower_fetch_result out;
  int64_t before = 0, after = 0;
  {
    std::lock_guard g(mu_);
    entry* e = find(topic, partition);
    if (e == nullptr || !e->leader || !log.replicated()) {
      out.error = error_code::not_leader_or_follower;
      return out;
    }
    out.error = check_current_leader_epoch(current_leader_epoch, e->state.state.leader_epoch);
    if (out.error != error_code::none) return out;
    const auto& replicas = e->state.state.replicas;
    if (replica == node_id_ ||
        std::find(replicas.begin(), replicas.end(), replica) == replicas.end()) {
      out.error = error_code::not_leader_or_follower;
      return out;
    }
    const int64_t leo = log.log_end_offset();
    if (last_fetched_epoch >= 0) {
      // Kafka's Partition.readRecords: the end of the follower's last epoch in this log.
      const auto end = storage::end_offset_for_epoch(
          leader_epoch_cache_of(log, e->state.state.leader_epoch), last_fetched_epoch, leo);
      if (end.epoch < last_fetched_epoch || end.end_offset < fetch_offset) {
        out.diverging = end;
        return out;
      }
    }
    // Recorded only for an offset this log has (an out-of-range fetch is answered as such).
    if (fetch_offset < log.log_start_offset() || fetch_offset > leo) return out;
    if (!e->leader->on_follower_fetch(replica, fetch_offset, leo, steady_ms(), log_start_offset)) {
      out.error = error_code::not_leader_or_follower;
      return out;
    }
    before = log.high_watermark();
    after = e->leader->update_high_watermark(leo, log.config().min_insync_replicas);
    log.set_high_watermark(after);
    if (!e->leader->caught_up_followers().empty()) {
      work_pending_ = true;
      cv_.notify_all();
    }
  }
  if (after > before) waiters_.notify(log.tp());
  return out;
}

int32_t replica_manager::leaderships() const {
  std::lock_guard g(mu_);
  return static_cast<int32_t>(
      std::count_if(partitions_.begin(), partitions_.end(),
                    [&](const auto& p) { return p.second.state.state.leader == node_id_; }));
}

broker_snapshot::replication_gauges replica_manager::gauges() const {
  broker_snapshot::replication_gauges out;
  // As Kafka's: only the active controller counts offline partitions (a leader that is not
  // live, or none); the registrations are read before this class's locks.
  out.active_controller = membership_.is_controller();
  std::set<int32_t> live;
  if (out.active_controller) {
    for (const auto& b : membership_.live_brokers()) live.insert(b.node_id);
  }
  auto maps = topics_.read_lock();
  std::lock_guard g(mu_);
  for (const auto& [key, e] : partitions_) {
    const cluster::partition_state& s = e.state.state;
    if (out.active_controller && (s.leader < 0 || !live.contains(s.leader))) ++out.offline;
    if (!is_replica(s.replicas, node_id_)) continue;
    ++out.partitions;
    if (s.leader != node_id_) continue;
    ++out.leaders;
    // Kafka's Partition.isUnderReplicated: against the target's size while a move runs.
    const size_t target =
        s.replicas.size() - std::min(s.replicas.size(), s.removing_replicas.size());
    if (s.isr.size() < target) ++out.under_replicated;
    // Kafka's effective min ISR: the topic's min.insync.replicas, at most the replica count.
    const storage::log* log = e.local_log ? topics_.logs().get_log(e.topic, key.second) : nullptr;
    if (log == nullptr) continue;
    const size_t min_isr = std::min<size_t>(
        static_cast<size_t>(std::max(log->config().min_insync_replicas, 1)), s.replicas.size());
    if (s.isr.size() < min_isr) ++out.under_min_isr;
    if (s.isr.size() == min_isr) ++out.at_min_isr;
  }
  return out;
}

// A client of its own for ElectLeaders, reassignments and clearing ELRs: the worker's and the
// watch's requests need not wait behind these.
result<std::unique_ptr<cluster::etcd::etcd_client>, cluster::etcd::etcd_error>
replica_manager::own_etcd_client() const {
  cluster::etcd::client_options o;
  o.endpoints = cluster::etcd_endpoint_urls(config_.etcd_connect);
  return cluster::etcd::etcd_client::create(o);
}

result<std::vector<cluster::election_result>, std::string> replica_manager::elect_leaders(
    cluster::election_type type, const std::vector<std::pair<storage::uuid, int32_t>>& partitions) {
  auto client = own_etcd_client();
  if (!client) return fail("etcd: " + client.error().message);
  auto elected =
      cluster::elect_leaders(**client, prefix_, type, partitions,
                             [this](const storage::uuid& topic_id) { return elr_for(topic_id); });
  if (!elected) return fail("etcd: " + elected.error().message);
  return std::move(*elected);
}

result<std::vector<cluster::reassignment_result>, std::string> replica_manager::alter_reassignments(
    const std::vector<cluster::reassignment_request>& requests) {
  auto client = own_etcd_client();
  if (!client) return fail("etcd: " + client.error().message);
  auto altered = cluster::alter_reassignments(**client, prefix_, requests);
  if (!altered) return fail("etcd: " + altered.error().message);
  return std::move(*altered);
}

result<int32_t, std::string> replica_manager::clear_elrs_after_min_isr_change(
    std::string_view topic) {
  std::vector<storage::uuid> ids;
  if (!topic.empty()) {
    {
      std::lock_guard g(mu_);
      auto named = by_name_.find(topic);
      if (named == by_name_.end() || named->second.empty()) return 0;
      ids.push_back(named->second.begin()->second.first);
    }
    if (!elr_for(ids[0]).enabled) return 0;
  } else if (!elr_enabled(topics_.metadata())) {
    return 0;
  }
  auto client = own_etcd_client();
  if (!client) return fail("etcd: " + client.error().message);
  auto cleared = cluster::clear_elrs(**client, prefix_, ids);
  if (!cleared) return fail("etcd: " + cleared.error().message);
  return *cleared;
}

void replica_manager::after_config_change(std::string_view topic, bool min_isr_changed) {
  if (!min_isr_changed) return;
  auto cleared = clear_elrs_after_min_isr_change(topic);
  if (!cleared) {
    spdlog::warn("min.insync.replicas of {} changed, but its ELRs could not be cleared: {}",
                 topic.empty() ? std::string("every topic") : "topic " + std::string(topic),
                 cleared.error());
  }
}

std::vector<std::tuple<std::string, int32_t, cluster::partition_state>>
replica_manager::reassignments() const {
  std::vector<std::tuple<std::string, int32_t, cluster::partition_state>> out;
  {
    std::lock_guard g(mu_);
    for (const auto& [key, e] : partitions_) {
      if (e.state.state.reassigning() && !e.topic.empty()) {
        out.emplace_back(e.topic, key.second, e.state.state);
      }
    }
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return std::tie(std::get<0>(a), std::get<1>(a)) < std::tie(std::get<0>(b), std::get<1>(b));
  });
  return out;
}

std::vector<std::tuple<storage::uuid, std::string, int32_t>>
replica_manager::partitions_with_states() const {
  std::lock_guard g(mu_);
  std::vector<std::tuple<storage::uuid, std::string, int32_t>> out;
  out.reserve(partitions_.size());
  for (const auto& [key, e] : partitions_) out.emplace_back(key.first, e.topic, key.second);
  return out;
}

int32_t replica_manager::isr_size(std::string_view topic, int32_t partition) const {
  std::lock_guard g(mu_);
  const entry* e = find(topic, partition);
  return e == nullptr ? -1 : static_cast<int32_t>(e->state.state.isr.size());
}

namespace {

// A throttled rate: a non-negative integer, else unbounded (Kafka's default, Long.MAX_VALUE).
int64_t throttled_rate(const storage::config_map& node, const storage::config_map& all,
                       std::string_view key) {
  for (const auto* layer : {&node, &all}) {
    auto it = layer->find(std::string(key));
    if (it == layer->end()) continue;
    int64_t v = -1;
    const auto [end, ec] =
        std::from_chars(it->second.data(), it->second.data() + it->second.size(), v);
    if (ec == std::errc() && end == it->second.data() + it->second.size() && v >= 0) return v;
  }
  return INT64_MAX;
}

}  // namespace

std::optional<replica_manager::throttled_replicas> replica_manager::throttled_replicas::parse(
    std::string_view list, int32_t broker) {
  auto trim = [](std::string_view v) {
    while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
    while (!v.empty() && v.back() == ' ') v.remove_suffix(1);
    return v;
  };
  list = trim(list);
  throttled_replicas out;
  if (list == "*") {
    out.all = true;
    return out;
  }
  while (!list.empty()) {
    const size_t comma = list.find(',');
    const std::string_view item = trim(list.substr(0, comma));
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    const size_t colon = item.find(':');
    if (colon == std::string_view::npos) continue;
    int32_t p = -1, b = -1;
    const std::string_view ps = trim(item.substr(0, colon)), bs = trim(item.substr(colon + 1));
    const auto [pe, pc] = std::from_chars(ps.data(), ps.data() + ps.size(), p);
    const auto [be, bc] = std::from_chars(bs.data(), bs.data() + bs.size(), b);
    if (pc == std::errc() && bc == std::errc() && b == broker) out.partitions.insert(p);
  }
  if (out.partitions.empty()) return std::nullopt;
  return out;
}

void replica_manager::apply_throttle_configs() {
  cluster::metadata_store& store = topics_.metadata();
  const storage::config_map all = store.broker_configs("");
  const storage::config_map node = store.broker_configs(std::to_string(node_id_));
  leader_quota_.bound.store(throttled_rate(node, all, "leader.replication.throttled.rate"));
  follower_quota_.bound.store(throttled_rate(node, all, "follower.replication.throttled.rate"));
  // The topics' two lists, read before mu_ (the metadata log's lock comes first).
  std::map<storage::uuid, throttled_replicas> leader, follower;
  for (const auto& [id, configs] : topics_.cluster_topic_configs()) {
    if (auto it = configs.find("leader.replication.throttled.replicas"); it != configs.end()) {
      if (auto r = throttled_replicas::parse(it->second, node_id_)) leader[id] = *r;
    }
    if (auto it = configs.find("follower.replication.throttled.replicas"); it != configs.end()) {
      if (auto r = throttled_replicas::parse(it->second, node_id_)) follower[id] = *r;
    }
  }
  std::lock_guard g(mu_);
  leader_throttled_ = std::move(leader);
  follower_throttled_ = std::move(follower);
}

bool replica_manager::leader_throttled(const entry_key& key) const {
  auto it = leader_throttled_.find(key.first);
  return it != leader_throttled_.end() && it->second.names(key.second);
}

bool replica_manager::follower_throttled(const entry_key& key) const {
  auto it = follower_throttled_.find(key.first);
  return it != follower_throttled_.end() && it->second.names(key.second);
}

bool replica_manager::quota_exceeded(replication_quota& quota) const {
  const int64_t bound = quota.bound.load();
  if (bound == INT64_MAX) return false;
  const quota::rate_config rc{config_.replication_quota_window_num,
                              int64_t{config_.replication_quota_window_size_seconds} * 1000};
  std::lock_guard g(quota.mu);
  return quota.rate.measure(rc, steady_ms()) > static_cast<double>(bound);
}

void replica_manager::record_quota(replication_quota& quota, int64_t bytes) const {
  const quota::rate_config rc{config_.replication_quota_window_num,
                              int64_t{config_.replication_quota_window_size_seconds} * 1000};
  std::lock_guard g(quota.mu);
  quota.rate.record(rc, static_cast<double>(bytes), steady_ms());
}

std::optional<bool> replica_manager::leader_throttle(std::string_view topic, int32_t partition,
                                                     int32_t replica) const {
  bool in_sync = false;
  {
    std::lock_guard g(mu_);
    const entry* e = find(topic, partition);
    if (e == nullptr || !leader_throttled({e->topic_id, e->partition})) return std::nullopt;
    const auto& isr = e->state.state.isr;
    in_sync = std::find(isr.begin(), isr.end(), replica) != isr.end();
  }
  // Kafka's shouldLeaderThrottle: only a replica out of the ISR, and only past the rate.
  return !in_sync && quota_exceeded(leader_quota_);
}

void replica_manager::record_leader_throttled_bytes(int64_t bytes) {
  if (bytes > 0) record_quota(leader_quota_, bytes);
}

void replica_manager::run_worker() {
  // The ISR is checked every half replica.lag.time.max.ms, as Kafka's isr-expiration task.
  const auto period =
      std::chrono::milliseconds(std::clamp<int64_t>(config_.replica_lag_time_max_ms / 2, 10, 1000));
  std::unique_lock lock(mu_);
  while (!stopping_) {
    cv_.wait_for(lock, period, [this] { return stopping_ || work_pending_; });
    if (stopping_) break;
    const bool pending = work_pending_;
    work_pending_ = false;
    lock.unlock();
    if (pending) {
      delete_unreplicated_copies();
      delete_removed_replicas();
      open_replica_logs();
    }
    ensure_fetchers();
    maybe_change_isr();
    lock.lock();
  }
}

void replica_manager::ensure_fetchers() {
  std::vector<std::unique_ptr<fetcher>> ended;
  {
    std::lock_guard g(mu_);
    for (auto it = fetchers_.begin(); it != fetchers_.end();) {
      if (it->second->done) {
        ended.push_back(std::move(it->second));
        it = fetchers_.erase(it);
      } else {
        ++it;
      }
    }
    if (!stopping_ && !stop_fetchers_.load()) {
      for (const auto& [key, e] : partitions_) {
        const auto& s = e.state.state;
        if (!e.local_log || e.leader || s.leader == node_id_ || s.leader < 0 ||
            !is_replica(s.replicas, node_id_)) {
          continue;
        }
        const int index = fetcher_index(key, config_.num_replica_fetchers);
        auto& f = fetchers_[{s.leader, index}];
        if (f) continue;
        // Started under mu_: its first look at the partitions waits for this scan to end.
        f = std::make_unique<fetcher>();
        f->thread = std::thread([this, leader = s.leader, index] { run_fetcher(leader, index); });
      }
    }
  }
  for (auto& f : ended) f->thread.join();
}

void replica_manager::open_replica_logs() {
  // Which topics have partitions here without an open log.
  std::map<storage::uuid, std::vector<int32_t>> wanted;
  {
    std::lock_guard g(mu_);
    for (const auto& [key, e] : partitions_) {
      const auto& r = e.state.state.replicas;
      if (e.local_log || std::find(r.begin(), r.end(), node_id_) == r.end()) continue;
      wanted[key.first].push_back(key.second);
    }
  }
  std::vector<storage::topic_partition> wake;
  for (auto& [topic_id, parts] : wanted) {
    std::optional<storage::topic_record> topic = topics_.cluster_topic(topic_id);
    if (!topic) continue;  // the metadata log has not brought it yet: on_cluster_topics_changed
    auto guard = topics_.control_lock();
    storage::log_manager& logs = topics_.logs();
    const storage::topic_info* info = logs.find_topic(topic->name);
    if (info != nullptr && info->topic_id != topic_id) continue;  // an older topic's name
    if (info == nullptr) {
      // Every partition's log, as a restart loads them (the states of the others may arrive a
      // moment later: a topic is adopted once).
      std::vector<int32_t> all(static_cast<size_t>(std::max(topic->partitions, 0)));
      std::iota(all.begin(), all.end(), 0);
      auto adopted = logs.adopt_topic(*topic, all, wall_clock_ms());
      if (!adopted) {
        spdlog::error("replica logs of {}: {}", topic->name, adopted.error().message);
        continue;
      }
      spdlog::info("replica of {} partition(s) {}", topic->name, fmt::join(parts, ","));
    } else if (std::any_of(parts.begin(), parts.end(),
                           [&](int32_t p) { return logs.get_log(topic->name, p) == nullptr; })) {
      // Partitions the leader added (CreatePartitions) to a topic this broker replicates.
      auto grown = logs.adopt_partitions(topic->name, topic->partitions, parts, wall_clock_ms());
      if (!grown) {
        spdlog::error("replica logs of {}: {}", topic->name, grown.error().message);
        continue;
      }
      spdlog::info("replica of {} partition(s) {}", topic->name, fmt::join(parts, ","));
    }
    for (int32_t p : parts) {
      storage::log* log = logs.get_log(topic->name, p);
      if (log == nullptr) continue;
      std::lock_guard g(mu_);
      auto it = partitions_.find({topic_id, p});
      if (it == partitions_.end()) continue;
      // A single replica keeps the single-node rule (the high watermark is the log end). A log
      // loaded at start is replicated already, at its checkpointed high watermark
      // (replication-offset-checkpoint); one adopted now starts at its log start offset and
      // learns the rest (from the leader's answers, or as leader from its ISR), so that nothing
      // the ISR may not have is ever readable.
      if (it->second.state.state.replicas.size() > 1 && !log->replicated()) {
        log->set_replicated(log->log_start_offset());
      }
      name_entry(it->first, it->second, topic->name);
      it->second.local_log = true;
      // Deleted with its states (replica_manager.h).
      adopted_[topic_id] = topic->name;
      settle_role(it->second, wake);
    }
  }
  for (const auto& tp : wake) waiters_.notify(tp);
}

void replica_manager::maybe_change_isr() {
  struct change {
    storage::uuid topic_id;
    int32_t partition;
    std::string topic;
    cluster::partition_state from;
    std::vector<int32_t> isr;
  };
  std::vector<change> changes;
  const int64_t now = steady_ms();
  // The brokers as their registrations show them: a follower in controlled shutdown (or gone)
  // may not join an ISR (KIP-841; Kafka's Partition.isReplicaIsrEligible), and the controller
  // would refuse it anyway.
  cluster::broker_states brokers;
  for (const auto& b : membership_.live_brokers()) {
    brokers[b.node_id] = cluster::broker_state{b.epoch, false, b.in_controlled_shutdown};
  }
  {
    auto maps = topics_.read_lock();
    std::lock_guard g(mu_);
    for (auto& [key, e] : partitions_) {
      if (!e.leader || !e.local_log || e.state.state.replicas.size() < 2) continue;
      const storage::log* log = topics_.logs().get_log(e.topic, key.second);
      if (log == nullptr) continue;
      const auto out = e.leader->out_of_sync_replicas(now, config_.replica_lag_time_max_ms,
                                                      log->log_end_offset());
      auto in = e.leader->caught_up_followers();
      std::erase_if(in, [&](int32_t id) {
        auto b = brokers.find(id);
        return b == brokers.end() || !b->second.eligible();
      });
      if (out.empty() && in.empty()) continue;
      std::vector<int32_t> isr =
          cluster::isr_with(cluster::isr_without(e.state.state.isr, out), in);
      if (isr.empty() || isr == e.state.state.isr) continue;
      // KIP-497's maximal ISR: until the change is in etcd (and the controller may elect from
      // it) the high watermark counts the members joining as well as those leaving.
      e.leader->add_pending_isr(e.state.state.partition_epoch, isr);
      changes.push_back({key.first, key.second, e.topic, e.state.state, std::move(isr)});
    }
  }
  if (changes.empty()) return;
  for (const auto& c : changes) {
    cluster::alter_partition_request r;
    r.broker_id = node_id_;
    r.leader_epoch = c.from.leader_epoch;
    r.partition_epoch = c.from.partition_epoch;
    for (int32_t id : c.isr) {
      auto it = brokers.find(id);
      r.new_isr.emplace_back(id, it == brokers.end() ? -1 : it->second.epoch);
    }
    auto altered =
        store_->alter_partition(c.topic_id, c.partition, r, brokers, elr_for(c.topic_id));
    if (!altered) {
      spdlog::warn("AlterPartition {}-{}: etcd: {}", c.topic, c.partition, altered.error().message);
    } else if (altered->error != error_code::none) {
      spdlog::info("AlterPartition {}-{} to ISR [{}] refused: {}", c.topic, c.partition,
                   fmt::join(c.isr, ","), protocol::describe(altered->error).name);
    } else {
      spdlog::info("ISR of {}-{} from [{}] to [{}] (partition epoch {})", c.topic, c.partition,
                   fmt::join(c.from.isr, ","), fmt::join(altered->state.isr, ","),
                   altered->state.partition_epoch);
    }
    // Applied now when it was written (the watch brings the same state with its revision): a
    // smaller ISR may let the high watermark move. Refused, the pending ISR is dropped and the
    // next check decides again on what etcd holds. Failed, it may have been written all the same
    // (the answer was lost): it stays pending until a later state comes (update_state).
    int64_t before = 0, after = 0;
    storage::topic_partition tp{c.topic, c.partition};
    {
      auto maps = topics_.read_lock();
      storage::log* log = topics_.logs().get_log(c.topic, c.partition);
      std::lock_guard g(mu_);
      auto it = partitions_.find({c.topic_id, c.partition});
      if (it == partitions_.end() || log == nullptr || !it->second.leader) continue;
      const bool written = altered && altered->error == error_code::none;
      if (written && it->second.state.state.partition_epoch < altered->state.partition_epoch &&
          it->second.state.state.leader_epoch == altered->state.leader_epoch) {
        it->second.state.state = altered->state;
        it->second.leader->update_state(altered->state, steady_ms());
      } else if (!altered) {
        it->second.leader->doubt_pending_isr(c.from.partition_epoch, c.isr);
      } else if (!written) {
        it->second.leader->refuse_pending_isr(c.from.partition_epoch, c.isr);
      }
      // Written but the state here is already as new (the watch was first): settled by it.
      before = log->high_watermark();
      after = it->second.leader->update_high_watermark(log->log_end_offset(),
                                                       log->config().min_insync_replicas);
      log->set_high_watermark(after);
    }
    if (after > before) waiters_.notify(tp);
  }
}

void replica_manager::run_fetcher(int32_t leader, int index) {
  struct fetch_target {
    storage::uuid topic_id;
    int32_t partition;
    std::string topic;
    int32_t leader_epoch;
    // follower.replication.throttled.replicas names this replica (Kafka's
    // shouldFollowerThrottle: only while it is out of the ISR).
    bool throttled = false;
    bool in_sync = false;
  };
  broker_connection conn;
  std::vector<uint8_t> buffer;
  int64_t idle_since_ms = -1;  // with nothing to fetch since
  // OFFSET_OUT_OF_RANGE with the leader's log start past this replica's end (the leader deleted
  // what this replica still needs, by retention or DeleteRecords while it was away; or a new
  // replica of such a partition): as Kafka's fetcher (truncateFullyAndStartAt), the log starts
  // over empty at the leader's log start offset. True when it did.
  auto start_over = [&](const fetch_target& t, int32_t partition, int64_t leader_start,
                        int32_t leader) {
    if (leader_start < 0) return false;
    {
      auto maps = topics_.read_lock();
      storage::log* log = topics_.logs().get_log(t.topic, partition);
      if (log == nullptr) return false;
      std::lock_guard log_lock(log->mutex());
      if (!still_following(t.topic_id, partition, t.leader_epoch)) return false;
      const int64_t end = log->log_end_offset();
      if (leader_start <= end) return false;
      if (auto r = log->truncate_fully_and_start_at(leader_start, wall_clock_ms()); !r) {
        spdlog::error("{}-{}: starting over at {}: {}", t.topic, partition, leader_start,
                      r.error().message);
        return false;
      }
      spdlog::info(
          "{}-{}: the log of leader {} starts at {}, past this replica's end {}: started over "
          "there",
          t.topic, partition, leader, leader_start, end);
    }
    auto maps = topics_.read_lock();
    if (auto c = topics_.logs().checkpoint_log_start_offsets(); !c) {
      spdlog::warn("log start offset checkpoint: {}", c.error().message);
    }
    return true;
  };
  // OFFSET_OUT_OF_RANGE without the leader's log start past this replica's end: this replica's
  // end is past the leader's (no DivergingEpoch said where they part, e.g. a log without epochs).
  // As Kafka's fetcher (fetchOffsetAndTruncate) it asks the leader's log end offset with
  // ListOffsets LATEST under its broker id and truncates to it. True when it truncated.
  std::vector<uint8_t> offsets_buffer;
  auto truncate_to_leader_end = [&](const fetch_target& t, int32_t partition, int32_t leader) {
    protocol::list_offsets_request lo;
    lo.replica_id = node_id_;  // a follower: the leader answers its log end offset
    auto& lt = lo.topics.emplace_back();
    lt.name = t.topic;
    auto& lp = lt.partitions.emplace_back();
    lp.partition_index = partition;
    lp.current_leader_epoch = t.leader_epoch;
    lp.timestamp = -1;  // LATEST
    constexpr int16_t list_offsets_version = 7;
    std::vector<uint8_t> body;
    protocol::writer w(body);
    lo.encode(w, list_offsets_version);
    auto answer = conn.round_trip(protocol::list_offsets_request::api_key, list_offsets_version,
                                  body, offsets_buffer, config_.replica_socket_timeout_ms,
                                  [&] { return stop_fetchers_.load(); });
    if (!answer) return false;
    protocol::reader r(*answer);
    auto resp = protocol::list_offsets_response::decode(r, list_offsets_version);
    if (!resp || resp->topics.size() != 1 || resp->topics[0].partitions.size() != 1) return false;
    const auto& answered = resp->topics[0].partitions[0];
    if (answered.error_code != 0 || answered.offset < 0) return false;
    auto maps = topics_.read_lock();
    storage::log* log = topics_.logs().get_log(t.topic, partition);
    if (log == nullptr) return false;
    std::lock_guard log_lock(log->mutex());
    if (!still_following(t.topic_id, partition, t.leader_epoch)) return false;
    const int64_t end = log->log_end_offset();
    if (answered.offset >= end) return false;
    if (auto cut = log->truncate_to(answered.offset, wall_clock_ms()); !cut) {
      spdlog::error("{}-{}: truncating to {}: {}", t.topic, partition, answered.offset,
                    cut.error().message);
      return false;
    }
    spdlog::info(
        "{}-{}: truncated from {} to {}, the end of leader {}'s log (past it without a diverging "
        "epoch)",
        t.topic, partition, end, log->log_end_offset(), leader);
    return true;
  };
  const std::string listener =
      config_.advertised_listeners.empty() ? "" : config_.advertised_listeners[0].name;
  while (!stop_fetchers_.load()) {
    std::vector<fetch_target> targets;
    {
      std::lock_guard g(mu_);
      for (const auto& [key, e] : partitions_) {
        const auto& s = e.state.state;
        if (!e.local_log || e.leader || s.leader != leader || !is_replica(s.replicas, node_id_) ||
            fetcher_index(key, config_.num_replica_fetchers) != index) {
          continue;
        }
        targets.push_back({key.first, key.second, e.topic, s.leader_epoch, follower_throttled(key),
                           is_replica(s.isr, node_id_)});
      }
      if (targets.empty()) {
        if (idle_since_ms < 0) idle_since_ms = steady_ms();
        if (steady_ms() - idle_since_ms >= 1000) {
          // Nothing followed from this leader any more; the worker joins it and starts
          // another should a partition need one.
          // (Gone from the map once the destructor took them all.)
          if (auto f = fetchers_.find({leader, index}); f != fetchers_.end())
            f->second->done = true;
          return;
        }
      } else {
        idle_since_ms = -1;
      }
    }
    if (targets.empty()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    bool failed = false;
    // Only errors that a state on its way will clear (the leader or this broker has not seen the
    // newest one yet): retried after a short pause rather than replica.fetch.backoff.ms.
    bool only_epoch_errors = true;
    const uint64_t changes_seen = leadership_changes_.load();
    do {
      if (!conn.connected()) {
        const cluster::broker_endpoint* ep = nullptr;
        std::vector<cluster::broker_registration> live = membership_.live_brokers();
        for (const auto& b : live) {
          if (b.node_id != leader) continue;
          ep = b.endpoint(listener);
          if (ep == nullptr && !b.listeners.empty()) ep = &b.listeners[0];
          if (ep != nullptr) {
            if (auto c = conn.connect_to(ep->host, ep->port); !c) {
              spdlog::debug("replica fetcher {}: leader {}: {}", index, leader, c.error());
            }
          }
          break;
        }
        if (!conn.connected()) {
          failed = true;
          only_epoch_errors = false;
          continue;
        }
      }
      protocol::fetch_request req;
      req.replica_state.replica_id = node_id_;
      req.replica_state.replica_epoch = membership_.broker_epoch();
      req.max_wait_ms = config_.replica_fetch_wait_max_ms;
      req.min_bytes = config_.replica_fetch_min_bytes;
      req.max_bytes = replica_fetch_response_max_bytes;
      req.isolation_level = 0;
      req.session_id = 0;
      req.session_epoch = -1;  // no session: every fetch names its partitions
      // Throttled partitions out of the ISR sit this round out while the follower's rate is
      // past follower.replication.throttled.rate (their bytes are recorded as they arrive).
      const bool follower_exceeded =
          std::any_of(targets.begin(), targets.end(),
                      [](const fetch_target& t) { return t.throttled; }) &&
          quota_exceeded(follower_quota_);
      {
        auto maps = topics_.read_lock();
        for (const auto& t : targets) {
          if (t.throttled && !t.in_sync && follower_exceeded) continue;
          storage::log* log = topics_.logs().get_log(t.topic, t.partition);
          if (log == nullptr) continue;
          const protocol::uuid wire_id = to_wire(t.topic_id);
          if (req.topics.empty() || req.topics.back().topic_id.bytes != wire_id.bytes) {
            req.topics.emplace_back().topic_id = wire_id;
          }
          auto& p = req.topics.back().partitions.emplace_back();
          p.partition = t.partition;
          std::lock_guard log_lock(log->mutex());  // the epoch cache changes with appends
          p.fetch_offset = log->log_end_offset();
          // The epoch of the last batch it has (Kafka's latestEpoch): the leader compares it
          // with its own log and answers DivergingEpoch where they part (Fetch v12+).
          p.last_fetched_epoch = log->latest_epoch();
          p.current_leader_epoch = t.leader_epoch;
          p.log_start_offset = log->log_start_offset();
          p.partition_max_bytes = config_.replica_fetch_max_bytes;
        }
      }
      if (req.topics.empty()) {
        failed = true;  // all throttled: a short pause, not a spin
        continue;
      }
      std::vector<uint8_t> body;
      protocol::writer w(body);
      req.encode(w, replica_fetch_version);
      // A leader that stopped answering (paused, cut off) holds the fetch up to
      // replica.socket.timeout.ms; a leadership change gives it up at once, so that the
      // partitions this fetcher serves follow their new leaders without waiting for it.
      auto answer = conn.round_trip(
          protocol::fetch_request::api_key, replica_fetch_version, body, buffer,
          int64_t{config_.replica_socket_timeout_ms} + config_.replica_fetch_wait_max_ms,
          [&] { return stop_fetchers_.load() || leadership_changes_.load() != changes_seen; });
      if (!answer) {
        spdlog::debug("replica fetcher {}: leader {}: {}", index, leader, answer.error());
        failed = true;
        only_epoch_errors = false;
        continue;
      }
      protocol::reader r(*answer);
      auto resp = protocol::fetch_response::decode(r, replica_fetch_version);
      if (!resp) {
        conn.close_connection();
        failed = true;
        only_epoch_errors = false;
        continue;
      }
      for (const auto& t : resp->responses) {
        const storage::uuid topic_id = from_wire(t.topic_id);
        for (const auto& p : t.partitions) {
          // By topic id and index: two partitions of a topic from one leader may be at different
          // leader epochs (a reassignment bumps one), and each is checked against its own.
          const fetch_target* target = nullptr;
          for (const auto& candidate : targets) {
            if (candidate.topic_id == topic_id && candidate.partition == p.partition_index) {
              target = &candidate;
            }
          }
          if (target == nullptr) continue;
          if (p.error_code == protocol::code(error_code::offset_out_of_range) &&
              (start_over(*target, p.partition_index, p.log_start_offset, leader) ||
               truncate_to_leader_end(*target, p.partition_index, leader))) {
            continue;
          }
          if (p.error_code != 0) {
            // NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH: one of the two
            // has not seen the newest state yet; the watch brings it.
            spdlog::debug("replica fetcher {}: {}-{} from leader {}: error {}", index,
                          target->topic, p.partition_index, leader, p.error_code);
            failed = true;
            const auto e = static_cast<error_code>(p.error_code);
            only_epoch_errors = only_epoch_errors && (e == error_code::not_leader_or_follower ||
                                                      e == error_code::fenced_leader_epoch ||
                                                      e == error_code::unknown_leader_epoch);
            continue;
          }
          auto maps = topics_.read_lock();
          storage::log* log = topics_.logs().get_log(target->topic, p.partition_index);
          if (log == nullptr) continue;
          std::lock_guard log_lock(log->mutex());
          // The answer of a leader this broker no longer follows at that epoch changes nothing
          // (a fetch in flight when the leadership moved, here or elsewhere).
          if (!still_following(topic_id, p.partition_index, target->leader_epoch)) continue;
          if (p.diverging_epoch.epoch >= 0) {
            // Kafka's truncateOnFetchResponse: cut where the logs part, then fetch again.
            const cluster::truncation cut = cluster::follower_truncation(
                log->epoch_entries(), log->log_end_offset(),
                {p.diverging_epoch.epoch, p.diverging_epoch.end_offset});
            const int64_t from = log->log_end_offset();
            auto truncated = log->truncate_to(cut.offset, wall_clock_ms());
            if (!truncated) {
              spdlog::error("replica fetcher {}: truncating {}-{} to {}: {}", index, target->topic,
                            p.partition_index, cut.offset, truncated.error().message);
              failed = true;
              only_epoch_errors = false;
            } else {
              spdlog::info(
                  "{}-{}: truncated from {} to {}{} (leader {} at leader epoch {}: epoch {} "
                  "ends at {})",
                  target->topic, p.partition_index, from, log->log_end_offset(),
                  cut.complete ? "" : ", to compare an older epoch next", leader,
                  target->leader_epoch, p.diverging_epoch.epoch, p.diverging_epoch.end_offset);
            }
            continue;
          }
          if (p.records && !p.records->empty()) {
            if (target->throttled)
              record_quota(follower_quota_, static_cast<int64_t>(p.records->size()));
            auto appended = log->append_as_follower(*p.records, wall_clock_ms());
            if (!appended) {
              spdlog::warn("replica fetcher {}: {}-{}: {}", index, target->topic, p.partition_index,
                           appended.error().message);
              failed = true;
              only_epoch_errors = false;
              continue;
            }
          }
          const int64_t hw_before = log->high_watermark();
          log->set_high_watermark(
              cluster::follower_high_watermark(p.high_watermark, log->log_end_offset(), hw_before));
          // Consumers reading from this follower (KIP-392) wait for its high watermark, as
          // Kafka's fetcher completes the delayed fetches of partitionsWithNewHighWatermark.
          if (log->high_watermark() > hw_before) waiters_.notify(log->tp());
        }
      }
    } while (false);
    if (failed) {
      // replica.fetch.backoff.ms, in steps so that a stop or a leadership change is noticed.
      const int64_t backoff_ms = only_epoch_errors
                                     ? std::min<int64_t>(config_.replica_fetch_backoff_ms, 50)
                                     : config_.replica_fetch_backoff_ms;
      const int64_t until = steady_ms() + backoff_ms;
      while (!stop_fetchers_.load() && steady_ms() < until &&
             leadership_changes_.load() == changes_seen) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      }
    }
  }
}

}  // namespace tarn::broker
