// Record batch v2 (magic 2), the unit Kafka sends, stores and serves: views over a batch's bytes,
// the in-place setters the broker uses when it appends, validation, and iteration over the
// batches of a buffer and the records of a batch. The layout is drawn once in
// docs/record-batch.md (the picture and every field); the constants below are its byte
// positions. Big-endian throughout.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "base/strong_types.h"
#include "record/compression.h"
#include "record/record.h"

namespace tarn::record {

// Byte positions of the header fields (DefaultRecordBatch's *_OFFSET constants).
namespace batch_layout {
inline constexpr size_t base_offset = 0;              // int64
inline constexpr size_t batch_length = 8;             // int32, bytes after this field
inline constexpr size_t partition_leader_epoch = 12;  // int32
inline constexpr size_t magic = 16;                   // int8, 2
inline constexpr size_t crc = 17;                     // uint32, CRC-32C of attributes..end
inline constexpr size_t attributes = 21;              // int16
inline constexpr size_t last_offset_delta = 23;       // int32
inline constexpr size_t base_timestamp = 27;          // int64
inline constexpr size_t max_timestamp = 35;           // int64
inline constexpr size_t producer_id = 43;             // int64
inline constexpr size_t producer_epoch = 51;          // int16
inline constexpr size_t base_sequence = 53;           // int32
inline constexpr size_t records_count = 57;           // int32
inline constexpr size_t records = 61;                 // the records (compressed or not)
}  // namespace batch_layout

inline constexpr size_t record_batch_overhead = 61;  // the header (RECORD_BATCH_OVERHEAD)
inline constexpr size_t log_overhead = 12;           // baseOffset + batchLength (LOG_OVERHEAD)
inline constexpr int8_t magic_v2 = 2;
inline constexpr timestamp_ms no_timestamp = -1;
inline constexpr producer_id_t no_producer_id = -1;
inline constexpr producer_epoch_t no_producer_epoch = -1;
inline constexpr sequence_t no_sequence = -1;
inline constexpr leader_epoch_t no_partition_leader_epoch = -1;

// a + b with two's-complement wrap-around instead of undefined behaviour: offsets and timestamps
// read from untrusted bytes are added to deltas, and Kafka (Java longs) wraps the same way.
constexpr int64_t wrapping_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
constexpr int64_t wrapping_sub(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b));
}

// Attribute bits.
namespace batch_attributes {
inline constexpr uint16_t compression_mask = 0x07;  // bits 0-2: compression_type
inline constexpr uint16_t log_append_time = 0x08;   // bit 3: timestamp type
inline constexpr uint16_t transactional = 0x10;     // bit 4
inline constexpr uint16_t control = 0x20;           // bit 5
inline constexpr uint16_t delete_horizon = 0x40;    // bit 6: baseTimestamp is the delete horizon
}  // namespace batch_attributes

enum class timestamp_type : uint8_t { create_time = 0, log_append_time = 1 };

// A read-only view over the bytes of one batch. Any span can be viewed; the field accessors
// need has_header() (validate_batch_header checks it and more).
class record_batch_view {
 public:
  record_batch_view() = default;
  explicit record_batch_view(std::span<const uint8_t> bytes)
      : data_(bytes.data()), size_(bytes.size()) {}

  std::span<const uint8_t> bytes() const { return {data_, size_}; }
  size_t size_bytes() const { return size_; }
  bool has_header() const { return size_ >= record_batch_overhead; }

  int64_t base_offset() const { return load64(batch_layout::base_offset); }
  int32_t batch_length() const { return static_cast<int32_t>(load32(batch_layout::batch_length)); }
  int32_t partition_leader_epoch() const {
    return static_cast<int32_t>(load32(batch_layout::partition_leader_epoch));
  }
  int8_t magic() const { return static_cast<int8_t>(data_[batch_layout::magic]); }
  uint32_t crc() const { return load32(batch_layout::crc); }
  int16_t attributes() const { return static_cast<int16_t>(load16(batch_layout::attributes)); }
  int32_t last_offset_delta() const {
    return static_cast<int32_t>(load32(batch_layout::last_offset_delta));
  }
  int64_t base_timestamp() const { return load64(batch_layout::base_timestamp); }
  int64_t max_timestamp() const { return load64(batch_layout::max_timestamp); }
  int64_t producer_id() const { return load64(batch_layout::producer_id); }
  int16_t producer_epoch() const {
    return static_cast<int16_t>(load16(batch_layout::producer_epoch));
  }
  int32_t base_sequence() const {
    return static_cast<int32_t>(load32(batch_layout::base_sequence));
  }
  int32_t records_count() const {
    return static_cast<int32_t>(load32(batch_layout::records_count));
  }

