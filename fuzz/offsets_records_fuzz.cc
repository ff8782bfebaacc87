// libFuzzer target for the group coordinator's reading of __consumer_offsets: the input is a
// sequence of records as the partition holds them, each
//   u8 flags (bit 0: tombstone) | u16 key length | key | (unless a tombstone) u16 value length |
//   value
// (lengths big-endian; a record cut short ends the sequence). Every record goes through
// coordinator::decode_record; then the whole sequence is the only partition of a coordinator's
// __consumer_offsets and group_coordinator::load() replays it as at a broker's start (offset
// commits, classic groups restored from GroupMetadataValue, KIP-848 groups through
// consumer_group::replay for record types 3-16), after which the loaded groups are described,
// listed, their offsets fetched, a member of each classic group heartbeats and leaves, a new
// member joins each consumer group, and a day passes (session timeouts, rebalances, offset
// expiry). Every answer is encoded. Whatever the bytes: no crash, no sanitizer report, no leak.
// Oracles: an offset commit that decodes re-encodes (offset_commit_record) to a record that
// decodes to the same commit; a classic group's GroupMetadataValue, once restored and written
// again (group_metadata_record), is a fixed point of restore-and-write.
// Seeds: fuzz/corpus/offsets_records_fuzz, Kafka 4.4.0's own records from
// tests/fixtures/offsets-records/*.bin (one record per seed, plus the records of one group in
// sequence), framed as above.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <variant>
#include <vector>

#include "coordinator/classic_group.h"
#include "coordinator/group_coordinator.h"
#include "coordinator/group_records.h"

namespace {

using namespace tarn::coordinator;
namespace p = tarn::protocol;

struct input_record {
  std::span<const uint8_t> key;
  std::optional<std::span<const uint8_t>> value;
};

std::vector<input_record> split(std::span<const uint8_t> in) {
  std::vector<input_record> out;
  size_t pos = 0;
  auto u16 = [&](size_t& n) {
    if (in.size() - pos < 2) return false;
    n = (size_t{in[pos]} << 8) | in[pos + 1];
    pos += 2;
    return in.size() - pos >= n;
  };
  while (pos < in.size()) {
    const bool tombstone = in[pos++] & 1;
    size_t n = 0;
    if (!u16(n)) break;
    input_record r;
    r.key = in.subspan(pos, n);
    pos += n;
    if (!tombstone) {
      if (!u16(n)) break;
      r.value = in.subspan(pos, n);
      pos += n;
    }
    out.push_back(r);
  }
  return out;
}

// One partition holding the input's records; appends are accepted (and dropped).
class input_log final : public offsets_log {
 public:
  explicit input_log(const std::vector<input_record>& records) : records_(records) {}
  tarn::result<int32_t, p::error_code> ensure_topic() override { return 1; }
  std::optional<int32_t> partitions() const override { return 1; }
  tarn::result<tarn::offset_t, p::error_code> append(int32_t, std::vector<uint8_t>,
                                                     std::optional<uint32_t>) override {
    return tarn::offset_t{static_cast<int64_t>(records_.size()) + appends_++};
  }
  tarn::result<void, std::string> replay(
      int32_t partition, const std::function<void(const offsets_record&)>& fn) override {
    if (partition != 0) return {};
    int64_t offset = 0;
    for (const auto& r : records_) fn({tarn::offset_t{offset++}, r.key, r.value, -1, std::nullopt});
    return {};
  }

 private:
  const std::vector<input_record>& records_;
  int64_t appends_ = 0;
};

// Two topics whose names the golden records use, with fixed ids.
class fixed_metadata final : public metadata_view {
 public:
  fixed_metadata() {
    for (const char* name : {"orders", "t"}) {
      topic_description t;
      t.name = name;
      t.partitions = 4;
      t.id.fill(static_cast<uint8_t>(topics_.size() + 1));
      topics_.push_back(t);
    }
  }
  std::optional<topic_description> topic(std::string_view name) const override {
    for (const auto& t : topics_) {
      if (t.name == name) return t;
    }
    return std::nullopt;
  }
  std::optional<topic_description> topic_by_id(const topic_uuid& id) const override {
    for (const auto& t : topics_) {
      if (t.id == id) return t;
    }
    return std::nullopt;
  }
  std::vector<topic_description> topics() const override { return topics_; }

