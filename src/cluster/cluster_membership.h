// A broker's membership of a cluster on etcd: its session, its registration under
// <prefix>brokers/<node.id> (Kafka's RegisterBrokerRecord: node id, incarnation id, the advertised
// listeners, the rack; the key's create revision is the broker epoch), its candidacy for
// controller, and the live brokers as every registration key on a live lease shows them.
// A broker that dies leaves the list when its lease expires; one that stops cleanly revokes it.
//
// Thread-safety: every member may be called from any thread; the lists are copied under a lock
// the etcd watch and the election update them under.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
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

class cluster_membership {
 public:
  // Called once, on the session's thread, when the session is lost (docs/cluster.md).
  using lost_handler = std::function<void(const std::string& why)>;

  // Opens the session, registers (refused, with Kafka's DUPLICATE_BROKER_REGISTRATION meaning,
  // while another live broker holds the id), reads the live brokers and follows them, and
  // starts the controller election. An error is a sentence for the operator.
  static result<std::unique_ptr<cluster_membership>, std::string> join(membership_options options,
                                                                       lost_handler on_lost);
  // Leaves: stops the election and the watch, revokes the lease (the registration goes at once).
  ~cluster_membership();
  cluster_membership(const cluster_membership&) = delete;
  cluster_membership& operator=(const cluster_membership&) = delete;

  // The live brokers by node id (this one included while its session lives).
  std::vector<broker_registration> live_brokers() const;
  // The controller's node id from the election, -1 while there is none.
  int32_t controller_id() const { return controller_id_.load(); }
  // Whether this broker holds the controller role, and the role's epoch (the controller key's
  // create revision) when it does.
  bool is_controller() const { return is_controller_.load(); }
  int64_t controller_epoch() const { return controller_epoch_.load(); }
  // Called on the watch's or the election's thread after the live brokers or the controller
  // changed, and once at once; it must only signal (partition_controller does its work on its
  // own thread). An empty function removes it; set_listener returns when no call is running.
  void set_listener(std::function<void()> listener);
  int64_t broker_epoch() const { return broker_epoch_; }
  bool alive() const { return session_ && session_->alive(); }

  // Controlled shutdown (controlled.shutdown.enable, docs/cluster.md): rewrites this broker's
  // registration with in_controlled_shutdown set, on the same lease and only while the key is
  // still this registration (its create revision is the broker epoch), so the broker epoch does
  // not change; the controller then moves every leadership away and takes the broker out of
  // every ISR where it is not the last member. An error is a sentence for the log.
  result<void, std::string> begin_controlled_shutdown();

 private:
  explicit cluster_membership(membership_options options) : options_(std::move(options)) {}
  void on_brokers(const etcd::watch_response& w);
  void on_brokers_locked(const etcd::watch_response& w, const std::string& brokers_prefix);
  void notify_listener();

  membership_options options_;
  std::unique_ptr<etcd::etcd_session> session_;
  int64_t broker_epoch_ = 0;
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
