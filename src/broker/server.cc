// Event loops, acceptors, connection bookkeeping (max.connections, max.connections.per.ip) and
// the clean shutdown sequence.
#include "broker/server.h"

#include <pthread.h>
#include <sched.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <time.h>

#include <asio/co_spawn.hpp>
#include <asio/detached.hpp>
#include <asio/executor_work_guard.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/host_name.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/post.hpp>
#include <asio/redirect_error.hpp>
#include <asio/signal_set.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <atomic>
#include <csignal>
#include <filesystem>
#include <future>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include "broker/authorization.h"
#include "broker/connection.h"
#include "broker/console_backend_impl.h"
#include "broker/control_worker.h"
#include "broker/dynamic_config.h"
#include "broker/features.h"
#include "broker/fetch_session.h"
#include "broker/fetch_waiters.h"
#include "broker/group_dynamic_config.h"
#include "broker/log_dir.h"
#include "broker/offsets_topic.h"
#include "broker/producer_ids.h"
#include "broker/replica_manager.h"
#include "broker/request_memory.h"
#include "broker/share_state_client.h"
#include "broker/topic_manager.h"
#include "broker/transactions.h"
#include "broker/txn_marker_sender.h"
#include "broker/txn_verifier.h"
#include "cluster/cluster_membership.h"
#include "cluster/producer_id_blocks.h"
#include "coordinator/group_coordinator.h"
#include "coordinator/share_coordinator.h"
#include "protocol/api_table.h"
#include "quota/client_quotas.h"
#include "security/tls_context.h"

namespace tarn::broker {

namespace {

// How long a clean shutdown waits for requests in flight before closing what is left.
constexpr auto shutdown_drain_timeout = std::chrono::seconds(10);
// How long a controlled shutdown waits for the controller to move this broker's leaderships
// away: Kafka's broker waits for the controller's approval within its shutdown's bound, five
// minutes (KafkaBroker.shutdown()), with no key of its own.
constexpr auto controlled_shutdown_timeout = std::chrono::minutes(5);
// How often the group coordinator's timers are fired (coordinator::group_coordinator::poll).
constexpr auto group_poll_interval = std::chrono::milliseconds(100);

std::vector<int> allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int i = 0; i < CPU_SETSIZE; ++i) {
      if (CPU_ISSET(i, &set)) cpus.push_back(i);
    }
  }
  if (cpus.empty()) cpus.push_back(0);
  return cpus;
}

// Each connection is a descriptor, and the soft RLIMIT_NOFILE is often 1024 while the hard
// limit is far higher: like any server expecting thousands of clients, raise soft to hard.
void raise_open_files_limit() {
  rlimit limit{};
  if (::getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= limit.rlim_max) return;
  const rlim_t before = limit.rlim_cur;
  limit.rlim_cur = limit.rlim_max;
  if (::setrlimit(RLIMIT_NOFILE, &limit) != 0) {
    spdlog::warn("could not raise the open files limit from {} to {}", before, limit.rlim_max);
    return;
  }
  spdlog::info("open files limit raised from {} to {}", before, limit.rlim_max);
}

}  // namespace

// One event loop: its io_context, the thread that runs it and the connections it owns. Only that
// thread touches `connections`; the counter is read by the acceptor on loop 0.
struct event_loop {
  int index = 0;
  asio::io_context context{1};  // concurrency hint 1: one thread, no internal locking needed
  // Makes asio create the loop's reactor (an epoll, an eventfd, a timerfd) now. Made lazily by
  // the loop's first socket, it threw out of the accept coroutine when the process was out of
  // descriptors, and the broker aborted.
  asio::steady_timer reactor_now{context};
  std::optional<asio::executor_work_guard<asio::io_context::executor_type>> work;
  std::thread thread;
  std::atomic<int> connection_count{0};
  std::unordered_map<uint64_t, std::shared_ptr<connection>> connections;
  bool draining = false;
};

struct server::impl {
  explicit impl(broker_config c) : config(std::move(c)) {}

  broker_config config;
  handler_registry registry;
  std::unique_ptr<broker_services> services;
  std::vector<std::unique_ptr<event_loop>> loops;
  std::vector<int> cpus;

  struct listener_socket {
    listener_endpoint endpoint;
    std::unique_ptr<asio::ip::tcp::acceptor> acceptor;
    listener_runtime* runtime = nullptr;
  };
  // Per listener, same order as config.listeners: its TLS context and SASL settings.
  std::vector<std::unique_ptr<listener_runtime>> runtimes;
  std::vector<listener_socket> acceptors;
  std::vector<listener_endpoint> bound;
  std::optional<log_dir> dir;
  std::unique_ptr<topic_manager> topics;
  std::unique_ptr<fetch_session_cache> fetch_sessions;
  std::unique_ptr<fetch_waiters> waiters;
  std::unique_ptr<request_memory> memory;
  std::unique_ptr<quota::client_quotas> quotas;
  // The group coordinator and its two seams. Declared after the loops so they go first: a
  // JoinGroup callback the coordinator still holds owns a timer of a loop's io_context.
  std::unique_ptr<offsets_topic> offsets;
  std::unique_ptr<topic_metadata_view> topic_view;
  std::unique_ptr<coordinator::group_coordinator> groups;
  std::unique_ptr<offsets_topic> share_state;        // __share_group_state
  std::unique_ptr<share_state_client> share_client;  // in a cluster: the persister's RPCs
  std::unique_ptr<coordinator::share_coordinator> shares;
  std::thread groups_loader;  // runs groups->load() at start; joined before the logs close
  // Producer ids for InitProducerId and the transaction coordinator (producer_ids.h): the log
  // directory's file on one node, blocks from etcd in a cluster.
  std::unique_ptr<producer_id_source> producer_ids;
  // The transaction coordinator and its seams (docs/transactions.md).
  std::unique_ptr<transaction_state_log> txn_log;
  std::unique_ptr<partition_markers> txn_markers;
  std::unique_ptr<txn::txn_coordinator> txns;
  // In a cluster: the markers of partitions other brokers lead (txn_marker_sender.h).
  std::unique_ptr<txn_marker_sender> txn_sender;
  // In a cluster: Produce's and TxnOffsetCommit's check with the transaction coordinator.
  std::unique_ptr<txn_verifier> verifier;
  int64_t last_txn_abort_check_ms = 0;
  int64_t last_txn_expire_check_ms = -1;  // first run one interval after start, as Kafka's
  std::unique_ptr<broker_console> console;
  std::unique_ptr<broker_authorizer> authorizer;  // null: authorizer.class.name is empty
  // In a cluster (etcd.connect): the session, registration and controller candidacy.
  std::unique_ptr<cluster::cluster_membership> membership;
  std::unique_ptr<replica_manager> replicas;  // in a cluster; stopped before membership
  // In a cluster: what any broker records takes effect here (dynamic_config.h); stopped before
  // the replica manager and the share coordinator it calls.
  std::unique_ptr<config_follower> configs;
  // Topic creation, off the event loops (control_worker.h). Declared after what its work uses,
  // so that it goes first; run() joins it as soon as the loops have stopped.
  std::unique_ptr<control_worker> control;
  // snapshot()'s gauges (the HTTP threads) against the replica manager's reset at shutdown.
  std::mutex replicas_mu;
  // Fenced for good (another broker took the node.id while the session was lost): the broker
  // stops with exit code 1.
  std::atomic<bool> fenced{false};
  bool clean_shutdown = false;

