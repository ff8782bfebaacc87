// record_stream and decompress_stream: every codec, records split across the decompressor's
// output and the window, truncated streams, lying lengths, records bigger than the window, and
// the same verdicts as the in-memory record_reader.
#include "record/record_stream.h"

#include <gtest/gtest.h>

#include <random>

#include "record/batch_builder.h"
#include "record/varint.h"

namespace tarn::record {
namespace {

using bytes = std::vector<uint8_t>;

constexpr compression_type all_codecs[] = {compression_type::none, compression_type::gzip,
                                           compression_type::snappy, compression_type::lz4,
                                           compression_type::zstd};

void append_record(bytes& out, int32_t offset_delta, std::optional<size_t> key_size,
                   size_t value_size, int headers, uint8_t fill) {
  bytes key(key_size.value_or(0), fill);
  bytes value(value_size, static_cast<uint8_t>(fill + 1));
  std::vector<record_header> hs;
  const bytes header_value = {'v'};
  for (int i = 0; i < headers; ++i) hs.push_back({as_bytes("h"), bytes_view(header_value)});
  record_data r{.timestamp_delta = offset_delta * 7,
                .offset_delta = offset_delta,
                .key = key_size ? std::optional<bytes_view>(key) : std::nullopt,
                .value = bytes_view(value),
                .headers = hs};
  const size_t at = out.size();
  out.resize(at + encoded_record_size(r));
  encode_record(r, out.data() + at);
}

// Small records, a null key, headers, and records larger than the 64 KiB window, so records
// straddle every chunk boundary of every codec.
bytes mixed_records() {
  bytes out;
  std::mt19937 rng(7);
  int32_t i = 0;
  for (; i < 300; ++i) {
    append_record(out, i, i % 5 == 0 ? std::nullopt : std::optional<size_t>(rng() % 40),
                  rng() % 3000, static_cast<int>(rng() % 3), static_cast<uint8_t>(i));
  }
  append_record(out, i++, 10, 200 * 1024, 1, 1);  // three windows
  append_record(out, i++, std::nullopt, 0, 0, 2);
  append_record(out, i++, 5, 70 * 1024, 2000, 3);
  return out;
}

bytes compressed(compression_type type, const bytes& plain) {
  auto c = compress(type, plain);
  EXPECT_TRUE(c) << compression_name(type);
  return c ? *c : bytes{};
}

TEST(decompress_stream, reads_what_decompress_reads_in_any_piece_size) {
  bytes plain = mixed_records();
  for (compression_type type : all_codecs) {
    bytes c = compressed(type, plain);
    for (size_t piece : {size_t{1}, size_t{7}, size_t{4096}, size_t{1} << 20}) {
      auto s = decompress_stream::open(type, c);
      ASSERT_TRUE(s) << compression_name(type);
      bytes out, buf(piece);
      while (true) {
        auto n = s->read(buf);
        ASSERT_TRUE(n) << compression_name(type) << ": " << n.error().message;
        if (*n == 0) break;
        ASSERT_LE(*n, piece);
        out.insert(out.end(), buf.begin(), buf.begin() + static_cast<ptrdiff_t>(*n));
        if (piece == 1 && out.size() > 100'000) break;  // byte by byte: a prefix is enough
      }
      ASSERT_LE(out.size(), plain.size());
      EXPECT_TRUE(std::equal(out.begin(), out.end(), plain.begin())) << compression_name(type);
      if (piece != 1) {
        EXPECT_EQ(out.size(), plain.size()) << compression_name(type);
        EXPECT_EQ(s->position(), plain.size());
      }
    }
  }
}

// compress() is one write; written in pieces of any size the bytes must be the same (so a
// rebuilt batch is byte for byte what a one-shot compression, and Kafka's client, would write).
TEST(compress_stream, any_pieces_give_compress_bytes) {
  bytes plain = mixed_records();
  std::mt19937 rng(11);
  for (compression_type type : all_codecs) {
    for (int level : {-1, 1}) {
      if (type == compression_type::lz4 && level == 1) level = 12;  // lz4's HC compressor
      auto expected = compress(type, plain, level);
      ASSERT_TRUE(expected);
      for (int round = 0; round < 3; ++round) {
        bytes out = {1, 2, 3};  // what the caller had before (a batch header)
        auto s = compress_stream::open(type, level, out);
        ASSERT_TRUE(s);
        for (size_t pos = 0; pos < plain.size();) {
          const size_t n =
              std::min<size_t>(plain.size() - pos, 1 + rng() % (round == 0 ? 7 : 90'000));
          ASSERT_TRUE(s->write(bytes_view(plain).subspan(pos, n)));
          pos += n;
        }
        ASSERT_TRUE(s->finish());
        ASSERT_EQ(out.size(), 3 + expected->size()) << compression_name(type) << " " << level;
        EXPECT_TRUE(std::equal(expected->begin(), expected->end(), out.begin() + 3))
            << compression_name(type) << " level " << level << " round " << round;
        EXPECT_EQ(s->compressed_bytes(), expected->size());
        EXPECT_FALSE(s->dropped_output());
      }
    }
  }
}

TEST(compress_stream, output_past_the_bound_is_counted_not_kept) {
  bytes plain = mixed_records();
  for (compression_type type : all_codecs) {
    auto expected = compress(type, plain);
    ASSERT_TRUE(expected);
    bytes out;
    auto s = compress_stream::open(type, -1, out, 1000);
    ASSERT_TRUE(s);
    ASSERT_TRUE(s->write(plain));
    ASSERT_TRUE(s->finish());
    EXPECT_EQ(out.size(), 1000u);
    EXPECT_TRUE(std::equal(out.begin(), out.end(), expected->begin()));
    EXPECT_EQ(s->compressed_bytes(), expected->size());
    EXPECT_TRUE(s->dropped_output());
  }
}

TEST(batch_builder, compressing_as_appended_builds_the_same_batch) {
  for (compression_type type : all_codecs) {
    batch_builder_config config{.batch_size = SIZE_MAX, .compression = type, .producer_id = 7};
    batch_builder whole(config);
    config.compress_as_appended = true;
    batch_builder streamed(config);
    config.max_output_bytes = 5000;
    batch_builder bounded(config);
    const bytes value(3000, 'x');
    const bytes key = {'k'};
    const record_header h{as_bytes("h"), as_bytes("v")};
    for (int i = 0; i < 500; ++i) {
      for (batch_builder* b : {&whole, &streamed, &bounded}) {
        ASSERT_EQ(b->try_append(1000 + i, bytes_view(key),
                                bytes_view(value).subspan(0, static_cast<size_t>(i) * 7 % 3000),
                                std::span(&h, 1)),
                  append_result::appended);
      }
    }
    EXPECT_EQ(streamed.uncompressed_size_bytes(), whole.uncompressed_size_bytes());
    auto a = whole.build();
    auto b = streamed.build();
    ASSERT_TRUE(a && b) << compression_name(type);
    EXPECT_EQ(*a, *b) << compression_name(type);
    EXPECT_EQ(streamed.last_built_size_bytes(), a->size());
    // Past max_output_bytes: refused, with the size the whole batch has.
    auto c = bounded.build();
    EXPECT_FALSE(c);
    EXPECT_EQ(bounded.last_built_size_bytes(), a->size()) << compression_name(type);
  }
}

TEST(decompress_stream, truncated_streams_are_errors_and_stay_failed) {
  bytes plain = mixed_records();
  for (compression_type type : all_codecs) {
    if (type == compression_type::none) continue;
    bytes c = compressed(type, plain);
    for (size_t keep : {c.size() / 3, c.size() / 2, c.size() - 1}) {
      bytes cut(c.begin(), c.begin() + static_cast<ptrdiff_t>(keep));
      auto s = decompress_stream::open(type, cut);
      if (!s) continue;  // refused at the header
      bytes buf(64 * 1024);
      bool failed = false;
      size_t total = 0;
      for (int guard = 0; guard < 10'000; ++guard) {
        auto n = s->read(buf);
        if (!n) {
          failed = true;
          EXPECT_FALSE(s->read(buf)) << "a failed stream stays failed";
          break;
        }
        if (*n == 0) break;
        total += *n;
      }
      // snappy's xerial framing ends quietly between chunks (as snappy-java does), and then
      // less than everything came out.
      EXPECT_TRUE(failed || (type == compression_type::snappy && total < plain.size()))
          << compression_name(type) << " cut at " << keep;
    }
  }
}

TEST(record_stream, skipping_and_whole_reads_match_record_reader_for_every_codec) {
  bytes plain = mixed_records();
  for (compression_type type : all_codecs) {
    bytes c = compressed(type, plain);
    record_reader reference(plain);
    record_stream skipping(type, c, SIZE_MAX);
    record_stream whole(type, c, SIZE_MAX);
    record_view expected, got;
    partial_record partial;
    int n = 0;
    while (reference.next(expected)) {
      ASSERT_TRUE(skipping.next(partial)) << compression_name(type) << " record " << n;
      ASSERT_TRUE(whole.next(got)) << compression_name(type) << " record " << n;
      EXPECT_EQ(partial.offset_delta, expected.offset_delta);
      EXPECT_EQ(partial.timestamp_delta, expected.timestamp_delta);
      EXPECT_EQ(partial.key_size, expected.key ? static_cast<int32_t>(expected.key->size()) : -1);
      EXPECT_EQ(partial.value_size, static_cast<int32_t>(expected.value->size()));
      EXPECT_EQ(partial.header_count, expected.header_count);
      EXPECT_EQ(partial.size_bytes, expected.size_bytes);
      ASSERT_EQ(got.value->size(), expected.value->size());
      EXPECT_TRUE(std::equal(got.value->begin(), got.value->end(), expected.value->begin()));
      EXPECT_TRUE(std::equal(got.header_bytes.begin(), got.header_bytes.end(),
                             expected.header_bytes.begin(), expected.header_bytes.end()));
      ++n;
    }
    EXPECT_FALSE(skipping.has_more());
    EXPECT_FALSE(whole.next(got));
    EXPECT_FALSE(skipping.error()) << skipping.error()->message;
    EXPECT_FALSE(whole.error());
    EXPECT_EQ(skipping.position(), plain.size());
  }
}

// Malformed sections give the in-memory reader's error code and position.
TEST(record_stream, lying_lengths_fail_as_record_reader_does) {
  std::vector<bytes> cases;
  auto with_body = [](std::initializer_list<uint8_t> body, int32_t length) {
    bytes out(max_varint_bytes);
    out.resize(static_cast<size_t>(write_varint(length, out.data()) - out.data()));
    out.insert(out.end(), body);
    return out;
  };
  cases.push_back(with_body({0, 0, 0, 1, 1, 0}, 6));     // valid: null key, null value
  cases.push_back(with_body({0, 0, 0, 0x7e, 1, 0}, 6));  // key length 63 in a 6-byte record
  cases.push_back(with_body({0, 0, 0, 0x0d, 1, 0}, 6));  // key length -7
  cases.push_back(with_body({0, 0, 0, 1, 1, 0x09}, 6));  // header count -5
  cases.push_back(with_body({0, 0, 0, 1, 1, 0x7e}, 6));  // 63 headers in 0 bytes
  cases.push_back(with_body({0, 0, 0, 1, 1, 0, 0}, 7));  // a trailing byte
  cases.push_back(
      with_body({0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1}, 12));
  cases.push_back(with_body({}, 0));                      // length 0
  cases.push_back(with_body({}, -3));                     // negative length
  cases.push_back({0x80, 0x80});                          // unterminated length
  cases.push_back({0xff, 0xff, 0xff, 0xff, 0xff, 0x01});  // 6-byte length
  bytes valid = with_body({0, 0, 0, 1, 1, 0}, 6);
  cases.push_back(valid);
  cases.back().insert(cases.back().end(), valid.begin(), valid.end());
  cases.back().push_back(0x0e);  // a third record claiming 7 bytes with none present
  for (compression_type type : all_codecs) {
    for (size_t i = 0; i < cases.size(); ++i) {
      record_reader reference(cases[i]);
      record_view r;
      int expected_records = 0;
      while (reference.next(r)) ++expected_records;
      const bytes c = compressed(type, cases[i]);  // outlives the stream
      record_stream stream(type, c, SIZE_MAX);
      partial_record p;
      int records = 0;
      while (stream.next(p)) ++records;
      EXPECT_EQ(records, expected_records) << compression_name(type) << " case " << i;
      ASSERT_EQ(stream.error().has_value(), reference.error().has_value())
          << compression_name(type) << " case " << i;
      if (!reference.error()) continue;
      EXPECT_EQ(stream.error()->code, batch_errc::bad_record);
      ASSERT_TRUE(stream.record_fault());
      EXPECT_EQ(stream.record_fault()->code, reference.error()->code)
          << compression_name(type) << " case " << i << ": " << stream.error()->message;
      EXPECT_EQ(stream.record_fault()->position, reference.error()->position)
          << compression_name(type) << " case " << i;
    }
  }
}

TEST(record_stream, a_record_longer_than_the_stream_is_refused_at_its_start) {
  bytes section;
  append_record(section, 0, 3, 10, 0, 1);
  const size_t second = section.size();
  append_record(section, 1, 3, 100'000, 0, 2);
  section.resize(section.size() - 1000);  // the second record's value runs short
  for (compression_type type : all_codecs) {
    for (bool whole : {false, true}) {
      const bytes c = compressed(type, section);  // outlives the stream
      record_stream stream(type, c, SIZE_MAX);
      partial_record p;
      record_view r;
      EXPECT_TRUE(whole ? stream.next(r) : stream.next(p));
      EXPECT_FALSE(whole ? stream.next(r) : stream.next(p));
      ASSERT_TRUE(stream.record_fault()) << compression_name(type);
      EXPECT_EQ(stream.record_fault()->code, record_errc::record_length_exceeds_input);
      EXPECT_EQ(stream.record_fault()->position, second);
    }
  }
}

TEST(record_stream, the_per_record_bound_is_checked_before_the_body) {
  bytes section;
  append_record(section, 0, 3, 10, 0, 1);
  append_record(section, 1, 3, 5000, 0, 2);
  for (compression_type type : all_codecs) {
    const bytes c = compressed(type, section);  // outlives the stream
    record_stream stream(type, c, 4096);
    partial_record p;
    EXPECT_TRUE(stream.next(p));
    EXPECT_FALSE(stream.next(p));
    ASSERT_TRUE(stream.error());
    EXPECT_EQ(stream.error()->code, batch_errc::record_too_large);
    EXPECT_EQ(stream.error()->message,
              "Invalid record size: 5010 exceeds the configured maximum record size of 4096.");
  }
}

TEST(record_stream, the_total_bound_stops_decompression) {
  bytes section;
  for (int i = 0; i < 20; ++i) append_record(section, i, 3, 10'000, 0, 1);
  for (compression_type type : all_codecs) {
    const bytes c = compressed(type, section);  // outlives the stream
    record_stream stream(type, c, SIZE_MAX, 100'000);
    partial_record p;
    while (stream.next(p)) {
    }
    ASSERT_TRUE(stream.error()) << compression_name(type);
    EXPECT_EQ(stream.error()->code, batch_errc::decompression_failed);
    EXPECT_LT(stream.position(), 100'000u);
  }
}

TEST(record_stream, a_corrupt_stream_is_a_decompression_error) {
  bytes section;
  for (int i = 0; i < 50; ++i) append_record(section, i, 3, 1000, 0, static_cast<uint8_t>(i));
  for (compression_type type : all_codecs) {
    if (type == compression_type::none) continue;
    bytes c = compressed(type, section);
    for (size_t at = c.size() / 2; at < c.size() / 2 + 8; ++at) c[at] ^= 0x5a;
    record_stream stream(type, c, SIZE_MAX);
    partial_record p;
    while (stream.next(p)) {
    }
    // Either the codec notices or the records it produced do not decode.
    ASSERT_TRUE(stream.error()) << compression_name(type);
  }
}

// 64 MiB of zeros compresses to a few KiB of zstd: the first record (length 0) is invalid and the
// stream stops there, having decompressed one window, not the 64 MiB.
TEST(record_stream, a_bomb_fails_at_its_first_record) {
  bytes zeros(size_t{64} << 20, 0);
  auto c = compress(compression_type::zstd, zeros);
  ASSERT_TRUE(c);
  record_stream stream(compression_type::zstd, *c, SIZE_MAX);
  partial_record p;
  EXPECT_FALSE(stream.next(p));
  ASSERT_TRUE(stream.record_fault());
  EXPECT_EQ(stream.record_fault()->code, record_errc::field_exceeds_record);
  EXPECT_EQ(stream.record_fault()->position, 1u);
}

// A valid record whose value is 64 MiB is skipped through the window: the whole stream is read,
// nothing of it kept.
TEST(record_stream, a_huge_value_is_skipped_not_kept) {
  bytes section;
  append_record(section, 0, std::nullopt, size_t{64} << 20, 1, 0);
  auto c = compress(compression_type::lz4, section);
  ASSERT_TRUE(c);
  section = {};
  record_stream stream(compression_type::lz4, *c, SIZE_MAX);
  partial_record p;
  ASSERT_TRUE(stream.next(p));
  EXPECT_EQ(p.value_size, 64 << 20);
  EXPECT_FALSE(stream.has_more());
  EXPECT_FALSE(stream.error());
}

}  // namespace
}  // namespace tarn::record
