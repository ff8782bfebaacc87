// Building and reading __consumer_offsets records (group_records.h) with the generated codecs.
#include "coordinator/group_records.h"

#include <fmt/format.h>

#include <algorithm>

#include "coordinator/share_group_records.h"
#include "protocol/reader.h"
#include "protocol/records/group_metadata_key.h"
#include "protocol/records/group_metadata_value.h"
#include "protocol/records/legacy_offset_commit_key.h"
#include "protocol/records/offset_commit_key.h"
#include "protocol/records/offset_commit_value.h"
#include "protocol/writer.h"

namespace tarn::coordinator {

using protocol::error_code;

namespace {

// The value versions Kafka 4.4 writes (docs/groups.md): OffsetCommitValue v4 (its topic id a
// tagged field, left out while zero), or v1 when the commit carries an expire timestamp
// (OffsetCommit v2-4's RetentionTimeMs); GroupMetadataValue v3.
constexpr int16_t offset_commit_value_version = 4;
constexpr int16_t offset_commit_value_version_with_expiry = 1;
constexpr int16_t group_metadata_value_version = 3;
// Keys are not versioned beyond their record type: their struct is always version 0.
constexpr int16_t key_struct_version = 0;

template <class M>
std::vector<uint8_t> encode_with_version(const M& m, int16_t prefix, int16_t version) {
  std::vector<uint8_t> out;
  out.reserve(2 + m.encoded_size(version));
  protocol::writer w(out);
  w.write_int16(prefix);
  m.encode(w, version);
  return out;
}

std::vector<uint8_t> offset_key(std::string_view group_id, std::string_view topic,
                                int32_t partition) {
  protocol::offset_commit_key k;
  k.group = group_id;
  k.topic = topic;
  k.partition = partition;
  return encode_with_version(k, record_type_offset_commit, key_struct_version);
}

std::vector<uint8_t> group_key(std::string_view group_id) {
  protocol::group_metadata_key k;
  k.group = group_id;
  return encode_with_version(k, record_type_group_metadata, key_struct_version);
}

}  // namespace

coordinator_record offset_commit_record(std::string_view group_id, std::string_view topic,
                                        int32_t partition, const offset_and_metadata& offset) {
  protocol::offset_commit_value v;
  v.offset = offset.committed_offset;
  v.leader_epoch = offset.leader_epoch;
  v.metadata = offset.metadata;
  v.commit_timestamp = offset.commit_timestamp_ms;
  const int16_t version = offset.expire_timestamp_ms ? offset_commit_value_version_with_expiry
                                                     : offset_commit_value_version;
  if (offset.expire_timestamp_ms) v.expire_timestamp = *offset.expire_timestamp_ms;
  std::copy(offset.topic_id.begin(), offset.topic_id.end(), std::begin(v.topic_id.bytes));
  return {offset_key(group_id, topic, partition), encode_with_version(v, version, version)};
}

coordinator_record offset_commit_tombstone(std::string_view group_id, std::string_view topic,
                                           int32_t partition) {
  return {offset_key(group_id, topic, partition), std::nullopt};
}

coordinator_record group_metadata_record(const classic_group& group) {
  protocol::group_metadata_value v;
  v.protocol_type = group.protocol_type() ? std::string_view(*group.protocol_type()) : "";
  v.generation = group.generation();
  v.protocol = group.protocol_name() ? std::optional<std::string_view>(*group.protocol_name())
                                     : std::nullopt;
  v.leader = group.leader() ? std::optional<std::string_view>(*group.leader()) : std::nullopt;
  v.current_state_timestamp = group.current_state_timestamp_ms();
  static const std::vector<uint8_t> no_metadata;
  for (const auto& [id, m] : group.members()) {
    protocol::group_metadata_value::member_metadata mm;
    mm.member_id = id;
    if (m.group_instance_id) mm.group_instance_id = *m.group_instance_id;
    mm.client_id = m.client_id;
    mm.client_host = m.client_host;
    mm.rebalance_timeout = m.rebalance_timeout_ms;
    mm.session_timeout = m.session_timeout_ms;
    const auto* md = group.protocol_name() ? m.metadata(*group.protocol_name()) : nullptr;
    mm.subscription = md ? protocol::bytes_view(*md) : protocol::bytes_view(no_metadata);
    mm.assignment = m.assignment;
    v.members.push_back(mm);
  }
  return {group_key(group.group_id()),
          encode_with_version(v, group_metadata_value_version, group_metadata_value_version)};
}

coordinator_record group_metadata_tombstone(std::string_view group_id) {
  return {group_key(group_id), std::nullopt};
}

result<loaded_record, std::string> decode_record(std::span<const uint8_t> key,
                                                 std::optional<std::span<const uint8_t>> value) {
  protocol::reader kr(key);
  const int16_t type = kr.read_int16();
  if (!kr.ok()) return fail(std::string("record key shorter than its type"));

  auto value_version = [&](protocol::reader& vr) -> std::optional<int16_t> {
    const int16_t v = vr.read_int16();
    if (!vr.ok()) return std::nullopt;
    return v;
  };

  if (type == record_type_offset_commit || type == record_type_legacy_offset_commit) {
    auto k = protocol::offset_commit_key::decode(kr, key_struct_version);
    if (!k) return fail(std::string("OffsetCommitKey does not decode"));
    loaded_offset_commit out;
    out.group_id = std::string(k->group);
    out.topic = std::string(k->topic);
    out.partition = k->partition;
    if (value) {
      protocol::reader vr(*value);
      auto version = value_version(vr);
      if (!version || *version < protocol::offset_commit_value::min_version ||
          *version > protocol::offset_commit_value::max_version) {
        return fail(fmt::format("OffsetCommitValue version {} unknown", version.value_or(-1)));
      }
      auto v = protocol::offset_commit_value::decode(vr, *version);
      if (!v) return fail(std::string("OffsetCommitValue does not decode"));
      offset_and_metadata om;
      om.committed_offset = v->offset;
      om.leader_epoch = v->leader_epoch;
      om.metadata = std::string(v->metadata);
      om.commit_timestamp_ms = v->commit_timestamp;
      if (*version == 1 && v->expire_timestamp != -1) om.expire_timestamp_ms = v->expire_timestamp;
      std::copy(std::begin(v->topic_id.bytes), std::end(v->topic_id.bytes), om.topic_id.begin());
      out.value = std::move(om);
    }
    return loaded_record(std::move(out));
  }

  if (type == record_type_group_metadata) {
    auto k = protocol::group_metadata_key::decode(kr, key_struct_version);
    if (!k) return fail(std::string("GroupMetadataKey does not decode"));
    loaded_group_metadata out;
    out.group_id = std::string(k->group);
    if (value) {
      protocol::reader vr(*value);
      auto version = value_version(vr);
      if (!version || *version < protocol::group_metadata_value::min_version ||
          *version > protocol::group_metadata_value::max_version) {
        return fail(fmt::format("GroupMetadataValue version {} unknown", version.value_or(-1)));
      }
      auto v = protocol::group_metadata_value::decode(vr, *version);
      if (!v) return fail(std::string("GroupMetadataValue does not decode"));
      classic_group_snapshot s;
      s.protocol_type = std::string(v->protocol_type);
      s.generation = v->generation;
      if (v->protocol && !v->protocol->empty()) s.protocol_name = std::string(*v->protocol);
      if (v->leader && !v->leader->empty()) s.leader = std::string(*v->leader);
      s.current_state_timestamp_ms = v->current_state_timestamp;
      for (const auto& mm : v->members) {
        classic_member m;
        m.member_id = std::string(mm.member_id);
        if (mm.group_instance_id) m.group_instance_id = std::string(*mm.group_instance_id);
        m.client_id = std::string(mm.client_id);
        m.client_host = std::string(mm.client_host);
        m.rebalance_timeout_ms =
            mm.rebalance_timeout < 0 ? mm.session_timeout : mm.rebalance_timeout;
        m.session_timeout_ms = mm.session_timeout;
        m.protocol_type = s.protocol_type;
        // Only the selected protocol's metadata is stored (Kafka does the same).
        if (s.protocol_name) {
          m.protocols.push_back({*s.protocol_name, std::vector<uint8_t>(mm.subscription.begin(),
                                                                        mm.subscription.end())});
        }
        m.assignment.assign(mm.assignment.begin(), mm.assignment.end());
        s.members.push_back(std::move(m));
      }
      out.value = std::move(s);
    }
    return loaded_record(std::move(out));
  }

  if (is_share_group_record_type(type)) return loaded_record(loaded_share_group_record{type});
  if (type >= 3) {
    // KIP-848 records: every key struct starts with the group id (a non-compact string).
    const std::string_view group = kr.read_string(false);
    if (!kr.ok()) return fail(fmt::format("record type {} key does not decode", type));
    return loaded_record(loaded_consumer_group_record{type, std::string(group)});
  }
  return fail(fmt::format("unknown record type {}", type));
}

error_code append_error_to_response_error(error_code e) {
  switch (e) {
    case error_code::network_exception:
      return error_code::coordinator_load_in_progress;
    case error_code::unknown_topic_or_partition:
    case error_code::not_enough_replicas:
    case error_code::request_timed_out:
      return error_code::coordinator_not_available;
    case error_code::not_leader_or_follower:
    case error_code::kafka_storage_error:
      return error_code::not_coordinator;
    case error_code::message_too_large:
    case error_code::record_list_too_large:
    case error_code::invalid_fetch_size:
      return error_code::unknown_server_error;
    default:
      return e;
  }
}

}  // namespace tarn::coordinator
