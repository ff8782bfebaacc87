// The consumer's records: consumer_record, which owns its bytes, and records that borrow the
// consumer's fetch buffers instead of copying out of them: what
// consumer::poll(consumer_records&, ...) fills. A view's topic, key, value and headers point into
// the bytes the broker sent (or into the decompressed batch), which stay alive while the
// consumer_records that returned them holds them: until it is cleared, destroyed or passed to
// poll() again. Moving the consumer_records elsewhere keeps them valid (even past the consumer's
// own life), so a batch can be handed to another thread and released there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tarn::client {

class record_buffer;

// A record that owns its bytes: what consumer::poll() returns by default.
struct consumer_record {
  std::string topic;
  int32_t partition = 0;
  int64_t offset = 0;
  int64_t timestamp = -1;
  bool log_append_time = false;  // the timestamp is the broker's (LogAppendTime)
  // How many times a share group has handed this record out, this time included (Java's
  // ConsumerRecord.deliveryCount()); nullopt for a consumer's records (tarn/share_consumer.h).
  std::optional<int16_t> delivery_count;
  std::optional<std::string> key;
  std::optional<std::string> value;
  std::vector<std::pair<std::string, std::optional<std::string>>> headers;
};

// One header of a record: the key is never null, the value may be.
struct record_header_view {
  std::string_view key;
  std::optional<std::string_view> value;
};

// A record's headers, decoded as they are walked (the consumer validated their encoding when it
// decoded the record, so walking them cannot fail).
class record_headers_view {
 public:
  class iterator {
   public:
    using value_type = record_header_view;
    using difference_type = std::ptrdiff_t;
    using iterator_category = std::input_iterator_tag;
    using pointer = const record_header_view*;
    using reference = const record_header_view&;

    iterator() = default;
    iterator(const unsigned char* p, int32_t left) : p_(p), left_(left) { load(); }
    reference operator*() const { return current_; }
    pointer operator->() const { return &current_; }
    iterator& operator++() {
      --left_;
      load();
      return *this;
    }
    bool operator==(const iterator& o) const { return left_ == o.left_; }

   private:
    // A zigzag varint of at most 5 bytes (the record decoder checked it).
    int32_t read_varint() {
      uint32_t v = 0;
      for (int shift = 0; shift < 35; shift += 7) {
        const unsigned char b = *p_++;
        v |= static_cast<uint32_t>(b & 0x7f) << shift;
        if (b < 0x80) break;
      }
      return static_cast<int32_t>((v >> 1) ^ (0u - (v & 1u)));
    }
    void load() {
      if (left_ <= 0) {
        left_ = 0;
        return;
      }
      const int32_t key_size = read_varint();
      current_.key = {reinterpret_cast<const char*>(p_), static_cast<size_t>(key_size)};
      p_ += key_size;
      const int32_t value_size = read_varint();
      if (value_size < 0) {
        current_.value.reset();
      } else {
        current_.value.emplace(reinterpret_cast<const char*>(p_), static_cast<size_t>(value_size));
        p_ += value_size;
      }
    }

    const unsigned char* p_ = nullptr;
    int32_t left_ = 0;
    record_header_view current_;
  };

  record_headers_view() = default;
  // `count` headers encoded at `data` as a v2 record holds them (validated by the caller).
  record_headers_view(const unsigned char* data, int32_t count) : data_(data), count_(count) {}
  size_t size() const { return static_cast<size_t>(count_); }
  bool empty() const { return count_ == 0; }
  iterator begin() const { return {data_, count_}; }
  iterator end() const { return {}; }

 private:
  const unsigned char* data_ = nullptr;
  int32_t count_ = 0;
};

// consumer_record's fields as views; to_record() copies it into an owning consumer_record.
struct consumer_record_view {
  std::string_view topic;
  int32_t partition = 0;
  int64_t offset = 0;
  int64_t timestamp = -1;
  bool log_append_time = false;           // the timestamp is the broker's (LogAppendTime)
  std::optional<int16_t> delivery_count;  // share groups only (consumer_record's)
  std::optional<std::string_view> key;
  std::optional<std::string_view> value;
  record_headers_view headers;

  consumer_record to_record() const;
};

inline consumer_record consumer_record_view::to_record() const {
  consumer_record r;
  r.topic = std::string(topic);
  r.partition = partition;
  r.offset = offset;
  r.timestamp = timestamp;
  r.log_append_time = log_append_time;
  r.delivery_count = delivery_count;
  if (key) r.key = std::string(*key);
  if (value) r.value = std::string(*value);
  for (const auto& h : headers) {
    r.headers.emplace_back(
        std::string(h.key),
        h.value ? std::optional<std::string>(std::string(*h.value)) : std::nullopt);
  }
  return r;
}

// The records of one poll() and the fetch buffers they borrow (Java's ConsumerRecords). Move-only;
// clear() or destruction gives the buffers back to the consumer, which reuses them for later
// fetches.
class consumer_records {
 public:
  consumer_records() = default;
  consumer_records(consumer_records&&) noexcept = default;
  consumer_records& operator=(consumer_records&&) noexcept = default;
  consumer_records(const consumer_records&) = delete;
  consumer_records& operator=(const consumer_records&) = delete;
  ~consumer_records() = default;

  size_t size() const { return records_.size(); }
  bool empty() const { return records_.empty(); }
  const consumer_record_view& operator[](size_t i) const { return records_[i]; }
  const consumer_record_view& front() const { return records_.front(); }
  const consumer_record_view& back() const { return records_.back(); }
  std::vector<consumer_record_view>::const_iterator begin() const { return records_.begin(); }
  std::vector<consumer_record_view>::const_iterator end() const { return records_.end(); }

  // Drops the records and releases the buffers they borrow (the views are invalid after).
  void clear() {
    records_.clear();
    buffers_.clear();
  }

 private:
  friend class record_buffer;  // the consumer's side (src/client/record_buffer.h) fills it
  std::vector<consumer_record_view> records_;
  std::vector<std::shared_ptr<const void>> buffers_;  // what keeps the views' bytes alive
};

}  // namespace tarn::client
