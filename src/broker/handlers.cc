// The handler registry and the list of APIs tarn serves.
#include <cassert>

#include "broker/handler.h"

namespace tarn::broker {

void handler_registry::register_handler(int16_t api_key, int16_t min_version, int16_t max_version,
                                        handler_fn handle) {
  assert(api_key >= 0 && api_key <= max_api_key && min_version <= max_version);
  entries_[static_cast<size_t>(api_key)] = {api_key, min_version, max_version, std::move(handle)};
}

const handler_entry* handler_registry::find(int16_t api_key) const {
  if (api_key < 0 || api_key > max_api_key) return nullptr;
  const handler_entry& e = entries_[static_cast<size_t>(api_key)];
  return e.handle ? &e : nullptr;
}

std::vector<api_version_range> handler_registry::advertised() const {
  constexpr int16_t produce = 0;
  std::vector<api_version_range> out;
  for (const auto& e : entries_) {
    if (!e.handle) continue;
    out.push_back({e.api_key, e.api_key == produce ? int16_t{0} : e.min_version, e.max_version});
  }
  return out;
}

void register_all_handlers(handler_registry& registry) {
  register_api_versions_handler(registry);
  register_metadata_handler(registry);
  register_create_topics_handler(registry);
  register_delete_topics_handler(registry);
  register_delete_records_handler(registry);
  register_create_partitions_handler(registry);
  register_alter_configs_handler(registry);
  register_describe_configs_handler(registry);
  register_incremental_alter_configs_handler(registry);
  register_list_offsets_handler(registry);
  register_fetch_handler(registry);
  register_produce_handler(registry);
  register_init_producer_id_handler(registry);
  register_find_coordinator_handler(registry);
  register_offset_commit_handler(registry);
  register_offset_fetch_handler(registry);
  register_join_group_handler(registry);
  register_heartbeat_handler(registry);
  register_leave_group_handler(registry);
  register_sync_group_handler(registry);
  register_describe_groups_handler(registry);
  register_list_groups_handler(registry);
  register_delete_groups_handler(registry);
  register_offset_delete_handler(registry);
  register_consumer_group_heartbeat_handler(registry);
  register_consumer_group_describe_handler(registry);
  register_share_group_heartbeat_handler(registry);
  register_share_group_describe_handler(registry);
  register_share_fetch_handler(registry);
  register_share_acknowledge_handler(registry);
  register_describe_share_group_offsets_handler(registry);
  register_alter_share_group_offsets_handler(registry);
  register_delete_share_group_offsets_handler(registry);
  register_initialize_share_group_state_handler(registry);
  register_read_share_group_state_handler(registry);
  register_write_share_group_state_handler(registry);
  register_delete_share_group_state_handler(registry);
  register_read_share_group_state_summary_handler(registry);
  register_describe_client_quotas_handler(registry);
  register_alter_client_quotas_handler(registry);
  register_describe_user_scram_credentials_handler(registry);
  register_describe_acls_handler(registry);
  register_create_acls_handler(registry);
  register_delete_acls_handler(registry);
  register_describe_cluster_handler(registry);
  register_describe_quorum_handler(registry);
  register_update_features_handler(registry);
  register_describe_topic_partitions_handler(registry);
  register_describe_log_dirs_handler(registry);
  register_offset_for_leader_epoch_handler(registry);
  register_elect_leaders_handler(registry);
  register_alter_partition_reassignments_handler(registry);
  register_list_partition_reassignments_handler(registry);
  register_add_partitions_to_txn_handler(registry);
  register_end_txn_handler(registry);
  register_add_offsets_to_txn_handler(registry);
  register_txn_offset_commit_handler(registry);
  register_write_txn_markers_handler(registry);
  register_describe_producers_handler(registry);
  register_describe_transactions_handler(registry);
  register_list_transactions_handler(registry);
  register_sasl_handshake_handler(registry);
  register_alter_user_scram_credentials_handler(registry);
  register_sasl_authenticate_handler(registry);
}

}  // namespace tarn::broker
