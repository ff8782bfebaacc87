// fetch_replay's fetch sessions and answer keys (see fetch_replay_sessions.h).
#include "fetch_replay_sessions.h"

#include <algorithm>
#include <climits>
#include <cstring>

#include "protocol/error_codes.h"

namespace tarn::bench {

namespace {

using protocol::error_code;
using protocol::fetch_request;

session_partition from_request(const fetch_request::fetch_topic& topic,
                               const fetch_request::fetch_partition& p) {
  session_partition s;
  s.topic.assign(topic.topic);
  s.topic_id = topic.topic_id;
  s.partition = p.partition;
  s.current_leader_epoch = p.current_leader_epoch;
  s.fetch_offset = p.fetch_offset;
  s.last_fetched_epoch = p.last_fetched_epoch;
  s.log_start_offset = p.log_start_offset;
  s.partition_max_bytes = p.partition_max_bytes;
  return s;
}

// A request names topics by name (v12 and below) or id (v13 and above); the other field is
// empty in both, so comparing both is comparing the one in use.
bool same_topic(const session_partition& s, std::string_view topic, const protocol::uuid& id) {
  return s.topic == topic && s.topic_id == id;
}

std::vector<session_partition> all_partitions(const fetch_request& request) {
  std::vector<session_partition> out;
  for (const auto& t : request.topics)
    for (const auto& p : t.partitions) out.push_back(from_request(t, p));
  return out;
}

// Kafka's FetchMetadata.nextEpoch for a live session: 1, 2, ..., INT32_MAX, then 1 again.
int32_t next_epoch(int32_t epoch) { return epoch == INT32_MAX ? 1 : epoch + 1; }

template <typename T>
void append_int(std::string& key, T v) {
  char bytes[sizeof(T)];
  std::memcpy(bytes, &v, sizeof(T));
  key.append(bytes, sizeof(T));
}

}  // namespace

fetch_plan fetch_sessions::plan(const fetch_request& request, int16_t version) {
  fetch_plan out;
  std::lock_guard lock(mutex_);
  // Below v7 there are no sessions; epoch 0 and -1 are Kafka's full requests (0: create a
  // session; -1: none). A full request naming a session closes it first.
  const bool full = version < 7 || request.session_epoch == 0 || request.session_epoch == -1;
  if (full) {
    if (version >= 7 && request.session_id != 0) sessions_.erase(request.session_id);
    out.partitions = all_partitions(request);
    if (version < 7 || request.session_epoch == -1) {
      ++counts_.sessionless;
      return out;
    }
    int32_t id = next_id_;
    while (id == 0 || sessions_.count(id)) id = id == INT32_MAX ? 1 : id + 1;
    next_id_ = id == INT32_MAX ? 1 : id + 1;
    sessions_[id] = session{1, out.partitions};
    out.response_session_id = id;
    ++counts_.created;
    return out;
  }
  auto it = sessions_.find(request.session_id);
  if (it == sessions_.end()) {
    ++counts_.errors;
    out.error_code = static_cast<int16_t>(error_code::fetch_session_id_not_found);
    return out;
  }
  session& s = it->second;
  if (s.epoch != request.session_epoch) {  // Kafka keeps the session: the client starts over
    ++counts_.errors;
    out.error_code = static_cast<int16_t>(error_code::invalid_fetch_session_epoch);
    return out;
  }
  // Kafka's FetchSession.update: the partitions named are added or updated in place (a new one
  // goes last), then the forgotten ones leave.
  for (const auto& t : request.topics) {
    for (const auto& p : t.partitions) {
      auto known = std::find_if(s.partitions.begin(), s.partitions.end(), [&](const auto& sp) {
        return same_topic(sp, t.topic, t.topic_id) && sp.partition == p.partition;
      });
      if (known == s.partitions.end())
        s.partitions.push_back(from_request(t, p));
      else
        *known = from_request(t, p);
    }
  }
  for (const auto& f : request.forgotten_topics_data) {
    for (int32_t partition : f.partitions) {
      std::erase_if(s.partitions, [&](const auto& sp) {
        return same_topic(sp, f.topic, f.topic_id) && sp.partition == partition;
      });
    }
  }
  out.partitions = s.partitions;
  if (s.partitions.empty()) {  // Kafka closes an emptied session and answers without one
    sessions_.erase(it);
    ++counts_.sessionless;
    return out;
  }
  s.epoch = next_epoch(s.epoch);
  out.response_session_id = request.session_id;
  ++counts_.incremental;
  return out;
}

fetch_sessions::counts fetch_sessions::stats() const {
  std::lock_guard lock(mutex_);
  return counts_;
}

fetch_request upstream_request(const fetch_request& request, const fetch_plan& plan) {
  fetch_request up;
  up.replica_id = -1;
  up.max_wait_ms = request.max_wait_ms;
  up.min_bytes = request.min_bytes;
  up.max_bytes = request.max_bytes;
  up.isolation_level = request.isolation_level;
  up.session_id = 0;
  up.session_epoch = -1;
  up.rack_id = request.rack_id;
  for (const auto& p : plan.partitions) {
    if (up.topics.empty() || !same_topic(p, up.topics.back().topic, up.topics.back().topic_id)) {
      fetch_request::fetch_topic t;
      t.topic = p.topic;
      t.topic_id = p.topic_id;
      up.topics.push_back(std::move(t));
    }
    fetch_request::fetch_partition fp;
    fp.partition = p.partition;
    fp.current_leader_epoch = p.current_leader_epoch;
    fp.fetch_offset = p.fetch_offset;
    fp.last_fetched_epoch = p.last_fetched_epoch;
    fp.log_start_offset = p.log_start_offset;
    fp.partition_max_bytes = p.partition_max_bytes;
    up.topics.back().partitions.push_back(fp);
  }
  return up;
}

std::string answer_key(const fetch_request& request, const fetch_plan& plan, int16_t version) {
  std::string key;
  key.reserve(16 + plan.partitions.size() * 40);
  append_int(key, version);
  append_int(key, request.isolation_level);
  append_int(key, request.max_bytes);
  for (const auto& p : plan.partitions) {
    append_int(key, static_cast<uint32_t>(p.topic.size()));
    key.append(p.topic);
    key.append(reinterpret_cast<const char*>(p.topic_id.bytes.data()), p.topic_id.bytes.size());
    append_int(key, p.partition);
    append_int(key, p.fetch_offset);
    append_int(key, p.partition_max_bytes);
  }
  return key;
}

}  // namespace tarn::bench
