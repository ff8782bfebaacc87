// Replicated partitions' states in etcd, one key each (<prefix>partitions/<topic id>/<index>,
// JSON so that `etcdctl get` shows them), written only by compare-and-swap on the key's
// mod_revision: a controller or leader acting on a state it read before someone else changed it
// is refused, rereads, and decides again (issue 27: "a stale controller or leader can never
// overwrite newer state").
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/uuid.h"
#include "cluster/etcd_client.h"
#include "cluster/partition_state.h"

namespace tarn::cluster {

struct versioned_partition_state {
  partition_state state;
  int64_t mod_revision = 0;  // what a compare-and-swap compares
};

std::string encode_partition_state(const partition_state& p);
// nullopt when `text` is not a partition state (wrong JSON, negative or missing fields).
std::optional<partition_state> decode_partition_state(std::string_view text);

// <prefix>partitions/<topic id>/<index> -> (topic id, index), given `dir` = <prefix>partitions/;
// nullopt for any other key.
std::optional<std::pair<uuid, int32_t>> parse_partition_key(std::string_view key,
                                                            std::string_view dir);

class etcd_partition_store {
 public:
  etcd_partition_store(etcd::etcd_client& client, std::string prefix)
      : client_(client), prefix_(std::move(prefix)) {}

  std::string key(const uuid& topic_id, int32_t partition) const;

  // nullopt when the partition has no state in etcd. A value that is not a partition state is
  // an etcd_error (internal) naming the key.
  result<std::optional<versioned_partition_state>, etcd::etcd_error> read(const uuid& topic_id,
                                                                          int32_t partition);
  result<std::map<int32_t, versioned_partition_state>, etcd::etcd_error> read_topic(
      const uuid& topic_id);
  // Writes the state if the partition has none; false when it has one already.
  result<bool, etcd::etcd_error> create(const uuid& topic_id, int32_t partition,
                                        const partition_state& state);
  // The states of partitions first, first + 1, ... (at most max_states_per_txn) in one
  // transaction, written only if none of them has a state: the revision they were written at
  // (each one's mod_revision), or nullopt when one had a state already.
  static constexpr size_t max_states_per_txn = 60;  // etcd allows 128 operations by default
  result<std::optional<int64_t>, etcd::etcd_error> create_all(
      const uuid& topic_id, int32_t first, const std::vector<partition_state>& states);
  // Writes the state if the key's mod_revision is still `expected`; false when it changed.
  result<bool, etcd::etcd_error> compare_and_set(const uuid& topic_id, int32_t partition,
                                                 int64_t expected_mod_revision,
                                                 const partition_state& state);
  // A leader's AlterPartition: read, alter_partition()'s rules, compare-and-swap, again from the
  // read while the key changes under it. UNKNOWN_TOPIC_OR_PARTITION when it has no state.
  result<alter_partition_result, etcd::etcd_error> alter_partition(
      const uuid& topic_id, int32_t partition, const alter_partition_request& request,
      const broker_states& brokers, const elr_options& elr = {});

 private:
  etcd::etcd_client& client_;
  std::string prefix_;
};

}  // namespace tarn::cluster
