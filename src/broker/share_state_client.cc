// The share-state RPCs a share-partition leader sends to another broker's share coordinator
// (share_state_client.h).
#include "broker/share_state_client.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "broker/replica_manager.h"
#include "cluster/cluster_membership.h"
#include "coordinator/wire_ids.h"
#include "protocol/messages/delete_share_group_state_request.h"
#include "protocol/messages/delete_share_group_state_response.h"
#include "protocol/messages/initialize_share_group_state_request.h"
#include "protocol/messages/initialize_share_group_state_response.h"
#include "protocol/messages/read_share_group_state_request.h"
#include "protocol/messages/read_share_group_state_response.h"
#include "protocol/messages/read_share_group_state_summary_request.h"
#include "protocol/messages/read_share_group_state_summary_response.h"
#include "protocol/messages/write_share_group_state_request.h"
#include "protocol/messages/write_share_group_state_response.h"
#include "protocol/reader.h"
#include "protocol/writer.h"

namespace tarn::broker {

namespace {

using protocol::error_code;

// Kafka 4.4's latest versions: Write v1 carries DeliveryCompleteCount.
constexpr int16_t read_version = 0;
constexpr int16_t write_version = 1;
constexpr int16_t initialize_version = 0;
constexpr int16_t delete_version = 0;
constexpr int16_t summary_version = 1;

int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The one partition's result of a response (its error, message and what `fill` takes), or
// nullopt when the response does not hold it.
template <class Response, class Fill>
std::optional<coordinator::share_state_answer> one_result(std::span<const uint8_t> body,
                                                          int16_t version, Fill fill) {
  protocol::reader r(body);
  auto resp = Response::decode(r, version);
  if (!resp || resp->results.empty() || resp->results.front().partitions.empty()) {
    return std::nullopt;
  }
  const auto& p = resp->results.front().partitions.front();
  coordinator::share_state_answer a;
  a.error = static_cast<error_code>(p.error_code);
  if (p.error_message) a.message = std::string(*p.error_message);
  fill(p, a);
  return a;
}

// The body of a `Request` at `version` naming the key's one partition, whose fields past its
// index `fill` sets: the three RPCs differ only there.
template <class Request, class Fill>
std::vector<uint8_t> one_partition_request(const coordinator::share_partition_key& key,
                                           int16_t version, Fill fill) {
  Request req;
  req.group_id = key.group_id;
  auto& t = req.topics.emplace_back();
  t.topic_id = coordinator::to_wire(key.topic_id);
  auto& p = t.partitions.emplace_back();
  p.partition = key.partition;
  fill(p);
  std::vector<uint8_t> body;
  protocol::writer w(body);
  req.encode(w, version);
  return body;
}

}  // namespace

std::optional<int32_t> share_state_client::leader_epoch(const coordinator::topic_uuid& topic_id,
                                                        int32_t partition) {
  auto topic = topics_.topic_by_id(topic_id);
  if (!topic) return std::nullopt;
  const leadership lead = leadership_of(&replicas_, topic->name, partition, config_.node_id);
  if (!lead.serving) return std::nullopt;
  return lead.leader_epoch;
}

share_state_client::~share_state_client() { stop(); }

void share_state_client::start() {
  thread_ = std::thread([this] { run(); });
}

void share_state_client::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void share_state_client::submit(const coordinator::share_partition_key& key, int16_t api_key,
                                int16_t version, std::vector<uint8_t> body, parse_fn parse,
                                coordinator::share_state_callback done) {
  call c;
  c.key = key;
  c.api_key = api_key;
  c.version = version;
  c.body = std::move(body);
  c.parse = std::move(parse);
  c.done = std::move(done);
  c.deadline_ms = steady_ms() + call_timeout_ms;
  c.last.error = error_code::coordinator_not_available;
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;  // going down: dropped, as the calls queued at stop()
    queued_.push_back(std::move(c));
  }
  cv_.notify_all();
}

void share_state_client::run() {
  std::vector<call> retry;  // retriable answers, tried again after the backoff
  for (;;) {
    std::vector<call> round;
    {
      std::unique_lock lock(mu_);
      auto woken = [&] { return stopping_ || !queued_.empty(); };
      if (retry.empty()) {
        cv_.wait(lock, woken);
      } else {
        int64_t first = retry.front().not_before_ms;
        for (const call& c : retry) first = std::min(first, c.not_before_ms);
        cv_.wait_for(lock, std::chrono::milliseconds(std::max<int64_t>(first - steady_ms(), 0)),
                     woken);
      }
      if (stopping_) return;
      for (auto& c : queued_) round.push_back(std::move(c));
      queued_.clear();
    }
    const int64_t now = steady_ms();
    std::vector<call> later;
    for (auto& c : retry) (c.not_before_ms <= now ? round : later).push_back(std::move(c));
    retry = std::move(later);
    for (call& c : round) {
      if (auto answer = attempt(c)) {
        c.done(std::move(*answer));
        continue;
      }
      if (steady_ms() + retry_backoff_ms >= c.deadline_ms) {
        spdlog::warn(
            "share-state persister: group {} partition {}: API {} gave up after {} ms: {} {}",
            c.key.group_id, c.key.partition, c.api_key, call_timeout_ms,
            protocol::describe(c.last.error).name, c.last.message);
        // What Kafka's persister answers when the coordinator cannot be reached.
        coordinator::share_state_answer failed;
        failed.error = error_code::coordinator_not_available;
        c.done(std::move(failed));
        continue;
      }
      c.not_before_ms = steady_ms() + retry_backoff_ms;
      retry.push_back(std::move(c));
    }
  }
}

