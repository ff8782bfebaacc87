// The wait for a group coordinator's write to be committed (group_write_wait.h).
#include "broker/group_write_wait.h"

#include <asio/this_coro.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "broker/fetch_waiters.h"
#include "broker/replica_manager.h"
#include "broker/topic_manager.h"
#include "coordinator/group_coordinator.h"

namespace tarn::broker {

using protocol::error_code;

asio::awaitable<error_code> await_group_write_committed(request_context& request,
                                                        std::string_view group_id) {
  const broker_services& services = request.services;
  if (services.replicas == nullptr || services.groups == nullptr || services.waiters == nullptr) {
    co_return error_code::none;
  }
  co_return co_await await_coordinator_write_committed(
      request, std::string(coordinator::offsets_topic_name),
      services.groups->partition_for_group(group_id),
      services.config.group.offsets_commit_timeout_ms);
}

asio::awaitable<error_code> await_coordinator_write_committed(request_context& request,
                                                              std::string topic, int32_t partition,
                                                              int64_t timeout_ms) {
  const broker_services& services = request.services;
  if (services.replicas == nullptr || services.waiters == nullptr) co_return error_code::none;
  topic_manager& topics = *services.topics;
  offset_t target = 0;
  int32_t leader_epoch = 0;
  int32_t min_isr = 1;
  // The high watermark passed the write: committed, unless the ISR that moved it is below
  // min.insync.replicas (KIP-966: Kafka's high watermark does not pass a write then, and the
  // write times out; tarn answers at once, as Produce's NOT_ENOUGH_REPLICAS_AFTER_APPEND).
  const auto committed = [&](const storage::log& log) -> std::optional<error_code> {
    if (log.high_watermark() < target) return std::nullopt;
    const int32_t isr = services.replicas->isr_size(topic, partition);
    if (isr >= 0 && isr < min_isr) return error_code::coordinator_not_available;
    return error_code::none;
  };
  {
    auto guard = topics.read_lock();
    storage::log* log = topics.logs().get_log(topic, partition_id{partition});
    if (log == nullptr) co_return error_code::none;  // nothing was written
    std::lock_guard log_lock(log->mutex());
    if (!log->replicated()) co_return error_code::none;
    if (const storage::topic_info* t = topics.logs().find_topic(topic)) {
      min_isr = t->config.min_insync_replicas;
    }
    target = log->log_end_offset();
    const leadership lead =
        leadership_of(services.replicas, topic, partition, services.config.node_id);
    if (!lead.serving) co_return error_code::not_coordinator;
    leader_epoch = lead.leader_epoch;
    if (auto done = committed(*log)) co_return *done;
  }
  auto waiter = std::make_shared<fetch_waiter>(co_await asio::this_coro::executor);
  const std::vector<storage::topic_partition> tps{{topic, partition}};
  fetch_waiter_registration registration(*services.waiters, waiter, tps);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  for (;;) {
    {
      auto guard = topics.read_lock();
      const storage::log* log = topics.logs().get_log(topic, partition_id{partition});
      const leadership lead =
          leadership_of(services.replicas, topic, partition, services.config.node_id);
      // The leadership moved while waiting (Kafka fails the write with NOT_LEADER_OR_FOLLOWER,
      // which the group APIs answer NOT_COORDINATOR): the client finds the new coordinator.
      if (log == nullptr || !lead.serving || lead.leader_epoch != leader_epoch) {
        co_return error_code::not_coordinator;
      }
      if (auto done = committed(*log)) co_return *done;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      co_return error_code::coordinator_not_available;  // REQUEST_TIMED_OUT, as Kafka maps it
    }
    if (!co_await waiter->wait_for_append(request, deadline)) co_return error_code::not_coordinator;
  }
}

}  // namespace tarn::broker