  // Loop 0 only.
  std::unordered_map<std::string, int> connections_per_ip;
  std::unique_ptr<wakeup> accept_wakeup;
  std::unique_ptr<asio::signal_set> signals;
  bool stopping = false;        // the listeners close; loop 0 only
  bool shutdown_begun = false;  // shutdown() runs (the controlled part may come first)

  std::atomic<int> total_connections{0};
  // For snapshot(): the metric cells, readiness, start time and the loops' CPU clocks.
  broker_metrics metrics;
  std::atomic<bool> ready{false};
  // Set once start() has built everything snapshot() reads; before, snapshot() reads nothing
  // else (the HTTP listener may ask while the logs are still being recovered).
  std::atomic<bool> started{false};
  std::chrono::steady_clock::time_point started_at = std::chrono::steady_clock::now();
  std::atomic<bool> loop0_thread_known{false};
  pthread_t loop0_thread{};
  struct idle_sample {
    std::chrono::steady_clock::time_point at;
    std::vector<int64_t> cpu_ns;
    std::vector<double> ratio;
  };
  mutable std::mutex idle_mu;
  mutable idle_sample idle;
  std::atomic<uint64_t> next_connection_id{0};
  size_t next_loop = 0;

  event_loop& loop0() { return *loops[0]; }

  result<void, std::string> bind_listeners();
  result<void, std::string> make_listener_runtimes();
  event_loop& pick_loop();
  asio::awaitable<void> accept_loop(listener_socket& listener);
  void start_connection(event_loop& loop, asio::ip::tcp::socket socket, connection_info info,
                        std::string ip, const listener_runtime* runtime,
                        std::shared_ptr<asio::ssl::context> tls);
  void maybe_reload_tls(listener_runtime& runtime);
  void connection_closed(event_loop& loop, connection& c, const std::string& ip);
  asio::awaitable<void> shutdown(std::string reason);
  asio::awaitable<void> controlled_shutdown();
  asio::awaitable<void> log_flusher(std::chrono::milliseconds interval);
  asio::awaitable<void> group_poller();
  void join_groups_loader();
  int connection_limit_for(const std::string& ip) const;
  result<void, std::string> join_cluster(const std::vector<listener_endpoint>& advertised);
};

server::server(broker_config config) : impl_(std::make_unique<impl>(std::move(config))) {}

server::~server() {
  if (!impl_) return;
  for (auto& loop : impl_->loops) {
    if (loop->thread.joinable()) {
      loop->context.stop();
      loop->thread.join();
    }
  }
  impl_->join_groups_loader();
  if (impl_->verifier) impl_->verifier->stop();  // before the replica manager it reads goes
  // Its answers go to the share coordinator: stopped before that goes.
  if (impl_->share_client) impl_->share_client->stop();
}

const std::vector<listener_endpoint>& server::bound_listeners() const { return impl_->bound; }
bool server::had_clean_shutdown() const { return impl_->clean_shutdown; }

namespace {

// What the TLS files of a listener look like now (path, size, modification time of each), so a
// change is seen without reading them.
std::string tls_files_stamp(const security::ssl_config& ssl) {
  std::string out;
  for (const auto* path : {&ssl.keystore_location, &ssl.truststore_location}) {
    if (!*path) continue;
    std::error_code ec;
    const auto size = std::filesystem::file_size(**path, ec);
    const auto time = std::filesystem::last_write_time(**path, ec);
    out +=
        fmt::format("{}:{}:{};", **path, ec ? 0 : size, ec ? 0 : time.time_since_epoch().count());
  }
  return out;
}

}  // namespace

result<void, std::string> server::impl::make_listener_runtimes() {
  for (const auto& sec : config.security_by_listener) {
    auto rt = std::make_unique<listener_runtime>();
    rt->security = sec;
    if (security::uses_tls(sec.protocol)) {
      auto ctx = security::make_server_tls_context(sec.ssl);
      if (!ctx) return fail(fmt::format("listener {}: {}", sec.name, ctx.error()));
      rt->tls = std::make_shared<asio::ssl::context>(ctx->release());
      rt->tls_files_stamp = tls_files_stamp(sec.ssl);
      rt->tls_files_checked_at = std::chrono::steady_clock::now();
      auto mapper = security::ssl_principal_mapper::parse(sec.ssl.principal_mapping_rules);
      if (!mapper) return fail(fmt::format("listener {}: {}", sec.name, mapper.error()));
      rt->principal_mapper = std::move(*mapper);
    }
    if (security::uses_sasl(sec.protocol)) {
      auto settings = security::sasl_settings::make(sec.sasl, sec.name);
      if (!settings) return fail(settings.error());
      rt->sasl = std::make_shared<const security::sasl_settings>(std::move(*settings));
    }
    runtimes.push_back(std::move(rt));
  }
  return {};
}

// Kafka reloads a keystore when its path is set again dynamically; tarn also reloads when the
// files change: at most once a second, looked at when a connection arrives (no timer for idle
// listeners), rebuilt on loop 0. A file that does not load (half written, wrong password) keeps
// the previous context and is tried again a second later.
void server::impl::maybe_reload_tls(listener_runtime& runtime) {
  const auto now = std::chrono::steady_clock::now();
  if (now - runtime.tls_files_checked_at < std::chrono::seconds(1)) return;
  runtime.tls_files_checked_at = now;
  std::string stamp = tls_files_stamp(runtime.security.ssl);
  if (stamp == runtime.tls_files_stamp) return;
  auto ctx = security::make_server_tls_context(runtime.security.ssl);
  if (!ctx) {
    spdlog::warn(
        "listener {}: keystore or truststore changed but does not load, keeping the "
        "previous one: {}",
        runtime.security.name, ctx.error());
    return;
  }
  runtime.tls = std::make_shared<asio::ssl::context>(ctx->release());
  runtime.tls_files_stamp = std::move(stamp);
  spdlog::info("listener {}: keystore or truststore changed, TLS context reloaded",
               runtime.security.name);
}

