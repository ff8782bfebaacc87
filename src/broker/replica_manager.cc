// The replica manager: partition states from etcd, replica logs, the leader's ISR and high
// watermark, and the follower's replica fetchers (replica_manager.h).
#include "broker/replica_manager.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <netdb.h>
#include <poll.h>
#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>

#include "broker/fetch_waiters.h"
#include "broker/topic_handler_util.h"
#include "broker/topic_manager.h"
#include "protocol/headers.h"
#include "protocol/messages/fetch_request.h"
#include "protocol/messages/fetch_response.h"
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
constexpr int32_t max_replica_response_bytes = 64 * 1024 * 1024;

// One blocking connection from a fetcher to a leader: POSIX sockets with poll() timeouts, so a
// paused leader costs at most replica.socket.timeout.ms, and `stop` is noticed within 100 ms.
class leader_connection {
 public:
  leader_connection() = default;
  leader_connection(const leader_connection&) = delete;
  leader_connection& operator=(const leader_connection&) = delete;
  ~leader_connection() { close_connection(); }

  bool connected() const { return fd_ >= 0; }
  const std::string& target() const { return target_; }

  result<void, std::string> connect_to(const std::string& host, int32_t port) {
    close_connection();
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* found = nullptr;
    const std::string service = std::to_string(port);
    if (int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
      return fail(fmt::format("resolve {}: {}", host, ::gai_strerror(rc)));
    }
    std::string why = "no address";
    for (addrinfo* a = found; a != nullptr; a = a->ai_next) {
      int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
      if (fd < 0) continue;
      if (::connect(fd, a->ai_addr, a->ai_addrlen) == 0) {
        fd_ = fd;
        break;
      }
      why = std::strerror(errno);
      ::close(fd);
    }
    ::freeaddrinfo(found);
    if (fd_ < 0) return fail(fmt::format("connect {}:{}: {}", host, port, why));
    target_ = fmt::format("{}:{}", host, port);
    return {};
  }

  void close_connection() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
    target_.clear();
  }

  // Sends one request and returns the response body (after its header).
  result<std::span<const uint8_t>, std::string> round_trip(int16_t api_key, int16_t api_version,
                                                           std::span<const uint8_t> body,
                                                           std::vector<uint8_t>& buffer,
                                                           int64_t timeout_ms,
                                                           const std::atomic<bool>& stop) {
    protocol::request_header header;
    header.request_api_key = api_key;
    header.request_api_version = api_version;
    header.correlation_id = next_correlation_id_++;
    header.client_id = std::string_view("tarn-replica-fetcher");
    std::vector<uint8_t> frame(4);
    protocol::writer w(frame);
    header.encode(w, protocol::request_header_version(api_key, api_version));
    frame.insert(frame.end(), body.begin(), body.end());
    const uint32_t size = static_cast<uint32_t>(frame.size() - 4);
    for (size_t i = 0; i < 4; ++i) frame[i] = static_cast<uint8_t>(size >> (24 - 8 * i));
    const int64_t deadline = steady_ms() + timeout_ms;
    auto broken = [this](std::string why) {
      close_connection();
      return fail(std::move(why));
    };
    if (auto s = io(frame.data(), frame.size(), true, deadline, stop); !s) return broken(s.error());
    uint8_t size_bytes[4];
    if (auto r = io(size_bytes, 4, false, deadline, stop); !r) return broken(r.error());
    const int32_t response_size =
        static_cast<int32_t>((uint32_t{size_bytes[0]} << 24) | (uint32_t{size_bytes[1]} << 16) |
                             (uint32_t{size_bytes[2]} << 8) | uint32_t{size_bytes[3]});
    if (response_size < 4 || response_size > max_replica_response_bytes) {
      return broken(fmt::format("bad response size {}", response_size));
    }
    buffer.resize(static_cast<size_t>(response_size));
    if (auto r = io(buffer.data(), buffer.size(), false, deadline, stop); !r) {
      return broken(r.error());
    }
    protocol::reader r(buffer);
    auto rh = protocol::response_header::decode(
        r, protocol::response_header_version(api_key, api_version));
    if (!rh || rh->correlation_id != header.correlation_id) {
      return broken("response header does not match the request");
    }
    return std::span<const uint8_t>(buffer).subspan(buffer.size() - r.remaining());
  }

 private:
  result<void, std::string> io(uint8_t* data, size_t n, bool sending, int64_t deadline_ms,
                               const std::atomic<bool>& stop) {
    size_t done = 0;
    while (done < n) {
      if (stop.load()) return fail(std::string("stopping"));
      const int64_t left = deadline_ms - steady_ms();
      if (left <= 0) return fail(std::string("timed out"));
      pollfd p{fd_, static_cast<short>(sending ? POLLOUT : POLLIN), 0};
      const int ready = ::poll(&p, 1, static_cast<int>(std::min<int64_t>(left, 100)));
      if (ready < 0 && errno != EINTR) return fail(fmt::format("poll: {}", std::strerror(errno)));
      if (ready <= 0) continue;
      const ssize_t r = sending ? ::send(fd_, data + done, n - done, MSG_NOSIGNAL)
                                : ::recv(fd_, data + done, n - done, 0);
      if (r < 0 && errno == EINTR) continue;
      if (r == 0) return fail(std::string("the leader closed the connection"));
      if (r < 0)
        return fail(fmt::format("{}: {}", sending ? "send" : "recv", std::strerror(errno)));
      done += static_cast<size_t>(r);
    }
    return {};
  }

  int fd_ = -1;
  int32_t next_correlation_id_ = 1;
  std::string target_;
};

