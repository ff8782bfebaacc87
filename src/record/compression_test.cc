// Tests for Kafka's four codecs: round trips, the exact framing Kafka's Java client writes,
// decoding what other implementations wrote (tests/fixtures/codecs, made by
// scripts/gen-codec-fixtures with kafka-clients 4.4.0 and Python's codecs), corrupt input, and
// decompression bombs against the output bound.
#include "record/compression.h"

#include <gtest/gtest.h>
#include <lz4frame.h>
#include <snappy.h>
#include <sys/resource.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <thread>

namespace tarn::record {
namespace {

using bytes = std::vector<uint8_t>;

constexpr size_t unbounded = size_t{1} << 40;
constexpr compression_type all_codecs[] = {compression_type::gzip, compression_type::snappy,
                                           compression_type::lz4, compression_type::zstd};

bytes fixture(const std::string& name) {
  std::string path = std::string(TARN_SOURCE_DIR) + "/tests/fixtures/codecs/" + name;
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "missing fixture " << path;
  return bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Records-section-like text: JSON values of about 1 KiB with varying numbers and words.
bytes json_records(size_t size) {
  std::mt19937 rng(42);
  const char* words[] = {"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel"};
  std::string out;
  for (int i = 0; out.size() < size; ++i) {
    out += "{\"id\":" + std::to_string(i) + ",\"user\":\"u" + std::to_string(rng() % 100000) +
           "\",\"ts\":" + std::to_string(1764400000000ULL + rng() % 100000) + ",\"tags\":[";
    for (int j = 0; j < 40; ++j) out += std::string("\"") + words[rng() % 8] + "\",";
    out += "\"end\"],\"amount\":" + std::to_string(rng() % 1000000) + "}\n";
  }
  out.resize(size);
  return bytes(out.begin(), out.end());
}

bytes random_bytes(size_t size) {
  std::mt19937_64 rng(7);
  bytes out(size);
  for (auto& b : out) b = static_cast<uint8_t>(rng());
  return out;
}

bytes hex(std::string_view h) {
  bytes out;
  for (size_t i = 0; i + 1 < h.size(); i += 2) {
    out.push_back(static_cast<uint8_t>(std::stoi(std::string(h.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

bytes compressed(compression_type type, const bytes& input, int level = -1) {
  auto r = compress(type, input, level);
  EXPECT_TRUE(r.has_value()) << r.error().message;
  return r ? *r : bytes{};
}

void expect_round_trip(compression_type type, const bytes& input, int level = -1) {
  SCOPED_TRACE(std::string(compression_name(type)) + " level " + std::to_string(level) + " of " +
               std::to_string(input.size()) + " bytes");
  bytes c = compressed(type, input, level);
  auto d = decompress(type, c, input.size());  // the exact size is within the bound
  ASSERT_TRUE(d.has_value()) << d.error().message;
  EXPECT_TRUE(*d == input);
}

std::string error_of(compression_type type, const bytes& input, size_t bound = unbounded) {
  auto r = decompress(type, input, bound);
  EXPECT_FALSE(r.has_value()) << compression_name(type) << " accepted bad input";
  return r ? std::string() : r.error().message;
}

TEST(compression, names_round_trip) {
  for (auto type : {compression_type::none, compression_type::gzip, compression_type::snappy,
                    compression_type::lz4, compression_type::zstd}) {
    compression_type parsed{};
    ASSERT_TRUE(parse_compression_name(compression_name(type), parsed));
    EXPECT_EQ(parsed, type);
  }
  EXPECT_EQ(compression_name(compression_type::zstd), "zstd");
  compression_type parsed = compression_type::gzip;
  EXPECT_FALSE(parse_compression_name("GZIP", parsed));
  EXPECT_FALSE(parse_compression_name("producer", parsed));
  EXPECT_FALSE(parse_compression_name("", parsed));
  EXPECT_EQ(parsed, compression_type::gzip);
}

TEST(compression, round_trips_every_codec_and_size) {
  const bytes inputs[] = {
      {},
      {0x5a},
      json_records(100 * 1024),
      json_records(1024 * 1024),        // many snappy chunks and lz4 blocks
      random_bytes(1024 * 1024),        // incompressible: lz4 stores blocks raw
      bytes(1024 * 1024 + 7, 0),        // extremely compressible, odd size
      json_records(3 * 64 * 1024 + 1),  // lz4 block boundary plus one
      json_records(4 * 32 * 1024),      // exactly four xerial chunks
  };
  for (auto type : all_codecs) {
    for (const auto& input : inputs) expect_round_trip(type, input);
  }
  for (const auto& input : inputs) expect_round_trip(compression_type::none, input);
}

TEST(compression, every_kafka_level_range_round_trips) {
  bytes input = json_records(100 * 1024);
  for (int level : {1, 5, 9}) expect_round_trip(compression_type::gzip, input, level);
  for (int level : {1, 3, 9, 12, 17}) expect_round_trip(compression_type::lz4, input, level);
  for (int level : {-131072, -5, 1, 3, 19, 22}) {
    expect_round_trip(compression_type::zstd, input, level);
  }
  // Kafka's default level 9 selects lz4-java's fast compressor, like our -1.
  EXPECT_EQ(compressed(compression_type::lz4, input, 9), compressed(compression_type::lz4, input));
  EXPECT_EQ(compressed(compression_type::zstd, input, 3),
            compressed(compression_type::zstd, input));
  EXPECT_EQ(compressed(compression_type::gzip, input, 6),
            compressed(compression_type::gzip, input));
}

// Each thread reuses its codec contexts from stream to stream: a stream's bytes must be exactly
// those of a new context, which a new thread (with nothing cached yet) gets.
bytes compressed_on_new_thread(compression_type type, const bytes& input, int level = -1) {
  bytes out;
  std::thread([&] { out = compressed(type, input, level); }).join();
  return out;
}

TEST(compression, a_reused_context_compresses_exactly_as_a_new_one) {
  const bytes inputs[] = {
      json_records(300 * 1024), random_bytes(5000), json_records(16 * 1024), bytes(70000, 'A'), {},
      json_records(1000)};
  struct codec_level {
    compression_type type;
    int level;
  };
  const codec_level cases[] = {
      {compression_type::gzip, -1},   {compression_type::gzip, 1},  {compression_type::gzip, 9},
      {compression_type::snappy, -1}, {compression_type::lz4, -1},  {compression_type::lz4, 1},
      {compression_type::lz4, 12},    {compression_type::zstd, -1}, {compression_type::zstd, 1},
      {compression_type::zstd, 19},   {compression_type::zstd, -5},
  };
  // This thread runs every case on every input in turn, so each stream starts from the context
  // the previous one left: another level, a larger or a smaller input.
  for (const auto& input : inputs) {
    for (const auto [type, level] : cases) {
      SCOPED_TRACE(std::string(compression_name(type)) + " level " + std::to_string(level) +
                   " of " + std::to_string(input.size()) + " bytes");
      EXPECT_EQ(compressed(type, input, level), compressed_on_new_thread(type, input, level));
    }
  }
}

TEST(compression, streams_open_together_or_abandoned_do_not_disturb_each_other) {
  const bytes input = json_records(100 * 1024);
  for (auto type : all_codecs) {
    SCOPED_TRACE(compression_name(type));
    const bytes fresh = compressed_on_new_thread(type, input);
    {
      bytes partial;
      auto abandoned = compress_stream::open(type, -1, partial);
      ASSERT_TRUE(abandoned.has_value());
      ASSERT_TRUE(abandoned->write(std::span<const uint8_t>(input).first(50000)));
      bytes second;  // a second stream while the first is open
      auto other = compress_stream::open(type, -1, second);
      ASSERT_TRUE(other.has_value());
      ASSERT_TRUE(other->write(input));
      ASSERT_TRUE(other->finish());
      EXPECT_EQ(second, fresh);
    }  // the first stream ends unfinished
    EXPECT_EQ(compressed(type, input), fresh);
    // A level the codec refuses fails the stream, not the next one.
    EXPECT_FALSE(
        compress(type == compression_type::snappy ? compression_type::gzip : type, input, 100));
    EXPECT_EQ(compressed(type, input), fresh);
  }
}

// compress() hands lz4 the whole input at once (liblz4's autoFlush); a stream fed in small pieces
// buffers 64 KiB blocks. Both must cut the same blocks.
TEST(compression, one_shot_and_piecewise_lz4_write_the_same_frame) {
  for (size_t size : {size_t{0}, size_t{1}, size_t{65535}, size_t{65536}, size_t{65537},
                      size_t{200000}, size_t{4 * 65536}}) {
    SCOPED_TRACE(size);
    const bytes input = json_records(size);
    bytes piecewise;
    auto stream = compress_stream::open(compression_type::lz4, -1, piecewise);
    ASSERT_TRUE(stream.has_value());
    for (size_t at = 0; at < input.size(); at += 1000) {
      const size_t n = std::min<size_t>(1000, input.size() - at);
      ASSERT_TRUE(stream->write(std::span<const uint8_t>(input).subspan(at, n)));
    }
    ASSERT_TRUE(stream->finish());
    EXPECT_EQ(compressed(compression_type::lz4, input), piecewise);
    EXPECT_EQ(compressed(compression_type::lz4, input, 12), [&] {
      bytes hc;
      auto s = compress_stream::open(compression_type::lz4, 12, hc);
      EXPECT_TRUE(s.has_value() && s->write(input) && s->finish());
      return hc;
    }());
  }
}

TEST(compression, levels_outside_kafkas_ranges_are_errors) {
  bytes input = json_records(1000);
  for (int level : {0, 10, -2}) {
    auto r = compress(compression_type::gzip, input, level);
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().message, "gzip: level " + std::to_string(level) + " is outside 1-9");
  }
  for (int level : {0, 18, -3}) EXPECT_FALSE(compress(compression_type::lz4, input, level));
  for (int level : {23, -131073}) EXPECT_FALSE(compress(compression_type::zstd, input, level));
  EXPECT_TRUE(compress(compression_type::snappy, input, 5));  // snappy has no levels
}

// Kafka's Lz4BlockOutputStream: FLG 0x60 (version 01, independent blocks, no checksums, no
// content size), BD 0x40 (64 KiB blocks), HC 0x82; an empty input is header plus end mark.
TEST(compression, lz4_frame_header_is_kafkas) {
  bytes c = compressed(compression_type::lz4, json_records(200 * 1024));
  ASSERT_GE(c.size(), 7u);
  EXPECT_EQ(bytes(c.begin(), c.begin() + 7), hex("04224d18604082"));
  EXPECT_EQ(bytes(c.end() - 4, c.end()), hex("00000000"));  // end mark, no content checksum
  EXPECT_EQ(compressed(compression_type::lz4, {}), fixture("java-lz4-empty.bin"));
  EXPECT_EQ(compressed(compression_type::lz4, {'x'}), fixture("java-lz4-one.bin"));
  // An incompressible block is stored with bit 31 of its size set, as the Java writer does.
  bytes raw = compressed(compression_type::lz4, random_bytes(1000));
  EXPECT_EQ(bytes(raw.begin() + 7, raw.begin() + 11), hex("e8030080"));
}

// snappy-java's SnappyOutputStream: magic, version 1, compatible version 1, then one
// [int32 BE length][raw block] per 32 KiB of input.
TEST(compression, snappy_xerial_framing_is_snappy_javas) {
  EXPECT_EQ(compressed(compression_type::snappy, {}), hex("82534e41505059000000000100000001"));
  EXPECT_EQ(compressed(compression_type::snappy, {}), fixture("java-snappy-empty.bin"));
  EXPECT_EQ(compressed(compression_type::snappy, {'x'}), fixture("java-snappy-one.bin"));
  bytes input = json_records(100 * 1024);
  bytes c = compressed(compression_type::snappy, input);
  size_t pos = 16;
  std::vector<size_t> chunk_sizes;
  while (pos < c.size()) {
    ASSERT_LE(pos + 4, c.size());
    size_t n =
        size_t{c[pos]} << 24 | size_t{c[pos + 1]} << 16 | size_t{c[pos + 2]} << 8 | c[pos + 3];
    size_t length = 0;
    ASSERT_TRUE(
        snappy::GetUncompressedLength(reinterpret_cast<const char*>(&c[pos + 4]), n, &length));
    chunk_sizes.push_back(length);
    pos += 4 + n;
  }
  EXPECT_EQ(pos, c.size());
  EXPECT_EQ(chunk_sizes, (std::vector<size_t>{32768, 32768, 32768, 4096}));
}

// Java 17's GZIPOutputStream header: 1f 8b 08, no flags, no time, XFL 0, OS 255.
TEST(compression, gzip_header_is_javas) {
  bytes c = compressed(compression_type::gzip, json_records(10000));
  EXPECT_EQ(bytes(c.begin(), c.begin() + 10), hex("1f8b08000000000000ff"));
  EXPECT_EQ(compressed(compression_type::gzip, {}), fixture("java-gzip-empty.bin"));
  EXPECT_EQ(compressed(compression_type::gzip, {'x'}), fixture("java-gzip-one.bin"));
}

// zstd-jni's stream, as Kafka drives it (continue, flush, end), writes no content size and no
// checksum, a 2 MiB window at level 3 and an empty last block; an empty input records size 0.
TEST(compression, zstd_frame_is_zstd_jnis) {
  bytes c = compressed(compression_type::zstd, json_records(10000));
  ASSERT_GE(c.size(), 6u);
  EXPECT_EQ(bytes(c.begin(), c.begin() + 6), hex("28b52ffd0058"));
  EXPECT_EQ(bytes(c.end() - 3, c.end()), hex("010000"));
  EXPECT_EQ(ZSTD_getFrameContentSize(c.data(), c.size()), ZSTD_CONTENTSIZE_UNKNOWN);
  EXPECT_EQ(compressed(compression_type::zstd, {}), fixture("java-zstd-empty.bin"));
  EXPECT_EQ(compressed(compression_type::zstd, {'x'}), fixture("java-zstd-one.bin"));
}

struct golden {
  const char* file;
  compression_type type;
  const char* input;
};

TEST(compression, decodes_what_the_java_client_and_python_wrote) {
  const golden cases[] = {
      {"java-gzip-empty.bin", compression_type::gzip, "empty.bin"},
      {"java-gzip-one.bin", compression_type::gzip, "one.bin"},
      {"java-gzip-records.bin", compression_type::gzip, "records.bin"},
      {"java-snappy-empty.bin", compression_type::snappy, "empty.bin"},
      {"java-snappy-one.bin", compression_type::snappy, "one.bin"},
      {"java-snappy-records.bin", compression_type::snappy, "records.bin"},
      {"java-lz4-empty.bin", compression_type::lz4, "empty.bin"},
      {"java-lz4-one.bin", compression_type::lz4, "one.bin"},
      {"java-lz4-records.bin", compression_type::lz4, "records.bin"},
      {"java-zstd-empty.bin", compression_type::zstd, "empty.bin"},
      {"java-zstd-one.bin", compression_type::zstd, "one.bin"},
      {"java-zstd-records.bin", compression_type::zstd, "records.bin"},
      {"py-snappy-raw.bin", compression_type::snappy, "records.bin"},  // librdkafka's framing
      {"py-kafka-snappy-xerial.bin", compression_type::snappy, "records.bin"},
      {"py-kafka-lz4.bin", compression_type::lz4, "records.bin"},  // content size stored
      {"py-lz4-checksums.bin", compression_type::lz4, "records.bin"},
      {"py-lz4-256k.bin", compression_type::lz4, "records.bin"},
      {"py-kafka-zstd.bin", compression_type::zstd, "records.bin"},
      {"py-zstd-checksum.bin", compression_type::zstd, "records.bin"},
      {"py-zstd-two-frames.bin", compression_type::zstd, "records.bin"},
      {"py-gzip-two-members.bin", compression_type::gzip, "records.bin"},
  };
  for (const auto& g : cases) {
    SCOPED_TRACE(g.file);
    bytes input = fixture(g.input);
    auto d = decompress(g.type, fixture(g.file), 1024 * 1024);
    ASSERT_TRUE(d.has_value()) << d.error().message;
    EXPECT_TRUE(*d == input) << "decoded " << d->size() << " bytes, expected " << input.size();
  }
  ASSERT_GT(fixture("records.bin").size(), 64u * 1024);  // spans several blocks of every codec
}

TEST(compression, lz4_frames_kafka_rejects_are_errors) {
  EXPECT_EQ(error_of(compression_type::lz4, fixture("py-lz4-linked.bin")),
            "lz4: dependent blocks are not supported by Kafka");
  bytes frame = fixture("java-lz4-records.bin");
  bytes bad = frame;
  bad[0] = 0x05;
  EXPECT_EQ(error_of(compression_type::lz4, bad), "lz4: bad frame magic");
  bad = frame;
  bad[4] |= 0x01;  // dictionary id flag
  EXPECT_EQ(error_of(compression_type::lz4, bad), "lz4: reserved FLG bits or dictionary id set");
  bad = frame;
  bad[5] = 0x30;  // 16 KiB blocks do not exist in the frame format
  EXPECT_EQ(error_of(compression_type::lz4, bad), "lz4: block size id 3");
  bad = frame;
  bad[6] ^= 0xff;  // header checksum
  EXPECT_NE(error_of(compression_type::lz4, bad).find("lz4: corrupt frame"), std::string::npos);
  // A block claiming more than the 64 KiB maximum.
  bad = frame;
  bad[7] = 0x01, bad[8] = 0x00, bad[9] = 0x02, bad[10] = 0x00;
  EXPECT_NE(error_of(compression_type::lz4, bad).find("lz4: corrupt frame"), std::string::npos);
}

TEST(compression, lz4_ignores_bytes_after_the_end_mark_like_kafka) {
  bytes frame = fixture("java-lz4-records.bin");
  frame.insert(frame.end(), {1, 2, 3, 4, 5});
  auto d = decompress(compression_type::lz4, frame, unbounded);
  ASSERT_TRUE(d.has_value()) << d.error().message;
  EXPECT_TRUE(*d == fixture("records.bin"));
}

bytes lz4_frame(const bytes& input, bool content_checksum, bool block_checksum) {
  LZ4F_preferences_t prefs{};
  prefs.frameInfo.blockMode = LZ4F_blockIndependent;
  prefs.frameInfo.contentChecksumFlag =
      content_checksum ? LZ4F_contentChecksumEnabled : LZ4F_noContentChecksum;
  prefs.frameInfo.blockChecksumFlag =
      block_checksum ? LZ4F_blockChecksumEnabled : LZ4F_noBlockChecksum;
  bytes out(LZ4F_compressFrameBound(input.size(), &prefs));
  out.resize(LZ4F_compressFrame(out.data(), out.size(), input.data(), input.size(), &prefs));
  return out;
}

// Edge cases where kafka-clients 4.4.0's readers were run by hand to see what they accept.
TEST(compression, accepts_what_the_java_readers_accept) {
  auto zstd_empty = decompress(compression_type::zstd, {}, unbounded);  // zstd-jni: 0 bytes
  ASSERT_TRUE(zstd_empty.has_value()) << zstd_empty.error().message;
  EXPECT_TRUE(zstd_empty->empty());
  // snappy-java ends the stream when fewer than 4 bytes are left for a chunk length.
  bytes xerial = fixture("java-snappy-records.bin");
  xerial.insert(xerial.end(), {1, 2, 3});
  auto d = decompress(compression_type::snappy, xerial, unbounded);
  ASSERT_TRUE(d.has_value()) << d.error().message;
  EXPECT_TRUE(*d == fixture("records.bin"));
  // Kafka's lz4 reader never checks the content checksum, but does check block checksums.
  bytes input = json_records(100 * 1024);
  bytes bad_content = lz4_frame(input, true, false);
  bad_content.back() ^= 0x01;
  auto lenient = decompress(compression_type::lz4, bad_content, unbounded);
  ASSERT_TRUE(lenient.has_value()) << lenient.error().message;
  EXPECT_TRUE(*lenient == input);
  bytes bad_block = lz4_frame(input, false, true);
  bad_block[bad_block.size() - 5] ^= 0x01;  // the last block's checksum, before the end mark
  EXPECT_NE(error_of(compression_type::lz4, bad_block).find("lz4: corrupt frame"),
            std::string::npos);
  // Bytes after a zstd frame that are no frame: zstd-jni fails, so do we.
  bytes zstd = fixture("java-zstd-records.bin");
  zstd.insert(zstd.end(), {1, 2, 3});
  EXPECT_FALSE(decompress(compression_type::zstd, zstd, unbounded));
}

TEST(compression, gzip_ignores_trailing_garbage_like_gzip_input_stream) {
  bytes stream = fixture("java-gzip-records.bin");
  stream.insert(stream.end(), 12, 0);
  auto d = decompress(compression_type::gzip, stream, unbounded);
  ASSERT_TRUE(d.has_value()) << d.error().message;
  EXPECT_TRUE(*d == fixture("records.bin"));
}

TEST(compression, truncated_input_is_an_error_for_every_codec) {
  const std::pair<compression_type, const char*> streams[] = {
      {compression_type::gzip, "java-gzip-records.bin"},
      {compression_type::snappy, "java-snappy-records.bin"},
      {compression_type::snappy, "py-snappy-raw.bin"},
      {compression_type::lz4, "java-lz4-records.bin"},
      {compression_type::zstd, "java-zstd-records.bin"},
  };
  for (const auto& [type, file] : streams) {
    bytes full = fixture(file);
    for (size_t keep : {size_t{0}, size_t{1}, size_t{5}, size_t{12}, size_t{100}, full.size() / 2,
                        full.size() - 5, full.size() - 1}) {
      if (keep == 0 && type == compression_type::zstd) continue;  // empty is fine for zstd-jni
      SCOPED_TRACE(std::string(file) + " cut to " + std::to_string(keep));
      bytes cut(full.begin(), full.begin() + static_cast<std::ptrdiff_t>(keep));
      std::string message = error_of(type, cut);
      EXPECT_EQ(message.rfind(std::string(compression_name(type)) + ": ", 0), 0u) << message;
    }
  }
  EXPECT_EQ(error_of(compression_type::gzip, {0x1f, 0x8b}),
            "gzip: truncated stream after 0 decompressed bytes");
}

TEST(compression, corrupt_input_gets_a_precise_error) {
  EXPECT_EQ(error_of(compression_type::snappy, {}), "snappy: empty input");
  EXPECT_EQ(error_of(compression_type::gzip, {}),
            "gzip: truncated stream after 0 decompressed bytes");
  EXPECT_EQ(error_of(compression_type::lz4, {}), "lz4: truncated frame header");
  EXPECT_EQ(error_of(compression_type::snappy, {0xff, 0xff, 0xff, 0xff, 0xff, 0xff}),
            "snappy: corrupt block: bad uncompressed length");
  // xerial chunk lengths: negative, and past the end of the input.
  bytes xerial = hex("82534e41505059000000000100000001");
  bytes negative = xerial;
  negative.insert(negative.end(), {0x80, 0, 0, 0});
  EXPECT_EQ(error_of(compression_type::snappy, negative),
            "snappy: negative chunk length -2147483648");
  bytes past_end = xerial;
  past_end.insert(past_end.end(), {0, 0, 0, 9, 1, 2});
  EXPECT_EQ(error_of(compression_type::snappy, past_end),
            "snappy: chunk of 9 bytes at input byte 16 passes the end of the input");
  bytes old_version = hex("82534e41505059000000000000000001");
  EXPECT_EQ(error_of(compression_type::snappy, old_version),
            "snappy: xerial stream version 0 is older than the minimum of 1");
  // Flipped bits in a gzip stream fail its CRC-32 or its deflate data.
  bytes gz = fixture("java-gzip-records.bin");
  gz[gz.size() / 2] ^= 0x55;
  EXPECT_EQ(error_of(compression_type::gzip, gz).rfind("gzip: corrupt stream at input byte", 0),
            0u);
  EXPECT_EQ(error_of(compression_type::zstd, json_records(100)).rfind("zstd: corrupt frame", 0),
            0u);
}

// Every one-byte change to a compressed stream decodes or fails cleanly, never crashes.
// Found by decompress_fuzz: libzstd checks a frame's declared content size only when it decodes
// the frame in one pass, so a lying frame used to decode with small reads and fail with large ones.
TEST(compression, zstd_frame_lying_about_its_content_size_fails_for_every_read_size) {
  bytes data(32, 'z');
  bytes frame(ZSTD_compressBound(data.size()));
  frame.resize(ZSTD_compress(frame.data(), frame.size(), data.data(), data.size(), 3));
  ASSERT_EQ(ZSTD_getFrameContentSize(frame.data(), frame.size()), 32u);
  // Single-segment frame with a 1-byte content size right after the 1-byte frame header.
  ASSERT_EQ(frame[4] & 0xc0, 0x00);
  ASSERT_NE(frame[4] & 0x20, 0);
  frame[5] = 33;
  ASSERT_EQ(ZSTD_getFrameContentSize(frame.data(), frame.size()), 33u);

  EXPECT_FALSE(decompress(compression_type::zstd, frame, 1 << 20));
  for (size_t piece : {size_t{1}, size_t{7}, size_t{4096}, size_t{1} << 20}) {
    auto stream = decompress_stream::open(compression_type::zstd, frame);
    ASSERT_TRUE(stream);
    bytes buf(piece);
    bool failed = false;
    for (int i = 0; i < 100 && !failed; ++i) {
      auto n = stream->read(buf);
      if (!n)
        failed = true;
      else if (*n == 0)
        break;
    }
    EXPECT_TRUE(failed) << "read size " << piece;
  }
}

TEST(compression, single_byte_corruptions_never_crash) {
  for (auto type : all_codecs) {
    bytes c = compressed(type, json_records(3000));
    for (size_t i = 0; i < c.size(); i += 3) {
      bytes bad = c;
      bad[i] ^= static_cast<uint8_t>(0x1 << (i % 8));
      auto r = decompress(type, bad, 64 * 1024);
      if (r) {
        EXPECT_LE(r->size(), 64u * 1024);
      }
    }
  }
}

TEST(compression, output_exactly_at_the_bound_is_fine_one_byte_more_is_not) {
  bytes input = json_records(300 * 1024);
  for (auto type : all_codecs) {
    SCOPED_TRACE(compression_name(type));
    bytes c = compressed(type, input);
    auto at = decompress(type, c, input.size());
    ASSERT_TRUE(at.has_value()) << at.error().message;
    EXPECT_EQ(at->size(), input.size());
    auto below = decompress(type, c, input.size() - 1);
    ASSERT_FALSE(below.has_value());
    EXPECT_EQ(below.error().message, std::string(compression_name(type)) +
                                         ": decompressed size exceeds the limit of " +
                                         std::to_string(input.size() - 1) + " bytes");
  }
  EXPECT_FALSE(decompress(compression_type::none, input, input.size() - 1));
}

// ---------------------------------------------------------------------------------------------
// Bombs: small inputs expanding to 256 MiB of zeros, built with the libraries' streaming writers
// so the test itself never holds the expansion. Decoding with a 1 MiB bound must fail and the
// process's peak resident size must not grow by anything near the expansion.

constexpr size_t bomb_bytes = 256 * 1024 * 1024;
constexpr size_t bomb_bound = 1024 * 1024;

bytes gzip_bomb() {
  z_stream zs{};
  EXPECT_EQ(deflateInit2(&zs, 9, Z_DEFLATED, 15 + 16, 9, Z_DEFAULT_STRATEGY), Z_OK);
  bytes zeros(1024 * 1024, 0), out(1024 * 1024);
  zs.next_out = out.data();
  zs.avail_out = static_cast<uInt>(out.size());
  for (size_t i = 0; i < bomb_bytes / zeros.size(); ++i) {
    zs.next_in = zeros.data();
    zs.avail_in = static_cast<uInt>(zeros.size());
    bool last = i + 1 == bomb_bytes / zeros.size();
    deflate(&zs, last ? Z_FINISH : Z_NO_FLUSH);
  }
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

bytes zstd_bomb() {
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  bytes zeros(1024 * 1024, 0), out(1024 * 1024);
  ZSTD_outBuffer dst{out.data(), out.size(), 0};
  for (size_t i = 0; i < bomb_bytes / zeros.size(); ++i) {
    ZSTD_inBuffer src{zeros.data(), zeros.size(), 0};
    bool last = i + 1 == bomb_bytes / zeros.size();
    while (src.pos < src.size || last) {
      size_t left = ZSTD_compressStream2(cctx, &dst, &src, last ? ZSTD_e_end : ZSTD_e_continue);
      if (!last || left == 0) break;
    }
  }
  ZSTD_freeCCtx(cctx);
  out.resize(dst.pos);
  return out;
}

bytes lz4_bomb() {
  LZ4F_cctx* cctx = nullptr;
  LZ4F_createCompressionContext(&cctx, LZ4F_VERSION);
  LZ4F_preferences_t prefs{};
  prefs.frameInfo.blockMode = LZ4F_blockIndependent;
  bytes zeros(1024 * 1024, 0), out(2 * 1024 * 1024);
  size_t pos = LZ4F_compressBegin(cctx, out.data(), out.size(), &prefs);
  for (size_t i = 0; i < bomb_bytes / zeros.size(); ++i) {
    pos += LZ4F_compressUpdate(cctx, out.data() + pos, out.size() - pos, zeros.data(), zeros.size(),
                               nullptr);
  }
  pos += LZ4F_compressEnd(cctx, out.data() + pos, out.size() - pos, nullptr);
  LZ4F_freeCompressionContext(cctx);
  out.resize(pos);
  return out;
}

// One 32 KiB zero chunk repeated in xerial framing.
bytes snappy_bomb() {
  std::string block;
  std::string zeros(32 * 1024, '\0');
  snappy::Compress(zeros.data(), zeros.size(), &block);
  bytes out = hex("82534e41505059000000000100000001");
  auto n = static_cast<uint32_t>(block.size());
  for (size_t i = 0; i < bomb_bytes / zeros.size(); ++i) {
    out.insert(out.end(), {static_cast<uint8_t>(n >> 24), static_cast<uint8_t>(n >> 16),
                           static_cast<uint8_t>(n >> 8), static_cast<uint8_t>(n)});
    out.insert(out.end(), block.begin(), block.end());
  }
  return out;
}

size_t peak_rss_bytes() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<size_t>(usage.ru_maxrss) * 1024;
}

void expect_bomb_defused(compression_type type, const bytes& bomb) {
  SCOPED_TRACE(compression_name(type));
  EXPECT_LT(bomb.size(), bomb_bytes / 20);
  size_t before = peak_rss_bytes();
  auto r = decompress(type, bomb, bomb_bound);
  size_t growth = peak_rss_bytes() - before;
  ASSERT_FALSE(r.has_value());
  EXPECT_EQ(r.error().message, std::string(compression_name(type)) +
                                   ": decompressed size exceeds the limit of 1048576 bytes");
  EXPECT_LT(growth, 24u * 1024 * 1024) << "peak RSS grew by " << growth << " bytes";
}

TEST(compression, gzip_bomb_stops_at_the_bound) {
  expect_bomb_defused(compression_type::gzip, gzip_bomb());
}
TEST(compression, zstd_bomb_stops_at_the_bound) {
  expect_bomb_defused(compression_type::zstd, zstd_bomb());
}
TEST(compression, lz4_bomb_stops_at_the_bound) {
  expect_bomb_defused(compression_type::lz4, lz4_bomb());
}
TEST(compression, snappy_bomb_stops_at_the_bound) {
  expect_bomb_defused(compression_type::snappy, snappy_bomb());
}

// A raw snappy block declaring 4 GiB of output is refused before anything is allocated.
TEST(compression, snappy_declared_length_is_checked_before_allocating) {
  bytes huge = {0xff, 0xff, 0xff, 0xff, 0x0f, 0x00, 0x00};  // varint 2^32-1, then junk
  size_t before = peak_rss_bytes();
  // 7 bytes cannot expand to 2^32-1 (a snappy element expands at most 22 times): refused as
  // corrupt whatever the bound, before any allocation.
  EXPECT_EQ(error_of(compression_type::snappy, huge, bomb_bound),
            "snappy: corrupt block: 7 bytes cannot expand to the 4294967295 they declare");
  EXPECT_LT(peak_rss_bytes() - before, 8u * 1024 * 1024);
}

}  // namespace
}  // namespace tarn::record
