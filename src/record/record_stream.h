// The records of a compressed batch read through a decompress_stream, one at a time, as Kafka's
// DefaultRecordBatch streaming and skip-key-value iterators read them: memory holds a bounded
// window of decompressed bytes (plus one whole record when the caller asks for it), never the
// whole inflated section, and reading stops at the first bad record.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "record/compression.h"
#include "record/record.h"
#include "record/record_batch.h"

namespace tarn::record {

// A record whose key, value and headers were read past without being kept (Kafka's
// PartialDefaultRecord).
struct partial_record {
  int8_t attributes = 0;
  int64_t timestamp_delta = 0;
  int32_t offset_delta = 0;
  int32_t key_size = -1;  // -1: null
  int32_t value_size = -1;
  int32_t header_count = 0;
  size_t size_bytes = 0;  // the whole record, its length varint included
};

class record_stream {
 public:
  // The window of decompressed bytes kept while skipping.
  static constexpr size_t window_bytes = 64 * 1024;

  // Reads `section` (a batch's records section) in codec `type`. A record whose length exceeds
  // max_record_bytes is an error (batch_errc::record_too_large, Kafka's
  // max.decompressed.message.bytes); so is a stream that decompresses to more than
  // max_total_bytes.
  record_stream(compression_type type, bytes_view section, size_t max_record_bytes,
                size_t max_total_bytes = SIZE_MAX);

  // The next record with its key, value and headers checked and skipped; false at the end or at
  // an error.
  bool next(partial_record& out);
  // The next record whole; its views stay valid until the next call. The record's bytes are
  // gathered as they decompress, so a length that lies costs no more than the bytes present.
  bool next(record_view& out);
  // After the last wanted record: whether any decompressed byte follows (Kafka reads one byte to
  // see that recordsCount covered the stream). False at an error too.
  bool has_more();

  // Set once next() or has_more() failed: decompression_failed, bad_record or record_too_large.
  const std::optional<batch_error>& error() const { return error_; }
  // For bad_record, the record decoder's error, its position counted from the start of the
  // decompressed section (as record_reader counts).
  const std::optional<record_error>& record_fault() const { return record_fault_; }
  // Decompressed bytes consumed by the records read so far.
  size_t position() const { return position_; }

 private:
  // Makes at least `n` (<= window_bytes) bytes available unless the stream ends first; false only
  // at an error.
  bool fill(size_t n);
  size_t available() const { return end_ - begin_; }
  bool read_length(int32_t& length, size_t& varint_bytes);
  bool skip(size_t n);
  bool fail_record(record_errc code, size_t position);
  bool fail_codec(const codec_error& e);

  std::optional<decompress_stream> in_;
  compression_type type_;
  size_t max_record_bytes_;
  size_t max_total_bytes_;
  // Allocated at the first fill and never zeroed (bytes are read into it before they are
  // looked at): a stream per compressed batch, and zeroing 64 KiB for a 16 KiB batch was 2 %
  // of the broker's CPU under 100 B lz4 produce.
  std::unique_ptr<uint8_t[]> window_;
  size_t begin_ = 0;  // unread bytes are window_[begin_, end_)
  size_t end_ = 0;
  size_t position_ = 0;  // stream offset of window_[begin_]
  bool eof_ = false;
  int32_t records_read_ = 0;
  std::vector<uint8_t> record_;  // the record next(record_view&) returned
  std::optional<batch_error> error_;
  std::optional<record_error> record_fault_;
};

}  // namespace tarn::record
