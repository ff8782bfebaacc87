// Kafka's four codecs over the records section of a v2 batch, built on zlib, libsnappy, liblz4
// and libzstd. Writers frame their output as the Java client (kafka-clients 4.4) does; readers
// accept what the Java client's readers accept, plus librdkafka's raw snappy.
//
// Every reader writes into a bounded_output, which grows by doubling and never past the caller's
// max_output_bytes; when the buffer is full the decoder gets a one-byte probe buffer, and any
// byte landing there means the input expands past the bound. Sizes declared inside the input are
// never trusted for an allocation beyond that bound.
#include "record/compression.h"

#include <lz4.h>
#include <lz4frame.h>
#include <snappy.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstring>
#include <memory>

namespace tarn::record {
namespace {

using bytes = std::vector<uint8_t>;
using codec_result = result<bytes, codec_error>;

failure<codec_error> codec_fail(std::string_view codec, std::string_view what) {
  return fail(codec_error{std::string(codec) + ": " + std::string(what)});
}

failure<codec_error> bound_exceeded(std::string_view codec, size_t max_output_bytes) {
  return codec_fail(codec, "decompressed size exceeds the limit of " +
                               std::to_string(max_output_bytes) + " bytes");
}

// A growable output buffer that never holds more than `max` bytes.
class bounded_output {
 public:
  bounded_output(size_t max, size_t input_size) : max_(max) {
    // Records compress 2-10x; start near that and double from there.
    first_capacity_ = std::min(max_, std::max<size_t>(64 * 1024, input_size * 4));
  }

  // Free space after the written bytes, growing the buffer if it is full; empty only when
  // `max` bytes are written.
  std::span<uint8_t> free_space() {
    if (size_ == buf_.size() && buf_.size() < max_) {
      size_t next = buf_.empty() ? first_capacity_ : buf_.size() * 2;
      buf_.resize(std::min(max_, std::max(next, buf_.size() + 1)));
    }
    return std::span<uint8_t>(buf_).subspan(size_);
  }
  // Room for exactly n more bytes, or false if that would pass the bound.
  bool reserve_exact(size_t n) {
    if (n > max_ - size_) return false;
    if (buf_.size() - size_ < n) buf_.resize(size_ + n);
    return true;
  }
  uint8_t* end() { return buf_.data() + size_; }
  void commit(size_t n) { size_ += n; }
  size_t size() const { return size_; }

  bytes take() && {
    buf_.resize(size_);
    return std::move(buf_);
  }

