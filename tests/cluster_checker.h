// A fault-injection checker in the Jepsen style for a replicated cluster (issue 27): concurrent
// idempotent producers (acks=all, tarn's client library) write unique values to a replicated
// topic while consumers read it and a nemesis, on a seeded schedule and one fault at a time,
// kills (-9), pauses (SIGSTOP) and restarts nodes, partitions them from each other (nftables) and
// kills metadata quorum members (etcd); after the faults heal a final read takes everything, and
// the history of writes and reads is analysed:
//   - lost write: acknowledged (or read during the run), absent from the final read;
//   - duplicate: one value at two positions (partition, offset);
//   - inconsistent offset: two different values at one position, across reads and acks;
//   - phantom: a value read that no producer sent (or whose send was refused before it left);
//   - reordered: one producer's acknowledged writes to a partition out of their send order;
//   - unseen (informational): a write whose outcome the producer could not learn, never read.
// The verdict: none of the first five. Against a cluster with min.insync.replicas=2 and unclean
// election off, with at most one node faulted at a time, there must be none.
// The analysis is a pure function of the history, unit-tested on hand-made histories.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "cluster_harness.h"

namespace tarn::test::checker {

enum class write_outcome : uint8_t {
  acknowledged,   // the broker answered with an offset
  failed,         // refused before it left the client: it was never sent
  indeterminate,  // an error after it may have been sent (timeout, connection lost, closed)
};

struct write_op {
  std::string value;  // unique in a history: "<writer>-<sequence>"
  int32_t partition = 0;
  write_outcome outcome = write_outcome::indeterminate;
  int64_t offset = -1;  // the acknowledged offset
  // Who sent it: one producer instance's writes to one partition are acknowledged in the order
  // they were sent (idempotence keeps order with up to 5 requests in flight).
  int writer = 0;
  int instance = 0;  // the writer's producer, counted from 0 (a fatal error replaces it)
  int64_t sequence = 0;
};

struct read_op {
  int32_t partition = 0;
  int64_t offset = 0;
  std::string value;
  bool final = false;  // read by the final read, after the faults healed
};

struct history {
  std::vector<write_op> writes;
  std::vector<read_op> reads;
  // The final read reached every partition's end offset (else lost writes cannot be judged).
  bool final_read_complete = false;
};

struct analysis {
  size_t writes = 0, acknowledged = 0, failed = 0, indeterminate = 0;
  size_t reads = 0, final_reads = 0;
  size_t recovered = 0;  // indeterminate writes that were read
  std::vector<std::string> lost, duplicates, inconsistent_offsets, phantoms;
  // One producer instance's acknowledged writes to a partition at offsets out of its send order.
  std::vector<std::string> reordered;
  std::vector<std::string> unseen;  // informational
  bool final_read_complete = false;

  // No anomaly of the kinds that count, and a final read to judge by.
  bool valid() const {
    return final_read_complete && lost.empty() && duplicates.empty() &&
           inconsistent_offsets.empty() && phantoms.empty() && reordered.empty();
  }
  // The counts on one line, then up to `examples` lines of each anomaly.
  std::string summary(size_t examples = 10) const;
};

analysis analyze(const history& h);

// kill -9, SIGSTOP, SIGTERM (each healed by a restart or SIGCONT); a node cut off from the
// others, the link between two nodes cut (healed by removing the rules; cluster.can_partition());
// kill -9 of a metadata quorum member (etcd for tarn; cluster.metadata_member_count() > 0),
// healed by its restart.
enum class fault : uint8_t { kill, pause, stop, isolate, cut, kill_metadata };

struct options {
  std::string topic = "checked";
  int32_t partitions = 3;
  int16_t replication_factor = -1;  // -1: the cluster's default
  std::vector<std::pair<std::string, std::string>> topic_configs;
  int writers = 3;
  int readers = 2;
  int writes_per_second = 150;  // per writer
  // The writers' acks: "all" (idempotent), or "1" (not idempotent) to check that the checker
  // sees what a weaker setting loses.
  std::string acks = "all";
  std::chrono::seconds duration{10};
  uint32_t seed = 1;
  // Empty: no nemesis. Otherwise one of these, on a random node, at a time.
  std::vector<fault> faults;
  // A fault lasts between these (a paused node longer than the session timeout is fenced).
  std::chrono::milliseconds fault_min{1000}, fault_max{6000};
  // Quiet time between a heal and the next fault.
  std::chrono::milliseconds quiet_min{1000}, quiet_max{4000};
  // How long the cluster may take to be fully replicated again after a heal.
  std::chrono::milliseconds heal_timeout{90000};
};

struct run_result {
  std::string error;  // set when the run itself could not be made (a node did not restart)
  history h;
  analysis a;
  std::vector<std::string> nemesis_log;  // "+12.3s kill node 2", ...
  int producer_instances = 0;            // writers' producers, replacements included
  int consumer_restarts = 0;
};

// Creates the topic on the running cluster, runs writers, readers and the nemesis for
// options.duration, heals every node, stops the writers, makes the final read and analyses.
run_result run(cluster_harness& cluster, const options& o);

}  // namespace tarn::test::checker
