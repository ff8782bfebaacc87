// Kafka's four codecs over the records section of a v2 batch, built on zlib, libsnappy, liblz4
// and libzstd, as streams (compress_stream, decompress_stream) with the one-shot compress() and
// decompress() on top. Writers frame their output as the Java client (kafka-clients 4.4) does;
// readers accept what the Java client's readers accept, plus librdkafka's raw snappy.
//
// decompress() writes into a bounded_output, which grows by doubling and never past the caller's
// max_output_bytes; when the buffer is full the stream gets a one-byte probe buffer, and any
// byte landing there means the input expands past the bound. Sizes declared inside the input are
// never trusted for an allocation beyond what the bytes present can expand to.
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
using codec_result_size = result<size_t, codec_error>;

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

// Framing constants. gzip: a 32 KiB window with gzip header and trailer. snappy: the xerial
// snappy-java stream (SnappyOutputStream, 32 KiB input per block), or one raw block as librdkafka
// writes it. lz4: a frame as Kafka's Lz4BlockOutputStream writes it.
constexpr int gzip_window_bits = 15 + 16;
constexpr std::array<uint8_t, 8> xerial_magic = {0x82, 'S', 'N', 'A', 'P', 'P', 'Y', 0};
constexpr size_t xerial_header_size = 16;  // magic, int32 version, int32 compatible version
constexpr size_t xerial_block_size = 32 * 1024;
constexpr uint32_t lz4_frame_magic = 0x184D2204;

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

// ---------------------------------------------------------------------------------------------
// The writers behind compress_stream, one per codec.

}  // namespace

class compress_stream::codec {
 public:
  codec(bytes& out, size_t max_kept) : out_(out), max_kept_(max_kept) {}
  virtual ~codec() = default;
  virtual result<void, codec_error> write(std::span<const uint8_t> input) = 0;
  virtual result<void, codec_error> finish() = 0;
  size_t produced() const { return produced_; }
  bool dropped() const { return produced_ > kept_; }

 protected:
  void emit(const uint8_t* p, size_t n) {
    const size_t keep = std::min(n, max_kept_ - kept_);
    out_.insert(out_.end(), p, p + keep);
    kept_ += keep;
    produced_ += n;
  }

 private:
  bytes& out_;
  size_t max_kept_;
  size_t kept_ = 0;
  size_t produced_ = 0;
};

namespace {

using writer_codec = compress_stream::codec;
constexpr size_t writer_chunk_bytes = 64 * 1024;

// Each thread keeps the last context it used of each codec, and every stream starts from that
// context reset rather than from a new one: a producer's sender or a broker thread compresses
// batch after batch, and creating a context costs more than compressing a 16 KiB batch (lz4: a
// zeroed 64 KiB block buffer and 16 KiB hash table; zlib: about 256 KiB; zstd: its window and
// tables). Freeing such blocks per batch also made glibc trim its heap and fault the pages back
// in. The codecs' resets give exactly a new context's output (compression_test compares them).
template <typename Context>
class thread_cache {
 public:
  // This thread's cached context, or nullptr.
  static std::unique_ptr<Context> take() {
    if (exited()) return nullptr;
    return std::move(slot().context_);
  }
  // Keeps `context` for this thread's next stream (replacing, and freeing, any kept one).
  static void give_back(std::unique_ptr<Context> context) {
    if (exited()) return;  // the thread is ending: `context` is freed
    slot().context_ = std::move(context);
  }

 private:
  ~thread_cache() { exited() = true; }
  // Trivially destructible, so it is still readable after the slot is destroyed at thread exit.
  static bool& exited() {
    thread_local bool flag = false;
    return flag;
  }
  static thread_cache& slot() {
    thread_local thread_cache cache;
    return cache;
  }
  std::unique_ptr<Context> context_;
};

// A context held by one stream: the thread's cached one or a new one, given back to the cache of
// the thread that ends the stream unless a codec call failed on it.
template <typename Context>
class stream_context {
 public:
  stream_context() : context_(thread_cache<Context>::take()) {
    if (!context_) context_ = std::make_unique<Context>();
  }
  ~stream_context() {
    if (keep_) thread_cache<Context>::give_back(std::move(context_));
  }
  stream_context(const stream_context&) = delete;
  stream_context& operator=(const stream_context&) = delete;

