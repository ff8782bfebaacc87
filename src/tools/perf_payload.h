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

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace tarn::tools {

// A cheap generator of letters, a byte b becoming 'A' + b * 26 / 256 (letters come out with
// probability 9/256 or 10/256, 4.70 bits each as Java's uniform A-Z). On x86-64: four
// xorshift128+ generators in two SSE2 registers, sixteen letters a step (about 0.06 ns a letter:
// the scalar xorshift64* below, eight letters a step, was ~0.15 ns, 8% of `tarn perf produce`'s
// CPU at 100 B records; rdkafka_perf fills its payloads with the same class).
class payload_letters {
 public:
  explicit payload_letters(uint64_t seed) {
#if defined(__SSE2__)
    uint64_t words[8];
    for (auto& w : words) w = splitmix(seed) | 1;  // a lane's state is never all zero
    std::memcpy(state_, words, sizeof words);
#else
    for (auto& state : state_) state = (seed += 0x9E3779B97F4A7C15ull) | 1;  // never 0
#endif
  }

  void fill(std::span<char> out) {
    size_t at = 0;
#if defined(__SSE2__)
    // Two independent generators, so their steps overlap.
    for (; at + 32 <= out.size(); at += 32) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out.data() + at),
                       letters(next(state_[0], state_[1])));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out.data() + at + 16),
                       letters(next(state_[2], state_[3])));
    }
    for (; at < out.size(); at += 16) {
      const __m128i word = letters(next(state_[0], state_[1]));
      if (at + 16 <= out.size()) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(out.data() + at), word);
      } else {
        alignas(16) char tail[16];
        _mm_store_si128(reinterpret_cast<__m128i*>(tail), word);
        std::memcpy(out.data() + at, tail, out.size() - at);
      }
    }
#else
    // Four independent generators, so their multiplies overlap.
    for (; at + 32 <= out.size(); at += 32) {
      for (size_t i = 0; i < 4; ++i) store(out.data() + at + 8 * i, letters(next(state_[i])), 8);
    }
    for (; at < out.size(); at += 8) {
      store(out.data() + at, letters(next(state_[0])), std::min<size_t>(8, out.size() - at));
    }
#endif
  }

 private:
#if defined(__SSE2__)
  static uint64_t splitmix(uint64_t& seed) {
    uint64_t z = (seed += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  // xorshift128+ in each 64-bit lane: shifts, xors and an add, all SSE2 (xorshift64*'s 64-bit
  // multiply has no SSE2 form).
  static __m128i next(__m128i& s0, __m128i& s1) {
    __m128i x = s0;
    const __m128i y = s1;
    s0 = y;
    x = _mm_xor_si128(x, _mm_slli_epi64(x, 23));
    s1 = _mm_xor_si128(_mm_xor_si128(x, y),
                       _mm_xor_si128(_mm_srli_epi64(x, 17), _mm_srli_epi64(y, 26)));
    return _mm_add_epi64(s1, y);
  }
  // Per 16-bit lane, with the byte in the lane's high half, the high half of lane * 26 is
  // byte * 26 >> 8.
  static __m128i letters(__m128i r) {
    const __m128i k26 = _mm_set1_epi16(26);
    const __m128i high = _mm_mulhi_epu16(_mm_and_si128(r, _mm_set1_epi16(-256)), k26);
    const __m128i low = _mm_mulhi_epu16(_mm_slli_epi16(r, 8), k26);
    return _mm_add_epi8(_mm_or_si128(low, _mm_slli_epi16(high, 8)), _mm_set1_epi8('A'));
  }

  __m128i state_[4];  // two generators: (state_[0], state_[1]) and (state_[2], state_[3])
#else
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
#endif
};

}  // namespace tarn::tools
