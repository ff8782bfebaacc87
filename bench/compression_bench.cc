// Compress and decompress throughput of Kafka's four codecs on a realistic records section:
// 1 MiB of v2 records (varint framing, 16-byte keys, ~1 KiB JSON values with repeating field
// names and varying numbers and words). Throughput counts uncompressed bytes; `ratio` is
// uncompressed / compressed.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "record/compression.h"

namespace {

using tarn::record::compression_type;

void put_varint(std::vector<uint8_t>& out, int64_t value) {
  auto v = static_cast<uint64_t>((value << 1) ^ (value >> 63));  // zigzag
  while (v >= 0x80) {
    out.push_back(static_cast<uint8_t>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<uint8_t>(v));
}

std::vector<uint8_t> records_section(size_t target_bytes) {
  std::mt19937 rng(1234);
  const char* words[] = {"checkout", "cart", "search", "login", "view", "refund", "ship", "pay"};
  std::vector<uint8_t> out;
  for (int64_t i = 0; out.size() < target_bytes; ++i) {
    std::string key = "user-" + std::to_string(100000000 + rng() % 900000000) + "-k";
    std::string value = "{\"event_id\":" + std::to_string(i) + ",\"event\":\"" + words[rng() % 8] +
                        "\",\"session\":\"" + std::to_string(rng()) + "\",\"items\":[";
    while (value.size() < 960) {
      value += "{\"sku\":\"SKU-" + std::to_string(rng() % 10000) +
               "\",\"qty\":" + std::to_string(1 + rng() % 5) +
               ",\"price\":" + std::to_string(rng() % 100000) + ",\"tag\":\"" + words[rng() % 8] +
               "\"},";
    }
    value += "{}]}";
    std::vector<uint8_t> body;
    body.push_back(0);        // attributes
    put_varint(body, i * 3);  // timestamp delta
    put_varint(body, i);      // offset delta
    put_varint(body, static_cast<int64_t>(key.size()));
    body.insert(body.end(), key.begin(), key.end());
    put_varint(body, static_cast<int64_t>(value.size()));
    body.insert(body.end(), value.begin(), value.end());
    put_varint(body, 0);  // header count
    put_varint(out, static_cast<int64_t>(body.size()));
    out.insert(out.end(), body.begin(), body.end());
  }
  return out;
}

const std::vector<uint8_t>& section() {
  static const std::vector<uint8_t> s = records_section(1024 * 1024);
  return s;
}

void bm_compress(benchmark::State& state, compression_type type) {
  const auto& input = section();
  size_t compressed_size = 0;
  for (auto _ : state) {
    auto c = tarn::record::compress(type, input);
    if (!c) state.SkipWithError(c.error().message.c_str());
    compressed_size = c ? c->size() : 1;
    benchmark::DoNotOptimize(c);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * input.size()));
  state.counters["ratio"] =
      static_cast<double>(input.size()) / static_cast<double>(compressed_size);
}

void bm_decompress(benchmark::State& state, compression_type type) {
  const auto& input = section();
  auto c = tarn::record::compress(type, input);
  if (!c) {
    state.SkipWithError(c.error().message.c_str());
    return;
  }
  for (auto _ : state) {
    auto d = tarn::record::decompress(type, *c, input.size());
    if (!d) state.SkipWithError(d.error().message.c_str());
    benchmark::DoNotOptimize(d);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * input.size()));
  state.counters["ratio"] = static_cast<double>(input.size()) / static_cast<double>(c->size());
}

BENCHMARK_CAPTURE(bm_compress, gzip, compression_type::gzip)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bm_compress, snappy, compression_type::snappy)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bm_compress, lz4, compression_type::lz4)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bm_compress, zstd, compression_type::zstd)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bm_decompress, gzip, compression_type::gzip)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bm_decompress, snappy, compression_type::snappy)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bm_decompress, lz4, compression_type::lz4)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(bm_decompress, zstd, compression_type::zstd)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
