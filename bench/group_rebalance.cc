// group_rebalance: the classic consumer-group protocol timed from the client side, the same
// program against any broker (scripts/bench runs it against tarn and Apache Kafka in turn).
//
//   group_rebalance rebalance --bootstrap-server H:P --members N [--rounds R] [--warmup-rounds W]
//                   [--heartbeat-interval-ms MS] [--topic T] [--topic-partitions P]
//   group_rebalance commit --bootstrap-server H:P --group-mode simple|member --partitions P
//                   [--connections C] [--in-flight K] [--seconds S] [--warmup-seconds W]
//                   [--topic T] [--topic-partitions TP]
//
// One connection per member, all driven by one thread (asio, non-blocking, pipelined). Every
// member is a real classic member of protocol type "consumer": JoinGroup v9 (first with no
// member id, answered MEMBER_ID_REQUIRED, then with the id it was given), the leader's "range"
// assignment of topic T (created with P partitions if it does not exist) in SyncGroup v5,
// Heartbeat v4, and a rejoin on REBALANCE_IN_PROGRESS / ILLEGAL_GENERATION from SyncGroup or
// Heartbeat; UNKNOWN_MEMBER_ID rejoins without an id. Any other error ends the run (exit 1).
//
// rebalance: each round uses a new group and N new members.
//   form: the N members get their ids (not timed), then all send JoinGroup with them. Timed from
//         the moment the last of the N JoinGroups is written until every member holds a
//         SyncGroup answer (error 0) of one generation. With group.initial.rebalance.delay.ms=0
//         a group may go through several generations before all N are in one (the first join
//         can complete alone); `form_generation` says how many.
//   join: one more member gets its id, then sends JoinGroup with it, which starts a rebalance of
//         the stable group: timed from that send until all N+1 hold a SyncGroup answer of the
//         next generation. The N learn of the rebalance from Heartbeat.
//   While a phase is timed, a member in a stable group heartbeats back to back (the next
//   Heartbeat when the previous one is answered; --heartbeat-interval-ms waits between them
//   instead), so it learns of a rebalance one round trip after the coordinator starts it rather
//   than a consumer's heartbeat.interval.ms (3 s) later. Between phases nobody heartbeats (the
//   session timeout is 30 s). A round ends with one LeaveGroup of all its members.
//   Output: a line per counted round (round=I form_ms=... join_ms=...), then a summary line of
//   the medians (members=N rounds=R form_ms=... join_ms=...).
//
// commit: C connections commit offsets to one group as fast as they can, each keeping K
//   OffsetCommit v9 requests in flight. Each commits P partitions of T (0..P-1), every offset one
//   higher than its last. --group-mode simple: generation -1 and no member id (a group used for
//   offsets only, as assign() consumers commit); member: the C connections are first the members
//   of one stable group and commit with their member id and generation. W seconds are not
//   counted, then S seconds are: commits answered within them (every partition error 0, or the
//   run fails), and the latency of the requests sent within them, send to answer.
//   Output: commits=... commits_per_s=... partitions_per_s=... p50_ms=... p99_ms=...
//   client_cpu_s=... (the process's user + system CPU within the counted seconds)
//   total_commits=... (all answered, the uncounted seconds too).
#include <sys/resource.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <asio.hpp>
#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "client/connection.h"
#include "client/consumer_protocol.h"
#include "client/range_assignor.h"
#include "client/wire.h"
#include "protocol/error_codes.h"
#include "protocol/messages/create_topics_request.h"
#include "protocol/messages/create_topics_response.h"
#include "protocol/messages/find_coordinator_request.h"
#include "protocol/messages/find_coordinator_response.h"
#include "protocol/messages/heartbeat_request.h"
#include "protocol/messages/heartbeat_response.h"
#include "protocol/messages/join_group_request.h"
#include "protocol/messages/join_group_response.h"
#include "protocol/messages/leave_group_request.h"
#include "protocol/messages/leave_group_response.h"
#include "protocol/messages/offset_commit_request.h"
#include "protocol/messages/offset_commit_response.h"
#include "protocol/messages/sync_group_request.h"
#include "protocol/messages/sync_group_response.h"

