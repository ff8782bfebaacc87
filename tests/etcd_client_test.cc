// tarn's etcd client (src/cluster/etcd_client.h) against a real etcd 3.4: ranges, compare-and-
// swap transactions (a stale revision never overwrites newer state), leases that keep keys alive
// and whose end removes them, watches that deliver every change once and in order across an etcd
// restart, and failover between the members of a three-member cluster; then the broker session
// on top (src/cluster/etcd_session.h): registration, session loss, controller election; and the
// cluster's metadata log in etcd behind the metadata_store seam (src/cluster/etcd_metadata_log.h),
// partition states and producer-id blocks taken by compare-and-swap.
#include "cluster/etcd_client.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <set>
#include <thread>

#include "cluster/etcd_metadata_log.h"
#include "cluster/etcd_partition_store.h"
#include "cluster/etcd_session.h"
#include "cluster/producer_id_blocks.h"
#include "etcd_process.h"
#include "test_util.h"

namespace tarn::test {
namespace {

using namespace tarn::cluster::etcd;

class EtcdClient : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!etcd_available()) GTEST_SKIP() << "/usr/bin/etcd is missing (scripts/install-deps)";
  }

  static std::unique_ptr<etcd_client> connect(const etcd_cluster& etcd) {
    auto c = etcd_client::create({etcd.endpoints(), 5000, 1000});
    EXPECT_TRUE(c) << c.error().message;
    return c ? std::move(*c) : nullptr;
  }
};

// Collects a watch's events as "PUT key=value@rev" / "DELETE key@rev" lines.
class event_log {
 public:
  void add(const watch_response& w) {
    std::lock_guard lock(mu_);
    for (const auto& e : w.events) {
      lines_.push_back(e.type == watch_event::kind::put
                           ? "PUT " + e.kv.key + "=" + e.kv.value + "@" +
                                 std::to_string(e.kv.mod_revision)
                           : "DELETE " + e.kv.key + "@" + std::to_string(e.kv.mod_revision));
    }
    cv_.notify_all();
  }
  void error(const etcd_error& e) {
    std::lock_guard lock(mu_);
    errors_.push_back(e);
    cv_.notify_all();
  }
  bool wait_for(size_t count) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, event_timeout, [&] { return lines_.size() >= count; });
  }
  bool wait_for_error() {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, event_timeout, [&] { return !errors_.empty(); });
  }
  std::vector<std::string> lines() {
    std::lock_guard lock(mu_);
    return lines_;
  }
  std::vector<etcd_error> errors() {
    std::lock_guard lock(mu_);
    return errors_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> lines_;
  std::vector<etcd_error> errors_;
};

// Brokers 1..n registered with epoch 100 + id, `fenced` fenced.
cluster::broker_states live_brokers_except(std::initializer_list<int32_t> ids, int32_t fenced) {
  cluster::broker_states b;
  for (int32_t id : ids) b[id] = cluster::broker_state{100 + id, id == fenced, false};
  return b;
}

TEST_F(EtcdClient, PrefixRangesAndDeletes) {
  etcd_cluster etcd;
  ASSERT_TRUE(etcd.wait_ready(0)) << etcd.output(0);
  auto c = connect(etcd);
  ASSERT_TRUE(c);
  for (const char* k : {"/tarn/brokers/2", "/tarn/brokers/1", "/tarn/brokers/3", "/tarn/other"}) {
    auto r = c->put(k, std::string("value of ") + k);
    ASSERT_TRUE(r) << r.error().message;
  }
  auto brokers = c->range("/tarn/brokers/", prefix_end("/tarn/brokers/"));
  ASSERT_TRUE(brokers) << brokers.error().message;
  ASSERT_EQ(brokers->kvs.size(), 3u);
  EXPECT_EQ(brokers->kvs[0].key, "/tarn/brokers/1");  // etcd returns keys in byte order
  EXPECT_EQ(brokers->kvs[2].value, "value of /tarn/brokers/3");
  EXPECT_EQ(brokers->count, 3);

  auto limited = c->range("/tarn/brokers/", prefix_end("/tarn/brokers/"), 0, 2);
  ASSERT_TRUE(limited);
  EXPECT_EQ(limited->kvs.size(), 2u);
  EXPECT_TRUE(limited->more);

  auto deleted = c->delete_range("/tarn/brokers/", prefix_end("/tarn/brokers/"));
  ASSERT_TRUE(deleted);
  auto after = c->range("/tarn/", prefix_end("/tarn/"));
  ASSERT_TRUE(after);
  ASSERT_EQ(after->kvs.size(), 1u);
  EXPECT_EQ(after->kvs[0].key, "/tarn/other");
  EXPECT_GT(after->revision, brokers->revision);
}

