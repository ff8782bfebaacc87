// Full disk (issue 9, part 6): log.dirs on an 8 MiB tmpfs that also holds a 1 MiB filler file.
// Producing until the disk is full must end in KAFKA_STORAGE_ERROR (56) answers, never a crash;
// nothing acknowledged may be lost (read back byte for byte, also after a SIGKILL and restart);
// no partial batch may stay in a segment; and once the filler is deleted, producing continues
// at the next offset. Kafka 4.4 answers 56 too but then takes the log directory offline (and,
// with one directory, shuts down); tarn carries on (docs/compatibility.md).
// The log cleaner on a full disk (issue 21): its .cleaned file cannot be written, the round
// fails and is logged, every record stays readable, restarts are valid, and once space returns
// a later round cleans.
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/statvfs.h>

#include <filesystem>
#include <random>
#include <sstream>

#include "cleaner_util.h"
#include "produce_util.h"

namespace tarn::test {
namespace {

namespace fs = std::filesystem;

constexpr int16_t kafka_storage_error = 56;

// A small tmpfs mounted on a fresh directory, unmounted on destruction.
class small_tmpfs {
 public:
  explicit small_tmpfs(const char* size = "size=8m") {
    path_ = dir_.path() / "disk";
    fs::create_directories(path_);
    if (::mount("tmpfs", path_.c_str(), "tmpfs", 0, size) == 0) {
      mounted_ = true;
    } else {
      error_ = std::strerror(errno);
    }
  }
  ~small_tmpfs() {
    if (mounted_) ::umount2(path_.c_str(), MNT_DETACH);
  }
  small_tmpfs(const small_tmpfs&) = delete;
  small_tmpfs& operator=(const small_tmpfs&) = delete;

  bool mounted() const { return mounted_; }
  const std::string& error() const { return error_; }
  const fs::path& path() const { return path_; }