// <prefix>partitions/<topic id>/<index> -> (topic id, index).
std::optional<std::pair<storage::uuid, int32_t>> parse_partition_key(std::string_view key,
                                                                     std::string_view dir) {
  if (!key.starts_with(dir)) return std::nullopt;
  key.remove_prefix(dir.size());
  const size_t slash = key.find('/');
  if (slash == std::string_view::npos) return std::nullopt;
  auto id = storage::uuid::parse(key.substr(0, slash));
  const std::string_view tail = key.substr(slash + 1);
  int32_t index = -1;
  const auto [end, ec] = std::from_chars(tail.data(), tail.data() + tail.size(), index);
  if (!id || ec != std::errc() || end != tail.data() + tail.size() || index < 0) {
    return std::nullopt;
  }
  return std::make_pair(*id, index);
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
    std::lock_guard g(m->mu_);
    for (const auto& kv : states->kvs) {
      auto key = parse_partition_key(kv.key, dir);
      auto state = cluster::decode_partition_state(kv.value);
      if (!key || !state) continue;
      m->apply_state(key->first, key->second, {std::move(*state), kv.mod_revision});
    }
    m->work_pending_ = true;
  }
  replica_manager* self = m.get();
  topics.on_cluster_topics_changed([self] {
    std::lock_guard g(self->mu_);
    self->work_pending_ = true;
    self->cv_.notify_all();
  });
  m->worker_ = std::thread([self] { self->run_worker(); });
  for (int i = 0; i < config.num_replica_fetchers; ++i) {
    m->fetchers_.emplace_back([self, i] { self->run_fetcher(i); });
  }
  m->watch_ = std::make_unique<cluster::etcd::etcd_watch>(
      o, dir, cluster::etcd::prefix_end(dir), states->revision + 1,
      [self](const cluster::etcd::watch_response& w) { self->on_watch(w); },
      [](const cluster::etcd::etcd_error& e) {
        spdlog::error("partition states: the watch stopped ({})", e.message);
      });
  spdlog::info("replica manager: {} partition state(s) in etcd, {} replica fetcher(s)",
               states->kvs.size(), config.num_replica_fetchers);
  return m;
}

replica_manager::~replica_manager() {
  topics_.on_cluster_topics_changed({});
  watch_.reset();
  stop_fetchers_.store(true);
  for (auto& t : fetchers_) t.join();
  {
    std::lock_guard g(mu_);
    stopping_ = true;
    cv_.notify_all();
  }
  if (worker_.joinable()) worker_.join();
}

void replica_manager::apply_state(const storage::uuid& topic_id, int32_t partition,
                                  cluster::versioned_partition_state state) {
  entry& e = partitions_[{topic_id, partition}];
  if (e.state.mod_revision > state.mod_revision) return;  // an older read
  e.topic_id = topic_id;
  e.partition = partition;
  e.state = std::move(state);
  const cluster::partition_state& s = e.state.state;
  if (s.leader == node_id_) {
    if (e.leader) {
      e.leader->update_state(s, steady_ms());
    } else {
      e.leader.emplace(node_id_, s, 0, steady_ms());
    }
  } else {
    e.leader.reset();
  }
  const bool replica =
      std::find(s.replicas.begin(), s.replicas.end(), node_id_) != s.replicas.end();
  if (replica && !e.local_log) {
    work_pending_ = true;
    cv_.notify_all();
  }
}

