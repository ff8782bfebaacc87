// The fetch session cache: Kafka's FetchManager.newContext, FullFetchContext /
// IncrementalFetchContext.updateAndGenerateResponseData and FetchSessionCacheShard's eviction.
#include "broker/fetch_session.h"

#include <algorithm>
#include <tuple>

#include "protocol/error_codes.h"

namespace tarn::broker {

namespace {
constexpr std::array<uint8_t, 16> zero_id{};

}  // namespace

bool fetch_partition_key::uses_id() const { return topic_id != zero_id; }

bool fetch_partition_key::operator<(const fetch_partition_key& o) const {
  // Kafka's CachedPartition equality: by topic ID when there is one, else by name.
  if (uses_id() || o.uses_id()) {
    return std::tie(topic_id, partition) < std::tie(o.topic_id, o.partition);
  }
  return std::tie(topic, partition) < std::tie(o.topic, o.partition);
}

fetch_session::cached_partition* fetch_session::find(const fetch_partition_key& key) {
  auto it = index_.find(key);
  return it == index_.end() ? nullptr : &*it->second;
}

void fetch_session::add(cached_partition p) {
  auto key = p.key;
  order_.push_back(std::move(p));
  index_[key] = std::prev(order_.end());
}

bool fetch_session::remove(const fetch_partition_key& key) {
  auto it = index_.find(key);
  if (it == index_.end()) return false;
  order_.erase(it->second);
  index_.erase(it);
  return true;
}

void fetch_session::move_to_end(const fetch_partition_key& key) {
  auto it = index_.find(key);
  if (it == index_.end()) return;
  order_.splice(order_.end(), order_, it->second);
}

fetch_context fetch_session_cache::new_context(int16_t version, int32_t session_id, int32_t epoch,
                                               std::vector<fetch_partition_entry> fetch_data,
                                               const std::vector<fetch_partition_key>& forgotten,
                                               int64_t now_ms) {
  fetch_context ctx;
  ctx.request_epoch = epoch;
  ctx.uses_topic_ids = version >= 13;
  std::lock_guard lock(mu_);
  const bool is_full = epoch == initial_epoch || epoch == final_epoch;
  if (is_full) {
    // Any session named in a full fetch is closed.
    if (session_id != invalid_session_id) sessions_.erase(session_id);
    ctx.type = epoch == final_epoch ? fetch_context::kind::sessionless : fetch_context::kind::full;
    ctx.partitions = std::move(fetch_data);
    return ctx;
  }
  auto it = sessions_.find(session_id);
  if (it == sessions_.end()) {
    ctx.type = fetch_context::kind::session_error;
    ctx.error_code = code(protocol::error_code::fetch_session_id_not_found);
    return ctx;
  }
  auto session = it->second;
  if (session->epoch != epoch) {
    ctx.type = fetch_context::kind::session_error;
    ctx.error_code = code(protocol::error_code::invalid_fetch_session_epoch);
    return ctx;
  }
  if (session->uses_topic_ids != (version >= 13)) {
    ctx.type = fetch_context::kind::session_error;
    ctx.error_code = code(protocol::error_code::fetch_session_topic_id_error);
    return ctx;
  }
  // FetchSession.update: add or alter the partitions sent, then drop the forgotten ones.
  for (auto& e : fetch_data) {
    if (auto* cached = session->find(e.key)) {
      cached->request = e.request;
      if (cached->key.topic.empty()) cached->key.topic = e.key.topic;
    } else {
      session->add({e.key, e.request, -1, -1});
    }
  }
  for (const auto& key : forgotten) session->remove(key);
  if (session->size() == 0) {
    // Nothing left: the session closes and this fetch is answered sessionless.
    sessions_.erase(it);
    ctx.type = fetch_context::kind::sessionless;
    ctx.partitions = std::move(fetch_data);
    return ctx;
  }
  touch(*session, now_ms);
  session->epoch = next_session_epoch(session->epoch);
  ctx.type = fetch_context::kind::incremental;
  ctx.session = session;
  for (const auto& p : session->partitions()) ctx.partitions.push_back({p.key, p.request});
  return ctx;
}

fetch_session_reply fetch_session_cache::finish(
    const fetch_context& ctx, const std::vector<fetch_partition_outcome>& outcomes,
    int64_t now_ms) {
  fetch_session_reply reply;
  switch (ctx.type) {
    case fetch_context::kind::session_error:
      reply.error_code = ctx.error_code;
      return reply;
    case fetch_context::kind::sessionless:
      for (size_t i = 0; i < ctx.partitions.size(); ++i) reply.include.push_back(i);
      return reply;
    case fetch_context::kind::full: {
      for (size_t i = 0; i < ctx.partitions.size(); ++i) reply.include.push_back(i);
      std::lock_guard lock(mu_);
      const size_t size = ctx.partitions.size();
      if (static_cast<int64_t>(sessions_.size()) < max_sessions_ || try_evict(size, now_ms)) {
        auto s = std::make_shared<fetch_session>();
        s->id = new_session_id();
        s->epoch = next_session_epoch(initial_epoch);
        s->uses_topic_ids = ctx.uses_topic_ids;
        s->creation_ms = now_ms;
        for (size_t i = 0; i < size; ++i) {
          if (s->find(ctx.partitions[i].key) != nullptr) continue;
          s->add({ctx.partitions[i].key, ctx.partitions[i].request, outcomes[i].high_watermark,
                  outcomes[i].log_start_offset});
        }
        touch(*s, now_ms);
        reply.session_id = s->id;
        sessions_[s->id] = std::move(s);
      }
      return reply;
    }
    case fetch_context::kind::incremental: {
      std::lock_guard lock(mu_);
      fetch_session& s = *ctx.session;
      reply.session_id = s.id;
      if (s.epoch != next_session_epoch(ctx.request_epoch)) {
        // Another request of this session came in while this one waited: a duplicate.
        reply.error_code = code(protocol::error_code::invalid_fetch_session_epoch);
        return reply;
      }
      for (size_t i = 0; i < ctx.partitions.size(); ++i) {
        auto* cached = s.find(ctx.partitions[i].key);
        if (cached == nullptr) continue;  // forgotten meanwhile
        const auto& o = outcomes[i];
        // CachedPartition.maybeUpdateResponseData.
        bool must_respond = o.records_bytes > 0;
        if (cached->high_watermark != o.high_watermark) {
          must_respond = true;
          cached->high_watermark = o.high_watermark;
        }
        if (cached->log_start_offset != o.log_start_offset) {
          must_respond = true;
          cached->log_start_offset = o.log_start_offset;
        }
        if (o.preferred_read_replica) must_respond = true;
        if (o.error_code != 0) {
          cached->high_watermark = -1;
          must_respond = true;
        }
        if (!must_respond) continue;
        reply.include.push_back(i);
        // Partitions that returned data go to the back, so the next fetch serves the others first.
        if (o.records_bytes > 0) s.move_to_end(ctx.partitions[i].key);
      }
      return reply;
    }
  }
  return reply;
}

bool fetch_session_cache::try_evict(size_t new_size, int64_t now_ms) {
  if (sessions_.empty()) return false;
  // A stale session (unused for eviction_ms) goes first: the least recently used.
  auto lru = std::min_element(sessions_.begin(), sessions_.end(), [](const auto& a, const auto& b) {
    return std::tie(a.second->last_used_ms, a.first) < std::tie(b.second->last_used_ms, b.first);
  });
  if (now_ms - lru->second->last_used_ms > eviction_ms_) {
    sessions_.erase(lru);
    return true;
  }
  // Otherwise the smallest session older than eviction_ms, if the new one is larger (consumer
  // sessions are never privileged).
  auto smallest = sessions_.end();
  for (auto it = sessions_.begin(); it != sessions_.end(); ++it) {
    if (now_ms - it->second->creation_ms <= eviction_ms_) continue;
    if (smallest == sessions_.end() ||
        std::make_pair(it->second->size(), it->first) <
            std::make_pair(smallest->second->size(), smallest->first)) {
      smallest = it;
    }
  }
  if (smallest == sessions_.end() || new_size <= smallest->second->size()) return false;
  sessions_.erase(smallest);
  return true;
}

int32_t fetch_session_cache::new_session_id() {
  for (;;) {
    // splitmix64: ids need only be unpredictable enough not to collide across clients.
    uint64_t z = (rng_state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    z ^= z >> 31;
    auto id = static_cast<int32_t>(z & 0x7fffffff);
    if (id != invalid_session_id && !sessions_.contains(id)) return id;
  }
}

void fetch_session_cache::touch(fetch_session& s, int64_t now_ms) { s.last_used_ms = now_ms; }

size_t fetch_session_cache::size() const {
  std::lock_guard lock(mu_);
  return sessions_.size();
}

std::optional<std::vector<fetch_partition_key>> fetch_session_cache::session_partitions(
    int32_t id) const {
  std::lock_guard lock(mu_);
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return std::nullopt;
  std::vector<fetch_partition_key> out;
  for (const auto& p : it->second->partitions()) out.push_back(p.key);
  return out;
}

}  // namespace tarn::broker