namespace {

using namespace tarn;
using protocol::error_code;
using steady = std::chrono::steady_clock;
using frame = std::vector<uint8_t>;

constexpr std::string_view client_id = "group_rebalance";
constexpr std::string_view protocol_type = "consumer";

// The versions this program speaks; the broker must support each (Kafka 4.4 and tarn do).
constexpr int16_t join_version = 9;
constexpr int16_t sync_version = 5;
constexpr int16_t heartbeat_version = 4;
constexpr int16_t leave_version = 5;
constexpr int16_t commit_version = 9;  // v10 names topics by id
constexpr int16_t find_coordinator_version = 4;
constexpr int16_t create_topics_version = 7;

struct options {
  std::string bootstrap_server;
  std::string topic = "group-bench";
  int topic_partitions = 50;
  std::string group_prefix;
  int64_t timeout_ms = 120'000;
  // rebalance
  int members = 10;
  int rounds = 5;
  int warmup_rounds = 1;
  int heartbeat_interval_ms = 0;
  // commit
  std::string group_mode = "simple";
  int partitions = 1;
  int connections = 1;
  int in_flight = 8;
  double seconds = 2;
  double warmup_seconds = 0.5;
};

std::string error_text(int16_t c) {
  const auto* info = protocol::find_error(c);
  return std::to_string(c) + (info ? " " + std::string(info->name) : std::string());
}

double ms_between(steady::time_point a, steady::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double percentile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  return sorted[std::min(sorted.size() - 1, static_cast<size_t>(p * sorted.size()))];
}

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  auto secs = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
  return secs(u.ru_utime) + secs(u.ru_stime);
}

// A wake-up for coroutines on the one thread: wait() returns at the next notify(). Waiters check
// their condition in a loop around it; nothing runs between the check and the wait.
class event {
 public:
  explicit event(asio::io_context& io) : timer_(io, steady::time_point::max()) {}
  void notify() { timer_.cancel(); }
  asio::awaitable<void> wait() {
    std::error_code ec;  // operation_aborted is the wake-up
    co_await timer_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  }

 private:
  asio::steady_timer timer_;
};

asio::awaitable<void> sleep_ms(int ms) {
  asio::steady_timer t(co_await asio::this_coro::executor, std::chrono::milliseconds(ms));
  std::error_code ec;
  co_await t.async_wait(asio::redirect_error(asio::use_awaitable, ec));
}

// One connection to the broker (tarn's client connection: ApiVersions, in-order pipelining).
struct link {
  std::shared_ptr<client::broker_connection> conn;
};

// What a request's callback leaves for the coroutine that waits for it.
struct reply_slot {
  explicit reply_slot(asio::io_context& io) : wake(io) {}
  event wake;
  bool done = false;
  std::string error;
  frame bytes;
};

// Sends `request` and waits for its answer, decoded into `out` (which borrows `buffer`). Returns
// why it failed, or "". `sent_at`, if given, gets the time the request was handed to the socket.
template <class Response, class Request>
asio::awaitable<std::string> call(asio::io_context& io, link& l, const Request& request,
                                  int16_t version, frame& buffer, Response& out,
                                  steady::time_point* sent_at = nullptr) {
  auto slot = std::make_shared<reply_slot>(io);
  l.conn->send([&](int32_t id) { return client::frame_request(request, version, id, client_id); },
               true,
               [slot](result<std::span<const uint8_t>, std::string> response) {
                 if (response) {
                   slot->bytes.assign(response->begin(), response->end());
                 } else {
                   slot->error = response.error();
                 }
                 slot->done = true;
                 slot->wake.notify();
               });
  if (sent_at) *sent_at = steady::now();
  while (!slot->done) co_await slot->wake.wait();
  if (!slot->error.empty()) co_return std::string(Request::kafka_name) + ": " + slot->error;
  buffer = std::move(slot->bytes);
  auto decoded = client::decode_response<Response>(buffer, version);
  if (!decoded) co_return decoded.error();
  out = std::move(*decoded);
  co_return std::string();
}