result<void, std::string> server::impl::bind_listeners() {
  for (size_t i = 0; i < config.listeners.size(); ++i) {
    const auto& l = config.listeners[i];
    asio::error_code ec;
    asio::ip::address address;
    if (l.host.empty()) {
      address = asio::ip::address_v4::any();
    } else {
      address = asio::ip::make_address(l.host, ec);
      if (ec) {
        asio::ip::tcp::resolver resolver(loop0().context);
        auto results = resolver.resolve(l.host, std::to_string(l.port), ec);
        if (ec || results.empty()) {
          return fail(fmt::format("cannot resolve host {} of listener {}: {}", l.host,
                                  l.to_string(), ec.message()));
        }
        address = results.begin()->endpoint().address();
      }
    }
    asio::ip::tcp::endpoint endpoint(address, l.port);
    auto acceptor = std::make_unique<asio::ip::tcp::acceptor>(loop0().context);
    acceptor->open(endpoint.protocol(), ec);
    if (!ec) acceptor->set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec && config.socket_receive_buffer_bytes != -1) {
      // Set on the listening socket so accepted sockets inherit it (as Kafka does).
      acceptor->set_option(
          asio::socket_base::receive_buffer_size(config.socket_receive_buffer_bytes), ec);
    }
    if (!ec) acceptor->bind(endpoint, ec);
    if (!ec) acceptor->listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      return fail(fmt::format("cannot listen on {} ({}): {}", l.to_string(),
                              endpoint.address().to_string(), ec.message()));
    }
    listener_endpoint actual = l;
    actual.port = acceptor->local_endpoint().port();
    bound.push_back(actual);
    acceptors.push_back({actual, std::move(acceptor), runtimes[i].get()});
  }
  return {};
}

