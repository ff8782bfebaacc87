// The transactional producer's coordinator requests (see txn_requests.h).
#include "client/txn_requests.h"

#include <fmt/format.h>

#include <map>

#include "client/blocking_client.h"
#include "client/cluster_client.h"
#include "protocol/error_codes.h"
#include "protocol/messages/add_offsets_to_txn_request.h"
#include "protocol/messages/add_offsets_to_txn_response.h"
#include "protocol/messages/add_partitions_to_txn_request.h"
#include "protocol/messages/add_partitions_to_txn_response.h"
#include "protocol/messages/end_txn_request.h"
#include "protocol/messages/end_txn_response.h"
#include "protocol/messages/init_producer_id_request.h"
#include "protocol/messages/init_producer_id_response.h"
#include "protocol/messages/txn_offset_commit_request.h"
#include "protocol/messages/txn_offset_commit_response.h"

namespace tarn::client {
namespace {

using protocol::error_code;
using clock_type = std::chrono::steady_clock;

// AddPartitionsToTxn v4+ is the brokers' batched form; clients send v3 at most (as Java does).
constexpr int16_t add_partitions_client_max_version = 3;
// Transactions v1: EndTxn v5 and TxnOffsetCommit v5 tell a Kafka 4.x broker the client runs
// transactions v2 (KIP-890 part 2), after which Kafka bumps the epoch at every EndTxn and the
// next AddPartitionsToTxn of the old epoch is PRODUCER_FENCED. Java sends them only when the
// broker finalized transaction.version 2; tarn's client stays at v1 (tarn serves only that).
constexpr int16_t end_txn_v1_max_version = 4;
constexpr int16_t txn_offset_commit_v1_max_version = 4;

std::string bootstrap_list(const std::vector<broker_address>& servers) {
  std::string out;
  for (const auto& s : servers) {
    if (!out.empty()) out += ',';
    out += s.host.find(':') != std::string::npos ? fmt::format("[{}]:{}", s.host, s.port)
                                                 : fmt::format("{}:{}", s.host, s.port);
  }
  return out;
}

// The version to send, or a transport-style error (the caller treats it as fatal below).
template <typename Request>
result<int16_t, std::string> version_on(const blocking_client& c,
                                        int16_t our_max = Request::max_version) {
  const int16_t v = c.version_for<Request>(our_max);
  if (v < 0) return fail(fmt::format("unsupported:{}", Request::kafka_name));
  return v;
}

}  // namespace

txn_requests::txn_requests(const producer_config& config, std::string transactional_id)
    : config_(config), transactional_id_(std::move(transactional_id)) {}

txn_requests::~txn_requests() = default;

result<void, txn_request_error> txn_requests::call(txn_api api, std::string_view api_name,
                                                   int8_t key_type, const std::string& key,
                                                   const attempt_fn& attempt) {
  const auto deadline = clock_type::now() + std::chrono::milliseconds(config_.max_block_ms);
  const auto backoff = std::chrono::milliseconds(config_.retry_backoff_ms);
  std::string last = "no attempt";
  auto timed_out = [&] {
    return fail(txn_request_error{
        txn_error_kind::none,
        producer_error{producer_errc::timed_out, 0, true,
                       fmt::format("Timeout expired after {} ms while awaiting {} (last: {})",
                                   config_.max_block_ms, api_name, last)}});
  };
  auto failed = [&](txn_error_kind kind, int16_t code, std::string message) {
    return fail(txn_request_error{
        kind, producer_error{producer_errc::broker_error, code, false, std::move(message)}});
  };
  while (true) {
    if (!cluster_) {
      auto connected = cluster_client::connect(
          bootstrap_list(config_.bootstrap_servers),
          config_.client_id.empty() ? "tarn-producer" : config_.client_id,
          std::chrono::milliseconds(config_.request_timeout_ms), config_.security);
      if (!connected) {
        last = connected.error().message;
        if (!backoff_until(deadline, backoff)) return timed_out();
        continue;
      }
      cluster_ = std::move(*connected);
    }
    auto coordinator = cluster_->coordinator(key, deadline, key_type);
    if (!coordinator) {
      const int16_t code = coordinator.error().code;
      last = coordinator.error().message;
      if (code == -1 || is_retriable(code)) {
        if (code == -1) cluster_.reset();  // the bootstrap broker may be gone: start over
        if (!backoff_until(deadline, backoff)) return timed_out();
        continue;
      }
      return failed(txn_error_kind::fatal, code,
                    fmt::format("FindCoordinator for {} failed: {}", key, last));
    }
    auto code = attempt(**coordinator);
    if (!code) {
      if (code.error().starts_with("unsupported:")) {
        return failed(txn_error_kind::fatal, static_cast<int16_t>(error_code::unsupported_version),
                      fmt::format("The broker does not support {}", api_name));
      }
      last = code.error();
      cluster_->forget_coordinator(key, key_type);
      if (!backoff_until(deadline, backoff)) return timed_out();
      continue;
    }
    const auto kind = classify_txn_error(api, *code);
    switch (kind) {
      case txn_error_kind::none:
        return {};
      case txn_error_kind::find_coordinator:
        last = error_name(*code);
        cluster_->forget_coordinator(key, key_type);
        if (!backoff_until(deadline, backoff)) return timed_out();
        continue;
      case txn_error_kind::retry: {
        last = error_name(*code);
        // CONCURRENT_TRANSACTIONS clears as soon as the previous transaction's markers are
        // written: Java retries AddPartitionsToTxn after 20 ms rather than retry.backoff.ms.
        const auto wait = *code == static_cast<int16_t>(error_code::concurrent_transactions)
                              ? std::min(backoff, std::chrono::milliseconds(20))
                              : backoff;
        if (!backoff_until(deadline, wait)) return timed_out();
        continue;
      }
      case txn_error_kind::abortable:
      case txn_error_kind::fatal:
        return failed(kind, *code,
                      fmt::format("{} for transactional.id {} failed: {}", api_name,
                                  transactional_id_, error_name(*code)));
    }
  }
}

result<producer_identity, txn_request_error> txn_requests::init_producer_id(
    int32_t transaction_timeout_ms, producer_identity current) {
  std::lock_guard lock(mutex_);
  producer_identity out;
  auto done =
      call(txn_api::init_producer_id, "InitProducerId", cluster_client::transaction_key_type,
           transactional_id_, [&](blocking_client& c) -> result<int16_t, std::string> {
             auto v = version_on<protocol::init_producer_id_request>(c);
             if (!v) return fail(v.error());
             protocol::init_producer_id_request req;
             req.transactional_id = transactional_id_;
             req.transaction_timeout_ms = transaction_timeout_ms;
             if (current.valid() && *v >= 3) {
               req.producer_id = current.producer_id;
               req.producer_epoch = current.epoch;
             }
             std::vector<uint8_t> buffer;
             auto resp = client::call<protocol::init_producer_id_response>(c, req, *v, buffer);
             if (!resp) return fail(resp.error());
             if (resp->error_code == 0) out = {resp->producer_id, resp->producer_epoch};
             return resp->error_code;
           });
  if (!done) return fail(done.error());
  return out;
}

result<void, txn_request_error> txn_requests::add_partitions(
    producer_identity identity, const std::vector<topic_partition>& partitions) {
  std::lock_guard lock(mutex_);
  const auto topics = by_topic(partitions);
  return call(
      txn_api::add_partitions, "AddPartitionsToTxn", cluster_client::transaction_key_type,
      transactional_id_, [&](blocking_client& c) -> result<int16_t, std::string> {
        auto v = version_on<protocol::add_partitions_to_txn_request>(
            c, add_partitions_client_max_version);
        if (!v) return fail(v.error());
        protocol::add_partitions_to_txn_request req;
        req.v3_and_below_transactional_id = transactional_id_;
        req.v3_and_below_producer_id = identity.producer_id;
        req.v3_and_below_producer_epoch = identity.epoch;
        for (const auto& [topic, ps] : topics) {
          protocol::add_partitions_to_txn_request::add_partitions_to_txn_topic t;
          t.name = topic;
          t.partitions = ps;
          req.v3_and_below_topics.push_back(std::move(t));
        }
        std::vector<uint8_t> buffer;
        auto resp = client::call<protocol::add_partitions_to_txn_response>(c, req, *v, buffer);
        if (!resp) return fail(resp.error());
        // The first error that is not OPERATION_NOT_ATTEMPTED (which only says another
        // partition of the request failed) decides.
        int16_t first = 0;
        for (const auto& t : resp->results_by_topic_v3_and_below) {
          for (const auto& p : t.results_by_partition) {
            const int16_t e = p.partition_error_code;
            if (e == 0) continue;
            if (first == 0 || first == static_cast<int16_t>(error_code::operation_not_attempted)) {
              first = e;
            }
          }
        }
        return first;
      });
}

result<void, txn_request_error> txn_requests::add_offsets(producer_identity identity,
                                                          const std::string& group_id) {
  std::lock_guard lock(mutex_);
  return call(txn_api::add_offsets, "AddOffsetsToTxn", cluster_client::transaction_key_type,
              transactional_id_, [&](blocking_client& c) -> result<int16_t, std::string> {
                auto v = version_on<protocol::add_offsets_to_txn_request>(c);
                if (!v) return fail(v.error());
                protocol::add_offsets_to_txn_request req;
                req.transactional_id = transactional_id_;
                req.producer_id = identity.producer_id;
                req.producer_epoch = identity.epoch;
                req.group_id = group_id;
                std::vector<uint8_t> buffer;
                auto resp = client::call<protocol::add_offsets_to_txn_response>(c, req, *v, buffer);
                if (!resp) return fail(resp.error());
                return resp->error_code;
              });
}

result<void, txn_request_error> txn_requests::txn_offset_commit(
    producer_identity identity, const std::vector<partition_offset>& offsets,
    const consumer_group_metadata& group) {
  std::lock_guard lock(mutex_);
  std::map<std::string, std::vector<const partition_offset*>> by_name;
  for (const auto& o : offsets) by_name[o.topic].push_back(&o);
  return call(txn_api::txn_offset_commit, "TxnOffsetCommit", cluster_client::group_key_type,
              group.group_id, [&](blocking_client& c) -> result<int16_t, std::string> {
                auto v = version_on<protocol::txn_offset_commit_request>(
                    c, txn_offset_commit_v1_max_version);
                if (!v) return fail(v.error());
                protocol::txn_offset_commit_request req;
                req.transactional_id = transactional_id_;
                req.group_id = group.group_id;
                req.producer_id = identity.producer_id;
                req.producer_epoch = identity.epoch;
                req.generation_id_or_member_epoch = group.generation_id;
                req.member_id = group.member_id;
                if (group.group_instance_id) req.group_instance_id = *group.group_instance_id;
                for (const auto& [topic, list] : by_name) {
                  protocol::txn_offset_commit_request::txn_offset_commit_request_topic t;
                  t.name = topic;
                  for (const auto* o : list) {
                    protocol::txn_offset_commit_request::txn_offset_commit_request_partition p;
                    p.partition_index = o->partition;
                    p.committed_offset = o->offset;
                    p.committed_leader_epoch = o->leader_epoch.value_or(-1);
                    p.committed_metadata = o->metadata;
                    t.partitions.push_back(p);
                  }
                  req.topics.push_back(std::move(t));
                }
                std::vector<uint8_t> buffer;
                auto resp = client::call<protocol::txn_offset_commit_response>(c, req, *v, buffer);
                if (!resp) return fail(resp.error());
                // Every partition is sent again on a retriable error: committing an offset twice in
                // the same transaction leaves the same pending offset.
                for (const auto& t : resp->topics) {
                  for (const auto& p : t.partitions) {
                    if (p.error_code != 0) return p.error_code;
                  }
                }
                return int16_t{0};
              });
}

result<void, txn_request_error> txn_requests::end_txn(producer_identity identity, bool commit) {
  std::lock_guard lock(mutex_);
  return call(txn_api::end_txn, "EndTxn", cluster_client::transaction_key_type, transactional_id_,
              [&](blocking_client& c) -> result<int16_t, std::string> {
                auto v = version_on<protocol::end_txn_request>(c, end_txn_v1_max_version);
                if (!v) return fail(v.error());
                protocol::end_txn_request req;
                req.transactional_id = transactional_id_;
                req.producer_id = identity.producer_id;
                req.producer_epoch = identity.epoch;
                req.committed = commit;
                std::vector<uint8_t> buffer;
                auto resp = client::call<protocol::end_txn_response>(c, req, *v, buffer);
                if (!resp) return fail(resp.error());
                return resp->error_code;
              });
}

}  // namespace tarn::client