TEST_F(EtcdClient, CompareAndSwapNeverLetsAStaleRevisionWrite) {
  etcd_cluster etcd;
  ASSERT_TRUE(etcd.wait_ready(0)) << etcd.output(0);
  auto c = connect(etcd);
  ASSERT_TRUE(c);

  // Create-if-absent (how a controller is elected): only the first of two succeeds.
  auto claim = [&](const std::string& who) {
    txn_request t;
    t.compares.push_back({"/tarn/controller",
                          compare::target_kind::create_revision,
                          compare::result_kind::equal,
                          0,
                          {}});
    t.success.push_back(request_op::put("/tarn/controller", who));
    t.failure.push_back(request_op::range("/tarn/controller"));
    return c->txn(t);
  };
  auto first = claim("broker-1");
  ASSERT_TRUE(first) << first.error().message;
  EXPECT_TRUE(first->succeeded);
  auto second = claim("broker-2");
  ASSERT_TRUE(second);
  EXPECT_FALSE(second->succeeded);
  ASSERT_EQ(second->responses.size(), 1u);
  ASSERT_EQ(second->responses[0].kvs.size(), 1u);
  EXPECT_EQ(second->responses[0].kvs[0].value, "broker-1");

  // Partition state written by CAS on its mod_revision: two writers read revision r; the first
  // write wins, the second (now stale) is refused and sees the newer state.
  ASSERT_TRUE(c->put("/tarn/partitions/t/0", "leader=1 epoch=1"));
  auto read = c->range("/tarn/partitions/t/0");
  ASSERT_TRUE(read);
  ASSERT_EQ(read->kvs.size(), 1u);
  const int64_t r = read->kvs[0].mod_revision;
  auto cas = [&](const std::string& value) {
    txn_request t;
    t.compares.push_back({"/tarn/partitions/t/0",
                          compare::target_kind::mod_revision,
                          compare::result_kind::equal,
                          r,
                          {}});
    t.success.push_back(request_op::put("/tarn/partitions/t/0", value));
    t.failure.push_back(request_op::range("/tarn/partitions/t/0"));
    return c->txn(t);
  };
  auto won = cas("leader=2 epoch=2");
  ASSERT_TRUE(won);
  EXPECT_TRUE(won->succeeded);
  auto lost = cas("leader=3 epoch=2");
  ASSERT_TRUE(lost);
  EXPECT_FALSE(lost->succeeded);
  ASSERT_EQ(lost->responses[0].kvs.size(), 1u);
  EXPECT_EQ(lost->responses[0].kvs[0].value, "leader=2 epoch=2");
  EXPECT_EQ(lost->responses[0].kvs[0].mod_revision, won->revision);
}

TEST_F(EtcdClient, LeaseKeepsItsKeysAndItsEndRemovesThem) {
  etcd_cluster etcd;
  ASSERT_TRUE(etcd.wait_ready(0)) << etcd.output(0);
  auto c = connect(etcd);
  ASSERT_TRUE(c);

  auto revoked = c->lease_grant(30);
  ASSERT_TRUE(revoked) << revoked.error().message;
  EXPECT_EQ(revoked->ttl_s, 30);
  ASSERT_TRUE(c->put("/tarn/brokers/1", "registered", revoked->id));
  auto renewed = c->lease_keep_alive(revoked->id);
  ASSERT_TRUE(renewed) << renewed.error().message;
  EXPECT_GT(*renewed, 0);
  auto held = c->range("/tarn/brokers/1");
  ASSERT_TRUE(held);
  ASSERT_EQ(held->kvs.size(), 1u);
  EXPECT_EQ(held->kvs[0].lease, revoked->id);

  auto r = c->lease_revoke(revoked->id);
  ASSERT_TRUE(r) << r.error().message;
  auto gone = c->range("/tarn/brokers/1");
  ASSERT_TRUE(gone);
  EXPECT_TRUE(gone->kvs.empty());
  auto after_revoke = c->lease_keep_alive(revoked->id);
  ASSERT_TRUE(after_revoke);
  EXPECT_EQ(*after_revoke, 0);  // the lease no longer exists
  auto again = c->lease_revoke(revoked->id);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, etcd_error::not_found) << again.error().message;

  // A lease nobody renews expires, and its key with it (how a dead broker leaves the cluster).
  auto expiring = c->lease_grant(1);
  ASSERT_TRUE(expiring);
  ASSERT_TRUE(c->put("/tarn/brokers/2", "registered", expiring->id));
  const auto deadline = std::chrono::steady_clock::now() + event_timeout;
  bool expired = false;
  while (!expired && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(100ms);
    auto k = c->range("/tarn/brokers/2");
    ASSERT_TRUE(k);
    expired = k->kvs.empty();
  }
  EXPECT_TRUE(expired);
}

TEST_F(EtcdClient, WatchDeliversEveryChangeOnceInOrderAcrossAnEtcdRestart) {
  etcd_cluster etcd;
  ASSERT_TRUE(etcd.wait_ready(0)) << etcd.output(0);
  auto c = connect(etcd);
  ASSERT_TRUE(c);
  ASSERT_TRUE(c->put("/tarn/topics/before", "not seen"));
  auto start = c->range("/tarn/topics/");
  ASSERT_TRUE(start);

  event_log log;
  {
    etcd_watch watch(
        {etcd.endpoints(), 5000, 1000}, "/tarn/topics/", prefix_end("/tarn/topics/"),
        start->revision + 1, [&](const watch_response& w) { log.add(w); },
        [&](const etcd_error& e) { log.error(e); });
    auto a = c->put("/tarn/topics/a", "1");
    auto b = c->put("/tarn/topics/b", "2");
    auto d = c->delete_range("/tarn/topics/a");
    ASSERT_TRUE(a && b && d);
    ASSERT_TRUE(c->put("/tarn/elsewhere", "outside the range"));
    ASSERT_TRUE(log.wait_for(3));

    // etcd dies; writes fail as unavailable while it is down, and the watch resumes after it is
    // back, after the last revision it delivered: no event lost, none repeated.
    etcd.kill(0);
    auto down = c->put("/tarn/topics/c", "lost");
    ASSERT_FALSE(down);
    EXPECT_EQ(down.error().code, etcd_error::unavailable);
    etcd.start(0);
    ASSERT_TRUE(etcd.wait_ready(0)) << etcd.output(0);
    auto e = c->put("/tarn/topics/e", "5");
    ASSERT_TRUE(e) << e.error().message;
    ASSERT_TRUE(log.wait_for(4));

    const std::vector<std::string> expected = {
        "PUT /tarn/topics/a=1@" + std::to_string(*a),
        "PUT /tarn/topics/b=2@" + std::to_string(*b),
        "DELETE /tarn/topics/a@" + std::to_string(*d),
        "PUT /tarn/topics/e=5@" + std::to_string(*e),
    };
    EXPECT_EQ(log.lines(), expected);
    EXPECT_EQ(watch.next_revision(), *e + 1);
  }  // the destructor ends the stream and joins
  EXPECT_TRUE(log.errors().empty());
}