result<void, std::string> server::start() {
  auto& s = *impl_;
  std::signal(SIGPIPE, SIG_IGN);
  raise_open_files_limit();

  auto dir = log_dir::open(s.config.log_dirs.front());
  if (!dir) return fail(dir.error());
  s.dir.emplace(std::move(*dir));
  // The log manager reads and removes the clean-shutdown marker while it loads the topics.
  auto topics = topic_manager::open(s.config, s.dir->path());
  if (!topics) return fail(topics.error());
  s.topics = std::move(*topics);
  s.clean_shutdown = s.topics->had_clean_shutdown();
  if (s.clean_shutdown) {
    spdlog::info("log directory {}: clean shutdown marker found, skipping recovery", s.dir->path());
  } else {
    spdlog::info("log directory {}: no clean shutdown marker, logs recovered", s.dir->path());
  }

  // Event loops: one per core unless num.network.threads says otherwise. The threads are not
  // pinned: on a machine shared with other work a pinned loop waits for its one core while the
  // other may be free, which raised tarn's p99 produce latency (docs/broker.md).
  s.cpus = allowed_cpus();
  int loop_count = s.config.num_network_threads > 0 ? s.config.num_network_threads
                                                    : static_cast<int>(s.cpus.size());
  if (loop_count > static_cast<int>(s.cpus.size())) {
    spdlog::info("num.network.threads={} is more than the {} cores available", loop_count,
                 s.cpus.size());
  }
  for (int i = 0; i < loop_count; ++i) {
    auto loop = std::make_unique<event_loop>();
    loop->index = i;
    loop->work.emplace(loop->context.get_executor());
    s.loops.push_back(std::move(loop));
  }

  register_all_handlers(s.registry);
  if (auto r = s.make_listener_runtimes(); !r) return fail(r.error());
  if (auto r = s.bind_listeners(); !r) return fail(r.error());

  // Advertise what was bound: port 0 becomes the real port, an empty host this machine's name.
  std::vector<listener_endpoint> advertised = s.config.advertised_listeners;
  for (size_t i = 0; i < advertised.size(); ++i) {
    if (advertised[i].port == 0) advertised[i].port = s.bound[i].port;
    if (advertised[i].host.empty()) advertised[i].host = asio::ip::host_name();
  }
  if (s.topics->in_cluster()) {
    if (auto r = s.join_cluster(advertised); !r) return fail(r.error());
  }
  // Kafka's FetchSessionCache: min.incremental.fetch.session.eviction.ms is fixed at 120000.
  s.fetch_sessions = std::make_unique<fetch_session_cache>(
      s.config.max_incremental_fetch_session_cache_slots, 120000);
  s.waiters = std::make_unique<fetch_waiters>();
  {
    auto guard = s.topics->control_lock();
    s.topics->logs().set_append_listener(
        [w = s.waiters.get()](const storage::topic_partition& tp) { w->notify(tp); });
  }
  if (s.membership) {
    auto started = replica_manager::start(s.config, cluster_prefix(s.topics->cluster_id()),
                                          *s.topics, *s.membership, *s.waiters);
    if (!started) return fail(started.error());
    std::lock_guard g(s.replicas_mu);  // the membership's thread fences and unfences it
    s.replicas = std::move(*started);
    if (!s.membership->alive()) s.replicas->fence();  // lost before the manager was there
  }
  s.memory = std::make_unique<request_memory>(s.config.queued_max_request_bytes);
  s.offsets = std::make_unique<offsets_topic>(*s.topics, s.config.group);
  if (s.replicas) {
    // One __consumer_offsets for the cluster (docs/cluster.md, "Coordinators").
    s.offsets->place_in_cluster({s.replicas.get(), s.membership.get(), s.config.node_id,
                                 s.config.group.offsets_topic_replication_factor});
  }
  s.topic_view = std::make_unique<topic_metadata_view>(*s.topics);
  s.groups =
      std::make_unique<coordinator::group_coordinator>(s.config.group, *s.offsets, *s.topic_view);
  s.share_state = std::make_unique<offsets_topic>(
      *s.topics, std::string(coordinator::share_group_state_topic_name),
      [share = s.config.share, cluster = s.replicas != nullptr](storage::log_manager& logs,
                                                                int64_t now_ms) {
        return create_share_group_state_topic(logs, share, now_ms, cluster);
      });
  if (s.replicas) {
    // One __share_group_state for the cluster (docs/share-groups.md, "In a cluster").
    s.share_state->place_in_cluster(
        {s.replicas.get(), s.membership.get(), s.config.node_id,
         s.config.share.share_coordinator_state_topic_replication_factor});
    s.share_client = std::make_unique<share_state_client>(s.config, *s.replicas, *s.membership,
                                                          *s.topic_view, *s.share_state);
  }
  // Share groups' own records go to __consumer_offsets, beside the other groups' (as Kafka's).
  s.shares = std::make_unique<coordinator::share_coordinator>(s.config.share, *s.topic_view,
                                                              s.share_state.get(), s.offsets.get());
  // ShareFetches long-poll in the same waiting room as Fetches: records acknowledged, released
  // or timed out wake them as an append does.
  s.shares->set_available_listener([view = s.topic_view.get(), w = s.waiters.get()](
                                       const coordinator::share_topic_partition& tp) {
    if (auto t = view->topic_by_id(tp.topic_id)) w->notify({t->name, tp.partition});
  });
  // Group configs (share.* and consumer.*) are in the metadata log; applied before the
  // share-partitions they shape are replayed, and before any consumer group heartbeats.
  for (const auto& [group_id, configs] : s.topics->metadata().group_configs()) {
    apply_group_configs(group_id, configs, s.groups.get(), s.shares.get());
  }
  // Dynamic group.consumer/share.assignment.interval.ms set before this start.
  apply_group_dynamic_configs(*s.topics, s.groups.get(), s.shares.get());
  {
    // Share groups and share-partition state are replayed before the listeners open, so no
    // share request sees a coordinator still loading (Kafka answers COORDINATOR_LOAD_IN_PROGRESS
    // meanwhile).
    const auto start = std::chrono::steady_clock::now();
    // In a cluster share groups move with their __consumer_offsets partition's leadership
    // (below), as consumer groups do; only __share_group_state is replayed here.
    if (s.replicas) {
      s.shares->start_unowned();
      s.shares->start_state_unowned(s.share_client.get());
    }
    if (auto loaded = s.shares->load(wall_clock_ms()); !loaded) {
      return fail("cannot load the share coordinator's state: " + loaded.error());
    }
    if (s.shares->skipped_state_records() > 0) {
      spdlog::warn("{} record(s) of __share_group_state did not decode and were skipped",
                   s.shares->skipped_state_records());
    }
    if (s.shares->skipped_group_records() > 0) {
      spdlog::warn("{} share-group record(s) of __consumer_offsets did not decode and were skipped",
                   s.shares->skipped_group_records());
    }
    spdlog::info("share coordinator loaded {} share group(s), {} share-partition(s) in {} ms",
                 s.shares->group_count(), s.shares->share_partition_count(),
                 std::chrono::duration_cast<std::chrono::milliseconds>(
                     std::chrono::steady_clock::now() - start)
                     .count());
  }
  if (s.replicas) {
    // Configs recorded on any broker take effect on every one (docs/cluster.md, "Dynamic
    // configs"): broker configs and their replication throttles, topics' copies here, groups'
    // configs (share groups' and consumer groups').
    config_follower::listeners l;
    l.broker_configs = [r = s.replicas.get(), t = s.topics.get(), groups = s.groups.get(),
                        shares = s.shares.get()] {
      r->apply_throttle_configs();
      apply_group_dynamic_configs(*t, groups, shares);  // the assignment intervals
    };
    l.topic_configs = [r = s.replicas.get()] { r->apply_throttle_configs(); };
    l.group_configs = [shares = s.shares.get(), groups = s.groups.get()](
                          const std::string& group, const storage::config_map& configs) {
      apply_group_configs(group, configs, groups, shares);
    };
    s.configs = std::make_unique<config_follower>(*s.topics, s.config, std::move(l));
  }
  if (s.membership) {
    // Every broker of the cluster takes its blocks from the one etcd key, so no two hand out the
    // same id (docs/cluster.md, "Producer ids"). The first block is fetched now, so the first
    // producers are not sent back to retry; if etcd does not answer in time, it is fetched when
    // asked for.
    auto client = cluster::etcd::etcd_client::create(
        {cluster::etcd_endpoint_urls(s.config.etcd_connect), 5000, 1000});
    if (!client) return fail("etcd.connect: " + client.error().message);
    auto blocks = std::make_unique<cluster::producer_id_blocks>(
        std::move(*client), cluster::producer_ids_key(cluster_prefix(s.topics->cluster_id())));
    if (!blocks->wait_for_block(std::chrono::seconds(5))) {
      spdlog::warn(
          "no producer-id block from etcd yet: InitProducerId answers "
          "COORDINATOR_LOAD_IN_PROGRESS until one comes");
    }
    s.producer_ids = make_cluster_producer_ids(std::move(blocks));
  } else {
    s.producer_ids = make_file_producer_ids(s.config.log_dirs.front());
  }
  s.txn_log = std::make_unique<transaction_state_log>(*s.topics, s.config.txn);
  s.txn_markers = std::make_unique<partition_markers>(*s.topics, s.groups.get(), s.replicas.get());
  s.txns = std::make_unique<txn::txn_coordinator>(
      s.config.txn, *s.txn_log, *s.txn_markers,
      [ids = s.producer_ids.get()] { return ids->next(); },
      [topics = s.topics.get()] {
        const cluster::feature_map finalized = finalized_features(topics->metadata());
        auto it = finalized.find("transaction.version");
        return it == finalized.end() ? int16_t{0} : it->second;
      });
  if (s.replicas) {
    // One __transaction_state for the cluster; the coordinator owns the partitions this broker
    // leads, loaded as leadership comes (below), and sends markers to other brokers' partitions
    // (docs/cluster.md, "Coordinators").
    s.txn_log->place_in_cluster({s.replicas.get(), s.membership.get(), s.config.node_id,
                                 s.config.txn.state_log_replication_factor});
    s.txns->start_unowned();
    s.txn_sender = std::make_unique<txn_marker_sender>(s.config, *s.replicas, *s.membership,
                                                       *s.topics, *s.txn_markers);
    s.txns->set_marker_queue(s.txn_sender.get());
    s.txn_sender->start(*s.txns);
    s.verifier = std::make_unique<txn_verifier>(s.config, *s.replicas, *s.membership, *s.txns);
  } else {
    // __transaction_state is small (one compacted record per transactional id): loaded before
    // the listeners open, so no request sees a coordinator still loading.
    const auto start = std::chrono::steady_clock::now();
    if (auto loaded = s.txns->load(wall_clock_ms()); !loaded) {
      return fail("cannot load __transaction_state: " + loaded.error());
    }
    spdlog::info("transaction coordinator loaded {} transactional id(s) in {} ms", s.txns->size(),
                 std::chrono::duration_cast<std::chrono::milliseconds>(
                     std::chrono::steady_clock::now() - start)
                     .count());
  }
  s.quotas = std::make_unique<quota::client_quotas>(quota::quota_windows{
      {s.config.quota_window_num, int64_t{s.config.quota_window_size_seconds} * 1000},
      {s.config.controller_quota_window_num,
       int64_t{s.config.controller_quota_window_size_seconds} * 1000}});
  {
    // Client quotas live in the metadata log: replayed here, and every AlterClientQuotas is
    // appended there (durable) before it takes effect.
    cluster::metadata_store& store = s.topics->metadata();
    for (const auto& [entity, values] : store.client_quotas()) {
      quota::quota_entity e;
      for (const auto& [type, name] : entity) e.parts[type] = name;
      for (const auto& [key, value] : values) s.quotas->apply({e, key, value});
    }
    s.quotas->set_persist(
        [&store](const std::vector<quota::quota_record>& changes) -> std::optional<std::string> {
          std::vector<cluster::client_quota_record> records;
          for (const auto& c : changes) {
            cluster::client_quota_record r;
            for (const auto& [type, name] : c.entity.parts) r.entities.push_back({type, name});
            r.key = c.key;
            r.value = c.value.value_or(0);
            r.remove = !c.value.has_value();
            records.push_back(std::move(r));
          }
          auto done = store.change_client_quotas(std::move(records));
          if (!done) return "writing the metadata log failed: " + done.error().message;
          return std::nullopt;
        });
  }
  s.console = std::make_unique<broker_console>(*s.topics, *s.groups, s.config, s.metrics,
                                               s.replicas.get(), s.membership.get());
  s.services = std::make_unique<broker_services>(broker_services{
      s.config, s.registry, std::move(advertised), s.topics.get(), s.fetch_sessions.get(),
      s.waiters.get(), s.memory.get(), s.groups.get(), s.quotas.get(),
      s.config.http_metrics_request_path_enabled ? &s.metrics : nullptr, s.txns.get()});
  s.services->shares = s.shares.get();
  s.services->membership = s.membership.get();
  s.services->producer_ids = s.producer_ids.get();
  s.services->replicas = s.replicas.get();
  s.services->verifier = s.verifier.get();
  s.control = std::make_unique<control_worker>();
  s.services->control = s.control.get();
  // SCRAM reads the credentials of the metadata log at each authentication, so a user added or
  // changed by AlterUserScramCredentials counts from the next one.
  const security::scram_credential_lookup scram_credentials =
      [store = &s.topics->metadata()](
          security::scram_mechanism m,
          const std::string& user) -> std::optional<security::scram_credential> {
    auto rec = store->scram_credential(user, static_cast<int8_t>(m));
    if (!rec) return std::nullopt;
    return security::scram_credential{rec->salt, rec->stored_key, rec->server_key, rec->iterations};
  };
  for (auto& rt : s.runtimes) rt->scram_credentials = scram_credentials;
  if (s.config.authorizer_enabled) {
    // ACLs live in the metadata log: loaded before the listeners open.
    s.authorizer = std::make_unique<broker_authorizer>(s.config, s.topics->metadata());
    s.services->authorizer = s.authorizer.get();
    spdlog::info("authorizer {} loaded {} ACL(s); super.users: {}",
                 security::standard_authorizer_class, s.authorizer->acls().size(),
                 s.config.super_users.empty()
                     ? std::string("none")
                     : fmt::format("{}", fmt::join(s.config.super_users, ";")));
  }
  s.accept_wakeup = std::make_unique<wakeup>(s.loop0().context.get_executor());

  for (const auto& key : s.config.ignored_keys) {
    spdlog::info(
        "configuration {}={} is accepted for Kafka compatibility and has no effect in "
        "tarn",
        key, s.config.explicitly_set.at(key));
  }
  for (auto& loop : s.loops) {
    if (loop->index == 0) continue;
    loop->thread = std::thread([l = loop.get()] { l->context.run(); });
  }
  // The groups of __consumer_offsets load on a thread of their own, so the listeners open at
  // once; until a partition is loaded the coordinator answers its groups'
  // COORDINATOR_LOAD_IN_PROGRESS.
  if (s.replicas) {
    // In a cluster a partition's groups are this broker's while it leads the partition: loaded
    // when it becomes leader, dropped when it stops (Kafka's onElection/onResignation).
    s.groups->start_unowned(wall_clock_ms());
    s.replicas->watch_leadership(
        std::string(coordinator::offsets_topic_name),
        [g = s.groups.get(), shares = s.shares.get()](int32_t partition, bool leads,
                                                      int32_t /*leader_epoch*/) {
          if (!leads) {
            g->unload_partition(partition, wall_clock_ms());
            shares->unload_group_partition(partition);
            spdlog::info("group coordinator: {}-{} unloaded (no longer its leader)",
                         coordinator::offsets_topic_name, partition);
            return;
          }
          const auto start = std::chrono::steady_clock::now();
          const bool share_groups = shares->load_group_partition(partition, wall_clock_ms());
          if (g->load_partition(partition, wall_clock_ms()) && share_groups) {
            spdlog::info("group coordinator: {}-{} loaded in {} ms",
                         coordinator::offsets_topic_name, partition,
                         std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::steady_clock::now() - start)
                             .count());
          }
        });
    // The share coordinator's state likewise (Kafka's ShareCoordinator.onElection/onResignation).
    s.replicas->watch_leadership(
        std::string(coordinator::share_group_state_topic_name),
        [shares = s.shares.get()](int32_t partition, bool leads, int32_t /*leader_epoch*/) {
          if (!leads) {
            shares->unload_state_partition(partition);
            spdlog::info("share coordinator: {}-{} unloaded (no longer its leader)",
                         coordinator::share_group_state_topic_name, partition);
            return;
          }
          if (shares->load_state_partition(partition, wall_clock_ms())) {
            spdlog::info("share coordinator: {}-{} loaded",
                         coordinator::share_group_state_topic_name, partition);
          }
        });
    // The transaction coordinator likewise, at the partition's leader epoch as its coordinator
    // epoch (Kafka's TransactionCoordinator.onElection/onResignation).
    s.replicas->watch_leadership(
        std::string(txn::transaction_state_topic_name),
        [t = s.txns.get()](int32_t partition, bool leads, int32_t leader_epoch) {
          if (!leads) {
            t->unload_partition(partition);
            spdlog::info("transaction coordinator: {}-{} unloaded (no longer its leader)",
                         txn::transaction_state_topic_name, partition);
            return;
          }
          if (t->load_partition(partition, leader_epoch, wall_clock_ms())) {
            spdlog::info("transaction coordinator: {}-{} loaded at coordinator epoch {}",
                         txn::transaction_state_topic_name, partition, leader_epoch);
          }
        });
  } else {
    s.groups_loader = std::thread([g = s.groups.get()] {
      const auto start = std::chrono::steady_clock::now();
      g->load(wall_clock_ms());
      spdlog::info("group coordinator loaded in {} ms",
                   std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::steady_clock::now() - start)
                       .count());
    });
  }
  asio::co_spawn(s.loop0().context, s.group_poller(), asio::detached);
  for (auto& listener : s.acceptors) {
    asio::co_spawn(s.loop0().context, s.accept_loop(listener), asio::detached);
  }
  // Kafka's kafka-log-flusher task runs every log.flush.scheduler.interval.ms; tarn also runs
  // it every log.flush.interval.ms when only that is set, so that setting alone takes effect.
  const int64_t flush_tick_ms =
      std::min(s.config.log_flush_scheduler_interval_ms, s.config.log_flush_interval_ms);
  if (flush_tick_ms < INT64_MAX) {
    asio::co_spawn(s.loop0().context,
                   s.log_flusher(std::chrono::milliseconds(std::max<int64_t>(flush_tick_ms, 1))),
                   asio::detached);
  }
  s.signals = std::make_unique<asio::signal_set>(s.loop0().context, SIGTERM, SIGINT);
  s.signals->async_wait([&s](const asio::error_code& ec, int signal_number) {
    if (ec) return;
    asio::co_spawn(s.loop0().context, s.shutdown(signal_number == SIGTERM ? "SIGTERM" : "SIGINT"),
                   asio::detached);
  });
  s.started.store(true, std::memory_order_release);
  for (const auto& b : s.bound) spdlog::info("listening on {}", b.to_string());
  spdlog::info("broker {} started: {} event loop(s), advertising {}", s.config.node_id,
               s.loops.size(), s.services->advertised_listeners.front().to_string());
  return {};
}

