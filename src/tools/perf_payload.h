// The payloads of kafka-producer-perf-test's --record-size: Kafka 4.4's ProducerPerformance fills
// every record's payload anew with random uppercase letters (generateRandomPayload), so records
// differ and compress as random A-Z text does (lz4 barely; gzip and zstd to about 0.6). Shared by
// `tarn perf produce` and bench/rdkafka_perf, so both load generators send the same kind of
// records.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <span>

namespace tarn::tools {

// A cheap generator of letters: xorshift64* words, eight letters from each, a byte b becoming
// 'A' + b * 26 / 256 (letters come out with probability 9/256 or 10/256, 4.70 bits each as
// Java's uniform A-Z; about 0.15 ns a letter, so a 1 KiB payload costs the tool ~150 ns, not the
// several microseconds of one std::mt19937 call per letter).
class payload_letters {
 public:
  explicit payload_letters(uint64_t seed) {
    for (auto& state : state_) state = (seed += 0x9E3779B97F4A7C15ull) | 1;  // never 0
  }

  void fill(std::span<char> out) {
    size_t at = 0;
    // Four independent generators, so their multiplies overlap.
    for (; at + 32 <= out.size(); at += 32) {
      for (size_t i = 0; i < 4; ++i) store(out.data() + at + 8 * i, letters(next(state_[i])), 8);
    }
    for (; at < out.size(); at += 8) {
      store(out.data() + at, letters(next(state_[0])), std::min<size_t>(8, out.size() - at));
    }
  }

 private:
  static uint64_t next(uint64_t& state) {  // xorshift64*
    state ^= state >> 12;
    state ^= state << 25;
    state ^= state >> 27;
    return state * 0x2545F4914F6CDD1Dull;
  }
  static uint64_t letters(uint64_t r) {
    constexpr uint64_t even = 0x00FF00FF00FF00FFull;
    // Per 16-bit lane, b * 26 < 65536: one multiply scales four bytes at once.
    const uint64_t lo = ((r & even) * 26 >> 8) & even;
    const uint64_t hi = (((r >> 8) & even) * 26 >> 8) & even;
    return (lo | (hi << 8)) + 0x4141414141414141ull;  // + 'A' in every byte
  }
  static void store(char* to, uint64_t word, size_t n) { std::memcpy(to, &word, n); }

  uint64_t state_[4];
};

}  // namespace tarn::tools