TEST_F(EtcdClient, FailsOverToAnotherMemberOfTheCluster) {
  etcd_cluster etcd(3);
  for (size_t i = 0; i < 3; ++i) ASSERT_TRUE(etcd.wait_ready(i)) << etcd.output(i);
  auto c = connect(etcd);
  ASSERT_TRUE(c);
  auto before = c->put("/tarn/k", "1");
  ASSERT_TRUE(before) << before.error().message;

  event_log log;
  etcd_watch watch(
      {etcd.endpoints(), 5000, 1000}, "/tarn/k", {}, *before + 1,
      [&](const watch_response& w) { log.add(w); }, [&](const etcd_error& e) { log.error(e); });
  // The member the client and the watch talk to first dies; the other two keep a quorum.
  etcd.kill(0);
  auto after = c->put("/tarn/k", "2");
  ASSERT_TRUE(after) << after.error().message;
  auto read = c->range("/tarn/k");
  ASSERT_TRUE(read);
  ASSERT_EQ(read->kvs.size(), 1u);
  EXPECT_EQ(read->kvs[0].value, "2");
  ASSERT_TRUE(log.wait_for(1));
  EXPECT_EQ(log.lines(), std::vector<std::string>{"PUT /tarn/k=2@" + std::to_string(*after)});
  EXPECT_TRUE(log.errors().empty());
}

TEST_F(EtcdClient, UnreachableEndpointsAndBadUrlsAreErrors) {
  auto c = etcd_client::create({{"http://127.0.0.1:" + std::to_string(free_port())}, 2000, 500});
  ASSERT_TRUE(c);
  auto r = (*c)->range("/x");
  ASSERT_FALSE(r);
  EXPECT_EQ(r.error().code, etcd_error::unavailable);

  for (const char* bad :
       {"127.0.0.1:2379", "http://127.0.0.1", "http://127.0.0.1:99999", "https://127.0.0.1:2379"}) {
    auto b = etcd_client::create({{bad}, 1000, 500});
    ASSERT_FALSE(b) << bad;
    EXPECT_EQ(b.error().code, etcd_error::invalid_argument) << bad;
  }
}

TEST_F(EtcdClient, ABrokerRegistersOnceAndItsSessionsEndUnregistersIt) {
  etcd_cluster etcd;
  ASSERT_TRUE(etcd.wait_ready(0)) << etcd.output(0);
  session_options options{{etcd.endpoints(), 5000, 1000}, 9000, 2000};
  auto first = etcd_session::open(options, nullptr);
  ASSERT_TRUE(first) << first.error().message;
  auto second = etcd_session::open(options, nullptr);
  ASSERT_TRUE(second);
  ASSERT_NE((*first)->lease_id(), (*second)->lease_id());

  auto epoch1 =
      create_on_lease((*first)->client(), "/tarn/brokers/1", "first", (*first)->lease_id());
  ASSERT_TRUE(epoch1) << epoch1.error().message;
  // The same broker id again while the first registration lives: refused, as Kafka refuses a
  // duplicate broker registration.
  auto duplicate =
      create_on_lease((*second)->client(), "/tarn/brokers/1", "second", (*second)->lease_id());
  ASSERT_FALSE(duplicate);
  EXPECT_EQ(duplicate.error().code, etcd_error::failed_precondition);
  EXPECT_NE(duplicate.error().message.find("'first'"), std::string::npos);

  first->reset();  // a clean shutdown revokes the lease: the registration goes at once
  auto gone = (*second)->client().range("/tarn/brokers/1");
  ASSERT_TRUE(gone);
  EXPECT_TRUE(gone->kvs.empty());
  auto epoch2 =
      create_on_lease((*second)->client(), "/tarn/brokers/1", "second", (*second)->lease_id());
  ASSERT_TRUE(epoch2) << epoch2.error().message;
  EXPECT_GT(*epoch2, *epoch1);  // the broker epoch grows with every registration
}

// Waits for a flag set by a callback on another thread.
class signal_flag {
 public:
  void set(std::string why = {}) {
    std::lock_guard lock(mu_);
    set_ = true;
    why_ = std::move(why);
    cv_.notify_all();
  }
  bool wait() {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, event_timeout, [&] { return set_; });
  }
  std::string why() {
    std::lock_guard lock(mu_);
    return why_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool set_ = false;
  std::string why_;
};