int server::run() {
  auto& s = *impl_;
  s.loop0_thread = pthread_self();
  s.loop0_thread_known.store(true, std::memory_order_release);
  // The acceptors were bound in start(); they accept once loop 0 runs, which is now.
  asio::post(s.loop0().context, [&s] { s.ready.store(!s.shutdown_begun); });
  s.loop0().context.run();
  s.ready.store(false);
  for (auto& loop : s.loops) {
    if (loop->thread.joinable()) loop->thread.join();
  }
  s.join_groups_loader();
  // A topic creation a handler handed over before the loops stopped finishes first.
  if (s.control) s.control->join();
  if (s.txn_sender) s.txn_sender->stop();  // it writes through the replica manager's states
  if (s.verifier) s.verifier->stop();      // it reads them
  if (s.share_client) s.share_client->stop();
  s.configs.reset();  // it calls into the replica manager
  // Leave the cluster: revoking the lease removes the registration (and gives up the controller
  // role) at once, so the others need not wait for the session timeout.
  {
    std::lock_guard g(s.replicas_mu);
    s.replicas.reset();
  }
  // The marker holds the broker epoch (Kafka's), which the next registration presents as its
  // previous one (KIP-966: a clean shutdown keeps the broker's ELR places).
  const int64_t broker_epoch = s.membership ? s.membership->broker_epoch() : -1;
  s.membership.reset();
  // Everything that writes to the log directory has stopped: the marker can go down.
  if (auto r = s.topics->shutdown(broker_epoch); !r) {
    spdlog::error("shutdown: {}", r.error());
    return 1;
  }
  if (s.fenced.load()) {
    spdlog::error("shut down after losing the cluster registration (fenced)");
    return 1;
  }
  spdlog::info("shut down cleanly");
  return 0;
}

