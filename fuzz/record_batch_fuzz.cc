// libFuzzer target for the v2 batch decoder: the input is a buffer of batches (a segment or a
// produce request's records). Each batch is validated (header, CRC, records with decompression
// bounded at 1 MiB), opened and iterated record by record with every header read. Checks the
// decoder's own invariants: a batch whose records validate yields exactly recordsCount records
// that use every byte; every decoded field lies inside the bytes it was decoded from; the
// streaming reader (record_stream, skipping and whole) yields the same records as the in-memory
// one, or fails where it fails.
// Seeds: fuzz/corpus/record_batch_fuzz.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>

#include "record/record_batch.h"
#include "record/record_stream.h"

namespace {

// Aborts with the broken invariant named, so a crash report says which.
void require(bool holds, const char* invariant) {
  if (!holds) {
    std::fprintf(stderr, "record_batch_fuzz: invariant broken: %s\n", invariant);
    std::abort();
  }
}

constexpr size_t max_uncompressed_bytes = 1024 * 1024;

void check_inside(std::span<const uint8_t> outer, std::span<const uint8_t> inner) {
  if (inner.empty()) return;
  require(
      inner.data() >= outer.data() && inner.data() + inner.size() <= outer.data() + outer.size(),
      "a decoded field lies inside its input");
}

void walk_batch(tarn::record::record_batch_view batch) {
  using namespace tarn::record;
  if (!batch.has_header()) {
    // Views shorter than the header are refused, never read past.
    require(!validate_batch(batch, offset_rule::stored) && !validate_records(batch, 1) &&
                !batch_records::open(batch, 1),
            "a view shorter than the header is refused");
    return;
  }
  // The accessors and derived values Kafka's tools print, on arbitrary header bytes.
  (void)batch.last_offset();
  (void)batch.next_offset();
  (void)batch.last_sequence();
  (void)batch.compute_crc();

  (void)validate_batch_header(batch, offset_rule::stored);
  (void)validate_batch(batch, offset_rule::producer);
  auto summary = validate_records(batch, max_uncompressed_bytes);

  auto records = batch_records::open(batch, max_uncompressed_bytes);
  if (!records) {
    require(!summary, "records that validate can be opened");
    return;
  }
  require(!batch.is_compressed() || records->bytes().size() <= max_uncompressed_bytes,
          "decompression stays within its bound");
  record_reader reader = records->reader();
  record_view r;
  int64_t count = 0;
  while (reader.next(r)) {
    ++count;
    if (r.key) check_inside(records->bytes(), *r.key);
    if (r.value) check_inside(records->bytes(), *r.value);
    check_inside(records->bytes(), r.header_bytes);
    int32_t headers = 0;
    for (const record_header& h : r.headers()) {
      check_inside(r.header_bytes, h.key);
      if (h.value) check_inside(r.header_bytes, *h.value);
      ++headers;
    }
    require(headers == r.header_count, "headers() yields header_count headers");
  }
  require(reader.position() <= records->bytes().size(), "the record reader stays in bounds");

  // The streams agree with the in-memory reader over the same decompressed bytes.
  record_stream skipping(batch.compression(), batch.records_bytes(), SIZE_MAX);
  record_stream whole(batch.compression(), batch.records_bytes(), SIZE_MAX);
  record_reader again = records->reader();
  partial_record p;
  record_view w;
  int64_t streamed = 0;
  while (again.next(r)) {
    require(skipping.next(p) && whole.next(w), "a record that decodes in memory streams");
    require(p.offset_delta == r.offset_delta && p.timestamp_delta == r.timestamp_delta &&
                p.size_bytes == r.size_bytes && p.header_count == r.header_count,
            "a skipped record has the decoded record's fields");
    require(w.size_bytes == r.size_bytes && w.key.has_value() == r.key.has_value() &&
                w.value.has_value() == r.value.has_value(),
            "a streamed whole record is the decoded record");
    ++streamed;
  }
  if (again.error()) {
    require(!skipping.next(p) && skipping.error().has_value(),
            "a record that does not decode fails the skipping stream");
    require(!whole.next(w) && whole.error().has_value(),
            "a record that does not decode fails the whole-record stream");
  } else {
    require(!skipping.next(p) && !skipping.error() && !skipping.has_more(),
            "the skipping stream ends where the records do");
    require(skipping.position() == records->bytes().size(), "the stream reads every byte");
  }
  require(streamed == count || again.error(), "the streams yield every record");
  if (summary) {
    require(summary->count == batch.records_count(), "validated count is recordsCount");
    require(count == summary->count, "a validated batch iterates recordsCount records");
    require(!reader.error() && reader.at_end(), "a validated batch's records use every byte");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tarn::record;
  const std::span<const uint8_t> input(data, size);
  batch_reader reader(input);
  record_batch_view batch;
  size_t end = 0;
  while (reader.next(batch)) {
    require(batch.size_bytes() >= record_batch_overhead, "batch_reader yields whole headers");
    end += batch.size_bytes();
    require(end == reader.position() && end <= size, "batches tile the buffer");
    walk_batch(batch);
  }
  require(reader.stop() != batch_stop::end || reader.position() == size, "end means every byte");
  require(reader.stop() != batch_stop::none, "a finished reader says why");
  // The whole input as one batch too, so the fuzzer reaches the record decoder without having
  // to keep batchLength consistent.
  walk_batch(record_batch_view(input));
  // And as one bare record.
  (void)decode_record(input);
  return 0;
}
