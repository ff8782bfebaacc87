// Kafka's own DumpLogSegments (Apache Kafka 4.4.0, run by scripts/kafka-ref) reads the .log,
// .index and .timeindex files tarn writes: every batch valid at the position tarn put it, every
// index entry pointing where tarn says. Skipped when the script, java or the cached jars are
// missing (the test never downloads).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "storage/log.h"
#include "storage/test_batches.h"

namespace tarn::storage {
namespace {

using testing::make_batch;
using testing::temp_dir;

std::string kafka_ref_script() {
  if (const char* s = std::getenv("TARN_KAFKA_REF")) return s;
  return std::string(TARN_SOURCE_DIR) + "/scripts/kafka-ref";
}

bool kafka_ref_usable(const std::string& script) {
  const char* home = std::getenv("HOME");
  std::string cache = std::getenv("TARN_CACHE") ? std::getenv("TARN_CACHE")
                                                : std::string(home ? home : "") + "/.cache/tarn";
  return fs::exists(script) && fs::exists(cache + "/kafka-4.4.0/libs.stamp") &&
         std::system("command -v java >/dev/null 2>&1") == 0;
}

std::string run(const std::string& command) {
  std::string out;
  FILE* p = ::popen(command.c_str(), "r");
  if (p == nullptr) return out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  ::pclose(p);
  return out;
}

TEST(KafkaInterop, DumpLogSegmentsReadsTarnsSegmentsAndIndexes) {
  std::string script = kafka_ref_script();
  if (!kafka_ref_usable(script)) GTEST_SKIP() << "no Kafka 4.4.0 reference tools at " << script;
  temp_dir dir;
  log_options o;
  o.dir = dir.path() / "interop-0";
  o.tp = {"interop", 0};
  o.config.segment_bytes = 20000;
  o.config.index_interval_bytes = 1000;
  o.config.segment_index_bytes = 4096;
  o.had_clean_shutdown = true;
  struct written {
    offset_t base, last;
    int64_t position;
  };
  std::vector<written> first_segment;
  std::vector<offset_position> index_entries;
  std::vector<timestamp_offset> time_entries;
  {
    auto l = log::open(o);
    ASSERT_TRUE(l);
    for (int i = 0; i < 60; ++i) {
      offset_t base = (*l)->log_end_offset();
      auto b = make_batch(base, 4, 1700000000000 + i * 1000, 150 + (i % 4) * 60);
      int64_t position = (*l)->segment_count() == 1 ? (*l)->size_bytes() : -1;
      ASSERT_TRUE((*l)->append(b, 0));
      if ((*l)->segment_count() == 1) first_segment.push_back({base, base + 3, position});
    }
    ASSERT_GT((*l)->segment_count(), 1);
    ASSERT_TRUE((*l)->close());
  }
  fs::path seg = o.dir / "00000000000000000000";
  {
    auto idx = offset_index::open(seg.string() + ".index", 0, 4096, false);
    auto tidx = time_index::open(seg.string() + ".timeindex", 0, 4096, false);
    ASSERT_TRUE(idx && tidx);
    for (int32_t i = 0; i < (*idx)->entries(); ++i) index_entries.push_back((*idx)->entry_at(i));
    for (int32_t i = 0; i < (*tidx)->entries(); ++i) time_entries.push_back((*tidx)->entry_at(i));
  }
  ASSERT_GT(index_entries.size(), 3u);

  std::string out = run(script + " tool dump-log --files " + seg.string() + ".log," + seg.string() +
                        ".index," + seg.string() + ".timeindex 2>&1");
  ASSERT_NE(out.find("Dumping " + seg.string() + ".log"), std::string::npos) << out;
  for (const written& w : first_segment) {
    std::ostringstream want;
    want << "baseOffset: " << w.base << " lastOffset: " << w.last << " count: 4 ";
    size_t at = out.find(want.str());
    ASSERT_NE(at, std::string::npos) << want.str() << "\n" << out;
    std::string line = out.substr(at, out.find('\n', at) - at);
    EXPECT_NE(line.find("position: " + std::to_string(w.position) + " "), std::string::npos)
        << line;
    EXPECT_NE(line.find("isvalid: true"), std::string::npos) << line;
  }
  for (const offset_position& e : index_entries) {
    std::ostringstream want;
    want << "offset: " << e.offset << " position: " << e.position;
    EXPECT_NE(out.find(want.str()), std::string::npos) << want.str() << "\n" << out;
  }
  for (const timestamp_offset& e : time_entries) {
    std::ostringstream want;
    want << "timestamp: " << e.timestamp << " offset: " << e.offset;
    EXPECT_NE(out.find(want.str()), std::string::npos) << want.str() << "\n" << out;
  }
  EXPECT_EQ(out.find("invalid bytes"), std::string::npos) << out;
  EXPECT_EQ(out.find("ismatch"), std::string::npos) << out;  // "Mismatches", "mismatch"
  EXPECT_EQ(out.find("out of order"), std::string::npos) << out;
  EXPECT_EQ(out.find("Exception"), std::string::npos) << out;

  std::string sanity = run(script + " tool dump-log --index-sanity-check --files " + seg.string() +
                           ".index," + seg.string() + ".timeindex 2>&1");
  EXPECT_NE(sanity.find(seg.string() + ".index passed sanity check."), std::string::npos) << sanity;
  EXPECT_NE(sanity.find(seg.string() + ".timeindex passed sanity check."), std::string::npos)
      << sanity;
}

}  // namespace
}  // namespace tarn::storage
