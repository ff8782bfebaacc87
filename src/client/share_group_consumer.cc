// The share-group member (share_group_consumer.h): configuration, the heartbeat thread, share
// sessions, ShareFetch and ShareAcknowledge.
#include "client/share_group_consumer.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <type_traits>

#include "client/batch_decode.h"
#include "protocol/error_codes.h"
#include "protocol/messages/share_acknowledge_request.h"
#include "protocol/messages/share_acknowledge_response.h"
#include "protocol/messages/share_fetch_request.h"
#include "protocol/messages/share_fetch_response.h"
#include "protocol/messages/share_group_heartbeat_request.h"
#include "protocol/messages/share_group_heartbeat_response.h"
#include "record/record_batch.h"

namespace tarn::client {

namespace {

using protocol::error_code;
using clock_type = std::chrono::steady_clock;

// A session epoch after `e`: 1, 2, ..., INT32_MAX, then 1 again (0 opens, -1 closes).
int32_t next_epoch(int32_t e) { return e == INT32_MAX ? 1 : e + 1; }

bool is_session_error(int16_t e) {
  return e == code(error_code::share_session_not_found) ||
         e == code(error_code::invalid_share_session_epoch);
}

// Partition errors after which Metadata is asked again (the leader moved, the topic is new).
bool is_leader_error(int16_t e) {
  return e == code(error_code::not_leader_or_follower) ||
         e == code(error_code::unknown_topic_or_partition) ||
         e == code(error_code::fenced_leader_epoch) || e == code(error_code::unknown_topic_id) ||
         e == code(error_code::leader_not_available);
}

}  // namespace

result<void, std::string> share_consumer_config::set(const std::string& key,
                                                     const std::string& value) {
  auto number = [&](auto& out) -> result<void, std::string> {
    int64_t v = 0;
    auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (ec != std::errc() || end != value.data() + value.size()) {
      return fail(fmt::format("Invalid value {} for configuration {}: Not a number of type INT",
                              value, key));
    }
    using T = std::decay_t<decltype(out)>;
    if constexpr (std::is_same_v<T, std::chrono::milliseconds>) {
      out = std::chrono::milliseconds(v);
    } else {
      out = static_cast<int32_t>(std::clamp<int64_t>(v, INT32_MIN, INT32_MAX));
    }
    return {};
  };
  if (auto s = security.set(key, value)) {
    if (!*s) return fail(s->error());
  } else if (key == "bootstrap.servers") {
    bootstrap_servers = value;
  } else if (key == "group.id") {
    group_id = value;
  } else if (key == "client.id") {
    client_id = value;
  } else if (key == "share.acknowledgement.mode") {
    if (value != "implicit" && value != "explicit") {
      return fail(fmt::format(
          "Invalid value {} for configuration share.acknowledgement.mode: Invalid value `{}` for "
          "configuration share.acknowledgement.mode. The value must either be 'implicit' or "
          "'explicit'.",
          value, value));
    }
    explicit_acknowledgement = value == "explicit";
  } else if (key == "request.timeout.ms") {
    return number(request_timeout);
  } else if (key == "retry.backoff.ms") {
    return number(retry_backoff);
  } else if (key == "check.crcs") {
    if (value != "true" && value != "false") {
      return fail(fmt::format(
          "Invalid value {} for configuration {}: Expected value to be either true or false", value,
          key));
    }
    check_crcs = value == "true";
  } else if (key == "fetch.min.bytes") {
    return number(fetch_min_bytes);
  } else if (key == "fetch.max.bytes") {
    return number(fetch_max_bytes);
  } else if (key == "fetch.max.wait.ms") {
    return number(fetch_max_wait_ms);
  } else if (key == "max.partition.fetch.bytes") {
    return number(max_partition_fetch_bytes);
  } else if (key == "max.poll.records") {
    auto r = number(max_poll_records);
    if (r && max_poll_records < 1) return fail(std::string("max.poll.records must be at least 1"));
    return r;
  }
  return {};
}

share_group_consumer::share_group_consumer(share_consumer_config config,
                                           std::unique_ptr<cluster_client> cluster)
    : config_(std::move(config)), cluster_(std::move(cluster)) {
  heartbeat_thread_ = std::thread([this] { heartbeat_loop(); });
}

result<std::unique_ptr<share_group_consumer>, client_error> share_group_consumer::create(
    share_consumer_config config) {
  auto cluster = cluster_client::connect(config.bootstrap_servers, config.client_id,
                                         config.request_timeout, config.security);
  if (!cluster) return fail(cluster.error());
  return std::unique_ptr<share_group_consumer>(
      new share_group_consumer(std::move(config), std::move(*cluster)));
}

share_group_consumer::~share_group_consumer() {
  if (!closed_) (void)close();
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_heartbeat_.notify_all();
  if (heartbeat_thread_.joinable()) heartbeat_thread_.join();
}

void share_group_consumer::subscribe(std::vector<std::string> topics) {
  std::sort(topics.begin(), topics.end());
  topics.erase(std::unique(topics.begin(), topics.end()), topics.end());
  {
    std::lock_guard lock(mutex_);
    if (topics == topics_) return;
    topics_ = std::move(topics);
    topics_changed_ = true;
  }
  leaders_stale_ = true;
  wake_heartbeat_.notify_all();
}

std::vector<std::string> share_group_consumer::subscription() const {
  std::lock_guard lock(mutex_);
  return topics_;
}

// ---------------------------------------------------------------------------------------------
// Membership (the heartbeat thread)

void share_group_consumer::heartbeat_loop() {
  std::unique_ptr<cluster_client> cluster;  // this thread's own connections
  auto next_due = clock_type::now();
  int32_t interval_ms = 5000;
  int leave_attempts = 0;
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    wake_heartbeat_.wait_until(lock, next_due, [&] {
      return stopping_ || leaving_ || (topics_changed_ && !fatal_) ||
             (clock_type::now() >= next_due && !fatal_ && (!topics_.empty() || member_epoch_ > 0));
    });
    if (stopping_) break;
    if (leaving_ && member_epoch_ == 0) break;  // never joined: nothing to leave
    if (fatal_ && !leaving_) {
      next_due = clock_type::now() + std::chrono::hours(1);
      continue;
    }
    if (!leaving_ && topics_.empty() && member_epoch_ == 0) {
      next_due = clock_type::now() + std::chrono::milliseconds(interval_ms);
      topics_changed_ = false;
      continue;
    }
    const bool leaving = leaving_;
    const int32_t epoch = leaving ? -1 : member_epoch_;
    std::optional<std::vector<std::string>> names;
    if (!leaving && (member_epoch_ == 0 || topics_changed_)) names = topics_;
    topics_changed_ = false;
    lock.unlock();

    std::optional<std::string> failure;  // no answer, or the coordinator moved
    int16_t err = 0;
    std::optional<std::string> err_message;
    int32_t answered_epoch = 0;
    std::optional<std::map<uuid, std::set<int32_t>>> assignment;
    if (!cluster) {
      auto c = cluster_client::connect(config_.bootstrap_servers, config_.client_id,
                                       config_.request_timeout, config_.security);
      if (c) {
        cluster = std::move(*c);
      } else {
        failure = c.error().message;
      }
    }
    if (cluster) {
      auto c = cluster->coordinator(config_.group_id, clock_type::now() + config_.request_timeout);
      if (!c) {
        failure = c.error().message;
        if (c.error().code != -1 && !is_retriable(c.error().code)) {
          err = c.error().code;  // e.g. GROUP_AUTHORIZATION_FAILED
          err_message = c.error().message;
          failure.reset();
        }
      } else {
        protocol::share_group_heartbeat_request req;
        req.group_id = config_.group_id;
        req.member_id = member_id_;
        req.member_epoch = epoch;
        if (names) req.subscribed_topic_names.emplace(names->begin(), names->end());
        std::vector<uint8_t> buffer;
        auto v = version_or_fail<protocol::share_group_heartbeat_request>(**c);
        if (!v) {
          err = v.error().code;
          err_message = v.error().message;
        } else if (auto resp =
                       call<protocol::share_group_heartbeat_response>(**c, req, *v, buffer)) {
          err = resp->error_code;
          if (resp->error_message) err_message = std::string(*resp->error_message);
          answered_epoch = resp->member_epoch;
          if (resp->heartbeat_interval_ms > 0) interval_ms = resp->heartbeat_interval_ms;
          if (resp->assignment) {
            assignment.emplace();
            for (const auto& t : resp->assignment->topic_partitions) {
              auto& ps = (*assignment)[uuid_from_wire(t.topic_id)];
              ps.insert(t.partitions.begin(), t.partitions.end());
            }
          }
        } else {
          failure = resp.error();
        }
      }
      if (failure || is_coordinator_error(err)) {
        cluster->forget_coordinator(config_.group_id);
        if (failure) cluster.reset();  // reconnect from the bootstrap list
      }
    }

    lock.lock();
    if (leaving) {
      // One answer (or a few tries) is enough: the session timeout removes a silent member.
      if ((!failure && !is_coordinator_error(err)) || ++leave_attempts >= 3) break;
      next_due = clock_type::now() + config_.retry_backoff;
      continue;
    }
    if (failure || is_coordinator_error(err) || (err != 0 && is_retriable(err))) {
      // Names are sent again with the next try (it may be the one that joins).
      if (names && member_epoch_ != 0) topics_changed_ = true;
      next_due = clock_type::now() + config_.retry_backoff;
      continue;
    }
    if (err == code(error_code::fenced_member_epoch) ||
        err == code(error_code::unknown_member_id)) {
      // Out of the group: what it held is gone; join again at once (Java keeps its member id).
      member_epoch_ = 0;
      assignment_.clear();
      ++assignment_version_;
      assignment_changed_.notify_all();
      next_due = clock_type::now();
      continue;
    }
    if (err != 0) {
      fatal_ = kafka_error(
          err, err_message ? std::optional<std::string_view>(*err_message) : std::nullopt);
      assignment_changed_.notify_all();
      continue;
    }
    member_epoch_ = answered_epoch;
    if (assignment && *assignment != assignment_) {
      assignment_ = std::move(*assignment);
      ++assignment_version_;
      assignment_changed_.notify_all();
    }
    next_due = clock_type::now() + std::chrono::milliseconds(interval_ms);
  }
  left_ = true;
  assignment_changed_.notify_all();
}

