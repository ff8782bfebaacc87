// The log cleaner with many distinct keys and a small dedupe buffer (issue 21): the offset map
// holds a fraction of the keys, so the dirty part is cleaned in several rounds, each up to what
// the map held (Kafka's cleaner does the same). The result must be exactly the latest record of
// every key, and the broker's RSS must not grow with the number of keys. 300,000 keys here (a
// few seconds); TARN_SOAK_CLEANER_KEYS=10000000 (make soak) runs the same test with 10 M keys.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "cleaner_util.h"
#include "produce_util.h"

namespace tarn::test {
namespace {

namespace fs = std::filesystem;

int64_t key_count() {
  const char* soak = std::getenv("TARN_SOAK_CLEANER_KEYS");
  return soak != nullptr ? std::strtoll(soak, nullptr, 10) : 300'000;
}

// Key i's latest value: a tombstone (kept: delete.retention.ms is a day) for every 101st key,
// version 1 for every 3rd, else version 0.
std::optional<std::string> latest_value(int64_t i) {
  if (i % 101 == 0) return std::nullopt;
  return fmt::format("v{}", i % 3 == 0 ? 1 : 0);
}

std::string key_of(int64_t i) { return fmt::format("k{:08}", i); }

int64_t active_segment_base(const fs::path& partition_dir) {
  int64_t base = -1;
  for (const auto& e : fs::directory_iterator(partition_dir)) {
    if (e.path().extension() != ".log") continue;
    base = std::max<int64_t>(base, std::stoll(e.path().stem().string()));
  }
  return base;
}

size_t count_of(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(log_cleaner_many_keys, several_rounds_keep_exactly_the_latest_per_key_in_bounded_rss) {
  if (!have_program("kcat")) GTEST_SKIP() << "kcat not installed";
  const int64_t keys = key_count();
  // A map of an eighth of the keys: Kafka's 24-byte slots (16-byte hash + offset) filled to
  // log.cleaner.io.buffer.load.factor 0.9, so about eight rounds clean the first pass.
  const int64_t map_keys = keys / 8;
  const int64_t dedupe_bytes = std::max<int64_t>(map_keys * 24 * 10 / 9, 64 * 1024);
  // ~30 bytes a record: 16 segments or so, never fewer than Kafka's 1 MiB.
  const int64_t segment_bytes = std::max<int64_t>(keys * 30 / 16, 1 << 20);
  temp_dir work;
  const fs::path data = work.path() / "data";
  const std::vector<std::string> args = {
      "--override", "log.cleaner.backoff.ms=100", "--override",
      fmt::format("log.cleaner.dedupe.buffer.size={}", dedupe_bytes)};
  int64_t produced = 0;
  {
    // Written with the cleaner off, so that the second start's memory is the cleaner's alone.
    std::vector<std::string> off = args;
    off.insert(off.end(), {"--override", "log.cleaner.enable=false"});
    broker_process broker(off, data);
    ASSERT_NE(broker.port(), 0) << broker.output();
    ASSERT_EQ(create_topic(broker.port(), "many", 1,
                           {{"cleanup.policy", "compact"},
                            {"segment.bytes", std::to_string(segment_bytes)},
                            {"min.cleanable.dirty.ratio", "0.01"}}),
              0);
    raw_client c(broker.port());
    int32_t correlation_id = 0;
    // Every key at version 0, every 3rd again at version 1, every 101st deleted: 2000 records a
    // batch, in key order.
    auto send_pass = [&](int64_t every, bool tombstone, int version) {
      record::batch_builder_config config;
      config.batch_size = 64 << 20;
      std::optional<record::batch_builder> b;
      auto flush = [&] {
        if (!b || b->empty()) return;
        const int32_t count = b->record_count();  // build() starts the next batch
        auto batch = *b->build();
        produce_answer a = produce_one(c, correlation_id++, "many", 0, batch);
        ASSERT_EQ(a.error_code, 0);
        ASSERT_EQ(a.base_offset, produced);
        produced += count;
        b.reset();
      };
      for (int64_t i = 0; i < keys; i += every) {
        if (!b) b.emplace(config);
        const std::string key = key_of(i);
        const std::string value = fmt::format("v{}", version);
        b->try_append(
            1'700'000'000'000, record::as_bytes(key),
            tombstone ? std::nullopt : std::optional<record::bytes_view>(record::as_bytes(value)));
        if (b->record_count() == 2000) flush();
      }
      flush();
    };
    send_pass(1, false, 0);
    send_pass(3, false, 1);
    send_pass(101, true, 0);
    auto st = broker.stop(60s);
    ASSERT_TRUE(st.has_value());
    ASSERT_TRUE(st->exited && st->code == 0) << broker.output();
  }
  const int64_t active_base = active_segment_base(data / "many-0");
  ASSERT_GT(active_base, keys);  // the first pass is in rolled segments

  broker_process broker(args, data);
  ASSERT_NE(broker.port(), 0) << broker.output();
  const long rss_at_start = broker.process().rss_kib();
  ASSERT_GT(rss_at_start, 0);
  // Bounded: ~8 rounds, each rewriting the log from its start (one second or two for 300 k keys
  // in the release build; the bound is for the soak's 10 M and for a loaded machine).
  const auto deadline = clock_type::now() + 60s + std::chrono::seconds(keys / 20'000);
  while (cleaner_checkpoint(data, "many") < active_base && clock_type::now() < deadline) {
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_EQ(cleaner_checkpoint(data, "many"), active_base) << broker.output().substr(0, 4000);
  const long peak = broker.process().peak_rss_kib();
  const size_t rounds = count_of(broker.output(), "Log cleaner thread 0 cleaned log many-0");
  std::printf(
      "%lld keys, %lld records, dedupe buffer %lld bytes: %zu rounds; RSS %ld KiB at "
      "start, peak %ld KiB\n",
      static_cast<long long>(keys), static_cast<long long>(produced),
      static_cast<long long>(dedupe_bytes), rounds, rss_at_start, peak);
  // One round per map's worth of the first pass at least (the map fills to 0.9 of its slots).
  EXPECT_GE(rounds, static_cast<size_t>(keys / (dedupe_bytes / 24)));
  // The cleaner's memory is its map, its I/O buffers and a segment being written, whatever the
  // number of keys: 32 MiB of headroom beside the map (the 10 M soak's map is 33 MB; an
  // in-memory map of every key would be 10 M x 24 bytes and more).
  EXPECT_LT(peak - rss_at_start,
            memory_growth_bound_kib(0, 32 * 1024 + static_cast<long>(dedupe_bytes / 1024)));

  // Read it all back with librdkafka, through a file (the soak's 10 M lines).
  const fs::path out = work.path() / "read.txt";
  auto [rc, err] = run_command(fmt::format(
      "timeout {} kcat -C -b 127.0.0.1:{} -t many -p 0 -o beginning -e -q -Z -f '%o %k %s\\n' > {}",
      60 + keys / 20'000, broker.port(), out.string()));
  ASSERT_EQ(rc, 0) << err;
  std::vector<uint8_t> seen(static_cast<size_t>(keys), 0);
  std::vector<std::string> last(static_cast<size_t>(keys));
  std::ifstream in(out);
  int64_t offset = -1, previous = -1, records = 0, failures = 0;
  std::string key, value;
  while (in >> offset >> key >> value && failures < 10) {
    const int64_t i = std::stoll(key.substr(1));
    if (offset <= previous || i < 0 || i >= keys) {
      ADD_FAILURE() << "offset " << offset << " after " << previous << ", key " << key;
      ++failures;
    }
    previous = offset;
    ++records;
    auto& s = seen[static_cast<size_t>(i)];
    if (offset < active_base && s++ != 0) {
      ADD_FAILURE() << key << " twice below the cleaned offset " << active_base;
      ++failures;
    }
    last[static_cast<size_t>(i)] = value;
  }
  EXPECT_EQ(previous, produced - 1);
  for (int64_t i = 0; i < keys && failures < 10; ++i) {
    const auto want = latest_value(i);
    if (last[static_cast<size_t>(i)] != (want ? *want : "NULL")) {
      ADD_FAILURE() << key_of(i) << " read as '" << last[static_cast<size_t>(i)] << "'";
      ++failures;
    }
  }
  std::printf("%lld records read back\n", static_cast<long long>(records));
  auto st = broker.stop(60s);
  ASSERT_TRUE(st.has_value());
  EXPECT_TRUE(st->exited && st->code == 0);
}

}  // namespace
}  // namespace tarn::test
