// A broker's membership of a cluster on etcd: its session, its registration under
// <prefix>brokers/<node.id> (Kafka's RegisterBrokerRecord: node id, incarnation id, the advertised
// listeners, the rack; the key's create revision is the broker epoch), its candidacy for
// controller, and the live brokers as every registration key on a live lease shows them.
// A broker that dies leaves the list when its lease expires; one that stops cleanly revokes it.
// A broker whose session is lost (its lease expired: paused, cut off from etcd) is fenced, as
// Kafka's broker that misses its heartbeats: it gives up the controller role and registers
// again, on a new lease and so with a new broker epoch, as soon as etcd answers (KIP-903: its
// old epoch can no longer join an ISR).
//
// Thread-safety: every member may be called from any thread; the lists are copied under a lock
// the etcd watch and the election update them under.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "cluster/etcd_session.h"

namespace tarn::cluster {

struct broker_endpoint {
  std::string name;  // the listener's name, e.g. PLAINTEXT
  std::string host;
  int32_t port = 0;
  bool operator==(const broker_endpoint&) const = default;
};

struct broker_registration {
  int32_t node_id = 0;
  std::string incarnation_id;  // a fresh uuid per start, as Kafka's
  std::vector<broker_endpoint> listeners;
  std::optional<std::string> rack;
  // Kafka's BrokerRegistrationChangeRecord.InControlledShutdown: the broker is stopping and asks
  // the controller to move its leaderships away (KIP-841: it may neither lead nor join an ISR).
  bool in_controlled_shutdown = false;
  // KIP-966's PreviousBrokerEpoch: the broker epoch this broker's previous registration ended
  // with when it ended cleanly (its clean-shutdown marker's, or the registration a fenced broker
  // had before it registered again), -1 otherwise. The controller reads an ELR member that
  // registered again with any other value as an unclean shutdown (it leaves the ELR).
  int64_t previous_broker_epoch = -1;
  int64_t epoch = 0;  // the key's create revision (not in the value)
  bool operator==(const broker_registration&) const = default;

  // This broker's endpoint on `listener`, or null when it has none (Kafka then leaves the broker
  // out of a Metadata answer on that listener).
  const broker_endpoint* endpoint(std::string_view listener) const;
};

// The value under brokers/<id>: JSON, so that `etcdctl get` shows it.
std::string encode_broker_registration(const broker_registration& r);
// nullopt when `text` is not a registration (wrong JSON, missing or mistyped fields).
std::optional<broker_registration> decode_broker_registration(std::string_view text);

struct membership_options {
  etcd::session_options session;
  std::string prefix;  // the cluster's keys, "/tarn/<cluster.id>/"
  broker_registration self;
};

// What happens to a membership after it joined (docs/cluster.md, "Fenced brokers"), told on the
// membership's own thread, in this order for each loss: `fenced` when the session is lost (the
// broker must stop acting as a member: leading, controlling), then `unfenced` once it registered
// again with a new broker epoch, or `fatal` when it never can: another live broker registered
// under its node.id meanwhile (DUPLICATE_BROKER_REGISTRATION). None is called under a lock of
// the membership.
struct membership_events {
  std::function<void(const std::string& why)> fenced;
  std::function<void(int64_t broker_epoch)> unfenced;
  std::function<void(const std::string& why)> fatal;
};

class cluster_membership {
 public:
  // Opens the session, registers (refused, with Kafka's DUPLICATE_BROKER_REGISTRATION meaning,
  // while another live broker holds the id), reads the live brokers and follows them, and
  // starts the controller election. An error is a sentence for the operator.
  static result<std::unique_ptr<cluster_membership>, std::string> join(membership_options options,
                                                                       membership_events events);
  // Leaves: stops the election and the watch, revokes the lease (the registration goes at once).
  ~cluster_membership();
  cluster_membership(const cluster_membership&) = delete;
  cluster_membership& operator=(const cluster_membership&) = delete;