TEST_F(EtcdClient, ASessionThatStopsRenewingIsLostAndItsRegistrationExpires) {
  etcd_cluster etcd;
  ASSERT_TRUE(etcd.wait_ready(0)) << etcd.output(0);
  // A heartbeat interval longer than the session timeout: the lease expires before the first
  // renewal (a broker stalled in a long pause), and that renewal finds it gone.
  signal_flag lost;
  auto stalled = etcd_session::open({{etcd.endpoints(), 5000, 1000}, 1000, 2500},
                                    [&](const etcd_error& e) { lost.set(e.message); });
  ASSERT_TRUE(stalled);
  ASSERT_TRUE(
      create_on_lease((*stalled)->client(), "/tarn/brokers/7", "7", (*stalled)->lease_id()));
  ASSERT_TRUE(lost.wait());
  EXPECT_EQ(lost.why(), "the session's lease expired");
  EXPECT_FALSE((*stalled)->alive());
  auto gone = (*stalled)->client().range("/tarn/brokers/7");
  ASSERT_TRUE(gone);
  EXPECT_TRUE(gone->kvs.empty());
}

TEST_F(EtcdClient, ASessionCutOffFromEtcdForItsTimeoutIsLost) {
  etcd_cluster etcd;
  ASSERT_TRUE(etcd.wait_ready(0)) << etcd.output(0);
  signal_flag lost;
  auto session = etcd_session::open({{etcd.endpoints(), 500, 200}, 1000, 100},
                                    [&](const etcd_error& e) { lost.set(e.message); });
  ASSERT_TRUE(session);
  etcd.kill(0);
  ASSERT_TRUE(lost.wait());
  EXPECT_NE(lost.why().find("no lease renewal for broker.session.timeout.ms (1000 ms)"),
            std::string::npos)
      << lost.why();
}

TEST_F(EtcdClient, OneControllerAtATimeAndTheRoleMovesWhenItsSessionEnds) {
  etcd_cluster etcd;
  ASSERT_TRUE(etcd.wait_ready(0)) << etcd.output(0);
  const client_options client{etcd.endpoints(), 5000, 1000};
  struct observed {
    std::mutex mu;
    std::condition_variable cv;
    std::vector<std::tuple<bool, std::string, int64_t>> changes;
  };
  auto candidate = [&](observed& o, int64_t lease, const std::string& name) {
    return std::make_unique<controller_election>(
        client, "/tarn/controller", name, lease,
        [&o](bool is_controller, const std::string& controller, int64_t epoch) {
          std::lock_guard lock(o.mu);
          o.changes.emplace_back(is_controller, controller, epoch);
          o.cv.notify_all();
        });
  };
  auto wait_changes = [](observed& o, size_t n) {
    std::unique_lock lock(o.mu);
    return o.cv.wait_for(lock, event_timeout, [&] { return o.changes.size() >= n; });
  };

  auto session1 = etcd_session::open({client, 9000, 2000}, nullptr);
  auto session2 = etcd_session::open({client, 9000, 2000}, nullptr);
  ASSERT_TRUE(session1 && session2);
  observed o1, o2;
  auto election1 = candidate(o1, (*session1)->lease_id(), "broker-1");
  ASSERT_TRUE(wait_changes(o1, 1));
  auto election2 = candidate(o2, (*session2)->lease_id(), "broker-2");
  ASSERT_TRUE(wait_changes(o2, 1));
  const auto [first_is, first_name, first_epoch] = o1.changes[0];
  EXPECT_TRUE(first_is);
  EXPECT_EQ(first_name, "broker-1");
  EXPECT_EQ(o2.changes[0], std::make_tuple(false, std::string("broker-1"), first_epoch));

  // broker-1 shuts down: its lease is revoked, the key goes, broker-2 takes over with a higher
  // epoch (a stale controller's epoch can be told from the new one).
  election1.reset();
  session1->reset();
  ASSERT_TRUE(wait_changes(o2, 2));
  const auto [second_is, second_name, second_epoch] = o2.changes[1];
  EXPECT_TRUE(second_is);
  EXPECT_EQ(second_name, "broker-2");
  EXPECT_GT(second_epoch, first_epoch);
}

// Polls `done` until it holds or event_timeout passes.
template <typename F>
bool eventually(F done) {
  const auto deadline = std::chrono::steady_clock::now() + event_timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(20ms);
  }
  return true;
}

// Brokers 1 and 2 of one cluster: their metadata stores on the one log in etcd.
struct two_brokers {
  etcd_cluster etcd;
  std::unique_ptr<cluster::etcd_metadata_store> one;
  std::unique_ptr<cluster::etcd_metadata_store> two;
};

// Waits for b's etcd, then opens both stores on the log under `prefix`. Call under
// ASSERT_NO_FATAL_FAILURE.
void open_two_brokers(two_brokers& b, const std::string& prefix) {
  ASSERT_TRUE(b.etcd.wait_ready(0)) << b.etcd.output(0);
  const client_options client{b.etcd.endpoints(), 5000, 1000};
  for (const auto& [node_id, store] : {std::pair{1, &b.one}, std::pair{2, &b.two}}) {
    auto opened = cluster::etcd_metadata_store::open({client, prefix, node_id});
    ASSERT_TRUE(opened) << opened.error().message;
    *store = std::move(*opened);
  }
}

