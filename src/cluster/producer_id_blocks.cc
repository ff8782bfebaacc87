// Producer-id blocks from etcd by compare-and-swap (see producer_id_blocks.h).
#include "cluster/producer_id_blocks.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <charconv>
#include <cstdint>

namespace tarn::cluster {

namespace {

// Kafka's RPCProducerIdManager: the next block is asked for at 90% of the current one, and a
// failed request is retried no sooner than 50 ms later.
constexpr int64_t prefetch_at = producer_id_block_size * 9 / 10;
constexpr auto retry_backoff = std::chrono::milliseconds(50);

}  // namespace

std::string producer_ids_key(std::string_view prefix) {
  return fmt::format("{}producer-ids", prefix);
}

result<int64_t, etcd::etcd_error> allocate_producer_id_block(etcd::etcd_client& client,
                                                             const std::string& key) {
  while (true) {
    auto r = client.range(key);
    if (!r) return fail(r.error());
    int64_t first = 0;
    int64_t mod_revision = 0;  // an absent key's: the compare then means "still absent"
    if (!r->kvs.empty()) {
      const std::string& v = r->kvs[0].value;
      const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), first);
      if (ec != std::errc() || end != v.data() + v.size() || first < 0 ||
          first > INT64_MAX - producer_id_block_size) {
        return fail(etcd::etcd_error{etcd::etcd_error::internal,
                                     key + " is not the next producer-id block: " + v});
      }
      mod_revision = r->kvs[0].mod_revision;
    }
    etcd::txn_request t;
    t.compares.push_back({key,
                          etcd::compare::target_kind::mod_revision,
                          etcd::compare::result_kind::equal,
                          mod_revision,
                          {}});
    t.success.push_back(etcd::request_op::put(key, std::to_string(first + producer_id_block_size)));
    auto written = client.txn(t);
    if (!written) return fail(written.error());
    if (written->succeeded) return first;
    // Another broker took this block meanwhile: read the key again.
  }
}

producer_id_blocks::producer_id_blocks(std::unique_ptr<etcd::etcd_client> client, std::string key)
    : client_(std::move(client)), key_(std::move(key)), thread_([this] { run(); }) {}

producer_id_blocks::~producer_id_blocks() {
  {
    std::lock_guard guard(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void producer_id_blocks::request_locked() {
  if (wanted_ || prefetched_ || std::chrono::steady_clock::now() < retry_after_) return;
  wanted_ = true;
  cv_.notify_all();
}

result<int64_t, protocol::error_code> producer_id_blocks::next() {
  std::lock_guard guard(mu_);
  if (next_ == end_ && prefetched_) {
    first_ = next_ = *prefetched_;
    end_ = first_ + producer_id_block_size;
    prefetched_.reset();
  }
  if (next_ == end_) {
    request_locked();
    return fail(protocol::error_code::coordinator_load_in_progress);
  }
  if (next_ - first_ >= prefetch_at) request_locked();
  return next_++;
}

bool producer_id_blocks::wait_for_block(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  if (next_ < end_ || prefetched_) return true;
  request_locked();
  const uint64_t failures = failures_;
  cv_.wait_for(lock, timeout, [&] {
    return next_ < end_ || prefetched_.has_value() || failures_ != failures || stopping_;
  });
  return next_ < end_ || prefetched_.has_value();
}

void producer_id_blocks::run() {
  std::unique_lock lock(mu_);
  while (true) {
    cv_.wait(lock, [&] { return stopping_ || wanted_; });
    if (stopping_) return;
    lock.unlock();
    auto block = allocate_producer_id_block(*client_, key_);
    lock.lock();
    wanted_ = false;
    if (block) {
      prefetched_ = *block;
    } else {
      ++failures_;
      retry_after_ = std::chrono::steady_clock::now() + retry_backoff;
      spdlog::warn("cannot take a producer-id block from etcd ({}): {}", key_,
                   block.error().message);
    }
    cv_.notify_all();
  }
}

}  // namespace tarn::cluster
