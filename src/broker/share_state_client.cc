// The share-state RPCs a share-partition leader sends to another broker's share coordinator
// (share_state_client.h).
#include "broker/share_state_client.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <utility>

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
using answer_type = coordinator::share_state_answer;

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

// The body of a `Request` at `version` for one group's `calls` (distinct share-partitions), their
// partitions under their topics in the order they come; `fill` sets a partition entry's fields
// past its index from its call.
template <class Request, class Calls, class Fill>
std::vector<uint8_t> request_body(const Calls& calls, int16_t version, Fill fill) {
  Request req;
  req.group_id = calls.front().key.group_id;
  for (const auto& c : calls) {
    const protocol::uuid id = coordinator::to_wire(c.key.topic_id);
    auto t = std::find_if(req.topics.begin(), req.topics.end(),
                          [&id](const auto& topic) { return topic.topic_id == id; });
    if (t == req.topics.end()) {
      t = req.topics.emplace(req.topics.end());
      t->topic_id = id;
    }
    auto& p = t->partitions.emplace_back();
    p.partition = c.key.partition;
    fill(c, p);
  }
  std::vector<uint8_t> body;
  protocol::writer w(body);
  req.encode(w, version);
  return body;
}

// Each call's result in a `Response` body (its error, message and what `fill` takes), nullopt
// for one the response does not hold; nullopt when the body does not decode.
template <class Response, class Calls, class Fill>
std::optional<std::vector<std::optional<answer_type>>> response_answers(
    std::span<const uint8_t> body, int16_t version, const Calls& calls, Fill fill) {
  protocol::reader r(body);
  auto resp = Response::decode(r, version);
  if (!resp) return std::nullopt;
  std::map<std::pair<coordinator::topic_uuid, int32_t>, size_t> index;
  for (size_t i = 0; i < calls.size(); ++i) {
    index.emplace(std::pair{calls[i].key.topic_id, calls[i].key.partition}, i);
  }
  std::vector<std::optional<answer_type>> out(calls.size());
  for (const auto& tr : resp->results) {
    const coordinator::topic_uuid id = coordinator::from_wire(tr.topic_id);
    for (const auto& p : tr.partitions) {
      auto it = index.find({id, p.partition});
      if (it == index.end()) continue;
      answer_type& a = out[it->second].emplace();
      a.error = static_cast<error_code>(p.error_code);
      if (p.error_message) a.message = std::string(*p.error_message);
      fill(p, a);
    }
  }
  return out;
}

}  // namespace

share_state_client::share_state_client(const broker_config& config, replica_manager& replicas,
                                       cluster::cluster_membership& membership,
                                       const coordinator::metadata_view& topics,
                                       const coordinator::offsets_log& state_topic)
    : share_state_client(network{
          // FindCoordinator's answer, read where FindCoordinator reads it: the leader of the
          // key's partition of __share_group_state in the partition states the watch keeps fresh.
          [&replicas,
           &state_topic](const coordinator::share_partition_key& key) -> std::optional<int32_t> {
            const auto partitions = state_topic.partitions();
            if (!partitions || *partitions <= 0) return std::nullopt;
            const int32_t p = coordinator::share_state_partition_for(key, *partitions);
            auto role = replicas.role(coordinator::share_group_state_topic_name, p);
            if (!role || role->leader_id < 0) return std::nullopt;
            return role->leader_id;
          },
          [&config, &membership](broker_link& link, int16_t api_key, int16_t version,
                                 std::span<const uint8_t> body, int64_t timeout_ms,
                                 const std::function<bool()>& abandon)
              -> result<std::span<const uint8_t>, std::string> {
            if (!connect_to_broker(link.conn, config, membership, link.node)) {
              return fail(std::string("not connected"));
            }
            auto answer =
                link.conn.round_trip(api_key, version, body, link.buffer, timeout_ms, abandon);
            if (!answer) link.conn.close_connection();
            return answer;
          },
          [&config, &replicas, &topics](const coordinator::topic_uuid& topic_id,
                                        int32_t partition) -> std::optional<int32_t> {
            auto topic = topics.topic_by_id(topic_id);
            if (!topic) return std::nullopt;
            const leadership lead =
                leadership_of(&replicas, topic->name, partition, config.node_id);
            if (!lead.serving) return std::nullopt;
            return lead.leader_epoch;
          }}) {}

share_state_client::share_state_client(network net)
    : net_(std::move(net)),
      sender_("tarn-share-state-persister",
              [this](broker_link& link, std::vector<call>& round,
                     std::vector<sender::deferred>& again) { send_round(link, round, again); }) {}

share_state_client::~share_state_client() { stop(); }

void share_state_client::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    out_.clear();  // the calls waiting behind one out are dropped with it
  }
  sender_.stop();
}

std::optional<int32_t> share_state_client::leader_epoch(const coordinator::topic_uuid& topic_id,
                                                        int32_t partition) {
  return net_.leader_epoch(topic_id, partition);
}

