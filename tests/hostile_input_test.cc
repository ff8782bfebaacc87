// Hostile input against the real broker (issue 9, part 4): malformed frames and headers, lying
// counts and lengths in every served API and version, lying record batches, compression bombs,
// millions of empty headers, unknown APIs, random bytes and slow clients. Each input must get
// Kafka's error or a closed connection; the broker must stay up, keep serving a bystander client,
// and its peak memory must stay within a fixed bound of what it was sent.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <zlib.h>
#include <zstd.h>

#include <random>

#include "produce_util.h"
#include "protocol/messages/api_versions_response.h"
#include "protocol/messages/produce_request.h"
#include "protocol/messages/produce_response.h"
#include "protocol/reader.h"
#include "protocol/writer.h"
#include "record/batch_builder.h"
#include "record/crc32c.h"
#include "record/record_batch.h"
#include "test_util.h"

namespace tarn::test {
namespace {

constexpr int16_t produce_key = 0, api_versions_key = 18;
constexpr int16_t err_corrupt_message = 2, err_message_too_large = 10, err_unsupported_version = 35,
                  err_invalid_record = 87;

void put_uvarint(std::vector<uint8_t>& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<uint8_t>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<uint8_t>(v));
}
void put_varint(std::vector<uint8_t>& out, int64_t v) {
  put_uvarint(out, (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63));
}

// A frame from raw header+body bytes (the size prefix is computed).
std::vector<uint8_t> frame_of(const std::vector<uint8_t>& payload) {
  std::vector<uint8_t> out;
  put_int32(out, static_cast<int32_t>(payload.size()));
  for (uint8_t b : payload) out.push_back(b);
  return out;
}

// Request header v1 (flexible=false) or v2 (with an empty tagged-field section).
std::vector<uint8_t> header(int16_t key, int16_t version, int32_t correlation_id, bool flexible) {
  std::vector<uint8_t> h;
  put_int16(h, key);
  put_int16(h, version);
  put_int32(h, correlation_id);
  put_int16(h, 4);
  h.insert(h.end(), {'e', 'v', 'i', 'l'});
  if (flexible) h.push_back(0);
  return h;
}

// What a hostile request got back.
struct outcome {
  bool closed = false;
  std::optional<std::vector<uint8_t>> response;
};

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Recomputes a v2 batch's CRC-32C (over attributes .. end) after a test edited it.
void fix_crc(std::vector<uint8_t>& batch) {
  uint32_t crc = record::crc32c(std::span<const uint8_t>(batch).subspan(21));
  for (int i = 0; i < 4; ++i)
    batch[17 + static_cast<size_t>(i)] = static_cast<uint8_t>(crc >> (24 - 8 * i));
}

// A batch header (61 bytes) for `records` bytes, with the given attributes and record count.
std::vector<uint8_t> batch_around(const std::vector<uint8_t>& records, int16_t attributes,
                                  int32_t record_count) {
  std::vector<uint8_t> b;
  for (int i = 0; i < 8; ++i) b.push_back(0);               // base offset
  put_int32(b, static_cast<int32_t>(49 + records.size()));  // batch length
  put_int32(b, -1);                                         // partition leader epoch
  b.push_back(2);                                           // magic
  put_int32(b, 0);                                          // crc, fixed below
  put_int16(b, attributes);
  put_int32(b, record_count - 1);  // last offset delta
  const int64_t ts = now_ms();
  for (int s = 56; s >= 0; s -= 8) b.push_back(static_cast<uint8_t>(ts >> s));
  for (int s = 56; s >= 0; s -= 8) b.push_back(static_cast<uint8_t>(ts >> s));
  for (int i = 0; i < 8; ++i) b.push_back(0xff);  // producer id -1
  put_int16(b, -1);                               // producer epoch
  put_int32(b, -1);                               // base sequence
  put_int32(b, record_count);
  b.insert(b.end(), records.begin(), records.end());
  fix_crc(b);
  return b;
}

// Streams `total` bytes produced by `chunk(i)` through a compressor without holding them all.
std::vector<uint8_t> zstd_stream(size_t total,
                                 const std::function<void(std::vector<uint8_t>&)>& prefix) {
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  std::vector<uint8_t> out(ZSTD_CStreamOutSize());
  std::vector<uint8_t> result;
  std::vector<uint8_t> first;
  prefix(first);
  std::vector<uint8_t> zeros(1 << 20, 0);
  size_t fed = 0;
  auto feed = [&](const uint8_t* p, size_t n, ZSTD_EndDirective mode) {
    ZSTD_inBuffer in{p, n, 0};
    bool done = false;
    while (!done) {
      ZSTD_outBuffer o{out.data(), out.size(), 0};
      size_t rem = ZSTD_compressStream2(cctx, &o, &in, mode);
      result.insert(result.end(), out.data(), out.data() + o.pos);
      done = mode == ZSTD_e_end ? rem == 0 : in.pos == in.size;
    }
  };
  feed(first.data(), first.size(), ZSTD_e_continue);
  fed = first.size();
  while (fed < total) {
    size_t n = std::min(zeros.size(), total - fed);
    feed(zeros.data(), n, ZSTD_e_continue);
    fed += n;
  }
  feed(nullptr, 0, ZSTD_e_end);
  ZSTD_freeCCtx(cctx);
  return result;
}

std::vector<uint8_t> gzip_stream(size_t total, const std::vector<uint8_t>& first) {
  z_stream z{};
  deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
  std::vector<uint8_t> result, out(1 << 16), zeros(1 << 20, 0);
  auto feed = [&](const uint8_t* p, size_t n, int flush) {
    z.next_in = const_cast<uint8_t*>(p);
    z.avail_in = static_cast<uInt>(n);
    do {
      z.next_out = out.data();
      z.avail_out = static_cast<uInt>(out.size());
      deflate(&z, flush);
      result.insert(result.end(), out.data(), out.data() + (out.size() - z.avail_out));
    } while (z.avail_out == 0 || (flush == Z_FINISH && z.avail_in > 0));
  };
  feed(first.data(), first.size(), Z_NO_FLUSH);
  size_t fed = first.size();
  while (fed < total) {
    size_t n = std::min(zeros.size(), total - fed);
    feed(zeros.data(), n, Z_NO_FLUSH);
    fed += n;
  }
  feed(nullptr, 0, Z_FINISH);
  deflateEnd(&z);
  return result;
}

class hostile_input : public ::testing::Test {
 protected:
  void SetUp() override {
    broker_ = std::make_unique<broker_process>(std::vector<std::string>{
        "--override", "auto.create.topics.enable=false", "--override", "num.partitions=1"});
    ASSERT_NE(broker_->port(), 0) << broker_->output();
    bystander_ = std::make_unique<raw_client>(broker_->port());
    ASSERT_TRUE(bystander_->connected());
    expect_bystander_served();
    baseline_peak_kib_ = broker_->process().peak_rss_kib();
  }

