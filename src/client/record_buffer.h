// The consumer's fetched records not yet returned by poll(), as views into the fetch arenas
// they were decoded from (fetch_arena.h), with a hold on each arena while a record borrows it.
// poll() hands them out either as they are (consumer_records, the arenas' holds going with them)
// or copied into owning consumer_records, whose strings come from a pool of the strings the
// caller passed back, so that copying a record reuses a string's memory instead of allocating (a
// malloc and a free a record value were ~15% of the consumer's CPU at 1 KiB records).
#pragma once

#include <cstddef>
#include <deque>
#include <memory>
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

  // The records added from now on borrow `memory` (kept alive until they are dropped or handed
  // out, and then by whoever holds them).
  void borrow(std::shared_ptr<const void> memory);
  // A new record at the end, every field empty; it borrows the memory of the last borrow().
  consumer_record_view& emplace_back() {
    if (head_ > 0 && head_ == records_.size()) clear_records();
    return records_.emplace_back();
  }

  // Drops the buffered records `drop` returns true for.
  template <typename Predicate>
  void drop_if(Predicate drop) {
    size_t kept = head_;
    size_t h = 0;  // the hold of records_[at]: the first whose end is past it
    for (size_t at = head_; at < records_.size(); ++at) {
      for (; h + 1 < holds_.size() && holds_[h].end <= at; ++h) holds_[h].end = kept;
      if (drop(records_[at])) continue;
      records_[kept++] = records_[at];
    }
    for (; h + 1 < holds_.size(); ++h) holds_[h].end = kept;
    records_.resize(kept);
    if (empty()) {
      clear();
    } else {
      drop_released_holds();
    }
  }
  void clear();

  // Moves the oldest min(n, size()) records into `out` (replacing what it held) with holds on
  // the memory they borrow.
  void pop_into(consumer_records& out, size_t n);
  // Copies the oldest min(n, size()) records to the end of `out` as owning records, their
  // strings from the pool.
  void pop_into(std::vector<consumer_record>& out, size_t n);
  // Takes the strings of `records` into the pool and empties it (its capacity stays).
  void recycle(std::vector<consumer_record>& records);

  size_t pooled_strings() const { return pool_.size(); }
  // Memory held for buffered records (for tests).
  size_t holds() const { return holds_.size(); }

 private:
  // records_[previous hold's end, end) borrow `memory`; the last hold's end is records_.size()
  // (its `end` is not kept up to date).
  struct hold {
    size_t end = 0;
    std::shared_ptr<const void> memory;
  };

  void clear_records();
  void drop_released_holds();
  // `size` bytes at `data` into `out`, in a string from the pool when it has one.
  void take_string(std::string& out, std::string_view from);
  void take_string(std::optional<std::string>& out, const std::optional<std::string_view>& from);
  void give(std::string& s);
  void give(std::optional<std::string>& s) {
    if (s) give(*s);
  }

  std::vector<consumer_record_view> records_;
  size_t head_ = 0;  // records_[0, head_) were returned already
  std::deque<hold> holds_;
  std::vector<std::string> pool_;
  size_t pooled_bytes_ = 0;
};

}  // namespace tarn::client
