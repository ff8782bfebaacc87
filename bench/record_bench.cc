// Record layer throughput: CRC-32C beside memcpy on the same buffer, batch validation at its
// three depths, record iteration and batch encoding. Bytes/s and items/s are per iteration's
// real work, so the numbers compare directly with the memory bandwidth line.
#include <benchmark/benchmark.h>

#include <cstring>
#include <string>
#include <vector>

#include "record/batch_builder.h"
#include "record/crc32c.h"
#include "record/record.h"
#include "record/record_batch.h"
#include "record/record_stream.h"

namespace tarn::record {
namespace {

constexpr size_t mib = size_t{1} << 20;

std::vector<uint8_t> pseudo_random_bytes(size_t n) {
  std::vector<uint8_t> out(n);
  uint64_t x = 0x9e3779b97f4a7c15ull;
  for (auto& b : out) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    b = static_cast<uint8_t>(x);
  }
  return out;
}

// A batch of about `batch_bytes` made of records with `value_bytes` values and 8-byte keys.
std::vector<uint8_t> make_batch(size_t batch_bytes, size_t value_bytes, int32_t* count = nullptr,
                                compression_type compression = compression_type::none) {
  const auto payload = pseudo_random_bytes(value_bytes + 8);
  batch_builder b({.batch_size = batch_bytes,
                   .compression = compression,
                   .producer_id = 1,
                   .producer_epoch = 0,
                   .base_sequence = 0});
  timestamp_ms ts = 1794025864656;
  while (b.try_append(ts++, bytes_view(payload.data(), 8),
                      bytes_view(payload.data() + 8, value_bytes)) == append_result::appended) {
  }
  if (count) *count = b.record_count();
  return std::move(*b.build());
}

void BM_memcpy_1MiB(benchmark::State& state) {
  const auto src = pseudo_random_bytes(mib);
  std::vector<uint8_t> dst(mib);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), mib);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * mib));
}
BENCHMARK(BM_memcpy_1MiB);

void BM_crc32c_1MiB(benchmark::State& state) {
  const auto buf = pseudo_random_bytes(mib);
  for (auto _ : state) benchmark::DoNotOptimize(crc32c(buf));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * mib));
}
BENCHMARK(BM_crc32c_1MiB);

// What the broker checks before an append and log recovery checks: header + CRC.
void BM_validate_batch_header_crc_1MiB(benchmark::State& state) {
  const auto batch = make_batch(mib, 1024);
  for (auto _ : state) {
    auto r = validate_batch(record_batch_view(batch), offset_rule::producer);
    benchmark::DoNotOptimize(r);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * batch.size()));
}
BENCHMARK(BM_validate_batch_header_crc_1MiB);

// Header, CRC and the walk over every record of a 1 MiB uncompressed batch of 1 KiB records.
void BM_validate_batch_full_1MiB_1KiB_records(benchmark::State& state) {
  int32_t count = 0;
  const auto batch = make_batch(mib, 1024, &count);
  for (auto _ : state) {
    auto r = validate_batch_full(record_batch_view(batch), offset_rule::producer, 0);
    if (!r || r->count != count) state.SkipWithError("validation failed");
    benchmark::DoNotOptimize(r);
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * batch.size()));
  state.SetItemsProcessed(state.iterations() * count);
}
BENCHMARK(BM_validate_batch_full_1MiB_1KiB_records);

// A compressed batch of 1 MiB of 1 KiB records (~1000; every record carries the same
// pseudo-random bytes, so zstd, whose window spans records, compresses it far more than lz4's
// 64 KiB blocks do: bytes/s counts compressed bytes, items/s records), validated as the broker
// did before record_stream: the whole records section decompressed into one buffer, then walked.
void BM_validate_compressed_inflate_then_walk(benchmark::State& state) {
  const auto type = static_cast<compression_type>(state.range(0));
  int32_t count = 0;
  const auto batch = make_batch(mib, 1024, &count, type);
  const record_batch_view v(batch);
  for (auto _ : state) {
    auto records = batch_records::open(v, size_t{1} << 30);
    record_reader reader = records->reader();
    record_view r;
    int32_t n = 0;
    while (reader.next(r)) ++n;
    if (n != count) state.SkipWithError("walk failed");
    benchmark::DoNotOptimize(n);
  }
  state.SetLabel(std::string(compression_name(type)));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * batch.size()));
  state.SetItemsProcessed(state.iterations() * count);
}
BENCHMARK(BM_validate_compressed_inflate_then_walk)
    ->Arg(static_cast<int>(compression_type::lz4))
    ->Arg(static_cast<int>(compression_type::zstd));

// The same batch validated as the broker does now: streamed through a 64 KiB window with keys
// and values skipped (validate_records -> record_stream).
void BM_validate_compressed_streamed(benchmark::State& state) {
  const auto type = static_cast<compression_type>(state.range(0));
  int32_t count = 0;
  const auto batch = make_batch(mib, 1024, &count, type);
  const record_batch_view v(batch);
  for (auto _ : state) {
    auto r = validate_records(v, size_t{1} << 30);
    if (!r || r->count != count) state.SkipWithError("validation failed");
    benchmark::DoNotOptimize(r);
  }
  state.SetLabel(std::string(compression_name(type)));
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * batch.size()));
  state.SetItemsProcessed(state.iterations() * count);
}
BENCHMARK(BM_validate_compressed_streamed)
    ->Arg(static_cast<int>(compression_type::lz4))
    ->Arg(static_cast<int>(compression_type::zstd));

// Decoding every record (zero-copy views) of a batch of 100-byte records.
void BM_iterate_100B_records(benchmark::State& state) {
  int32_t count = 0;
  const auto batch = make_batch(mib, 100 - 8 - 8, &count);  // ~100 bytes encoded each
  const record_batch_view v(batch);
  for (auto _ : state) {
    record_reader reader(v.records_bytes());
    record_view r;
    size_t sum = 0;
    while (reader.next(r)) sum += r.value->size();
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(state.iterations() * count);
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * batch.size()));
  state.counters["record_bytes"] = static_cast<double>(v.records_bytes().size()) / count;
}
BENCHMARK(BM_iterate_100B_records);

// Building a batch (encode each record, header, CRC) of 100-byte values, batch.size 16 KiB or
// 1 MiB.
void BM_build_batch_100B_values(benchmark::State& state) {
  const size_t batch_size = static_cast<size_t>(state.range(0));
  const auto payload = pseudo_random_bytes(100 + 8);
  int64_t records = 0;
  for (auto _ : state) {
    batch_builder b(
        {.batch_size = batch_size, .producer_id = 1, .producer_epoch = 0, .base_sequence = 0});
    timestamp_ms ts = 1794025864656;
    while (b.try_append(ts++, bytes_view(payload.data(), 8), bytes_view(payload.data() + 8, 100)) ==
           append_result::appended) {
    }
    records += b.record_count();
    auto out = b.build();
    benchmark::DoNotOptimize(out);
  }
  state.SetItemsProcessed(records);
}
BENCHMARK(BM_build_batch_100B_values)->Arg(16384)->Arg(1 << 20);

}  // namespace
}  // namespace tarn::record

BENCHMARK_MAIN();
