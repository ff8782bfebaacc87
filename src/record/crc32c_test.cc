// CRC-32C: the check value, incremental use, and agreement with a bitwise reference.
#include "record/crc32c.h"

#include <gtest/gtest.h>

#include <string_view>
#include <vector>

namespace tarn::record {
namespace {

std::span<const uint8_t> bytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// The textbook bit-at-a-time CRC-32C (reflected polynomial 0x82F63B78).
uint32_t reference_crc32c(std::span<const uint8_t> data) {
  uint32_t crc = 0xffffffffu;
  for (uint8_t b : data) {
    crc ^= b;
    for (int i = 0; i < 8; ++i) crc = (crc >> 1) ^ ((crc & 1u) ? 0x82f63b78u : 0u);
  }
  return ~crc;
}

TEST(crc32c, check_value) { EXPECT_EQ(crc32c(bytes("123456789")), 0xe3069283u); }

TEST(crc32c, empty_is_zero) { EXPECT_EQ(crc32c({}), 0u); }

TEST(crc32c, extend_equals_whole) {
  const std::string_view text = "The quick brown fox jumps over the lazy dog";
  const uint32_t whole = crc32c(bytes(text));
  EXPECT_EQ(whole, 0x22620404u);  // published CRC-32C of this sentence
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    EXPECT_EQ(crc32c_extend(crc32c(bytes(text.substr(0, cut))), bytes(text.substr(cut))), whole);
  }
  EXPECT_EQ(crc32c_extend(0, bytes(text)), whole);
}

TEST(crc32c, agrees_with_bitwise_reference_at_many_lengths) {
  std::vector<uint8_t> data(5000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * 131 + 7);
  for (size_t len : {1u, 7u, 8u, 15u, 16u, 63u, 64u, 255u, 256u, 1023u, 4096u, 5000u}) {
    std::span<const uint8_t> s(data.data(), len);
    EXPECT_EQ(crc32c(s), reference_crc32c(s)) << len;
  }
}

}  // namespace
}  // namespace tarn::record