  void TearDown() override {
    EXPECT_FALSE(broker_->process().wait_exit(0ms).has_value())
        << "broker died:\n"
        << broker_->output().substr(
               broker_->output().size() > 4000 ? broker_->output().size() - 4000 : 0);
    expect_bystander_served();
    const long peak = broker_->process().peak_rss_kib();
    // Relative to the broker's own peak after start, which a sanitizer build inflates
    // (memory_growth_bound_kib in test_util.h).
    const long bound = baseline_peak_kib_ + memory_growth_bound_kib(bytes_sent_);
    EXPECT_LT(peak, bound) << "peak RSS " << peak << " KiB after " << bytes_sent_
                           << " bytes sent (baseline " << baseline_peak_kib_ << " KiB)";
    RecordProperty("peak_rss_kib", std::to_string(peak));
    RecordProperty("bytes_sent", std::to_string(bytes_sent_));
    std::printf("hostile inputs tried: %d, bytes sent: %zu, peak RSS %ld KiB (baseline %ld)\n",
                inputs_, bytes_sent_, peak, baseline_peak_kib_);
  }

  void expect_bystander_served() {
    const int32_t id = ++bystander_correlation_;
    // ApiVersions v3: client software "a" version "1", no tagged fields.
    const std::vector<uint8_t> body = {2, 'a', 2, '1', 0};
    ASSERT_TRUE(bystander_->send_request(api_versions_key, 3, id, body, true));
    auto frame = bystander_->read_frame(10s);
    ASSERT_TRUE(frame.has_value()) << "the bystander client was not served";
    EXPECT_EQ(get_int32(*frame, 0), id);
  }

