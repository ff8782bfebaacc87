// A broker's session with etcd, and what hangs on it: the broker's registration and its
// candidacy for controller. The session is an etcd lease renewed every
// `broker.heartbeat.interval.ms` that expires `broker.session.timeout.ms` after the last renewal
// (Kafka's names for the same two bounds under KRaft), so a broker that dies or is cut off from
// etcd leaves the cluster, and gives up the controller role, without anyone acting for it.
//
// Thread-safety: callbacks run on the session's and the election's own threads; every member
// may be called from any thread.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "cluster/etcd_client.h"

namespace tarn::cluster::etcd {

struct session_options {
  client_options client;
  int64_t session_timeout_ms = 9000;  // broker.session.timeout.ms: the lease's TTL (whole seconds)
  int64_t heartbeat_interval_ms = 2000;  // broker.heartbeat.interval.ms: between renewals
};

class etcd_session {
 public:
  // Called once, on the session's thread, when the lease is gone: it expired (etcd answered a
  // renewal with TTL 0) or no renewal got through for a whole session timeout.
  using lost_handler = std::function<void(const etcd_error&)>;

  // Grants the lease and starts renewing it.
  static result<std::unique_ptr<etcd_session>, etcd_error> open(session_options options,
                                                                lost_handler on_lost);
  // Revokes the lease (a clean shutdown leaves the cluster at once) and stops.
  ~etcd_session();
  etcd_session(const etcd_session&) = delete;
  etcd_session& operator=(const etcd_session&) = delete;

  int64_t lease_id() const { return lease_id_; }
  bool alive() const { return !lost_.load(); }
  etcd_client& client() { return *client_; }

 private:
  etcd_session(session_options options, std::unique_ptr<etcd_client> client, int64_t lease_id,
               lost_handler on_lost);
  void run();

  session_options options_;
  std::unique_ptr<etcd_client> client_;
  int64_t lease_id_;
  lost_handler on_lost_;
  std::atomic<bool> lost_{false};
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

// Writes `key` = `value` on `lease` if the key does not exist. Returns the key's create revision
// (a broker's epoch: it grows with every registration), or failed_precondition when another
// holder has the key (Kafka's DUPLICATE_BROKER_REGISTRATION for a broker id).
result<int64_t, etcd_error> create_on_lease(etcd_client& client, const std::string& key,
                                            const std::string& value, int64_t lease);

// Campaigns for the controller role: holds `key` on the candidate's lease while it lives. When
// the key is free it tries to create it; the winner is the controller until its session ends,
// and the key's create revision is the controller epoch (it grows with every election).
// `on_change` is called on the election's thread whenever the controller changes, with whether
// this candidate is it, the controller's value and the epoch.
class controller_election {
 public:
  using change_handler =
      std::function<void(bool is_controller, const std::string& controller, int64_t epoch)>;
  controller_election(client_options options, std::string key, std::string candidate, int64_t lease,
                      change_handler on_change);
  ~controller_election();
  controller_election(const controller_election&) = delete;
  controller_election& operator=(const controller_election&) = delete;

 private:
  // Reads the key; creates it when absent; reports a change; returns the revision to watch from.
  int64_t settle(etcd_client& client);

  client_options options_;
  std::string key_;
  std::string candidate_;
  int64_t lease_;
  change_handler on_change_;
  int64_t reported_epoch_ = -1;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  bool wake_ = false;
  std::unique_ptr<etcd_watch> watch_;
  std::thread thread_;
};

}  // namespace tarn::cluster::etcd
