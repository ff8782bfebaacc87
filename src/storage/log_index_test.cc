// Lookups in the offset and time indexes: the entry at or before a target, at each edge (empty
// index, before the first entry, exact hits, between entries, past the last), and after reopen;
// what a new index's first entry brings into the page cache.
#include "storage/log_index.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace tarn::storage {
namespace {

class log_index_test : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("tarn_log_index_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path dir_;
};

constexpr offset_t base = 100;

TEST_F(log_index_test, offset_lookup_finds_the_entry_at_or_before_the_target) {
  auto index = offset_index::open(dir_ / "00000000000000000100.index", base, 4096, true);
  ASSERT_TRUE(index) << index.error().message;
  auto& idx = **index;
  // Empty: every lookup answers the segment's start.
  EXPECT_EQ(idx.lookup(150).offset, base);
  EXPECT_EQ(idx.lookup(150).position, 0);
  EXPECT_EQ(idx.lookup_by_position(5000).offset, base);

  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(idx.append(base + 10 + 10 * i, 1000 * (i + 1)));  // 110@1000 ... 150@5000
  }
  EXPECT_EQ(idx.lookup(base).offset, base);  // before the first entry
  EXPECT_EQ(idx.lookup(base).position, 0);
  EXPECT_EQ(idx.lookup(109).offset, base);
  EXPECT_EQ(idx.lookup(110).offset, 110);  // exact hit on the first
  EXPECT_EQ(idx.lookup(110).position, 1000);
  EXPECT_EQ(idx.lookup(135).offset, 130);  // between
  EXPECT_EQ(idx.lookup(135).position, 3000);
  EXPECT_EQ(idx.lookup(150).offset, 150);        // exact hit on the last
  EXPECT_EQ(idx.lookup(1'000'000).offset, 150);  // past the last
  EXPECT_EQ(idx.lookup(1'000'000).position, 5000);

  EXPECT_EQ(idx.lookup_by_position(999).offset, base);
  EXPECT_EQ(idx.lookup_by_position(1000).offset, 110);
  EXPECT_EQ(idx.lookup_by_position(4999).offset, 140);
  EXPECT_EQ(idx.lookup_by_position(4999).position, 4000);
  EXPECT_EQ(idx.lookup_by_position(1 << 30).offset, 150);

  idx.truncate_to(130);  // drops 130, 140, 150
  EXPECT_EQ(idx.entries(), 2);
  EXPECT_EQ(idx.lookup(1'000'000).offset, 120);
}

TEST_F(log_index_test, offset_lookup_survives_close_and_reopen) {
  const auto path = dir_ / "00000000000000000100.index";
  {
    auto index = offset_index::open(path, base, 4096, true);
    ASSERT_TRUE(index);
    for (int i = 0; i < 100; ++i) ASSERT_TRUE((*index)->append(base + 1 + i, 64 * i));
    ASSERT_TRUE((*index)->close());
  }
  auto index = offset_index::open(path, base, 4096, false);
  ASSERT_TRUE(index);
  EXPECT_EQ((*index)->entries(), 100);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ((*index)->lookup(base + 1 + i).position, 64 * i);
    EXPECT_EQ((*index)->lookup_by_position(64 * i + 63).offset, base + 1 + i);
  }
}

TEST_F(log_index_test, time_lookup_finds_the_entry_at_or_before_the_target) {
  auto index = time_index::open(dir_ / "00000000000000000100.timeindex", base, 4096, true);
  ASSERT_TRUE(index) << index.error().message;
  auto& idx = **index;
  EXPECT_EQ(idx.lookup(5000).timestamp, no_timestamp);
  EXPECT_EQ(idx.lookup(5000).offset, base);

  ASSERT_TRUE(idx.maybe_append(1000, 110));
  ASSERT_TRUE(idx.maybe_append(1000, 115));  // not greater: not appended (Kafka's maybeAppend)
  ASSERT_TRUE(idx.maybe_append(2000, 120));
  ASSERT_TRUE(idx.maybe_append(3000, 130));
  EXPECT_EQ(idx.entries(), 3);

  EXPECT_EQ(idx.lookup(999).timestamp, no_timestamp);
  EXPECT_EQ(idx.lookup(999).offset, base);
  EXPECT_EQ(idx.lookup(1000).offset, 110);
  EXPECT_EQ(idx.lookup(2500).timestamp, 2000);
  EXPECT_EQ(idx.lookup(2500).offset, 120);
  EXPECT_EQ(idx.lookup(3000).offset, 130);
  EXPECT_EQ(idx.lookup(1'000'000).offset, 130);

  idx.truncate_to(120);
  EXPECT_EQ(idx.lookup(1'000'000).offset, 110);
}

// Pages of `path` in the page cache, whoever faulted them in (mincore on a mapping of a file
// reports the file's cached pages).
size_t cached_pages(const fs::path& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return SIZE_MAX;
  const auto length = static_cast<size_t>(::lseek(fd, 0, SEEK_END));
  void* p = ::mmap(nullptr, length, PROT_READ, MAP_SHARED, fd, 0);
  ::close(fd);
  if (p == MAP_FAILED) return SIZE_MAX;
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> in_core((length + page - 1) / page);
  size_t n = SIZE_MAX;
  if (::mincore(p, length, in_core.data()) == 0) {
    n = static_cast<size_t>(std::count_if(in_core.begin(), in_core.end(),
                                          [](unsigned char c) { return (c & 1) != 0; }));
  }
  ::munmap(p, length);
  return n;
}

TEST_F(log_index_test, the_first_entry_brings_one_page_into_the_cache_not_a_readahead_window) {
  // A new index is 10 MiB of hole past its entries. Without MADV_RANDOM the fault of its first
  // entry read around it: on ext4 up to read_ahead_kb (8 MiB on this project's machines) of
  // zeroed pages (on tmpfs one page either way).
  const fs::path path = dir_ / "00000000000000000100.index";
  auto index = offset_index::open(path, base, 10 << 20, true);
  ASSERT_TRUE(index) << index.error().message;
  auto& idx = **index;
  ASSERT_TRUE(idx.reserve_next_entry());
  ASSERT_TRUE(idx.append(base + 10, 4096));
  EXPECT_LE(cached_pages(path), 2u);
  auto time = time_index::open(dir_ / "00000000000000000100.timeindex", base, 10 << 20, true);
  ASSERT_TRUE(time) << time.error().message;
  ASSERT_TRUE((*time)->reserve_next_entry());
  ASSERT_TRUE((*time)->maybe_append(1000, base + 10));
  EXPECT_LE(cached_pages(dir_ / "00000000000000000100.timeindex"), 2u);
  EXPECT_EQ(idx.lookup(base + 10).position, 4096);
}

}  // namespace
}  // namespace tarn::storage
