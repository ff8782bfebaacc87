// tarn's consumer library (include/tarn/consumer.h) against the real `tarn serve`:
//   - commit_async: callbacks in the order the commits were made, and a new member of the group
//     starts at the offset the async commit left (committed() says the same);
//   - rebalance listener, classic protocol (eager): a second member joining makes the first
//     revoke everything (committing in its listener) and both get disjoint halves; the second
//     leaving gives every partition back to the first;
//   - the same with group.protocol=consumer (KIP-848): incremental, so only the partitions that
//     move are revoked (after the listener's commit) before the newcomer gets them, and they come
//     back to the first member when the second leaves;
//   - offsets_for_times: Kafka's rule (the first offset whose timestamp is at or after the
//     target) on records with out-of-order timestamps, the same offsets librdkafka's
//     offsets_for_times gives (python3 confluent_kafka), and a seek() there reads that record;
//   - fetch sessions (KIP-227): after the first full Fetch the consumer's fetches are
//     incremental; when the broker drops its session (closed here by another client's full Fetch
//     naming it, as an eviction would) the next Fetch gets FETCH_SESSION_ID_NOT_FOUND, the consumer
//     fetches in full again and reads on without a gap or a duplicate;
//   - pause/resume: a paused partition is not returned until resumed;
//   - a classic static member removed by an admin LeaveGroup (by its instance id) is fenced: its
//     listener hears on_partitions_lost (no revocation, no commit) and it joins again;
//   - max.poll.interval.ms (tarn only): a classic and a consumer-protocol member that stops
//     polling leaves the group on its own, and its next poll() loses its partitions and joins
//     again;
//   - a pattern subscription (tarn only) follows the topics it matches, new ones included.
// Every scenario runs against tarn (a test each) and against Apache Kafka 4.4.0 (scripts/kafka-ref,
// one test for all, the release build only), with the same assertions.
#include "tarn/consumer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "client/blocking_client.h"
#include "client/group_consumer.h"
#include "kafka_ref_broker.h"
#include "protocol/messages/fetch_request.h"
#include "protocol/messages/fetch_response.h"
#include "protocol/messages/leave_group_request.h"
#include "protocol/messages/leave_group_response.h"
#include "tarn/producer.h"
#include "test_util.h"

namespace tarn::test {
namespace {

using client::consumer;
using client::topic_partition;

std::string address(uint16_t port) { return "127.0.0.1:" + std::to_string(port); }

class consumer_lib : public ::testing::Test {
 protected:
  // Starts the broker of the test: false (the test skipped) when it cannot run here.
  bool start(broker_kind kind) {
    const std::string skip =
        start_test_broker(kind,
                          {"offsets.topic.num.partitions=1", "group.initial.rebalance.delay.ms=0",
                           // KIP-848 members learn of a new target at their next heartbeat.
                           "group.consumer.heartbeat.interval.ms=200",
                           "group.consumer.min.heartbeat.interval.ms=200"},
                          broker_, port_);
    if (!skip.empty()) {
      [&] { GTEST_SKIP() << skip; }();
      return false;
    }
    return port_ != 0;
  }
  void TearDown() override {
    if (broker_) broker_->stop();
  }

  // The scenarios, each run against tarn by its own test and against Kafka 4.4.0 by one test
  // (one JVM start for all).
  void commit_async_completes_in_order_and_a_new_member_resumes_there();
  void classic_rebalance_listener_revokes_all_then_assigns_halves();
  void consumer_protocol_rebalance_listener_moves_only_what_changes_owner();
  void offsets_for_times_follows_kafkas_rule_as_librdkafka_does();
  void a_paused_partition_is_read_only_after_resume();
  void a_fenced_classic_member_loses_its_partitions_without_committing();
  void fetch_sessions_are_incremental_and_survive_the_broker_dropping_them();

  std::string bootstrap() const { return address(port_); }

  void create_topic(const std::string& topic, int partitions) {
    const std::string command = "timeout 30 " + std::string(TARN_BINARY) +
                                " topics --bootstrap-server " + bootstrap() + " --create --topic " +
                                topic + " --partitions " + std::to_string(partitions);
    auto [rc, out] = run_command(command);
    ASSERT_EQ(rc, 0) << command << ": " << out;
  }

  // `values.size()` records to the partition, in order, each its own batch when timestamps are
  // given (so out-of-order timestamps land as written).
  void produce(const std::string& topic, int32_t partition, const std::vector<std::string>& values,
               const std::vector<int64_t>& timestamps = {}) {
    auto p = client::producer::create({{"bootstrap.servers", bootstrap()}, {"linger.ms", "0"}});
    ASSERT_TRUE(p) << p.error().message;
    for (size_t i = 0; i < values.size(); ++i) {
      client::producer_record r;
      r.topic = topic;
      r.partition = partition;
      r.value = values[i];
      if (!timestamps.empty()) r.timestamp_ms = timestamps[i];
      auto f = (*p)->send(r);
      if (!timestamps.empty()) {
        auto d = f.get();
        ASSERT_TRUE(d) << d.error().message;
      }
    }
    (*p)->flush();
    (*p)->close();
  }