 private:
  std::vector<topic_description> topics_;
};

// Encodes an answer at the version it was made for (its views must all be alive).
template <class M>
void encode(const M& m, int16_t version) {
  std::vector<uint8_t> out;
  p::writer w(out);
  m.encode(w, version);
  if (out.size() != m.encoded_size(version)) std::abort();
}

bool same_commit(const offset_and_metadata& a, const offset_and_metadata& b) {
  return a.committed_offset == b.committed_offset && a.leader_epoch == b.leader_epoch &&
         a.metadata == b.metadata && a.commit_timestamp_ms == b.commit_timestamp_ms &&
         a.expire_timestamp_ms == b.expire_timestamp_ms && a.topic_id == b.topic_id;
}

void check_offset_commit(const loaded_offset_commit& oc) {
  const coordinator_record again =
      oc.value ? offset_commit_record(oc.group_id, oc.topic, oc.partition, *oc.value)
               : offset_commit_tombstone(oc.group_id, oc.topic, oc.partition);
  std::optional<std::span<const uint8_t>> value;
  if (again.value) value = std::span<const uint8_t>(*again.value);
  auto decoded = decode_record(again.key, value);
  if (!decoded) std::abort();
  const auto* back = std::get_if<loaded_offset_commit>(&*decoded);
  if (back == nullptr || back->group_id != oc.group_id || back->topic != oc.topic ||
      back->partition != oc.partition || back->value.has_value() != oc.value.has_value()) {
    std::abort();
  }
  if (oc.value && !same_commit(*back->value, *oc.value)) std::abort();
}

// Restores the snapshot into a group and writes its GroupMetadataValue.
coordinator_record rewrite(const std::string& group_id, classic_group_snapshot snapshot) {
  classic_group g(group_id, 0);
  g.restore(std::move(snapshot), 0);
  return group_metadata_record(g);
}

void check_group_metadata(const loaded_group_metadata& gm) {
  if (!gm.value) return;
  const coordinator_record once = rewrite(gm.group_id, *gm.value);
  if (!once.value) std::abort();
  auto decoded = decode_record(once.key, std::span<const uint8_t>(*once.value));
  if (!decoded) std::abort();
  const auto* back = std::get_if<loaded_group_metadata>(&*decoded);
  if (back == nullptr || back->group_id != gm.group_id || !back->value) std::abort();
  const coordinator_record twice = rewrite(gm.group_id, *back->value);
  if (twice.key != once.key || twice.value != once.value) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::vector<input_record> records = split({data, size});
  std::set<std::string> classic_ids, consumer_ids;
  struct member_at {
    std::string group_id;
    std::string member_id;
    int32_t generation;
  };
  std::vector<member_at> classic_members;  // a few, to heartbeat
  for (const auto& r : records) {
    auto decoded = decode_record(r.key, r.value);
    if (!decoded) continue;
    if (const auto* oc = std::get_if<loaded_offset_commit>(&*decoded)) {
      check_offset_commit(*oc);
      classic_ids.insert(oc->group_id);
    } else if (const auto* gm = std::get_if<loaded_group_metadata>(&*decoded)) {
      check_group_metadata(*gm);
      classic_ids.insert(gm->group_id);
      if (gm->value) {
        for (const auto& m : gm->value->members) {
          if (classic_members.size() < 8) {
            classic_members.push_back({gm->group_id, m.member_id, gm->value->generation});
          }
        }
      }
    } else if (const auto* cg = std::get_if<loaded_consumer_group_record>(&*decoded)) {
      consumer_ids.insert(cg->group_id);
    }
  }

  group_config config;
  config.offsets_topic_num_partitions = 1;
  config.group_initial_rebalance_delay_ms = 0;
  input_log log(records);
  fixed_metadata metadata;
  group_coordinator coordinator(config, log, metadata);
  const int64_t now = 1'700'000'000'000;
  coordinator.load(now);

  std::vector<std::string_view> all_ids;
  for (const auto& id : classic_ids) all_ids.push_back(id);
  for (const auto& id : consumer_ids) all_ids.push_back(id);
  auto describe_everything = [&] {
    p::describe_groups_request dg;
    dg.groups = all_ids;
    dg.include_authorized_operations = true;
    encode(coordinator.describe_groups(dg, p::describe_groups_request::max_version).message,
           p::describe_groups_request::max_version);
    p::consumer_group_describe_request cd;
    cd.group_ids = all_ids;
    encode(coordinator.consumer_group_describe(cd, p::consumer_group_describe_request::max_version)
               .message,
           p::consumer_group_describe_request::max_version);
    encode(coordinator.list_groups(p::list_groups_request{}, p::list_groups_request::max_version)
               .message,
           p::list_groups_request::max_version);
    for (std::string_view id : all_ids) {
      p::offset_fetch_request of;
      of.groups.emplace_back().group_id = id;
      encode(coordinator.offset_fetch(of, 8, now).message, 8);
    }
  };
  describe_everything();

  // Members of the loaded classic groups heartbeat at their generation, then the first leaves.
  for (const auto& m : classic_members) {
    p::heartbeat_request hb;
    hb.group_id = m.group_id;
    hb.member_id = m.member_id;
    hb.generation_id = m.generation;
    encode(coordinator.heartbeat(hb, 4, now).message, 4);
  }
  if (!classic_members.empty()) {
    p::leave_group_request leave;
    leave.group_id = classic_members.front().group_id;
    leave.members.push_back({classic_members.front().member_id, std::nullopt, "fuzz"});
    encode(coordinator.leave_group(leave, 5, now).message, 5);
  }
  // A new member joins each consumer group.
  for (const auto& id : consumer_ids) {
    p::consumer_group_heartbeat_request h;
    h.group_id = id;
    h.member_id = "fuzz-member-0000000000";
    h.member_epoch = 0;
    h.rebalance_timeout_ms = 30000;
    h.subscribed_topic_names = std::vector<std::string_view>{"orders", "t"};
    h.topic_partitions = std::vector<p::consumer_group_heartbeat_request::topic_partitions_data>{};
    encode(coordinator.consumer_group_heartbeat(h, 1, {"fuzz", "/127.0.0.1"}, now).message, 1);
  }
  // A day later: sessions expired, rebalances timed out, offsets past their retention.
  coordinator.poll(now + 1000);
  coordinator.poll(now + 24LL * 3600 * 1000);
  coordinator.poll(now + 8LL * 24 * 3600 * 1000);
  describe_everything();
  return 0;
}
