// The consumer's record buffer and string pool (record_buffer.h).
#include "client/record_buffer.h"

#include <algorithm>

namespace tarn::client {

void record_buffer::borrow(std::shared_ptr<const void> memory) {
  if (empty()) clear();
  if (!holds_.empty()) holds_.back().end = records_.size();
  holds_.push_back({records_.size(), std::move(memory)});
}

void record_buffer::clear_records() {
  records_.clear();
  head_ = 0;
  // Only the last hold may have records added to it later; the others covered returned ones.
  if (holds_.size() > 1) holds_.erase(holds_.begin(), holds_.end() - 1);
}

void record_buffer::clear() {
  records_.clear();
  head_ = 0;
  holds_.clear();
}

void record_buffer::drop_released_holds() {
  // A hold other than the last whose records were all returned (or dropped) is let go.
  while (holds_.size() > 1 && holds_.front().end <= head_) holds_.pop_front();
}

void record_buffer::pop_into(consumer_records& out, size_t n) {
  out.clear();
  n = std::min(n, size());
  const auto first = records_.begin() + static_cast<std::ptrdiff_t>(head_);
  out.records_.assign(first, first + static_cast<std::ptrdiff_t>(n));
  // The holds covering [head_, head_ + n) go with them.
  for (size_t i = 0; i < holds_.size(); ++i) {
    const bool last = i + 1 == holds_.size();
    const size_t start = i == 0 ? 0 : holds_[i - 1].end;
    const size_t end = last ? records_.size() : holds_[i].end;
    if (end > head_ && start < head_ + n) out.buffers_.push_back(holds_[i].memory);
  }
  head_ += n;
  if (empty()) {
    clear();
  } else {
    drop_released_holds();
  }
}

void record_buffer::pop_into(std::vector<consumer_record>& out, size_t n) {
  n = std::min(n, size());
  out.reserve(out.size() + n);
  for (size_t i = head_; i < head_ + n; ++i) {
    const consumer_record_view& v = records_[i];
    consumer_record& r = out.emplace_back();
    take_string(r.topic, v.topic);
    r.partition = v.partition;
    r.offset = v.offset;
    r.timestamp = v.timestamp;
    r.log_append_time = v.log_append_time;
    r.delivery_count = v.delivery_count;
    take_string(r.key, v.key);
    take_string(r.value, v.value);
    if (!v.headers.empty()) {
      r.headers.reserve(v.headers.size());
      for (const auto& h : v.headers) {
        r.headers.emplace_back(std::string(h.key),
                               h.value ? std::optional<std::string>(*h.value) : std::nullopt);
      }
    }
  }
  head_ += n;
  if (empty()) {
    clear();
  } else {
    drop_released_holds();
  }
}

void record_buffer::recycle(std::vector<consumer_record>& records) {
  for (auto& r : records) {
    give(r.topic);
    give(r.key);
    give(r.value);
  }
  records.clear();
}

void record_buffer::take_string(std::string& out, std::string_view from) {
  if (!pool_.empty() && from.size() > std::string().capacity()) {
    out = std::move(pool_.back());
    pool_.pop_back();
    pooled_bytes_ -= out.capacity();
  }
  out.assign(from);
}

void record_buffer::take_string(std::optional<std::string>& out,
                                const std::optional<std::string_view>& from) {
  if (!from) {
    out.reset();
    return;
  }
  if (!out) out.emplace();
  take_string(*out, *from);
}

void record_buffer::give(std::string& s) {
  // Short strings live inside the std::string itself: nothing to keep.
  if (s.capacity() <= std::string().capacity()) return;
  if (s.capacity() > max_pooled_string_bytes) return;
  if (pooled_bytes_ + s.capacity() > max_pooled_bytes) return;
  pooled_bytes_ += s.capacity();
  pool_.push_back(std::move(s));
}

}  // namespace tarn::client