 private:
  size_t max_;
  size_t first_capacity_;
  size_t size_ = 0;
  bytes buf_;
};

uint32_t read_u32_be(const uint8_t* p) {
  return uint32_t{p[0]} << 24 | uint32_t{p[1]} << 16 | uint32_t{p[2]} << 8 | uint32_t{p[3]};
}
void write_u32_be(uint8_t* p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 24);
  p[1] = static_cast<uint8_t>(v >> 16);
  p[2] = static_cast<uint8_t>(v >> 8);
  p[3] = static_cast<uint8_t>(v);
}

// ---------------------------------------------------------------------------------------------
// gzip: zlib with a gzip wrapper. Kafka's default level is -1, zlib's Z_DEFAULT_COMPRESSION (6).

constexpr int gzip_window_bits = 15 + 16;  // 32 KiB window, gzip header and trailer

codec_result gzip_compress(std::span<const uint8_t> input, int level) {
  if (level != -1 && (level < 1 || level > 9)) {
    return codec_fail("gzip", "level " + std::to_string(level) + " is outside 1-9");
  }
  z_stream zs{};
  if (deflateInit2(&zs, level == -1 ? Z_DEFAULT_COMPRESSION : level, Z_DEFLATED, gzip_window_bits,
                   8, Z_DEFAULT_STRATEGY) != Z_OK) {
    return codec_fail("gzip", "deflateInit2 failed");
  }
  // Java 17's GZIPOutputStream writes no name or time and OS 255 ("unknown"); so do we.
  gz_header header{};
  header.os = 255;
  deflateSetHeader(&zs, &header);
  bytes out(deflateBound(&zs, input.size()));
  zs.next_out = out.data();
  zs.avail_out = static_cast<uInt>(std::min<size_t>(out.size(), UINT_MAX));
  size_t pos = 0;
  int ret;
  do {
    size_t chunk = std::min<size_t>(input.size() - pos, UINT_MAX);
    zs.next_in = const_cast<Bytef*>(input.data() + pos);
    zs.avail_in = static_cast<uInt>(chunk);
    bool last = pos + chunk == input.size();
    ret = deflate(&zs, last ? Z_FINISH : Z_NO_FLUSH);
    pos += chunk - zs.avail_in;
  } while (ret == Z_OK);
  size_t written = zs.total_out;
  deflateEnd(&zs);
  if (ret != Z_STREAM_END) return codec_fail("gzip", "deflate failed");
  out.resize(written);
  return out;
}

// Reads gzip members as java.util.zip.GZIPInputStream does: after a member, bytes that start
// another gzip header are the next member; anything else after a member is ignored.
codec_result gzip_decompress(std::span<const uint8_t> input, size_t max_output_bytes) {
  z_stream zs{};
  if (inflateInit2(&zs, gzip_window_bits) != Z_OK) return codec_fail("gzip", "inflateInit2 failed");
  std::unique_ptr<z_stream, int (*)(z_stream*)> guard(&zs, inflateEnd);
  bounded_output out(max_output_bytes, input.size());
  size_t pos = 0;
  while (true) {
    std::span<uint8_t> dst = out.free_space();
    uint8_t probe;
    bool probing = dst.empty();
    if (probing) dst = {&probe, 1};
    zs.next_in = const_cast<Bytef*>(input.data() + pos);
    zs.avail_in = static_cast<uInt>(std::min<size_t>(input.size() - pos, UINT_MAX));
    zs.next_out = dst.data();
    zs.avail_out = static_cast<uInt>(std::min<size_t>(dst.size(), UINT_MAX));
    uInt in_before = zs.avail_in;
    uInt out_before = zs.avail_out;
    int ret = inflate(&zs, Z_NO_FLUSH);
    size_t consumed = in_before - zs.avail_in;
    size_t produced = out_before - zs.avail_out;
    pos += consumed;
    if (probing && produced > 0) return bound_exceeded("gzip", max_output_bytes);
    out.commit(produced);
    switch (ret) {
      case Z_STREAM_END: {
        std::span<const uint8_t> rest = input.subspan(pos);
        bool next_member = rest.size() >= 10 && rest[0] == 0x1f && rest[1] == 0x8b && rest[2] == 8;
        if (!next_member) return std::move(out).take();
        inflateReset(&zs);
        break;
      }
      case Z_OK:
        break;
      case Z_BUF_ERROR:
        if (pos == input.size()) {
          return codec_fail("gzip", "truncated stream after " + std::to_string(out.size()) +
                                        " decompressed bytes");
        }
        break;
      case Z_NEED_DICT:
        return codec_fail("gzip", "stream needs a preset dictionary");
      case Z_MEM_ERROR:
        return codec_fail("gzip", "out of memory");
      default:
        return codec_fail("gzip", std::string("corrupt stream at input byte ") +
                                      std::to_string(pos) + ": " +
                                      (zs.msg != nullptr ? zs.msg : "data error"));
    }
    if (consumed == 0 && produced == 0 && ret != Z_STREAM_END) {
      // No progress with input and output space left: zlib needs bytes that are not there.
      return codec_fail(
          "gzip", "truncated stream after " + std::to_string(out.size()) + " decompressed bytes");
    }
  }
}

// ---------------------------------------------------------------------------------------------
// snappy: the xerial snappy-java stream (SnappyOutputStream, 32 KiB input per block), or one raw
// block as librdkafka writes it.

constexpr std::array<uint8_t, 8> xerial_magic = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0};
constexpr size_t xerial_header_size = 16;  // magic, int32 version, int32 compatible version
constexpr size_t xerial_block_size = 32 * 1024;