void share_state_client::submit(call c) {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;  // going down: dropped, as the calls queued at stop()
    auto [it, first] = out_.try_emplace(c.key);
    if (!first) {
      it->second.push_back(std::move(c));  // behind the key's call out
      return;
    }
  }
  route(std::move(c));
}

void share_state_client::route(call c) {
  c.deadline_ms = steady_ms() + call_timeout_ms;
  c.last = answer_type{};
  c.last.error = error_code::coordinator_not_available;
  const int32_t node = net_.coordinator_of(c.key).value_or(no_coordinator);
  (void)sender_.submit(node, std::move(c));  // refused only once stopped: dropped
}

void share_state_client::send_round(broker_link& link, std::vector<call>& round,
                                    std::vector<sender::deferred>& again) {
  // Each call to where its coordinator is now (it may have moved while the call waited), then
  // one request per RPC and group, in the order they first come.
  std::vector<std::vector<call>> requests;
  for (call& c : round) {
    const std::optional<int32_t> node = net_.coordinator_of(c.key);
    if (!node) {
      retry(c, again);
      continue;
    }
    if (*node != link.node) {
      (void)sender_.submit(*node, std::move(c));  // refused only once stopped: dropped
      continue;
    }
    auto same = std::find_if(requests.begin(), requests.end(), [&c](const std::vector<call>& r) {
      return r.front().kind == c.kind && r.front().key.group_id == c.key.group_id;
    });
    if (same == requests.end()) same = requests.emplace(requests.end());
    same->push_back(std::move(c));
  }
  for (auto& calls : requests) send_request(link, calls, again);
}

void share_state_client::send_request(broker_link& link, std::vector<call>& calls,
                                      std::vector<sender::deferred>& again) {
  int16_t api_key = 0;
  int16_t version = 0;
  std::vector<uint8_t> body;
  // Reads the answers of a response body, by the call's RPC.
  std::function<std::optional<std::vector<std::optional<answer_type>>>(std::span<const uint8_t>)>
      parse;
  switch (calls.front().kind) {
    case rpc::initialize: {
      using request = protocol::initialize_share_group_state_request;
      api_key = request::api_key;
      version = initialize_version;
      body = request_body<request>(calls, version, [](const call& c, auto& p) {
        p.state_epoch = c.data.state_epoch;
        p.start_offset = c.data.start_offset;
      });
      parse = [&calls](std::span<const uint8_t> b) {
        return response_answers<protocol::initialize_share_group_state_response>(
            b, initialize_version, calls, [](const auto&, answer_type&) {});
      };
      break;
    }
    case rpc::read: {
      using request = protocol::read_share_group_state_request;
      api_key = request::api_key;
      version = read_version;
      body = request_body<request>(calls, version,
                                   [](const call& c, auto& p) { p.leader_epoch = c.leader_epoch; });
      parse = [&calls](std::span<const uint8_t> b) {
        return response_answers<protocol::read_share_group_state_response>(
            b, read_version, calls, [](const auto& pr, answer_type& a) {
              a.state.state_epoch = pr.state_epoch;
              a.state.start_offset = pr.start_offset;
              for (const auto& sb : pr.state_batches) {
                a.state.state_batches.push_back(
                    {sb.first_offset, sb.last_offset, sb.delivery_state, sb.delivery_count});
              }
            });
      };
      break;
    }
    case rpc::write: {
      using request = protocol::write_share_group_state_request;
      api_key = request::api_key;
      version = write_version;
      body = request_body<request>(calls, version, [](const call& c, auto& p) {
        p.state_epoch = c.data.state_epoch;
        p.leader_epoch = c.data.leader_epoch;
        p.start_offset = c.data.start_offset;
        p.delivery_complete_count = c.data.delivery_complete_count;
        for (const auto& b : c.data.batches) {
          p.state_batches.push_back(
              {b.first_offset, b.last_offset, b.delivery_state, b.delivery_count});
        }
      });
      parse = [&calls](std::span<const uint8_t> b) {
        return response_answers<protocol::write_share_group_state_response>(
            b, write_version, calls, [](const auto&, answer_type&) {});
      };
      break;
    }
    case rpc::delete_state: {
      using request = protocol::delete_share_group_state_request;
      api_key = request::api_key;
      version = delete_version;
      body = request_body<request>(calls, version, [](const call&, auto&) {});
      parse = [&calls](std::span<const uint8_t> b) {
        return response_answers<protocol::delete_share_group_state_response>(
            b, delete_version, calls, [](const auto&, answer_type&) {});
      };
      break;
    }
    case rpc::summary: {
      using request = protocol::read_share_group_state_summary_request;
      api_key = request::api_key;
      version = summary_version;
      // The coordinator does not check a summary's leader epoch (Kafka's ShareCoordinatorShard).
      body =
          request_body<request>(calls, version, [](const call&, auto& p) { p.leader_epoch = 0; });
      parse = [&calls](std::span<const uint8_t> b) {
        return response_answers<protocol::read_share_group_state_summary_response>(
            b, summary_version, calls, [](const auto& pr, answer_type& a) {
              a.state.state_epoch = pr.state_epoch;
              a.state.leader_epoch = pr.leader_epoch;
              a.state.start_offset = pr.start_offset;
              a.state.delivery_complete_count = pr.delivery_complete_count;
            });
      };
      break;
    }
  }
  // As long as the call with the most time left may wait.
  const int64_t now = steady_ms();
  int64_t timeout_ms = 1;
  for (const call& c : calls) timeout_ms = std::max(timeout_ms, c.deadline_ms - now);
  auto response = net_.exchange(link, api_key, version, body, timeout_ms,
                                [this] { return sender_.stopping(); });
  if (!response) {
    spdlog::debug("share-state persister: broker {}: {}", link.node, response.error());
    for (call& c : calls) {
      c.last = answer_type{};
      c.last.error = error_code::coordinator_not_available;
      c.last.message = response.error();
      retry(c, again);
    }
    return;
  }
  auto answers = parse(*response);
  if (!answers) link.conn.close_connection();
  for (size_t i = 0; i < calls.size(); ++i) {
    call& c = calls[i];
    std::optional<answer_type> a;
    if (answers) a = std::move((*answers)[i]);
    if (!a) {
      c.last = answer_type{};
      c.last.error = error_code::coordinator_not_available;
      retry(c, again);
      continue;
    }
    switch (a->error) {
      case error_code::not_coordinator:
      case error_code::coordinator_load_in_progress:
      case error_code::coordinator_not_available:
        c.last = std::move(*a);
        retry(c, again);  // its coordinator found again after the backoff
        break;
      default:
        finish(c, std::move(*a));
    }
  }
}

