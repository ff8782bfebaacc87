// Regression tests for what fuzz/record_batch_fuzz found in the batch decoder: each input is the
// smallest batch that shows the fault, and the expected values are what Kafka 4.4.0 does.
#include <gtest/gtest.h>

#include <vector>

#include "record/record_batch.h"

namespace tarn::record {
namespace {

// A 61-byte batch with no records (recordsCount 0) and a correct CRC.
std::vector<uint8_t> empty_batch() {
  std::vector<uint8_t> bytes(record_batch_overhead, 0);
  store32(bytes.data() + batch_layout::batch_length,
          static_cast<uint32_t>(record_batch_overhead - log_overhead));
  bytes[batch_layout::magic] = magic_v2;
  mutable_record_batch_view(bytes).update_crc();
  return bytes;
}

// A batch whose header holds recordsCount -1 and no records passed validate_records with a count
// of 0. Kafka's record iterator throws ("Found invalid record count -1 in magic v2 batch").
TEST(batch_fuzz_regressions, validate_records_refuses_a_negative_count) {
  auto bytes = empty_batch();
  auto summary = validate_records(record_batch_view(bytes), 1024);
  ASSERT_TRUE(summary.has_value());  // zero records, none present: fine
  EXPECT_EQ(summary->count, 0);

  store32(bytes.data() + batch_layout::records_count, 0xffffffffu);
  mutable_record_batch_view(bytes).update_crc();
  summary = validate_records(record_batch_view(bytes), 1024);
  ASSERT_FALSE(summary.has_value());
  EXPECT_EQ(summary.error().code, batch_errc::invalid_record_count);
}

// last_sequence overflowed int32 (UBSan) on a corrupt lastOffsetDelta. Kafka's
// DefaultRecordBatch.incrementSequence wraps in Java int arithmetic; the expected values were
// computed by that Java method on the same ints.
TEST(batch_fuzz_regressions, last_sequence_wraps_as_java_ints_do) {
  auto bytes = empty_batch();
  const record_batch_view view(bytes);
  auto last_sequence = [&](int32_t base, int32_t delta) {
    store32(bytes.data() + batch_layout::base_sequence, static_cast<uint32_t>(base));
    store32(bytes.data() + batch_layout::last_offset_delta, static_cast<uint32_t>(delta));
    return view.last_sequence();
  };
  EXPECT_EQ(last_sequence(0, 6), 6);
  EXPECT_EQ(last_sequence(-1, 6), -1);
  EXPECT_EQ(last_sequence(2147483647, 1), 0);
  EXPECT_EQ(last_sequence(2147483640, 10), 2);
  EXPECT_EQ(last_sequence(5, -10), 2147483643);
  EXPECT_EQ(last_sequence(-1422752598, 2147483647), 724731049);
  EXPECT_EQ(last_sequence(-2147483647 - 1, -2147483647 - 1), 0);
}

}  // namespace
}  // namespace tarn::record
