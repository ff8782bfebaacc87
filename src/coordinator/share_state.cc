// __share_group_state records, batch merging and replay (see share_state.h).
#include "coordinator/share_state.h"

#include <algorithm>
#include <iterator>
#include <set>

#include "base/uuid.h"
#include "coordinator/wire_ids.h"
#include "protocol/messages/share_snapshot_key.h"
#include "protocol/messages/share_snapshot_value.h"
#include "protocol/messages/share_update_key.h"
#include "protocol/messages/share_update_value.h"
#include "protocol/reader.h"
#include "protocol/writer.h"
#include "record/batch_builder.h"

namespace tarn::coordinator {

namespace {

std::string topic_id_text(const topic_uuid& id) {
  uuid u;
  for (int i = 0; i < 8; ++i) u.most_significant_bits = (u.most_significant_bits << 8) | id[i];
  for (int i = 8; i < 16; ++i) {
    u.least_significant_bits = (u.least_significant_bits << 8) | id[i];
  }
  return u.to_string();
}

// Java's String.hashCode: s[0]*31^(n-1) + ... over UTF-16 code units. The text is UTF-8 (a
// group id from the wire); a malformed byte counts as U+FFFD, as Java's decoder replaces it.
int32_t java_string_hash(std::string_view text) {
  uint32_t h = 0;
  auto add = [&h](uint32_t unit) { h = h * 31U + unit; };
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const auto* end = p + text.size();
  while (p < end) {
    uint32_t cp = 0xFFFD;
    int len = 1;
    if (*p < 0x80) {
      cp = *p;
    } else if ((*p >> 5) == 0x6 && end - p >= 2 && (p[1] & 0xC0) == 0x80) {
      cp = ((p[0] & 0x1FU) << 6) | (p[1] & 0x3FU);
      len = 2;
    } else if ((*p >> 4) == 0xE && end - p >= 3 && (p[1] & 0xC0) == 0x80 && (p[2] & 0xC0) == 0x80) {
      cp = ((p[0] & 0x0FU) << 12) | ((p[1] & 0x3FU) << 6) | (p[2] & 0x3FU);
      len = 3;
    } else if ((*p >> 3) == 0x1E && end - p >= 4 && (p[1] & 0xC0) == 0x80 &&
               (p[2] & 0xC0) == 0x80 && (p[3] & 0xC0) == 0x80) {
      cp = ((p[0] & 0x07U) << 18) | ((p[1] & 0x3FU) << 12) | ((p[2] & 0x3FU) << 6) | (p[3] & 0x3FU);
      len = 4;
    }
    if (cp >= 0x10000) {
      cp -= 0x10000;
      add(0xD800 + (cp >> 10));
      add(0xDC00 + (cp & 0x3FF));
    } else {
      add(cp);
    }
    p += len;
  }
  return static_cast<int32_t>(h);
}

template <typename Value>
std::vector<state_batch> batches_of(const Value& v) {
  std::vector<state_batch> out;
  out.reserve(v.state_batches.size());
  for (const auto& b : v.state_batches) {
    out.push_back({b.first_offset, b.last_offset, b.delivery_state, b.delivery_count});
  }
  return out;
}

template <typename Value>
void set_batches(Value& v, const std::vector<state_batch>& batches) {
  for (const auto& b : batches) {
    typename Value::state_batch out;
    out.first_offset = b.first_offset;
    out.last_offset = b.last_offset;
    out.delivery_state = b.delivery_state;
    out.delivery_count = b.delivery_count;
    v.state_batches.push_back(out);
  }
}

template <typename Message>
std::vector<uint8_t> framed(int16_t version, const Message& m, int16_t message_version) {
  std::vector<uint8_t> out;
  out.reserve(2 + m.encoded_size(message_version));
  protocol::writer w(out);
  w.write_int16(version);
  m.encode(w, message_version);
  return out;
}

}  // namespace

int32_t share_state_partition_for(const share_partition_key& key, int32_t num_partitions) {
  if (num_partitions <= 0) return 0;
  return share_state_partition_for_text(
      key.group_id + ":" + topic_id_text(key.topic_id) + ":" + std::to_string(key.partition),
      num_partitions);
}

int32_t share_state_partition_for_text(std::string_view text, int32_t num_partitions) {
  if (num_partitions <= 0) return 0;
  // Kafka's Utils.abs: Math.abs, with INT_MIN (whose absolute value is not an int) as 0.
  const int32_t hash = java_string_hash(text);
  const int32_t positive = hash == INT32_MIN ? 0 : (hash < 0 ? -hash : hash);
  return positive % num_partitions;
}

std::vector<uint8_t> encode_share_state_key(int16_t record_type, const share_partition_key& key) {
  // ShareSnapshotKey and ShareUpdateKey have the same fields; the type in front tells them apart.
  protocol::share_snapshot_key k;
  k.group_id = key.group_id;
  k.topic_id = to_wire(key.topic_id);
  k.partition = key.partition;
  return framed(record_type, k, 0);
}

std::vector<uint8_t> encode_share_snapshot_value(const share_group_offset& state) {
  protocol::share_snapshot_value v;
  v.snapshot_epoch = state.snapshot_epoch;
  v.state_epoch = state.state_epoch;
  v.leader_epoch = state.leader_epoch;
  v.start_offset = state.start_offset;
  v.delivery_complete_count = state.delivery_complete_count;
  v.create_timestamp = state.create_timestamp_ms;
  v.write_timestamp = state.write_timestamp_ms;
  set_batches(v, state.state_batches);
  return framed(share_state_value_version, v, share_state_value_version);
}

std::vector<uint8_t> encode_share_update_value(const share_group_offset& delta) {
  protocol::share_update_value v;
  v.snapshot_epoch = delta.snapshot_epoch;
  v.leader_epoch = delta.leader_epoch;
  v.start_offset = delta.start_offset;
  v.delivery_complete_count = delta.delivery_complete_count;
  set_batches(v, delta.state_batches);
  return framed(share_state_value_version, v, share_state_value_version);
}

std::vector<uint8_t> build_share_state_batch(std::span<const uint8_t> key,
                                             std::optional<std::span<const uint8_t>> value,
                                             int64_t now_ms) {
  record::batch_builder_config bc;
  bc.batch_size = record::record_batch_overhead + 64 + key.size() + (value ? value->size() : 0);
  record::batch_builder builder(bc);
  builder.try_append(now_ms, record::bytes_view(key),
                     value ? std::optional<record::bytes_view>(*value) : std::nullopt);
  auto built = builder.build();
  return built ? std::move(*built) : std::vector<uint8_t>{};
}

std::vector<state_batch> combine_state_batches(std::span<const state_batch> current,
                                               std::span<const state_batch> updates,
                                               int64_t start_offset) {
  // Kafka's PersisterStateBatchCombiner: where batches overlap, the one with the higher delivery
  // count wins, then the one with the higher delivery state (so a record never goes back to an
  // earlier delivery). A sweep over the batches' edges with the batches open at each point: a
  // request may carry very many batches (bounded by its bytes), so no search per batch.
  using priority = std::pair<int16_t, int8_t>;  // (delivery count, delivery state)
  struct edge {
    int64_t at;  // the first offset it opens, or the offset after the one it closes
    bool open;
    priority p;
  };
  std::vector<edge> edges;
  edges.reserve(2 * (current.size() + updates.size()));
  auto add = [&edges](const state_batch& b) {
    if (b.first_offset > b.last_offset) return;
    edges.push_back({b.first_offset, true, {b.delivery_count, b.delivery_state}});
    // A batch ending at INT64_MAX never closes (nothing lies past it).
    if (b.last_offset != INT64_MAX) {
      edges.push_back({b.last_offset + 1, false, {b.delivery_count, b.delivery_state}});
    }
  };
  for (const auto& b : current) add(b);
  for (const auto& b : updates) add(b);
  std::sort(edges.begin(), edges.end(), [](const edge& a, const edge& b) { return a.at < b.at; });
  std::multiset<priority> open;
  std::vector<state_batch> out;
  auto emit = [&out, start_offset](int64_t first, int64_t last, const priority& p) {
    if (last < start_offset) return;
    first = std::max(first, start_offset);
    if (!out.empty() && out.back().last_offset + 1 == first &&
        out.back().delivery_count == p.first && out.back().delivery_state == p.second) {
      out.back().last_offset = last;
    } else {
      out.push_back({first, last, p.second, p.first});
    }
  };
  for (size_t i = 0; i < edges.size();) {
    const int64_t at = edges[i].at;
    for (; i < edges.size() && edges[i].at == at; ++i) {
      if (edges[i].open) {
        open.insert(edges[i].p);
      } else {
        open.erase(open.find(edges[i].p));
      }
    }
    if (open.empty()) continue;
    const int64_t last = i < edges.size() ? edges[i].at - 1 : INT64_MAX;
    emit(at, last, *open.rbegin());
  }
  return out;
}

std::vector<state_batch> changed_state_batches(std::span<const state_batch> before,
                                               std::span<const state_batch> after) {
  std::vector<state_batch> out;
  size_t i = 0;
  for (const state_batch& a : after) {
    int64_t at = a.first_offset;
    while (at <= a.last_offset) {
      while (i < before.size() && before[i].last_offset < at) ++i;
      // [at, seg_end] is covered by `a` and by at most one run of `before` (or none).
      int64_t seg_end = a.last_offset;
      bool same = false;
      if (i < before.size() && before[i].first_offset <= at) {
        seg_end = std::min(seg_end, before[i].last_offset);
        same = before[i].delivery_state == a.delivery_state &&
               before[i].delivery_count == a.delivery_count;
      } else if (i < before.size()) {
        seg_end = std::min(seg_end, before[i].first_offset - 1);
      }
      if (!same) {
        if (!out.empty() && out.back().last_offset + 1 == at &&
            out.back().delivery_state == a.delivery_state &&
            out.back().delivery_count == a.delivery_count) {
          out.back().last_offset = seg_end;
        } else {
          out.push_back({at, seg_end, a.delivery_state, a.delivery_count});
        }
      }
      if (seg_end == INT64_MAX) break;
      at = seg_end + 1;
    }
  }
  return out;
}

void share_state_replay::apply(int64_t offset, std::span<const uint8_t> key,
                               std::optional<std::span<const uint8_t>> value) {
  protocol::reader kr(key);
  const int16_t type = kr.read_int16();
  if (!kr.ok()) {
    ++skipped_;
    return;
  }
  if (type != share_snapshot_record_type && type != share_update_record_type) return;
  auto k = protocol::share_snapshot_key::decode(kr, 0);
  if (!k) {
    ++skipped_;
    return;
  }
  share_partition_key pk{std::string(k->group_id), from_wire(k->topic_id), k->partition};
  if (!value) {
    // A tombstone (Kafka writes one, of the ShareSnapshot key, when the share group's state is
    // deleted; tarn before 2026-12-07 wrote one of each key: both remove).
    states_.erase(pk);
    return;
  }
  protocol::reader vr(*value);
  const int16_t version = vr.read_int16();
  if (!vr.ok() || version != share_state_value_version) {
    ++skipped_;
    return;
  }
  if (type == share_snapshot_record_type) {
    auto v = protocol::share_snapshot_value::decode(vr, version);
    if (!v) {
      ++skipped_;
      return;
    }
    auto [it, fresh] = states_.try_emplace(pk);
    entry& e = it->second;
    e.state = {v->snapshot_epoch,          v->state_epoch,      v->leader_epoch,    v->start_offset,
               v->delivery_complete_count, v->create_timestamp, v->write_timestamp, batches_of(*v)};
    count_share_snapshot(e.updates_since_snapshot, updates_per_snapshot_);
    e.snapshot_offset = offset;
    e.leader_epoch_fence =
        fresh ? v->leader_epoch : std::max(e.leader_epoch_fence, v->leader_epoch);
    e.state_epoch_fence = fresh ? v->state_epoch : std::max(e.state_epoch_fence, v->state_epoch);
    return;
  }
  auto v = protocol::share_update_value::decode(vr, version);
  if (!v) {
    ++skipped_;
    return;
  }
  auto it = states_.find(pk);
  const std::vector<state_batch> updates = batches_of(*v);
  if (it == states_.end()) {
    // An update without its snapshot (Kafka takes it as the state).
    entry& e = states_[pk];
    e.state.snapshot_epoch = v->snapshot_epoch;
    e.state.leader_epoch = v->leader_epoch;
    e.state.start_offset = v->start_offset;
    e.state.delivery_complete_count = v->delivery_complete_count;
    e.state.state_batches = combine_state_batches({}, updates, v->start_offset);
    e.snapshot_offset = offset;
    e.leader_epoch_fence = v->leader_epoch;
    count_share_update(e.updates_since_snapshot);
    return;
  }
  it->second.leader_epoch_fence = std::max(it->second.leader_epoch_fence, v->leader_epoch);
  share_group_offset& s = it->second.state;
  if (v->start_offset != -1) s.start_offset = v->start_offset;
  if (v->leader_epoch != -1) s.leader_epoch = v->leader_epoch;
  // Kafka's ShareCoordinatorShard.merge takes an update's count as it is, -1 included.
  s.delivery_complete_count = v->delivery_complete_count;
  s.state_batches = combine_state_batches(s.state_batches, updates, s.start_offset);
  count_share_update(it->second.updates_since_snapshot);
}

}  // namespace tarn::coordinator