TEST_F(EtcdClient, MetadataStoresOfOneClusterFollowOneLogOfChanges) {
  using namespace tarn::cluster;
  etcd_cluster etcd;
  ASSERT_TRUE(etcd.wait_ready(0)) << etcd.output(0);
  const etcd_metadata_options options{{etcd.endpoints(), 5000, 1000}, "/tarn/test-cluster/"};
  auto a = etcd_metadata_store::open(options);
  ASSERT_TRUE(a) << a.error().message;
  auto b = etcd_metadata_store::open(options);
  ASSERT_TRUE(b) << b.error().message;

  // Broker a creates a topic and sets a cluster-wide config; broker b's image follows.
  const storage::topic_record orders{"orders", uuid::random(), 3, {{"cleanup.policy", "compact"}}};
  ASSERT_TRUE((*a)->topic_journal().topic_created(orders));
  ASSERT_TRUE((*a)->set_broker_configs("", {{"log.retention.ms", "1000"}}));
  ASSERT_TRUE(eventually([&] { return (*b)->end_offset() == 2; })) << (*b)->end_offset();
  auto topics = (*b)->topic_journal().load_topics();
  ASSERT_TRUE(topics);
  ASSERT_EQ(topics->size(), 1u);
  EXPECT_EQ((*topics)[0].name, "orders");
  EXPECT_EQ((*topics)[0].topic_id, orders.topic_id);
  EXPECT_EQ((*topics)[0].partitions, 3);
  EXPECT_EQ((*topics)[0].overrides, orders.overrides);
  EXPECT_EQ((*b)->broker_configs("").at("log.retention.ms"), "1000");

  // And the other way round.
  ASSERT_TRUE((*b)->set_feature_levels({{"metadata.version", 27}}));
  ASSERT_TRUE(
      eventually([&] { return (*a)->finalized_features().count("metadata.version") == 1; }));
  EXPECT_EQ((*a)->finalized_features().at("metadata.version"), 27);

  // A writer whose image is behind cannot append over a newer change: an entry written behind
  // a's back takes the next offset; a's next change either waits for it (refused as written by
  // another writer first, then decided again on the newer image) or follows it.
  auto raw = etcd_client::create(options.client);
  ASSERT_TRUE(raw);
  const int64_t next = (*a)->end_offset();
  const auto entry =
      encode_entry({next, {config_record{config_resource_broker, "2", "num.io.threads", "4"}}});
  auto written =
      (*raw)->put((*a)->log().entry_key(next),
                  std::string(reinterpret_cast<const char*>(entry.data()), entry.size()));
  ASSERT_TRUE(written);
  auto change = (*a)->set_broker_configs("1", {{"num.network.threads", "2"}});
  if (!change) {
    EXPECT_NE(change.error().message.find("written by another writer first"), std::string::npos)
        << change.error().message;
    ASSERT_TRUE(eventually([&] { return (*a)->end_offset() == next + 1; }));
    ASSERT_TRUE((*a)->set_broker_configs("1", {{"num.network.threads", "2"}}));
  }
  EXPECT_EQ((*a)->end_offset(), next + 2);
  ASSERT_TRUE(eventually([&] { return (*b)->end_offset() == next + 2; }));
  EXPECT_EQ((*b)->broker_configs("2").at("num.io.threads"), "4");
  EXPECT_EQ((*b)->broker_configs("1").at("num.network.threads"), "2");

  // A broker started later reads the whole log: the same image.
  auto c = etcd_metadata_store::open(options);
  ASSERT_TRUE(c) << c.error().message;
  const auto image_a = (*a)->image();
  const auto image_c = (*c)->image();
  EXPECT_EQ(image_c.next_offset, image_a.next_offset);
  EXPECT_EQ(image_c.to_records().size(), image_a.to_records().size());
  EXPECT_EQ(image_c.configs, image_a.configs);
  EXPECT_EQ(image_c.features, image_a.features);
  ASSERT_EQ(image_c.topics.size(), 1u);
  EXPECT_EQ(image_c.topics.begin()->second.name, "orders");

  // Another cluster's prefix is another log.
  auto other = etcd_metadata_store::open({options.client, "/tarn/other-cluster/"});
  ASSERT_TRUE(other);
  EXPECT_EQ((*other)->end_offset(), 0);
}

