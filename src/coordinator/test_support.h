// In-memory stand-ins for the broker's side of the coordinator's seams, for unit tests: an
// offsets_log that keeps each partition's batches in memory (and can be told to fail), and a
// metadata_view over a fixed set of topics.
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "coordinator/metadata_view.h"
#include "coordinator/offsets_log.h"
#include "record/record_batch.h"
#include "record/record_stream.h"

namespace tarn::coordinator::testing {

class memory_offsets_log : public offsets_log {
 public:
  explicit memory_offsets_log(int32_t partitions = 0) {
    if (partitions > 0) partitions_ = partitions;
  }

  result<int32_t, protocol::error_code> ensure_topic() override {
    if (!partitions_) partitions_ = create_partitions;
    return *partitions_;
  }
  std::optional<int32_t> partitions() const override { return partitions_; }

  result<offset_t, protocol::error_code> append(int32_t partition, std::vector<uint8_t> batch,
                                                std::optional<uint32_t>) override {
    if (on_append) on_append();
    if (fail_with != protocol::error_code::none) return fail(fail_with);
    auto& batches = batches_[partition];
    offset_t& next = next_offset_[partition];
    // Assign offsets as the log does: the base offset is not covered by the CRC.
    for (int i = 0; i < 8; ++i)
      batch[static_cast<size_t>(i)] = static_cast<uint8_t>(next >> (56 - 8 * i));
    record::record_batch_view view(batch);
    next = view.next_offset();
    batches.push_back(std::move(batch));
    ++appends;
    return view.last_offset();
  }

  result<void, protocol::error_code> delete_records_before(int32_t partition,
                                                           offset_t offset) override {
    offset_t& start = log_start_[partition];
    start = std::max(start, offset);
    return {};
  }
  offset_t log_start(int32_t partition) { return log_start_[partition]; }

  result<void, std::string> replay(int32_t partition,
                                   const std::function<void(const offsets_record&)>& fn) override {
    if (on_replay) on_replay();
    for (const auto& b : batches_[partition]) {
      record::record_batch_view view(b);
      if (view.last_offset() < log_start_[partition]) continue;
      record::record_stream stream(view.compression(), view.records_bytes(), SIZE_MAX);
      record::record_view r;
      while (stream.next(r)) {
        offsets_record out;
        out.offset = view.base_offset() + r.offset_delta;
        out.key = r.key.value_or(record::bytes_view{});
        if (r.value) out.value = *r.value;
        fn(out);
      }
    }
    return {};
  }

  // Every record of every partition (for assertions on what was written).
  std::vector<std::pair<std::vector<uint8_t>, std::optional<std::vector<uint8_t>>>> records() {
    std::vector<std::pair<std::vector<uint8_t>, std::optional<std::vector<uint8_t>>>> out;
    for (auto& [p, bs] : batches_) {
      (void)replay(p, [&](const offsets_record& r) {
        std::optional<std::vector<uint8_t>> v;
        if (r.value) v.emplace(r.value->begin(), r.value->end());
        out.emplace_back(std::vector<uint8_t>(r.key.begin(), r.key.end()), std::move(v));
      });
    }
    return out;
  }

  // The topic is deleted (DeleteTopics): no partitions, no records, until ensure_topic().
  void drop() {
    partitions_.reset();
    batches_.clear();
    next_offset_.clear();
  }

  int32_t create_partitions = 50;
  protocol::error_code fail_with = protocol::error_code::none;
  int appends = 0;
  std::function<void()> on_append;  // called first in every append (a test may block there)
  std::function<void()> on_replay;  // called first in every replay

 private:
  std::optional<int32_t> partitions_;
  std::map<int32_t, std::vector<std::vector<uint8_t>>> batches_;
  std::map<int32_t, offset_t> next_offset_;
  std::map<int32_t, offset_t> log_start_;
};

class memory_metadata : public metadata_view {
 public:
  void add(const std::string& name, int32_t partitions) {
    topic_description t;
    t.name = name;
    t.partitions = partitions;
    t.id[0] = static_cast<uint8_t>(topics_.size() + 1);
    t.id[15] = 0x42;
    topics_[name] = t;
  }
  std::optional<topic_description> topic(std::string_view name) const override {
    auto it = topics_.find(std::string(name));
    if (it == topics_.end()) return std::nullopt;
    return it->second;
  }
  std::optional<topic_description> topic_by_id(const topic_uuid& id) const override {
    for (const auto& [n, t] : topics_) {
      if (t.id == id) return t;
    }
    return std::nullopt;
  }
  std::vector<topic_description> topics() const override {
    std::vector<topic_description> out;
    for (const auto& [n, t] : topics_) out.push_back(t);
    return out;
  }

 private:
  std::map<std::string, topic_description> topics_;
};

}  // namespace tarn::coordinator::testing