codec_result snappy_compress(std::span<const uint8_t> input, int level) {
  (void)level;  // snappy has no levels; Kafka has no compression.snappy.level either
  size_t blocks = (input.size() + xerial_block_size - 1) / xerial_block_size;
  bytes out(xerial_header_size + blocks * (4 + snappy::MaxCompressedLength(xerial_block_size)));
  std::memcpy(out.data(), xerial_magic.data(), xerial_magic.size());
  write_u32_be(out.data() + 8, 1);   // version
  write_u32_be(out.data() + 12, 1);  // minimum compatible version
  size_t written = xerial_header_size;
  for (size_t pos = 0; pos < input.size(); pos += xerial_block_size) {
    size_t n = std::min(xerial_block_size, input.size() - pos);
    size_t compressed = 0;
    snappy::RawCompress(reinterpret_cast<const char*>(input.data() + pos), n,
                        reinterpret_cast<char*>(out.data() + written + 4), &compressed);
    write_u32_be(out.data() + written, static_cast<uint32_t>(compressed));
    written += 4 + compressed;
  }
  out.resize(written);
  return out;
}

// Appends one raw snappy block to `out`, checking its declared length against the bound first.
result<void, codec_error> snappy_raw_block(std::span<const uint8_t> block, bounded_output& out,
                                           size_t max_output_bytes) {
  const char* data = reinterpret_cast<const char*>(block.data());
  size_t length = 0;
  if (!snappy::GetUncompressedLength(data, block.size(), &length)) {
    return codec_fail("snappy", "corrupt block: bad uncompressed length");
  }
  if (!out.reserve_exact(length)) return bound_exceeded("snappy", max_output_bytes);
  if (!snappy::RawUncompress(data, block.size(), reinterpret_cast<char*>(out.end()))) {
    return codec_fail("snappy", "corrupt block of " + std::to_string(block.size()) + " bytes");
  }
  out.commit(length);
  return {};
}

bool is_xerial_header(std::span<const uint8_t> input) {
  return input.size() >= xerial_header_size &&
         std::equal(xerial_magic.begin(), xerial_magic.end(), input.begin());
}

// Mirrors snappy-java 1.1.10's SnappyInputStream: input without the full 16-byte xerial header is
// one raw block; after the header come [int32 BE length][raw block] chunks, possibly followed
// by another xerial header (concatenated streams). Fewer than 4 trailing bytes end the stream.
codec_result snappy_decompress(std::span<const uint8_t> input, size_t max_output_bytes) {
  if (input.empty()) return codec_fail("snappy", "empty input");
  bounded_output out(max_output_bytes, input.size());
  if (!is_xerial_header(input)) {
    auto r = snappy_raw_block(input, out, max_output_bytes);
    if (!r) return fail(r.error());
    return std::move(out).take();
  }
  size_t pos = xerial_header_size;
  if (int32_t version = static_cast<int32_t>(read_u32_be(input.data() + 8)); version < 1) {
    return codec_fail("snappy", "xerial stream version " + std::to_string(version) +
                                    " is older than the minimum of 1");
  }
  while (input.size() - pos >= 4) {
    uint32_t word = read_u32_be(input.data() + pos);
    if (word == read_u32_be(xerial_magic.data())) {
      // Another stream's header; snappy-java ends the stream quietly if it is not a valid one.
      if (input.size() - pos < xerial_header_size) {
        return codec_fail("snappy", "truncated xerial header at input byte " + std::to_string(pos));
      }
      if (!is_xerial_header(input.subspan(pos)) ||
          static_cast<int32_t>(read_u32_be(input.data() + pos + 8)) < 1) {
        break;
      }
      pos += xerial_header_size;
      continue;
    }
    auto length = static_cast<int32_t>(word);
    pos += 4;
    if (length < 0) {
      return codec_fail("snappy", "negative chunk length " + std::to_string(length));
    }
    if (static_cast<size_t>(length) > input.size() - pos) {
      return codec_fail("snappy", "chunk of " + std::to_string(length) + " bytes at input byte " +
                                      std::to_string(pos - 4) + " passes the end of the input");
    }
    auto r =
        snappy_raw_block(input.subspan(pos, static_cast<size_t>(length)), out, max_output_bytes);
    if (!r) return fail(r.error());
    pos += static_cast<size_t>(length);
  }
  return std::move(out).take();
}