// In a cluster each broker's store records itself as the leader of the topics it creates, loads
// only those into its log manager, and refuses a name another broker has taken, an internal
// topic's too.
TEST_F(EtcdClient, BrokersOfAClusterLoadOnlyTheTopicsTheyLead) {
  using namespace tarn::cluster;
  two_brokers b;
  ASSERT_NO_FATAL_FAILURE(open_two_brokers(b, "/tarn/owners/"));
  auto& one = b.one;
  auto& two = b.two;
  std::vector<int64_t> remote_offsets;
  std::mutex mu;
  two->log().on_remote_change([&](const metadata_entry& e) {
    std::lock_guard g(mu);
    remote_offsets.push_back(e.offset);
  });

  const storage::topic_record orders{"orders", uuid::random(), 2, {}};
  ASSERT_TRUE(one->topic_journal().topic_created(orders));
  ASSERT_TRUE(eventually([&] { return two->end_offset() == 1; }));
  {
    std::lock_guard g(mu);
    EXPECT_EQ(remote_offsets, std::vector<int64_t>{0});
  }
  EXPECT_EQ(two->image().topics.at(orders.topic_id).leader, 1);
  auto ones = one->topic_journal().load_topics();
  auto twos = two->topic_journal().load_topics();
  ASSERT_TRUE(ones && twos);
  ASSERT_EQ(ones->size(), 1u);
  EXPECT_EQ((*ones)[0].name, "orders");
  EXPECT_TRUE(twos->empty()) << "broker 2 must not open logs of broker 1's topic";

  // The name is taken cluster-wide, the internal topics' too (docs/cluster.md, "Coordinators"):
  // two brokers creating __transaction_state at once (FindCoordinator on one, Metadata on the
  // other) leave one topic, not one led by each.
  auto again = two->topic_journal().topic_created({"orders", uuid::random(), 1, {}});
  ASSERT_FALSE(again);
  EXPECT_EQ(again.error().code, storage::storage_errc::already_exists);
  int64_t end = 1;
  for (const std::string internal :
       {"__transaction_state", "__consumer_offsets", "__share_group_state"}) {
    ASSERT_TRUE(one->topic_journal().topic_created({internal, uuid::random(), 1, {}}));
    ++end;
    ASSERT_TRUE(eventually([&] { return two->end_offset() == end; })) << internal;
    auto taken = two->topic_journal().topic_created({internal, uuid::random(), 1, {}});
    ASSERT_FALSE(taken) << internal;
    EXPECT_EQ(taken.error().code, storage::storage_errc::already_exists) << internal;
  }
  twos = two->topic_journal().load_topics();
  ASSERT_TRUE(twos);
  EXPECT_TRUE(twos->empty()) << "broker 2 must not open logs of broker 1's topics";
  // A partition broker 1 adds is recorded with it as leader too. Broker 1 may not have seen
  // broker 2's last change yet: its append then loses the race, catches up and goes after it.
  auto grown = one->topic_journal().partitions_created({"orders", orders.topic_id, 3, {}}, 2);
  ASSERT_TRUE(grown) << grown.error().message;
  ASSERT_TRUE(eventually([&] { return two->end_offset() == end + 1; }));
  EXPECT_EQ(two->image().topics.at(orders.topic_id).partitions, 3);
  EXPECT_EQ(two->image().topics.at(orders.topic_id).leader, 1);
}

// Config changes reach a store's observer whoever made them (docs/cluster.md, "Dynamic
// configs"): each change once, with the resources it touched, the store's own appends and
// another broker's (the watch) alike. A topic's configs are set through a store that holds no
// copy of the topic (decided on the image, refused for an unknown topic), and a copy's change
// records only what turns the image's configs into the copy's new ones, so a change another
// broker made meanwhile to another key stays.
TEST_F(EtcdClient, ConfigChangesReachTheObserverFromEveryBroker) {
  using namespace tarn::cluster;
  two_brokers b;
  ASSERT_NO_FATAL_FAILURE(open_two_brokers(b, "/tarn/configs/"));
  auto& one = b.one;
  auto& two = b.two;
  std::mutex mu;
  std::vector<std::vector<config_resource>> seen_one, seen_two;
  one->observe_config_changes([&](const std::vector<config_resource>& r) {
    std::lock_guard g(mu);
    seen_one.push_back(r);
  });
  two->observe_config_changes([&](const std::vector<config_resource>& r) {
    std::lock_guard g(mu);
    seen_two.push_back(r);
  });
  auto count = [&](const auto& seen) {
    std::lock_guard g(mu);
    return seen.size();
  };

  ASSERT_TRUE(one->set_broker_configs("", {{"message.max.bytes", "5000"}}));
  ASSERT_TRUE(one->set_broker_configs("3", {{"message.max.bytes", "50000"}}));
  ASSERT_TRUE(eventually([&] { return count(seen_two) == 2; }));
  {
    std::lock_guard g(mu);
    const std::vector<std::vector<config_resource>> want = {{{config_resource_broker, ""}},
                                                            {{config_resource_broker, "3"}}};
    EXPECT_EQ(seen_one, want);
    EXPECT_EQ(seen_two, want);
  }
  // A change without configs tells nothing; a new topic's configs are a change of the topic.
  const storage::topic_record orders{"orders", uuid::random(), 1, {{"retention.ms", "1000"}}};
  ASSERT_TRUE(one->topic_journal().topic_created(orders));
  ASSERT_TRUE(one->set_feature_levels({{"metadata.version", 27}}));
  ASSERT_TRUE(eventually([&] { return two->end_offset() == 4; }));
  EXPECT_EQ(count(seen_one), 3u);
  EXPECT_EQ(count(seen_two), 3u);

  // Broker 2 holds no copy of orders: its configs are set on the image.
  ASSERT_TRUE(two->change_topic_configs("orders", {{"retention.ms", "1000"}},
                                        {{"retention.ms", "1000"}, {"max.message.bytes", "5000"}}));
  EXPECT_EQ(two->topic_configs("orders").at("max.message.bytes"), "5000");
  ASSERT_TRUE(eventually([&] { return count(seen_one) == 4; }));
  EXPECT_EQ(one->topic_configs("orders").size(), 2u);
  auto unknown = two->change_topic_configs("nothing", {}, {{"retention.ms", "1"}});
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().code, storage::storage_errc::not_found);

  // Broker 1's copy still has the overrides it created the topic with; its change of
  // retention.ms keeps the max.message.bytes broker 2 set.
  storage::topic_record changed = orders;
  changed.overrides["retention.ms"] = "2000";
  ASSERT_TRUE(one->topic_journal().topic_config_changed(changed, orders.overrides));
  ASSERT_TRUE(eventually([&] { return count(seen_two) == 5; }));
  const storage::config_map want = {{"max.message.bytes", "5000"}, {"retention.ms", "2000"}};
  EXPECT_EQ(two->topic_configs("orders"), want);
  EXPECT_EQ(one->topic_configs("orders"), want);

  // Removed, the observer hears nothing more.
  two->observe_config_changes({});
  ASSERT_TRUE(one->set_broker_configs("", {}));
  ASSERT_TRUE(eventually([&] { return two->broker_configs("").empty(); }));
  EXPECT_EQ(count(seen_two), 5u);
}

