// Failed writes in the storage layer: a write cut short (the file size limit stands in for a
// full disk: pwrite stops at the limit, then fails with EFBIG as it would with ENOSPC) must come
// back as an io_error value, leave the segment and the .log file exactly as before the append,
// and let a later append succeed at the same position. The broker-level test with a real full
// tmpfs is tests/full_disk_test.cc.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <csignal>

#include "storage/io.h"
#include "storage/log.h"
#include "storage/log_segment.h"
#include "storage/test_batches.h"

namespace tarn::storage {
namespace {

using testing::make_batch;
using testing::temp_dir;

// Caps the size of files this process writes (RLIMIT_FSIZE) until destroyed. SIGXFSZ is
// ignored so that the write fails with EFBIG instead of killing the process.
class file_size_limit {
 public:
  explicit file_size_limit(rlim_t bytes) {
    ::getrlimit(RLIMIT_FSIZE, &saved_);
    old_handler_ = std::signal(SIGXFSZ, SIG_IGN);
    rlimit l = saved_;
    l.rlim_cur = bytes;
    ok_ = ::setrlimit(RLIMIT_FSIZE, &l) == 0;
  }
  ~file_size_limit() {
    ::setrlimit(RLIMIT_FSIZE, &saved_);
    std::signal(SIGXFSZ, old_handler_);
  }
  file_size_limit(const file_size_limit&) = delete;
  file_size_limit& operator=(const file_size_limit&) = delete;
  bool ok() const { return ok_; }

 private:
  rlimit saved_{};
  void (*old_handler_)(int) = SIG_DFL;
  bool ok_ = false;
};

int64_t size_of_file(const fs::path& p) {
  std::error_code ec;
  auto n = fs::file_size(p, ec);
  return ec ? -1 : static_cast<int64_t>(n);
}

TEST(WriteFailure, ShortSegmentWriteIsCutBackToTheLastWholeBatch) {
  temp_dir dir;
  segment_options opts;
  auto seg = log_segment::create(dir.path(), 0, opts, 0);
  ASSERT_TRUE(seg);
  auto first = make_batch(0, 3, 1000, 2000);
  ASSERT_TRUE((*seg)->append(first, batch_info{0, 2, 1002}));
  const int64_t whole = (*seg)->size();
  ASSERT_EQ(whole, static_cast<int64_t>(first.size()));

  auto second = make_batch(3, 3, 2000, 2000);
  {
    // Room for half of the second batch: pwrite writes that much, then fails.
    file_size_limit limit(static_cast<rlim_t>(whole + static_cast<int64_t>(second.size()) / 2));
    ASSERT_TRUE(limit.ok());
    auto r = (*seg)->append(second, batch_info{3, 5, 2002});
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, storage_errc::io_error);
    EXPECT_NE(r.error().message.find("File too large"), std::string::npos) << r.error().message;
  }
  EXPECT_EQ((*seg)->size(), whole);
  EXPECT_EQ((*seg)->next_offset(), 3);
  EXPECT_EQ(size_of_file((*seg)->log_path()), whole) << "the partial batch stayed in the file";

  // With room again, the same batch goes in at the same place.
  ASSERT_TRUE((*seg)->append(second, batch_info{3, 5, 2002}));
  EXPECT_EQ((*seg)->size(), whole + static_cast<int64_t>(second.size()));
  std::vector<uint8_t> back(second.size());
  ASSERT_TRUE((*seg)->read_bytes(whole, back));
  EXPECT_EQ(back, second);
}

TEST(WriteFailure, FailedLogAppendKeepsTheLogEndOffsetAndTheNextAppendContinues) {
  temp_dir dir;
  log_options o;
  o.dir = dir.path() / "t-0";
  o.tp = {"t", 0};
  o.had_clean_shutdown = true;
  auto l = log::open(o);
  ASSERT_TRUE(l);
  auto first = make_batch(0, 2, 1000, 1000);
  ASSERT_TRUE((*l)->append(first, 1000));
  const fs::path active = o.dir / segment_file_name(0, ".log");
  const int64_t whole = size_of_file(active);
  auto second = make_batch(2, 2, 1000, 5000);
  {
    file_size_limit limit(static_cast<rlim_t>(whole + 100));
    ASSERT_TRUE(limit.ok());
    auto r = (*l)->append(second, 1000);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, storage_errc::io_error);
  }
  EXPECT_EQ((*l)->log_end_offset(), 2);
  EXPECT_EQ(size_of_file(active), whole);
  ASSERT_TRUE((*l)->append(second, 1000));
  EXPECT_EQ((*l)->log_end_offset(), 4);
  auto read = (*l)->read(2, 1 << 20, true);
  ASSERT_TRUE(read);
  ASSERT_TRUE(read->slice.has_value());
  EXPECT_EQ(read->slice->length, static_cast<int32_t>(second.size()));
}

TEST(WriteFailure, AtomicReplaceThatCannotWriteLeavesTheOldFileAndNoTempFile) {
  temp_dir dir;
  const fs::path p = dir.path() / "checkpoint";
  ASSERT_TRUE(write_file_atomic(p, "old\n"));
  {
    file_size_limit limit(10);
    ASSERT_TRUE(limit.ok());
    auto r = write_file_atomic(p, std::string(100, 'n'));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().code, storage_errc::io_error);
  }
  auto back = read_small_file(p);
  ASSERT_TRUE(back);
  EXPECT_EQ(*back, "old\n");
  EXPECT_FALSE(fs::exists(dir.path() / "checkpoint.tmp"));
}

TEST(WriteFailure, FlushMessagesOneSyncsEveryAppendAndTheNewSegmentsDirectory) {
  // With flush.messages=1 the recovery point follows the log end offset after every append:
  // the flush ran (the broker test under strace checks the fdatasync itself).
  temp_dir dir;
  log_options o;
  o.dir = dir.path() / "t-0";
  o.tp = {"t", 0};
  o.had_clean_shutdown = true;
  o.config.flush_messages = 1;
  auto l = log::open(o);
  ASSERT_TRUE(l);
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE((*l)->append(make_batch(i, 1, 1000 + i), 1000));
    EXPECT_EQ((*l)->recovery_point(), i + 1);
  }
  log_options d = o;
  d.dir = dir.path() / "t-1";
  d.tp = {"t", 1};
  d.config.flush_messages = INT64_MAX;
  auto lazy = log::open(d);
  ASSERT_TRUE(lazy);
  ASSERT_TRUE((*lazy)->append(make_batch(0, 1, 1000), 1000));
  EXPECT_EQ((*lazy)->recovery_point(), 0);
}

}  // namespace
}  // namespace tarn::storage