// ---------------------------------------------------------------------------------------------
// lz4: an LZ4 frame as Kafka's Lz4BlockOutputStream writes it: independent 64 KiB blocks, no
// checksums, no content size. Kafka's default level 9 selects lz4-java's fast compressor; other
// levels its high-compression one.

constexpr int lz4_kafka_default_level = 9;
constexpr uint32_t lz4_frame_magic = 0x184D2204;

codec_result lz4_compress(std::span<const uint8_t> input, int level) {
  if (level != -1 && (level < 1 || level > 17)) {
    return codec_fail("lz4", "level " + std::to_string(level) + " is outside 1-17");
  }
  LZ4F_preferences_t prefs{};
  prefs.frameInfo.blockSizeID = LZ4F_max64KB;
  prefs.frameInfo.blockMode = LZ4F_blockIndependent;
  prefs.frameInfo.contentChecksumFlag = LZ4F_noContentChecksum;
  prefs.frameInfo.blockChecksumFlag = LZ4F_noBlockChecksum;
  prefs.frameInfo.contentSize = 0;
  prefs.compressionLevel = (level == -1 || level == lz4_kafka_default_level) ? 0 : level;
  bytes out(LZ4F_compressFrameBound(input.size(), &prefs));
  size_t n = LZ4F_compressFrame(out.data(), out.size(), input.data(), input.size(), &prefs);
  if (LZ4F_isError(n)) return codec_fail("lz4", LZ4F_getErrorName(n));
  out.resize(n);
  return out;
}

// The frame descriptor checks of Kafka's Lz4BlockInputStream, which liblz4 does not make: version
// 01, block independence, no dictionary id, reserved bits clear, block size 64 KiB-4 MiB.
result<void, codec_error> lz4_check_descriptor(std::span<const uint8_t> input) {
  if (input.size() < 7) return codec_fail("lz4", "truncated frame header");
  uint32_t magic = uint32_t{input[0]} | uint32_t{input[1]} << 8 | uint32_t{input[2]} << 16 |
                   uint32_t{input[3]} << 24;
  if (magic != lz4_frame_magic) return codec_fail("lz4", "bad frame magic");
  uint8_t flg = input[4];
  uint8_t bd = input[5];
  if ((flg >> 6) != 1) return codec_fail("lz4", "frame version " + std::to_string(flg >> 6));
  if ((flg & 0x03) != 0) return codec_fail("lz4", "reserved FLG bits or dictionary id set");
  if ((flg & 0x20) == 0) return codec_fail("lz4", "dependent blocks are not supported by Kafka");
  if ((bd & 0x8F) != 0) return codec_fail("lz4", "reserved BD bits set");
  int size_id = (bd >> 4) & 0x07;
  if (size_id < 4) return codec_fail("lz4", "block size id " + std::to_string(size_id));
  return {};
}