const char* share_state_client::rpc_name(rpc kind) {
  switch (kind) {
    case rpc::initialize:
      return "InitializeShareGroupState";
    case rpc::read:
      return "ReadShareGroupState";
    case rpc::write:
      return "WriteShareGroupState";
    case rpc::delete_state:
      return "DeleteShareGroupState";
    case rpc::summary:
      break;
  }
  return "ReadShareGroupStateSummary";
}

void share_state_client::retry(call& c, std::vector<sender::deferred>& again) {
  if (steady_ms() + retry_backoff_ms >= c.deadline_ms) {
    spdlog::warn("share-state persister: group {} partition {}: {} gave up after {} ms: {} {}",
                 c.key.group_id, c.key.partition, rpc_name(c.kind), call_timeout_ms,
                 protocol::describe(c.last.error).name, c.last.message);
    // What Kafka's persister answers when the coordinator cannot be reached.
    answer_type failed;
    failed.error = error_code::coordinator_not_available;
    finish(c, std::move(failed));
    return;
  }
  again.push_back(
      {std::move(c), sender::clock::now() + std::chrono::milliseconds(retry_backoff_ms)});
}

void share_state_client::finish(call& c, answer_type answer) {
  std::optional<call> next;
  {
    std::lock_guard lock(mu_);
    auto it = out_.find(c.key);
    if (it != out_.end()) {
      if (it->second.empty()) {
        out_.erase(it);
      } else {
        next.emplace(std::move(it->second.front()));
        it->second.pop_front();
      }
    }
  }
  c.done(std::move(answer));
  if (next) route(std::move(*next));
}

void share_state_client::read(const coordinator::share_partition_key& key, int32_t leader_epoch,
                              coordinator::share_state_callback done) {
  call c;
  c.key = key;
  c.kind = rpc::read;
  c.leader_epoch = leader_epoch;
  c.done = std::move(done);
  submit(std::move(c));
}

void share_state_client::write(const coordinator::share_partition_key& key,
                               const coordinator::share_state_write& write,
                               coordinator::share_state_callback done) {
  call c;
  c.key = key;
  c.kind = rpc::write;
  c.data = write;
  c.done = std::move(done);
  submit(std::move(c));
}

void share_state_client::initialize(const coordinator::share_partition_key& key,
                                    int32_t state_epoch, int64_t start_offset,
                                    coordinator::share_state_callback done) {
  call c;
  c.key = key;
  c.kind = rpc::initialize;
  c.data.state_epoch = state_epoch;
  c.data.start_offset = start_offset;
  c.done = std::move(done);
  submit(std::move(c));
}

void share_state_client::delete_state(const coordinator::share_partition_key& key,
                                      coordinator::share_state_callback done) {
  call c;
  c.key = key;
  c.kind = rpc::delete_state;
  c.done = std::move(done);
  submit(std::move(c));
}

void share_state_client::read_summary(const coordinator::share_partition_key& key,
                                      coordinator::share_state_callback done) {
  call c;
  c.key = key;
  c.kind = rpc::summary;
  c.done = std::move(done);
  submit(std::move(c));
}

}  // namespace tarn::broker
