// Producer ids for a cluster: blocks of 1000 taken from one etcd key, <prefix>producer-ids, that
// holds the next block's first id (a decimal number), by compare-and-swap on its mod_revision,
// as Kafka's controller hands out ProducerIdsRecord blocks (ProducerIdControlManager behind
// AllocateProducerIds). A broker keeps its block in memory (Kafka's RPCProducerIdManager): ids
// come from it without I/O, and the next block is fetched on a thread of its own once 90% of the
// current one is used, so no event loop ever waits on etcd for an id.
//
// Threading: producer_id_blocks' members may be called from any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "base/result.h"
#include "cluster/etcd_client.h"
#include "protocol/error_codes.h"

namespace tarn::cluster {

inline constexpr int64_t producer_id_block_size = 1000;  // as Kafka's PRODUCER_ID_BLOCK_SIZE

// <prefix>producer-ids.
std::string producer_ids_key(std::string_view prefix);

// Takes the next block from `key`: reads it (absent: the first block starts at 0), then writes
// first + producer_id_block_size only if the key's mod_revision is still the one read (created
// only if still absent), reading again after a lost race. Returns the block's first id.
result<int64_t, etcd::etcd_error> allocate_producer_id_block(etcd::etcd_client& client,
                                                             const std::string& key);

class producer_id_blocks {
 public:
  producer_id_blocks(std::unique_ptr<etcd::etcd_client> client, std::string key);
  ~producer_id_blocks();  // stops and joins the fetching thread
  producer_id_blocks(const producer_id_blocks&) = delete;
  producer_id_blocks& operator=(const producer_id_blocks&) = delete;

  // The next id; COORDINATOR_LOAD_IN_PROGRESS while this broker has no id left (a fetch is then
  // under way, or retried 50 ms after a failed one), which is what Kafka's broker answers
  // ("Producer ID block is full. Waiting for next block") and clients retry.
  result<int64_t, protocol::error_code> next();

  // Asks for a block and waits until one is ready or the fetch failed, at most `timeout`; true
  // when an id is available. For a broker's start (so its first producer is not sent back).
  bool wait_for_block(std::chrono::milliseconds timeout);

 private:
  void run();
  void request_locked();  // asks the thread for the next block unless asked or backing off

  std::unique_ptr<etcd::etcd_client> client_;
  std::string key_;
  std::mutex mu_;
  std::condition_variable cv_;
  int64_t first_ = 0;  // the current block [first_, end_), next_ the next id handed out
  int64_t next_ = 0;
  int64_t end_ = 0;
  std::optional<int64_t> prefetched_;  // the next block's first id, once fetched
  bool wanted_ = false;                // a fetch asked for or running
  uint64_t failures_ = 0;              // fetches failed so far (wait_for_block watches it)
  std::chrono::steady_clock::time_point retry_after_{};
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace tarn::cluster
