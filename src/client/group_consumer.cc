// The group member (see group_consumer.h): configuration, the classic protocol's join, positions,
// fetching, leaving and the classic heartbeat.
#include "client/group_consumer.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <iterator>
#include <regex>

#include "client/batch_decode.h"
#include "client/consumer_protocol.h"
#include "client/range_assignor.h"
#include "protocol/error_codes.h"
#include "protocol/messages/fetch_request.h"
#include "protocol/messages/fetch_response.h"
#include "protocol/messages/heartbeat_request.h"
#include "protocol/messages/heartbeat_response.h"
#include "protocol/messages/join_group_request.h"
#include "protocol/messages/join_group_response.h"
#include "protocol/messages/leave_group_request.h"
#include "protocol/messages/leave_group_response.h"
#include "protocol/messages/list_offsets_request.h"
#include "protocol/messages/list_offsets_response.h"
#include "protocol/messages/offset_commit_request.h"
#include "protocol/messages/offset_commit_response.h"
#include "protocol/messages/offset_fetch_request.h"
#include "protocol/messages/offset_fetch_response.h"
#include "protocol/messages/sync_group_request.h"
#include "protocol/messages/sync_group_response.h"
#include "record/record_batch.h"

namespace tarn::client {

namespace {

// A control batch whose record is an ABORT marker: the control record's key is a version
// (int16) and a type (int16: 0 ABORT, 1 COMMIT).
bool is_abort_marker(const record::record_batch_view& batch) {
  auto records = record::batch_records::open(batch, 1u << 20);
  if (!records) return false;
  auto reader = records->reader();
  record::record_view rec;
  if (!reader.next(rec) || !rec.key || rec.key->size() < 4) return false;
  const auto* k = rec.key->data();
  return k[2] == 0 && k[3] == 0;
}

using protocol::error_code;
using clock_type = std::chrono::steady_clock;

constexpr std::string_view protocol_type = "consumer";
// Fetch by topic name (its next versions use topic ids).
constexpr int16_t fetch_max_version = 12;
// Kafka's consumer waits this much longer than the rebalance timeout for a JoinGroup answer.
constexpr std::chrono::milliseconds join_grace{5000};

result<int64_t, std::string> parse_int(const std::string& key, const std::string& value) {
  int64_t v = 0;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
  if (ec != std::errc() || end != value.data() + value.size()) {
    return fail(
        fmt::format("Invalid value {} for configuration {}: Not a number of type INT", value, key));
  }
  return v;
}

}  // namespace

result<void, std::string> group_consumer_config::set(const std::string& key,
                                                     const std::string& value,
                                                     std::vector<std::string>* ignored) {
  auto ms = [&](std::chrono::milliseconds& out) -> result<void, std::string> {
    auto v = parse_int(key, value);
    if (!v) return fail(v.error());
    out = std::chrono::milliseconds(*v);
    return {};
  };
  auto int32 = [&](int32_t& out) -> result<void, std::string> {
    auto v = parse_int(key, value);
    if (!v) return fail(v.error());
    out = static_cast<int32_t>(std::clamp<int64_t>(*v, INT32_MIN, INT32_MAX));
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
  } else if (key == "group.instance.id") {
    if (value.empty()) {
      group_instance_id.reset();
    } else {
      group_instance_id = value;
    }
  } else if (key == "session.timeout.ms") {
    return ms(session_timeout);
  } else if (key == "heartbeat.interval.ms") {
    return ms(heartbeat_interval);
  } else if (key == "max.poll.interval.ms") {
    return ms(max_poll_interval);
  } else if (key == "request.timeout.ms") {
    return ms(request_timeout);
  } else if (key == "retry.backoff.ms") {
    return ms(retry_backoff);
  } else if (key == "metadata.max.age.ms" || key == "topic.metadata.refresh.interval.ms") {
    return ms(metadata_max_age);
  } else if (key == "auto.commit.interval.ms") {
    return ms(auto_commit_interval);
  } else if (key == "enable.auto.commit") {
    if (value != "true" && value != "false") {
      return fail(
          fmt::format("Invalid value {} for configuration {}: Expected value to be either "
                      "true or false",
                      value, key));
    }
    enable_auto_commit = value == "true";
  } else if (key == "auto.offset.reset") {
    if (value != "earliest" && value != "latest" && value != "none") {
      return fail(
          fmt::format("Invalid value {} for configuration auto.offset.reset: Invalid "
                      "value {} for configuration auto.offset.reset",
                      value, value));
    }
    auto_offset_reset = value;
  } else if (key == "isolation.level") {
    if (value != "read_uncommitted" && value != "read_committed") {
      return fail(
          fmt::format("Invalid value {} for configuration isolation.level: String must "
                      "be one of: read_committed, read_uncommitted",
                      value));
    }
    isolation_level = value == "read_committed" ? 1 : 0;
  } else if (key == "check.crcs") {
    if (value != "true" && value != "false") {
      return fail(
          fmt::format("Invalid value {} for configuration {}: Expected value to be either "
                      "true or false",
                      value, key));
    }
    check_crcs = value == "true";
  } else if (key == "fetch.min.bytes") {
    return int32(fetch_min_bytes);
  } else if (key == "fetch.max.bytes") {
    return int32(fetch_max_bytes);
  } else if (key == "fetch.max.wait.ms") {
    return int32(fetch_max_wait_ms);
  } else if (key == "max.partition.fetch.bytes") {
    return int32(max_partition_fetch_bytes);
  } else if (key == "max.poll.records") {
    auto r = int32(max_poll_records);
    if (r && max_poll_records < 1) return fail(std::string("max.poll.records must be at least 1"));
    return r;
  } else if (key == "partition.assignment.strategy") {
    if (value != "range" && value.find("RangeAssignor") == std::string::npos) {
      return fail("partition.assignment.strategy " + value +
                  ": tarn's consumer implements only the range assignor");
    }
  } else if (key == "group.protocol") {
    std::string lower = value;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (lower != "classic" && lower != "consumer") {
      return fail(
          fmt::format("Invalid value {} for configuration group.protocol: String must be "
                      "one of (case insensitive): CLASSIC, CONSUMER",
                      value));
    }
    consumer_protocol = lower == "consumer";
  } else if (key == "group.remote.assignor") {
    if (value.empty()) {
      group_remote_assignor.reset();
    } else {
      group_remote_assignor = value;
    }
  } else if (ignored != nullptr) {
    ignored->push_back(key);
  }
  return {};
}

group_consumer::group_consumer(group_consumer_config config,
                               std::unique_ptr<cluster_client> cluster)
    : config_(std::move(config)), cluster_(std::move(cluster)) {
  if (config_.group_id.empty()) return;
  if (config_.consumer_protocol) {
    membership_ = std::make_unique<consumer_membership>(
        uuid::random().to_string(), config_.group_instance_id, config_.group_remote_assignor,
        static_cast<int32_t>(config_.max_poll_interval.count()));
    heartbeat_thread_ = std::thread([this] { consumer_heartbeat_loop(); });
  } else {
    heartbeat_thread_ = std::thread([this] { heartbeat_loop(); });
  }
}

result<std::unique_ptr<group_consumer>, client_error> group_consumer::create(
    group_consumer_config config) {
  auto cluster = cluster_client::connect(config.bootstrap_servers, config.client_id,
                                         config.request_timeout, config.security);
  if (!cluster) return fail(cluster.error());
  return std::unique_ptr<group_consumer>(
      new group_consumer(std::move(config), std::move(*cluster)));
}

group_consumer::~group_consumer() {
  if (!closed_) (void)close();
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_heartbeat_.notify_all();
  wake_committer_.notify_all();
  if (heartbeat_thread_.joinable()) heartbeat_thread_.join();
  if (committer_thread_.joinable()) committer_thread_.join();
}

void group_consumer::subscribe(std::vector<std::string> topics, rebalance_listener listener) {
  listener_ = std::move(listener);
  std::vector<std::string> names;
  std::vector<std::string> patterns;
  for (auto& t : topics) (t.starts_with('^') ? patterns : names).push_back(std::move(t));
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  subscription_error_.reset();
  for (const auto& p : patterns) {
    // std::regex reports a bad expression by throwing; it becomes poll()'s error.
    try {
      std::regex check(p);
    } catch (const std::regex_error& e) {
      subscription_error_ = client_error{
          -1, fmt::format("subscribe: {} is not a valid regular expression: {}", p, e.what())};
    }
  }
  literal_topics_ = names;
  patterns_listed_at_.reset();
  patterns_ = std::move(patterns);
  if (!patterns_.empty()) return;  // the next poll lists the topics they match
  if (names == topics_) return;
  topics_ = std::move(names);
  subscription_changed_ = true;
}

result<void, client_error> group_consumer::resolve_patterns() {
  if (subscription_error_) return fail(*subscription_error_);
  if (patterns_.empty()) return {};
  const auto now = clock_type::now();
  if (patterns_listed_at_ && now - *patterns_listed_at_ < config_.metadata_max_age) return {};
  auto md = cluster_->metadata(std::nullopt);  // every topic
  if (!md) {
    if (patterns_listed_at_) return {};  // keep the last list until the cluster answers
    return fail(md.error());
  }
  patterns_listed_at_ = now;
  std::vector<std::regex> expressions;
  for (const auto& p : patterns_) expressions.emplace_back(p);  // valid: subscribe() checked
  std::vector<std::string> topics = literal_topics_;
  for (const auto& [name, layout] : *md) {
    if (name.starts_with("__")) continue;  // internal topics, as Java's exclude.internal.topics
    for (const auto& e : expressions) {
      if (std::regex_search(name, e)) {
        topics.push_back(name);
        break;
      }
    }
  }
  std::sort(topics.begin(), topics.end());
  topics.erase(std::unique(topics.begin(), topics.end()), topics.end());
  if (topics != topics_) {
    topics_ = std::move(topics);
    subscription_changed_ = true;
  }
  return {};
}

void group_consumer::assign(std::vector<topic_partition> partitions) {
  std::sort(partitions.begin(), partitions.end());
  partitions.erase(std::unique(partitions.begin(), partitions.end()), partitions.end());
  revoke_all();
  assigned_ = std::move(partitions);
}

void group_consumer::seek(const topic_partition& tp, int64_t offset_or_spec) {
  seeks_[tp] = offset_or_spec;
  fetch_positions_.erase(tp);
  positions_.erase(tp);
  buffered_.drop_if([&](const consumer_record_view& r) {
    return r.topic == tp.topic && r.partition == tp.partition;
  });
}

void group_consumer::pause(const std::vector<topic_partition>& partitions) {
  for (const auto& tp : partitions) {
    if (!std::binary_search(assigned_.begin(), assigned_.end(), tp)) continue;
    paused_.insert(tp);
    // What was fetched and not returned is fetched again after resume().
    buffered_.drop_if([&](const consumer_record_view& r) {
      return r.topic == tp.topic && r.partition == tp.partition;
    });
    auto pos = positions_.find(tp);
    auto fetch = fetch_positions_.find(tp);
    if (pos != positions_.end() && fetch != fetch_positions_.end()) fetch->second = pos->second;
  }
}

void group_consumer::resume(const std::vector<topic_partition>& partitions) {
  for (const auto& tp : partitions) paused_.erase(tp);
}

std::vector<topic_partition> group_consumer::paused() const {
  return {paused_.begin(), paused_.end()};
}

std::vector<topic_partition> group_consumer::assignment() const { return assigned_; }

std::optional<int64_t> group_consumer::position(const topic_partition& tp) const {
  auto it = positions_.find(tp);
  if (it == positions_.end()) return std::nullopt;
  return it->second;
}

std::string group_consumer::member_id() const {
  std::lock_guard lock(mutex_);
  return member_id_;
}

std::map<int32_t, int32_t> group_consumer::fetch_session_ids() const {
  std::map<int32_t, int32_t> out;
  for (const auto& [node, session] : fetch_sessions_) out[node] = session.session_id();
  return out;
}

int32_t group_consumer::generation() const {
  std::lock_guard lock(mutex_);
  return generation_;
}

result<blocking_client*, client_error> group_consumer::coordinator() {
  bool lost = false;
  {
    std::lock_guard lock(mutex_);
    lost = std::exchange(coordinator_lost_, false);
  }
  if (lost) cluster_->forget_coordinator(config_.group_id);
  auto c = cluster_->coordinator(config_.group_id, clock_type::now() + config_.request_timeout);
  if (!c) return c;
  if (auto info = cluster_->known_coordinator(config_.group_id)) {
    std::lock_guard lock(mutex_);
    if (!coordinator_ || coordinator_->node_id != info->node_id ||
        coordinator_->host != info->host || coordinator_->port != info->port) {
      coordinator_ = info;
    }
  }
  return c;
}

// ---------------------------------------------------------------------------------------------
// Joining

void group_consumer::revoke_all() {
  assigned_.clear();
  fetch_positions_.clear();
  positions_.clear();
  committed_.clear();
  buffered_.clear();
  seeks_.clear();
  paused_.clear();
}

void group_consumer::call_listener(
    const std::function<void(const std::vector<topic_partition>&)>& f,
    const std::vector<topic_partition>& tps) {
  if (f) f(tps);
}

void group_consumer::prepare_join() {
  if (join_prepared_) return;  // once per rebalance, however many JoinGroups it takes
  join_prepared_ = true;
  bool valid_generation = false;
  {
    std::lock_guard lock(mutex_);
    valid_generation = generation_ >= 0 && !member_id_.empty();
  }
  const std::vector<topic_partition> owned = assigned_;
  if (!valid_generation) {
    // Fenced: another member may own them already, so nothing is committed.
    if (!owned.empty()) {
      call_listener(listener_.on_partitions_lost ? listener_.on_partitions_lost
                                                 : listener_.on_partitions_revoked,
                    owned);
    }
  } else {
    // Eager rebalance: commit what was consumed, then give every partition up.
    if (config_.enable_auto_commit) (void)commit_sync();
    call_listener(listener_.on_partitions_revoked, owned);
  }
  revoke_all();
}

void group_consumer::leave_prepare() {
  if (assigned_.empty() || config_.group_id.empty() || topics_.empty()) return;
  bool valid_generation = false;
  {
    std::lock_guard lock(mutex_);
    valid_generation = config_.consumer_protocol
                           ? generation_ > 0 && state_ == member_state::stable
                           : generation_ >= 0 && !member_id_.empty() && !rejoin_needed_;
  }
  const std::vector<topic_partition> owned = assigned_;
  if (valid_generation) {
    call_listener(listener_.on_partitions_revoked, owned);
  } else {
    call_listener(listener_.on_partitions_lost ? listener_.on_partitions_lost
                                               : listener_.on_partitions_revoked,
                  owned);
  }
}

result<void, client_error> group_consumer::ensure_active_group() {
  invoke_commit_callbacks();
  if (config_.group_id.empty()) return init_positions();
  if (auto r = resolve_patterns(); !r) return r;
  if (config_.consumer_protocol) return ensure_active_consumer_group();
  bool needed = false;
  {
    std::lock_guard lock(mutex_);
    if (fatal_) return fail(*fatal_);
    if (subscription_changed_) rejoin_needed_ = true;
    needed = rejoin_needed_ || state_ != member_state::stable;
  }
  if (needed) {
    prepare_join();
    if (auto r = join_and_sync(); !r) return r;
    join_prepared_ = false;
    // Before positions are looked up, so a seek() in the listener decides where to start.
    call_listener(listener_.on_partitions_assigned, assigned_);
  }
  return init_positions();
}

result<void, client_error> group_consumer::join_and_sync() {
  while (true) {
    if (woken_.load(std::memory_order_relaxed)) {
      return fail(client_error{-1, "woken up while joining the group"});
    }
    {
      std::lock_guard lock(mutex_);
      state_ = member_state::unjoined;
      rejoin_needed_ = false;
    }
    subscription_changed_ = false;
    auto c = coordinator();
    if (!c) {
      if (is_retriable(c.error().code) || c.error().code == -1) {
        if (backoff_until(clock_type::now() + config_.retry_backoff, config_.retry_backoff)) {
          continue;
        }
      }
      return fail(c.error());
    }
    auto v = version_or_fail<protocol::join_group_request>(**c);
    if (!v) return fail(v.error());

    std::string member_id;
    int32_t last_generation = -1;
    {
      std::lock_guard lock(mutex_);
      member_id = member_id_;
      last_generation = generation_;
    }
    consumer_subscription sub;
    sub.topics = topics_;
    sub.generation_id = last_generation;
    const auto metadata = encode_subscription(sub);
    protocol::join_group_request join;
    join.group_id = config_.group_id;
    join.session_timeout_ms = static_cast<int32_t>(config_.session_timeout.count());
    join.rebalance_timeout_ms = static_cast<int32_t>(config_.max_poll_interval.count());
    join.member_id = member_id;
    if (config_.group_instance_id) join.group_instance_id = *config_.group_instance_id;
    join.protocol_type = protocol_type;
    join.protocols.push_back({range_assignor_name, metadata});
    join.reason = "joining the group";
    std::vector<uint8_t> join_buffer;
    auto joined = call<protocol::join_group_response>(**c, join, *v, join_buffer,
                                                      config_.max_poll_interval + join_grace);
    if (!joined) {
      cluster_->forget_coordinator(config_.group_id);
      if (backoff_until(clock_type::now() + config_.retry_backoff, config_.retry_backoff)) {
        continue;
      }
      return fail(transport_error(joined.error()));
    }
    const int16_t err = joined->error_code;
    if (err == code(error_code::member_id_required)) {
      std::lock_guard lock(mutex_);
      member_id_ = std::string(joined->member_id);
      continue;
    }
    if (err == code(error_code::unknown_member_id)) {
      std::lock_guard lock(mutex_);
      member_id_.clear();
      generation_ = -1;
      continue;
    }
    if (err == code(error_code::illegal_generation)) {
      std::lock_guard lock(mutex_);
      generation_ = -1;
      continue;
    }
    if (err == code(error_code::rebalance_in_progress)) continue;
    if (is_coordinator_error(err)) {
      cluster_->forget_coordinator(config_.group_id);
      (void)backoff_until(clock_type::now() + config_.retry_backoff, config_.retry_backoff);
      continue;
    }
    if (err != 0) {
      auto e = kafka_error(err);
      std::lock_guard lock(mutex_);
      fatal_ = e;
      return fail(e);
    }

    const std::string my_id(joined->member_id);
    const int32_t generation = joined->generation_id;
    const std::string protocol_name(joined->protocol_name.value_or(range_assignor_name));
    {
      std::lock_guard lock(mutex_);
      member_id_ = my_id;
      generation_ = generation;
    }

    // The leader assigns (unless the coordinator says a static leader's assignment stands).
    std::vector<std::pair<std::string, std::vector<uint8_t>>> assignments;
    if (std::string_view(joined->leader) == my_id && !joined->skip_assignment) {
      std::vector<std::pair<std::string, std::vector<uint8_t>>> members;
      std::vector<assignor_member> assignor_members;
      std::map<std::string, int16_t> versions;
      std::set<std::string> all_topics;
      for (const auto& m : joined->members) {
        auto s = decode_subscription(m.metadata);
        if (!s) continue;  // a member we cannot read gets nothing
        assignor_member am;
        am.member_id = std::string(m.member_id);
        if (m.group_instance_id) am.group_instance_id = std::string(*m.group_instance_id);
        am.topics = s->topics;
        all_topics.insert(s->topics.begin(), s->topics.end());
        versions[am.member_id] =
            static_cast<int16_t>(m.metadata.size() >= 2 ? (m.metadata[0] << 8) | m.metadata[1] : 0);
        assignor_members.push_back(std::move(am));
      }
      std::map<std::string, int32_t> counts;
      if (!all_topics.empty()) {
        auto md =
            cluster_->metadata(std::vector<std::string>(all_topics.begin(), all_topics.end()));
        if (!md) return fail(md.error());
        for (const auto& [name, layout] : *md) {
          if (layout.error_code == 0) counts[name] = static_cast<int32_t>(layout.partitions.size());
        }
      }
      for (auto& [id, a] : assign_range(assignor_members, counts)) {
        const int16_t version = std::clamp<int16_t>(versions[id], 0, consumer_protocol_version);
        assignments.emplace_back(id, encode_assignment(a, version));
      }
    }

    auto sv = version_or_fail<protocol::sync_group_request>(**c);
    if (!sv) return fail(sv.error());
    protocol::sync_group_request sync;
    sync.group_id = config_.group_id;
    sync.generation_id = generation;
    sync.member_id = my_id;
    if (config_.group_instance_id) sync.group_instance_id = *config_.group_instance_id;
    sync.protocol_type = protocol_type;
    sync.protocol_name = protocol_name;
    for (const auto& [id, bytes] : assignments) sync.assignments.push_back({id, bytes});
    std::vector<uint8_t> sync_buffer;
    auto synced = call<protocol::sync_group_response>(**c, sync, *sv, sync_buffer,
                                                      config_.max_poll_interval + join_grace);
    if (!synced) {
      cluster_->forget_coordinator(config_.group_id);
      continue;
    }
    const int16_t serr = synced->error_code;
    if (serr == code(error_code::rebalance_in_progress)) continue;
    if (serr == code(error_code::unknown_member_id)) {
      std::lock_guard lock(mutex_);
      member_id_.clear();
      generation_ = -1;
      continue;
    }
    if (serr == code(error_code::illegal_generation)) {
      std::lock_guard lock(mutex_);
      generation_ = -1;
      continue;
    }
    if (is_coordinator_error(serr)) {
      cluster_->forget_coordinator(config_.group_id);
      continue;
    }
    if (serr != 0) {
      auto e = kafka_error(serr);
      std::lock_guard lock(mutex_);
      fatal_ = e;
      return fail(e);
    }
    auto assignment = decode_assignment(synced->assignment);
    if (!assignment) return fail(transport_error(assignment.error()));
    assigned_.clear();
    for (const auto& tp : assignment->partitions) {
      for (int32_t p : tp.partitions) assigned_.push_back({tp.topic, p});
    }
    std::sort(assigned_.begin(), assigned_.end());
    bool again = false;
    {
      std::lock_guard lock(mutex_);
      state_ = member_state::stable;
      // A heartbeat that saw the next rebalance already leaves rejoin_needed_ set.
      again = rejoin_needed_;
    }
    wake_heartbeat_.notify_all();
    next_auto_commit_ = clock_type::now() + config_.auto_commit_interval;
    if (again) {
      revoke_all();
      continue;
    }
    return {};
  }
}

// ---------------------------------------------------------------------------------------------
// Positions

// Where each assigned partition without a fetch position starts: the seek() given, else the
// group's committed offset, else auto.offset.reset.
result<void, client_error> group_consumer::init_positions() {
  std::vector<topic_partition> unknown;
  std::vector<topic_partition> ask;  // no seek: the group's committed offset decides
  for (const auto& tp : assigned_) {
    if (fetch_positions_.count(tp)) continue;
    unknown.push_back(tp);
    if (!seeks_.count(tp)) ask.push_back(tp);
  }
  if (unknown.empty()) return {};
  std::map<topic_partition, int64_t> committed;
  if (!config_.group_id.empty() && !ask.empty()) {
    auto c = fetch_committed(ask);
    if (!c) return fail(c.error());
    committed = std::move(*c);
  }
  for (const auto& tp : unknown) {
    int64_t position = 0;
    if (auto seek = seeks_.find(tp); seek != seeks_.end()) {
      if (seek->second >= 0) {
        position = seek->second;
      } else {
        auto r = list_offset(tp, seek->second);
        if (!r) return fail(r.error());
        position = r->offset;
      }
      seeks_.erase(seek);
    } else if (auto it = committed.find(tp); it != committed.end()) {
      position = it->second;
      committed_[tp] = position;
    } else {
      auto reset = reset_offset(tp);
      if (!reset) return fail(reset.error());
      position = *reset;
    }
    fetch_positions_[tp] = position;
    positions_[tp] = position;
  }
  return {};
}

// The group's committed offsets of `tps` (OffsetFetch with RequireStable, retried while a
// transaction's offsets are pending).
result<std::map<topic_partition, int64_t>, client_error> group_consumer::fetch_committed(
    const std::vector<topic_partition>& tps) {
  const auto until = clock_type::now() + config_.request_timeout;
  std::map<topic_partition, int64_t> committed;
  while (true) {
    auto c = coordinator();
    if (!c) return fail(c.error());
    auto v = version_or_fail<protocol::offset_fetch_request>(**c, offset_fetch_max_version);
    if (!v) return fail(v.error());
    std::string member_id;
    {
      std::lock_guard lock(mutex_);
      member_id = member_id_;
    }
    protocol::offset_fetch_request req;
    std::vector<protocol::offset_fetch_request::offset_fetch_request_topics> topics;
    std::vector<protocol::offset_fetch_request::offset_fetch_request_topic> old_topics;
    const auto grouped = by_topic(tps);  // the request's names point into it
    for (const auto& [topic, ps] : grouped) {
      topics.push_back({});
      topics.back().name = topic;
      topics.back().partition_indexes = ps;
      old_topics.push_back({});
      old_topics.back().name = topic;
      old_topics.back().partition_indexes = ps;
    }
    if (*v >= 8) {
      protocol::offset_fetch_request::offset_fetch_request_group g;
      g.group_id = config_.group_id;
      g.topics = std::move(topics);
      req.groups.push_back(std::move(g));
    } else {
      req.group_id = config_.group_id;
      req.topics = std::move(old_topics);
    }
    req.require_stable = true;
    std::vector<uint8_t> buffer;
    auto resp = call<protocol::offset_fetch_response>(**c, req, *v, buffer);
    if (!resp) {
      cluster_->forget_coordinator(config_.group_id);
      if (backoff_until(until, config_.retry_backoff)) continue;
      return fail(transport_error(resp.error()));
    }
    int16_t err = 0;
    committed.clear();
    auto take = [&](std::string_view topic, const auto& p) {
      if (p.error_code != 0 && err == 0) err = p.error_code;
      if (p.error_code == 0 && p.committed_offset >= 0) {
        committed[{std::string(topic), p.partition_index}] = p.committed_offset;
      }
    };
    if (*v >= 8) {
      for (const auto& g : resp->groups) {
        if (g.error_code != 0) err = g.error_code;
        for (const auto& t : g.topics) {
          for (const auto& p : t.partitions) take(t.name, p);
        }
      }
    } else {
      if (resp->error_code != 0) err = resp->error_code;
      for (const auto& t : resp->topics) {
        for (const auto& p : t.partitions) take(t.name, p);
      }
    }
    if (err == 0) break;
    if (is_coordinator_error(err)) cluster_->forget_coordinator(config_.group_id);
    if ((is_retriable(err) || err == code(error_code::unstable_offset_commit)) &&
        backoff_until(until, config_.retry_backoff)) {
      continue;
    }
    return fail(kafka_error(err));
  }
  return committed;
}

result<std::map<topic_partition, int64_t>, client_error> group_consumer::committed(
    const std::vector<topic_partition>& partitions) {
  if (config_.group_id.empty()) {
    return fail(client_error{code(error_code::invalid_group_id),
                             "To use the group management or offset commit APIs, you must "
                             "provide a valid group.id in the consumer configuration."});
  }
  std::vector<topic_partition> tps = partitions;
  std::sort(tps.begin(), tps.end());
  tps.erase(std::unique(tps.begin(), tps.end()), tps.end());
  if (tps.empty()) return std::map<topic_partition, int64_t>{};
  return fetch_committed(tps);
}

result<int64_t, client_error> group_consumer::reset_offset(const topic_partition& tp) {
  if (config_.auto_offset_reset == "none") {
    return fail(client_error{code(error_code::offset_out_of_range),
                             fmt::format("Undefined offset with no reset policy for partitions: "
                                         "[{}-{}]",
                                         tp.topic, tp.partition)});
  }
  auto r = list_offset(
      tp, config_.auto_offset_reset == "earliest" ? earliest_offset_spec : latest_offset_spec);
  if (!r) return fail(r.error());
  return r->offset;
}

result<std::map<topic_partition, std::optional<offset_and_timestamp>>, client_error>
group_consumer::offsets_for_times(const std::map<topic_partition, int64_t>& timestamps) {
  std::map<topic_partition, std::optional<offset_and_timestamp>> out;
  for (const auto& [tp, timestamp] : timestamps) {
    if (timestamp < 0) {
      return fail(client_error{-1, fmt::format("The target time for partition {}-{} is {}. The "
                                               "target time cannot be negative.",
                                               tp.topic, tp.partition, timestamp)});
    }
    auto r = list_offset(tp, timestamp);
    if (!r) return fail(r.error());
    // No record at or after the time: ListOffsets answers offset -1 (Java's null).
    if (r->offset >= 0) {
      out[tp] = *r;
    } else {
      out[tp] = std::nullopt;
    }
  }
  return out;
}

result<std::map<topic_partition, int64_t>, client_error> group_consumer::list_offsets(
    const std::vector<topic_partition>& partitions, int64_t spec) {
  std::map<topic_partition, int64_t> out;
  for (const auto& tp : partitions) {
    auto r = list_offset(tp, spec);
    if (!r) return fail(r.error());
    out[tp] = r->offset;
  }
  return out;
}

// ListOffsets for one partition: a spec (earliest_offset_spec, latest_offset_spec) or a
// timestamp; the answer's offset and timestamp.
result<offset_and_timestamp, client_error> group_consumer::list_offset(const topic_partition& tp,
                                                                       int64_t spec) {
  const auto until = clock_type::now() + config_.request_timeout;
  while (true) {
    auto md = cluster_->metadata(std::vector<std::string>{tp.topic});
    if (!md) return fail(md.error());
    int32_t leader = -1;
    if (auto t = md->find(tp.topic); t != md->end()) {
      for (const auto& p : t->second.partitions) {
        if (p.partition == tp.partition) leader = p.leader;
      }
    }
    if (leader < 0) {
      if (backoff_until(until, config_.retry_backoff)) continue;
      return fail(kafka_error(code(error_code::leader_not_available)));
    }
    auto c = cluster_->node(leader);
    if (!c) return fail(c.error());
    auto v = version_or_fail<protocol::list_offsets_request>(**c);
    if (!v) return fail(v.error());
    protocol::list_offsets_request req;
    req.replica_id = -1;
    req.isolation_level = config_.isolation_level;
    req.timeout_ms = static_cast<int32_t>(config_.request_timeout.count());
    protocol::list_offsets_request::list_offsets_topic t;
    t.name = tp.topic;
    t.partitions.push_back({tp.partition, -1, spec});
    req.topics.push_back(std::move(t));
    std::vector<uint8_t> buffer;
    auto resp = call<protocol::list_offsets_response>(**c, req, *v, buffer);
    if (!resp) {
      cluster_->drop(leader);
      if (backoff_until(until, config_.retry_backoff)) continue;
      return fail(transport_error(resp.error()));
    }
    for (const auto& rt : resp->topics) {
      for (const auto& p : rt.partitions) {
        if (p.partition_index != tp.partition) continue;
        if (p.error_code == 0) return offset_and_timestamp{p.offset, p.timestamp};
        if (is_retriable(p.error_code) && backoff_until(until, config_.retry_backoff)) break;
        return fail(kafka_error(p.error_code));
      }
    }
    if (!backoff_until(until, config_.retry_backoff)) {
      return fail(transport_error("ListOffsets did not answer for " + tp.topic));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Fetching

result<void, client_error> group_consumer::fetch_once(std::chrono::milliseconds max_wait) {
  if (fetch_positions_.empty()) {
    std::this_thread::sleep_for(std::min(max_wait, std::chrono::milliseconds(100)));
    return {};
  }
  // Leaders from Metadata, asked again only after an error or for a partition not seen yet.
  bool refresh = leaders_stale_;
  for (const auto& [tp, pos] : fetch_positions_) refresh = refresh || !leaders_.count(tp);
  if (refresh) {
    std::set<std::string> topic_names;
    for (const auto& [tp, pos] : fetch_positions_) topic_names.insert(tp.topic);
    auto md = cluster_->metadata(std::vector<std::string>(topic_names.begin(), topic_names.end()));
    if (!md) {  // the broker is away: try again at the next poll
      std::this_thread::sleep_for(std::min(max_wait, config_.retry_backoff));
      return {};
    }
    leaders_.clear();
    for (const auto& [name, layout] : *md) {
      for (const auto& p : layout.partitions) {
        if (p.leader >= 0) leaders_[{name, p.partition}] = p.leader;
      }
    }
    leaders_stale_ = false;
  }
  std::map<int32_t, std::vector<topic_partition>> by_leader;
  for (const auto& [tp, pos] : fetch_positions_) {
    if (paused_.count(tp)) continue;
    if (auto l = leaders_.find(tp); l != leaders_.end()) by_leader[l->second].push_back(tp);
  }
  if (by_leader.empty() && !paused_.empty()) {  // everything is paused
    std::this_thread::sleep_for(std::min(max_wait, std::chrono::milliseconds(100)));
    return {};
  }
  if (by_leader.empty()) {
    leaders_stale_ = true;
    std::this_thread::sleep_for(std::min(max_wait, config_.retry_backoff));
    return {};
  }
  bool errors = false;
  for (const auto& [leader, tps] : by_leader) {
    auto c = cluster_->node(leader);
    if (!c) {
      leaders_stale_ = errors = true;
      continue;
    }
    const int16_t v = (*c)->version_for<protocol::fetch_request>(fetch_max_version);
    if (v < 0) return fail(transport_error("the broker serves no Fetch version tarn speaks"));
    protocol::fetch_request req;
    req.replica_id = -1;
    req.max_wait_ms = static_cast<int32_t>(max_wait.count());
    req.min_bytes = config_.fetch_min_bytes;
    req.max_bytes = config_.fetch_max_bytes;
    req.isolation_level = config_.isolation_level;
    // KIP-227: the session with this broker decides which partitions the request names.
    std::map<topic_partition, fetch_session::partition_state> wanted;
    for (const auto& tp : tps) {
      wanted[tp] = {fetch_positions_[tp], config_.max_partition_fetch_bytes};
    }
    auto& session = fetch_sessions_[leader];
    const auto plan = session.build(wanted, v >= 7);
    req.session_id = plan.session_id;
    req.session_epoch = plan.session_epoch;
    ++(plan.full ? fetch_stats_.full_fetches : fetch_stats_.incremental_fetches);
    for (const auto& [tp, state] : plan.partitions) {  // ordered by topic: a topic's run together
      if (req.topics.empty() || req.topics.back().topic != tp.topic) {
        req.topics.emplace_back();
        req.topics.back().topic = tp.topic;  // points into plan
      }
      protocol::fetch_request::fetch_partition fp;
      fp.partition = tp.partition;
      fp.fetch_offset = state.fetch_offset;
      fp.partition_max_bytes = state.max_bytes;
      req.topics.back().partitions.push_back(fp);
    }
    for (const auto& tp : plan.forgotten) {
      if (req.forgotten_topics_data.empty() || req.forgotten_topics_data.back().topic != tp.topic) {
        req.forgotten_topics_data.emplace_back();
        req.forgotten_topics_data.back().topic = tp.topic;
      }
      req.forgotten_topics_data.back().partitions.push_back(tp.partition);
    }
    // The response lands in an arena from the pool, reused once no record borrows it: a fresh
    // megabyte each time cost a malloc, its zeroing and its page faults.
    std::shared_ptr<fetch_arena> arena = arenas_->take();
    auto resp = call<protocol::fetch_response>(**c, req, v, arena->response,
                                               config_.request_timeout + max_wait);
    if (!resp) {
      session.on_failure();
      cluster_->drop(leader);
      leaders_stale_ = errors = true;
      continue;  // the next poll fetches again, with fresh metadata
    }
    session.on_response(resp->error_code, resp->session_id);
    if (resp->error_code == code(error_code::fetch_session_id_not_found) ||
        resp->error_code == code(error_code::invalid_fetch_session_epoch)) {
      ++fetch_stats_.session_resets;  // evicted: the next fetch is a full one
      continue;
    }
    if (resp->error_code != 0) {
      return fail(kafka_error(resp->error_code));
    }
    bool borrowed = false;  // buffered_ holds the arena (once a record borrows it)
    for (const auto& t : resp->responses) {
      for (const auto& pd : t.partitions) {
        const topic_partition tp{std::string(t.topic), pd.partition_index};
        auto pos = fetch_positions_.find(tp);
        if (pos == fetch_positions_.end()) continue;
        if (pd.error_code == code(error_code::offset_out_of_range)) {
          auto reset = reset_offset(tp);
          if (!reset) return fail(reset.error());
          pos->second = *reset;
          positions_[tp] = *reset;
          continue;
        }
        if (pd.error_code != 0) {  // a leader change: the next fetch asks Metadata again
          leaders_stale_ = errors = true;
          continue;
        }
        if (!pd.records || pd.records->empty()) continue;
        // read_committed: the aborted transactions overlapping this data, by first offset, as
        // Java's CompletedFetch walks them; a producer's batches are skipped from its aborted
        // transaction's first offset to its ABORT marker.
        std::vector<std::pair<int64_t, int64_t>> aborted;  // (first offset, producer id)
        if (config_.isolation_level == 1 && pd.aborted_transactions) {
          for (const auto& a : *pd.aborted_transactions) {
            aborted.emplace_back(a.first_offset, a.producer_id);
          }
          std::sort(aborted.begin(), aborted.end());
        }
        size_t next_aborted = 0;
        std::set<int64_t> aborted_producers;
        record::batch_reader batches(*pd.records);
        record::record_batch_view batch;
        while (batches.next(batch)) {
          if (batch.next_offset() <= pos->second) continue;
          // Every batch, control and aborted ones too, as Java's CompletedFetch checks them.
          if (config_.check_crcs) {
            if (auto crc = check_batch_crc(batch, t.topic, tp.partition); !crc) return crc;
          }
          if (config_.isolation_level == 1 && batch.has_producer_id()) {
            while (next_aborted < aborted.size() &&
                   aborted[next_aborted].first <= batch.next_offset() - 1) {
              aborted_producers.insert(aborted[next_aborted++].second);
            }
            if (batch.is_control()) {
              if (is_abort_marker(batch)) aborted_producers.erase(batch.producer_id());
            } else if (batch.is_transactional() &&
                       aborted_producers.contains(batch.producer_id())) {
              pos->second = batch.next_offset();  // an aborted transaction's records
              continue;
            }
          }
          if (batch.is_control()) {
            pos->second = batch.next_offset();
            continue;
          }
          const int64_t from = pos->second;
          auto decoded =
              decode_batch(batch, *arena, /*check_crcs=*/false, t.topic, tp.partition,
                           [&](int64_t offset) -> consumer_record_view* {
                             if (offset < from) return nullptr;
                             if (!borrowed) {  // buffered_ holds the arena once a record borrows it
                               buffered_.borrow(arena);
                               borrowed = true;
                             }
                             return &buffered_.emplace_back();
                           });
          if (!decoded) return fail(decoded.error());
          pos->second = std::max(pos->second, batch.next_offset());
        }
      }
    }
  }
  if (errors && buffered_.empty()) {
    std::this_thread::sleep_for(std::min(max_wait, config_.retry_backoff));
  }
  return {};
}

result<std::vector<consumer_record>, client_error> group_consumer::poll(
    std::chrono::milliseconds timeout, size_t max_records) {
  std::vector<consumer_record> out;
  if (auto r = poll(out, timeout, max_records); !r) return fail(r.error());
  return out;
}

result<void, client_error> group_consumer::poll_until_buffered(std::chrono::milliseconds timeout) {
  if (closed_) return fail(client_error{-1, "the consumer is closed"});
  const auto deadline = clock_type::now() + timeout;
  while (true) {
    last_poll_ns_.store(clock_type::now().time_since_epoch().count(), std::memory_order_relaxed);
    if (woken_.exchange(false, std::memory_order_relaxed)) return {};
    if (auto r = ensure_active_group(); !r) {
      if (woken_.exchange(false, std::memory_order_relaxed)) return {};
      return fail(r.error());
    }
    maybe_auto_commit();
    if (!buffered_.empty()) return {};
    const auto now = clock_type::now();
    if (now >= deadline) return {};
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now);
    wait = std::clamp(wait, std::chrono::milliseconds(0),
                      std::chrono::milliseconds(config_.fetch_max_wait_ms));
    if (auto r = fetch_once(wait); !r) return fail(r.error());
    // Positions past control batches move with the fetch position when nothing is buffered.
    if (buffered_.empty()) {
      for (const auto& [tp, pos] : fetch_positions_) positions_[tp] = pos;
    }
  }
}

template <typename Records>
void group_consumer::advance_positions(const Records& out) {
  for (size_t i = 0; i < out.size(); ++i) {
    const bool last_of_run = i + 1 == out.size() || out[i + 1].partition != out[i].partition ||
                             out[i + 1].topic != out[i].topic;
    if (last_of_run) {
      positions_[{std::string(out[i].topic), out[i].partition}] = out[i].offset + 1;
    }
  }
}

result<void, client_error> group_consumer::poll(std::vector<consumer_record>& out,
                                                std::chrono::milliseconds timeout,
                                                size_t max_records) {
  buffered_.recycle(out);
  if (auto r = poll_until_buffered(timeout); !r) return r;
  if (buffered_.empty()) return {};
  buffered_.pop_into(out, std::min(max_records, static_cast<size_t>(config_.max_poll_records)));
  advance_positions(out);
  return {};
}

result<void, client_error> group_consumer::poll(consumer_records& out,
                                                std::chrono::milliseconds timeout,
                                                size_t max_records) {
  // Released first, so the fetch below can reuse the arenas they borrowed.
  out.clear();
  if (auto r = poll_until_buffered(timeout); !r) return r;
  if (buffered_.empty()) return {};
  buffered_.pop_into(out, std::min(max_records, static_cast<size_t>(config_.max_poll_records)));
  advance_positions(out);
  return {};
}

// ---------------------------------------------------------------------------------------------
// Leaving (commits are in group_consumer_commit.cc, KIP-848 in group_consumer_kip848.cc)

result<void, client_error> group_consumer::close() {
  if (closed_) return {};
  result<void, client_error> outcome;
  if (config_.enable_auto_commit) outcome = commit_sync();
  // Java's close waits for the async commits in flight and calls their callbacks.
  wait_for_async_commits(config_.request_timeout);
  invoke_commit_callbacks();
  leave_prepare();
  closed_ = true;
  std::optional<consumer_heartbeat_fields> leave;
  bool joined = false;
  std::string member_id;
  {
    std::lock_guard lock(mutex_);
    if (membership_ && membership_->wants_heartbeats()) {
      membership_->leave();
      leave = membership_->next_heartbeat();
    }
    joined = state_ == member_state::stable || !member_id_.empty();
    member_id = member_id_;
    state_ = member_state::unjoined;
    stopping_ = true;
  }
  wake_heartbeat_.notify_all();
  wake_committer_.notify_all();
  if (heartbeat_thread_.joinable()) heartbeat_thread_.join();
  if (committer_thread_.joinable()) committer_thread_.join();
  invoke_commit_callbacks();  // any the committer refused while stopping
  if (leave) {
    if (auto c = coordinator()) (void)send_consumer_heartbeat(**c, config_.group_id, *leave);
  } else if (!membership_ && joined && !member_id.empty() && !config_.group_instance_id) {
    if (auto c = coordinator()) {
      if (auto v = version_or_fail<protocol::leave_group_request>(**c)) {
        protocol::leave_group_request req;
        req.group_id = config_.group_id;
        if (*v >= 3) {
          protocol::leave_group_request::member_identity m;
          m.member_id = member_id;
          m.reason = "the consumer is being closed";
          req.members.push_back(m);
        } else {
          req.member_id = member_id;
        }
        std::vector<uint8_t> buffer;
        (void)call<protocol::leave_group_response>(**c, req, *v, buffer);
      }
    }
  }
  {
    std::lock_guard lock(mutex_);
    member_id_.clear();
    generation_ = -1;
  }
  revoke_all();
  return outcome;
}

// ---------------------------------------------------------------------------------------------
// Heartbeats

blocking_client* coordinator_connection::to(const broker_info& target,
                                            const group_consumer_config& config) {
  if (!connection_ || !connection_->is_open() || !connected_to_ ||
      connected_to_->host != target.host || connected_to_->port != target.port) {
    connection_.reset();
    auto c = blocking_client::connect(target.host, target.port, config.request_timeout,
                                      config.client_id, config.security);
    if (c && (*c)->negotiate_versions()) {
      connection_ = std::move(*c);
      connected_to_ = target;
    }
  }
  return connection_.get();
}

void group_consumer::heartbeat_loop() {
  coordinator_connection connection;
  std::unique_lock lock(mutex_);
  while (!stopping_) {
    wake_heartbeat_.wait_for(lock, config_.heartbeat_interval);
    if (stopping_) break;
    if (state_ != member_state::stable || rejoin_needed_ || !coordinator_) continue;
    const broker_info target = *coordinator_;
    protocol::heartbeat_request req;
    const std::string group = config_.group_id;
    const std::string member_id = member_id_;
    const int32_t generation = generation_;
    const auto since_poll =
        clock_type::now() -
        clock_type::time_point(clock_type::duration(last_poll_ns_.load(std::memory_order_relaxed)));
    if (since_poll > config_.max_poll_interval) {
      // The application stopped polling: leave, so the group gives the partitions to others
      // (Java's maybeLeaveGroup). The next poll() loses them and joins again.
      member_id_.clear();
      generation_ = -1;
      rejoin_needed_ = true;
      state_ = member_state::unjoined;
      lock.unlock();
      if (!config_.group_instance_id) {
        if (blocking_client* c = connection.to(target, config_)) {
          if (const int16_t v = c->version_for<protocol::leave_group_request>(); v >= 0) {
            protocol::leave_group_request leave;
            leave.group_id = group;
            if (v >= 3) {
              protocol::leave_group_request::member_identity m;
              m.member_id = member_id;
              m.reason = "consumer poll timeout has expired.";
              leave.members.push_back(m);
            } else {
              leave.member_id = member_id;
            }
            std::vector<uint8_t> buffer;
            if (!call<protocol::leave_group_response>(*c, leave, v, buffer)) connection.reset();
          }
        }
      }
      lock.lock();
      continue;
    }
    lock.unlock();

    blocking_client* c = connection.to(target, config_);
    int16_t err = -1;
    if (c != nullptr) {
      const int16_t v = c->version_for<protocol::heartbeat_request>();
      if (v >= 0) {
        req.group_id = group;
        req.generation_id = generation;
        req.member_id = member_id;
        if (config_.group_instance_id) req.group_instance_id = *config_.group_instance_id;
        std::vector<uint8_t> buffer;
        auto resp = call<protocol::heartbeat_response>(*c, req, v, buffer);
        if (resp) err = resp->error_code;
      }
    }

    lock.lock();
    if (generation != generation_ || member_id != member_id_) continue;  // rejoined meanwhile
    if (err == code(error_code::rebalance_in_progress)) {
      rejoin_needed_ = true;
    } else if (err == code(error_code::illegal_generation)) {
      // Fenced out of the generation: its partitions are lost (Java resets the generation).
      rejoin_needed_ = true;
      generation_ = -1;
    } else if (err == code(error_code::unknown_member_id)) {
      rejoin_needed_ = true;
      member_id_.clear();
      generation_ = -1;
    } else if (err == code(error_code::fenced_instance_id)) {
      fatal_ = kafka_error(err);
    } else if (is_coordinator_error(err) || err == -1) {
      coordinator_lost_ = true;
      connection.reset();
    }
  }
}

}  // namespace tarn::client