std::optional<coordinator::share_state_answer> share_state_client::attempt(call& c) {
  // FindCoordinator's answer, read where FindCoordinator reads it: the leader of the key's
  // partition of __share_group_state in the partition states the watch keeps fresh.
  const auto partitions = state_topic_.partitions();
  if (!partitions || *partitions <= 0) return std::nullopt;
  const int32_t p = coordinator::share_state_partition_for(c.key, *partitions);
  auto role = replicas_.role(coordinator::share_group_state_topic_name, p);
  if (!role || role->leader_id < 0) return std::nullopt;
  auto& conn = connections_[role->leader_id];
  if (!conn) conn = std::make_unique<broker_connection>("tarn-share-state-persister");
  if (!connect_to_broker(*conn, config_, membership_, role->leader_id)) return std::nullopt;
  const int64_t left = std::max<int64_t>(c.deadline_ms - steady_ms(), 1);
  auto answer = conn->round_trip(c.api_key, c.version, c.body, buffer_, left, [this] {
    std::lock_guard lock(mu_);
    return stopping_;
  });
  if (!answer) {
    spdlog::debug("share-state persister: broker {}: {}", role->leader_id, answer.error());
    c.last.error = error_code::coordinator_not_available;
    c.last.message = answer.error();
    conn->close_connection();
    return std::nullopt;
  }
  auto a = c.parse(*answer);
  if (!a) {
    conn->close_connection();
    c.last.error = error_code::coordinator_not_available;
    return std::nullopt;
  }
  switch (a->error) {
    case error_code::not_coordinator:
    case error_code::coordinator_load_in_progress:
    case error_code::coordinator_not_available:
      c.last = std::move(*a);
      return std::nullopt;  // found again after the backoff
    default:
      return a;
  }
}

void share_state_client::read(const coordinator::share_partition_key& key, int32_t leader_epoch,
                              coordinator::share_state_callback done) {
  using request = protocol::read_share_group_state_request;
  auto body = one_partition_request<request>(key, read_version,
                                             [&](auto& p) { p.leader_epoch = leader_epoch; });
  submit(
      key, request::api_key, read_version, std::move(body),
      [](std::span<const uint8_t> b) {
        return one_result<protocol::read_share_group_state_response>(
            b, read_version, [](const auto& pr, coordinator::share_state_answer& a) {
              a.state.state_epoch = pr.state_epoch;
              a.state.start_offset = pr.start_offset;
              for (const auto& sb : pr.state_batches) {
                a.state.state_batches.push_back(
                    {sb.first_offset, sb.last_offset, sb.delivery_state, sb.delivery_count});
              }
            });
      },
      std::move(done));
}

void share_state_client::write(const coordinator::share_partition_key& key,
                               const coordinator::share_state_write& write,
                               coordinator::share_state_callback done) {
  using request = protocol::write_share_group_state_request;
  auto body = one_partition_request<request>(key, write_version, [&](auto& p) {
    p.state_epoch = write.state_epoch;
    p.leader_epoch = write.leader_epoch;
    p.start_offset = write.start_offset;
    p.delivery_complete_count = write.delivery_complete_count;
    for (const auto& b : write.batches) {
      p.state_batches.push_back(
          {b.first_offset, b.last_offset, b.delivery_state, b.delivery_count});
    }
  });
  submit(
      key, request::api_key, write_version, std::move(body),
      [](std::span<const uint8_t> b) {
        return one_result<protocol::write_share_group_state_response>(
            b, write_version, [](const auto&, coordinator::share_state_answer&) {});
      },
      std::move(done));
}

void share_state_client::initialize(const coordinator::share_partition_key& key,
                                    int32_t state_epoch, int64_t start_offset,
                                    coordinator::share_state_callback done) {
  using request = protocol::initialize_share_group_state_request;
  auto body = one_partition_request<request>(key, initialize_version, [&](auto& p) {
    p.state_epoch = state_epoch;
    p.start_offset = start_offset;
  });
  submit(
      key, request::api_key, initialize_version, std::move(body),
      [](std::span<const uint8_t> b) {
        return one_result<protocol::initialize_share_group_state_response>(
            b, initialize_version, [](const auto&, coordinator::share_state_answer&) {});
      },
      std::move(done));
}

void share_state_client::delete_state(const coordinator::share_partition_key& key,
                                      coordinator::share_state_callback done) {
  using request = protocol::delete_share_group_state_request;
  auto body = one_partition_request<request>(key, delete_version, [](auto&) {});
  submit(
      key, request::api_key, delete_version, std::move(body),
      [](std::span<const uint8_t> b) {
        return one_result<protocol::delete_share_group_state_response>(
            b, delete_version, [](const auto&, coordinator::share_state_answer&) {});
      },
      std::move(done));
}

void share_state_client::read_summary(const coordinator::share_partition_key& key,
                                      coordinator::share_state_callback done) {
  using request = protocol::read_share_group_state_summary_request;
  // The coordinator does not check a summary's leader epoch (Kafka's ShareCoordinatorShard).
  auto body =
      one_partition_request<request>(key, summary_version, [](auto& p) { p.leader_epoch = 0; });
  submit(
      key, request::api_key, summary_version, std::move(body),
      [](std::span<const uint8_t> b) {
        return one_result<protocol::read_share_group_state_summary_response>(
            b, summary_version, [](const auto& pr, coordinator::share_state_answer& a) {
              a.state.state_epoch = pr.state_epoch;
              a.state.leader_epoch = pr.leader_epoch;
              a.state.start_offset = pr.start_offset;
              a.state.delivery_complete_count = pr.delivery_complete_count;
            });
      },
      std::move(done));
}

}  // namespace tarn::broker
