// The transaction marker sender of a cluster broker (Kafka's TransactionMarkerChannelManager,
// docs/cluster.md "Coordinators"): the transaction coordinator hands it every transaction's
// markers (txn::txn_marker_queue, without blocking and under the coordinator's lock). Its own
// thread decides: once PrepareX is committed (the high watermark of the id's partition passed
// it), and while this broker leads that partition at the entry's coordinator epoch (else the
// entry is abandoned: the next leader sends it again), each partition's marker goes to its
// leader of the moment (replica_manager::role). This broker's own partitions are written
// through partition_markers and count once the partition's high watermark passes the marker (a
// leadership lost before that writes it again at the new leader); the others' go through a
// per_broker_sender (per_broker_sender.h: a queue, a thread and a connection per destination
// broker), batched into WriteTxnMarkers v1 (the answer comes once the markers are committed
// there), and the outcomes come back to the deciding thread. So a paused or slow broker holds
// up only the markers it leads, never another broker's. Retriable answers and lost connections
// are sent again 100 ms
// later; a fenced answer abandons the entry; once every marker is written and replicated it
// calls txn_coordinator::markers_written (never under its own lock), which writes
// CompleteCommit/CompleteAbort.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "broker/config.h"
#include "broker/per_broker_sender.h"
#include "broker/transactions.h"
#include "cluster/cluster_membership.h"
#include "txn/txn_coordinator.h"
#include "txn/txn_log.h"
#include "txn/txn_marker_progress.h"

namespace tarn::broker {

class replica_manager;
class topic_manager;

class txn_marker_sender final : public txn::txn_marker_queue {
 public:
  txn_marker_sender(const broker_config& config, replica_manager& replicas,
                    cluster::cluster_membership& membership, topic_manager& topics,
                    partition_markers& local);
  ~txn_marker_sender() override;  // stops the threads; entries not written are dropped
  txn_marker_sender(const txn_marker_sender&) = delete;
  txn_marker_sender& operator=(const txn_marker_sender&) = delete;

  // Starts the deciding thread (destination threads start with their first marker);
  // `coordinator` is told of every entry finished.
  void start(txn::txn_coordinator& coordinator);
  void stop();
  void enqueue(txn::pending_markers entry) override;

 private:
  using clock = std::chrono::steady_clock;
  using topic_partition = std::pair<std::string, int32_t>;

  // One partition's marker on its way to a destination broker, and what came of it.
  struct outgoing {
    uint64_t entry_id = 0;
    txn::marker_request marker;
    topic_partition partition;
  };
  struct outcome {
    uint64_t entry_id = 0;
    topic_partition partition;
    txn::marker_outcome result = txn::marker_outcome::retry;
  };
  // A marker written to this broker's own log, waiting for the high watermark to pass it.
  struct local_write {
    offset_t offset = -1;
    int32_t leader_epoch = 0;
  };
  // One transaction's markers as the deciding thread follows them.
  struct active_entry {
    uint64_t id = 0;
    txn::marker_progress progress;
    std::set<topic_partition> in_flight;  // handed to a destination, no answer yet
    std::map<topic_partition, local_write> awaiting_commit;
    std::map<topic_partition, clock::time_point> retry_at;  // a retry's backoff
  };

  void run();
  // One pass over the entries: what is due goes out, local markers' high watermarks are looked
  // at. Returns when the pass wants to run again (clock::time_point::max(): only on news).
  clock::time_point send_round(std::vector<active_entry>& active);
  // The leader of `tp` for entry `a`: written here, handed to a destination, or left for later.
  void send_one(active_entry& a, const topic_partition& tp,
                std::map<int32_t, std::vector<outgoing>>& by_leader);
  // A local marker's state: written once committed, sent again if the leadership moved.
  void check_local(active_entry& a, clock::time_point now);
  // A destination's round: its outcomes handed to the deciding thread.
  void send_round(broker_link& link, std::vector<outgoing>& batch);
  // WriteTxnMarkers to `link` for `batch`; one outcome per item.
  std::vector<outcome> send_to(broker_link& link, const std::vector<outgoing>& batch);
  bool stopping() {
    std::lock_guard g(mu_);
    return stopping_;
  }

  const broker_config& config_;
  replica_manager& replicas_;
  cluster::cluster_membership& membership_;
  topic_manager& topics_;
  partition_markers& local_;
  txn::txn_coordinator* coordinator_ = nullptr;

  std::mutex mu_;
  std::condition_variable cv_;  // the deciding thread's: new entries, outcomes, stop
  bool stopping_ = false;
  std::vector<txn::pending_markers> queued_;
  std::vector<outcome> outcomes_;  // from the destinations, for the deciding thread
  uint64_t next_entry_id_ = 1;     // the deciding thread's
  std::thread thread_;
  per_broker_sender<outgoing> destinations_;  // started by the deciding thread
};

}  // namespace tarn::broker
