// broker_console: console_backend over the topic manager and the group coordinator, with the
// checks the CreateTopics, DeleteTopics and IncrementalAlterConfigs handlers make (the wire
// handlers stay the reference; this answers the same questions as values for HTTP).
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

#include "broker/console_backend_impl.h"
#include "broker/offsets_topic.h"
#include "broker/replica_manager.h"
#include "broker/topic_handler_util.h"
#include "broker/topic_manager.h"
#include "broker/topic_placement.h"
#include "coordinator/group_coordinator.h"
#include "record/batch_builder.h"
#include "record/compression.h"
#include "record/record.h"
#include "record/record_batch.h"
#include "storage/log_config.h"
#include "storage/log_segment.h"
#include "storage/log_validator.h"
#include "storage/topic_metadata.h"

namespace tarn::broker {

namespace {

// KRaft's metadata log, reserved as CreateTopics reserves it.
constexpr std::string_view reserved_metadata_topic = "__cluster_metadata";
// One log read of read_records (whole batches, at least one) and the most it reads in all for
// one request, so a page of small records behind large ones still ends.
constexpr int32_t console_read_chunk_bytes = 1 << 20;
constexpr int console_max_reads = 16;
constexpr auto console_max_read_time = std::chrono::milliseconds(500);
constexpr size_t console_max_uncompressed_bytes = 64 << 20;

console_error console_error_of(const storage::storage_error& e) {
  switch (e.code) {
    case storage::storage_errc::invalid_topic:
    case storage::storage_errc::invalid_config:
    case storage::storage_errc::invalid_partitions:
      return {console_errc::invalid, e.message};
    case storage::storage_errc::already_exists:
      return {console_errc::conflict, e.message};
    default:
      return {console_errc::internal, e.message};
  }
}

std::string_view config_source_name(storage::config_source s) {
  switch (s) {
    case storage::config_source::topic_config:
      return "DYNAMIC_TOPIC_CONFIG";
    case storage::config_source::dynamic_broker_config:
      return "DYNAMIC_BROKER_CONFIG";
    case storage::config_source::dynamic_default_broker_config:
      return "DYNAMIC_DEFAULT_BROKER_CONFIG";
    case storage::config_source::static_broker_config:
      return "STATIC_BROKER_CONFIG";
    case storage::config_source::default_config:
      return "DEFAULT_CONFIG";
  }
  return "UNKNOWN";
}

// The topic's summary and, when `detail`, its partitions and configs. Hold the topic lock
// (shared is enough: each log's segments are read under its own mutex).
console_topic console_topic_of(const storage::log_manager& logs, const storage::topic_info& t,
                               bool detail) {
  console_topic out;
  out.name = t.name;
  out.topic_id = t.topic_id.to_string();
  out.internal = is_internal_topic(t.name);
  out.partition_count = t.partitions;
  for (int32_t p = 0; p < t.partitions; ++p) {
    const storage::log* log = logs.get_log(t.name, p);
    if (log == nullptr) continue;
    console_partition cp;
    cp.partition = p;
    std::lock_guard log_lock(log->mutex());
    cp.log_start_offset = static_cast<int64_t>(log->log_start_offset());
    cp.log_end_offset = static_cast<int64_t>(log->log_end_offset());
    cp.high_watermark = static_cast<int64_t>(log->high_watermark());
    cp.size_bytes = log->size_bytes();
    cp.segments = log->segment_count();
    if (detail) {
      for (const auto& seg : log->segment_sizes()) {
        cp.segment_files.push_back({storage::segment_file_name(seg.base_offset, ".log"),
                                    static_cast<int64_t>(seg.base_offset), seg.size});
      }
    }
    out.size_bytes += cp.size_bytes;
    out.messages += std::max<int64_t>(0, cp.high_watermark - cp.log_start_offset);
    if (detail) out.partitions.push_back(cp);
  }
  if (detail) {
    for (const auto& d : storage::describe_topic_configs(t.overrides, logs.broker_props())) {
      out.configs.push_back({std::string(d.definition->name), d.value,
                             std::string(config_source_name(d.source)), d.definition->sensitive});
    }
  }
  return out;
}

// ConsumerProtocolAssignment (versions 0-3, not flexible): version, [topic, [partition]],
// userData. Anything that does not decode gives an empty assignment.
std::vector<std::pair<std::string, std::vector<int32_t>>> decode_consumer_assignment(
    std::span<const uint8_t> b) {
  std::vector<std::pair<std::string, std::vector<int32_t>>> out;
  size_t at = 0;
  auto need = [&](size_t n) { return b.size() - at >= n; };
  auto i16 = [&] {
    const auto v = static_cast<int16_t>((b[at] << 8) | b[at + 1]);
    at += 2;
    return v;
  };
  auto i32 = [&] {
    const auto v = static_cast<int32_t>((uint32_t{b[at]} << 24) | (uint32_t{b[at + 1]} << 16) |
                                        (uint32_t{b[at + 2]} << 8) | b[at + 3]);
    at += 4;
    return v;
  };
  if (!need(6)) return {};
  i16();  // version
  const int32_t topics = i32();
  if (topics < 0 || static_cast<size_t>(topics) > b.size() / 6) return {};
  for (int32_t t = 0; t < topics; ++t) {
    if (!need(2)) return {};
    const int16_t len = i16();
    if (len < 0 || !need(static_cast<size_t>(len) + 4)) return {};
    std::string name(reinterpret_cast<const char*>(b.data() + at), static_cast<size_t>(len));
    at += static_cast<size_t>(len);
    const int32_t count = i32();
    if (count < 0 || !need(static_cast<size_t>(count) * 4)) return {};
    std::vector<int32_t> partitions;
    for (int32_t i = 0; i < count; ++i) partitions.push_back(i32());
    out.emplace_back(std::move(name), std::move(partitions));
  }
  return out;
}

}  // namespace

broker_console::broker_console(topic_manager& topics, coordinator::group_coordinator& groups,
                               const broker_config& config, broker_metrics& metrics,
                               replica_manager* replicas,
                               const cluster::cluster_membership* membership)
    : topics_(topics),
      groups_(groups),
      config_(config),
      metrics_(metrics),
      replicas_(replicas),
      membership_(membership) {}

std::vector<console_topic> broker_console::list_topics() const {
  std::vector<console_topic> out;
  auto guard = topics_.read_lock();
  const auto& logs = topics_.logs();
  for (const storage::topic_info* t : logs.topics())
    out.push_back(console_topic_of(logs, *t, false));
  std::sort(out.begin(), out.end(),
            [](const console_topic& a, const console_topic& b) { return a.name < b.name; });
  return out;
}

result<console_topic, console_error> broker_console::describe_topic(std::string_view name) const {
  auto guard = topics_.read_lock();
  const auto& logs = topics_.logs();
  const storage::topic_info* t = logs.find_topic(name);
  if (t == nullptr) {
    return fail(console_error{console_errc::not_found,
                              fmt::format("The topic '{}' does not exist.", name)});
  }
  return console_topic_of(logs, *t, true);
}

result<console_topic, console_error> broker_console::create_topic(const console_topic_spec& spec) {
  if (spec.name == reserved_metadata_topic) {
    return fail(console_error{
        console_errc::invalid,
        fmt::format("Creation of internal topic {} is prohibited.", reserved_metadata_topic)});
  }
  if (auto v = storage::validate_topic_name(spec.name); !v)
    return fail(console_error_of(v.error()));
  storage::config_map overrides;
  for (const auto& [k, v] : spec.configs) overrides[k] = v;
  auto guard = topics_.control_lock();
  auto& logs = topics_.logs();
  if (logs.find_topic(spec.name) != nullptr) {
    return fail(console_error{console_errc::conflict,
                              fmt::format("Topic '{}' already exists.", spec.name)});
  }
  const int32_t partitions =
      spec.partitions == -1 ? topics_.effective().num_partitions : spec.partitions;
  if (partitions <= 0) {
    return fail(console_error{console_errc::invalid,
                              "Number of partitions was set to an invalid non-positive value."});
  }
  if (partitions > max_partitions) {
    return fail(console_error{
        console_errc::invalid,
        fmt::format("The console creates at most {} partitions a topic.", max_partitions)});
  }
  if (auto v = storage::validate_topic_configs(overrides); !v) {
    return fail(console_error_of(v.error()));
  }
  if (auto v = storage::resolve_log_config(overrides, logs.broker_props()); !v) {
    return fail(console_error_of(v.error()));
  }
  for (const storage::topic_info* existing : logs.topics()) {
    if (storage::topics_collide(existing->name, spec.name)) {
      return fail(console_error{
          console_errc::invalid,
          fmt::format("Topic '{}' collides with existing topic: {}", spec.name, existing->name)});
    }
  }
  // In a cluster, as CreateTopics without a replication factor: default.replication.factor
  // replicas over the live brokers, led by this broker.
  std::vector<std::vector<int32_t>> assignment;
  if (replicas_ != nullptr) {
    const std::vector<int32_t> live = replica_candidates(membership_, config_.node_id);
    const int32_t rf = config_.default_replication_factor;
    assignment = place_partitions(config_.node_id, live, 0, partitions, rf);
    if (assignment.empty()) {
      return fail(console_error{console_errc::invalid,
                                replication_factor_error(rf, static_cast<int32_t>(live.size()))});
    }
  }
  // Out of Metadata answers until its partition states are written (being_created).
  topic_manager::creation_mark creating(topics_, spec.name);
  auto created = logs.create_topic(spec.name, partitions, overrides, wall_clock_ms());
  if (!created) return fail(console_error_of(created.error()));
  spdlog::info("created topic {} ({} partition(s), id {}) over HTTP", spec.name, partitions,
               (*created)->topic_id.to_string());
  if (replicas_ != nullptr) {
    // Their states in etcd: the followers open their logs when they see them.
    auto states =
        replicas_->create_partition_states((*created)->topic_id, (*created)->name, assignment, 0);
    if (!states) {
      spdlog::error("topic {}: partition states not written: {}", spec.name, states.error());
    }
  }
  return console_topic_of(logs, **created, true);
}

result<void, console_error> broker_console::delete_topic(std::string_view name) {
  if (!config_.delete_topic_enable) {
    return fail(console_error{console_errc::forbidden,
                              "Topic deletion is disabled (delete.topic.enable=false)."});
  }
  {
    auto guard = topics_.control_lock();
    auto& logs = topics_.logs();
    const storage::topic_info* topic = logs.find_topic(name);
    if (topic == nullptr) {
      return fail(console_error{console_errc::not_found,
                                fmt::format("The topic '{}' does not exist.", name)});
    }
    const storage::uuid topic_id = topic->topic_id;
    if (auto d = logs.delete_topic(name); !d) return fail(console_error_of(d.error()));
    if (replicas_ != nullptr) {
      // As DeleteTopics: its followers drop their copies when the states go.
      if (auto r = replicas_->delete_partition_states(topic_id); !r) {
        spdlog::error("topic {}: partition states not deleted: {}", name, r.error());
      }
    }
  }
  spdlog::info("deleted topic {} over HTTP", name);
  // Its committed offsets go too, as DeleteTopics does; after the lock, as there.
  groups_.on_topics_deleted({std::string(name)}, wall_clock_ms());
  return {};
}

result<console_topic, console_error> broker_console::alter_topic_configs(
    std::string_view name, const std::map<std::string, std::optional<std::string>>& changes) {
  auto guard = topics_.control_lock();
  auto& logs = topics_.logs();
  const storage::topic_info* t = logs.find_topic(name);
  if (t == nullptr) {
    return fail(console_error{console_errc::not_found,
                              fmt::format("The topic '{}' does not exist.", name)});
  }
  storage::config_map overrides = t->overrides;
  for (const auto& [key, value] : changes) {
    if (value) {
      overrides[key] = *value;
    } else {
      overrides.erase(key);
    }
  }
  if (auto v = storage::validate_topic_configs(overrides); !v) {
    return fail(console_error_of(v.error()));
  }
  if (auto s = logs.set_topic_config(name, overrides); !s) return fail(console_error_of(s.error()));
  spdlog::info("topic {}: configs altered over HTTP", name);
  return console_topic_of(logs, *logs.find_topic(name), true);
}

result<console_records, console_error> broker_console::read_records(
    const console_read_request& request) const {
  const int32_t max_records = std::clamp(request.max_records, 1, max_records_limit);
  const int64_t max_bytes = std::clamp(request.max_bytes, 1, max_bytes_limit);
  const auto deadline = std::chrono::steady_clock::now() + console_max_read_time;
  console_records out;
  int64_t offset = request.offset;
  int64_t returned_bytes = 0;
  for (int reads = 0; reads < console_max_reads; ++reads) {
    std::optional<storage::file_slice> slice;
    {
      auto guard = topics_.read_lock();
      const storage::log* log = topics_.logs().get_log(request.topic, request.partition);
      if (log == nullptr) {
        return fail(console_error{
            console_errc::not_found,
            fmt::format("The partition {}-{} does not exist.", request.topic, request.partition)});
      }
      std::lock_guard log_lock(log->mutex());
      out.log_start_offset = static_cast<int64_t>(log->log_start_offset());
      out.high_watermark = static_cast<int64_t>(log->high_watermark());
      if (reads == 0 && request.timestamp_ms) {
        auto found = log->find_offset_by_timestamp(*request.timestamp_ms, log->log_start_offset());
        if (!found) return fail(console_error_of(found.error()));
        offset = *found ? static_cast<int64_t>((*found)->offset) : out.high_watermark;
      }
      offset = std::max(offset, out.log_start_offset);
      if (offset >= out.high_watermark) break;
      auto read = log->read(offset, console_read_chunk_bytes, true);
      if (!read) return fail(console_error_of(read.error()));
      slice = read->slice;
    }
    if (!slice || slice->length <= 0) break;
    // The segment's descriptor is shared by the slice, so the bytes stay readable after the lock
    // is released even if the segment is deleted meanwhile.
    std::vector<uint8_t> bytes(static_cast<size_t>(slice->length));
    if (auto r = storage::read_slice(*slice, bytes); !r) return fail(console_error_of(r.error()));
    record::batch_reader batches(bytes);
    record::record_batch_view batch;
    bool full = false;
    int64_t next = offset;
    while (!full && batches.next(batch)) {
      next = std::max(next, batch.next_offset());
      if (batch.is_control()) continue;
      auto records = record::batch_records::open(batch, console_max_uncompressed_bytes);
      if (!records) {
        return fail(
            console_error{console_errc::internal,
                          fmt::format("batch at offset {} does not decode", batch.base_offset())});
      }
      auto reader = records->reader();
      record::record_view r;
      while (reader.next(r)) {
        const int64_t at = batch.base_offset() + r.offset_delta;
        if (at < offset) continue;
        const int64_t size = static_cast<int64_t>(r.size_bytes);
        if (static_cast<int32_t>(out.records.size()) >= max_records ||
            (!out.records.empty() && returned_bytes + size > max_bytes)) {
          full = true;
          next = at;
          break;
        }
        console_record c;
        c.partition = request.partition;
        c.offset = at;
        c.log_append_time = batch.timestamp_type() == record::timestamp_type::log_append_time;
        c.timestamp =
            c.log_append_time ? batch.max_timestamp() : batch.base_timestamp() + r.timestamp_delta;
        if (r.key) c.key = std::string(record::as_string(*r.key));
        if (r.value) c.value = std::string(record::as_string(*r.value));
        for (const auto& h : r.headers()) {
          console_record_header ch;
          ch.key = std::string(record::as_string(h.key));
          if (h.value) ch.value = std::string(record::as_string(*h.value));
          c.headers.push_back(std::move(ch));
        }
        returned_bytes += size;
        out.records.push_back(std::move(c));
      }
    }
    offset = next;
    if (full || static_cast<int32_t>(out.records.size()) >= max_records ||
        returned_bytes >= max_bytes || std::chrono::steady_clock::now() >= deadline) {
      break;
    }
  }
  out.next_offset = std::max(offset, out.log_start_offset);
  return out;
}

result<std::vector<console_batch>, console_error> broker_console::read_batches(
    std::string_view topic, int32_t partition, int64_t offset, int32_t max_batches) const {
  max_batches = std::clamp(max_batches, 1, 20);
  std::optional<storage::file_slice> slice;
  {
    auto guard = topics_.read_lock();
    const storage::log* log = topics_.logs().get_log(topic, partition);
    if (log == nullptr) {
      return fail(
          console_error{console_errc::not_found,
                        fmt::format("The partition {}-{} does not exist.", topic, partition)});
    }
    std::lock_guard log_lock(log->mutex());
    offset = std::max(offset, static_cast<int64_t>(log->log_start_offset()));
    if (offset >= static_cast<int64_t>(log->high_watermark())) return std::vector<console_batch>{};
    auto read = log->read(offset, console_read_chunk_bytes, true);
    if (!read) return fail(console_error_of(read.error()));
    slice = read->slice;
  }
  std::vector<console_batch> out;
  if (!slice || slice->length <= 0) return out;
  std::vector<uint8_t> bytes(static_cast<size_t>(slice->length));
  if (auto r = storage::read_slice(*slice, bytes); !r) return fail(console_error_of(r.error()));
  record::batch_reader batches(bytes);
  record::record_batch_view b;
  while (static_cast<int32_t>(out.size()) < max_batches && batches.next(b)) {
    console_batch c;
    c.base_offset = b.base_offset();
    c.batch_length = b.batch_length();
    c.partition_leader_epoch = b.partition_leader_epoch();
    c.magic = b.magic();
    c.crc = b.crc();
    c.crc_valid = b.crc_matches();
    c.attributes = b.attributes();
    c.compression = std::string(record::compression_name(b.compression()));
    c.log_append_time = b.timestamp_type() == record::timestamp_type::log_append_time;
    c.transactional = b.is_transactional();
    c.control = b.is_control();
    c.last_offset_delta = b.last_offset_delta();
    c.base_timestamp = b.base_timestamp();
    c.max_timestamp = b.max_timestamp();
    c.producer_id = b.producer_id();
    c.producer_epoch = b.producer_epoch();
    c.base_sequence = b.base_sequence();
    c.records_count = b.records_count();
    const auto raw = b.bytes();
    c.bytes_truncated = raw.size() > max_batch_bytes;
    c.bytes.assign(reinterpret_cast<const char*>(raw.data()),
                   std::min(raw.size(), max_batch_bytes));
    if (auto records = record::batch_records::open(b, console_max_uncompressed_bytes)) {
      auto reader = records->reader();
      record::record_view r;
      while (reader.next(r)) {
        c.records.push_back({static_cast<int32_t>(r.size_bytes), r.attributes, r.timestamp_delta,
                             r.offset_delta, r.key ? static_cast<int32_t>(r.key->size()) : -1,
                             r.value ? static_cast<int32_t>(r.value->size()) : -1, r.header_count});
      }
    }
    out.push_back(std::move(c));
  }
  return out;
}

result<int64_t, console_error> broker_console::produce_record(
    const console_produce_request& request) {
  if (is_internal_topic(request.topic)) {
    return fail(console_error{console_errc::invalid,
                              fmt::format("Cannot append to internal topic {}", request.topic)});
  }
  storage::log_config log_config;
  std::shared_ptr<topic_metrics> cells;
  {
    auto guard = topics_.read_lock();
    const storage::topic_info* t = topics_.logs().find_topic(request.topic);
    if (t == nullptr || request.partition < 0 || request.partition >= t->partitions) {
      return fail(console_error{
          console_errc::not_found,
          fmt::format("The partition {}-{} does not exist.", request.topic, request.partition)});
    }
    log_config = t->config;
    cells = metrics_.topic(t->name);
  }
  // The batch a producer would send: one record, offsets from 0, no producer id.
  const int64_t now = wall_clock_ms();
  std::vector<record::record_header> headers;
  for (const auto& h : request.headers) {
    headers.push_back({record::as_bytes(h.key),
                       h.value ? std::optional(record::as_bytes(*h.value)) : std::nullopt});
  }
  record::batch_builder_config builder_config;
  builder_config.batch_size = SIZE_MAX;
  record::batch_builder builder(builder_config);
  auto view = [](const std::optional<std::string>& s) {
    return s ? std::optional(record::as_bytes(*s)) : std::nullopt;
  };
  if (builder.try_append(now, view(request.key), view(request.value), headers) !=
      record::append_result::appended) {
    return fail(console_error{console_errc::invalid, "the record cannot be encoded"});
  }
  auto built = builder.build();
  if (!built) return fail(console_error{console_errc::internal, "the batch cannot be built"});
  std::vector<uint8_t> batch = std::move(*built);
  // Validation, as Produce does it: max.message.bytes, timestamps, the topic's codec (no lock).
  const std::string tp = fmt::format("{}-{}", request.topic, request.partition);
  storage::validation_context ctx{tp, &log_config, now};
  auto validated = storage::validate_batch(batch, ctx);
  if (!validated) {
    metrics_.all_topics.failed_produce_requests.add();
    cells->failed_produce_requests.add();
    return fail(console_error{console_errc::invalid, validated.error().message});
  }
  int64_t offset = 0;
  {
    auto guard = topics_.read_lock();
    storage::log* log = topics_.logs().get_log(request.topic, request.partition);
    if (log == nullptr) {
      return fail(console_error{console_errc::not_found, "the topic was deleted meanwhile"});
    }
    std::lock_guard log_lock(log->mutex());
    const leadership lead =
        leadership_of(replicas_, request.topic, request.partition, config_.node_id);
    if (!lead.serving) {
      return fail(console_error{
          console_errc::invalid,
          fmt::format("broker {} does not lead {}-{} (broker {} does)", config_.node_id,
                      request.topic, request.partition, lead.leader_id)});
    }
    offset = static_cast<int64_t>(log->log_end_offset());
    storage::assign_offsets(*validated, offset, lead.leader_epoch);
    if (auto a = log->append(validated->bytes, now); !a) return fail(console_error_of(a.error()));
  }
  for (topic_metrics* m : {&metrics_.all_topics, cells.get()}) {
    m->total_produce_requests.add();
    m->messages_in.add(static_cast<uint64_t>(validated->record_count));
    m->bytes_in.add(validated->bytes.size());
  }
  return offset;
}

result<console_group, console_error> broker_console::reset_group_offsets(
    const console_offset_reset& reset) {
  auto group = describe_group(reset.group_id);
  if (group && !group->members.empty()) {
    return fail(console_error{
        console_errc::conflict,
        fmt::format("Assignments can only be reset if the group '{}' is inactive, but the "
                    "current state is {}.",
                    reset.group_id, group->state)});
  }
  protocol::offset_commit_request request;
  request.group_id = reset.group_id;
  request.generation_id_or_member_epoch = -1;
  auto& topic = request.topics.emplace_back();
  topic.name = reset.topic;
  {
    auto guard = topics_.read_lock();
    const storage::topic_info* t = topics_.logs().find_topic(reset.topic);
    if (t == nullptr) {
      return fail(console_error{console_errc::not_found,
                                fmt::format("The topic '{}' does not exist.", reset.topic)});
    }
    std::vector<int32_t> partitions = reset.partitions;
    if (partitions.empty()) {
      for (int32_t p = 0; p < t->partitions; ++p) partitions.push_back(p);
    }
    for (int32_t p : partitions) {
      const storage::log* log = topics_.logs().get_log(reset.topic, p);
      if (log == nullptr) {
        return fail(
            console_error{console_errc::not_found,
                          fmt::format("The partition {}-{} does not exist.", reset.topic, p)});
      }
      const auto start = static_cast<int64_t>(log->log_start_offset());
      const auto end = static_cast<int64_t>(log->high_watermark());
      auto& part = topic.partitions.emplace_back();
      part.partition_index = p;
      switch (reset.to) {
        case console_offset_reset::target::earliest:
          part.committed_offset = start;
          break;
        case console_offset_reset::target::latest:
          part.committed_offset = end;
          break;
        case console_offset_reset::target::offset:
          part.committed_offset = std::clamp(reset.offset, start, end);
          break;
      }
    }
  }
  auto answer = groups_.offset_commit(request, 8, wall_clock_ms());
  for (const auto& t : answer.message.topics) {
    for (const auto& p : t.partitions) {
      if (p.error_code != 0) {
        return fail(console_error{p.error_code == 25 || p.error_code == 22 ? console_errc::conflict
                                                                           : console_errc::internal,
                                  fmt::format("OffsetCommit of {}-{} failed with error code {}",
                                              t.name, p.partition_index, p.error_code)});
      }
    }
  }
  spdlog::info("group {}: offsets of {} reset over HTTP", reset.group_id, reset.topic);
  return describe_group(reset.group_id);
}

std::vector<console_group> broker_console::list_groups() const {
  protocol::list_groups_request request;
  auto listed = groups_.list_groups(request, protocol::list_groups_request::max_version);
  std::map<std::string, console_group> by_id;
  for (const auto& g : listed.message.groups) {
    console_group& c = by_id[std::string(g.group_id)];
    c.group_id = g.group_id;
    c.state = g.group_state;
    c.group_type = g.group_type;
    c.protocol_type = g.protocol_type;
  }
  auto offsets = groups_.committed_offsets();
  auto guard = topics_.read_lock();
  for (const auto& o : offsets) {
    console_group& c = by_id[o.group];
    c.group_id = o.group;
    console_group_offset co{o.topic, o.partition, o.offset, -1, 0};
    if (const storage::log* log = topics_.logs().get_log(o.topic, o.partition)) {
      co.high_watermark = static_cast<int64_t>(log->high_watermark());
      co.lag = std::max<int64_t>(0, co.high_watermark - o.offset);
    }
    c.total_lag += co.lag;
    c.offsets.push_back(std::move(co));
  }
  std::vector<console_group> out;
  for (auto& [id, g] : by_id) out.push_back(std::move(g));
  return out;
}

result<console_group, console_error> broker_console::describe_group(
    std::string_view group_id) const {
  std::optional<console_group> found;
  for (auto& g : list_groups()) {
    if (g.group_id == group_id) found = std::move(g);
  }
  if (!found) {
    return fail(console_error{console_errc::not_found,
                              fmt::format("The group '{}' does not exist.", group_id)});
  }
  if (found->group_type != "consumer") {
    const std::string id(group_id);
    protocol::describe_groups_request request;
    request.groups.push_back(id);
    auto described = groups_.describe_groups(request, 5);
    for (const auto& g : described.message.groups) {
      if (g.error_code != 0) continue;
      found->state = g.group_state;
      found->protocol_type = g.protocol_type;
      found->protocol = g.protocol_data;
      for (const auto& m : g.members) {
        console_group_member cm;
        cm.member_id = m.member_id;
        if (m.group_instance_id) cm.group_instance_id = std::string(*m.group_instance_id);
        cm.client_id = m.client_id;
        cm.client_host = m.client_host;
        if (found->protocol_type == "consumer")
          cm.assignment = decode_consumer_assignment(m.member_assignment);
        found->members.push_back(std::move(cm));
      }
    }
  }
  return std::move(*found);
}

}  // namespace tarn::broker