  // Sends bytes on a fresh connection and waits for a response frame or the close.
  outcome send_on_fresh_connection(const std::vector<uint8_t>& bytes,
                                   std::chrono::milliseconds timeout = 10s) {
    raw_client c(broker_->port());
    EXPECT_TRUE(c.connected());
    return send_on(c, bytes, timeout);
  }

  outcome send_on(raw_client& c, const std::vector<uint8_t>& bytes,
                  std::chrono::milliseconds timeout = 10s) {
    ++inputs_;
    bytes_sent_ += bytes.size();
    outcome o;
    if (!c.send_bytes(bytes)) {
      o.closed = true;  // reset while sending: the broker already gave up on us
      return o;
    }
    o.response = c.read_frame(timeout);
    if (!o.response) o.closed = c.wait_closed(2s);
    return o;
  }

  // The request must be answered (with correlation id `id`) or the connection closed; never
  // left hanging.
  void expect_answer_or_close(const outcome& o, int32_t id, const std::string& what) {
    if (o.response) {
      ASSERT_GE(o.response->size(), 4u) << what;
      EXPECT_EQ(get_int32(*o.response, 0), id) << what;
    } else {
      EXPECT_TRUE(o.closed) << what << ": neither answered nor closed";
    }
  }

  std::vector<protocol::api_versions_response::api_version> served_apis() {
    raw_client c(broker_->port());
    const std::vector<uint8_t> body = {2, 'a', 2, '1', 0};
    EXPECT_TRUE(c.send_request(api_versions_key, 3, 1, body, true));
    auto frame = c.read_frame();
    EXPECT_TRUE(frame.has_value());
    if (!frame) return {};
    protocol::reader r(std::span<const uint8_t>(*frame).subspan(4));
    auto decoded = protocol::api_versions_response::decode(r, 3);
    EXPECT_TRUE(decoded.has_value());
    return decoded ? decoded->api_keys : decltype(decoded->api_keys){};
  }

  void create_topic(const std::string& name) {
    ASSERT_EQ(test::create_topic(broker_->port(), name, 1), 0);
  }

  // Produce v9 (flexible) of `records` to partition 0 of `topic`; the partition's error code, or
  // nullopt if the connection was closed instead.
  std::optional<int16_t> produce(const std::string& topic, const std::vector<uint8_t>& records,
                                 const std::string& what) {
    protocol::produce_request req;
    req.acks = -1;
    req.timeout_ms = 30000;
    auto& t = req.topic_data.emplace_back();
    t.name = topic;
    auto& p = t.partition_data.emplace_back();
    p.index = 0;
    p.records = std::span<const uint8_t>(records);
    std::vector<uint8_t> body;
    protocol::writer w(body);
    req.encode(w, 9);
    const int32_t id = 4242;
    auto o = send_on_fresh_connection(request_frame(produce_key, 9, id, body, true), 60s);
    expect_answer_or_close(o, id, what);
    if (!o.response) return std::nullopt;
    protocol::reader r(std::span<const uint8_t>(*o.response).subspan(5));
    auto decoded = protocol::produce_response::decode(r, 9);
    EXPECT_TRUE(decoded.has_value()) << what;
    if (!decoded) return std::nullopt;
    return decoded->responses.at(0).partition_responses.at(0).error_code;
  }