  // The live brokers by node id (this one included while its session lives).
  std::vector<broker_registration> live_brokers() const;
  // The controller's node id from the election, -1 while there is none. While this broker is
  // fenced it follows no election: as a fenced Kafka 4.4 broker, which reports a random
  // unfenced broker of its metadata (never itself), it reports the controller it last saw if
  // that is another broker still listed live, else the first other live broker, else -1.
  int32_t controller_id() const;
  // Whether this broker holds the controller role, and the role's epoch (the controller key's
  // create revision) when it does.
  bool is_controller() const { return is_controller_.load(); }
  int64_t controller_epoch() const { return controller_epoch_.load(); }
  // Called on the watch's or the election's thread after the live brokers or the controller
  // changed, and once at once; it must only signal (partition_controller does its work on its
  // own thread). An empty function removes it; set_listener returns when no call is running.
  void set_listener(std::function<void()> listener);
  // The current registration's epoch (a new one after each registration again).
  int64_t broker_epoch() const { return broker_epoch_.load(); }
  // False from the session's loss until the broker registered again.
  bool alive() const { return !fenced_.load(); }

  // Controlled shutdown (controlled.shutdown.enable, docs/cluster.md): rewrites this broker's
  // registration with in_controlled_shutdown set, on the same lease and only while the key is
  // still this registration (its create revision is the broker epoch), so the broker epoch does
  // not change; the controller then moves every leadership away and takes the broker out of
  // every ISR where it is not the last member. An error is a sentence for the log.
  result<void, std::string> begin_controlled_shutdown();

 private:
  explicit cluster_membership(membership_options options, membership_events events)
      : options_(std::move(options)), events_(std::move(events)) {}
  void on_brokers(const etcd::watch_response& w);
  void on_brokers_locked(const etcd::watch_response& w, const std::string& brokers_prefix);
  void notify_listener();
  // Opens a session whose loss wakes run_rejoin().
  result<std::unique_ptr<etcd::etcd_session>, etcd::etcd_error> open_session();
  // Creates brokers/<node.id> on the session's lease: the broker epoch, or the error (its code
  // failed_precondition while another lease holds the key).
  result<int64_t, etcd::etcd_error> register_on(etcd::etcd_session& session);
  // Starts the controller election on the session's lease; its verdicts count only while
  // `generation` is current (a fenced broker's old candidacy reports nothing more).
  void start_election(int64_t lease, uint64_t generation);
  // The membership's own thread: after a loss, fences, then registers again (or gives up).
  void run_rejoin();
  // One attempt at registering again; true when done (registered, fatal, or stopping).
  bool rejoin_once(int64_t old_lease);

  membership_options options_;
  membership_events events_;
  // The session and the election; replaced when the broker registers again (under session_mu_).
  mutable std::mutex session_mu_;
  std::unique_ptr<etcd::etcd_session> session_;
  std::atomic<int64_t> broker_epoch_{0};
  std::atomic<bool> fenced_{false};
  // The election's verdicts are stored under role_mu_ and only for the current generation.
  std::mutex role_mu_;
  uint64_t generation_ = 0;
  // run_rejoin's signals (under rejoin_mu_).
  std::mutex rejoin_mu_;
  std::condition_variable rejoin_cv_;
  bool session_lost_ = false;
  std::string lost_why_;
  bool stopping_ = false;
  std::thread rejoin_thread_;
  std::atomic<int32_t> controller_id_{-1};
  std::atomic<bool> is_controller_{false};
  std::atomic<int64_t> controller_epoch_{0};
  std::mutex listener_mu_;  // held around every call of listener_
  std::function<void()> listener_;
  mutable std::mutex mu_;
  std::map<int32_t, broker_registration> brokers_;
  std::unique_ptr<etcd::etcd_watch> watch_;
  std::unique_ptr<etcd::controller_election> election_;
};

// The cluster id kept in etcd at <root>cluster/id, as ZooKeeper-era Kafka kept it at /cluster/id:
// created by the first broker with `proposed` (its meta.properties' id, or a fresh one), read by
// every other. Returns the cluster's id.
result<std::string, std::string> agree_cluster_id(const std::vector<std::string>& endpoints,
                                                  const std::string& root,
                                                  const std::string& proposed);

// etcd.connect's entries as endpoint URLs: "host:port" becomes "http://host:port".
std::vector<std::string> etcd_endpoint_urls(const std::vector<std::string>& connect);

}  // namespace tarn::cluster