asio::awaitable<std::string> connect(asio::io_context& io, link& l, const options& o) {
  const auto colon = o.bootstrap_server.rfind(':');
  if (colon == std::string::npos) co_return std::string("--bootstrap-server must be host:port");
  client::broker_address address{
      o.bootstrap_server.substr(0, colon),
      static_cast<uint16_t>(std::stoi(o.bootstrap_server.substr(colon + 1)))};
  l.conn = std::make_shared<client::broker_connection>(io, -1, address, std::string(client_id),
                                                       std::chrono::milliseconds(o.timeout_ms),
                                                       std::chrono::milliseconds(30'000));
  auto slot = std::make_shared<reply_slot>(io);
  l.conn->connect([slot](const std::string* error) {
    if (error) slot->error = *error;
    slot->done = true;
    slot->wake.notify();
  });
  while (!slot->done) co_await slot->wake.wait();
  if (!slot->error.empty()) co_return slot->error;
  const std::pair<int16_t, int16_t> needed[] = {
      {protocol::join_group_request::api_key, join_version},
      {protocol::sync_group_request::api_key, sync_version},
      {protocol::heartbeat_request::api_key, heartbeat_version},
      {protocol::leave_group_request::api_key, leave_version},
      {protocol::offset_commit_request::api_key, commit_version},
      {protocol::find_coordinator_request::api_key, find_coordinator_version},
      {protocol::create_topics_request::api_key, create_topics_version}};
  for (auto [key, version] : needed) {
    if (l.conn->version_for(key, version, version) != version) {
      co_return "the broker does not serve API " + std::to_string(key) + " v" +
          std::to_string(version);
    }
  }
  co_return std::string();
}

asio::awaitable<std::string> create_topic(asio::io_context& io, link& l, const options& o) {
  protocol::create_topics_request request;
  request.timeout_ms = 30'000;
  auto& t = request.topics.emplace_back();
  t.name = o.topic;
  t.num_partitions = o.topic_partitions;
  t.replication_factor = 1;
  frame buffer;
  protocol::create_topics_response response;
  auto e = co_await call(io, l, request, create_topics_version, buffer, response);
  if (!e.empty()) co_return e;
  for (const auto& r : response.topics) {
    if (r.error_code != 0 && r.error_code != code(error_code::topic_already_exists)) {
      co_return "CreateTopics " + o.topic + ": error " + error_text(r.error_code);
    }
  }
  co_return std::string();
}

// Waits until the broker says it coordinates `group` (Kafka creates __consumer_offsets at the
// first FindCoordinator and answers COORDINATOR_NOT_AVAILABLE until it is loaded).
asio::awaitable<std::string> find_coordinator(asio::io_context& io, link& l,
                                              const std::string& group, steady::time_point until) {
  for (;;) {
    protocol::find_coordinator_request request;
    request.key_type = 0;
    request.coordinator_keys.push_back(group);
    frame buffer;
    protocol::find_coordinator_response response;
    auto e = co_await call(io, l, request, find_coordinator_version, buffer, response);
    if (!e.empty()) co_return e;
    int16_t err = response.coordinators.empty() ? code(error_code::coordinator_not_available)
                                                : response.coordinators[0].error_code;
    if (err == 0) co_return std::string();
    if (!protocol::is_retriable(error_code{err}) || steady::now() > until) {
      co_return "FindCoordinator " + group + ": error " + error_text(err);
    }
    co_await sleep_ms(50);
  }
}

// ---- members -------------------------------------------------------------------------------

struct member {
  link l;
  std::string member_id;
  int32_t generation = -1;
  int32_t synced_generation = -1;  // -1 unless the member holds a current SyncGroup answer
  bool running = false;            // its coroutine (run_member) is alive
  bool first_join = false;         // its next JoinGroup is one of those that start the clock
};

// The group the members of one round share, and what the driver waits for.
struct group_state {
  explicit group_state(asio::io_context& io) : changed(io), heartbeat_wake(io) {}
  std::string group_id;
  const options* o = nullptr;
  int32_t session_timeout_ms = 30'000;
  std::vector<member*> members;  // the members that count towards "settled"
  event changed;                 // a member synced, stopped, or the run failed
  event heartbeat_wake;          // a timed phase started, or the members must stop
  bool timed = false;            // stable members heartbeat (a phase is being timed)
  bool stopping = false;         // members stop at their next step
  std::string error;
  // Counted per phase by the driver.
  int joins_sent = 0;
  int expected_joins = 0;  // the joins that start the clock
  steady::time_point started_at;
  steady::time_point settled_at;
  int64_t requests = 0;

  void fail(std::string why) {
    if (error.empty()) error = std::move(why);
    changed.notify();
    heartbeat_wake.notify();
  }
  // Every counted member holds a SyncGroup answer of one generation.
  std::optional<int32_t> settled_generation() const {
    if (members.empty()) return std::nullopt;
    const int32_t g = members.front()->synced_generation;
    if (g < 0) return std::nullopt;
    for (const auto* m : members) {
      if (m->synced_generation != g) return std::nullopt;
    }
    return g;
  }
};

std::vector<uint8_t> subscription_bytes(const options& o) {
  client::consumer_subscription s;
  s.topics = {o.topic};
  return client::encode_subscription(s);
}

asio::awaitable<std::string> join_once(asio::io_context& io, group_state& g, member& m,
                                       frame& buffer, protocol::join_group_response& out,
                                       const std::vector<uint8_t>& metadata) {
  protocol::join_group_request join;
  join.group_id = g.group_id;
  join.session_timeout_ms = g.session_timeout_ms;
  join.rebalance_timeout_ms = 30'000;
  join.member_id = m.member_id;
  join.protocol_type = protocol_type;
  join.protocols.push_back({client::range_assignor_name, metadata});
  ++g.requests;
  bool starts_clock = false;  // the last of the joins the clock waits for
  if (m.first_join) {
    m.first_join = false;
    starts_clock = ++g.joins_sent == g.expected_joins;
  }
  co_return co_await call(io, m.l, join, join_version, buffer, out,
                          starts_clock ? &g.started_at : nullptr);
}

// The coordinator is not ready for the group yet (Kafka loads a __consumer_offsets partition
// after its FindCoordinator answers): worth a retry before anything is timed.
bool coordinator_not_ready(int16_t err) {
  return err == code(error_code::not_coordinator) ||
         err == code(error_code::coordinator_not_available) ||
         err == code(error_code::coordinator_load_in_progress);
}

// A member without an id asks for one: JoinGroup answered MEMBER_ID_REQUIRED.
asio::awaitable<void> get_member_id(asio::io_context& io, group_state& g, member& m, int& left) {
  const auto metadata = subscription_bytes(*g.o);
  m.member_id.clear();
  frame buffer;
  protocol::join_group_response response;
  std::string e;
  for (int attempt = 0;; ++attempt) {
    e = co_await join_once(io, g, m, buffer, response, metadata);
    if (!e.empty() || !coordinator_not_ready(response.error_code) || attempt == 200) break;
    co_await sleep_ms(50);
  }
  if (e.empty() && response.error_code != code(error_code::member_id_required)) {
    e = "JoinGroup without a member id: error " + error_text(response.error_code) +
        " (MEMBER_ID_REQUIRED expected)";
  }
  if (!e.empty()) {
    g.fail(e);
  } else {
    m.member_id = std::string(response.member_id);
  }
  --left;
  g.changed.notify();
}

// The member: join, sync, heartbeat while a phase is timed, rejoin when told to; until stopping.
asio::awaitable<void> run_member(asio::io_context& io, group_state& g, member& m) {
  m.running = true;
  const auto metadata = subscription_bytes(*g.o);
  frame buffer;
  while (!g.stopping && g.error.empty()) {
    m.synced_generation = -1;
    protocol::join_group_response joined;
    if (auto e = co_await join_once(io, g, m, buffer, joined, metadata); !e.empty()) {
      g.fail(e);
      break;
    }
    const int16_t err = joined.error_code;
    if (err == code(error_code::member_id_required)) {
      m.member_id = std::string(joined.member_id);
      continue;
    }
    if (err == code(error_code::unknown_member_id)) {
      m.member_id.clear();
      continue;
    }
    if (err == code(error_code::rebalance_in_progress)) continue;
    if (err != 0) {
      g.fail("JoinGroup: error " + error_text(err));
      break;
    }
    m.member_id = std::string(joined.member_id);
    m.generation = joined.generation_id;

    // The leader assigns the topic's partitions by range.
    std::vector<std::pair<std::string, std::vector<uint8_t>>> assignments;
    if (std::string_view(joined.leader) == m.member_id && !joined.skip_assignment) {
      std::vector<client::assignor_member> subscribed;
      for (const auto& jm : joined.members) {
        auto s = client::decode_subscription(jm.metadata);
        if (!s) continue;
        client::assignor_member am;
        am.member_id = std::string(jm.member_id);
        am.topics = s->topics;
        subscribed.push_back(std::move(am));
      }
      for (auto& [id, a] : client::assign_range(subscribed, {{g.o->topic, g.o->topic_partitions}}))
        assignments.emplace_back(id, client::encode_assignment(a));
    }
    protocol::sync_group_request sync;
    sync.group_id = g.group_id;
    sync.generation_id = m.generation;
    sync.member_id = m.member_id;
    sync.protocol_type = protocol_type;
    sync.protocol_name = client::range_assignor_name;
    for (const auto& [id, bytes] : assignments) sync.assignments.push_back({id, bytes});
    protocol::sync_group_response synced;
    ++g.requests;
    if (auto e = co_await call(io, m.l, sync, sync_version, buffer, synced); !e.empty()) {
      g.fail(e);
      break;
    }
    const int16_t serr = synced.error_code;
    if (serr == code(error_code::rebalance_in_progress) ||
        serr == code(error_code::illegal_generation)) {
      continue;
    }
    if (serr == code(error_code::unknown_member_id)) {
      m.member_id.clear();
      continue;
    }
    if (serr != 0) {
      g.fail("SyncGroup: error " + error_text(serr));
      break;
    }
    m.synced_generation = m.generation;
    if (g.settled_generation()) g.settled_at = steady::now();
    g.changed.notify();

    // Stable: heartbeat while a phase is timed, until the coordinator says to rejoin.
    bool rejoin = false;
    while (!rejoin && !g.stopping && g.error.empty()) {
      if (!g.timed) {
        co_await g.heartbeat_wake.wait();
        continue;
      }
      if (g.o->heartbeat_interval_ms > 0) co_await sleep_ms(g.o->heartbeat_interval_ms);
      if (g.stopping || !g.error.empty()) break;
      protocol::heartbeat_request hb;
      hb.group_id = g.group_id;
      hb.generation_id = m.generation;
      hb.member_id = m.member_id;
      protocol::heartbeat_response beat;
      ++g.requests;
      if (auto e = co_await call(io, m.l, hb, heartbeat_version, buffer, beat); !e.empty()) {
        g.fail(e);
        break;
      }
      const int16_t herr = beat.error_code;
      if (herr == 0) continue;
      if (herr == code(error_code::unknown_member_id)) m.member_id.clear();
      if (herr == code(error_code::rebalance_in_progress) ||
          herr == code(error_code::illegal_generation) ||
          herr == code(error_code::unknown_member_id)) {
        rejoin = true;
      } else {
        g.fail("Heartbeat: error " + error_text(herr));
      }
    }
  }
  m.running = false;
  g.changed.notify();
}

// Waits for `left` to reach 0 or the run to fail; false on failure or timeout.
asio::awaitable<bool> wait_count(group_state& g, const int& left) {
  while (left > 0 && g.error.empty()) co_await g.changed.wait();
  co_return g.error.empty();
}

// Gives `ms` ids, then starts their coroutines and times them (and the members already running)
// until one generation holds all of g.members.
// `requests`: the JoinGroup, SyncGroup and Heartbeat requests sent while timed.
asio::awaitable<bool> timed_phase(asio::io_context& io, group_state& g,
                                  const std::vector<member*>& joiners, double& ms,
                                  int32_t& generation, int64_t& requests) {
  int left = static_cast<int>(joiners.size());
  for (auto* m : joiners) asio::co_spawn(io, get_member_id(io, g, *m, left), asio::detached);
  if (!co_await wait_count(g, left)) {
    for (auto* m : joiners) m->l.conn->close("the run failed");  // answers the joins left
    while (left > 0) co_await g.changed.wait();
    co_return false;
  }
  for (auto* m : joiners) {
    m->first_join = true;
    g.members.push_back(m);
  }
  g.joins_sent = 0;
  g.expected_joins = static_cast<int>(joiners.size());
  g.started_at = steady::now();
  const int64_t requests_before = g.requests;
  g.timed = true;
  g.heartbeat_wake.notify();
  for (auto* m : joiners) asio::co_spawn(io, run_member(io, g, *m), asio::detached);
  std::optional<int32_t> settled;
  while (!(settled = g.settled_generation()) && g.error.empty()) co_await g.changed.wait();
  g.timed = false;
  if (!settled) co_return false;
  ms = ms_between(g.started_at, g.settled_at);
  generation = *settled;
  requests = g.requests - requests_before;
  co_return true;
}

// Stops the round's members and takes them out of the group with one LeaveGroup.
// After a failure the connections are closed instead, which answers what the members wait for.
asio::awaitable<bool> end_round(asio::io_context& io, group_state& g) {
  g.stopping = true;
  g.heartbeat_wake.notify();
  if (!g.error.empty()) {
    for (auto* m : g.members) m->l.conn->close("the run failed");
  }
  auto any_running = [&] {
    for (auto* m : g.members) {
      if (m->running) return true;
    }
    return false;
  };
  while (any_running()) co_await g.changed.wait();
  if (!g.error.empty() || g.members.empty()) co_return g.error.empty();
  protocol::leave_group_request leave;
  leave.group_id = g.group_id;
  for (auto* m : g.members) leave.members.push_back({m->member_id, std::nullopt, "bench done"});
  frame buffer;
  protocol::leave_group_response left;
  if (auto e = co_await call(io, g.members.front()->l, leave, leave_version, buffer, left);
      !e.empty()) {
    g.fail(e);
    co_return false;
  }
  if (left.error_code != 0) {
    g.fail("LeaveGroup: error " + error_text(left.error_code));
    co_return false;
  }
  co_return true;
}

std::string group_prefix(const options& o) {
  if (!o.group_prefix.empty()) return o.group_prefix;
  const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  return "bench-" + std::to_string(getpid()) + "-" + std::to_string(now);
}

asio::awaitable<std::string> setup(asio::io_context& io, const options& o,
                                   std::vector<member>& members) {
  for (auto& m : members) {
    if (auto e = co_await connect(io, m.l, o); !e.empty()) co_return e;
  }
  if (auto e = co_await create_topic(io, members.front().l, o); !e.empty()) co_return e;
  co_return std::string();
}

asio::awaitable<int> rebalance_main(asio::io_context& io, const options& o) {
  const auto deadline = steady::now() + std::chrono::milliseconds(o.timeout_ms);
  std::vector<member> members(static_cast<size_t>(o.members) + 1);
  if (auto e = co_await setup(io, o, members); !e.empty()) {
    std::fprintf(stderr, "group_rebalance: %s\n", e.c_str());
    co_return 1;
  }
  const std::string prefix = group_prefix(o);
  std::vector<double> form_ms, join_ms;
  for (int round = 0; round < o.warmup_rounds + o.rounds; ++round) {
    group_state g(io);
    g.o = &o;
    g.group_id = prefix + "-" + std::to_string(o.members) + "-" + std::to_string(round);
    if (auto e = co_await find_coordinator(io, members.front().l, g.group_id, deadline);
        !e.empty()) {
      std::fprintf(stderr, "group_rebalance: %s\n", e.c_str());
      co_return 1;
    }
    for (auto& m : members) {
      link l = std::move(m.l);
      m = member();
      m.l = std::move(l);
    }
    // A deadline for the round: a rebalance that never settles fails the run.
    asio::steady_timer limit(io, deadline);
    limit.async_wait([&g](std::error_code ec) {
      if (!ec) g.fail("timed out");
    });
    std::vector<member*> first;
    for (int i = 0; i < o.members; ++i) first.push_back(&members[static_cast<size_t>(i)]);
    double form = 0, join = 0;
    int32_t form_generation = -1, join_generation = -1;
    int64_t form_requests = 0, join_requests = 0;
    bool ok = co_await timed_phase(io, g, first, form, form_generation, form_requests);
    if (ok) {
      const std::vector<member*> joiner = {&members.back()};
      ok = co_await timed_phase(io, g, joiner, join, join_generation, join_requests);
    }
    ok = co_await end_round(io, g) && ok;
    limit.cancel();
    if (!ok) {
      std::fprintf(stderr, "group_rebalance: round %d (%s): %s\n", round, g.group_id.c_str(),
                   g.error.c_str());
      co_return 1;
    }
    if (round < o.warmup_rounds) continue;
    form_ms.push_back(form);
    join_ms.push_back(join);
    std::printf("round=%d members=%d form_ms=%.3f form_generation=%d form_requests=%" PRId64
                " join_ms=%.3f join_generations=%d join_requests=%" PRId64 "\n",
                round - o.warmup_rounds, o.members, form, form_generation, form_requests, join,
                join_generation - form_generation, join_requests);
    std::fflush(stdout);
  }
  std::printf("members=%d rounds=%d form_ms=%.3f join_ms=%.3f\n", o.members, o.rounds,
              median(form_ms), median(join_ms));
  for (auto& m : members) m.l.conn->close("done");
  co_return 0;
}

// ---- offset commits ----------------------------------------------------------------------------

struct committer {
  link* l = nullptr;
  std::string member_id;
  int32_t generation = -1;
  int64_t next_offset = 0;
  int in_flight = 0;
};

struct commit_run {
  const options* o = nullptr;
  std::string group_id;
  steady::time_point window_start, window_end;
  bool sending = true;
  int64_t answered = 0;           // all commits answered
  int64_t answered_at_start = 0;  // at window_start
  int64_t answered_at_end = 0;    // at window_end
  int in_flight = 0;
  std::vector<double> latency_ms;  // of the commits sent within the window
  std::string error;
};

void send_commit(commit_run& run, committer& c) {
  const auto& o = *run.o;
  protocol::offset_commit_request request;
  request.group_id = run.group_id;
  request.generation_id_or_member_epoch = c.generation;
  request.member_id = c.member_id;
  auto& topic = request.topics.emplace_back();
  topic.name = o.topic;
  const int64_t offset = c.next_offset++;
  topic.partitions.resize(static_cast<size_t>(o.partitions));
  for (int p = 0; p < o.partitions; ++p) {
    auto& part = topic.partitions[static_cast<size_t>(p)];
    part.partition_index = p;
    part.committed_offset = offset;
  }
  const auto sent_at = steady::now();
  ++c.in_flight;
  ++run.in_flight;
  c.l->conn->send(
      [&](int32_t id) { return client::frame_request(request, commit_version, id, client_id); },
      true,
      [&run, &c, sent_at](result<std::span<const uint8_t>, std::string> response) {
        --c.in_flight;
        --run.in_flight;
        if (!run.error.empty()) return;
        if (!response) {
          run.error = "OffsetCommit: " + response.error();
          return;
        }
        auto body =
            client::decode_response<protocol::offset_commit_response>(*response, commit_version);
        if (!body) {
          run.error = body.error();
          return;
        }
        int answered = 0;
        for (const auto& t : body->topics) {
          for (const auto& p : t.partitions) {
            if (p.error_code != 0) {
              run.error = "OffsetCommit " + std::string(t.name) + "-" +
                          std::to_string(p.partition_index) + ": error " + error_text(p.error_code);
              return;
            }
            ++answered;
          }
        }
        if (answered != run.o->partitions) {
          run.error = "OffsetCommit answered " + std::to_string(answered) + " partitions of " +
                      std::to_string(run.o->partitions);
          return;
        }
        ++run.answered;
        const auto now = steady::now();
        if (sent_at >= run.window_start && sent_at < run.window_end) {
          run.latency_ms.push_back(ms_between(sent_at, now));
        }
        if (run.sending) send_commit(run, c);
      });
}

asio::awaitable<int> commit_main(asio::io_context& io, const options& o) {
  const auto deadline = steady::now() + std::chrono::milliseconds(o.timeout_ms);
  auto failed = [](const std::string& why) {
    std::fprintf(stderr, "group_rebalance commit: %s\n", why.c_str());
    return 1;
  };
  std::vector<member> members(static_cast<size_t>(o.connections));
  if (auto e = co_await setup(io, o, members); !e.empty()) co_return failed(e);
  group_state g(io);
  g.o = &o;
  g.session_timeout_ms = 60'000;  // members commit without heartbeats for the whole run
  g.group_id = group_prefix(o) + "-commit-" + o.group_mode;
  if (auto e = co_await find_coordinator(io, members.front().l, g.group_id, deadline); !e.empty())
    co_return failed(e);
  std::vector<committer> committers(members.size());
  for (size_t i = 0; i < members.size(); ++i) committers[i].l = &members[i].l;
  if (o.group_mode == "member") {
    std::vector<member*> all;
    for (auto& m : members) all.push_back(&m);
    double ms = 0;
    int32_t generation = -1;
    int64_t requests = 0;
    if (!co_await timed_phase(io, g, all, ms, generation, requests)) co_return failed(g.error);
    for (size_t i = 0; i < members.size(); ++i) {
      committers[i].member_id = members[i].member_id;
      committers[i].generation = members[i].generation;
    }
  }

  // One commit before the clock, retried while the coordinator is not ready for the group.
  for (int attempt = 0;; ++attempt) {
    protocol::offset_commit_request request;
    request.group_id = g.group_id;
    request.generation_id_or_member_epoch = committers[0].generation;
    request.member_id = committers[0].member_id;
    auto& topic = request.topics.emplace_back();
    topic.name = o.topic;
    topic.partitions.resize(1);
    frame buffer;
    protocol::offset_commit_response response;
    auto e = co_await call(io, members[0].l, request, commit_version, buffer, response);
    if (!e.empty()) co_return failed(e);
    int16_t err = response.topics.empty() || response.topics[0].partitions.empty()
                      ? code(error_code::unknown_server_error)
                      : response.topics[0].partitions[0].error_code;
    if (err == 0) break;
    if (!coordinator_not_ready(err) || attempt == 200) {
      co_return failed("the first OffsetCommit: error " + error_text(err));
    }
    co_await sleep_ms(50);
  }

  commit_run run;
  run.o = &o;
  run.group_id = g.group_id;
  const auto start = steady::now();
  run.window_start =
      start + std::chrono::microseconds(static_cast<int64_t>(o.warmup_seconds * 1e6));
  run.window_end =
      run.window_start + std::chrono::microseconds(static_cast<int64_t>(o.seconds * 1e6));
  for (auto& c : committers) {
    for (int k = 0; k < o.in_flight; ++k) send_commit(run, c);
  }
  asio::steady_timer timer(io, run.window_start);
  std::error_code ec;
  co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  run.answered_at_start = run.answered;
  const double cpu_start = cpu_seconds();
  const auto measured_from = steady::now();
  timer.expires_at(run.window_end);
  co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
  run.answered_at_end = run.answered;
  const auto measured_to = steady::now();
  const double cpu = cpu_seconds() - cpu_start;
  run.sending = false;
  while (run.in_flight > 0 && run.error.empty() && steady::now() < deadline) co_await sleep_ms(1);
  if (!run.error.empty()) co_return failed(run.error);
  if (run.in_flight > 0) co_return failed("timed out waiting for the last commits");
  if (o.group_mode == "member") {
    if (!co_await end_round(io, g)) co_return failed(g.error);
  }
  for (auto& m : members) m.l.conn->close("done");

  const double secs = std::chrono::duration<double>(measured_to - measured_from).count();
  const int64_t commits = run.answered_at_end - run.answered_at_start;
  auto& lat = run.latency_ms;
  std::sort(lat.begin(), lat.end());
  std::printf("commits=%" PRId64
              " partitions_per_commit=%d connections=%d in_flight=%d mode=%s "
              "elapsed_s=%.6f commits_per_s=%.1f partitions_per_s=%.1f p50_ms=%.3f p99_ms=%.3f "
              "client_cpu_s=%.3f total_commits=%" PRId64 "\n",
              commits, o.partitions, o.connections, o.in_flight, o.group_mode.c_str(), secs,
              static_cast<double>(commits) / secs,
              static_cast<double>(commits) * o.partitions / secs, percentile(lat, 0.5),
              percentile(lat, 0.99), cpu, run.answered);
  co_return 0;
}

int run_program(const options& o, bool rebalance) {
  asio::io_context io;
  int rc = 1;
  asio::co_spawn(io, rebalance ? rebalance_main(io, o) : commit_main(io, o),
                 [&rc, &io](std::exception_ptr e, int value) {
                   if (e) {
                     try {
                       std::rethrow_exception(e);
                     } catch (const std::exception& ex) {
                       std::fprintf(stderr, "group_rebalance: %s\n", ex.what());
                     }
                     value = 1;
                   }
                   rc = value;
                   io.stop();  // connections left open hold no work worth finishing
                 });
  io.run();
  return rc;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  CLI::App app{"Classic consumer-group rebalances and offset commits, timed from the client"};
  app.require_subcommand(1);
  auto common = [&o](CLI::App* sub) {
    sub->add_option("--bootstrap-server", o.bootstrap_server, "host:port")->required();
    sub->add_option("--topic", o.topic,
                    "the topic subscribed to and committed (created if absent)");
    sub->add_option("--topic-partitions", o.topic_partitions, "its partitions if created")
        ->check(CLI::Range(1, 10000));
    sub->add_option("--group-prefix", o.group_prefix, "group ids start with this");
    sub->add_option("--timeout-ms", o.timeout_ms)
        ->check(CLI::Range(int64_t{1}, int64_t{3'600'000}));
  };
  auto* rebalance = app.add_subcommand("rebalance", "time group formation and a join's rebalance");
  common(rebalance);
  rebalance->add_option("--members", o.members)->check(CLI::Range(1, 1000));
  rebalance->add_option("--rounds", o.rounds)->check(CLI::Range(1, 100000));
  rebalance->add_option("--warmup-rounds", o.warmup_rounds)->check(CLI::Range(0, 100000));
  rebalance
      ->add_option("--heartbeat-interval-ms", o.heartbeat_interval_ms,
                   "between heartbeats while timed (0: back to back)")
      ->check(CLI::Range(0, 10000));
  auto* commit = app.add_subcommand("commit", "offset commits per second");
  common(commit);
  commit->add_option("--group-mode", o.group_mode)->check(CLI::IsMember({"simple", "member"}));
  commit->add_option("--partitions", o.partitions, "partitions per commit")
      ->check(CLI::Range(1, 10000));
  commit->add_option("--connections", o.connections)->check(CLI::Range(1, 1000));
  commit->add_option("--in-flight", o.in_flight, "commits in flight per connection")
      ->check(CLI::Range(1, 1000));
  commit->add_option("--seconds", o.seconds, "counted")->check(CLI::Range(0.01, 3600.0));
  commit->add_option("--warmup-seconds", o.warmup_seconds, "not counted")
      ->check(CLI::Range(0.0, 3600.0));
  CLI11_PARSE(app, argc, argv);
  if (o.partitions > o.topic_partitions) {
    std::fprintf(stderr, "group_rebalance: --partitions exceeds --topic-partitions\n");
    return 2;
  }
  return run_program(o, rebalance->parsed());
}