void server::request_shutdown() {
  auto& s = *impl_;
  asio::post(s.loop0().context,
             [&s] { asio::co_spawn(s.loop0().context, s.shutdown("requested"), asio::detached); });
}

// Registers this broker in the cluster (docs/cluster.md). A broker whose session is lost is
// fenced, as Kafka's broker that misses its heartbeats (KIP-841): it stays up, leads nothing and
// controls nothing, registers again with a new broker epoch as soon as etcd answers, then takes
// the roles the partition states give it (its followers catch up and the leaders take them back
// into their ISRs). Only a broker that cannot register again because another live broker took
// its node.id meanwhile shuts down, cleanly, with exit code 1.
result<void, std::string> server::impl::join_cluster(
    const std::vector<listener_endpoint>& advertised) {
  cluster::membership_options o;
  o.session.client.endpoints = cluster::etcd_endpoint_urls(config.etcd_connect);
  o.session.session_timeout_ms = config.broker_session_timeout_ms;
  o.session.heartbeat_interval_ms = config.broker_heartbeat_interval_ms;
  o.prefix = cluster_prefix(topics->cluster_id());
  o.self.node_id = config.node_id;
  o.self.incarnation_id = storage::uuid::random().to_string();
  for (const auto& l : advertised) o.self.listeners.push_back({l.name, l.host, l.port});
  o.self.rack = config.broker_rack;
  o.self.previous_broker_epoch = topics->clean_shutdown_broker_epoch();
  cluster::membership_events events;
  events.fenced = [this](const std::string& why) {
    spdlog::warn(
        "cluster session lost ({}): broker {} is fenced: it leads nothing until it registers "
        "again",
        why, config.node_id);
    std::lock_guard g(replicas_mu);
    if (replicas) replicas->fence();
  };
  events.unfenced = [this](int64_t broker_epoch) {
    spdlog::info("broker {} registered again (broker epoch {}): unfenced", config.node_id,
                 broker_epoch);
    // The states are read without replicas_mu, which a metrics scrape takes too.
    const auto states = replica_manager::read_states(config, cluster_prefix(topics->cluster_id()));
    std::lock_guard g(replicas_mu);
    if (replicas) replicas->unfence(states);
  };
  events.fatal = [this](const std::string& why) {
    spdlog::error("{}: broker {} shuts down", why, config.node_id);
    fenced.store(true);
    asio::post(loop0().context,
               [this] { asio::co_spawn(loop0().context, shutdown("fenced"), asio::detached); });
  };
  auto joined = cluster::cluster_membership::join(o, std::move(events));
  if (!joined) return fail(joined.error());
  membership = std::move(*joined);
  spdlog::info("broker {} registered in cluster {} (broker epoch {}), {} live broker(s)",
               config.node_id, topics->cluster_id(), membership->broker_epoch(),
               membership->live_brokers().size());
  return {};
}

event_loop& server::impl::pick_loop() {
  // The loop with the fewest connections; ties go round-robin so a burst spreads evenly.
  size_t best = next_loop % loops.size();
  for (size_t k = 1; k < loops.size(); ++k) {
    size_t i = (next_loop + k) % loops.size();
    if (loops[i]->connection_count.load(std::memory_order_relaxed) <
        loops[best]->connection_count.load(std::memory_order_relaxed)) {
      best = i;
    }
  }
  next_loop = best + 1;
  return *loops[best];
}

int server::impl::connection_limit_for(const std::string& ip) const {
  auto it = config.max_connections_per_ip_overrides.find(ip);
  return it != config.max_connections_per_ip_overrides.end() ? it->second
                                                             : config.max_connections_per_ip;
}

asio::awaitable<void> server::impl::accept_loop(listener_socket& listener) {
  asio::steady_timer backoff(loop0().context);
  while (!stopping) {
    // max.connections: like Kafka, stop accepting (the kernel backlog holds new clients) until
    // a connection closes.
    while (total_connections.load() >= config.max_connections && !stopping) {
      co_await accept_wakeup->wait();
    }
    if (stopping) break;
    event_loop& target = pick_loop();
    asio::error_code ec;
    asio::ip::tcp::socket socket = co_await listener.acceptor->async_accept(
        target.context, asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
      if (stopping) break;
      // Out of file descriptors and the like: say so and retry shortly instead of spinning.
      spdlog::warn("accept on {} failed: {}", listener.endpoint.to_string(), ec.message());
      backoff.expires_after(std::chrono::milliseconds(100));
      co_await backoff.async_wait(asio::redirect_error(asio::use_awaitable, ec));
      continue;
    }
    // Another listener's accept loop may have taken the last slot while this one waited in
    // async_accept: hold the accepted socket unserved until a slot frees, as Kafka's acceptor
    // waits in ConnectionQuotas.inc after accept(). Without this each listener overshot
    // max.connections by one.
    while (total_connections.load() >= config.max_connections && !stopping) {
      co_await accept_wakeup->wait();
    }
    if (stopping) break;
    auto peer = socket.remote_endpoint(ec);
    if (ec) continue;  // the client already went away
    std::string ip = peer.address().to_string();
    int& count = connections_per_ip[ip];
    if (count >= connection_limit_for(ip)) {
      spdlog::info(
          "rejected connection from {}: it already has {} connection(s) "
          "(max.connections.per.ip)",
          ip, count);
      if (count == 0) connections_per_ip.erase(ip);
      continue;  // the socket closes as it goes out of scope
    }
    ++count;
    total_connections.fetch_add(1);
    std::shared_ptr<asio::ssl::context> tls;
    if (listener.runtime != nullptr && listener.runtime->tls) {
      maybe_reload_tls(*listener.runtime);
      tls = listener.runtime->tls;
    }
    target.connection_count.fetch_add(1, std::memory_order_relaxed);
    socket.set_option(asio::ip::tcp::no_delay(true), ec);
    if (config.socket_send_buffer_bytes != -1) {
      socket.set_option(asio::socket_base::send_buffer_size(config.socket_send_buffer_bytes), ec);
    }
    connection_info info{next_connection_id.fetch_add(1) + 1, fmt::format("{}:{}", ip, peer.port()),
                         listener.endpoint.name};
    asio::post(target.context,
               [this, &target, socket = std::move(socket), info = std::move(info),
                ip = std::move(ip), runtime = listener.runtime, tls = std::move(tls)]() mutable {
                 start_connection(target, std::move(socket), std::move(info), std::move(ip),
                                  runtime, std::move(tls));
               });
  }
}