  Context& operator*() { return *context_; }
  Context* operator->() { return context_.get(); }
  // A codec call failed on the context: free it at the end of the stream rather than keep it.
  void discard() { keep_ = false; }

 private:
  std::unique_ptr<Context> context_;
  bool keep_ = true;
};

class plain_writer final : public writer_codec {
 public:
  using writer_codec::writer_codec;
  result<void, codec_error> init(int) { return {}; }
  result<void, codec_error> write(std::span<const uint8_t> input) override {
    emit(input.data(), input.size());
    return {};
  }
  result<void, codec_error> finish() override { return {}; }
};

// gzip: zlib with a gzip wrapper. Kafka's default level is -1, zlib's Z_DEFAULT_COMPRESSION (6).
struct gzip_context {
  z_stream zs{};  // zlib's state points back to it: never moved
  gz_header header{};
  int level = 0;  // the level zs was initialized with
  bool initialized = false;
  std::array<uint8_t, writer_chunk_bytes> scratch;

  ~gzip_context() {
    if (initialized) deflateEnd(&zs);
  }
};

class gzip_writer final : public writer_codec {
 public:
  using writer_codec::writer_codec;
  result<void, codec_error> init(int level) {
    if (level != -1 && (level < 1 || level > 9)) {
      return codec_fail("gzip", "level " + std::to_string(level) + " is outside 1-9");
    }
    const int zlib_level = level == -1 ? Z_DEFAULT_COMPRESSION : level;
    gzip_context& c = *context_;
    // deflateReset keeps the level, window and memory sizes deflateInit2 was given.
    if (c.initialized && (c.level != zlib_level || deflateReset(&c.zs) != Z_OK)) {
      deflateEnd(&c.zs);
      c.initialized = false;
    }
    if (!c.initialized) {
      c.zs = z_stream{};
      if (deflateInit2(&c.zs, zlib_level, Z_DEFLATED, gzip_window_bits, 8, Z_DEFAULT_STRATEGY) !=
          Z_OK) {
        return codec_fail("gzip", "deflateInit2 failed");
      }
      c.initialized = true;
      c.level = zlib_level;
    }
    // Java 17's GZIPOutputStream writes no name or time and OS 255 ("unknown"); so do we.
    c.header = gz_header{};
    c.header.os = 255;
    deflateSetHeader(&c.zs, &c.header);
    return {};
  }
  result<void, codec_error> write(std::span<const uint8_t> input) override {
    z_stream& zs = context_->zs;
    while (!input.empty()) {
      const size_t chunk = std::min<size_t>(input.size(), UINT_MAX);
      zs.next_in = const_cast<Bytef*>(input.data());
      zs.avail_in = static_cast<uInt>(chunk);
      do {
        if (auto r = run(Z_NO_FLUSH); !r) return fail(r.error());
      } while (zs.avail_in > 0 || zs.avail_out == 0);
      input = input.subspan(chunk);
    }
    return {};
  }
  result<void, codec_error> finish() override {
    context_->zs.next_in = nullptr;
    context_->zs.avail_in = 0;
    int ret;
    do {
      auto r = run(Z_FINISH);
      if (!r) return fail(r.error());
      ret = *r;
    } while (ret != Z_STREAM_END);
    return {};
  }

 private:
  result<int, codec_error> run(int flush) {
    z_stream& zs = context_->zs;
    auto& scratch = context_->scratch;
    zs.next_out = scratch.data();
    zs.avail_out = static_cast<uInt>(scratch.size());
    const int ret = deflate(&zs, flush);
    if (ret != Z_OK && ret != Z_STREAM_END && ret != Z_BUF_ERROR) {
      context_.discard();
      return codec_fail("gzip", "deflate failed");
    }
    emit(scratch.data(), scratch.size() - zs.avail_out);
    return ret;
  }

