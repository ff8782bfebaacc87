// Java's Double.toString and HashMap order, with values Java 17 prints (jshell).
#include "tools/java_format.h"

#include <gtest/gtest.h>

namespace tarn::tools {
namespace {

TEST(java_format, double_to_string_as_java) {
  EXPECT_EQ(java_double_string(1024), "1024.0");
  EXPECT_EQ(java_double_string(2048.5), "2048.5");
  EXPECT_EQ(java_double_string(0.1), "0.1");
  EXPECT_EQ(java_double_string(0.001), "0.001");
  EXPECT_EQ(java_double_string(0.0001), "1.0E-4");
  EXPECT_EQ(java_double_string(9999999), "9999999.0");
  EXPECT_EQ(java_double_string(10000000), "1.0E7");
  EXPECT_EQ(java_double_string(12345678), "1.2345678E7");
  EXPECT_EQ(java_double_string(1.5e-7), "1.5E-7");
  EXPECT_EQ(java_double_string(-3.25), "-3.25");
  EXPECT_EQ(java_double_string(0.0), "0.0");
  EXPECT_EQ(java_double_string(-0.0), "-0.0");
  EXPECT_EQ(java_double_string(1.0 / 0.0), "Infinity");
}

TEST(java_format, string_hash_as_java) {
  EXPECT_EQ(java_string_hash(""), 0);
  EXPECT_EQ(java_string_hash("a"), 97);
  EXPECT_EQ(java_string_hash("hello"), 99162322);
  // Overflows wrap as Java's int does.
  EXPECT_EQ(java_string_hash("producer_byte_rate"), -832502454);
}

TEST(java_format, hash_map_order_walks_buckets_then_insertion) {
  // Buckets of a 16-slot table: 17 -> 1, 2 -> 2, 33 -> 1 (after 17), 0 -> 0.
  EXPECT_EQ(java_hash_map_order({17, 2, 33, 0}, 0), (std::vector<size_t>{3, 0, 2, 1}));
  // new HashMap<>(1) with one key: 2 slots.
  EXPECT_EQ(java_hash_map_order({3}, 1), (std::vector<size_t>{0}));
  // new HashMap<>(2) with two keys grows to 4 slots: 5 -> 1, 2 -> 2.
  EXPECT_EQ(java_hash_map_order({2, 5}, 2), (std::vector<size_t>{1, 0}));
}

}  // namespace
}  // namespace tarn::tools