void server::impl::start_connection(event_loop& loop, asio::ip::tcp::socket socket,
                                    connection_info info, std::string ip,
                                    const listener_runtime* runtime,
                                    std::shared_ptr<asio::ssl::context> tls) {
  spdlog::debug("connection {} from {} on {} served by loop {}", info.id, info.peer, info.listener,
                loop.index);
  uint64_t id = info.id;
  auto c = std::make_shared<connection>(
      std::move(socket), std::move(info), *services,
      [this, &loop, ip = std::move(ip)](connection& closed) {
        connection_closed(loop, closed, ip);
      },
      runtime, std::move(tls));
  loop.connections.emplace(id, c);
  c->start();
  if (loop.draining) c->stop_reading();  // shutdown began while the socket was on its way
}

void server::impl::connection_closed(event_loop& loop, connection& c, const std::string& ip) {
  loop.connections.erase(c.info().id);
  loop.connection_count.fetch_sub(1, std::memory_order_relaxed);
  asio::post(loop0().context, [this, ip] {
    if (--connections_per_ip[ip] <= 0) connections_per_ip.erase(ip);
    total_connections.fetch_sub(1);
    accept_wakeup->notify();
  });
}

asio::awaitable<void> server::impl::log_flusher(std::chrono::milliseconds interval) {
  asio::steady_timer timer(loop0().context);
  while (!stopping) {
    timer.expires_after(interval);
    asio::error_code ec;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (stopping) break;
    auto guard = topics->read_lock();  // flush_dirty_logs takes each log's mutex in turn
    const auto flush_start = std::chrono::steady_clock::now();
    if (auto r = topics->logs().flush_dirty_logs(wall_clock_ms()); !r) {
      spdlog::error("log flush failed: {}", r.error().message);
    }
    metrics.log_flush_time.record_us(
        static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                  std::chrono::steady_clock::now() - flush_start)
                                  .count()));
  }
}

// The group coordinator's timers (session timeouts, rebalance deadlines, offset expiry), on loop
// 0. Appends they make take the topic manager's lock like any handler's. It keeps running during
// a clean shutdown's drain, so a JoinGroup in flight can still complete and be answered; it ends
// with loop 0, before the logs close.
asio::awaitable<void> server::impl::group_poller() {
  asio::steady_timer timer(loop0().context);
  for (;;) {
    timer.expires_after(group_poll_interval);
    asio::error_code ec;
    co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    const int64_t now = wall_clock_ms();
    groups->poll(now);
    shares->poll(now);  // share-group member session timeouts, acquisition-lock expiry
    // transaction.abort.timed.out.transaction.cleanup.interval.ms
    if (now - last_txn_abort_check_ms >= config.txn.abort_timed_out_interval_ms) {
      last_txn_abort_check_ms = now;
      if (int32_t n = txns->abort_timed_out(now); n > 0) {
        spdlog::info("aborted {} transaction(s) past their transaction.timeout.ms", n);
      }
    }
    // transaction.remove.expired.transaction.cleanup.interval.ms
    if (last_txn_expire_check_ms < 0) last_txn_expire_check_ms = now;
    if (now - last_txn_expire_check_ms >= config.txn.remove_expired_interval_ms) {
      last_txn_expire_check_ms = now;
      if (int32_t n = txns->remove_expired(now); n > 0) {
        spdlog::info("removed {} transactional id(s) unused for transactional.id.expiration.ms", n);
      }
    }
  }
}

void server::impl::join_groups_loader() {
  if (groups_loader.joinable()) groups_loader.join();
}

asio::awaitable<void> server::impl::shutdown(std::string reason) {
  if (shutdown_begun) co_return;
  shutdown_begun = true;
  ready.store(false);
  signals->cancel();
  // In a cluster, leaderships move before the listeners close, so that clients are told where
  // the partitions went (NOT_LEADER_OR_FOLLOWER with KIP-951's hints) rather than lose the
  // connection and wait for a session timeout. Not when fenced: the cluster has let it go.
  if (membership && replicas && config.controlled_shutdown_enable && !fenced.load()) {
    co_await controlled_shutdown();
  }
  stopping = true;
  spdlog::info("shutting down ({}): closing listeners, answering requests in flight", reason);
  for (auto& l : acceptors) {
    asio::error_code ec;
    l.acceptor->close(ec);
  }
  accept_wakeup->notify();
  for (auto& loop : loops) {
    asio::post(loop->context, [l = loop.get()] {
      l->draining = true;
      std::vector<std::shared_ptr<connection>> open;
      for (auto& [id, c] : l->connections) open.push_back(c);
      for (auto& c : open) c->stop_reading();
    });
  }
  // JoinGroups and SyncGroups waiting for a rebalance are answered NOT_COORDINATOR now rather
  // than holding the drain until their rebalance ends.
  groups->shutdown(wall_clock_ms());
  // Wait for the connections to finish what they read. Polling is fine here: it runs once.
  asio::steady_timer timer(loop0().context);
  const auto deadline = std::chrono::steady_clock::now() + shutdown_drain_timeout;
  while (total_connections.load() > 0 && std::chrono::steady_clock::now() < deadline) {
    timer.expires_after(std::chrono::milliseconds(2));
    co_await timer.async_wait(asio::use_awaitable);
  }
  if (int left = total_connections.load(); left > 0) {
    spdlog::warn("shutdown: {} connection(s) still busy after {} s; closing them", left,
                 shutdown_drain_timeout.count());
    for (auto& loop : loops) {
      asio::post(loop->context, [l = loop.get()] {
        std::vector<std::shared_ptr<connection>> open;
        for (auto& [id, c] : l->connections) open.push_back(c);
        for (auto& c : open) c->close("shutdown timeout");
      });
    }
  }
  // Stop every loop; loop 0 (this one) returns from run() and run() finishes the shutdown.
  for (auto& loop : loops) {
    event_loop* l = loop.get();
    asio::post(l->context, [l] {
      l->work.reset();
      l->context.stop();
    });
  }
}