void replica_manager::on_watch(const cluster::etcd::watch_response& w) {
  const std::string dir = prefix_ + "partitions/";
  std::lock_guard g(mu_);
  for (const auto& ev : w.events) {
    auto key = parse_partition_key(ev.kv.key, dir);
    if (!key) continue;
    if (ev.type == cluster::etcd::watch_event::kind::delete_key) {
      partitions_.erase({key->first, key->second});
      work_pending_ = true;
      cv_.notify_all();
      continue;
    }
    auto state = cluster::decode_partition_state(ev.kv.value);
    if (!state) continue;
    apply_state(key->first, key->second, {std::move(*state), ev.kv.mod_revision});
  }
}

result<void, std::string> replica_manager::create_partition_states(
    const storage::uuid& topic_id, const std::vector<std::vector<int32_t>>& assignment,
    int32_t first_partition) {
  for (size_t i = 0; i < assignment.size(); ++i) {
    const int32_t p = first_partition + static_cast<int32_t>(i);
    cluster::partition_state s{assignment[i], assignment[i], assignment[i][0], 0, 0};
    auto created = store_->create(topic_id, p, s);
    if (!created) return fail("etcd: " + created.error().message);
    // The watch brings it too; applied now so that this broker leads at once.
    auto read = store_->read(topic_id, p);
    if (read && *read) {
      std::lock_guard g(mu_);
      apply_state(topic_id, p, **read);
    }
  }
  return {};
}

