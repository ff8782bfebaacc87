// What ShareFetch and ShareAcknowledge share (share_fetch_handler.cc,
// share_acknowledge_handler.cc): finding a topic by id, READ on the topics a request names,
// turning a partition's acknowledgement batches into the coordinator's, applying them with
// Kafka's error codes, and waiting for an answer that comes with a write at another broker's
// share coordinator.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "broker/authorization.h"
#include "broker/handler.h"
#include "broker/pending_reply.h"
#include "broker/topic_handler_util.h"
#include "broker/topic_manager.h"
#include "coordinator/share_coordinator.h"
#include "coordinator/wire_ids.h"
#include "protocol/error_codes.h"

namespace tarn::broker {

// Kafka's KafkaApis.isMemberIdValid: a share-group member id is 1 to 36 characters (a UUID's
// text), else the request is INVALID_REQUEST (after the group's authorization).
inline bool share_member_id_valid(std::string_view member_id) {
  return !member_id.empty() && member_id.size() <= 36;
}

// A topic of the share session as the broker knows it now.
struct share_topic {
  std::string name;
  int32_t partitions = 0;
};

// The topic with that id, or nullopt (UNKNOWN_TOPIC_ID).
inline std::optional<share_topic> find_share_topic(topic_manager& topics,
                                                   const coordinator::topic_uuid& id) {
  auto guard = topics.read_lock();
  for (const storage::topic_info* t : topics.logs().topics()) {
    if (to_wire(t->topic_id).bytes == id) return share_topic{t->name, t->partitions};
  }
  return std::nullopt;
}

// Which of the topics a ShareFetch or ShareAcknowledge names the principal may READ: asked once
// per topic name, as Kafka's filterByAuthorized. A topic id the broker does not know is allowed
// here (it answers UNKNOWN_TOPIC_ID), and so is everything without an authorizer.
class share_topic_readers {
 public:
  share_topic_readers(const request_context& request, topic_manager& topics,
                      const std::vector<coordinator::topic_uuid>& ids) {
    if (request.services.authorizer == nullptr) return;
    for (const auto& id : ids) {
      if (allowed_.count(id)) continue;
      auto topic = find_share_topic(topics, id);
      allowed_[id] = !topic || authorize(request, security::acl_operation::read,
                                         security::resource_type::topic, topic->name);
    }
  }
  bool allowed(const coordinator::topic_uuid& id) const {
    auto it = allowed_.find(id);
    return it == allowed_.end() || it->second;
  }

 private:
  std::map<coordinator::topic_uuid, bool> allowed_;
};

// One share-partition's answer that the share coordinator gives later, once a write at another
// broker's share coordinator is answered (coordinator::share_answer_later): later() is what the
// coordinator is handed, and the handler's coroutine waits on its own loop (pending_reply.h),
// which goes on serving others meanwhile. Nothing is allocated unless the coordinator asks.
class share_write_wait {
 public:
  explicit share_write_wait(asio::any_io_executor executor) : executor_(std::move(executor)) {}
  const coordinator::share_answer_later& later() {
    if (!later_) {
      later_ = [this] {
        reply_ = std::make_shared<pending_reply<protocol::error_code>>(executor_);
        return reply_->callback();
      };
    }
    return later_;
  }
  bool pending() const { return reply_ != nullptr; }
  // The answer, or nullopt when the handler was cancelled (its connection closed) first.
  asio::awaitable<std::optional<protocol::error_code>> answer(request_context& request) {
    auto reply = std::move(reply_);
    if (!co_await reply->wait(request)) co_return std::nullopt;
    co_return reply->value();
  }

 private:
  asio::any_io_executor executor_;
  coordinator::share_answer_later later_;
  std::shared_ptr<pending_reply<protocol::error_code>> reply_;
};

// Applies one partition's acknowledgement batches (ShareFetch or ShareAcknowledge): the request
// checks of Kafka's KafkaApis (INVALID_REQUEST), the topic's existence (UNKNOWN_TOPIC_ID), READ
// on it (TOPIC_AUTHORIZATION_FAILED, when `readers` is given), the partition's
// (UNKNOWN_TOPIC_OR_PARTITION), then the share-partition's verdict (INVALID_RECORD_STATE). In a
// cluster the verdict may come later (nullopt): then to `wait`.
template <class Batch>
std::optional<protocol::error_code> apply_acknowledgements(
    coordinator::share_coordinator& shares, topic_manager& topics, std::string_view group_id,
    std::string_view member_id, const coordinator::topic_uuid& topic_id, int32_t partition,
    const std::vector<Batch>& batches, bool renew_allowed, int64_t now_ms, share_write_wait& wait,
    const share_topic_readers* readers = nullptr) {
  std::vector<coordinator::acknowledgement_batch> acks;
  acks.reserve(batches.size());
  for (const Batch& b : batches) {
    acks.push_back({b.first_offset, b.last_offset,
                    std::vector<int8_t>(b.acknowledge_types.begin(), b.acknowledge_types.end())});
  }
  const int8_t max_type = renew_allowed ? 4 : 3;
  if (auto e = coordinator::validate_acknowledgement_batches(acks, max_type);
      e != protocol::error_code::none) {
    return e;
  }
  auto topic = find_share_topic(topics, topic_id);
  if (!topic) return protocol::error_code::unknown_topic_id;
  if (readers != nullptr && !readers->allowed(topic_id)) {
    return protocol::error_code::topic_authorization_failed;
  }
  if (partition < 0 || partition >= topic->partitions) {
    return protocol::error_code::unknown_topic_or_partition;
  }
  return shares.acknowledge(group_id, member_id, {topic_id, partition}, acks, now_ms, wait.later());
}

}  // namespace tarn::broker