// Kafka's controlled shutdown under KRaft (BrokerLifecycleManager.beginControlledShutdown): the
// broker tells the controller it is stopping, the controller moves its leaderships away and takes
// it out of the ISRs (KIP-841), and the broker goes on serving until it leads nothing. Here the
// telling is a flag in the broker's registration in etcd (cluster_membership::
// begin_controlled_shutdown) and the waiting watches the partition states this broker follows.
asio::awaitable<void> server::impl::controlled_shutdown() {
  const auto started = std::chrono::steady_clock::now();
  spdlog::info(
      "controlled shutdown: broker {} leads {} partition(s); asking the controller to "
      "move them",
      config.node_id, replicas->leaderships());
  asio::steady_timer timer(loop0().context);
  // The etcd request on a thread of its own: loop 0 goes on serving its connections meanwhile.
  auto begun =
      std::async(std::launch::async, [this] { return membership->begin_controlled_shutdown(); });
  while (begun.wait_for(std::chrono::seconds(0)) != std::future_status::ready) {
    timer.expires_after(std::chrono::milliseconds(2));
    co_await timer.async_wait(asio::use_awaitable);
  }
  if (auto r = begun.get(); !r) {
    spdlog::warn("controlled shutdown: {}; shutting down without it", r.error());
    co_return;
  }
  const auto deadline = started + controlled_shutdown_timeout;
  while (replicas->leaderships() > 0 && std::chrono::steady_clock::now() < deadline &&
         !fenced.load()) {
    timer.expires_after(std::chrono::milliseconds(5));
    co_await timer.async_wait(asio::use_awaitable);
  }
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - started)
                        .count();
  if (int32_t left = replicas->leaderships(); left > 0) {
    spdlog::warn("controlled shutdown: still leading {} partition(s) after {} ms; shutting down",
                 left, took);
  } else {
    spdlog::info("controlled shutdown: leads no partition after {} ms", took);
  }
}

namespace {

// CPU time a thread has used, from its POSIX CPU clock; -1 if unavailable.
int64_t thread_cpu_ns(pthread_t thread) {
  clockid_t clock{};
  if (pthread_getcpuclockid(thread, &clock) != 0) return -1;
  timespec ts{};
  if (clock_gettime(clock, &ts) != 0) return -1;
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace

console_backend& server::console() { return *impl_->console; }

broker_snapshot server::snapshot(const snapshot_options& options) const {
  auto& s = *impl_;
  broker_snapshot out;
  out.node_id = s.config.node_id;
  out.ready = s.ready.load();
  out.uptime_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - s.started_at)
                      .count();
  out.metrics = &s.metrics;
  if (!s.started.load(std::memory_order_acquire)) return out;
  out.listeners = s.bound;
  out.log_dir = s.dir ? s.dir->path() : std::string();
  std::error_code ec;
  auto space = std::filesystem::space(out.log_dir, ec);
  if (!ec) {
    out.log_dir_total_bytes = static_cast<int64_t>(space.capacity);
    out.log_dir_free_bytes = static_cast<int64_t>(space.available);
  }
  out.active_connections = s.total_connections.load(std::memory_order_relaxed);
  for (const auto& loop : s.loops) {
    out.loop_connections.push_back(loop->connection_count.load(std::memory_order_relaxed));
  }
  for (const auto& range : s.registry.advertised()) {
    const auto* api = protocol::find_api(range.api_key);
    out.apis.push_back(
        {range.api_key, api ? std::string(api->name) : "ApiKey" + std::to_string(range.api_key)});
  }
  if (s.memory) {
    out.request_memory_used_bytes = s.memory->used_bytes();
    out.request_memory_limit_bytes = s.config.queued_max_request_bytes;
  }

  // Network idle ratio: the share of wall time each loop's thread was off the CPU since the
  // previous sample (at least 100 ms apart, so that back-to-back scrapes agree).
  {
    std::lock_guard lock(s.idle_mu);
    const auto now = std::chrono::steady_clock::now();
    if (s.idle.cpu_ns.empty() || now - s.idle.at >= std::chrono::milliseconds(100)) {
      std::vector<int64_t> cpu;
      for (const auto& loop : s.loops) {
        if (loop->index == 0) {
          cpu.push_back(s.loop0_thread_known.load(std::memory_order_acquire)
                            ? thread_cpu_ns(s.loop0_thread)
                            : -1);
        } else {
          cpu.push_back(loop->thread.joinable()
                            ? thread_cpu_ns(const_cast<std::thread&>(loop->thread).native_handle())
                            : -1);
        }
      }
      std::vector<double> ratio(cpu.size(), 1.0);
      const double wall_ns = static_cast<double>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(now - s.idle.at).count());
      for (size_t i = 0; i < cpu.size(); ++i) {
        if (s.idle.cpu_ns.size() == cpu.size() && cpu[i] >= 0 && s.idle.cpu_ns[i] >= 0 &&
            wall_ns > 0) {
          const double busy = static_cast<double>(cpu[i] - s.idle.cpu_ns[i]) / wall_ns;
          ratio[i] = std::clamp(1.0 - busy, 0.0, 1.0);
        }
      }
      s.idle = {now, std::move(cpu), std::move(ratio)};
    }
    out.network_idle_ratio = s.idle.ratio;
  }

  if (options.partitions && s.topics) {
    // Shared: a scrape walks every partition, and appends must not wait for it. Each log's
    // mutex is held only while its segments are summed.
    auto guard = s.topics->read_lock();
    std::vector<std::string> names;
    for (const auto* t : s.topics->logs().topics()) names.push_back(t->name);
    out.topic_count = static_cast<int32_t>(names.size());
    for (auto& [name, cells] : s.metrics.topics_snapshot(names)) {
      out.topics.emplace_back(name, std::move(cells));
    }
    for (const auto& [tp, log] : s.topics->logs().all_logs()) {
      partition_snapshot p;
      p.topic = tp.topic;
      p.partition = static_cast<int32_t>(tp.partition);
      p.log_start_offset = static_cast<int64_t>(log->log_start_offset());
      p.log_end_offset = static_cast<int64_t>(log->log_end_offset());
      p.high_watermark = static_cast<int64_t>(log->high_watermark());
      {
        std::lock_guard log_lock(log->mutex());
        p.size_bytes = log->size_bytes();
      }
      out.partitions.push_back(std::move(p));
    }
    if (const auto* cleaner = s.topics->logs().cleaner(); cleaner && cleaner->enabled()) {
      out.cleaner = cleaner->metrics(std::chrono::duration_cast<std::chrono::milliseconds>(
                                         std::chrono::system_clock::now().time_since_epoch())
                                         .count());
    }
  }
  // all_logs() walks the partition map in (topic, partition) order already: checking costs one
  // comparison a partition, sorting 10,000 of them a fifth of a scrape.
  auto by_topic_partition = [](const partition_snapshot& a, const partition_snapshot& b) {
    return std::tie(a.topic, a.partition) < std::tie(b.topic, b.partition);
  };
  if (!std::is_sorted(out.partitions.begin(), out.partitions.end(), by_topic_partition)) {
    std::sort(out.partitions.begin(), out.partitions.end(), by_topic_partition);
  }
  {
    std::lock_guard g(s.replicas_mu);
    if (s.replicas) out.replication = s.replicas->gauges();
  }
  if (options.committed_offsets && s.groups) {
    for (auto& c : s.groups->committed_offsets()) {
      out.committed_offsets.push_back(
          {std::move(c.group), std::move(c.topic), c.partition, c.offset});
    }
    for (auto& g : s.groups->group_member_counts()) {
      out.group_members.push_back({std::move(g.group), g.members});
    }
  }
  return out;
}

}  // namespace tarn::broker
