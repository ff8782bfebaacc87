// The producer's cluster metadata and the wait for an unknown topic.
#include "client/metadata_cache.h"

#include <fmt/format.h>

#include <utility>

namespace tarn::client {

void metadata_cache::update(cluster_update update) {
  {
    std::unique_lock lock(mutex_);
    brokers_ = std::move(update.brokers);
    for (auto& t : update.topics) {
      t.available.clear();
      for (size_t p = 0; p < t.partitions.size(); ++p) {
        if (t.partitions[p].leader) t.available.push_back(static_cast<partition_id>(p));
      }
      std::string name = t.name;
      if (t.error_code != 0 && t.partitions.empty()) {
        topics_.erase(name);  // unknown or being created: ask again (after the sender's backoff)
        update_requested_ = true;
      } else {
        topics_[name] = std::make_shared<const topic_metadata>(std::move(t));
      }
    }
    for (const auto& name : wanted_) {
      if (!topics_.contains(name)) update_requested_ = true;  // not in this response
    }
    version_.fetch_add(1, std::memory_order_release);
  }
  updated_.notify_all();
}

std::shared_ptr<const topic_metadata> metadata_cache::topic(std::string_view name) {
  {
    std::shared_lock lock(mutex_);
    auto it = topics_.find(name);
    if (it != topics_.end()) return it->second;
    if (wanted_.contains(name) && update_requested_) return nullptr;
  }
  std::unique_lock lock(mutex_);
  wanted_.emplace(name);
  update_requested_ = true;
  return nullptr;
}

result<std::shared_ptr<const topic_metadata>, producer_error> metadata_cache::wait_for_topic(
    std::string_view name, std::optional<partition_id> partition,
    std::chrono::steady_clock::time_point deadline, std::chrono::milliseconds max_block) {
  std::shared_ptr<const topic_metadata> found = topic(name);
  auto enough = [&] {
    return found && !found->partitions.empty() &&
           (!partition || *partition < static_cast<partition_id>(found->partitions.size()));
  };
  std::unique_lock lock(mutex_);
  while (!enough()) {
    if (failed_) return fail(*failed_);
    if (found && partition) update_requested_ = true;  // maybe the topic grew
    if (updated_.wait_until(lock, deadline) == std::cv_status::timeout) {
      auto it = topics_.find(name);
      found = it == topics_.end() ? nullptr : it->second;
      if (enough()) break;
      if (found && partition) {
        return fail(producer_error{
            producer_errc::unknown_topic, 3, false,
            fmt::format("Partition {} of topic {} with partition count {} is not present in "
                        "metadata after {} ms.",
                        *partition, name, found->partitions.size(), max_block.count())});
      }
      return fail(producer_error{
          producer_errc::unknown_topic, 3, false,
          fmt::format("Topic {} not present in metadata after {} ms.", name, max_block.count())});
    }
    auto it = topics_.find(name);
    found = it == topics_.end() ? nullptr : it->second;
  }
  return found;
}

void metadata_cache::fail_waiters(producer_error error) {
  {
    std::unique_lock lock(mutex_);
    failed_ = std::move(error);
  }
  updated_.notify_all();
}

std::optional<node_id> metadata_cache::leader_of(const topic_partition& tp) const {
  std::shared_lock lock(mutex_);
  auto it = topics_.find(tp.topic);
  if (it == topics_.end() || tp.partition < 0 ||
      tp.partition >= static_cast<partition_id>(it->second->partitions.size())) {
    return std::nullopt;
  }
  return it->second->partitions[tp.partition].leader;
}

std::optional<broker_address> metadata_cache::broker(node_id node) const {
  std::shared_lock lock(mutex_);
  auto it = brokers_.find(node);
  if (it == brokers_.end()) return std::nullopt;
  return it->second;
}

std::vector<node_id> metadata_cache::brokers() const {
  std::shared_lock lock(mutex_);
  std::vector<node_id> out;
  for (const auto& [id, _] : brokers_) out.push_back(id);
  return out;
}

std::vector<std::string> metadata_cache::topics_to_fetch() const {
  std::shared_lock lock(mutex_);
  return {wanted_.begin(), wanted_.end()};
}

void metadata_cache::request_update() {
  std::unique_lock lock(mutex_);
  update_requested_ = true;
}

bool metadata_cache::take_update_request() {
  std::unique_lock lock(mutex_);
  return std::exchange(update_requested_, false);
}

}  // namespace tarn::client