// One frame, as Kafka's reader does: bytes after the end mark are ignored. Kafka verifies block
// checksums but never the content checksum; liblz4 can only skip both or neither, so checksums
// are skipped unless blocks carry them (then a bad content checksum is an error here only).
codec_result lz4_decompress(std::span<const uint8_t> input, size_t max_output_bytes) {
  if (auto r = lz4_check_descriptor(input); !r) return fail(r.error());
  LZ4F_dctx* raw_dctx = nullptr;
  if (LZ4F_isError(LZ4F_createDecompressionContext(&raw_dctx, LZ4F_VERSION))) {
    return codec_fail("lz4", "cannot create a decompression context");
  }
  std::unique_ptr<LZ4F_dctx, LZ4F_errorCode_t (*)(LZ4F_dctx*)> dctx(raw_dctx,
                                                                    LZ4F_freeDecompressionContext);
  LZ4F_decompressOptions_t options{};
  options.skipChecksums = (input[4] & 0x10) == 0;  // FLG bit 4: blocks carry checksums
  bounded_output out(max_output_bytes, input.size());
  size_t pos = 0;
  while (true) {
    std::span<uint8_t> dst = out.free_space();
    uint8_t probe;
    bool probing = dst.empty();
    if (probing) dst = {&probe, 1};
    size_t produced = dst.size();
    size_t consumed = input.size() - pos;
    size_t hint =
        LZ4F_decompress(dctx.get(), dst.data(), &produced, input.data() + pos, &consumed, &options);
    if (LZ4F_isError(hint)) {
      return codec_fail("lz4", std::string("corrupt frame near input byte ") + std::to_string(pos) +
                                   ": " + LZ4F_getErrorName(hint));
    }
    pos += consumed;
    if (probing && produced > 0) return bound_exceeded("lz4", max_output_bytes);
    out.commit(produced);
    if (hint == 0) return std::move(out).take();  // end mark (and checksum) read
    if (consumed == 0 && produced == 0 && pos == input.size()) {
      return codec_fail(
          "lz4", "truncated frame after " + std::to_string(out.size()) + " decompressed bytes");
    }
  }
}

// ---------------------------------------------------------------------------------------------
// zstd: standard frames. Kafka's default level is 3; zstd-jni's stream writes no content size and
// no checksum, so neither do we.

constexpr int zstd_kafka_default_level = 3;

codec_result zstd_compress(std::span<const uint8_t> input, int level) {
  if (level != -1 && (level < -131072 || level > 22)) {
    return codec_fail("zstd", "level " + std::to_string(level) + " is outside -131072-22");
  }
  std::unique_ptr<ZSTD_CCtx, size_t (*)(ZSTD_CCtx*)> cctx(ZSTD_createCCtx(), ZSTD_freeCCtx);
  if (!cctx) return codec_fail("zstd", "cannot create a compression context");
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_compressionLevel,
                         level == -1 ? zstd_kafka_default_level : level);
  ZSTD_CCtx_setParameter(cctx.get(), ZSTD_c_checksumFlag, 0);
  // As zstd-jni's stream under Kafka's BufferedOutputStream: the records go in with
  // ZSTD_e_continue, so the frame is sized for an unknown length (no content size; level 3 gets a
  // 2 MiB window); close() flushes (ZSTD_e_flush) and then ends the frame (ZSTD_e_end, an empty
  // last block). An empty input is only ended, which records a content size of 0.
  bytes out(ZSTD_compressBound(input.size()) + 32);
  ZSTD_inBuffer in{input.data(), input.size(), 0};
  ZSTD_outBuffer dst{out.data(), out.size(), 0};
  while (in.pos < in.size) {
    size_t r = ZSTD_compressStream2(cctx.get(), &dst, &in, ZSTD_e_continue);
    if (ZSTD_isError(r)) return codec_fail("zstd", ZSTD_getErrorName(r));
  }
  if (!input.empty()) {
    size_t r = ZSTD_compressStream2(cctx.get(), &dst, &in, ZSTD_e_flush);
    if (ZSTD_isError(r)) return codec_fail("zstd", ZSTD_getErrorName(r));
  }
  ZSTD_inBuffer none{nullptr, 0, 0};
  size_t left = ZSTD_compressStream2(cctx.get(), &dst, &none, ZSTD_e_end);
  if (ZSTD_isError(left)) return codec_fail("zstd", ZSTD_getErrorName(left));
  if (left != 0) return codec_fail("zstd", "output larger than ZSTD_compressBound");
  out.resize(dst.pos);
  return out;
}

