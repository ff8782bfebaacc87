// The consumer's record buffer and string pool (record_buffer.h).
#include "client/record_buffer.h"

#include <algorithm>
#include <iterator>

namespace tarn::client {

consumer_record& record_buffer::emplace_back() {
  if (head_ > 0 && head_ == records_.size()) clear();
  return records_.emplace_back();
}

std::string record_buffer::take_string(const void* data, size_t size) {
  const char* chars = static_cast<const char*>(data);
  if (pool_.empty()) return std::string(chars, size);
  std::string s = std::move(pool_.back());
  pool_.pop_back();
  pooled_bytes_ -= s.capacity();
  s.assign(chars, size);
  return s;
}

void record_buffer::clear() {
  records_.clear();
  head_ = 0;
}

void record_buffer::pop_into(std::vector<consumer_record>& out, size_t n) {
  n = std::min(n, size());
  out.reserve(out.size() + n);
  const auto first = records_.begin() + static_cast<std::ptrdiff_t>(head_);
  std::move(first, first + static_cast<std::ptrdiff_t>(n), std::back_inserter(out));
  head_ += n;
  if (empty()) clear();
}

void record_buffer::recycle(std::vector<consumer_record>& records) {
  for (auto& r : records) {
    give(r.topic);
    give(r.key);
    give(r.value);
  }
  records.clear();
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
