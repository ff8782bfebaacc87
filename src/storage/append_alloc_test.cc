// The produce hot path allocates nothing: log::append of a batch (no roll, no new epoch) makes
// no heap allocation. Counted by replacing the global operator new in this test executable.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "storage/log.h"
#include "storage/test_batches.h"

namespace {
std::atomic<int64_t> g_allocations{0};
}

void* operator new(size_t size) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(size == 0 ? 1 : size)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }

namespace tarn::storage {
namespace {

TEST(AppendPath, NoHeapAllocationPerAppend) {
  testing::temp_dir dir;
  log_options o;
  o.dir = dir.path() / "hot-0";
  o.tp = {"hot", 0};
  o.had_clean_shutdown = true;
  auto l = log::open(o);
  ASSERT_TRUE(l);
  auto batch = testing::make_batch(0, 10, 1700000000000, 200);
  ASSERT_TRUE((*l)->append(batch, 0));  // the first batch records leader epoch 0
  int64_t before = g_allocations.load();
  for (int i = 1; i <= 2000; ++i) {
    offset_t base = (*l)->log_end_offset();
    for (int k = 0; k < 8; ++k)
      batch[k] = static_cast<uint8_t>(static_cast<uint64_t>(base) >> (56 - 8 * k));
    auto r = (*l)->append(batch, 0);
    if (!r) FAIL() << r.error().message;
  }
  int64_t allocations = g_allocations.load() - before;
  EXPECT_EQ(allocations, 0);
  EXPECT_EQ((*l)->log_end_offset(), 20010);
  EXPECT_GT((*l)->epoch_entries().size(), 0u);
}

}  // namespace
}  // namespace tarn::storage