  std::unique_ptr<broker_process> broker_;
  std::unique_ptr<raw_client> bystander_;
  int32_t bystander_correlation_ = 0;
  long baseline_peak_kib_ = 0;
  size_t bytes_sent_ = 0;
  int inputs_ = 0;
};

TEST_F(hostile_input, malformed_frames_and_headers_close_the_connection) {
  const std::vector<std::pair<std::string, std::vector<uint8_t>>> cases = {
      {"empty frame", frame_of({})},
      {"3-byte frame", frame_of({0, 18, 0})},
      {"frame claiming 2 GiB", {0x7f, 0xff, 0xff, 0xff, 0, 18, 0, 3}},
      {"negative frame size", {0xff, 0xff, 0xff, 0xfe, 0, 18}},
      {"header without client id", frame_of({0, 3, 0, 1, 0, 0, 0, 9})},
      {"client id length 32767 with 2 bytes", frame_of({0, 3, 0, 1, 0, 0, 0, 9, 0x7f, 0xff, 'a'})},
      {"client id length -2", frame_of({0, 3, 0, 1, 0, 0, 0, 9, 0xff, 0xfe})},
      {"unknown api key 999", frame_of({0x03, 0xe7, 0, 0, 0, 0, 0, 9, 0xff, 0xff})},
      {"api key -1", frame_of({0xff, 0xff, 0, 0, 0, 0, 0, 9, 0xff, 0xff})},
      {"api key 32767", frame_of({0x7f, 0xff, 0, 0, 0, 0, 0, 9, 0xff, 0xff})},
      {"metadata version 32767", frame_of({0, 3, 0x7f, 0xff, 0, 0, 0, 9, 0xff, 0xff})},
      {"metadata version -1", frame_of({0, 3, 0xff, 0xff, 0, 0, 0, 9, 0xff, 0xff})},
  };
  for (const auto& [what, bytes] : cases) {
    auto o = send_on_fresh_connection(bytes);
    EXPECT_TRUE(o.closed) << what;
    EXPECT_FALSE(o.response.has_value()) << what;
  }
  // Flexible headers (Metadata v12) whose tagged-field section lies: counts and sizes far beyond
  // the bytes present, and varints longer than 5 bytes.
  const std::vector<std::pair<std::string, std::vector<uint8_t>>> tagged = {
      {"tagged count 2^32-1", {0xff, 0xff, 0xff, 0xff, 0x0f}},
      {"tagged count 2^28 with nothing after", {0x80, 0x80, 0x80, 0x80, 0x01}},
      {"varint of 6 bytes", {0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
      {"varint of 10 bytes", {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}},
      {"unterminated varint", {0xff, 0xff}},
      {"one field of 2^31 bytes", {0x01, 0x00, 0x80, 0x80, 0x80, 0x80, 0x08}},
      {"one field of 100 bytes with 2 present", {0x01, 0x00, 0x64, 'x', 'y'}},
  };
  for (const auto& [what, tail] : tagged) {
    auto payload = header(3, 12, 77, false);
    payload.insert(payload.end(), tail.begin(), tail.end());
    payload.insert(payload.end(), {1, 0, 0});  // null topics, flags, no tagged fields
    auto o = send_on_fresh_connection(frame_of(payload));
    EXPECT_TRUE(o.closed) << what;
  }
}

TEST_F(hostile_input, api_versions_above_our_range_gets_unsupported_version) {
  for (int16_t version : {int16_t{6}, int16_t{99}, int16_t{32767}}) {
    raw_client c(broker_->port());
    auto o = send_on(c, request_frame(api_versions_key, version, 31, {}, false));
    ASSERT_TRUE(o.response.has_value()) << version;
    EXPECT_EQ(get_int32(*o.response, 0), 31);
    protocol::reader r(std::span<const uint8_t>(*o.response).subspan(4));
    auto decoded = protocol::api_versions_response::decode(r, 0);
    ASSERT_TRUE(decoded.has_value());
    EXPECT_EQ(decoded->error_code, err_unsupported_version);
  }
}

// Every served API and version gets bodies made of lying counts and lengths: all 0xff (-1 counts,
// huge unsigned varints), 0x7f.. (INT32_MAX counts and lengths), 0x80.. (over-long varints),
// a truncated valid prefix, and random bytes. Each is answered or the connection closed.
TEST_F(hostile_input, lying_counts_and_lengths_in_every_api_and_version) {
  auto apis = served_apis();
  ASSERT_GE(apis.size(), 5u);
  std::mt19937 rng(20261129);
  int requests = 0;
  for (const auto& api : apis) {
    for (int16_t v = api.min_version; v <= api.max_version; ++v) {
      std::vector<std::vector<uint8_t>> bodies = {
          {},
          std::vector<uint8_t>(64, 0xff),
          {0x7f, 0xff, 0xff, 0xff, 0x7f, 0xff, 0xff, 0xff, 0x7f, 0xff, 0xff, 0xff},
          {0xff, 0xff, 0xff, 0xff, 0x0f, 0xff, 0xff, 0xff, 0xff, 0x0f},
          std::vector<uint8_t>(16, 0x80),
          {0x00, 0x01, 0x7f, 0xff},
          {0xff, 0xff, 0xff, 0x80, 0x00, 0x00, 0x00, 0x00},
      };
      for (int i = 0; i < 4; ++i) {
        std::vector<uint8_t> random(1 + rng() % 300);
        for (auto& b : random) b = static_cast<uint8_t>(rng());
        bodies.push_back(std::move(random));
      }
      for (bool flexible : {false, true}) {
        for (const auto& body : bodies) {
          const int32_t id = 1000 + requests++;
          auto o = send_on_fresh_connection(request_frame(api.api_key, v, id, body, flexible));
          expect_answer_or_close(
              o, id, fmt::format("api {} v{} body of {} bytes", api.api_key, v, body.size()));
        }
      }
    }
    expect_bystander_served();
  }
  std::printf("%d lying requests over %zu APIs\n", requests, apis.size());
}

TEST_F(hostile_input, lying_record_batches_get_kafka_errors) {
  create_topic("t");
  record::batch_builder_config config;
  config.batch_size = 1 << 20;
  record::batch_builder builder(config);
  builder.try_append(now_ms(), record::as_bytes(std::string("key")),
                     record::as_bytes(std::string("value")));
  const std::vector<uint8_t> good = *builder.build();
  ASSERT_EQ(produce("t", good, "a good batch"), 0);

  auto expect_rejected = [&](std::vector<uint8_t> batch, const std::string& what) {
    auto code = produce("t", batch, what);
    if (code) {
      EXPECT_TRUE(*code == err_corrupt_message || *code == err_invalid_record ||
                  *code == err_message_too_large)
          << what << ": error " << *code;
    }
  };
  // The batch's own header lies.
  {
    auto b = good;
    b[17] ^= 0x55;  // CRC no longer matches
    expect_rejected(b, "bad CRC");
  }
  {
    auto b = good;
    b[8] = 0x7f;  // batch length ~2 GiB
    expect_rejected(b, "batch length 2 GiB");
  }
  {
    auto b = good;
    b.resize(good.size() - 3);  // truncated batch
    expect_rejected(b, "truncated batch");
  }
  {
    auto b = good;
    b[57] = 0x7f, b[58] = 0xff, b[59] = 0xff, b[60] = 0xff;  // record count INT32_MAX
    fix_crc(b);
    expect_rejected(b, "record count INT32_MAX");
  }
  {
    auto b = good;
    b[57] = 0xff, b[58] = 0xff, b[59] = 0xff, b[60] = 0xff;  // record count -1
    fix_crc(b);
    expect_rejected(b, "record count -1");
  }
  {
    auto b = good;
    b[61] = 0xfe;  // record length varint: huge (zigzag) and unterminated
    b[62] = 0xff;
    fix_crc(b);
    expect_rejected(b, "record length that lies");
  }
  // Records whose inner lengths lie, with a correct CRC.
  auto one_record = [](int64_t key_len, int64_t value_len, int64_t header_count, size_t present) {
    std::vector<uint8_t> body;
    body.push_back(0);    // attributes
    put_varint(body, 0);  // timestamp delta
    put_varint(body, 0);  // offset delta
    put_varint(body, key_len);
    put_varint(body, value_len);
    put_varint(body, header_count);
    body.resize(body.size() + present, 'x');
    std::vector<uint8_t> rec;
    put_varint(rec, static_cast<int64_t>(body.size()));
    rec.insert(rec.end(), body.begin(), body.end());
    return rec;
  };
  expect_rejected(batch_around(one_record(1 << 30, -1, 0, 4), 0, 1), "key length 1 GiB");
  expect_rejected(batch_around(one_record(-1, INT32_MAX, 0, 4), 0, 1), "value length INT32_MAX");
  expect_rejected(batch_around(one_record(-1, -1, INT32_MAX, 4), 0, 1), "header count INT32_MAX");
  expect_rejected(batch_around(one_record(-7, -1, 0, 4), 0, 1), "key length -7");
  expect_rejected(batch_around(one_record(-1, -1, -5, 0), 0, 1), "header count -5");
  // Millions of empty headers, uncompressed: 3M headers of 2 bytes (6 MB), above
  // message.max.bytes, so MESSAGE_TOO_LARGE before any decoding.
  {
    std::vector<uint8_t> body = {0, 0, 0, 1, 1};  // attributes, deltas, null key, null value
    put_varint(body, 3'000'000);
    for (int i = 0; i < 3'000'000; ++i) body.insert(body.end(), {0, 1});
    std::vector<uint8_t> rec;
    put_varint(rec, static_cast<int64_t>(body.size()));
    rec.insert(rec.end(), body.begin(), body.end());
    auto code = produce("t", batch_around(rec, 0, 1), "3M empty headers");
    if (code) {
      EXPECT_EQ(*code, err_message_too_large);
    }
  }
  // The log holds the good batch only.
  EXPECT_EQ(std::filesystem::file_size(broker_->data_dir() / "t-0" / "00000000000000000000.log"),
            good.size());
}

// Small compressed input, huge output: the broker must not inflate it all into memory. Kafka
// validates compressed records by streaming them (skipping keys and values), so a valid bomb is
// accepted and a malformed one rejected; either way memory stays bounded (checked in TearDown).
// So does tarn's (src/record/record_stream.h); before it, these took ~790 MiB for 16 KiB sent.
TEST_F(hostile_input, zstd_bomb_of_a_valid_record_stays_bounded) {
  create_topic("bomb");
  constexpr int16_t zstd_attr = 4;
  constexpr size_t bomb_bytes = size_t{512} << 20;  // 512 MiB inflated
  // One record whose value is 512 MiB of zeros (a valid record).
  auto value_record_prefix = [&](std::vector<uint8_t>& out) {
    std::vector<uint8_t> body_head = {0, 0, 0, 1};  // attributes, ts delta, offset delta, null key
    const int64_t value_len = static_cast<int64_t>(bomb_bytes) - 32;
    put_varint(body_head, value_len);
    std::vector<uint8_t> rec;
    // length = body_head + value + 1 (header count)
    put_varint(rec, static_cast<int64_t>(body_head.size()) + value_len + 1);
    rec.insert(rec.end(), body_head.begin(), body_head.end());
    out = rec;
  };
  std::vector<uint8_t> head;
  value_record_prefix(head);
  // The stream ends with the value's zeros; total = head + value (+ header count byte 0, a zero).
  const size_t valid_total = head.size() + (bomb_bytes - 32) + 1;
  auto zstd_valid = zstd_stream(valid_total, value_record_prefix);
  std::printf("zstd bomb: %zu bytes -> %zu\n", zstd_valid.size(), valid_total);
  auto code = produce("bomb", batch_around(zstd_valid, zstd_attr, 1), "zstd bomb, valid record");
  if (code) {
    EXPECT_TRUE(*code == 0 || *code == err_corrupt_message || *code == err_invalid_record ||
                *code == err_message_too_large)
        << *code;
    // The record is valid and within max.decompressed.message.bytes: Kafka accepts it.
    EXPECT_EQ(*code, 0);
  }
}

TEST_F(hostile_input, zstd_bomb_of_zeros_stays_bounded) {
  create_topic("bomb");
  constexpr int16_t zstd_attr = 4;
  constexpr size_t bomb_bytes = size_t{512} << 20;
  std::optional<int16_t> code;
  // Zeros only: the first record's length is 0, which is invalid, and the rest is never read.
  auto zstd_zeros = zstd_stream(bomb_bytes, [](std::vector<uint8_t>&) {});
  code = produce("bomb", batch_around(zstd_zeros, zstd_attr, 1000), "zstd bomb of zeros");
  if (code) {
    EXPECT_TRUE(*code == err_corrupt_message || *code == err_invalid_record) << *code;
  }
}

TEST_F(hostile_input, gzip_bomb_of_zeros_stays_bounded) {
  create_topic("bomb");
  constexpr int16_t gzip_attr = 1;
  std::optional<int16_t> code;
  // gzip (deflate caps at ~1000:1): 256 MiB of zeros.
  auto gzip_zeros = gzip_stream(size_t{256} << 20, {});
  code = produce("bomb", batch_around(gzip_zeros, gzip_attr, 1), "gzip bomb of zeros");
  if (code) {
    EXPECT_TRUE(*code == err_corrupt_message || *code == err_invalid_record) << *code;
  }
}

TEST_F(hostile_input, millions_of_compressed_empty_headers_stay_bounded) {
  create_topic("bomb");
  constexpr int16_t zstd_attr = 4;
  std::optional<int16_t> code;
  // Millions of empty headers, compressed to a few KiB.
  {
    auto headers_prefix = [](std::vector<uint8_t>& out) {
      std::vector<uint8_t> body = {0, 0, 0, 1, 1};
      put_varint(body, 20'000'000);
      std::vector<uint8_t> rec;
      put_varint(rec, static_cast<int64_t>(body.size()) + 40'000'000);
      rec.insert(rec.end(), body.begin(), body.end());
      out = rec;
    };
    std::vector<uint8_t> ph;
    headers_prefix(ph);
    // Headers are {0 (empty key), 0 (empty value)}: all zeros.
    auto zstd_headers = zstd_stream(ph.size() + 40'000'000, headers_prefix);
    code = produce("bomb", batch_around(zstd_headers, zstd_attr, 1), "20M empty headers, zstd");
    if (code) {
      EXPECT_TRUE(*code == 0 || *code == err_corrupt_message || *code == err_invalid_record)
          << *code;
      EXPECT_EQ(*code, 0);  // valid (20M headers fit the record's 40 MB): Kafka accepts it
    }
  }
}

TEST_F(hostile_input, random_bytes_and_random_frames) {
  std::mt19937 rng(4242);
  for (int i = 0; i < 200; ++i) {
    // Unframed garbage: the first 4 bytes are whatever they are.
    std::vector<uint8_t> junk(1 + rng() % 2000);
    for (auto& b : junk) b = static_cast<uint8_t>(rng());
    raw_client c(broker_->port());
    ++inputs_;
    bytes_sent_ += junk.size();
    c.send_bytes(junk);
  }
  for (int i = 0; i < 300; ++i) {
    // Well-framed garbage with a served API key, so the body decoders see it.
    std::vector<uint8_t> payload(8 + rng() % 500);
    for (auto& b : payload) b = static_cast<uint8_t>(rng());
    payload[0] = 0;
    payload[1] =
        static_cast<uint8_t>(std::array<int, 10>{0, 1, 2, 3, 18, 19, 20, 22, 32, 44}[rng() % 10]);
    auto o = send_on_fresh_connection(frame_of(payload), 10s);
    EXPECT_TRUE(o.response.has_value() || o.closed) << "frame " << i;
  }
}

// Slow clients hold half a frame open; everyone else keeps being served, and a client stuck in
// the middle of a frame is closed after connections.max.idle.ms.
TEST_F(hostile_input, slow_clients_holding_half_a_frame) {
  broker_.reset();
  broker_ = std::make_unique<broker_process>(
      std::vector<std::string>{"--override", "connections.max.idle.ms=3000"});
  ASSERT_NE(broker_->port(), 0);
  baseline_peak_kib_ = broker_->process().peak_rss_kib();
  std::vector<std::unique_ptr<raw_client>> slow;
  for (int i = 0; i < 200; ++i) {
    auto c = std::make_unique<raw_client>(broker_->port());
    ASSERT_TRUE(c->connected());
    // Claims 1 MiB, sends 100 bytes of it (or only 2 bytes of the size).
    std::vector<uint8_t> half;
    if (i % 2 == 0) {
      put_int32(half, 1 << 20);
      half.resize(104, 0);
    } else {
      half = {0, 0};
    }
    bytes_sent_ += half.size();
    ++inputs_;
    ASSERT_TRUE(c->send_bytes(half));
    slow.push_back(std::move(c));
  }
  // Connected only now: made before the 200, it could sit idle past connections.max.idle.ms
  // while they connect on a slow machine, and be closed before its first request.
  bystander_ = std::make_unique<raw_client>(broker_->port());
  ASSERT_TRUE(bystander_->connected());
  for (int i = 0; i < 20; ++i) expect_bystander_served();
  // The idle timeout counts from the last byte: the slow clients are closed, the bystander
  // (which keeps talking) is not.
  for (auto& c : slow) EXPECT_TRUE(c->wait_closed(15s));
  // The bystander was idle meanwhile and is closed too; a new one is served.
  bystander_ = std::make_unique<raw_client>(broker_->port());
}

}  // namespace
}  // namespace tarn::test