  stream_context<gzip_context> context_;
};

// snappy: the xerial snappy-java stream (SnappyOutputStream, 32 KiB input per block).
struct snappy_context {
  bytes block;    // the input of the block being filled
  bytes scratch;  // [int32 BE length][compressed block]
};

class snappy_writer final : public writer_codec {
 public:
  using writer_codec::writer_codec;
  result<void, codec_error> init(int) {  // snappy has no levels; Kafka has no snappy level
    std::array<uint8_t, xerial_header_size> header{};
    std::memcpy(header.data(), xerial_magic.data(), xerial_magic.size());
    write_u32_be(header.data() + 8, 1);   // version
    write_u32_be(header.data() + 12, 1);  // minimum compatible version
    emit(header.data(), header.size());
    context_->block.clear();
    context_->block.reserve(xerial_block_size);
    context_->scratch.resize(4 + snappy::MaxCompressedLength(xerial_block_size));
    return {};
  }
  result<void, codec_error> write(std::span<const uint8_t> input) override {
    bytes& block = context_->block;
    while (!input.empty()) {
      const size_t n = std::min(input.size(), xerial_block_size - block.size());
      block.insert(block.end(), input.begin(), input.begin() + static_cast<ptrdiff_t>(n));
      input = input.subspan(n);
      if (block.size() == xerial_block_size) flush_block();
    }
    return {};
  }
  result<void, codec_error> finish() override {
    if (!context_->block.empty()) flush_block();
    return {};
  }

 private:
  void flush_block() {
    bytes& block = context_->block;
    bytes& scratch = context_->scratch;
    size_t compressed = 0;
    snappy::RawCompress(reinterpret_cast<const char*>(block.data()), block.size(),
                        reinterpret_cast<char*>(scratch.data() + 4), &compressed);
    write_u32_be(scratch.data(), static_cast<uint32_t>(compressed));
    emit(scratch.data(), 4 + compressed);
    block.clear();
  }

  stream_context<snappy_context> context_;
};

// lz4: an LZ4 frame as Kafka's Lz4BlockOutputStream writes it: independent 64 KiB blocks, no
// checksums, no content size. Kafka's default level 9 selects lz4-java's fast compressor; other
// levels its high-compression one.
constexpr int lz4_kafka_default_level = 9;

struct lz4_context {
  // LZ4F_compressBegin starts each frame afresh, keeping the buffers of the previous one.
  LZ4F_cctx* cctx = nullptr;
  bytes scratch;  // one compressed block, or the frame header or end mark

  ~lz4_context() { LZ4F_freeCompressionContext(cctx); }  // accepts nullptr
};

class lz4_writer final : public writer_codec {
 public:
  using writer_codec::writer_codec;
  // For compress(), before init(): the input comes in one write(), so each 64 KiB of it is
  // compressed where it lies instead of first being copied into liblz4's block buffer. The blocks,
  // and so the bytes, are the same.
  void set_single_write() { prefs_.autoFlush = 1; }
  result<void, codec_error> init(int level) {
    if (level != -1 && (level < 1 || level > 17)) {
      return codec_fail("lz4", "level " + std::to_string(level) + " is outside 1-17");
    }
    prefs_.frameInfo.blockSizeID = LZ4F_max64KB;
    prefs_.frameInfo.blockMode = LZ4F_blockIndependent;
    prefs_.frameInfo.contentChecksumFlag = LZ4F_noContentChecksum;
    prefs_.frameInfo.blockChecksumFlag = LZ4F_noBlockChecksum;
    prefs_.frameInfo.contentSize = 0;
    prefs_.compressionLevel = (level == -1 || level == lz4_kafka_default_level) ? 0 : level;
    lz4_context& c = *context_;
    if (c.cctx == nullptr && LZ4F_isError(LZ4F_createCompressionContext(&c.cctx, LZ4F_VERSION))) {
      c.cctx = nullptr;
      return codec_fail("lz4", "cannot create a compression context");
    }
    c.scratch.resize(LZ4F_compressBound(writer_chunk_bytes, &prefs_) + LZ4F_HEADER_SIZE_MAX);
    return check(LZ4F_compressBegin(c.cctx, c.scratch.data(), c.scratch.size(), &prefs_));
  }
  result<void, codec_error> write(std::span<const uint8_t> input) override {
    lz4_context& c = *context_;
    while (!input.empty()) {
      const size_t piece = std::min(input.size(), writer_chunk_bytes);
      if (auto r = check(LZ4F_compressUpdate(c.cctx, c.scratch.data(), c.scratch.size(),
                                             input.data(), piece, nullptr));
          !r) {
        return r;
      }
      input = input.subspan(piece);
    }
    return {};
  }
  result<void, codec_error> finish() override {
    lz4_context& c = *context_;
    return check(LZ4F_compressEnd(c.cctx, c.scratch.data(), c.scratch.size(), nullptr));
  }