  // Derived from the fields (wrapping, as Java's long arithmetic does, on corrupt values).
  int64_t last_offset() const { return wrapping_add(base_offset(), last_offset_delta()); }
  int64_t next_offset() const { return wrapping_add(last_offset(), 1); }
  // baseSequence + lastOffsetDelta, wrapping past INT32_MAX to 0 as Kafka's sequences do.
  int32_t last_sequence() const;
  // Bits 0-2; values above 4 are invalid (validate_batch_header rejects them).
  uint8_t compression_id() const { return attributes() & batch_attributes::compression_mask; }
  compression_type compression() const { return static_cast<compression_type>(compression_id()); }
  bool is_compressed() const { return compression_id() != 0; }
  record::timestamp_type timestamp_type() const {
    return (attributes() & batch_attributes::log_append_time)
               ? record::timestamp_type::log_append_time
               : record::timestamp_type::create_time;
  }
  bool is_transactional() const { return attributes() & batch_attributes::transactional; }
  bool is_control() const { return attributes() & batch_attributes::control; }
  bool has_delete_horizon() const { return attributes() & batch_attributes::delete_horizon; }
  bool has_producer_id() const { return producer_id() != no_producer_id; }

  // The records section (compressed when is_compressed()).
  std::span<const uint8_t> records_bytes() const {
    return {data_ + record_batch_overhead, size_ - record_batch_overhead};
  }

  // CRC-32C over attributes..end, the range the stored crc covers.
  uint32_t compute_crc() const;
  bool crc_matches() const { return compute_crc() == crc(); }

 protected:
  uint16_t load16(size_t at) const {
    return static_cast<uint16_t>((uint16_t{data_[at]} << 8) | data_[at + 1]);
  }
  uint32_t load32(size_t at) const {
    return (uint32_t{data_[at]} << 24) | (uint32_t{data_[at + 1]} << 16) |
           (uint32_t{data_[at + 2]} << 8) | data_[at + 3];
  }
  int64_t load64(size_t at) const {
    return static_cast<int64_t>((uint64_t{load32(at)} << 32) | load32(at + 4));
  }

  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
};

// A view that may rewrite the header in place, exactly as Kafka's DefaultRecordBatch setters do.
// The fields a broker assigns (baseOffset, partitionLeaderEpoch) lie before the CRC's range, so
// assigning them never touches the CRC.
class mutable_record_batch_view : public record_batch_view {
 public:
  mutable_record_batch_view() = default;
  explicit mutable_record_batch_view(std::span<uint8_t> bytes) : record_batch_view(bytes) {}

  std::span<uint8_t> mutable_bytes() const { return {mutable_data(), size_}; }

  // baseOffset = offset - lastOffsetDelta. The CRC is unchanged.
  void set_last_offset(int64_t offset);
  // The CRC is unchanged.
  void set_partition_leader_epoch(int32_t epoch);
  // Writes maxTimestamp and the timestamp-type bit and recomputes the CRC, but only when the type
  // or the value differs from what the batch holds (then nothing is written at all).
  void set_max_timestamp(record::timestamp_type type, int64_t max_timestamp);
  // Writes compute_crc() into the crc field.
  void update_crc();

 private:
  uint8_t* mutable_data() const {
    return const_cast<uint8_t*>(data_);
  }  // built from a mutable span
};

// Big-endian stores for building headers.
void store16(uint8_t* at, uint16_t v);
void store32(uint8_t* at, uint32_t v);
void store64(uint8_t* at, uint64_t v);

// ---- Validation -------------------------------------------------------------------------------

enum class batch_errc : uint8_t {
  too_small,                   // fewer bytes than the 61-byte header
  length_mismatch,             // batchLength + 12 is not the number of bytes of the batch
  bad_magic,                   // magic is not 2
  crc_mismatch,                // the stored CRC is not the CRC of attributes..end
  unknown_compression,         // compression bits 5, 6 or 7
  invalid_record_count,        // recordsCount negative (or not positive, offset_rule::producer)
  last_offset_delta_mismatch,  // lastOffsetDelta disagrees with recordsCount
  record_count_mismatch,       // the records present are not recordsCount records
  bad_record,                  // a record does not decode (the message says how)
  decompression_failed,        // the codec failed or the output exceeds the caller's bound
  record_too_large,            // a record's length exceeds the caller's per-record bound
};
std::string_view to_string(batch_errc code);