  std::unique_ptr<consumer> make(std::vector<std::pair<std::string, std::string>> props) {
    props.insert(props.begin(), {"bootstrap.servers", bootstrap()});
    auto c = consumer::create(props);
    EXPECT_TRUE(c) << (c ? "" : c.error().message);
    return c ? std::move(*c) : nullptr;
  }

  // Polls until `n` records came (at most n), or the deadline.
  static std::vector<client::consumer_record> read(consumer& c, size_t n,
                                                   std::chrono::milliseconds within = 20s) {
    std::vector<client::consumer_record> out;
    const auto deadline = clock_type::now() + within;
    while (out.size() < n && clock_type::now() < deadline) {
      auto records = c.poll(200ms, n - out.size());
      EXPECT_TRUE(records) << records.error().message;
      if (!records) break;
      for (auto& r : *records) out.push_back(std::move(r));
    }
    return out;
  }

  std::unique_ptr<broker_process> broker_;  // tarn's; Kafka's is shared by the process
  uint16_t port_ = 0;
};

void consumer_lib::commit_async_completes_in_order_and_a_new_member_resumes_there() {
  create_topic("ca", 1);
  std::vector<std::string> values;
  for (int i = 0; i < 100; ++i) values.push_back("v" + std::to_string(i));
  produce("ca", 0, values);

  const std::vector<std::pair<std::string, std::string>> props = {
      {"group.id", "g-async"}, {"enable.auto.commit", "false"}, {"auto.offset.reset", "earliest"}};
  auto a = make(props);
  ASSERT_TRUE(a);
  a->subscribe({"ca"});
  auto first = read(*a, 40);
  ASSERT_EQ(first.size(), 40u);
  std::vector<std::pair<int, int64_t>> done;  // (which commit, offset committed)
  std::vector<std::string> errors;
  auto callback = [&](int which) {
    return [&, which](const std::map<topic_partition, int64_t>& offsets,
                      const std::optional<client::consumer_error>& error) {
      if (error) errors.push_back(error->message);
      auto it = offsets.find({"ca", 0});
      done.emplace_back(which, it == offsets.end() ? -1 : it->second);
    };
  };
  a->commit_async(callback(1));
  auto second = read(*a, 20);
  ASSERT_EQ(second.size(), 20u);
  a->commit_async(callback(2));
  a->commit_async({{{"ca", 0}, 60}}, callback(3));
  // commit_sync waits for the three, calls their callbacks in order, then commits (nothing new).
  ASSERT_TRUE(a->commit_sync());
  EXPECT_TRUE(errors.empty()) << errors.front();
  ASSERT_EQ(done.size(), 3u);
  EXPECT_EQ(done[0], std::make_pair(1, int64_t{40}));
  EXPECT_EQ(done[1], std::make_pair(2, int64_t{60}));
  EXPECT_EQ(done[2], std::make_pair(3, int64_t{60}));
  auto committed = a->committed({{"ca", 0}});
  ASSERT_TRUE(committed) << committed.error().message;
  EXPECT_EQ(*committed, (std::map<topic_partition, int64_t>{{{"ca", 0}, 60}}));
  // One more read past the commit, committed by nobody: the next member must not see it.
  ASSERT_EQ(read(*a, 5).size(), 5u);
  a->commit_async({{{"ca", 0}, 60}}, callback(4));
  ASSERT_TRUE(a->close());  // waits for commit 4 and calls its callback
  ASSERT_EQ(done.size(), 4u);
  EXPECT_EQ(done[3].first, 4);
  a.reset();

  auto b = make(props);
  ASSERT_TRUE(b);
  b->subscribe({"ca"});
  auto rest = read(*b, 40);
  ASSERT_EQ(rest.size(), 40u);
  EXPECT_EQ(rest.front().offset, 60);
  EXPECT_EQ(rest.front().value, "v60");
  EXPECT_EQ(rest.back().offset, 99);
  ASSERT_TRUE(b->close());
}

// What one member's listener heard, in order: "revoked", "assigned" or "lost" with partitions.
struct listener_log {
  std::mutex mutex;
  std::vector<std::pair<std::string, std::set<int32_t>>> events;