 private:
  // Emits the `n` bytes an LZ4F call left in the scratch buffer, or fails with its error.
  result<void, codec_error> check(size_t n) {
    if (LZ4F_isError(n)) {
      context_.discard();
      return codec_fail("lz4", LZ4F_getErrorName(n));
    }
    emit(context_->scratch.data(), n);
    return {};
  }

  stream_context<lz4_context> context_;
  LZ4F_preferences_t prefs_{};
};

// zstd: standard frames. Kafka's default level is 3; zstd-jni's stream writes no content size and
// no checksum, so neither do we.
constexpr int zstd_kafka_default_level = 3;

struct zstd_context {
  ZSTD_CCtx* cctx = nullptr;
  std::array<uint8_t, writer_chunk_bytes> scratch;

  ~zstd_context() { ZSTD_freeCCtx(cctx); }  // accepts nullptr
};

class zstd_writer final : public writer_codec {
 public:
  using writer_codec::writer_codec;
  result<void, codec_error> init(int level) {
    if (level != -1 && (level < -131072 || level > 22)) {
      return codec_fail("zstd", "level " + std::to_string(level) + " is outside -131072-22");
    }
    zstd_context& c = *context_;
    if (c.cctx == nullptr) {
      c.cctx = ZSTD_createCCtx();
      if (c.cctx == nullptr) return codec_fail("zstd", "cannot create a compression context");
    } else {
      // Back to a new context's parameters; the tables and window buffers stay allocated.
      ZSTD_CCtx_reset(c.cctx, ZSTD_reset_session_and_parameters);
    }
    ZSTD_CCtx_setParameter(c.cctx, ZSTD_c_compressionLevel,
                           level == -1 ? zstd_kafka_default_level : level);
    ZSTD_CCtx_setParameter(c.cctx, ZSTD_c_checksumFlag, 0);
    return {};
  }
  // As zstd-jni's stream under Kafka's BufferedOutputStream: the records go in with
  // ZSTD_e_continue, so the frame is sized for an unknown length (no content size; level 3 gets
  // a 2 MiB window); close() flushes (ZSTD_e_flush) and then ends the frame (ZSTD_e_end, an
  // empty last block). An empty input is only ended, which records a content size of 0.
  result<void, codec_error> write(std::span<const uint8_t> input) override {
    ZSTD_inBuffer in{input.data(), input.size(), 0};
    while (in.pos < in.size) {
      if (auto r = run(in, ZSTD_e_continue); !r) return fail(r.error());
    }
    any_input_ = any_input_ || !input.empty();
    return {};
  }
  result<void, codec_error> finish() override {
    ZSTD_inBuffer none{nullptr, 0, 0};
    if (any_input_) {
      while (true) {
        auto left = run(none, ZSTD_e_flush);
        if (!left) return fail(left.error());
        if (*left == 0) break;
      }
    }
    while (true) {
      auto left = run(none, ZSTD_e_end);
      if (!left) return fail(left.error());
      if (*left == 0) return {};
    }
  }

 private:
  result<size_t, codec_error> run(ZSTD_inBuffer& in, ZSTD_EndDirective mode) {
    auto& scratch = context_->scratch;
    ZSTD_outBuffer out{scratch.data(), scratch.size(), 0};
    const size_t r = ZSTD_compressStream2(context_->cctx, &out, &in, mode);
    if (ZSTD_isError(r)) {
      context_.discard();
      return codec_fail("zstd", ZSTD_getErrorName(r));
    }
    emit(scratch.data(), out.pos);
    return r;
  }

  stream_context<zstd_context> context_;
  bool any_input_ = false;
};

template <typename Writer>
result<std::unique_ptr<writer_codec>, codec_error> make_writer(bytes& out, size_t max_kept,
                                                               int level) {
  auto writer = std::make_unique<Writer>(out, max_kept);
  if (auto r = writer->init(level); !r) return fail(r.error());
  return std::unique_ptr<writer_codec>(std::move(writer));
}

}  // namespace

class decompress_stream::codec {
 public:
  virtual ~codec() = default;
  // Up to out.size() (> 0) bytes; 0 only at the end of the stream.
  virtual codec_result_size read(std::span<uint8_t> out) = 0;
};

namespace {

using stream_codec = decompress_stream::codec;

failure<codec_error> truncated(std::string_view codec, size_t produced) {
  return codec_fail(codec,
                    "truncated stream after " + std::to_string(produced) + " decompressed bytes");
}

class plain_reader final : public stream_codec {
 public:
  explicit plain_reader(std::span<const uint8_t> input) : input_(input) {}
  codec_result_size read(std::span<uint8_t> out) override {
    const size_t n = std::min(out.size(), input_.size() - pos_);
    if (n > 0) std::memcpy(out.data(), input_.data() + pos_, n);
    pos_ += n;
    return n;
  }