 private:
  temp_dir dir_;
  fs::path path_;
  bool mounted_ = false;
  std::string error_;
};

// Every .log file of the partition directory consists of whole batches: no torn write stays.
void expect_whole_batches(const fs::path& partition_dir) {
  for (const auto& entry : fs::directory_iterator(partition_dir)) {
    if (entry.path().extension() != ".log") continue;
    std::string bytes = read_file(entry.path());
    std::span<const uint8_t> rest(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    while (rest.size() >= 12) {
      size_t size = 12 + static_cast<size_t>(get_int32(rest, 8));
      if (size > rest.size()) break;
      rest = rest.subspan(size);
    }
    EXPECT_TRUE(rest.empty()) << entry.path() << " ends with " << rest.size()
                              << " bytes that are not a whole batch";
  }
}

std::vector<uint8_t> random_value_batch(std::mt19937& rng, size_t value_bytes) {
  std::string value(value_bytes, '\0');
  for (auto& ch : value) ch = static_cast<char>(rng());
  return value_batch(value);
}

void expect_all_acked_stored(uint16_t port, const std::map<int64_t, std::vector<uint8_t>>& acked) {
  auto stored = fetch_all(port, "d", 0);
  EXPECT_EQ(stored.size(), acked.size());
  for (const auto& [offset, batch] : acked) {
    auto it = stored.find(offset);
    ASSERT_NE(it, stored.end()) << "acknowledged offset " << offset << " lost";
    EXPECT_TRUE(same_batch(it->second, batch)) << "offset " << offset << " differs";
  }
}

TEST(full_disk, storage_error_then_recovery_when_space_returns) {
  small_tmpfs disk;
  if (!disk.mounted()) {
    GTEST_SKIP() << "cannot mount a tmpfs (needs root or CAP_SYS_ADMIN): " << disk.error();
  }
  const fs::path filler = disk.path() / "filler";
  {
    std::ofstream out(filler, std::ios::binary);
    std::string mib(1 << 20, 'f');
    out << mib;
    ASSERT_TRUE(out.good());
  }
  const fs::path logs = disk.path() / "logs";
  std::mt19937 rng(9);
  std::map<int64_t, std::vector<uint8_t>> acked;
  int64_t next_offset = 0;
  {
    broker_process broker({"--override", "log.segment.bytes=1048576"}, logs);
    ASSERT_NE(broker.port(), 0) << broker.output();
    ASSERT_EQ(create_topic(broker.port(), "d", 1), 0);
    raw_client c(broker.port());
    int32_t correlation_id = 0;
    int16_t first_failure = 0;
    // 50 KB batches: the 7 MiB left fill after ~140.
    for (int i = 0; i < 400 && first_failure == 0; ++i) {
      auto batch = random_value_batch(rng, 50'000);
      produce_answer a = produce_one(c, correlation_id++, "d", 0, batch);
      if (a.error_code == 0) {
        ASSERT_EQ(a.base_offset, next_offset);
        acked[next_offset++] = std::move(batch);
      } else {
        first_failure = a.error_code;
      }
    }
    ASSERT_EQ(first_failure, kafka_storage_error) << "after " << acked.size() << " batches";
    std::cout << "disk full after " << acked.size() << " acknowledged 50 KB batches\n";
    EXPECT_GT(acked.size(), 100u);
    // Still full: more attempts fail the same way (or fit, if a smaller gap remained), the
    // connection and the broker stay up, and no torn batch is left behind.
    for (int i = 0; i < 3; ++i) {
      auto batch = random_value_batch(rng, 50'000);
      produce_answer a = produce_one(c, correlation_id++, "d", 0, batch);
      ASSERT_TRUE(a.error_code == kafka_storage_error || a.error_code == 0) << a.error_code;
      if (a.error_code == 0) {
        ASSERT_EQ(a.base_offset, next_offset);
        acked[next_offset++] = std::move(batch);
      }
    }
    expect_whole_batches(logs / "d-0");
    EXPECT_TRUE(broker.process().wait_for_output("No space left on device", event_timeout))
        << broker.output();

    // Space returns: producing continues at the next offset.
    fs::remove(filler);
    for (int i = 0; i < 5; ++i) {
      auto batch = random_value_batch(rng, 50'000);
      produce_answer a = produce_one(c, correlation_id++, "d", 0, batch);
      ASSERT_EQ(a.error_code, 0) << "after the filler was deleted, attempt " << i;
      ASSERT_EQ(a.base_offset, next_offset);
      acked[next_offset++] = std::move(batch);
    }
    expect_all_acked_stored(broker.port(), acked);
    std::cout << acked.size() << " batches acknowledged and read back\n";
    broker.process().send_signal(SIGKILL);
    ASSERT_TRUE(broker.process().wait_exit(10s).has_value());
  }
  // After a crash: everything acknowledged is still there, whole, and appends continue.
  expect_whole_batches(logs / "d-0");
  broker_process again({"--override", "log.segment.bytes=1048576"}, logs);
  ASSERT_NE(again.port(), 0) << again.output();
  expect_all_acked_stored(again.port(), acked);
  raw_client c(again.port());
  auto batch = random_value_batch(rng, 1000);
  produce_answer a = produce_one(c, 1, "d", 0, batch);
  EXPECT_EQ(a.error_code, 0);
  EXPECT_EQ(a.base_offset, next_offset);
  auto st = again.stop();
  ASSERT_TRUE(st.has_value());
  EXPECT_TRUE(st->exited && st->code == 0) << again.output();
}

// Writes a file until the file system has not one free page left.
void fill_disk(const fs::path& file) {
  FILE* f = std::fopen(file.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  std::setvbuf(f, nullptr, _IONBF, 0);
  std::string page(4096, 'f');
  while (std::fwrite(page.data(), 1, page.size(), f) == page.size()) {
  }
  std::fclose(f);
}

// The index files are mapped and preallocated sparse, so storing an entry on a page that has no
// block yet faults (SIGBUS) when the disk is full, even though the .log write before it fit in
// its last page. Set up exactly that: 513 batches of 128 bytes with an index entry per batch
// fill the first page of the .index (512 entries), the disk is then filled, and the 514th
// batch needs a new index page while its 128 bytes fit in the .log's last page.
TEST(full_disk, index_entry_on_a_new_page_fails_cleanly) {
  small_tmpfs disk("size=2m");
  if (!disk.mounted()) {
    GTEST_SKIP() << "cannot mount a tmpfs (needs root or CAP_SYS_ADMIN): " << disk.error();
  }
  std::string value;
  while (value_batch(value).size() < 128) value += 'v';
  ASSERT_EQ(value_batch(value).size(), 128u);
  const fs::path logs = disk.path() / "logs";
  broker_process broker({"--override", "log.index.interval.bytes=0"}, logs);
  ASSERT_NE(broker.port(), 0) << broker.output();
  ASSERT_EQ(create_topic(broker.port(), "d", 1), 0);
  raw_client c(broker.port());
  std::map<int64_t, std::vector<uint8_t>> acked;
  for (int i = 0; i < 513; ++i) {
    std::string v = value;
    v[0] = static_cast<char>('a' + i % 26);
    auto batch = value_batch(v);
    produce_answer a = produce_one(c, i, "d", 0, batch);
    ASSERT_EQ(a.error_code, 0) << "batch " << i;
    acked[a.base_offset] = std::move(batch);
  }
  const fs::path segment = logs / "d-0" / "00000000000000000000.log";
  ASSERT_EQ(std::filesystem::file_size(segment), 513u * 128u);  // 3968 bytes left in its page
  const fs::path filler = disk.path() / "filler";
  fill_disk(filler);
  auto batch = value_batch(value);
  produce_answer a = produce_one(c, 1000, "d", 0, batch);
  EXPECT_EQ(a.error_code, kafka_storage_error);
  EXPECT_EQ(std::filesystem::file_size(segment), 513u * 128u);
  fs::remove(filler);
  a = produce_one(c, 1001, "d", 0, batch);
  ASSERT_EQ(a.error_code, 0);
  EXPECT_EQ(a.base_offset, 513);
  acked[513] = batch;
  expect_all_acked_stored(broker.port(), acked);
  auto st = broker.stop();
  ASSERT_TRUE(st.has_value());
  EXPECT_TRUE(st->exited && st->code == 0) << broker.output();
}

// One uncompressed batch of keyed records.
std::vector<uint8_t> keyed_batch(const std::vector<std::pair<std::string, std::string>>& records) {
  record::batch_builder_config config;
  config.batch_size = 64 << 20;
  record::batch_builder b(config);
  for (const auto& [key, value] : records) {
    b.try_append(1'700'000'000'000, record::as_bytes(key), record::as_bytes(value));
  }
  return *b.build();
}

// Writes a file that leaves `keep` bytes of the file system free (less, by a page at most).
void fill_disk_but(const fs::path& file, uint64_t keep) {
  struct statvfs st {};
  ASSERT_EQ(::statvfs(file.parent_path().c_str(), &st), 0);
  const uint64_t free_bytes = uint64_t{st.f_bavail} * st.f_frsize;
  ASSERT_GT(free_bytes, keep);
  std::ofstream out(file, std::ios::binary);
  const std::string page(4096, 'f');
  for (uint64_t written = 0; written + page.size() <= free_bytes - keep; written += page.size()) {
    out << page;
  }
  ASSERT_TRUE(out.good());
}

// Records produced to a compacted topic, then the cleaner started on a disk with too little
// room for the segment it would write (2 MB of cleaned records, 256 KiB free): the round fails
// with the cleaned files removed and the failure logged, the broker serves every record as it
// was acknowledged, a SIGKILL and restart on the still-full disk are valid, and once the
// filler goes the cleaner's next round (no restart) cleans: the latest value of every key.
TEST(full_disk, cleaner_round_fails_cleanly_and_a_later_round_cleans) {
  small_tmpfs disk;
  if (!disk.mounted()) {
    GTEST_SKIP() << "cannot mount a tmpfs (needs root or CAP_SYS_ADMIN): " << disk.error();
  }
  if (!have_program("kcat")) GTEST_SKIP() << "kcat not installed";
  const fs::path logs = disk.path() / "logs";
  const std::vector<std::string> args = {"--override", "log.cleaner.backoff.ms=100"};
  std::map<int64_t, std::vector<uint8_t>> acked;
  std::map<std::string, std::string> latest;
  int64_t active_base = -1;
  {
    // Written with the cleaner off, so that the first round runs on the full disk.
    std::vector<std::string> off = args;
    off.insert(off.end(), {"--override", "log.cleaner.enable=false"});
    broker_process broker(off, logs);
    ASSERT_NE(broker.port(), 0) << broker.output();
    ASSERT_EQ(create_topic(broker.port(), "d", 1,
                           {{"cleanup.policy", "compact"},
                            {"segment.bytes", "1048576"},
                            {"min.cleanable.dirty.ratio", "0.01"},
                            {"delete.retention.ms", "0"}}),
              0);
    raw_client c(broker.port());
    // 2000 keys once, then the first 1000 again: 3000 records of ~1 KB in three segments.
    int64_t next = 0;
    for (int i = 0; i < 3000; i += 10) {
      std::vector<std::pair<std::string, std::string>> records;
      for (int j = i; j < i + 10; ++j) {
        const std::string key = fmt::format("k{}", j % 2000);
        records.emplace_back(key, fmt::format("{}@{}:", key, j) + std::string(1000, 'v'));
        latest[key] = records.back().second;
      }
      auto batch = keyed_batch(records);
      produce_answer a = produce_one(c, i, "d", 0, batch);
      ASSERT_EQ(a.error_code, 0);
      ASSERT_EQ(a.base_offset, next);
      acked[next] = std::move(batch);
      next += 10;
    }
    auto st = broker.stop();
    ASSERT_TRUE(st.has_value());
    ASSERT_TRUE(st->exited && st->code == 0) << broker.output();
  }
  for (const auto& e : fs::directory_iterator(logs / "d-0")) {
    if (e.path().extension() == ".log") {
      active_base = std::max<int64_t>(active_base, std::stoll(e.path().stem().string()));
    }
  }
  ASSERT_GT(active_base, 2000);  // at least two rolled segments to clean
  const fs::path filler = disk.path() / "filler";
  fill_disk_but(filler, 256 * 1024);
  const std::string failed = "Failed to clean log d-0: ";
  {
    broker_process broker(args, logs);
    ASSERT_NE(broker.port(), 0) << broker.output();
    ASSERT_TRUE(broker.process().wait_for_output(failed, event_timeout)) << broker.output();
    EXPECT_NE(broker.output().find("No space left on device"), std::string::npos)
        << broker.output();
    EXPECT_EQ(broker.output().find("uncleanable"), std::string::npos) << broker.output();
    expect_all_acked_stored(broker.port(), acked);
    EXPECT_LT(cleaner_checkpoint(logs, "d"), active_base);
    broker.process().send_signal(SIGKILL);
    ASSERT_TRUE(broker.process().wait_exit(10s).has_value());
  }
  expect_whole_batches(logs / "d-0");
  broker_process broker(args, logs);
  ASSERT_NE(broker.port(), 0) << broker.output();
  // Still full: the restarted cleaner fails again, and tries again after each backoff.
  ASSERT_TRUE(broker.process().wait_for_output(failed, event_timeout)) << broker.output();
  expect_all_acked_stored(broker.port(), acked);
  fs::remove(filler);
  const auto deadline = clock_type::now() + 60s;
  while (cleaner_checkpoint(logs, "d") < active_base && clock_type::now() < deadline) {
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_EQ(cleaner_checkpoint(logs, "d"), active_base) << broker.output();
  auto [rc, out] = run_command(fmt::format(
      "timeout 60 kcat -C -b 127.0.0.1:{} -t d -p 0 -o beginning -e -q -f '%o %k %s\\n'",
      broker.port()));
  ASSERT_EQ(rc, 0) << out.substr(0, 2000);
  std::map<std::string, std::string> read;
  int64_t previous = -1, records = 0;
  std::istringstream in(out);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    int64_t offset = -1;
    std::string key, value;
    fields >> offset >> key >> value;
    EXPECT_GT(offset, previous) << line.substr(0, 40);
    previous = offset;
    if (offset < active_base) {
      EXPECT_TRUE(read.emplace(key, value).second) << key << " twice";
    }
    read[key] = value;
    ++records;
  }
  EXPECT_EQ(read, latest);
  EXPECT_EQ(previous, 2999);
  // Gone: the first versions of the keys written again below the active segment.
  EXPECT_EQ(records, 3000 - (active_base - 2000));
  for (const auto& e : fs::directory_iterator(logs / "d-0")) {
    const std::string name = e.path().filename().string();
    EXPECT_FALSE(name.ends_with(".cleaned") || name.ends_with(".swap")) << name;
  }
  auto st = broker.stop();
  ASSERT_TRUE(st.has_value());
  EXPECT_TRUE(st->exited && st->code == 0) << broker.output();
}

}  // namespace
}  // namespace tarn::test