// Any sequence of frames (skippable ones included), with or without a content size.
// Empty input is an empty output, as zstd-jni's stream reads it.
codec_result zstd_decompress(std::span<const uint8_t> input, size_t max_output_bytes) {
  if (input.empty()) return bytes{};
  std::unique_ptr<ZSTD_DCtx, size_t (*)(ZSTD_DCtx*)> dctx(ZSTD_createDCtx(), ZSTD_freeDCtx);
  if (!dctx) return codec_fail("zstd", "cannot create a decompression context");
  bounded_output out(max_output_bytes, input.size());
  ZSTD_inBuffer in{input.data(), input.size(), 0};
  size_t hint = 1;
  while (true) {
    std::span<uint8_t> span = out.free_space();
    uint8_t probe;
    bool probing = span.empty();
    if (probing) span = {&probe, 1};
    ZSTD_outBuffer dst{span.data(), span.size(), 0};
    size_t in_before = in.pos;
    hint = ZSTD_decompressStream(dctx.get(), &dst, &in);
    if (ZSTD_isError(hint)) {
      return codec_fail("zstd", std::string("corrupt frame near input byte ") +
                                    std::to_string(in_before) + ": " + ZSTD_getErrorName(hint));
    }
    if (probing && dst.pos > 0) return bound_exceeded("zstd", max_output_bytes);
    out.commit(dst.pos);
    if (in.pos == in.size) {
      // hint 0: the last frame is complete and flushed. Calling again would start a new frame.
      if (hint == 0) return std::move(out).take();
      if (dst.pos < dst.size) {
        return codec_fail(
            "zstd", "truncated frame after " + std::to_string(out.size()) + " decompressed bytes");
      }
    }
  }
}

}  // namespace

std::string_view compression_name(compression_type type) {
  switch (type) {
    case compression_type::none:
      return "none";
    case compression_type::gzip:
      return "gzip";
    case compression_type::snappy:
      return "snappy";
    case compression_type::lz4:
      return "lz4";
    case compression_type::zstd:
      return "zstd";
  }
  return "unknown";
}

bool parse_compression_name(std::string_view name, compression_type& out) {
  for (auto type : {compression_type::none, compression_type::gzip, compression_type::snappy,
                    compression_type::lz4, compression_type::zstd}) {
    if (compression_name(type) == name) {
      out = type;
      return true;
    }
  }
  return false;
}

result<std::vector<uint8_t>, codec_error> compress(compression_type type,
                                                   std::span<const uint8_t> input, int level) {
  switch (type) {
    case compression_type::none:
      return bytes(input.begin(), input.end());
    case compression_type::gzip:
      return gzip_compress(input, level);
    case compression_type::snappy:
      return snappy_compress(input, level);
    case compression_type::lz4:
      return lz4_compress(input, level);
    case compression_type::zstd:
      return zstd_compress(input, level);
  }
  return fail(codec_error{"unknown compression type " + std::to_string(static_cast<int>(type))});
}

result<std::vector<uint8_t>, codec_error> decompress(compression_type type,
                                                     std::span<const uint8_t> input,
                                                     size_t max_output_bytes) {
  switch (type) {
    case compression_type::none:
      if (input.size() > max_output_bytes) return bound_exceeded("none", max_output_bytes);
      return bytes(input.begin(), input.end());
    case compression_type::gzip:
      return gzip_decompress(input, max_output_bytes);
    case compression_type::snappy:
      return snappy_decompress(input, max_output_bytes);
    case compression_type::lz4:
      return lz4_decompress(input, max_output_bytes);
    case compression_type::zstd:
      return zstd_decompress(input, max_output_bytes);
  }
  return fail(codec_error{"unknown compression type " + std::to_string(static_cast<int>(type))});
}

}  // namespace tarn::record