 private:
  std::span<const uint8_t> input_;
  size_t pos_ = 0;
};

// Reads gzip members as java.util.zip.GZIPInputStream does: after a member, bytes that start
// another gzip header are the next member; anything else after a member is ignored.
class gzip_reader final : public stream_codec {
 public:
  explicit gzip_reader(std::span<const uint8_t> input) : input_(input) {}
  ~gzip_reader() override {
    if (initialized_) inflateEnd(&zs_);
  }
  result<void, codec_error> init() {
    if (inflateInit2(&zs_, gzip_window_bits) != Z_OK) {
      return codec_fail("gzip", "inflateInit2 failed");
    }
    initialized_ = true;
    return {};
  }

  codec_result_size read(std::span<uint8_t> out) override {
    if (done_) return size_t{0};
    while (true) {
      zs_.next_in = const_cast<Bytef*>(input_.data() + pos_);
      zs_.avail_in = static_cast<uInt>(std::min<size_t>(input_.size() - pos_, UINT_MAX));
      zs_.next_out = out.data();
      zs_.avail_out = static_cast<uInt>(std::min<size_t>(out.size(), UINT_MAX));
      const uInt in_before = zs_.avail_in;
      const uInt out_before = zs_.avail_out;
      const int ret = inflate(&zs_, Z_NO_FLUSH);
      const size_t consumed = in_before - zs_.avail_in;
      const size_t produced = out_before - zs_.avail_out;
      pos_ += consumed;
      produced_ += produced;
      switch (ret) {
        case Z_STREAM_END: {
          std::span<const uint8_t> rest = input_.subspan(pos_);
          const bool next_member =
              rest.size() >= 10 && rest[0] == 0x1f && rest[1] == 0x8b && rest[2] == 8;
          if (!next_member) {
            done_ = true;
            return produced;
          }
          inflateReset(&zs_);
          if (produced > 0) return produced;
          continue;
        }
        case Z_OK:
          break;
        case Z_BUF_ERROR:
          if (pos_ == input_.size()) return truncated("gzip", produced_);
          break;
        case Z_NEED_DICT:
          return codec_fail("gzip", "stream needs a preset dictionary");
        case Z_MEM_ERROR:
          return codec_fail("gzip", "out of memory");
        default:
          return codec_fail("gzip", std::string("corrupt stream at input byte ") +
                                        std::to_string(pos_) + ": " +
                                        (zs_.msg != nullptr ? zs_.msg : "data error"));
      }
      if (produced > 0) return produced;
      // No progress with input and output space left: zlib needs bytes that are not there.
      if (consumed == 0) return truncated("gzip", produced_);
    }
  }

 private:
  std::span<const uint8_t> input_;
  z_stream zs_{};
  bool initialized_ = false;
  bool done_ = false;
  size_t pos_ = 0;
  size_t produced_ = 0;
};

// A snappy element expands at most 64 bytes from 3 (a 2-byte-offset copy), so a valid raw block
// never declares more than 22 times its size; a larger claim is refused before any allocation.
constexpr size_t snappy_max_expansion = 22;

bool is_xerial_header(std::span<const uint8_t> input) {
  return input.size() >= xerial_header_size &&
         std::equal(xerial_magic.begin(), xerial_magic.end(), input.begin());
}

// Mirrors snappy-java 1.1.10's SnappyInputStream: input without the full 16-byte xerial header is
// one raw block; after the header come [int32 BE length][raw block] chunks, possibly followed
// by another xerial header (concatenated streams). Fewer than 4 trailing bytes end the stream.
// One chunk (or the raw block) is decompressed at a time.
class snappy_reader final : public stream_codec {
 public:
  explicit snappy_reader(std::span<const uint8_t> input) : input_(input) {}

  result<void, codec_error> init() {
    if (input_.empty()) return codec_fail("snappy", "empty input");
    if (!is_xerial_header(input_)) return {};
    xerial_ = true;
    pos_ = xerial_header_size;
    if (auto version = static_cast<int32_t>(read_u32_be(input_.data() + 8)); version < 1) {
      return codec_fail("snappy", "xerial stream version " + std::to_string(version) +
                                      " is older than the minimum of 1");
    }
    return {};
  }

