// libFuzzer target for record::decompress. The first byte picks the codec (its value mod 5, in
// attribute order: none, gzip, snappy, lz4, zstd); the rest is the compressed input, decoded with
// a 1 MiB bound. Whatever decodes must stay within the bound and survive a round trip through
// compress. Seeds (fuzz/corpus/decompress_fuzz) come from scripts/gen-codec-fixtures.
#include <cstdint>
#include <cstdlib>
#include <span>

#include "record/compression.h"

namespace {
constexpr size_t max_output_bytes = 1024 * 1024;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using tarn::record::compression_type;
  if (size == 0) return 0;
  auto type = static_cast<compression_type>(data[0] % 5);
  std::span<const uint8_t> input(data + 1, size - 1);
  auto decoded = tarn::record::decompress(type, input, max_output_bytes);
  if (!decoded) return 0;
  if (decoded->size() > max_output_bytes) std::abort();
  auto again = tarn::record::compress(type, *decoded);
  if (!again) std::abort();
  auto round_trip = tarn::record::decompress(type, *again, max_output_bytes);
  if (!round_trip || *round_trip != *decoded) std::abort();
  return 0;
}