  client::rebalance_listener listener(consumer** self, std::vector<bool>* commits_ok = nullptr) {
    auto note = [this](const char* what, const std::vector<topic_partition>& tps) {
      std::set<int32_t> ps;
      for (const auto& tp : tps) ps.insert(tp.partition);
      std::lock_guard lock(mutex);
      events.emplace_back(what, std::move(ps));
    };
    client::rebalance_listener l;
    l.on_partitions_revoked = [note, self, commits_ok](const std::vector<topic_partition>& tps) {
      // A listener commits what it processed before it gives the partitions up.
      if (commits_ok != nullptr && !tps.empty())
        commits_ok->push_back((*self)->commit_sync().has_value());
      note("revoked", tps);
    };
    l.on_partitions_assigned = [note](const std::vector<topic_partition>& tps) {
      note("assigned", tps);
    };
    l.on_partitions_lost = [note](const std::vector<topic_partition>& tps) { note("lost", tps); };
    return l;
  }
  std::vector<std::pair<std::string, std::set<int32_t>>> snapshot() {
    std::lock_guard lock(mutex);
    return events;
  }
};

void consumer_lib::classic_rebalance_listener_revokes_all_then_assigns_halves() {
  create_topic("rb", 4);
  for (int32_t p = 0; p < 4; ++p) produce("rb", p, {"a", "b", "c"});
  const std::vector<std::pair<std::string, std::string>> props = {{"group.id", "g-rebalance"},
                                                                  {"enable.auto.commit", "false"},
                                                                  {"auto.offset.reset", "earliest"},
                                                                  {"heartbeat.interval.ms", "100"},
                                                                  {"session.timeout.ms", "6000"}};
  auto a = make(props);
  ASSERT_TRUE(a);
  consumer* a_ptr = a.get();
  listener_log a_log;
  std::vector<bool> a_commits;
  a->subscribe({"rb"}, a_log.listener(&a_ptr, &a_commits));
  ASSERT_EQ(read(*a, 12).size(), 12u);
  const std::set<int32_t> all = {0, 1, 2, 3};
  ASSERT_EQ(a_log.snapshot(), (decltype(a_log.events){{"assigned", all}}));

  // B joins on its own thread (its JoinGroup waits for A to join again).
  auto b = make(props);
  ASSERT_TRUE(b);
  consumer* b_ptr = b.get();
  listener_log b_log;
  b->subscribe({"rb"}, b_log.listener(&b_ptr));
  std::atomic<bool> b_stop{false};
  std::atomic<bool> b_assigned{false};
  std::thread b_thread([&] {
    while (!b_stop.load()) {
      auto r = b->poll(100ms);
      if (!b->assignment().empty()) b_assigned.store(true);
    }
  });
  const auto deadline = clock_type::now() + 20s;
  while (clock_type::now() < deadline && (a_log.snapshot().size() < 3 || !b_assigned.load())) {
    (void)a->poll(100ms);
  }
  b_stop.store(true);
  b_thread.join();
  auto a_events = a_log.snapshot();
  auto b_events = b_log.snapshot();
  ASSERT_EQ(a_events.size(), 3u);
  EXPECT_EQ(a_events[1], std::make_pair(std::string("revoked"), all));
  ASSERT_EQ(a_events[2].first, "assigned");
  ASSERT_EQ(b_events.size(), 1u);
  ASSERT_EQ(b_events[0].first, "assigned");
  EXPECT_EQ(a_events[2].second.size(), 2u);
  EXPECT_EQ(b_events[0].second.size(), 2u);
  std::set<int32_t> both = a_events[2].second;
  both.insert(b_events[0].second.begin(), b_events[0].second.end());
  EXPECT_EQ(both, all);
  // A committed in its listener before giving the partitions up: B starts after A's records.
  EXPECT_EQ(a_commits, std::vector<bool>{true});
  for (int32_t p : b_events[0].second) EXPECT_EQ(b->position({"rb", p}), 3) << p;

  // B leaves: it revokes its half on close; A gets everything back.
  ASSERT_TRUE(b->close());
  b_events = b_log.snapshot();
  ASSERT_EQ(b_events.size(), 2u);
  EXPECT_EQ(b_events[1], std::make_pair(std::string("revoked"), b_events[0].second));
  const auto deadline2 = clock_type::now() + 20s;
  while (clock_type::now() < deadline2 && a_log.snapshot().size() < 5) (void)a->poll(100ms);
  a_events = a_log.snapshot();
  ASSERT_EQ(a_events.size(), 5u);
  EXPECT_EQ(a_events[3], std::make_pair(std::string("revoked"), a_events[2].second));
  EXPECT_EQ(a_events[4], std::make_pair(std::string("assigned"), all));
  ASSERT_TRUE(a->close());
  EXPECT_EQ(a_log.snapshot().back(), std::make_pair(std::string("revoked"), all));
}

// The partitions of every event of this kind.
std::set<int32_t> all_of(const std::vector<std::pair<std::string, std::set<int32_t>>>& events,
                         const std::string& kind, size_t from = 0) {
  std::set<int32_t> out;
  for (size_t i = from; i < events.size(); ++i) {
    if (events[i].first == kind) out.insert(events[i].second.begin(), events[i].second.end());
  }
  return out;
}

size_t count_of(const std::vector<std::pair<std::string, std::set<int32_t>>>& events,
                const std::string& kind) {
  return std::count_if(events.begin(), events.end(),
                       [&](const auto& e) { return e.first == kind; });
}

std::set<int32_t> partitions_of(const std::vector<topic_partition>& tps) {
  std::set<int32_t> out;
  for (const auto& tp : tps) out.insert(tp.partition);
  return out;
}

void consumer_lib::consumer_protocol_rebalance_listener_moves_only_what_changes_owner() {
  create_topic("rb848", 4);
  for (int32_t p = 0; p < 4; ++p) produce("rb848", p, {"a", "b", "c"});
  const std::vector<std::pair<std::string, std::string>> props = {
      {"group.id", "g-848"},
      {"group.protocol", "consumer"},
      {"group.remote.assignor", "range"},
      {"enable.auto.commit", "false"},
      {"auto.offset.reset", "earliest"}};
  const std::set<int32_t> all = {0, 1, 2, 3};
  auto a = make(props);
  ASSERT_TRUE(a);
  consumer* a_ptr = a.get();
  listener_log a_log;
  std::vector<bool> a_commits;
  a->subscribe({"rb848"}, a_log.listener(&a_ptr, &a_commits));
  ASSERT_EQ(read(*a, 12).size(), 12u);
  EXPECT_EQ(all_of(a_log.snapshot(), "assigned"), all);
  EXPECT_EQ(partitions_of(a->assignment()), all);
  const size_t a_before = a_log.snapshot().size();

  auto b = make(props);
  ASSERT_TRUE(b);
  consumer* b_ptr = b.get();
  listener_log b_log;
  b->subscribe({"rb848"}, b_log.listener(&b_ptr));
  std::atomic<bool> b_stop{false};
  std::atomic<size_t> b_owned{0};
  std::thread b_thread([&] {
    while (!b_stop.load()) {
      (void)b->poll(50ms);
      b_owned.store(b->assignment().size());
    }
  });
  auto deadline = clock_type::now() + 20s;
  while (clock_type::now() < deadline && (b_owned.load() != 2 || a->assignment().size() != 2)) {
    (void)a->poll(50ms);
  }
  b_stop.store(true);
  b_thread.join();
  auto a_events = a_log.snapshot();
  auto b_events = b_log.snapshot();
  ASSERT_EQ(a->assignment().size(), 2u);
  const std::set<int32_t> moved = all_of(a_events, "revoked", a_before);
  EXPECT_EQ(count_of(a_events, "revoked"), 1u);  // incremental: one revocation, of what moved
  EXPECT_EQ(moved.size(), 2u);
  EXPECT_EQ(all_of(b_events, "assigned"), moved);
  EXPECT_EQ(count_of(b_events, "revoked"), 0u);
  std::set<int32_t> kept = partitions_of(a->assignment());
  for (int32_t p : moved) EXPECT_FALSE(kept.contains(p)) << p;
  EXPECT_EQ(kept.size() + moved.size(), 4u);
  EXPECT_EQ(a_commits, std::vector<bool>{true});
  for (int32_t p : moved) EXPECT_EQ(b->position({"rb848", p}), 3) << p;

  ASSERT_TRUE(b->close());
  b_events = b_log.snapshot();
  EXPECT_EQ(b_events.back(), std::make_pair(std::string("revoked"), moved));
  const size_t a_mid = a_log.snapshot().size();
  deadline = clock_type::now() + 20s;
  while (clock_type::now() < deadline && a->assignment().size() != 4) (void)a->poll(50ms);
  EXPECT_EQ(partitions_of(a->assignment()), all);
  a_events = a_log.snapshot();
  EXPECT_EQ(all_of(a_events, "assigned", a_mid), moved);
  EXPECT_EQ(count_of(a_events, "revoked"), 1u);
  EXPECT_EQ(count_of(a_events, "lost") + count_of(b_events, "lost"), 0u);
  ASSERT_TRUE(a->close());
}

void consumer_lib::offsets_for_times_follows_kafkas_rule_as_librdkafka_does() {
  create_topic("ts", 1);
  // Out of order on purpose: offset 5 is older than offset 4.
  const std::vector<int64_t> stamps = {1000, 2000, 2000, 3000, 5000, 4000, 6000};
  std::vector<std::string> values;
  for (size_t i = 0; i < stamps.size(); ++i) values.push_back("r" + std::to_string(i));
  produce("ts", 0, values, stamps);

  auto c = make({});
  ASSERT_TRUE(c);
  const std::vector<int64_t> targets = {0, 1000, 1500, 2000, 3500, 4000, 4500, 5000, 6000, 7000};
  std::map<topic_partition, int64_t> ask;
  std::string python_list;
  for (int64_t t : targets) python_list += std::to_string(t) + ",";
  const std::string script =
      "import sys\n"
      "from confluent_kafka import Consumer, TopicPartition\n"
      "c = Consumer({'bootstrap.servers': sys.argv[1], 'group.id': 'ts-oracle'})\n"
      "for t in [" +
      python_list +
      "]:\n"
      "    r = c.offsets_for_times([TopicPartition('ts', 0, t)], 10)\n"
      "    print(t, r[0].offset)\n"
      "c.close()\n";
  temp_dir dir;
  const auto script_path = dir.path() / "oracle.py";
  { std::ofstream(script_path) << script; }
  auto [rc, out] =
      run_command("timeout 30 /usr/bin/python3 " + script_path.string() + " " + bootstrap());
  ASSERT_EQ(rc, 0) << out;
  std::map<int64_t, int64_t> librdkafka;
  std::istringstream lines(out);
  for (int64_t t = 0, o = 0; lines >> t >> o;) librdkafka[t] = o;
  ASSERT_EQ(librdkafka.size(), targets.size()) << out;

  for (int64_t t : targets) {
    auto r = c->offsets_for_times({{{"ts", 0}, t}});
    ASSERT_TRUE(r) << r.error().message;
    const auto& answer = r->at({"ts", 0});
    // Kafka's rule, computed here: the first offset whose timestamp is >= t.
    std::optional<int64_t> expected;
    for (size_t i = 0; i < stamps.size(); ++i) {
      if (stamps[i] >= t) {
        expected = static_cast<int64_t>(i);
        break;
      }
    }
    ASSERT_EQ(answer.has_value(), expected.has_value()) << t;
    EXPECT_EQ(answer ? answer->offset : -1, librdkafka[t]) << t;
    if (!expected) continue;
    EXPECT_EQ(answer->offset, *expected) << t;
    EXPECT_EQ(answer->timestamp, stamps[*expected]) << t;
    // seek there: the first record read is that one.
    c->assign({{"ts", 0}});
    c->seek({"ts", 0}, answer->offset);
    auto rec = read(*c, 1);
    ASSERT_EQ(rec.size(), 1u) << t;
    EXPECT_EQ(rec[0].offset, *expected);
    EXPECT_EQ(rec[0].timestamp, stamps[*expected]);
  }
  auto negative = c->offsets_for_times({{{"ts", 0}, -5}});
  EXPECT_FALSE(negative);
  ASSERT_TRUE(c->close());
}

void consumer_lib::a_paused_partition_is_read_only_after_resume() {
  create_topic("pr", 2);
  produce("pr", 0, {"a0", "a1", "a2"});
  produce("pr", 1, {"b0", "b1"});
  auto c = make({});
  ASSERT_TRUE(c);
  c->assign({{"pr", 0}, {"pr", 1}});
  c->seek({"pr", 0}, client::offset_beginning);
  c->seek({"pr", 1}, client::offset_beginning);
  auto first = read(*c, 1);  // fetches both partitions; returns one record
  ASSERT_EQ(first.size(), 1u);
  const int32_t read_from = first[0].partition;
  const int32_t other = 1 - read_from;
  c->pause({{"pr", read_from}});
  EXPECT_EQ(c->paused(), (std::vector<topic_partition>{{"pr", read_from}}));
  const size_t other_count = other == 0 ? 3 : 2;
  auto while_paused = read(*c, other_count);
  ASSERT_EQ(while_paused.size(), other_count);
  auto nothing = c->poll(300ms);  // the paused partition's records stay away
  ASSERT_TRUE(nothing);
  while_paused.insert(while_paused.end(), nothing->begin(), nothing->end());
  for (const auto& r : while_paused) EXPECT_EQ(r.partition, other);
  c->resume({{"pr", read_from}});
  EXPECT_TRUE(c->paused().empty());
  const size_t rest = (read_from == 0 ? 3 : 2) - 1;
  auto after = read(*c, rest);
  ASSERT_EQ(after.size(), rest);
  EXPECT_EQ(after.front().partition, read_from);
  EXPECT_EQ(after.front().offset, 1);  // the buffered records of the pause are fetched again
  ASSERT_TRUE(c->close());
}

void consumer_lib::a_fenced_classic_member_loses_its_partitions_without_committing() {
  create_topic("lost", 2);
  produce("lost", 0, {"a", "b"});
  produce("lost", 1, {"c"});
  const std::vector<std::pair<std::string, std::string>> props = {
      {"group.id", "g-lost"},           {"group.instance.id", "i-lost"},
      {"enable.auto.commit", "true"},   {"auto.offset.reset", "earliest"},
      {"heartbeat.interval.ms", "100"}, {"session.timeout.ms", "6000"}};
  auto a = make(props);
  ASSERT_TRUE(a);
  consumer* a_ptr = a.get();
  listener_log log;
  std::vector<bool> commits;
  a->subscribe({"lost"}, log.listener(&a_ptr, &commits));
  ASSERT_EQ(read(*a, 3).size(), 3u);
  const std::set<int32_t> both = {0, 1};
  ASSERT_EQ(log.snapshot(), (decltype(log.events){{"assigned", both}}));

  // kafka-consumer-groups --delete-members' request: LeaveGroup naming the instance id.
  auto admin = client::blocking_client::connect(bootstrap(), 10s, "admin");
  ASSERT_TRUE(admin) << admin.error();
  ASSERT_TRUE((*admin)->negotiate_versions());
  const int16_t v = (*admin)->version_for<protocol::leave_group_request>();
  ASSERT_GE(v, 3);
  protocol::leave_group_request leave;
  leave.group_id = "g-lost";
  protocol::leave_group_request::member_identity m;
  m.member_id = "";
  m.group_instance_id = "i-lost";
  leave.members.push_back(m);
  std::vector<uint8_t> buffer;
  auto left = client::call<protocol::leave_group_response>(**admin, leave, v, buffer);
  ASSERT_TRUE(left) << left.error();
  ASSERT_EQ(left->error_code, 0);

  const auto deadline = clock_type::now() + 20s;
  while (clock_type::now() < deadline && log.snapshot().size() < 3) (void)a->poll(100ms);
  // Fenced: lost (not revoked: the listener committed nothing), then the member joins again.
  EXPECT_EQ(log.snapshot(),
            (decltype(log.events){{"assigned", both}, {"lost", both}, {"assigned", both}}));
  EXPECT_TRUE(commits.empty());
  ASSERT_TRUE(a->close());
}

void consumer_lib::fetch_sessions_are_incremental_and_survive_the_broker_dropping_them() {
  create_topic("fs", 1);
  std::vector<std::string> values;
  for (int i = 0; i < 70; ++i) values.push_back("v" + std::to_string(i));
  produce("fs", 0, std::vector<std::string>(values.begin(), values.begin() + 50));
  client::group_consumer_config config;
  config.bootstrap_servers = bootstrap();
  config.fetch_max_wait_ms = 100;
  auto created = client::group_consumer::create(config);
  ASSERT_TRUE(created) << created.error().message;
  auto& c = **created;
  c.assign({{"fs", 0}});
  c.seek({"fs", 0}, client::earliest_offset_spec);
  std::vector<std::string> got;
  auto read_until = [&](size_t n) {
    const auto deadline = clock_type::now() + 20s;
    while (got.size() < n && clock_type::now() < deadline) {
      auto records = c.poll(100ms);
      ASSERT_TRUE(records) << records.error().message;
      for (const auto& r : *records) got.push_back(*r.value);
    }
  };
  read_until(50);
  (void)c.poll(200ms);  // one more fetch, with nothing new
  auto stats = c.fetch_stats();
  EXPECT_EQ(stats.full_fetches, 1);
  EXPECT_GE(stats.incremental_fetches, 1);
  const auto ids = c.fetch_session_ids();
  ASSERT_EQ(ids.size(), 1u);
  const int32_t session_id = ids.begin()->second;
  ASSERT_NE(session_id, 0);

  // Another client's full Fetch naming the session closes it on the broker.
  auto other = client::blocking_client::connect(bootstrap(), 10s, "evictor");
  ASSERT_TRUE(other) << other.error();
  ASSERT_TRUE((*other)->negotiate_versions());
  protocol::fetch_request req;
  req.replica_id = -1;
  req.max_wait_ms = 0;
  req.min_bytes = 0;
  req.max_bytes = 1 << 20;
  req.session_id = session_id;
  req.session_epoch = 0;
  protocol::fetch_request::fetch_topic t;
  t.topic = "fs";
  protocol::fetch_request::fetch_partition fp;
  fp.partition = 0;
  fp.fetch_offset = 0;
  fp.partition_max_bytes = 1024;
  t.partitions.push_back(fp);
  req.topics.push_back(t);
  std::vector<uint8_t> buffer;
  auto answer = client::call<protocol::fetch_response>(**other, req, 12, buffer);
  ASSERT_TRUE(answer) << answer.error();
  ASSERT_EQ(answer->error_code, 0);

  produce("fs", 0, std::vector<std::string>(values.begin() + 50, values.end()));
  read_until(70);
  EXPECT_EQ(got, values);  // no gap, no duplicate
  stats = c.fetch_stats();
  EXPECT_EQ(stats.session_resets, 1);
  EXPECT_EQ(stats.full_fetches, 2);
  const int64_t incremental = stats.incremental_fetches;
  (void)c.poll(200ms);
  EXPECT_GT(c.fetch_stats().incremental_fetches, incremental);  // a new session, incremental again
  EXPECT_NE(c.fetch_session_ids().begin()->second, session_id);
  ASSERT_TRUE(c.close());
}

TEST_F(consumer_lib, commit_async_completes_in_order_and_a_new_member_resumes_there) {
  if (start(broker_kind::tarn)) commit_async_completes_in_order_and_a_new_member_resumes_there();
}

TEST_F(consumer_lib, classic_rebalance_listener_revokes_all_then_assigns_halves) {
  if (start(broker_kind::tarn)) classic_rebalance_listener_revokes_all_then_assigns_halves();
}

TEST_F(consumer_lib, consumer_protocol_rebalance_listener_moves_only_what_changes_owner) {
  if (start(broker_kind::tarn))
    consumer_protocol_rebalance_listener_moves_only_what_changes_owner();
}

TEST_F(consumer_lib, offsets_for_times_follows_kafkas_rule_as_librdkafka_does) {
  if (start(broker_kind::tarn)) offsets_for_times_follows_kafkas_rule_as_librdkafka_does();
}

TEST_F(consumer_lib, a_paused_partition_is_read_only_after_resume) {
  if (start(broker_kind::tarn)) a_paused_partition_is_read_only_after_resume();
}

TEST_F(consumer_lib, fetch_sessions_are_incremental_and_survive_the_broker_dropping_them) {
  if (start(broker_kind::tarn))
    fetch_sessions_are_incremental_and_survive_the_broker_dropping_them();
}

TEST_F(consumer_lib, a_fenced_classic_member_loses_its_partitions_without_committing) {
  if (start(broker_kind::tarn)) a_fenced_classic_member_loses_its_partitions_without_committing();
}

// `tarn perf consume` (the benchmark's tool, on the public consumer) reads the partition to its
// end on every pass and prints rdkafka_perf's line and its CPU per record.
TEST_F(consumer_lib, tarn_perf_consume_reads_every_pass_to_the_end) {
  if (!start(broker_kind::tarn)) return;
  create_topic("perf", 1);
  std::vector<std::string> values;
  for (int i = 0; i < 1000; ++i)
    values.push_back(std::string(100, static_cast<char>('a' + i % 26)));
  produce("perf", 0, values);
  auto [rc, out] =
      run_command("timeout 60 " + std::string(TARN_BINARY) + " perf consume --bootstrap-server " +
                  bootstrap() + " --topic perf --passes 3 --consumer-props fetch.max.wait.ms=10");
  ASSERT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("3000 records consumed, 300000 bytes, "), std::string::npos) << out;
  EXPECT_NE(out.find("cpu_us_per_record="), std::string::npos) << out;
}

// max.poll.interval.ms, with both group protocols: a member that stops polling leaves the group
// on its own (its heartbeats would otherwise keep it in: session.timeout.ms is far longer), so
// the group is Empty; the next poll() loses the partitions (no revocation, no commit) and joins
// again (classic: as a new member; consumer protocol: the same member id at epoch 0, as Java's
// AsyncKafkaConsumer).
TEST_F(consumer_lib, a_member_that_stops_polling_leaves_the_group) {
  if (!start(broker_kind::tarn)) return;
  for (const std::string protocol : {"classic", "consumer"}) {
    SCOPED_TRACE(protocol);
    const std::string topic = "mpi-" + protocol;
    const std::string group = "mpi-group-" + protocol;
    create_topic(topic, 2);
    client::group_consumer_config config;
    ASSERT_TRUE(config.set("bootstrap.servers", bootstrap()));
    ASSERT_TRUE(config.set("group.id", group));
    ASSERT_TRUE(config.set("group.protocol", protocol));
    ASSERT_TRUE(config.set("max.poll.interval.ms", "1500"));
    if (protocol == "classic") {
      ASSERT_TRUE(config.set("session.timeout.ms", "30000"));
      ASSERT_TRUE(config.set("heartbeat.interval.ms", "200"));
    }
    ASSERT_TRUE(config.set("fetch.max.wait.ms", "100"));
    auto created = client::group_consumer::create(config);
    ASSERT_TRUE(created) << created.error().message;
    auto& c = **created;
    std::vector<std::string> events;
    client::rebalance_listener listener;
    listener.on_partitions_assigned = [&](const std::vector<topic_partition>& tps) {
      // The consumer protocol's reconciliation also reports an empty addition.
      if (!tps.empty() || protocol == "classic") {
        events.push_back("assigned " + std::to_string(tps.size()));
      }
    };
    listener.on_partitions_revoked = [&](const std::vector<topic_partition>& tps) {
      events.push_back("revoked " + std::to_string(tps.size()));
    };
    listener.on_partitions_lost = [&](const std::vector<topic_partition>& tps) {
      events.push_back("lost " + std::to_string(tps.size()));
    };
    c.subscribe({topic}, listener);
    const auto joined_by = clock_type::now() + 20s;
    while (c.assignment().size() < 2 && clock_type::now() < joined_by) {
      ASSERT_TRUE(c.poll(100ms));
    }
    ASSERT_EQ(c.assignment().size(), 2u);
    const std::string first_member = c.member_id();
    ASSERT_FALSE(first_member.empty());

    // No poll from here: within max.poll.interval.ms plus a heartbeat the member has left and
    // the group is Empty (the session timeout is far away).
    auto state = [&] {
      return run_command("timeout 30 " + std::string(TARN_BINARY) + " groups --bootstrap-server " +
                         bootstrap() + " --describe --group " + group + " --state")
          .second;
    };
    std::string described;
    const auto empty_by = clock_type::now() + 10s;
    do {
      described = state();
    } while (described.find("Empty") == std::string::npos && clock_type::now() < empty_by &&
             (std::this_thread::sleep_for(100ms), true));
    EXPECT_NE(described.find("Empty"), std::string::npos) << described;
    if (protocol == "classic") {
      EXPECT_TRUE(c.member_id().empty());
    }

    // The next poll loses both partitions and joins again.
    const auto rejoined_by = clock_type::now() + 20s;
    do {
      ASSERT_TRUE(c.poll(100ms));
    } while ((c.member_id().empty() || c.assignment().size() < 2 || events.size() < 3) &&
             clock_type::now() < rejoined_by);
    EXPECT_EQ(c.assignment().size(), 2u);
    if (protocol == "classic") {
      EXPECT_NE(c.member_id(), first_member);
    } else {
      EXPECT_EQ(c.member_id(), first_member);
    }
    EXPECT_EQ(events, (std::vector<std::string>{"assigned 2", "lost 2", "assigned 2"}));
    ASSERT_TRUE(c.close());
  }
}

// Regular-expression subscription (librdkafka's '^' convention): the member is assigned every
// partition of the topics the expression matches and none of the others, a topic created later
// that matches joins at the next listing (metadata.max.age.ms), and an invalid expression fails
// poll().
TEST_F(consumer_lib, a_pattern_subscription_follows_the_matching_topics) {
  if (!start(broker_kind::tarn)) return;
  create_topic("rx-a", 1);
  create_topic("rx-b", 2);
  create_topic("other", 1);
  auto c = make({{"group.id", "rx-group"},
                 {"metadata.max.age.ms", "300"},
                 {"heartbeat.interval.ms", "200"},
                 {"fetch.max.wait.ms", "100"}});
  ASSERT_TRUE(c);
  c->subscribe({"^rx-.*"});
  auto poll_until_assigned = [&](size_t n) {
    const auto deadline = clock_type::now() + 20s;
    while (c->assignment().size() != n && clock_type::now() < deadline) {
      auto r = c->poll(100ms);
      ASSERT_TRUE(r) << r.error().message;
    }
  };
  poll_until_assigned(3);
  EXPECT_EQ(c->assignment(), (std::vector<topic_partition>{{"rx-a", 0}, {"rx-b", 0}, {"rx-b", 1}}));
  create_topic("rx-c", 1);
  poll_until_assigned(4);
  EXPECT_EQ(c->assignment(),
            (std::vector<topic_partition>{{"rx-a", 0}, {"rx-b", 0}, {"rx-b", 1}, {"rx-c", 0}}));
  ASSERT_TRUE(c->close());

  auto bad = make({{"group.id", "rx-bad"}});
  ASSERT_TRUE(bad);
  bad->subscribe({"^rx-(("});
  auto r = bad->poll(100ms);
  ASSERT_FALSE(r);
  EXPECT_NE(r.error().message.find("not a valid regular expression"), std::string::npos)
      << r.error().message;
}

// The same scenarios against Apache Kafka 4.4.0, in one test so the JVM starts once.
TEST_F(consumer_lib, every_scenario_against_kafka_4_4) {
  if (!start(broker_kind::kafka)) return;
  {
    SCOPED_TRACE("commit_async_completes_in_order_and_a_new_member_resumes_there");
    commit_async_completes_in_order_and_a_new_member_resumes_there();
  }
  {
    SCOPED_TRACE("classic_rebalance_listener_revokes_all_then_assigns_halves");
    classic_rebalance_listener_revokes_all_then_assigns_halves();
  }
  {
    SCOPED_TRACE("consumer_protocol_rebalance_listener_moves_only_what_changes_owner");
    consumer_protocol_rebalance_listener_moves_only_what_changes_owner();
  }
  {
    SCOPED_TRACE("offsets_for_times_follows_kafkas_rule_as_librdkafka_does");
    offsets_for_times_follows_kafkas_rule_as_librdkafka_does();
  }
  {
    SCOPED_TRACE("a_paused_partition_is_read_only_after_resume");
    a_paused_partition_is_read_only_after_resume();
  }
  {
    SCOPED_TRACE("fetch_sessions_are_incremental_and_survive_the_broker_dropping_them");
    fetch_sessions_are_incremental_and_survive_the_broker_dropping_them();
  }
  {
    SCOPED_TRACE("a_fenced_classic_member_loses_its_partitions_without_committing");
    a_fenced_classic_member_loses_its_partitions_without_committing();
  }
}

}  // namespace
}  // namespace tarn::test
