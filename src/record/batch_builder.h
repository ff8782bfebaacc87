// Builds one v2 record batch, record by record, with the producer's size rule (Kafka's
// MemoryRecordsBuilder.hasRoomFor): the first record always goes in; a later one is refused when
// the batch would then exceed batch_size. The size that counts is the encoded batch: the 61-byte
// header plus every encoded record.
//
// Compressed batches: the final size is unknown until the codec runs, so, as Kafka does, the
// records already in are counted at their uncompressed size times estimated_compression_ratio
// times 1.05, and the new record at its full uncompressed size.
// The producer keeps the ratio per topic from the batches it built (Kafka's
// CompressionRatioEstimator); the default 1.0 counts the uncompressed size (plus 5%), which can
// only make batches smaller than batch_size, never larger.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "base/result.h"
#include "base/strong_types.h"
#include "record/compression.h"
#include "record/record.h"
#include "record/record_batch.h"

namespace tarn::record {

struct batch_builder_config {
  size_t batch_size = 16384;  // batch.size
  compression_type compression = compression_type::none;
  int compression_level = -1;                // < 0: the codec's Kafka default
  double estimated_compression_ratio = 1.0;  // compressed / uncompressed, used only when compressed
  offset_t base_offset = 0;                  // producers send 0; the broker assigns offsets
  leader_epoch_t partition_leader_epoch = no_partition_leader_epoch;
  producer_id_t producer_id = no_producer_id;
  producer_epoch_t producer_epoch = no_producer_epoch;
  sequence_t base_sequence = no_sequence;
  bool transactional = false;
  bool control = false;
  record::timestamp_type timestamp_type = record::timestamp_type::create_time;
  timestamp_ms log_append_time = no_timestamp;  // maxTimestamp of a log_append_time batch
  // Compress each record as it is appended (compress_stream) rather than all at build(), so the
  // builder holds the compressed batch, not the records: the broker's rebuild of a batch in the
  // topic's codec. The size rule still counts the uncompressed records.
  bool compress_as_appended = false;
  // With compress_as_appended: the batch's bytes past this many are counted, not kept, and build()
  // fails; last_built_size_bytes() then gives the whole size. (The stream writes into the
  // builder's buffer: a builder in this mode must not be moved.)
  size_t max_output_bytes = SIZE_MAX;
  // A compressed batch whose records compress well holds many times batch_size before the codec
  // runs (the size rule scales them by the ratio): a record that would take the uncompressed
  // batch over this many bytes is refused (batch_full) however well they compress. The producer
  // sets max.request.size, bounding the memory a batch holds.
  size_t max_uncompressed_bytes = SIZE_MAX;
};

enum class append_result : uint8_t {
  appended,
  batch_full,  // the batch would exceed batch_size: seal it and start a new one
  too_large,   // the record cannot be encoded at all (its body is over 2 GiB)
};

class batch_builder {
 public:
  explicit batch_builder(const batch_builder_config& config);

  // Appends a record at the next offset delta, with the producer's size rule. Nothing changes
  // unless it returns appended.
  append_result try_append(timestamp_ms timestamp, std::optional<bytes_view> key,
                           std::optional<bytes_view> value,
                           std::span<const record_header> headers = {});

  int32_t record_count() const { return count_; }
  bool empty() const { return count_ == 0; }
  // What try_append compares with batch_size (exact when uncompressed).
  size_t estimated_size_bytes() const;
  // 61 + the records before compression.
  size_t uncompressed_size_bytes() const {
    return stream_ ? record_batch_overhead + streamed_bytes_ : buffer_.size();
  }
  // The size of the batch the last build() made (or, with compress_as_appended, would have made
  // had it fit in max_output_bytes).
  size_t last_built_size_bytes() const { return last_built_size_; }
  // The uncompressed bytes a full batch holds under the size rule and the estimated ratio
  // (batch_size when uncompressed), bounded by max_uncompressed_bytes: what the builder reserves up
  // front.
  static size_t expected_capacity_bytes(const batch_builder_config& config);

  // Compresses the records if configured, writes the header, computes the CRC last over the
  // finished bytes and returns the batch (no bytes at all when no record was appended). The builder
  // is empty afterwards, its config kept (a new batch needs a new base_sequence: use a new
  // builder).
  result<std::vector<uint8_t>, codec_error> build();

 private:
  size_t estimate(size_t uncompressed_bytes) const;
  void reset();

  batch_builder_config config_;
  std::vector<uint8_t> buffer_;  // 61 bytes reserved for the header, then the encoded records
                                 // (compress_as_appended: the compressed records)
  std::optional<compress_stream> stream_;  // compress_as_appended only
  std::optional<codec_error> stream_error_;
  std::vector<uint8_t> scratch_;  // one encoded record on its way into stream_
  size_t streamed_bytes_ = 0;     // encoded records written to stream_
  size_t last_built_size_ = 0;
  int32_t count_ = 0;
  timestamp_ms base_timestamp_ = no_timestamp;
  timestamp_ms max_timestamp_ = no_timestamp;
};

}  // namespace tarn::record