  codec_result_size read(std::span<uint8_t> out) override {
    while (block_pos_ == block_.size()) {
      if (done_) return size_t{0};
      if (auto r = next_block(); !r) return fail(r.error());
    }
    const size_t n = std::min(out.size(), block_.size() - block_pos_);
    std::memcpy(out.data(), block_.data() + block_pos_, n);
    block_pos_ += n;
    return n;
  }

 private:
  result<void, codec_error> decode_block(std::span<const uint8_t> block) {
    const char* data = reinterpret_cast<const char*>(block.data());
    size_t length = 0;
    if (!snappy::GetUncompressedLength(data, block.size(), &length)) {
      return codec_fail("snappy", "corrupt block: bad uncompressed length");
    }
    if (length / snappy_max_expansion > block.size()) {
      return codec_fail("snappy", "corrupt block: " + std::to_string(block.size()) +
                                      " bytes cannot expand to the " + std::to_string(length) +
                                      " they declare");
    }
    block_.resize(length);
    block_pos_ = 0;
    if (!snappy::RawUncompress(data, block.size(), reinterpret_cast<char*>(block_.data()))) {
      block_.clear();
      return codec_fail("snappy", "corrupt block of " + std::to_string(block.size()) + " bytes");
    }
    return {};
  }

  // Decodes the next chunk into block_ (possibly empty), or sets done_.
  result<void, codec_error> next_block() {
    if (!xerial_) {
      done_ = true;
      return decode_block(input_);
    }
    while (input_.size() - pos_ >= 4) {
      const uint32_t word = read_u32_be(input_.data() + pos_);
      if (word == read_u32_be(xerial_magic.data())) {
        // Another stream's header; snappy-java ends the stream quietly if it is not a valid one.
        if (input_.size() - pos_ < xerial_header_size) {
          return codec_fail("snappy",
                            "truncated xerial header at input byte " + std::to_string(pos_));
        }
        if (!is_xerial_header(input_.subspan(pos_)) ||
            static_cast<int32_t>(read_u32_be(input_.data() + pos_ + 8)) < 1) {
          break;
        }
        pos_ += xerial_header_size;
        continue;
      }
      const auto length = static_cast<int32_t>(word);
      pos_ += 4;
      if (length < 0) {
        return codec_fail("snappy", "negative chunk length " + std::to_string(length));
      }
      if (static_cast<size_t>(length) > input_.size() - pos_) {
        return codec_fail("snappy", "chunk of " + std::to_string(length) + " bytes at input byte " +
                                        std::to_string(pos_ - 4) + " passes the end of the input");
      }
      const size_t at = pos_;
      pos_ += static_cast<size_t>(length);
      return decode_block(input_.subspan(at, static_cast<size_t>(length)));
    }
    done_ = true;
    block_.clear();
    block_pos_ = 0;
    return {};
  }

  std::span<const uint8_t> input_;
  bool xerial_ = false;
  bool done_ = false;
  size_t pos_ = 0;
  std::vector<uint8_t> block_;
  size_t block_pos_ = 0;
};

// One frame, as Kafka's reader does: bytes after the end mark are ignored. Kafka verifies block
// checksums but never the content checksum; liblz4 can only skip both or neither, so checksums
// are skipped unless blocks carry them (then a bad content checksum is an error here only).
class lz4_reader final : public stream_codec {
 public:
  explicit lz4_reader(std::span<const uint8_t> input) : input_(input) {}
  ~lz4_reader() override {
    if (dctx_ != nullptr) LZ4F_freeDecompressionContext(dctx_);
  }

  result<void, codec_error> init() {
    if (auto r = lz4_check_descriptor(input_); !r) return fail(r.error());
    if (LZ4F_isError(LZ4F_createDecompressionContext(&dctx_, LZ4F_VERSION))) {
      dctx_ = nullptr;
      return codec_fail("lz4", "cannot create a decompression context");
    }
    options_.skipChecksums = (input_[4] & 0x10) == 0;  // FLG bit 4: blocks carry checksums
    return {};
  }