TEST_F(EtcdClient, ACorruptMetadataEntryStopsFollowersAndRefusesToOpen) {
  using namespace tarn::cluster;
  etcd_cluster etcd;
  ASSERT_TRUE(etcd.wait_ready(0)) << etcd.output(0);
  const etcd_metadata_options options{{etcd.endpoints(), 5000, 1000}, "/tarn/c/"};
  auto a = etcd_metadata_store::open(options);
  ASSERT_TRUE(a);
  ASSERT_TRUE((*a)->set_broker_configs("", {{"log.retention.ms", "1000"}}));
  auto raw = etcd_client::create(options.client);
  ASSERT_TRUE(raw);
  auto entry = encode_entry({1, {config_record{config_resource_broker, "", "x", "y"}}});
  entry.back() ^= 0x01;  // the CRC no longer matches
  ASSERT_TRUE((*raw)->put((*a)->log().entry_key(1),
                          std::string(reinterpret_cast<const char*>(entry.data()), entry.size())));

  ASSERT_TRUE(eventually([&] { return !(*a)->log().follow_error().empty(); }));
  EXPECT_NE((*a)->log().follow_error().find("is not a valid change"), std::string::npos)
      << (*a)->log().follow_error();
  auto refused = (*a)->set_broker_configs("", {});
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().code, storage::storage_errc::io_error);
  EXPECT_EQ((*a)->broker_configs("").count("x"), 0u);  // nothing of it applied

  auto reopened = etcd_metadata_store::open(options);
  ASSERT_FALSE(reopened);
  EXPECT_EQ(reopened.error().code, storage::storage_errc::corrupt);

  etcd.kill(0);
  auto unreachable = etcd_metadata_store::open(options);
  ASSERT_FALSE(unreachable);
  EXPECT_EQ(unreachable.error().code, storage::storage_errc::io_error);
}

TEST_F(EtcdClient, PartitionStateIsOnlyWrittenByCompareAndSwap) {
  using namespace tarn::cluster;
  etcd_cluster etcd;
  ASSERT_TRUE(etcd.wait_ready(0)) << etcd.output(0);
  auto c = connect(etcd);
  ASSERT_TRUE(c);
  etcd_partition_store store(*c, "/tarn/c/");
  const uuid topic = uuid::random();
  const partition_state initial{{1, 2, 3}, {1, 2, 3}, 1, 0, 0};
  auto created = store.create(topic, 0, initial);
  ASSERT_TRUE(created) << created.error().message;
  EXPECT_TRUE(*created);
  auto again = store.create(topic, 0, partition_state{{9}, {9}, 9, 0, 0});
  ASSERT_TRUE(again);
  EXPECT_FALSE(*again);  // it exists: never overwritten by a create
  ASSERT_TRUE(store.create(topic, 1, partition_state{{2, 3, 1}, {2, 3, 1}, 2, 0, 0}));

  // Two controllers read the same state; the first write wins, the second is refused.
  auto read = store.read(topic, 0);
  ASSERT_TRUE(read && *read);
  EXPECT_EQ((*read)->state, initial);
  auto broker1_fenced = live_brokers_except({1, 2, 3}, 1);
  auto moved = on_broker_unavailable((*read)->state, 1, broker1_fenced, false);
  ASSERT_TRUE(moved);
  auto first = store.compare_and_set(topic, 0, (*read)->mod_revision, *moved);
  ASSERT_TRUE(first);
  EXPECT_TRUE(*first);
  auto stale = store.compare_and_set(topic, 0, (*read)->mod_revision,
                                     partition_state{{1, 2, 3}, {1}, 1, 1, 1});
  ASSERT_TRUE(stale);
  EXPECT_FALSE(*stale);
  auto now = store.read(topic, 0);
  ASSERT_TRUE(now && *now);
  EXPECT_EQ((*now)->state, *moved);
  EXPECT_EQ((*now)->state.leader, 2);

  // The deposed leader's AlterPartition is fenced by its leader epoch; the new leader's shrink
  // lands, and repeating it with the old partition epoch is refused.
  const broker_states brokers = live_brokers_except({1, 2, 3}, 1);
  auto deposed = store.alter_partition(topic, 0, {1, 0, 0, {{1, -1}, {2, -1}}}, brokers);
  ASSERT_TRUE(deposed);
  EXPECT_EQ(deposed->error, protocol::error_code::fenced_leader_epoch);
  auto shrink = store.alter_partition(
      topic, 0, {2, moved->leader_epoch, moved->partition_epoch, {{2, 102}}}, brokers);
  ASSERT_TRUE(shrink);
  ASSERT_EQ(shrink->error, protocol::error_code::none);
  EXPECT_EQ(shrink->state.isr, std::vector<int32_t>{2});
  auto repeated = store.alter_partition(
      topic, 0, {2, moved->leader_epoch, moved->partition_epoch, {{2, 102}, {3, 103}}}, brokers);
  ASSERT_TRUE(repeated);
  EXPECT_EQ(repeated->error, protocol::error_code::invalid_update_version);
  auto unknown = store.alter_partition(topic, 7, {2, 0, 0, {{2, 102}}}, brokers);
  ASSERT_TRUE(unknown);
  EXPECT_EQ(unknown->error, protocol::error_code::unknown_topic_or_partition);

  auto all = store.read_topic(topic);
  ASSERT_TRUE(all);
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ(all->at(0).state, shrink->state);
  EXPECT_EQ(all->at(1).state.leader, 2);

  // What is not a partition state is an error naming the key, not a default state.
  ASSERT_TRUE(c->put(store.key(topic, 2), "{\"leader\":1}"));
  auto bad = store.read(topic, 2);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find(store.key(topic, 2)), std::string::npos);
}

