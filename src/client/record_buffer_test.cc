// record_buffer: records come out in order, and strings handed back are reused.
#include "client/record_buffer.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace tarn::client {
namespace {

consumer_record& add(record_buffer& b, int64_t offset, const std::string& value) {
  auto& r = b.emplace_back();
  r.topic = "t";
  r.offset = offset;
  r.value = b.take_string(value.data(), value.size());
  return r;
}

TEST(record_buffer, pops_records_in_order_across_calls) {
  record_buffer b;
  for (int64_t i = 0; i < 5; ++i) add(b, i, std::to_string(i));
  std::vector<consumer_record> out;
  b.pop_into(out, 2);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].offset, 0);
  EXPECT_EQ(out[1].offset, 1);
  EXPECT_EQ(b.size(), 3u);
  out.clear();
  b.pop_into(out, 10);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[2].offset, 4);
  EXPECT_EQ(*out[2].value, "4");
  EXPECT_TRUE(b.empty());
}

TEST(record_buffer, drop_if_keeps_the_order_of_the_rest) {
  record_buffer b;
  for (int64_t i = 0; i < 6; ++i) add(b, i, "v");
  std::vector<consumer_record> out;
  b.pop_into(out, 1);
  b.drop_if([](const consumer_record& r) { return r.offset % 2 == 1; });
  ASSERT_EQ(b.size(), 2u);
  out.clear();
  b.pop_into(out, 10);
  EXPECT_EQ(out[0].offset, 2);
  EXPECT_EQ(out[1].offset, 4);
}

TEST(record_buffer, strings_handed_back_are_reused_without_allocating) {
  record_buffer b;
  const std::string value(1024, 'x');
  for (int64_t i = 0; i < 4; ++i) add(b, i, value);
  std::vector<consumer_record> out;
  b.pop_into(out, 4);
  std::vector<const char*> memory;
  for (const auto& r : out) memory.push_back(r.value->data());
  b.recycle(out);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(b.pooled_strings(), 4u);
  for (int64_t i = 0; i < 4; ++i) {
    const auto& r = add(b, i, std::string(1000, 'y'));
    // Each new value sits in memory one of the handed-back values had.
    EXPECT_NE(std::find(memory.begin(), memory.end(), r.value->data()), memory.end());
  }
  EXPECT_EQ(b.pooled_strings(), 0u);
}

TEST(record_buffer, the_pool_is_bounded) {
  record_buffer b;
  const std::string big(record_buffer::max_pooled_string_bytes + 1, 'x');
  const std::string small(4096, 'x');
  for (int64_t i = 0; i < 3000; ++i) add(b, i, i == 0 ? big : small);
  std::vector<consumer_record> out;
  b.pop_into(out, 3000);
  b.recycle(out);
  // The big string went back to the allocator; the small ones up to 8 MiB of capacity.
  EXPECT_LE(b.pooled_strings() * small.size(), record_buffer::max_pooled_bytes);
  EXPECT_GE(b.pooled_strings(), record_buffer::max_pooled_bytes / (2 * small.size()));
}

}  // namespace
}  // namespace tarn::client
