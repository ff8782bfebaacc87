// The broker's console_backend (console_backend.h): the topic manager and the group coordinator
// behind the web console's JSON API. The server owns one and hands it to src/observe.
#pragma once

#include "broker/broker_metrics.h"
#include "broker/config.h"
#include "broker/console_backend.h"

namespace tarn::coordinator {
class group_coordinator;
}
namespace tarn::cluster {
class cluster_membership;
}

namespace tarn::broker {

class replica_manager;

class topic_manager;

class broker_console final : public console_backend {
 public:
  // A topic created from the console has at most this many partitions (a typo must not create
  // a million directories).
  static constexpr int32_t max_partitions = 10000;

  // `replicas` and `membership`: in a cluster, records go only to partitions this broker serves
  // as leader, with their leader epoch, and topics are created and deleted with their partition
  // states, as CreateTopics and DeleteTopics do.
  broker_console(topic_manager& topics, coordinator::group_coordinator& groups,
                 const broker_config& config, broker_metrics& metrics,
                 replica_manager* replicas = nullptr,
                 const cluster::cluster_membership* membership = nullptr);

  std::vector<console_topic> list_topics() const override;
  result<console_topic, console_error> describe_topic(std::string_view name) const override;
  result<console_topic, console_error> create_topic(const console_topic_spec& spec) override;
  result<void, console_error> delete_topic(std::string_view name) override;
  result<console_topic, console_error> alter_topic_configs(
      std::string_view name,
      const std::map<std::string, std::optional<std::string>>& changes) override;
  result<console_records, console_error> read_records(
      const console_read_request& request) const override;
  result<std::vector<console_batch>, console_error> read_batches(
      std::string_view topic, int32_t partition, int64_t offset,
      int32_t max_batches) const override;
  result<int64_t, console_error> produce_record(const console_produce_request& request) override;
  result<console_group, console_error> reset_group_offsets(
      const console_offset_reset& reset) override;
  std::vector<console_group> list_groups() const override;
  result<console_group, console_error> describe_group(std::string_view group_id) const override;

 private:
  topic_manager& topics_;
  coordinator::group_coordinator& groups_;
  const broker_config& config_;
  broker_metrics& metrics_;
  replica_manager* replicas_;
  const cluster::cluster_membership* membership_;
};

}  // namespace tarn::broker
