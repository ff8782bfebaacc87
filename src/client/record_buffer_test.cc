// record_buffer: records come out in order, as views with holds on the memory they borrow or as
// owning copies whose strings are reused; dropped and returned records let their memory go.
#include "client/record_buffer.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace tarn::client {
namespace {

// Memory records borrow: the values live in it, and tests watch when it is let go.
struct backing {
  std::vector<std::string> values;
};

consumer_record_view& add(record_buffer& b, int64_t offset, std::string_view value) {
  auto& r = b.emplace_back();
  r.topic = "t";
  r.offset = offset;
  r.value = value;
  return r;
}

TEST(record_buffer, pops_records_in_order_across_calls) {
  record_buffer b;
  const std::string values[] = {"0", "1", "2", "3", "4"};
  for (int64_t i = 0; i < 5; ++i) add(b, i, values[i]);
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
  EXPECT_EQ(out[2].topic, "t");
  EXPECT_TRUE(b.empty());
}

TEST(record_buffer, drop_if_keeps_the_order_of_the_rest) {
  record_buffer b;
  for (int64_t i = 0; i < 6; ++i) add(b, i, "v");
  std::vector<consumer_record> out;
  b.pop_into(out, 1);
  b.drop_if([](const consumer_record_view& r) { return r.offset % 2 == 1; });
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
  const std::string other(1000, 'y');
  for (int64_t i = 0; i < 4; ++i) add(b, i, other);
  b.pop_into(out, 4);
  for (const auto& r : out) {
    // Each new value sits in memory one of the handed-back values had.
    EXPECT_EQ(*r.value, other);
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

// Two fetches' worth of records, each borrowing its own memory: the views handed out carry holds
// on exactly the memory they point into, and memory is let go once no record borrows it.
TEST(record_buffer, views_hold_the_memory_they_borrow_until_released) {
  record_buffer b;
  auto first = std::make_shared<backing>(backing{{"a0", "a1", "a2"}});
  auto second = std::make_shared<backing>(backing{{"b0", "b1"}});
  std::weak_ptr<backing> first_watch = first;
  std::weak_ptr<backing> second_watch = second;
  b.borrow(first);
  for (int64_t i = 0; i < 3; ++i) add(b, i, first->values[i]);
  b.borrow(second);
  for (int64_t i = 0; i < 2; ++i) add(b, 3 + i, second->values[i]);
  first.reset();
  second.reset();
  EXPECT_EQ(b.holds(), 2u);

  consumer_records batch;
  b.pop_into(batch, 2);  // a0, a1: only the first memory
  ASSERT_EQ(batch.size(), 2u);
  EXPECT_EQ(*batch[1].value, "a1");
  consumer_records next;
  b.pop_into(next, 2);  // a2, b0: both
  ASSERT_EQ(next.size(), 2u);
  EXPECT_EQ(*next[0].value, "a2");
  EXPECT_EQ(*next[1].value, "b0");
  EXPECT_EQ(b.holds(), 1u);  // the buffer keeps only the second (b1 is still in it)

  batch.clear();
  EXPECT_FALSE(first_watch.expired());  // `next` still borrows it
  consumer_records moved = std::move(next);
  EXPECT_EQ(*moved[0].value, "a2");  // moving the batch keeps its views valid
  moved.clear();
  EXPECT_TRUE(first_watch.expired());
  EXPECT_FALSE(second_watch.expired());  // b1, still buffered

  b.drop_if([](const consumer_record_view& r) { return r.offset == 4; });
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(b.holds(), 0u);
  EXPECT_TRUE(second_watch.expired());
}

// drop_if across holds: memory whose records were all dropped is let go, the rest keeps the
// records that borrow it.
TEST(record_buffer, drop_if_lets_go_of_memory_no_record_borrows) {
  record_buffer b;
  auto first = std::make_shared<backing>(backing{{"a0", "a1"}});
  auto second = std::make_shared<backing>(backing{{"b0", "b1"}});
  std::weak_ptr<backing> first_watch = first;
  b.borrow(first);
  add(b, 0, first->values[0]).partition = 1;
  add(b, 1, first->values[1]).partition = 1;
  b.borrow(second);
  add(b, 2, second->values[0]).partition = 2;
  add(b, 3, second->values[1]).partition = 1;
  first.reset();
  b.drop_if([](const consumer_record_view& r) { return r.partition == 1; });
  EXPECT_TRUE(first_watch.expired());
  ASSERT_EQ(b.size(), 1u);
  consumer_records out;
  b.pop_into(out, 10);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(*out[0].value, "b0");
}

TEST(record_buffer, owning_copies_keep_keys_nulls_and_headers) {
  // Two headers as a v2 record encodes them: key "h1" value "x", key "h2" value null.
  const unsigned char headers[] = {4, 'h', '1', 2, 'x', 4, 'h', '2', 1};
  record_buffer b;
  auto& r = b.emplace_back();
  r.topic = "topic";
  r.partition = 3;
  r.offset = 7;
  r.timestamp = 1234;
  r.log_append_time = true;
  r.key = std::nullopt;
  r.value = std::string_view("v");
  r.headers = record_headers_view(headers, 2);
  const consumer_record direct = r.to_record();
  std::vector<consumer_record> out;
  b.pop_into(out, 1);
  ASSERT_EQ(out.size(), 1u);
  for (const consumer_record* c : std::vector<const consumer_record*>{&out[0], &direct}) {
    EXPECT_EQ(c->topic, "topic");
    EXPECT_EQ(c->partition, 3);
    EXPECT_EQ(c->offset, 7);
    EXPECT_EQ(c->timestamp, 1234);
    EXPECT_TRUE(c->log_append_time);
    EXPECT_FALSE(c->key);
    EXPECT_EQ(c->value, "v");
    ASSERT_EQ(c->headers.size(), 2u);
    EXPECT_EQ(c->headers[0].first, "h1");
    EXPECT_EQ(c->headers[0].second, "x");
    EXPECT_EQ(c->headers[1].first, "h2");
    EXPECT_FALSE(c->headers[1].second);
  }
}

}  // namespace
}  // namespace tarn::client