// ---------------------------------------------------------------------------------------------
// Poll thread: assignment and leaders

result<void, client_error> share_group_consumer::sync_assignment() {
  std::map<uuid, std::set<int32_t>> assignment;
  std::vector<std::string> topics;
  {
    std::lock_guard lock(mutex_);
    if (fatal_) return fail(*fatal_);
    // The common case, every poll: nothing changed, nothing to look up.
    if (assignment_version_ == assignment_seen_ && !leaders_stale_ && !unresolved_) return {};
    assignment_seen_ = assignment_version_;
    assignment = assignment_;
    topics = topics_;
  }
  bool unknown = false;
  for (const auto& [id, ps] : assignment) unknown = unknown || !topic_names_.count(id);
  if ((unknown || leaders_stale_) && !topics.empty()) {
    auto md = cluster_->metadata(topics);
    if (!md) return {};  // the broker is away: the next poll asks again
    leaders_.clear();
    for (const auto& [name, layout] : *md) {
      if (layout.error_code != 0) continue;
      topic_names_[layout.topic_id] = name;
      topic_ids_[name] = layout.topic_id;
      for (const auto& p : layout.partitions) {
        if (p.leader >= 0) leaders_[{name, p.partition}] = p.leader;
      }
    }
    leaders_stale_ = false;
  }
  assigned_.clear();
  unresolved_ = false;
  for (const auto& [id, ps] : assignment) {
    auto name = topic_names_.find(id);
    if (name == topic_names_.end()) {
      unresolved_ = true;  // a topic Metadata does not know yet: asked again next time
      continue;
    }
    for (int32_t p : ps) assigned_.push_back({name->second, p});
  }
  std::sort(assigned_.begin(), assigned_.end());
  return {};
}

