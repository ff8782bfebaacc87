// Producer ids, for idempotent producers (InitProducerId without a transactional id) and the
// transaction coordinator alike, from one source chosen at the broker's start:
//   - one node: reserved in blocks of 1000 (as Kafka's controller hands out blocks) whose end is
//     kept in `<log.dir>/tarn-producer-ids` (one decimal number, written crash-safely before the
//     block is used); a restart starts at the next block, so an id never names two producers.
//   - a cluster (etcd.connect): blocks of 1000 taken from etcd by compare-and-swap
//     (cluster/producer_id_blocks.h), so no two brokers ever hand out the same id.
//
// Threading: a source is safe from any thread, and never waits on the network: the cluster's
// source answers COORDINATOR_LOAD_IN_PROGRESS while its next block is being fetched.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "base/result.h"
#include "protocol/error_codes.h"

namespace tarn::cluster {
class producer_id_blocks;
}

namespace tarn::broker {

class producer_id_source {
 public:
  virtual ~producer_id_source() = default;
  // The next producer id, or the error InitProducerId answers: COORDINATOR_LOAD_IN_PROGRESS
  // while the cluster's next block is not there yet, UNKNOWN_SERVER_ERROR when the file's block
  // cannot be persisted (logged here).
  virtual result<int64_t, protocol::error_code> next() = 0;
};

// The single node's source: `<log_dir>/tarn-producer-ids`.
std::unique_ptr<producer_id_source> make_file_producer_ids(std::string log_dir);
// The cluster's source, over blocks taken from etcd.
std::unique_ptr<producer_id_source> make_cluster_producer_ids(
    std::unique_ptr<cluster::producer_id_blocks> blocks);

}  // namespace tarn::broker