result<void, std::string> replica_manager::delete_partition_states(const storage::uuid& topic_id) {
  const std::string dir = fmt::format("{}partitions/{}/", prefix_, topic_id.to_string());
  auto deleted = client_->delete_range(dir, cluster::etcd::prefix_end(dir));
  if (!deleted) return fail("etcd: " + deleted.error().message);
  std::lock_guard g(mu_);
  std::erase_if(partitions_, [&](const auto& p) { return p.first.first == topic_id; });
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

const replica_manager::entry* replica_manager::find(std::string_view topic,
                                                    int32_t partition) const {
  for (const auto& [key, e] : partitions_) {
    if (key.second == partition && e.topic == topic) return &e;
  }
  return nullptr;
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

bool replica_manager::follows(std::string_view topic, int32_t partition) const {
  std::lock_guard g(mu_);
  const entry* e = find(topic, partition);
  return e != nullptr && e->state.state.leader != node_id_;
}

void replica_manager::on_leader_append(std::string_view topic, int32_t partition,
                                       storage::log& log) {
  int64_t before = 0, after = 0;
  {
    std::lock_guard g(mu_);
    entry* e = find(topic, partition);
    if (e == nullptr || !e->leader || !log.replicated()) return;
    before = log.high_watermark();
    after = e->leader->update_high_watermark(log.log_end_offset());
    log.set_high_watermark(after);
  }
  if (after > before) waiters_.notify(log.tp());
}

protocol::error_code replica_manager::on_follower_fetch(std::string_view topic, int32_t partition,
                                                        int32_t replica, int64_t fetch_offset,
                                                        storage::log& log) {
  int64_t before = 0, after = 0;
  {
    std::lock_guard g(mu_);
    entry* e = find(topic, partition);
    if (e == nullptr || !e->leader || !log.replicated()) return error_code::not_leader_or_follower;
    const int64_t leo = log.log_end_offset();
    if (!e->leader->on_follower_fetch(replica, fetch_offset, leo, steady_ms())) {
      return error_code::not_leader_or_follower;
    }
    before = log.high_watermark();
    after = e->leader->update_high_watermark(leo);
    log.set_high_watermark(after);
    if (!e->leader->caught_up_followers().empty()) {
      work_pending_ = true;
      cv_.notify_all();
    }
  }
  if (after > before) waiters_.notify(log.tp());
  return error_code::none;
}

int32_t replica_manager::isr_size(std::string_view topic, int32_t partition) const {
  std::lock_guard g(mu_);
  const entry* e = find(topic, partition);
  return e == nullptr ? -1 : static_cast<int32_t>(e->state.state.isr.size());
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
      open_replica_logs();
    }
    maybe_change_isr();
    lock.lock();
  }
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
  for (auto& [topic_id, parts] : wanted) {
    std::optional<storage::topic_record> topic = topics_.cluster_topic(topic_id);
    if (!topic) continue;  // the metadata log has not brought it yet: on_cluster_topics_changed
    std::vector<int32_t> opened;
    {
      auto guard = topics_.control_lock();
      storage::log_manager& logs = topics_.logs();
      const storage::topic_info* info = logs.find_topic(topic->name);
      if (info != nullptr && info->topic_id != topic_id) continue;  // an older topic's name
      if (info == nullptr) {
        auto adopted = logs.adopt_topic(*topic, parts, wall_clock_ms());
        if (!adopted) {
          spdlog::error("replica logs of {}: {}", topic->name, adopted.error().message);
          continue;
        }
        spdlog::info("follower of {} partition(s) {}", topic->name, fmt::join(parts, ","));
      } else if (std::any_of(parts.begin(), parts.end(),
                             [&](int32_t p) { return logs.get_log(topic->name, p) == nullptr; })) {
        // Partitions the leader added (CreatePartitions) to a topic this broker follows.
        auto grown = logs.adopt_partitions(topic->name, topic->partitions, parts, wall_clock_ms());
        if (!grown) {
          spdlog::error("replica logs of {}: {}", topic->name, grown.error().message);
          continue;
        }
        spdlog::info("follower of {} partition(s) {}", topic->name, fmt::join(parts, ","));
      }
      for (int32_t p : parts) {
        storage::log* log = logs.get_log(topic->name, p);
        if (log == nullptr) continue;
        std::lock_guard g(mu_);
        auto it = partitions_.find({topic_id, p});
        if (it == partitions_.end()) continue;
        // A single replica keeps the single-node rule (the high watermark is the log end).
        if (it->second.state.state.replicas.size() > 1 && !log->replicated()) {
          log->set_replicated(log->high_watermark());
        }
        it->second.topic = topic->name;
        it->second.local_log = true;
        // A follower's copy (adopted now, or loaded at start): deleted with its states.
        if (it->second.state.state.leader != node_id_) adopted_[topic_id] = topic->name;
        opened.push_back(p);
      }
    }
  }
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
  {
    auto maps = topics_.read_lock();
    std::lock_guard g(mu_);
    for (auto& [key, e] : partitions_) {
      if (!e.leader || !e.local_log || e.state.state.replicas.size() < 2) continue;
      const storage::log* log = topics_.logs().get_log(e.topic, key.second);
      if (log == nullptr) continue;
      const auto out = e.leader->out_of_sync_replicas(now, config_.replica_lag_time_max_ms,
                                                      log->log_end_offset());
      const auto in = e.leader->caught_up_followers();
      if (out.empty() && in.empty()) continue;
      std::vector<int32_t> isr =
          cluster::isr_with(cluster::isr_without(e.state.state.isr, out), in);
      if (isr.empty() || isr == e.state.state.isr) continue;
      changes.push_back({key.first, key.second, e.topic, e.state.state, std::move(isr)});
    }
  }
  if (changes.empty()) return;
  cluster::broker_states brokers;
  for (const auto& b : membership_.live_brokers()) {
    brokers[b.node_id] = cluster::broker_state{b.epoch, false, false};
  }
  for (const auto& c : changes) {
    cluster::alter_partition_request r;
    r.broker_id = node_id_;
    r.leader_epoch = c.from.leader_epoch;
    r.partition_epoch = c.from.partition_epoch;
    for (int32_t id : c.isr) {
      auto it = brokers.find(id);
      r.new_isr.emplace_back(id, it == brokers.end() ? -1 : it->second.epoch);
    }
    auto altered = store_->alter_partition(c.topic_id, c.partition, r, brokers);
    if (!altered) {
      spdlog::warn("AlterPartition {}-{}: etcd: {}", c.topic, c.partition, altered.error().message);
      continue;
    }
    if (altered->error != error_code::none) {
      spdlog::info("AlterPartition {}-{} to ISR [{}] refused: {}", c.topic, c.partition,
                   fmt::join(c.isr, ","), protocol::describe(altered->error).name);
      continue;
    }
    spdlog::info("ISR of {}-{} from [{}] to [{}] (partition epoch {})", c.topic, c.partition,
                 fmt::join(c.from.isr, ","), fmt::join(altered->state.isr, ","),
                 altered->state.partition_epoch);
    // Applied now (the watch brings the same state with its revision): a smaller ISR may let the
    // high watermark move.
    int64_t before = 0, after = 0;
    storage::topic_partition tp{c.topic, c.partition};
    {
      auto maps = topics_.read_lock();
      storage::log* log = topics_.logs().get_log(c.topic, c.partition);
      std::lock_guard g(mu_);
      auto it = partitions_.find({c.topic_id, c.partition});
      if (it == partitions_.end() || log == nullptr || !it->second.leader) continue;
      if (it->second.state.state.partition_epoch < altered->state.partition_epoch) {
        it->second.state.state = altered->state;
        it->second.leader->update_state(altered->state, steady_ms());
      }
      before = log->high_watermark();
      after = it->second.leader->update_high_watermark(log->log_end_offset());
      log->set_high_watermark(after);
    }
    if (after > before) waiters_.notify(tp);
  }
}

