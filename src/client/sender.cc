// The producer's I/O thread: metadata, InitProducerId, Produce requests and their responses.
#include "client/sender.h"

#include <fmt/format.h>

#include <algorithm>
#include <future>

#include "client/wire.h"
#include "protocol/error_codes.h"
#include "protocol/messages/init_producer_id_request.h"
#include "protocol/messages/init_producer_id_response.h"
#include "protocol/messages/metadata_request.h"
#include "protocol/messages/metadata_response.h"
#include "protocol/messages/produce_request.h"
#include "protocol/messages/produce_response.h"

namespace tarn::client {
namespace {

using protocol::error_code;

// The errors whose Java exception is an InvalidMetadataException: the metadata is stale.
bool means_stale_metadata(int16_t code) {
  switch (static_cast<error_code>(code)) {
    case error_code::unknown_topic_or_partition:
    case error_code::leader_not_available:
    case error_code::not_leader_or_follower:
    case error_code::kafka_storage_error:
    case error_code::fenced_leader_epoch:
    case error_code::unknown_leader_epoch:
    case error_code::network_exception:
      return true;
    default:
      return false;
  }
}

std::string code_name(int16_t code) {
  const auto* info = protocol::find_error(code);
  return info ? std::string(info->name) : fmt::format("error code {}", code);
}

// The longest the loop sleeps without being woken: bounds how late a waiter on buffer.memory
// or an expired batch is noticed.
constexpr std::chrono::milliseconds max_poll{50};

}  // namespace

sender::sender(const producer_config& config, record_accumulator& accumulator,
               metadata_cache& metadata, transaction_manager* txn)
    : config_(config), accumulator_(accumulator), metadata_(metadata), txn_(txn), timer_(io_) {
  if (config_.security.tls()) {
    // One context for every connection: the CA and the client certificate are read once.
    auto ctx = make_ssl_context(config_.security);
    if (ctx) {
      tls_context_ = std::make_shared<asio::ssl::context>(ctx->release());
    } else {
      fatal_ = producer_error{producer_errc::fatal, 0, false, ctx.error()};
      metadata_.fail_waiters(*fatal_);
    }
  }
}

size_t sender::abort_undrained(const producer_error& error) {
  std::promise<size_t> done;
  auto aborted = done.get_future();
  asio::post(io_, [&] { done.set_value(accumulator_.abort_undrained(error)); });
  return aborted.get();
}

void sender::reset_producer_state(producer_identity identity) {
  std::promise<void> done;
  auto reset = done.get_future();
  asio::post(io_, [&] {
    accumulator_.reset_producer_state(identity);
    done.set_value();
  });
  reset.get();
}

sender::~sender() {
  if (thread_.joinable()) close(clock::now());
}

void sender::start() {
  asio::post(io_, [this] { run_once(); });
  thread_ = std::thread([this] { io_.run(); });
}

void sender::wakeup() {
  if (wakeup_pending_.exchange(true)) return;
  asio::post(io_, [this] {
    wakeup_pending_ = false;
    run_once();
  });
}

void sender::close(clock::time_point deadline) {
  asio::post(io_, [this, deadline] {
    close_deadline_ = deadline;
    closing_ = true;
    run_once();
  });
  if (thread_.joinable()) thread_.join();
}

void sender::schedule(std::chrono::milliseconds delay) {
  // A pass runs per response and per wakeup; re-arming the timer each time costs a cancelled
  // handler and a timerfd_settime. A wait already due no later is kept: firing early only runs
  // a pass, which schedules again.
  const auto expiry = clock::now() + std::min(delay, max_poll);
  if (timer_expiry_ <= expiry) return;
  timer_expiry_ = expiry;
  timer_.expires_at(expiry);
  timer_.async_wait([this](const std::error_code& ec) {
    if (ec) return;  // re-armed or cancelled: the new wait owns timer_expiry_
    timer_expiry_ = clock::time_point::max();
    run_once();
  });
}

size_t sender::produce_in_flight() const {
  size_t n = 0;
  for (const auto& [_, count] : produce_in_flight_) n += count;
  return n;
}

void sender::finish_close() {
  // Forced: fail what is queued, then drop the connections (their in-flight requests fail).
  forced_ = true;
  accumulator_.abort_undrained(
      {producer_errc::producer_closed, 0, false, "Producer is closed forcefully."});
  auto connections = std::move(connections_);
  connections_.clear();
  for (auto& [_, c] : connections) c->close("Producer is closed forcefully.");
  timer_.cancel();
  io_.stop();
}

void sender::run_once() {
  const auto now = clock::now();
  if (closing_) {
    const bool done = accumulator_.incomplete_batches() == 0;
    if (done || now >= close_deadline_ || fatal_) {
      if (!done) finish_close();
      timer_.cancel();
      for (auto& [_, c] : connections_) c->close("producer closed");
      connections_.clear();
      io_.stop();
      return;
    }
  }
  if (fatal_) {
    accumulator_.abort_undrained(*fatal_);
    schedule(max_poll);
    return;
  }

  fail_expired(now);
  maybe_update_metadata(now);
  maybe_init_producer_id(now);

  auto leader_of = [this](const topic_partition& tp) { return metadata_.leader_of(tp); };
  auto partitions_of = [this](const std::string& topic) {
    auto t = metadata_.topic(topic);
    return t ? static_cast<int32_t>(t->partitions.size()) : 0;
  };
  // A pass drains a broker again while it is ready and below max.in.flight (one batch per
  // partition per request, so a backed-up partition makes one request per round), and the
  // requests of a pass go out in one write: the broker wakes once for them instead of once per
  // request. On the 2-core machine the broker's event loop runs on the sender's core (each wakes
  // the other), so every wakeup saved is a context switch pair on the busy core.
  std::vector<std::shared_ptr<broker_connection>> corked;
  std::optional<std::chrono::milliseconds> next_ready_check;
  const auto limit = static_cast<size_t>(config_.max_in_flight_requests_per_connection);
  // Every ready broker has max.in.flight requests awaiting a response: see wakeup_for_data().
  auto all_at_limit = [&](const std::set<node_id>& nodes) {
    if (nodes.empty() || config_.acks == 0) return false;
    for (node_id node : nodes) {
      auto it = connections_.find(node);
      if (it == connections_.end() || !it->second->ready() || it->second->in_flight() < limit) {
        return false;
      }
    }
    return true;
  };
  std::set<node_id> ready_nodes;  // the last round's
  for (int32_t round = 0; round < config_.max_in_flight_requests_per_connection; ++round) {
    auto ready = accumulator_.ready(leader_of, now, partitions_of);
    if (round == 0) {
      // A batch created after this pass began is younger than `now`.
      next_expiry_check_ = std::min(ready.oldest_batch_created.value_or(now), now) +
                           std::chrono::milliseconds(config_.delivery_timeout_ms);
    }
    if (!ready.unknown_leader_topics.empty()) metadata_.request_update();
    next_ready_check = ready.next_ready_check;
    ready_nodes = std::move(ready.ready_nodes);

    std::set<node_id> sendable;
    for (node_id node : ready_nodes) {
      auto c = connection_to(node, now);
      const bool can_send = c && c->ready() && c->in_flight() < limit;
      accumulator_.update_node_latency(node, now, can_send);
      if (can_send) sendable.insert(node);
    }
    if (sendable.empty() || epoch_bump_required_) break;
    auto drained = accumulator_.drain(leader_of, sendable, config_.max_request_size, now);
    if (drained.empty()) break;
    bool room_left = false;  // another round only when a broker just drained can take more
    for (auto& [node, batches] : drained) {
      auto& c = connections_.at(node);
      if (std::find(corked.begin(), corked.end(), c) == corked.end()) {
        c->cork();
        corked.push_back(c);
      }
      send_produce(node, std::move(batches));
      if (c->ready() && c->in_flight() < limit) room_left = true;
    }
    if (!room_left) break;
  }
  saturated_.store(all_at_limit(ready_nodes), std::memory_order_relaxed);
  for (auto& c : corked) c->uncork();
  schedule(next_ready_check.value_or(max_poll));
}

void sender::fail_expired(clock::time_point now) {
  if (now < next_expiry_check_) return;
  for (auto& batch : accumulator_.expired_batches(now)) {
    const auto waited =
        std::chrono::duration_cast<std::chrono::milliseconds>(now - batch->created()).count();
    std::string message =
        fmt::format("Expiring {} record(s) for {}-{}:{} ms has passed since batch creation",
                    batch->record_count(), batch->tp().topic, batch->tp().partition, waited);
    producer_error error{producer_errc::delivery_timeout, 0, false, std::move(message)};
    if (txn_) {
      txn_->batch_failed(error, batch->has_sequence());
    } else if (config_.enable_idempotence && batch->has_sequence()) {
      request_epoch_bump(batch->tp());
    }
    accumulator_.fail_batch(std::move(batch), error);
  }
}

std::shared_ptr<broker_connection> sender::connection_to(node_id node, clock::time_point now) {
  auto it = connections_.find(node);
  if (it != connections_.end()) {
    if (!it->second->closed()) return it->second->ready() ? it->second : nullptr;
    connections_.erase(it);
  }
  if (auto back = reconnect_after_.find(node); back != reconnect_after_.end() && now < back->second)
    return nullptr;
  std::optional<broker_address> address;
  if (node < 0) {
    const size_t index = static_cast<size_t>(-node - 1);
    if (index < config_.bootstrap_servers.size()) address = config_.bootstrap_servers[index];
  } else {
    address = metadata_.broker(node);
  }
  if (!address) return nullptr;
  auto c = std::make_shared<broker_connection>(
      io_, node, *address, config_.client_id, std::chrono::milliseconds(config_.request_timeout_ms),
      std::chrono::milliseconds(config_.socket_connection_setup_timeout_ms), tls_context_,
      config_.security);
  connections_[node] = c;
  c->connect([this, node, weak = std::weak_ptr<broker_connection>(c)](const std::string* error) {
    auto connection = weak.lock();
    if (error && connection && connection->authentication_failed()) {
      // A refused certificate or password stays refused: fail the sends now, as Java's
      // AuthenticationException does, rather than retry until delivery.timeout.ms.
      if (!fatal_) {
        fatal_ = producer_error{producer_errc::fatal, 0, false, *error};
        metadata_.fail_waiters(*fatal_);
      }
    }
    if (error) {
      reconnect_after_[node] =
          clock::now() + std::chrono::milliseconds(config_.reconnect_backoff_ms);
      metadata_.request_update();
    } else {
      reconnect_after_.erase(node);
    }
    wakeup();
  });
  return nullptr;
}

std::shared_ptr<broker_connection> sender::any_connection(clock::time_point now) {
  std::shared_ptr<broker_connection> best;
  for (auto& [_, c] : connections_) {
    if (c->ready() && (!best || c->in_flight() < best->in_flight())) best = c;
  }
  if (best) return best;
  for (auto& [_, c] : connections_) {
    if (c->connecting()) return nullptr;  // wait for it
  }
  // Known brokers first, then the bootstrap servers.
  for (node_id node : metadata_.brokers()) {
    if (connection_to(node, now) || connections_.contains(node)) return nullptr;
  }
  for (size_t i = 0; i < config_.bootstrap_servers.size(); ++i) {
    const node_id node = -static_cast<node_id>(i) - 1;
    if (connection_to(node, now) || connections_.contains(node)) return nullptr;
  }
  return nullptr;
}

void sender::maybe_update_metadata(clock::time_point now) {
  if (metadata_in_flight_ || now < metadata_after_) return;
  const bool stale = !have_metadata_ ||
                     now - last_metadata_ >= std::chrono::milliseconds(config_.metadata_max_age_ms);
  if (!stale && !metadata_.take_update_request()) return;
  auto c = any_connection(now);
  if (!c) {
    metadata_.request_update();  // keep asking until a connection is up
    return;
  }
  const int16_t version = c->version_for(metadata_versions.api_key, metadata_versions.min_version,
                                         metadata_versions.max_version);
  if (version < 0) {
    c->close("the broker shares no Metadata version with tarn's producer");
    return;
  }
  auto topics = std::make_shared<std::vector<std::string>>(metadata_.topics_to_fetch());
  protocol::metadata_request request;
  request.topics.emplace();
  for (const auto& t : *topics) {
    protocol::metadata_request::metadata_request_topic topic;
    topic.name = t;
    request.topics->push_back(topic);
  }
  request.allow_auto_topic_creation = true;  // as Java's producer
  metadata_in_flight_ = true;
  metadata_after_ = now + std::chrono::milliseconds(config_.retry_backoff_ms);
  c->send(
      [request, version, this](int32_t correlation_id) {
        return frame_request(request, version, correlation_id, config_.client_id);
      },
      true,
      [this, version, topics](result<std::span<const uint8_t>, std::string> response) {
        metadata_in_flight_ = false;
        if (!response) {
          metadata_.request_update();
          return wakeup();
        }
        auto body = decode_response<protocol::metadata_response>(*response, version);
        if (!body) {
          metadata_.request_update();
          return wakeup();
        }
        cluster_update update;
        for (const auto& b : body->brokers) {
          update.brokers[b.node_id] = {std::string(b.host), static_cast<uint16_t>(b.port)};
        }
        for (const auto& t : body->topics) {
          if (!t.name) continue;
          topic_metadata topic;
          topic.name = std::string(*t.name);
          topic.error_code = t.error_code;
          int32_t count = 0;
          for (const auto& p : t.partitions) count = std::max(count, p.partition_index + 1);
          topic.partitions.resize(static_cast<size_t>(count));
          for (const auto& p : t.partitions) {
            if (p.partition_index < 0) continue;
            auto& slot = topic.partitions[static_cast<size_t>(p.partition_index)];
            slot.leader_epoch = p.leader_epoch;
            if (p.leader_id >= 0) slot.leader = p.leader_id;
          }
          update.topics.push_back(std::move(topic));
        }
        metadata_.update(std::move(update));
        have_metadata_ = true;
        last_metadata_ = clock::now();
        wakeup();
      });
}

void sender::request_epoch_bump(const topic_partition& tp) {
  epoch_bump_required_ = true;
  if (std::find(partitions_to_rewrite_.begin(), partitions_to_rewrite_.end(), tp) ==
      partitions_to_rewrite_.end()) {
    partitions_to_rewrite_.push_back(tp);
  }
}

void sender::maybe_init_producer_id(clock::time_point now) {
  if (!config_.enable_idempotence || init_producer_id_in_flight_) return;
  if (txn_) return;  // init_transactions() gets the identity from the transaction coordinator
  if (epoch_bump_required_) {
    // Wait until nothing is in flight, so no response can still refer to the old epoch.
    if (produce_in_flight() > 0) return;
    const producer_identity current = accumulator_.identity();
    if (current.valid() && current.epoch < INT16_MAX) {
      accumulator_.bump_epoch(
          {current.producer_id, static_cast<producer_epoch_t>(current.epoch + 1)},
          partitions_to_rewrite_);
      partitions_to_rewrite_.clear();
      epoch_bump_required_ = false;
      return;
    }
    accumulator_.set_producer_identity({});  // a new producer id, below
  }
  if (accumulator_.identity().valid() || now < init_producer_id_after_) return;
  auto c = any_connection(now);
  if (!c) return;
  const int16_t version =
      c->version_for(init_producer_id_versions.api_key, init_producer_id_versions.min_version,
                     init_producer_id_versions.max_version);
  if (version < 0) {
    fatal_ = producer_error{producer_errc::fatal, 0, false,
                            "The broker does not support InitProducerId, which the idempotent "
                            "producer needs (set enable.idempotence=false)"};
    return;
  }
  protocol::init_producer_id_request request;
  request.transactional_id = std::nullopt;
  request.transaction_timeout_ms = INT32_MAX;  // as Java's idempotent (non-transactional) producer
  init_producer_id_in_flight_ = true;
  c->send(
      [request, version, this](int32_t correlation_id) {
        return frame_request(request, version, correlation_id, config_.client_id);
      },
      true,
      [this, version](result<std::span<const uint8_t>, std::string> response) {
        init_producer_id_in_flight_ = false;
        auto retry_later = [this] {
          init_producer_id_after_ =
              clock::now() + std::chrono::milliseconds(config_.retry_backoff_ms);
          wakeup();
        };
        if (!response) return retry_later();
        auto body = decode_response<protocol::init_producer_id_response>(*response, version);
        if (!body) return retry_later();
        if (body->error_code != 0) {
          const auto* info = protocol::find_error(body->error_code);
          if (info && info->retriable) return retry_later();
          fatal_ =
              producer_error{producer_errc::fatal, body->error_code, false,
                             fmt::format("InitProducerId failed: {}", code_name(body->error_code))};
          return wakeup();
        }
        producer_identity identity{body->producer_id, body->producer_epoch};
        if (epoch_bump_required_) {
          accumulator_.reset_producer_state(identity);
          partitions_to_rewrite_.clear();
          epoch_bump_required_ = false;
        } else {
          accumulator_.set_producer_identity(identity);
        }
        wakeup();
      });
}

void sender::send_produce(node_id node, std::vector<std::unique_ptr<producer_batch>> batches) {
  auto c = connections_.at(node);
  // A transactional producer speaks transactions v1 (tarn serves no other): Produce v12 is how
  // a client says it runs v2 (KIP-890: the partition added by Produce, the epoch bumped by
  // EndTxn), so it stops at v11, as Java's producer does when transaction.version < 2.
  const int16_t version = c->version_for(produce_versions.api_key, produce_versions.min_version,
                                         txn_ ? int16_t{11} : produce_versions.max_version);
  auto owned = std::make_shared<std::vector<std::unique_ptr<producer_batch>>>(std::move(batches));
  if (version < 0) {
    for (auto& b : *owned) {
      accumulator_.fail_batch(std::move(b), {producer_errc::fatal, 0, false,
                                             "The broker shares no Produce version (3-12) with "
                                             "tarn's producer"});
    }
    return;
  }
  protocol::produce_request request;
  request.transactional_id = std::nullopt;
  if (txn_) request.transactional_id = txn_->transactional_id();
  request.acks = config_.acks;
  request.timeout_ms = config_.request_timeout_ms;
  for (const auto& b : *owned) {
    auto topic = std::find_if(request.topic_data.begin(), request.topic_data.end(),
                              [&](const auto& t) { return t.name == b->tp().topic; });
    if (topic == request.topic_data.end()) {
      request.topic_data.emplace_back();
      topic = std::prev(request.topic_data.end());
      topic->name = b->tp().topic;
    }
    protocol::produce_request::partition_produce_data partition;
    partition.index = b->tp().partition;
    partition.records = b->bytes();
    topic->partition_data.push_back(partition);
  }
  ++produce_in_flight_[node];
  const bool expect_response = config_.acks != 0;
  c->send(
      [&request, version, this](int32_t correlation_id) {
        return frame_request(request, version, correlation_id, config_.client_id);
      },
      expect_response,
      [this, node, version, owned, weak = std::weak_ptr<broker_connection>(c)](
          result<std::span<const uint8_t>, std::string> response) {
        --produce_in_flight_[node];
        handle_produce_response(weak.lock(), node, version, owned, std::move(response));
        wakeup();
      });
}

void sender::handle_produce_response(
    const std::shared_ptr<broker_connection>& connection, node_id node, int16_t version,
    std::shared_ptr<std::vector<std::unique_ptr<producer_batch>>> batches,
    result<std::span<const uint8_t>, std::string> response) {
  const auto now = clock::now();
  if (forced_) {
    for (auto& b : *batches) {
      accumulator_.fail_batch(std::move(b), {producer_errc::producer_closed, 0, false,
                                             "Producer is closed forcefully."});
    }
    return;
  }
  if (!response) {
    // The connection failed: every batch of the request may or may not have been written.
    metadata_.request_update();
    for (auto& b : *batches) {
      retry_or_fail(
          std::move(b),
          {producer_errc::broker_error, static_cast<int16_t>(error_code::network_exception), true,
           fmt::format("Disconnected from node {}: {}", node, response.error())},
          now);
    }
    return;
  }
  if (config_.acks == 0) {
    for (auto& b : *batches) accumulator_.complete(std::move(b), -1, -1);
    return;
  }
  auto body = decode_response<protocol::produce_response>(*response, version);
  if (!body) {
    if (connection) connection->close("malformed Produce response: " + body.error());
    for (auto& b : *batches) {
      retry_or_fail(
          std::move(b),
          {producer_errc::broker_error, static_cast<int16_t>(error_code::network_exception), true,
           "malformed Produce response: " + body.error()},
          now);
    }
    return;
  }
  for (auto& b : *batches) {
    const protocol::produce_response::partition_produce_response* found = nullptr;
    for (const auto& t : body->responses) {
      if (t.name != b->tp().topic) continue;
      for (const auto& p : t.partition_responses) {
        if (p.index == b->tp().partition) found = &p;
      }
    }
    if (!found) {
      retry_or_fail(std::move(b),
                    {producer_errc::broker_error,
                     static_cast<int16_t>(error_code::unknown_server_error), false,
                     fmt::format("The Produce response has no result for {}-{}", b->tp().topic,
                                 b->tp().partition)},
                    now);
      continue;
    }
    if (found->error_code == 0 ||
        found->error_code == static_cast<int16_t>(error_code::duplicate_sequence_number)) {
      accumulator_.complete(std::move(b), found->base_offset, found->log_append_time_ms);
      continue;
    }
    handle_batch_error(std::move(b), found->error_code, found->error_message.value_or(""), now);
  }
}

void sender::handle_batch_error(std::unique_ptr<producer_batch> batch, int16_t code,
                                std::string_view error_message, clock::time_point now) {
  if (means_stale_metadata(code)) metadata_.request_update();
  const auto* info = protocol::find_error(code);
  std::string message =
      fmt::format("{}-{}: {}: {}", batch->tp().topic, batch->tp().partition, code_name(code),
                  error_message.empty() && info ? info->message : error_message);
  if (code == static_cast<int16_t>(error_code::message_too_large)) {
    if (batch->record_count() > 1) {
      next_expiry_check_ = clock::time_point::min();  // its parts are as old as it
      return accumulator_.split_and_reenqueue(std::move(batch));
    }
    return retry_or_fail(std::move(batch),
                         {producer_errc::record_too_large, code, false, std::move(message)}, now);
  }
  const bool out_of_order = code == static_cast<int16_t>(error_code::out_of_order_sequence_number);
  const bool sequence_error = out_of_order ||
                              code == static_cast<int16_t>(error_code::unknown_producer_id) ||
                              code == static_cast<int16_t>(error_code::invalid_producer_epoch);
  if (txn_ && sequence_error && batch->has_sequence()) {
    // Transactional: the epoch belongs to the coordinator, so no bump here. INVALID_PRODUCER_EPOCH
    // means fenced; a real gap or a lost producer state spoils the transaction (abortable, and
    // abort_transaction() bumps the epoch through the coordinator). An out-of-order batch behind
    // an earlier failure is retried as is.
    const bool gap = !out_of_order || accumulator_.is_next_sequence(*batch) ||
                     accumulator_.acknowledged_past(*batch);
    retry_or_fail(std::move(batch), {producer_errc::broker_error, code, !gap, std::move(message)},
                  now);
    return;
  }
  if (config_.enable_idempotence && sequence_error && batch->has_sequence()) {
    // Java's TransactionManager.canRetry for the idempotent producer: an out-of-order batch
    // ahead of the next expected one waits for the earlier batch's outcome; a real gap, a broker
    // that lost the producer's state or a fenced epoch bumps the epoch. So does an out-of-order
    // batch behind a sequence the broker already acknowledged (Kafka wrote later batches of a
    // partition it had no producer state for while this one failed): retried as is, it would be
    // refused until delivery.timeout.ms. Either way the batch is sent again.
    if (!out_of_order || accumulator_.is_next_sequence(*batch) ||
        accumulator_.acknowledged_past(*batch)) {
      request_epoch_bump(batch->tp());
    }
    retry_or_fail(std::move(batch), {producer_errc::broker_error, code, true, std::move(message)},
                  now);
    return;
  }
  retry_or_fail(std::move(batch),
                {producer_errc::broker_error, code, info && info->retriable, std::move(message)},
                now);
}

void sender::retry_or_fail(std::unique_ptr<producer_batch> batch, const producer_error& error,
                           clock::time_point now) {
  const bool in_time =
      now - batch->created() < std::chrono::milliseconds(config_.delivery_timeout_ms);
  if (error.retriable && !forced_ && batch->attempts < config_.retries && in_time) {
    next_expiry_check_ = clock::time_point::min();  // older than the queued ones, maybe
    accumulator_.reenqueue(std::move(batch), now);
    return;
  }
  if (txn_) {
    txn_->batch_failed(error, batch->has_sequence());
  } else if (config_.enable_idempotence && batch->has_sequence()) {
    request_epoch_bump(batch->tp());
  }
  if (error.retriable && !forced_ && !in_time) {
    // Out of time rather than out of luck: say so, as Java's expiry does, naming the last error.
    const auto waited =
        std::chrono::duration_cast<std::chrono::milliseconds>(now - batch->created()).count();
    producer_error expired{producer_errc::delivery_timeout, error.kafka_error_code, false,
                           fmt::format("Expiring {} record(s) for {}-{}:{} ms has passed since "
                                       "batch creation (last error: {})",
                                       batch->record_count(), batch->tp().topic,
                                       batch->tp().partition, waited, error.message)};
    accumulator_.fail_batch(std::move(batch), expired);
    return;
  }
  accumulator_.fail_batch(std::move(batch), error);
}

}  // namespace tarn::client