struct batch_error {
  batch_errc code{};
  std::string message;  // precise, with the numbers involved
};

// How recordsCount must agree with lastOffsetDelta.
enum class offset_rule : uint8_t {
  // As a producer builds a batch and Kafka's produce path demands (LogValidator.validateBatch):
  // recordsCount > 0 and lastOffsetDelta == recordsCount - 1.
  producer,
  // Batches read back from a log, which compaction may have thinned: recordsCount >= 0 and
  // lastOffsetDelta >= recordsCount - 1.
  stored,
};

// The header alone: size, batchLength, magic, compression bits, recordsCount vs lastOffsetDelta.
result<void, batch_error> validate_batch_header(record_batch_view batch, offset_rule rule);
// The header and the CRC: what Kafka checks before it appends (and what log recovery checks).
result<void, batch_error> validate_batch(record_batch_view batch, offset_rule rule);

struct records_summary {
  int32_t count = 0;
  // The offset deltas are exactly 0, 1, ..., count - 1. Kafka assigns offsets in place to a
  // compressed batch only when they are; otherwise it rebuilds the batch.
  bool offsets_in_order = true;
  int64_t max_timestamp = no_timestamp;  // the largest baseTimestamp + timestampDelta
  size_t uncompressed_bytes = 0;         // the records section after decompression
};

// Walks the records: each must decode, and there must be exactly recordsCount of them. A
// compressed batch is streamed (record_stream: keys, values and headers skipped, a 64 KiB window
// held, stopping at the first bad record); decompressing past `max_uncompressed_bytes` in all is
// an error. Meant for a batch whose header validated (a view shorter than the header is refused
// as too_small). Allocation-free for an uncompressed batch.
result<records_summary, batch_error> validate_records(record_batch_view batch,
                                                      size_t max_uncompressed_bytes);
// validate_batch and then validate_records.
result<records_summary, batch_error> validate_batch_full(record_batch_view batch, offset_rule rule,
                                                         size_t max_uncompressed_bytes);

// ---- Iteration --------------------------------------------------------------------------------

// The records section of a batch, decompressed when the batch is compressed (then this owns the
// decompressed bytes; otherwise it views the batch's). Move-only.
class batch_records {
 public:
  // Decompression output beyond max_uncompressed_bytes is an error.
  static result<batch_records, batch_error> open(record_batch_view batch,
                                                 size_t max_uncompressed_bytes);

  batch_records(batch_records&&) = default;
  batch_records& operator=(batch_records&&) = default;
  batch_records(const batch_records&) = delete;
  batch_records& operator=(const batch_records&) = delete;

  bytes_view bytes() const { return bytes_; }
  record_reader reader() const { return record_reader(bytes_); }

 private:
  batch_records() = default;
  std::vector<uint8_t> owned_;
  bytes_view bytes_;
};

// Why a batch_reader stopped.
enum class batch_stop : uint8_t {
  none,            // not stopped yet
  end,             // every byte was part of a batch
  truncated,       // the tail is shorter than 12 bytes, or than its batchLength says
  invalid_length,  // batchLength is below 49, too small for a v2 header
};
std::string_view to_string(batch_stop stop);

// Steps through the batches of a buffer (a segment file, a fetch response, a produce request's
// records) by the 12-byte baseOffset + batchLength prefix, without looking inside them.
//
//   batch_reader reader(buffer);
//   record_batch_view batch;
//   while (reader.next(batch)) { ... }
//   if (reader.stop() != batch_stop::end) { /* bytes from reader.position() on are invalid */ }
class batch_reader {
 public:
  explicit batch_reader(std::span<const uint8_t> buffer) : buffer_(buffer) {}
  // The next batch, exactly 12 + batchLength bytes (so has_header() holds); false at the end.
  // Its offset in the buffer is out.bytes().data() - buffer.data(), e.g. to make a
  // mutable_record_batch_view over the same bytes of a mutable buffer.
  bool next(record_batch_view& out);
  // Where the next batch starts; once stopped, where the bytes that are no batch begin.
  size_t position() const { return position_; }
  batch_stop stop() const { return stop_; }

 private:
  std::span<const uint8_t> buffer_;
  size_t position_ = 0;
  batch_stop stop_ = batch_stop::none;
};

}  // namespace tarn::record
