// Test helper: lays out topics in a stopped broker's log directory the way tarn keeps them
// (tarn-topics + <topic>-0/<base offset>.log), from the real-client segment fixtures written by
// Kafka 4.4.0 (tests/fixtures/real-clients). Started without a clean-shutdown marker, tarn
// recovers the segments and rebuilds their indexes, then serves them.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "storage/topic_metadata.h"

namespace tarn::test {

inline std::filesystem::path fixture_dir() {
  return std::filesystem::path(TARN_SOURCE_DIR) / "tests/fixtures/real-clients";
}

// The 15 intact fixtures: {java, kcat, python} x {none, gzip, snappy, lz4, zstd}.
inline std::vector<std::string> all_fixture_names() {
  std::vector<std::string> out;
  for (const char* client : {"java", "kcat", "python"}) {
    for (const char* codec : {"none", "gzip", "snappy", "lz4", "zstd"}) {
      out.push_back(std::string(client) + "-" + codec);
    }
  }
  return out;
}

inline std::string read_binary(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// The topic id tests give to the n-th placed topic.
inline storage::uuid fixture_topic_id(size_t n) { return storage::uuid{0x7461726e, n + 1}; }

struct placed_segment {
  std::string topic;
  int64_t base_offset = 0;
  std::string bytes;
};

// Adds `delta` to the baseOffset of every batch (the CRC does not cover it), so a fixture can
// serve as a later segment.
inline std::string shift_offsets(std::string bytes, int64_t delta) {
  size_t pos = 0;
  while (pos + 12 <= bytes.size()) {
    int64_t base = 0;
    for (int i = 0; i < 8; ++i) base = (base << 8) | static_cast<uint8_t>(bytes[pos + i]);
    base += delta;
    for (int i = 7; i >= 0; --i) {
      bytes[pos + static_cast<size_t>(i)] = static_cast<char>(base & 0xff);
      base >>= 8;
    }
    int32_t len = 0;
    for (int i = 8; i < 12; ++i) len = (len << 8) | static_cast<uint8_t>(bytes[pos + i]);
    pos += 12 + static_cast<size_t>(len);
  }
  return bytes;
}

// Writes tarn-topics (one partition per topic, in first-seen order) and the segments.
inline void place_segments(const std::filesystem::path& data_dir,
                           const std::vector<placed_segment>& segments) {
  std::filesystem::create_directories(data_dir);
  std::vector<std::string> topics;
  for (const auto& s : segments) {
    if (std::find(topics.begin(), topics.end(), s.topic) == topics.end()) topics.push_back(s.topic);
    auto dir = data_dir / (s.topic + "-0");
    std::filesystem::create_directories(dir);
    char name[32];
    std::snprintf(name, sizeof(name), "%020lld.log", static_cast<long long>(s.base_offset));
    std::ofstream(dir / name, std::ios::binary) << s.bytes;
  }
  std::string meta = "0\n" + std::to_string(topics.size()) + "\n";
  // retention.ms=-1: the fixtures' records are from 2026-01-01, older than the default 7 days,
  // and the broker's retention task (as Kafka's) would delete them 30 s after the start.
  for (size_t i = 0; i < topics.size(); ++i) {
    meta += topics[i] + " " + fixture_topic_id(i).to_string() + " 1 1\nretention.ms=-1\n";
  }
  std::ofstream(data_dir / "tarn-topics", std::ios::binary) << meta;
}

// Each named fixture as topic `<name>` (its .log as segment 0).
inline void place_fixtures(const std::filesystem::path& data_dir,
                           const std::vector<std::string>& names) {
  std::vector<placed_segment> segs;
  for (const auto& n : names) segs.push_back({n, 0, read_binary(fixture_dir() / (n + ".log"))});
  place_segments(data_dir, segs);
}

}  // namespace tarn::test
