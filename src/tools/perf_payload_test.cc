// Tests of the perf tools' payload letters: A-Z only, every record different, all 26 letters about
// equally often, and text that lz4 cannot shrink (as Kafka 4.4's per-record random payloads).
#include "tools/perf_payload.h"

#include <gtest/gtest.h>

#include <array>
#include <set>
#include <string>

#include "record/compression.h"

namespace tarn::tools {
namespace {

TEST(payload_letters, fills_every_byte_with_a_capital_letter) {
  payload_letters letters(0);
  for (size_t size : {1u, 7u, 8u, 31u, 32u, 33u, 100u, 1024u}) {
    std::string payload(size, '\0');
    letters.fill(payload);
    for (char c : payload) ASSERT_TRUE(c >= 'A' && c <= 'Z') << size << ": " << int(c);
  }
}

TEST(payload_letters, records_differ_and_letters_are_near_uniform) {
  payload_letters letters(7);
  std::set<std::string> seen;
  std::array<int, 26> counts{};
  std::string payload(1024, '\0');
  for (int i = 0; i < 1000; ++i) {
    letters.fill(payload);
    seen.insert(payload);
    for (char c : payload) ++counts[static_cast<size_t>(c - 'A')];
  }
  EXPECT_EQ(seen.size(), 1000u);
  // 1,024,000 letters: each letter's share is 9/256 or 10/256 (3.5% or 3.9%).
  for (int n : counts) {
    EXPECT_GT(n, 1024000 * 8.5 / 256);
    EXPECT_LT(n, 1024000 * 10.5 / 256);
  }
}

TEST(payload_letters, the_seed_decides_the_letters) {
  std::string a(64, '\0'), b(64, '\0'), c(64, '\0');
  payload_letters(1).fill(a);
  payload_letters(1).fill(b);
  payload_letters(2).fill(c);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
}

TEST(payload_letters, sixteen_records_do_not_compress_with_lz4) {
  // Kafka's perf tool sends lz4 batches of such records nearly uncompressed (15571 bytes for 15
  // records of 1 KiB in its own run against tarn); one payload reused would shrink 16x.
  payload_letters letters(0);
  std::string batch;
  std::string payload(1024, '\0');
  for (int i = 0; i < 16; ++i) {
    letters.fill(payload);
    batch += payload;
  }
  auto compressed =
      record::compress(record::compression_type::lz4,
                       std::span(reinterpret_cast<const uint8_t*>(batch.data()), batch.size()), -1);
  ASSERT_TRUE(compressed);
  EXPECT_GT(compressed->size(), batch.size() * 9 / 10);
}

}  // namespace
}  // namespace tarn::tools