std::map<int32_t, std::vector<topic_partition>> share_group_consumer::pending_by_leader() const {
  std::map<int32_t, std::vector<topic_partition>> out;
  for (const auto& [tp, acks] : acks_.pending()) {
    if (acks.empty()) continue;
    auto l = leaders_.find(tp);
    out[l == leaders_.end() ? -1 : l->second].push_back(tp);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Poll thread: fetching

result<void, client_error> share_group_consumer::settle_delivered() {
  if (!config_.explicit_acknowledgement) {
    acks_.acknowledge_all(ack_accept);
  } else if (const size_t n = acks_.unacknowledged(); n > 0) {
    return fail(client_error{
        -1, fmt::format("All records must be acknowledged in explicit acknowledgement mode: {} "
                        "record(s) of the last poll are not.",
                        n)});
  }
  acks_.collect();
  return {};
}

result<void, client_error> share_group_consumer::poll_until_buffered(
    std::chrono::milliseconds timeout) {
  if (closed_) return fail(client_error{-1, "the share consumer is closed"});
  if (auto r = settle_delivered(); !r) return r;
  const auto deadline = clock_type::now() + timeout;
  while (true) {
    if (woken_.exchange(false, std::memory_order_relaxed)) break;
    if (auto r = sync_assignment(); !r) {
      run_callbacks();
      return r;
    }
    if (!buffered_.empty()) break;
    const auto now = clock_type::now();
    if (now >= deadline) break;
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    wait = std::clamp(wait, std::chrono::milliseconds(0),
                      std::chrono::milliseconds(config_.fetch_max_wait_ms));
    if (auto r = fetch_once(wait); !r) {
      run_callbacks();
      return r;
    }
  }
  run_callbacks();
  return {};
}

result<void, client_error> share_group_consumer::fetch_once(std::chrono::milliseconds max_wait) {
  std::map<int32_t, std::set<topic_partition>> wanted;  // by leader
  for (const auto& tp : assigned_) {
    if (auto l = leaders_.find(tp); l != leaders_.end()) {
      wanted[l->second].insert(tp);
    } else {
      leaders_stale_ = true;
    }
  }
  // Sessions holding partitions no longer assigned are asked too (they forget them), and so
  // are leaders with acknowledgements to send.
  for (const auto& [leader, s] : sessions_) {
    if (!s.partitions.empty()) wanted[leader];
  }
  for (const auto& [leader, tps] : pending_by_leader()) {
    if (leader >= 0) wanted[leader];
  }
  if (wanted.empty()) {
    // Not assigned anything yet: wait for the heartbeat thread's news.
    std::unique_lock lock(mutex_);
    assignment_changed_.wait_for(lock, std::min(max_wait, std::chrono::milliseconds(100)), [&] {
      return assignment_version_ != assignment_seen_ || fatal_.has_value();
    });
    return {};
  }
  bool errors = false;
  for (auto& [leader, tps] : wanted) {
    auto c = cluster_->node(leader);
    if (!c) {
      leaders_stale_ = errors = true;
      continue;
    }
    auto v = version_or_fail<protocol::share_fetch_request>(**c);
    if (!v) return fail(v.error());
    share_session& session = sessions_[leader];
    protocol::share_fetch_request req;
    req.group_id = config_.group_id;
    req.member_id = member_id_;
    req.share_session_epoch = session.epoch;
    req.max_wait_ms = static_cast<int32_t>(max_wait.count());
    req.min_bytes = config_.fetch_min_bytes;
    req.max_bytes = config_.fetch_max_bytes;
    req.max_records = config_.max_poll_records;
    req.batch_size = config_.max_poll_records;
    // What the request names: on opening, every wanted partition; then the new ones and those
    // with acknowledgements (an opening request may not carry any).
    std::map<topic_partition, std::vector<std::pair<int64_t, int8_t>>> sending;
    std::set<topic_partition> named;
    if (session.epoch == 0) {
      session.partitions.clear();
      named = tps;
    } else {
      for (const auto& tp : tps) {
        if (!session.partitions.count(tp)) named.insert(tp);
      }
      for (const auto& [tp, acks] : acks_.pending()) {
        auto l = leaders_.find(tp);
        if (l == leaders_.end() || l->second != leader || acks.empty()) continue;
        if (!tps.count(tp) && !session.partitions.count(tp)) continue;  // not this session's
        named.insert(tp);
      }
      for (const auto& tp : named) {
        if (auto a = acks_.take(tp); !a.empty()) sending.emplace(tp, std::move(a));
      }
    }
    std::vector<topic_partition> forgotten;
    for (const auto& tp : session.partitions) {
      if (!tps.count(tp) && !sending.count(tp)) forgotten.push_back(tp);
    }
    bool renew = false;
    for (const auto& tp : named) {
      auto id = topic_ids_.find(tp.topic);
      if (id == topic_ids_.end()) continue;
      const auto wire_id = uuid_to_wire(id->second);
      if (req.topics.empty() || !(req.topics.back().topic_id == wire_id)) {
        req.topics.emplace_back();
        req.topics.back().topic_id = wire_id;
      }
      protocol::share_fetch_request::fetch_partition fp;
      fp.partition_index = tp.partition;
      if (auto s = sending.find(tp); s != sending.end()) {
        renew = renew || share_acknowledgements::has_renew(s->second);
        for (auto& b : build_ack_batches(s->second)) {
          fp.acknowledgement_batches.push_back({b.first_offset, b.last_offset, std::move(b.types)});
        }
      }
      req.topics.back().partitions.push_back(std::move(fp));
    }
    for (const auto& tp : forgotten) {
      auto id = topic_ids_.find(tp.topic);
      if (id == topic_ids_.end()) continue;
      const auto wire_id = uuid_to_wire(id->second);
      if (req.forgotten_topics_data.empty() ||
          !(req.forgotten_topics_data.back().topic_id == wire_id)) {
        req.forgotten_topics_data.emplace_back();
        req.forgotten_topics_data.back().topic_id = wire_id;
      }
      req.forgotten_topics_data.back().partitions.push_back(tp.partition);
    }
    req.is_renew_ack = renew;
    auto fail_sent = [&](const client_error& e) {
      for (auto& [tp, acks] : sending) {
        ack_outcome o{tp, {}, e};
        for (const auto& [offset, type] : acks) {
          if (type != ack_gap) o.offsets.push_back(offset);
        }
        outcomes_.push_back(std::move(o));
      }
    };
    if (renew && *v < 2) {
      fail_sent(client_error{code(error_code::unsupported_version),
                             "the broker's ShareFetch has no RENEW (version 2)"});
      continue;
    }

    std::shared_ptr<fetch_arena> arena = arenas_->take();
    auto resp = call<protocol::share_fetch_response>(**c, req, *v, arena->response,
                                                     config_.request_timeout + max_wait);
    if (!resp) {
      fail_sent(transport_error(resp.error()));
      cluster_->drop(leader);
      session = {};  // a new session on the next connection (it replaces the broker's)
      leaders_stale_ = errors = true;
      continue;
    }
    if (resp->error_code != 0) {
      const client_error e = kafka_error(resp->error_code, resp->error_message);
      fail_sent(e);
      if (is_session_error(resp->error_code)) {
        session = {};
        errors = true;
        continue;
      }
      if (is_retriable(resp->error_code)) {
        leaders_stale_ = errors = true;
        continue;
      }
      return fail(e);
    }
    session.epoch = next_epoch(session.epoch);
    for (const auto& tp : named) session.partitions.insert(tp);
    for (const auto& tp : forgotten) session.partitions.erase(tp);
    if (resp->acquisition_lock_timeout_ms > 0) lock_timeout_ms_ = resp->acquisition_lock_timeout_ms;

    bool borrowed = false;  // buffered_ holds the arena once a record borrows it
    for (const auto& t : resp->responses) {
      auto name = topic_names_.find(uuid_from_wire(t.topic_id));
      if (name == topic_names_.end()) continue;
      for (const auto& pd : t.partitions) {
        const topic_partition tp{name->second, pd.partition_index};
        if (auto s = sending.find(tp); s != sending.end()) {
          ack_outcome o{tp, {}, std::nullopt};
          for (const auto& [offset, type] : s->second) {
            if (type != ack_gap) o.offsets.push_back(offset);
          }
          if (pd.acknowledge_error_code != 0) {
            o.error = kafka_error(pd.acknowledge_error_code, pd.acknowledge_error_message);
          }
          outcomes_.push_back(std::move(o));
          sending.erase(s);
        }
        if (pd.error_code != 0) {
          if (is_leader_error(pd.error_code) || is_retriable(pd.error_code)) {
            leaders_stale_ = errors = true;
            continue;
          }
          return fail(kafka_error(pd.error_code, pd.error_message));
        }
        if (pd.acquired_records.empty()) continue;
        auto ranges = pd.acquired_records;
        std::sort(ranges.begin(), ranges.end(),
                  [](const auto& a, const auto& b) { return a.first_offset < b.first_offset; });
        size_t r = 0;
        std::vector<int64_t> delivered;  // ascending
        int64_t covered_to = -1;         // the last offset of the batches answered
        record::batch_reader batches(pd.records);
        record::record_batch_view batch;
        while (batches.next(batch)) {
          covered_to = std::max(covered_to, batch.last_offset());
          if (batch.is_control()) continue;
          auto decoded = decode_batch(batch, *arena, config_.check_crcs, name->second, tp.partition,
                                      [&](int64_t offset) -> consumer_record_view* {
                                        while (r < ranges.size() && ranges[r].last_offset < offset)
                                          ++r;
                                        if (r == ranges.size() || ranges[r].first_offset > offset)
                                          return nullptr;
                                        if (!delivered.empty() && delivered.back() >= offset)
                                          return nullptr;
                                        delivered.push_back(offset);
                                        if (!borrowed) {
                                          buffered_.borrow(arena);
                                          borrowed = true;
                                        }
                                        consumer_record_view& out = buffered_.emplace_back();
                                        out.delivery_count = ranges[r].delivery_count;
                                        return &out;
                                      });
          if (!decoded) return fail(decoded.error());
        }
        // Acquired offsets without a record: GAP inside the batches answered, released past
        // them (they were not sent; the broker hands them out again).
        size_t d = 0;
        for (const auto& range : ranges) {
          for (int64_t o = range.first_offset; o <= range.last_offset; ++o) {
            while (d < delivered.size() && delivered[d] < o) ++d;
            if (d < delivered.size() && delivered[d] == o) continue;
            acks_.add(tp, o, o <= covered_to ? ack_gap : ack_release);
          }
        }
      }
    }
    // Acknowledged partitions the answer left out: the broker took them without complaint.
    for (auto& [tp, acks] : sending) {
      ack_outcome o{tp, {}, std::nullopt};
      for (const auto& [offset, type] : acks) {
        if (type != ack_gap) o.offsets.push_back(offset);
      }
      outcomes_.push_back(std::move(o));
    }
  }
  if (errors && buffered_.empty()) {
    std::this_thread::sleep_for(std::min(max_wait, config_.retry_backoff));
  }
  return {};
}

// ---------------------------------------------------------------------------------------------
// Poll thread: the calls

result<void, client_error> share_group_consumer::poll(consumer_records& out,
                                                      std::chrono::milliseconds timeout) {
  out.clear();  // first, so the fetch can reuse the arenas it held
  if (auto r = poll_until_buffered(timeout); !r) return r;
  if (buffered_.empty()) return {};
  buffered_.pop_into(out, static_cast<size_t>(config_.max_poll_records));
  topic_partition tp;
  for (const auto& r : out) {
    if (r.partition != tp.partition || r.topic != tp.topic)
      tp = {std::string(r.topic), r.partition};
    acks_.delivered(tp, r.offset);
  }
  return {};
}

result<void, client_error> share_group_consumer::poll(std::vector<consumer_record>& out,
                                                      std::chrono::milliseconds timeout) {
  buffered_.recycle(out);
  if (auto r = poll_until_buffered(timeout); !r) return r;
  if (buffered_.empty()) return {};
  buffered_.pop_into(out, static_cast<size_t>(config_.max_poll_records));
  topic_partition tp;
  for (const auto& r : out) {
    if (r.partition != tp.partition || r.topic != tp.topic) tp = {r.topic, r.partition};
    acks_.delivered(tp, r.offset);
  }
  return {};
}

result<void, client_error> share_group_consumer::acknowledge(const topic_partition& tp,
                                                             int64_t offset, int8_t type) {
  if (!config_.explicit_acknowledgement) {
    return fail(client_error{-1,
                             "Implicit acknowledgement of delivery is being used: acknowledge() "
                             "needs share.acknowledgement.mode=explicit."});
  }
  if (type < ack_accept || type > ack_renew) {
    return fail(client_error{-1, fmt::format("{} is not an acknowledge type", type)});
  }
  if (!acks_.acknowledge(tp, offset, type)) {
    return fail(client_error{-1, fmt::format("The record {}-{}@{} cannot be acknowledged: poll() "
                                             "did not return it, or it was acknowledged already.",
                                             tp.topic, tp.partition, offset)});
  }
  return {};
}

std::map<topic_partition, std::optional<client_error>> share_group_consumer::send_acknowledge(
    int32_t leader, const std::vector<topic_partition>& tps, bool close_session) {
  std::map<topic_partition, std::optional<client_error>> out;
  std::map<topic_partition, std::vector<std::pair<int64_t, int8_t>>> sending;
  for (const auto& tp : tps) {
    if (auto a = acks_.take(tp); !a.empty()) sending.emplace(tp, std::move(a));
  }
  auto finish = [&](const std::optional<client_error>& all) {
    for (auto& [tp, acks] : sending) {
      ack_outcome o{tp, {}, all};
      for (const auto& [offset, type] : acks) {
        if (type != ack_gap) o.offsets.push_back(offset);
      }
      out[tp] = all;
      outcomes_.push_back(std::move(o));
    }
    return out;
  };
  auto s = sessions_.find(leader);
  if (s == sessions_.end() || s->second.epoch == 0) {
    // No session to acknowledge in: the records' locks run out and they are delivered again.
    if (sending.empty()) return out;
    return finish(client_error{code(error_code::share_session_not_found),
                               "no share session with the partition's leader"});
  }
  auto c = cluster_->node(leader);
  if (!c) return finish(c.error());
  auto v = version_or_fail<protocol::share_acknowledge_request>(**c);
  if (!v) return finish(v.error());
  protocol::share_acknowledge_request req;
  req.group_id = config_.group_id;
  req.member_id = member_id_;
  req.share_session_epoch = close_session ? -1 : s->second.epoch;
  for (const auto& [tp, acks] : sending) {
    auto id = topic_ids_.find(tp.topic);
    if (id == topic_ids_.end()) continue;
    const auto wire_id = uuid_to_wire(id->second);
    if (req.topics.empty() || !(req.topics.back().topic_id == wire_id)) {
      req.topics.emplace_back();
      req.topics.back().topic_id = wire_id;
    }
    protocol::share_acknowledge_request::acknowledge_partition ap;
    ap.partition_index = tp.partition;
    req.is_renew_ack = req.is_renew_ack || share_acknowledgements::has_renew(acks);
    for (auto& b : build_ack_batches(acks)) {
      ap.acknowledgement_batches.push_back({b.first_offset, b.last_offset, std::move(b.types)});
    }
    req.topics.back().partitions.push_back(std::move(ap));
  }
  if (req.is_renew_ack && *v < 2) {
    return finish(client_error{code(error_code::unsupported_version),
                               "the broker's ShareAcknowledge has no RENEW (version 2)"});
  }
  std::vector<uint8_t> buffer;
  auto resp = call<protocol::share_acknowledge_response>(**c, req, *v, buffer);
  if (close_session) {
    sessions_.erase(s);
  } else {
    s->second.epoch = next_epoch(s->second.epoch);
  }
  if (!resp) {
    cluster_->drop(leader);
    if (!close_session) sessions_.erase(leader);
    return finish(transport_error(resp.error()));
  }
  if (resp->error_code != 0) {
    if (is_session_error(resp->error_code) && !close_session) sessions_.erase(leader);
    return finish(kafka_error(resp->error_code, resp->error_message));
  }
  for (const auto& t : resp->responses) {
    auto name = topic_names_.find(uuid_from_wire(t.topic_id));
    if (name == topic_names_.end()) continue;
    for (const auto& p : t.partitions) {
      auto it = sending.find({name->second, p.partition_index});
      if (it == sending.end()) continue;
      std::optional<client_error> e;
      if (p.error_code != 0) e = kafka_error(p.error_code, p.error_message);
      ack_outcome o{it->first, {}, e};
      for (const auto& [offset, type] : it->second) {
        if (type != ack_gap) o.offsets.push_back(offset);
      }
      out[it->first] = e;
      outcomes_.push_back(std::move(o));
      sending.erase(it);
    }
  }
  return finish(std::nullopt);  // partitions the answer left out
}

void share_group_consumer::commit_async() {
  if (closed_) return;
  if (!config_.explicit_acknowledgement) acks_.acknowledge_all(ack_accept);
  acks_.collect();  // pending: the next request to each leader carries them
}

result<std::map<topic_partition, std::optional<client_error>>, client_error>
share_group_consumer::commit_sync() {
  if (closed_) return fail(client_error{-1, "the share consumer is closed"});
  if (!config_.explicit_acknowledgement) acks_.acknowledge_all(ack_accept);
  acks_.collect();
  std::map<topic_partition, std::optional<client_error>> out;
  for (const auto& [leader, tps] : pending_by_leader()) {
    for (auto& [tp, e] : send_acknowledge(leader, tps, false)) out[tp] = std::move(e);
  }
  run_callbacks();
  return out;
}

result<void, client_error> share_group_consumer::close() {
  if (closed_) return {};
  closed_ = true;
  if (!config_.explicit_acknowledgement) acks_.acknowledge_all(ack_accept);
  acks_.collect();
  // Every session is closed with the acknowledgements of its partitions (ShareAcknowledge,
  // epoch -1): the broker applies them, then releases what the member still holds.
  std::map<int32_t, std::vector<topic_partition>> by_leader = pending_by_leader();
  for (const auto& [leader, s] : sessions_) by_leader[leader];
  for (const auto& [leader, tps] : by_leader) {
    if (leader < 0) continue;
    (void)send_acknowledge(leader, tps, true);
  }
  sessions_.clear();
  acks_.forget_delivered();
  buffered_.clear();
  run_callbacks();
  // Leave the group (ShareGroupHeartbeat with epoch -1) from the heartbeat thread.
  {
    std::unique_lock lock(mutex_);
    leaving_ = true;
    wake_heartbeat_.notify_all();
    assignment_changed_.wait_for(lock, config_.request_timeout, [&] { return left_; });
    stopping_ = true;
  }
  wake_heartbeat_.notify_all();
  if (heartbeat_thread_.joinable()) heartbeat_thread_.join();
  return {};
}

void share_group_consumer::run_callbacks() {
  auto outcomes = std::move(outcomes_);
  outcomes_.clear();
  if (!callback_) return;
  for (const auto& o : outcomes) {
    std::optional<consumer_error> e;
    if (o.error) e = consumer_error{o.error->code, o.error->message};
    callback_(o.tp, o.offsets, e);
  }
}

}  // namespace tarn::client