void replica_manager::run_fetcher(int index) {
  struct fetch_target {
    storage::uuid topic_id;
    int32_t partition;
    std::string topic;
    int32_t leader_epoch;
  };
  std::map<int32_t, leader_connection> connections;
  std::vector<uint8_t> buffer;
  const std::string listener =
      config_.advertised_listeners.empty() ? "" : config_.advertised_listeners[0].name;
  while (!stop_fetchers_.load()) {
    std::map<int32_t, std::vector<fetch_target>> by_leader;
    {
      std::lock_guard g(mu_);
      for (const auto& [key, e] : partitions_) {
        const auto& s = e.state.state;
        if (!e.local_log || s.leader == node_id_ || s.leader < 0) continue;
        const size_t h = std::hash<std::string>{}(key.first.to_string()) + key.second;
        if (static_cast<int>(h % static_cast<size_t>(config_.num_replica_fetchers)) != index) {
          continue;
        }
        by_leader[s.leader].push_back({key.first, key.second, e.topic, s.leader_epoch});
      }
    }
    if (by_leader.empty()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      continue;
    }
    bool failed = false;
    for (auto& [leader, targets] : by_leader) {
      if (stop_fetchers_.load()) break;
      leader_connection& conn = connections[leader];
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
      {
        auto maps = topics_.read_lock();
        for (const auto& t : targets) {
          const storage::log* log = topics_.logs().get_log(t.topic, t.partition);
          if (log == nullptr) continue;
          const protocol::uuid wire_id = to_wire(t.topic_id);
          if (req.topics.empty() || req.topics.back().topic_id.bytes != wire_id.bytes) {
            req.topics.emplace_back().topic_id = wire_id;
          }
          auto& p = req.topics.back().partitions.emplace_back();
          p.partition = t.partition;
          p.fetch_offset = log->log_end_offset();
          p.current_leader_epoch = t.leader_epoch;
          p.log_start_offset = log->log_start_offset();
          p.partition_max_bytes = config_.replica_fetch_max_bytes;
        }
      }
      if (req.topics.empty()) continue;
      std::vector<uint8_t> body;
      protocol::writer w(body);
      req.encode(w, replica_fetch_version);
      auto answer = conn.round_trip(
          protocol::fetch_request::api_key, replica_fetch_version, body, buffer,
          int64_t{config_.replica_socket_timeout_ms} + config_.replica_fetch_wait_max_ms,
          stop_fetchers_);
      if (!answer) {
        spdlog::debug("replica fetcher {}: leader {}: {}", index, leader, answer.error());
        failed = true;
        continue;
      }
      protocol::reader r(*answer);
      auto resp = protocol::fetch_response::decode(r, replica_fetch_version);
      if (!resp) {
        conn.close_connection();
        failed = true;
        continue;
      }
      for (const auto& t : resp->responses) {
        const storage::uuid topic_id = from_wire(t.topic_id);
        std::string name;
        for (const auto& target : targets) {
          if (target.topic_id == topic_id) name = target.topic;
        }
        for (const auto& p : t.partitions) {
          if (name.empty()) continue;
          if (p.error_code != 0) {
            spdlog::debug("replica fetcher {}: {}-{} from leader {}: error {}", index, name,
                          p.partition_index, leader, p.error_code);
            failed = true;
            continue;
          }
          auto maps = topics_.read_lock();
          storage::log* log = topics_.logs().get_log(name, p.partition_index);
          if (log == nullptr) continue;
          std::lock_guard log_lock(log->mutex());
          if (p.records && !p.records->empty()) {
            auto appended = log->append_as_follower(*p.records, wall_clock_ms());
            if (!appended) {
              spdlog::warn("replica fetcher {}: {}-{}: {}", index, name, p.partition_index,
                           appended.error().message);
              failed = true;
              continue;
            }
          }
          log->set_high_watermark(cluster::follower_high_watermark(
              p.high_watermark, log->log_end_offset(), log->high_watermark()));
        }
      }
    }
    if (failed) {
      // replica.fetch.backoff.ms, in steps so that a stop is noticed.
      const int64_t until = steady_ms() + config_.replica_fetch_backoff_ms;
      while (!stop_fetchers_.load() && steady_ms() < until) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
    }
  }
}

}  // namespace tarn::broker
