// Kafka's four codecs applied to the records section of a v2 batch (everything after the 61-byte
// header), framed exactly as Kafka frames them. See docs/record-batch.md#compression.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace tarn::record {

// The values of attribute bits 0-2.
enum class compression_type : uint8_t { none = 0, gzip = 1, snappy = 2, lz4 = 3, zstd = 4 };

// "none", "gzip", "snappy", "lz4", "zstd" (Kafka's names, as in compression.type).
std::string_view compression_name(compression_type type);
// Parses Kafka's name of a codec; false when the name is not one.
bool parse_compression_name(std::string_view name, compression_type& out);

struct codec_error {
  std::string message;  // e.g. "lz4: block size 70000 exceeds the frame's maximum of 65536"
};

// Compresses `input` as Kafka's producers do: gzip as an RFC 1952 stream, snappy in xerial
// framing (as the Java client), lz4 as an LZ4 frame with independent 64 KiB blocks, zstd as a
// standard frame. `level` -1 means the codec's Kafka default (gzip zlib's 6, lz4 9, zstd 3, as
// Kafka 4.4's compression.<codec>.level defaults); otherwise Kafka's ranges apply: gzip 1-9,
// lz4 1-17, zstd -131072-22 (so zstd's own level -1 is not reachable), and snappy (no levels)
// and none ignore it. A level outside the range is a codec_error.
result<std::vector<uint8_t>, codec_error> compress(compression_type type,
                                                   std::span<const uint8_t> input, int level = -1);

// Compresses piece by piece: write() the input in any pieces, then finish(); the bytes appended
// to `out` are exactly compress()'s for the whole input (compress() is this stream). Only the
// codec's state is held (zlib's window, one 32 KiB snappy or 64 KiB lz4 block, zstd's window),
// so memory follows the compressed output. Once max_kept_bytes of output are in `out`, further
// output is counted but dropped: a caller bounding its output still learns the whole size.
class compress_stream {
 public:
  static result<compress_stream, codec_error> open(compression_type type, int level,
                                                   std::vector<uint8_t>& out,
                                                   size_t max_kept_bytes = SIZE_MAX);

  compress_stream(compress_stream&&) noexcept;
  compress_stream& operator=(compress_stream&&) noexcept;
  ~compress_stream();

  result<void, codec_error> write(std::span<const uint8_t> input);
  // Ends the stream (the codec's trailer). Nothing may be written afterwards.
  result<void, codec_error> finish();
  // Compressed bytes produced so far, kept in `out` or not.
  size_t compressed_bytes() const;
  // Whether output was dropped at max_kept_bytes.
  bool dropped_output() const;

  class codec;  // one per compression_type, in compression.cc

 private:
  explicit compress_stream(std::unique_ptr<codec> c);
  std::unique_ptr<codec> codec_;
};

// Decompresses `input`; any output beyond `max_output_bytes` is an error, so a small bomb
// cannot exhaust memory (no buffer ever grows past it). Snappy accepts both xerial framing and
// one raw block; gzip reads concatenated members, zstd concatenated frames (and an empty input
// as empty, like zstd-jni); lz4 reads one frame (as Kafka's reader does, bytes after its end mark
// are ignored).
result<std::vector<uint8_t>, codec_error> decompress(compression_type type,
                                                     std::span<const uint8_t> input,
                                                     size_t max_output_bytes);

// Reads the decompressed bytes of `input` piece by piece, with the same framing rules as
// decompress(), holding only the codec's own state: zlib's 32 KiB window, one lz4 block
// (64 KiB-4 MiB), zstd's window (at most 128 MiB, libzstd's default limit and zstd-jni's), or
// one snappy chunk (a chunk, or a raw block, may expand at most 22 times, so its output is
// bounded by the bytes present). `input` must outlive the stream.
//
//   auto s = decompress_stream::open(type, input);
//   while (true) { auto n = s->read(buffer); if (!n) error; if (*n == 0) break; ... }
class decompress_stream {
 public:
  static result<decompress_stream, codec_error> open(compression_type type,
                                                     std::span<const uint8_t> input);

  decompress_stream(decompress_stream&&) noexcept;
  decompress_stream& operator=(decompress_stream&&) noexcept;
  ~decompress_stream();

  // Up to out.size() (> 0) next bytes; 0 only at the end of the stream. After an error the stream
  // stays failed.
  result<size_t, codec_error> read(std::span<uint8_t> out);
  // Decompressed bytes returned so far.
  size_t position() const { return position_; }

  class codec;  // one per compression_type, in compression.cc

 private:
  explicit decompress_stream(std::unique_ptr<codec> c);
  std::unique_ptr<codec> codec_;
  size_t position_ = 0;
  std::optional<codec_error> error_;
};

}  // namespace tarn::record