  codec_result_size read(std::span<uint8_t> out) override {
    if (done_) return size_t{0};
    while (true) {
      size_t produced = out.size();
      size_t consumed = input_.size() - pos_;
      const size_t hint =
          LZ4F_decompress(dctx_, out.data(), &produced, input_.data() + pos_, &consumed, &options_);
      if (LZ4F_isError(hint)) {
        return codec_fail("lz4", std::string("corrupt frame near input byte ") +
                                     std::to_string(pos_) + ": " + LZ4F_getErrorName(hint));
      }
      pos_ += consumed;
      produced_ += produced;
      if (hint == 0) {  // end mark (and checksum) read
        done_ = true;
        return produced;
      }
      if (produced > 0) return produced;
      if (consumed == 0) return truncated("lz4", produced_);
    }
  }

 private:
  std::span<const uint8_t> input_;
  LZ4F_dctx* dctx_ = nullptr;
  LZ4F_decompressOptions_t options_{};
  bool done_ = false;
  size_t pos_ = 0;
  size_t produced_ = 0;
};

// Any sequence of frames (skippable ones included), with or without a content size. Empty input
// is an empty output, as zstd-jni's stream reads it. libzstd's default window limit (2^27) is
// zstd-jni's too.
class zstd_reader final : public stream_codec {
 public:
  explicit zstd_reader(std::span<const uint8_t> input)
      : in_{input.data(), input.size(), 0}, done_(input.empty()) {}
  ~zstd_reader() override { ZSTD_freeDCtx(dctx_); }

  result<void, codec_error> init() {
    dctx_ = ZSTD_createDCtx();
    if (dctx_ == nullptr) return codec_fail("zstd", "cannot create a decompression context");
    return {};
  }

  codec_result_size read(std::span<uint8_t> out) override {
    if (done_) return size_t{0};
    while (true) {
      ZSTD_outBuffer dst{out.data(), out.size(), 0};
      const size_t in_before = in_.pos;
      const size_t hint = ZSTD_decompressStream(dctx_, &dst, &in_);
      if (ZSTD_isError(hint)) {
        return codec_fail("zstd", std::string("corrupt frame near input byte ") +
                                      std::to_string(in_before) + ": " + ZSTD_getErrorName(hint));
      }
      produced_ += dst.pos;
      frame_produced_ += dst.pos;
      if (hint == 0) {
        // A frame ended. libzstd checks a declared content size only when it decodes the frame in
        // one pass (an output buffer at least that large), so a frame that lies about its size
        // would decode or fail depending on the caller's buffer: check it here, for every size.
        const unsigned long long declared = ZSTD_getFrameContentSize(
            in_.src == nullptr ? nullptr : static_cast<const uint8_t*>(in_.src) + frame_start_,
            in_.size - frame_start_);
        if (declared != ZSTD_CONTENTSIZE_UNKNOWN && declared != ZSTD_CONTENTSIZE_ERROR &&
            declared != frame_produced_) {
          return codec_fail("zstd", "frame at input byte " + std::to_string(frame_start_) +
                                        " declares " + std::to_string(declared) +
                                        " bytes but holds " + std::to_string(frame_produced_));
        }
        frame_start_ = in_.pos;
        frame_produced_ = 0;
      }
      // hint 0 at the end of the input: the last frame is complete and flushed. Calling again
      // would start a new frame.
      if (in_.pos == in_.size && hint == 0) {
        done_ = true;
        return dst.pos;
      }
      if (dst.pos > 0) return dst.pos;
      if (in_.pos == in_.size) return truncated("zstd", produced_);
      if (in_.pos == in_before) return codec_fail("zstd", "no progress");
    }
  }

