// Varints: the table from producer-batching.txt, extremes, sizes, and bounded decoding.
#include "record/varint.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <limits>
#include <vector>

namespace tarn::record {
namespace {

std::vector<uint8_t> encode32(int32_t v) {
  std::array<uint8_t, max_varint_bytes> buf{};
  uint8_t* end = write_varint(v, buf.data());
  return std::vector<uint8_t>(buf.data(), end);
}

std::vector<uint8_t> encode64(int64_t v) {
  std::array<uint8_t, max_varlong_bytes> buf{};
  uint8_t* end = write_varlong(v, buf.data());
  return std::vector<uint8_t>(buf.data(), end);
}

TEST(varint, table_from_producer_batching) {
  EXPECT_EQ(encode32(0), (std::vector<uint8_t>{0x00}));
  EXPECT_EQ(encode32(-1), (std::vector<uint8_t>{0x01}));
  EXPECT_EQ(encode32(1), (std::vector<uint8_t>{0x02}));
  EXPECT_EQ(encode32(2), (std::vector<uint8_t>{0x04}));
  EXPECT_EQ(encode32(63), (std::vector<uint8_t>{0x7e}));
  EXPECT_EQ(encode32(64), (std::vector<uint8_t>{0x80, 0x01}));
  EXPECT_EQ(encode32(300), (std::vector<uint8_t>{0xd8, 0x04}));
  EXPECT_EQ(encode32(70), (std::vector<uint8_t>{0x8c, 0x01}));  // not 0x46: zigzag
  EXPECT_EQ(encode32(10), (std::vector<uint8_t>{0x14}));        // the worked trace's length
}

TEST(varint, zigzag_mapping) {
  EXPECT_EQ(zigzag_encode(int32_t{0}), 0u);
  EXPECT_EQ(zigzag_encode(int32_t{-1}), 1u);
  EXPECT_EQ(zigzag_encode(int32_t{1}), 2u);
  EXPECT_EQ(zigzag_encode(int32_t{-2}), 3u);
  EXPECT_EQ(zigzag_encode(std::numeric_limits<int32_t>::max()), 0xfffffffeu);
  EXPECT_EQ(zigzag_encode(std::numeric_limits<int32_t>::min()), 0xffffffffu);
  EXPECT_EQ(zigzag_encode(std::numeric_limits<int64_t>::min()), ~uint64_t{0});
  EXPECT_EQ(zigzag_decode(0xffffffffu), std::numeric_limits<int32_t>::min());
  EXPECT_EQ(zigzag_decode(~uint64_t{0}), std::numeric_limits<int64_t>::min());
}

TEST(varint, extremes_round_trip_at_maximum_length) {
  EXPECT_EQ(encode32(std::numeric_limits<int32_t>::min()),
            (std::vector<uint8_t>{0xff, 0xff, 0xff, 0xff, 0x0f}));
  EXPECT_EQ(encode32(std::numeric_limits<int32_t>::max()),
            (std::vector<uint8_t>{0xfe, 0xff, 0xff, 0xff, 0x0f}));
  EXPECT_EQ(encode64(std::numeric_limits<int64_t>::min()),
            (std::vector<uint8_t>{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}));
  for (int32_t v : {0, 1, -1, 63, -64, 64, 8191, -8192, 8192, 1 << 20, -(1 << 27),
                    std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()}) {
    const auto bytes = encode32(v);
    EXPECT_EQ(bytes.size(), varint_size(v)) << v;
    auto d = read_varint(bytes);
    ASSERT_TRUE(d) << v;
    EXPECT_EQ(d->value, v);
    EXPECT_EQ(d->size, bytes.size());
  }
  for (int64_t v : {int64_t{0}, int64_t{-1}, int64_t{1} << 35, -(int64_t{1} << 62),
                    std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max()}) {
    const auto bytes = encode64(v);
    EXPECT_EQ(bytes.size(), varlong_size(v)) << v;
    auto d = read_varlong(bytes);
    ASSERT_TRUE(d) << v;
    EXPECT_EQ(d->value, v);
    EXPECT_EQ(d->size, bytes.size());
  }
  EXPECT_EQ(varlong_size(std::numeric_limits<int64_t>::min()), 10u);
  EXPECT_EQ(varint_size(std::numeric_limits<int32_t>::min()), 5u);
}

TEST(varint, sizes_at_every_seven_bit_boundary) {
  for (int bits = 0; bits < 64; ++bits) {
    const uint64_t v = uint64_t{1} << bits;
    EXPECT_EQ(unsigned_varlong_size(v), static_cast<size_t>(bits / 7 + 1)) << bits;
    EXPECT_EQ(unsigned_varlong_size(v - 1), v == 1 ? 1u : static_cast<size_t>((bits - 1) / 7 + 1));
  }
  EXPECT_EQ(unsigned_varint_size(0), 1u);
  EXPECT_EQ(unsigned_varint_size(127), 1u);
  EXPECT_EQ(unsigned_varint_size(128), 2u);
  EXPECT_EQ(unsigned_varint_size(0xffffffffu), 5u);
}

TEST(varint, unsigned_varint) {
  std::array<uint8_t, 5> buf{};
  const uint8_t* end = write_unsigned_varint(300, buf.data());
  EXPECT_EQ(end - buf.data(), 2);
  EXPECT_EQ(buf[0], 0xac);
  EXPECT_EQ(buf[1], 0x02);
  auto d = read_unsigned_varint(std::span<const uint8_t>(buf.data(), 2));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->value, 300u);
}

TEST(varint, truncated_input_fails) {
  const std::vector<uint8_t> empty;
  ASSERT_FALSE(read_varint(empty));
  EXPECT_EQ(read_varint(empty).error(), varint_error::truncated);
  const std::vector<uint8_t> cut{0x80, 0x80};
  EXPECT_EQ(read_varint(cut).error(), varint_error::truncated);
  EXPECT_EQ(read_varlong(cut).error(), varint_error::truncated);
  const std::vector<uint8_t> nine{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  EXPECT_EQ(read_varlong(nine).error(), varint_error::truncated);
}

TEST(varint, too_long_fails) {
  const std::vector<uint8_t> six{0x80, 0x80, 0x80, 0x80, 0x80, 0x00};
  EXPECT_EQ(read_varint(six).error(), varint_error::too_long);
  const std::vector<uint8_t> eleven{0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
                                    0x80, 0x80, 0x80, 0x80, 0x00};
  EXPECT_EQ(read_varlong(eleven).error(), varint_error::too_long);
  // The same bytes are a valid 10-byte varlong prefix only up to the tenth byte.
  EXPECT_TRUE(read_varlong(six));
  EXPECT_EQ(read_varlong(six)->size, 6u);
}

TEST(varint, reads_only_the_first_value) {
  const std::vector<uint8_t> two{0xd8, 0x04, 0x7e};
  auto d = read_varint(two);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->value, 300);
  EXPECT_EQ(d->size, 2u);
}

}  // namespace
}  // namespace tarn::record
