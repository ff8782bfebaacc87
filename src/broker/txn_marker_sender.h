// The transaction marker sender of a cluster broker (Kafka's TransactionMarkerChannelManager,
// docs/cluster.md "Coordinators"): the transaction coordinator hands it the markers of partitions
// this broker does not lead (txn::txn_marker_queue, without blocking and under the coordinator's
// lock), and one thread of its own writes them once PrepareX is committed (the high watermark
// of the id's partition passed it), while this broker leads that partition at the entry's
// coordinator epoch (else the entry is abandoned: the next leader sends it again): each
// partition at its leader of the moment
// (replica_manager::role), this broker's own through partition_markers, the others' batched per
// broker into WriteTxnMarkers v1 over one broker_connection each. Retriable answers and lost
// connections are sent again 100 ms later; a fenced answer abandons the entry; once every marker
// is written it calls txn_coordinator::markers_written (never under its own lock).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "broker/broker_connection.h"
#include "broker/config.h"
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
                    txn::txn_markers& local);
  ~txn_marker_sender() override;  // stops the thread; entries not written are dropped
  txn_marker_sender(const txn_marker_sender&) = delete;
  txn_marker_sender& operator=(const txn_marker_sender&) = delete;

  // Starts the thread; `coordinator` is told of every entry finished.
  void start(txn::txn_coordinator& coordinator);
  void stop();
  void enqueue(txn::pending_markers entry) override;

 private:
  void run();
  // One round over every entry whose PrepareX is committed: each remaining partition to its
  // leader. True when a marker tried is still to be sent again (the next round after the
  // backoff).
  bool send_round(std::vector<txn::marker_progress>& active);
  // WriteTxnMarkers to broker `leader` for the (entry index, partition) pairs; their outcomes
  // recorded in `active`.
  void send_to(int32_t leader,
               const std::vector<std::pair<size_t, std::pair<std::string, int32_t>>>& targets,
               std::vector<txn::marker_progress>& active);

  const broker_config& config_;
  replica_manager& replicas_;
  cluster::cluster_membership& membership_;
  topic_manager& topics_;
  txn::txn_markers& local_;
  txn::txn_coordinator* coordinator_ = nullptr;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::vector<txn::pending_markers> queued_;
  std::map<int32_t, std::unique_ptr<broker_connection>> connections_;  // the thread's own
  std::vector<uint8_t> buffer_;
  std::thread thread_;
};

}  // namespace tarn::broker