 private:
  ZSTD_inBuffer in_;
  ZSTD_DCtx* dctx_ = nullptr;
  bool done_;
  size_t produced_ = 0;
  size_t frame_start_ = 0;     // input position where the current frame began
  size_t frame_produced_ = 0;  // bytes the current frame has given so far
};

template <typename Reader>
result<std::unique_ptr<stream_codec>, codec_error> make_reader(std::span<const uint8_t> input) {
  auto reader = std::make_unique<Reader>(input);
  if (auto r = reader->init(); !r) return fail(r.error());
  return std::unique_ptr<stream_codec>(std::move(reader));
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

compress_stream::compress_stream(std::unique_ptr<codec> c) : codec_(std::move(c)) {}
compress_stream::compress_stream(compress_stream&&) noexcept = default;
compress_stream& compress_stream::operator=(compress_stream&&) noexcept = default;
compress_stream::~compress_stream() = default;

result<compress_stream, codec_error> compress_stream::open(compression_type type, int level,
                                                           std::vector<uint8_t>& out,
                                                           size_t max_kept_bytes) {
  result<std::unique_ptr<codec>, codec_error> c =
      fail(codec_error{"unknown compression type " + std::to_string(static_cast<int>(type))});
  switch (type) {
    case compression_type::none:
      c = make_writer<plain_writer>(out, max_kept_bytes, level);
      break;
    case compression_type::gzip:
      c = make_writer<gzip_writer>(out, max_kept_bytes, level);
      break;
    case compression_type::snappy:
      c = make_writer<snappy_writer>(out, max_kept_bytes, level);
      break;
    case compression_type::lz4:
      c = make_writer<lz4_writer>(out, max_kept_bytes, level);
      break;
    case compression_type::zstd:
      c = make_writer<zstd_writer>(out, max_kept_bytes, level);
      break;
  }
  if (!c) return fail(c.error());
  return compress_stream(std::move(*c));
}

result<void, codec_error> compress_stream::write(std::span<const uint8_t> input) {
  return codec_->write(input);
}
result<void, codec_error> compress_stream::finish() { return codec_->finish(); }
size_t compress_stream::compressed_bytes() const { return codec_->produced(); }
bool compress_stream::dropped_output() const { return codec_->dropped(); }

result<std::vector<uint8_t>, codec_error> compress(compression_type type,
                                                   std::span<const uint8_t> input, int level) {
  bytes out;
  out.reserve(input.size() / 2 + 64);
  if (type == compression_type::lz4) {
    lz4_writer writer(out, SIZE_MAX);
    writer.set_single_write();
    if (auto r = writer.init(level); !r) return fail(r.error());
    if (auto r = writer.write(input); !r) return fail(r.error());
    if (auto r = writer.finish(); !r) return fail(r.error());
    return out;
  }
  auto stream = compress_stream::open(type, level, out);
  if (!stream) return fail(stream.error());
  if (auto r = stream->write(input); !r) return fail(r.error());
  if (auto r = stream->finish(); !r) return fail(r.error());
  return out;
}

decompress_stream::decompress_stream(std::unique_ptr<codec> c) : codec_(std::move(c)) {}
decompress_stream::decompress_stream(decompress_stream&&) noexcept = default;
decompress_stream& decompress_stream::operator=(decompress_stream&&) noexcept = default;
decompress_stream::~decompress_stream() = default;

result<decompress_stream, codec_error> decompress_stream::open(compression_type type,
                                                               std::span<const uint8_t> input) {
  result<std::unique_ptr<codec>, codec_error> c =
      fail(codec_error{"unknown compression type " + std::to_string(static_cast<int>(type))});
  switch (type) {
    case compression_type::none:
      c = std::unique_ptr<codec>(std::make_unique<plain_reader>(input));
      break;
    case compression_type::gzip:
      c = make_reader<gzip_reader>(input);
      break;
    case compression_type::snappy:
      c = make_reader<snappy_reader>(input);
      break;
    case compression_type::lz4:
      c = make_reader<lz4_reader>(input);
      break;
    case compression_type::zstd:
      c = make_reader<zstd_reader>(input);
      break;
  }
  if (!c) return fail(c.error());
  return decompress_stream(std::move(*c));
}

result<size_t, codec_error> decompress_stream::read(std::span<uint8_t> out) {
  if (error_) return fail(*error_);
  if (out.empty()) return size_t{0};
  auto n = codec_->read(out);
  if (!n) {
    error_ = n.error();
    return n;
  }
  position_ += *n;
  return n;
}

result<std::vector<uint8_t>, codec_error> decompress(compression_type type,
                                                     std::span<const uint8_t> input,
                                                     size_t max_output_bytes) {
  auto stream = decompress_stream::open(type, input);
  if (!stream) return fail(stream.error());
  bounded_output out(max_output_bytes, input.size());
  while (true) {
    // When the buffer is full, a one-byte probe tells whether the stream goes on past the bound.
    std::span<uint8_t> dst = out.free_space();
    uint8_t probe;
    const bool probing = dst.empty();
    if (probing) dst = {&probe, 1};
    auto n = stream->read(dst);
    if (!n) return fail(n.error());
    if (*n == 0) return std::move(out).take();
    if (probing) return bound_exceeded(compression_name(type), max_output_bytes);
    out.commit(*n);
  }
}

}  // namespace tarn::record
