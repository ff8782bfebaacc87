// fetch_arena and its pool: decompressed batches land in memory that does not move while later
// batches are added, arenas go back to the pool when the last holder lets go (on any thread),
// and a reused arena keeps its memory.
#include "client/fetch_arena.h"

#include <gtest/gtest.h>

#include <string>
#include <thread>

#include "record/compression.h"

namespace tarn::client {
namespace {

using record::compression_type;

std::vector<uint8_t> bytes_of(char c, size_t n) { return std::vector<uint8_t>(n, uint8_t(c)); }

TEST(fetch_arena, decompressed_batches_stay_where_they_landed) {
  fetch_arena arena;
  std::vector<std::vector<uint8_t>> plain;
  std::vector<std::span<const uint8_t>> landed;
  // Enough batches to need more than one chunk, one larger than a chunk.
  for (int i = 0; i < 40; ++i) {
    plain.push_back(bytes_of(static_cast<char>('a' + i % 26), i == 7 ? (3 << 20) : 100000));
    auto packed = record::compress(compression_type::lz4, plain.back());
    ASSERT_TRUE(packed);
    auto out = arena.decompress(compression_type::lz4, *packed, 1u << 30);
    ASSERT_TRUE(out) << out.error().message;
    landed.push_back(*out);
  }
  for (size_t i = 0; i < plain.size(); ++i) {
    ASSERT_EQ(landed[i].size(), plain[i].size());
    EXPECT_TRUE(std::equal(landed[i].begin(), landed[i].end(), plain[i].begin())) << i;
  }
  const size_t capacity = arena.chunk_capacity();
  arena.reset();
  for (int i = 0; i < 40; ++i) {
    auto packed = record::compress(compression_type::zstd, plain[i]);
    ASSERT_TRUE(packed);
    ASSERT_TRUE(arena.decompress(compression_type::zstd, *packed, 1u << 30));
  }
  EXPECT_EQ(arena.chunk_capacity(), capacity);  // the same batches again: no new memory
}

TEST(fetch_arena, output_past_the_bound_is_an_error) {
  fetch_arena arena;
  auto packed = record::compress(compression_type::gzip, bytes_of('z', 10000));
  ASSERT_TRUE(packed);
  EXPECT_FALSE(arena.decompress(compression_type::gzip, *packed, 9999));
  auto exact = arena.decompress(compression_type::gzip, *packed, 10000);
  ASSERT_TRUE(exact);
  EXPECT_EQ(exact->size(), 10000u);
  const uint8_t garbage[] = {1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_FALSE(arena.decompress(compression_type::snappy, garbage, 1u << 20));
}

TEST(fetch_arena_pool, arenas_come_back_when_the_last_holder_lets_go) {
  auto pool = fetch_arena_pool::create();
  fetch_arena* first_address = nullptr;
  {
    auto a = pool->take();
    first_address = a.get();
    a->response.assign(1000, 7);
    auto b = a;  // a second holder
    a.reset();
    EXPECT_EQ(pool->idle(), 0u);
  }
  EXPECT_EQ(pool->idle(), 1u);
  auto again = pool->take();
  EXPECT_EQ(again.get(), first_address);  // reused
  EXPECT_TRUE(again->response.empty());   // and reset
  EXPECT_EQ(pool->created(), 1u);
}

TEST(fetch_arena_pool, an_arena_released_on_another_thread_returns_and_outlives_the_pool) {
  std::shared_ptr<fetch_arena> held;
  std::weak_ptr<fetch_arena_pool> pool_watch;
  {
    auto pool = fetch_arena_pool::create();
    pool_watch = pool;
    held = pool->take();
    held->response.assign(4096, 1);
    auto other = pool->take();
    std::thread t([a = std::move(other)]() mutable { a.reset(); });
    t.join();
    EXPECT_EQ(pool->idle(), 1u);
  }
  // The pool is gone from its owner, but the arena given out keeps it (and itself) alive.
  EXPECT_FALSE(pool_watch.expired());
  EXPECT_EQ(held->response.size(), 4096u);
  held.reset();
  EXPECT_TRUE(pool_watch.expired());
}

TEST(fetch_arena_pool, idle_arenas_are_bounded) {
  auto pool = fetch_arena_pool::create();
  std::vector<std::shared_ptr<fetch_arena>> many;
  for (size_t i = 0; i < fetch_arena_pool::max_idle + 3; ++i) many.push_back(pool->take());
  many.clear();
  EXPECT_EQ(pool->idle(), fetch_arena_pool::max_idle);
}

}  // namespace
}  // namespace tarn::client