// Producer ids in a cluster (docs/cluster.md, "Producer ids"): blocks of 1000 from one key by
// compare-and-swap. Two brokers' allocators racing on the key (two threads, two clients) never
// take the same block, and two brokers' sources never hand out the same id.
TEST_F(EtcdClient, ProducerIdBlocksOfTwoBrokersNeverOverlap) {
  using namespace tarn::cluster;
  etcd_cluster etcd;
  ASSERT_TRUE(etcd.wait_ready(0)) << etcd.output(0);
  const std::string key = producer_ids_key("/tarn/c/");
  EXPECT_EQ(key, "/tarn/c/producer-ids");

  // The race: each thread takes 6 blocks as fast as it can, on a client of its own.
  constexpr int blocks_each = 6;
  std::vector<int64_t> firsts[2];
  std::string errors[2];
  {
    auto c0 = connect(etcd);
    auto c1 = connect(etcd);
    ASSERT_TRUE(c0 && c1);
    std::atomic<int> ready{0};
    auto take = [&](etcd_client& c, int i) {
      ready.fetch_add(1);
      while (ready.load() < 2) std::this_thread::yield();
      for (int n = 0; n < blocks_each; ++n) {
        auto b = allocate_producer_id_block(c, key);
        if (!b) {
          errors[i] = b.error().message;
          return;
        }
        firsts[i].push_back(*b);
      }
    };
    std::thread t0(take, std::ref(*c0), 0);
    std::thread t1(take, std::ref(*c1), 1);
    t0.join();
    t1.join();
  }
  ASSERT_EQ(errors[0], "");
  ASSERT_EQ(errors[1], "");
  std::set<int64_t> all;
  for (const auto& f : firsts) {
    ASSERT_EQ(f.size(), static_cast<size_t>(blocks_each));
    EXPECT_TRUE(std::is_sorted(f.begin(), f.end()));  // one broker's blocks only go up
    all.insert(f.begin(), f.end());
  }
  ASSERT_EQ(all.size(), static_cast<size_t>(2 * blocks_each)) << "a block taken twice";
  EXPECT_EQ(*all.begin(), 0);
  EXPECT_EQ(*all.rbegin(), (2 * blocks_each - 1) * producer_id_block_size);  // none skipped
  auto c = connect(etcd);
  ASSERT_TRUE(c);
  auto stored = c->range(key);
  ASSERT_TRUE(stored);
  ASSERT_EQ(stored->kvs.size(), 1u);
  EXPECT_EQ(stored->kvs[0].value, std::to_string(2 * blocks_each * producer_id_block_size));

  // Two brokers' sources: the first id before any block is Kafka's retriable answer, then 1,500
  // ids each (two blocks, the second fetched ahead at 90%), none handed out twice.
  auto source = [&] {
    auto client = connect(etcd);
    return std::make_unique<producer_id_blocks>(std::move(client), key);
  };
  auto broker1 = source();
  auto broker2 = source();
  auto early = broker1->next();
  ASSERT_FALSE(early);
  EXPECT_EQ(early.error(), protocol::error_code::coordinator_load_in_progress);
  ASSERT_TRUE(broker2->wait_for_block(std::chrono::seconds(5)));
  std::vector<int64_t> ids[2];
  auto drain = [&](producer_id_blocks& b, int i) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
    while (ids[i].size() < 1500 && std::chrono::steady_clock::now() < deadline) {
      auto id = b.next();
      if (id) {
        ids[i].push_back(*id);
      } else {
        EXPECT_EQ(id.error(), protocol::error_code::coordinator_load_in_progress);
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
    }
  };
  std::thread d1(drain, std::ref(*broker1), 0);
  std::thread d2(drain, std::ref(*broker2), 1);
  d1.join();
  d2.join();
  std::set<int64_t> handed;
  for (const auto& v : ids) {
    ASSERT_EQ(v.size(), 1500u);
    handed.insert(v.begin(), v.end());
    for (int64_t id : v) EXPECT_GE(id, 2 * blocks_each * producer_id_block_size);
  }
  EXPECT_EQ(handed.size(), 3000u) << "an id handed out by both brokers";

  broker1.reset();  // no fetch of theirs lands after the write below
  broker2.reset();

  // A value that is not a number is an error naming the key, never a block from 0 again.
  ASSERT_TRUE(c->put(key, "not a number"));
  auto bad = allocate_producer_id_block(*c, key);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().message.find(key), std::string::npos);

  // etcd out of reach: no block, and InitProducerId's answer stays the retriable one.
  auto gone = etcd_client::create({{"http://127.0.0.1:" + std::to_string(free_port())}, 1000, 300});
  ASSERT_TRUE(gone);
  producer_id_blocks cut_off(std::move(*gone), key);
  EXPECT_FALSE(cut_off.wait_for_block(std::chrono::seconds(3)));
  auto refused = cut_off.next();
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error(), protocol::error_code::coordinator_load_in_progress);
}

}  // namespace
}  // namespace tarn::test
