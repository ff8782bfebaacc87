// What the producer knows of the cluster: brokers, and for each topic it sends to the partition
// count and each partition's leader. The sender fills it from Metadata responses; send() reads
// it and waits in it (up to max.block.ms) for a topic it has not seen yet, as Java's
// KafkaProducer.waitOnMetadata does.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/strong_types.h"
#include "client/producer_batch.h"
#include "client/producer_config.h"

namespace tarn::client {

using node_id = int32_t;

struct partition_metadata {
  std::optional<node_id> leader;  // nullopt: no leader now (LEADER_NOT_AVAILABLE, offline)
  leader_epoch_t leader_epoch = -1;
};

struct topic_metadata {
  std::string name;
  int16_t error_code = 0;                      // the topic's error in the last response
  std::vector<partition_metadata> partitions;  // index = partition id
  std::vector<partition_id> available;         // the partitions with a leader, ascending
};

// One Metadata response, as the cache takes it.
struct cluster_update {
  std::map<node_id, broker_address> brokers;
  std::vector<topic_metadata> topics;  // `available` is computed by the cache
};

class metadata_cache {
 public:
  // Replaces the brokers and the listed topics; other topics keep what they had. Wakes every
  // send() waiting for a topic. Thread: sender. Locks: mutex_ (exclusive).
  void update(cluster_update update);

  // The topic's metadata, or nullopt (and the topic is added to the ones to fetch).
  // Thread: any. Locks: mutex_ (shared; exclusive to register a new topic).
  std::shared_ptr<const topic_metadata> topic(std::string_view name);

  // Waits until the topic is known with at least partition+1 partitions (any partition when
  // nullopt), or `deadline`; then fails with Java's messages. Thread: application threads.
  result<std::shared_ptr<const topic_metadata>, producer_error> wait_for_topic(
      std::string_view name, std::optional<partition_id> partition,
      std::chrono::steady_clock::time_point deadline, std::chrono::milliseconds max_block);

  std::optional<node_id> leader_of(const topic_partition& tp) const;
  std::optional<broker_address> broker(node_id node) const;
  std::vector<node_id> brokers() const;

  // The topics to ask for in the next Metadata request: every topic send() has used.
  std::vector<std::string> topics_to_fetch() const;

  // A refresh is wanted (unknown topic, NOT_LEADER_OR_FOLLOWER, ...): the sender fetches soon.
  void request_update();
  // Every wait_for_topic, now and later, fails with `error` (the producer cannot fetch metadata:
  // its TLS handshake or SASL authentication was refused).
  void fail_waiters(producer_error error);
  // True once per request_update(), for the sender. Thread: sender.
  bool take_update_request();
  // Incremented by every update(), after the new metadata is in: metadata read from topic()
  // after seeing version v is at least as new as v. Thread: any, lock-free.
  uint64_t version() const { return version_.load(std::memory_order_acquire); }

 private:
  mutable std::shared_mutex mutex_;
  std::condition_variable_any updated_;
  std::map<node_id, broker_address> brokers_;
  std::map<std::string, std::shared_ptr<const topic_metadata>, std::less<>> topics_;
  std::set<std::string, std::less<>> wanted_;  // topics send() asked for
  std::atomic<uint64_t> version_{0};           // written under mutex_
  bool update_requested_ = false;
  std::optional<producer_error> failed_;  // set by fail_waiters
};

}  // namespace tarn::client
