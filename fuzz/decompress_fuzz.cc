// libFuzzer target for record::decompress. The first byte picks the codec (its value mod 5, in
// attribute order: none, gzip, snappy, lz4, zstd); the rest is the compressed input, decoded with
// a 1 MiB bound. Whatever decodes must stay within the bound and survive a round trip through
// compress; decompress_stream, read in pieces of 1-4096 bytes (the size from the input's last
// byte), must give the same bytes or the same failure. Seeds (fuzz/corpus/decompress_fuzz) come
// from scripts/gen-codec-fixtures.
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

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

  // The stream agrees with decompress() up to the bound.
  const size_t piece = 1 + (size > 1 ? data[size - 1] * 16u : 0u);
  std::vector<uint8_t> streamed;
  bool stream_failed = false;
  if (auto stream = tarn::record::decompress_stream::open(type, input); stream) {
    std::vector<uint8_t> buf(piece);
    while (streamed.size() <= max_output_bytes) {
      auto n = stream->read(buf);
      if (!n) {
        stream_failed = true;
        break;
      }
      if (*n == 0) break;
      if (*n > piece) std::abort();
      streamed.insert(streamed.end(), buf.begin(), buf.begin() + static_cast<ptrdiff_t>(*n));
    }
    if (stream->position() != streamed.size()) std::abort();
  } else {
    stream_failed = true;
  }
  if (decoded && (stream_failed || streamed != *decoded)) std::abort();
  if (!decoded && !stream_failed && streamed.size() <= max_output_bytes) std::abort();

  if (!decoded) return 0;
  if (decoded->size() > max_output_bytes) std::abort();
  auto again = tarn::record::compress(type, *decoded);
  if (!again) std::abort();
  auto round_trip = tarn::record::decompress(type, *again, max_output_bytes);
  if (!round_trip || *round_trip != *decoded) std::abort();
  return 0;
}
