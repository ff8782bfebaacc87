// The consumer's fetched records not yet returned by poll(), and a pool of the strings of
// records that poll() got back from the caller, so that decoding a record reuses a string's
// memory instead of allocating (a malloc and a free a record value were ~15% of the consumer's
// CPU at 1 KiB records, docs/benchmarks.md).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "tarn/consumer.h"

namespace tarn::client {

class record_buffer {
 public:
  // What the pool keeps at most: strings whose capacity is above max_pooled_string_bytes go
  // back to the allocator, and the pool holds at most max_pooled_bytes of capacity in all.
  static constexpr size_t max_pooled_string_bytes = 64 * 1024;
  static constexpr size_t max_pooled_bytes = 8 * 1024 * 1024;

  bool empty() const { return head_ == records_.size(); }
  size_t size() const { return records_.size() - head_; }

  // A new record at the end, every field empty.
  consumer_record& emplace_back();
  // `size` bytes at `data` in a string from the pool when it has one.
  std::string take_string(const void* data, size_t size);

  // Drops the buffered records `drop` returns true for.
  template <typename Predicate>
  void drop_if(Predicate drop) {
    size_t kept = head_;
    for (size_t i = head_; i < records_.size(); ++i) {
      if (drop(records_[i])) continue;
      if (kept != i) records_[kept] = std::move(records_[i]);
      ++kept;
    }
    records_.resize(kept);
    if (empty()) clear();
  }
  void clear();

  // Moves the oldest min(n, size()) records to the end of `out`.
  void pop_into(std::vector<consumer_record>& out, size_t n);
  // Takes the strings of `records` into the pool and empties it (its capacity stays).
  void recycle(std::vector<consumer_record>& records);

  size_t pooled_strings() const { return pool_.size(); }

 private:
  void give(std::string& s);
  void give(std::optional<std::string>& s) {
    if (s) give(*s);
  }

  std::vector<consumer_record> records_;
  size_t head_ = 0;  // records_[0, head_) were returned already
  std::vector<std::string> pool_;
  size_t pooled_bytes_ = 0;
};

}  // namespace tarn::client
