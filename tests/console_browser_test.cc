// The web console in a real browser: headless Chromium (Debian's chromium and chromium-driver)
// driven by python3-selenium (tests/python/console_browser.py) against a real `tarn serve` that
// kcat produced to and a kcat group member consumed from. The browser opens the console, sees the
// dashboard's uPlot charts drawn (bytes in/out, requests per API), goes to the topic, sees the
// produced messages (keys, values, headers) and its segment files, pages on, produces a message
// from the page that kcat reads back, opens the batch inspector on the partition's largest batch
// (CRC verified, every header field and record as shown equal to `tarn dump-log --deep-iteration`
// of the segment, a header field's and a record's varint fields' bytes lit, the whole batch's
// bytes paged), sees the group's lag and resets it, creates a topic through the form, which kcat
// then sees, and deletes a kcat-made topic with its button and confirmation (gone for kcat and the
// API); last, a topic of JSON values that kcat produced, shown pretty in the JSON view (a non-JSON
// value as text with a note). Screenshots are saved under
// build/test-artifacts/console/. Skipped when Chromium, chromedriver or selenium are missing, and
// under sanitizers (the browser's timings are not the broker's to bound there).
#include <fmt/format.h>

#include <cstring>
#include <sstream>

#include "console_util.h"

namespace tarn::test {
namespace {

int shell(const std::string& command) {
  const int rc = std::system(command.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

// The pixel count of the script's "chart ID series LABELS drawn-pixels N" line, -1 without one.
long chart_pixels(const std::string& out, const std::string& id, const std::string& labels) {
  const std::string line = "chart " + id + " series " + labels + " drawn-pixels ";
  const size_t at = out.find(line);
  if (at == std::string::npos) return -1;
  return std::strtol(out.c_str() + at + line.size(), nullptr, 10);
}

// The value the page showed for a header field ("inspector field NAME VALUE"), "" without one.
std::string shown_field(const std::string& out, const std::string& name) {
  const std::string key = "inspector field " + name + " ";
  const size_t at = out.find(key);
  if (at == std::string::npos) return "";
  const size_t from = at + key.size();
  return out.substr(from, out.find('\n', from) - from);
}

int64_t shown_number(const std::string& out, const std::string& name) {
  return std::strtoll(shown_field(out, name).c_str(), nullptr, 10);
}

// The batch the browser inspected, as its page showed it (header fields and records), is the one
// `tarn dump-log --deep-iteration` prints at the same position of the segment; every record's
// fields are lit in the hex (its first key read back from the lit bytes) and the hex holds the
// whole batch, paged.
void expect_inspector_matches_dump_log(const std::string& out,
                                       const std::filesystem::path& segment) {
  auto [rc, dump] = run_command(std::string(TARN_BINARY) + " dump-log --deep-iteration --files " +
                                segment.string());
  ASSERT_EQ(rc, 0) << dump;
  const int64_t base = shown_number(out, "baseOffset");
  const int64_t size = shown_number(out, "batchLength") + 12;
  const std::string crc = shown_field(out, "crc");
  ASSERT_TRUE(crc.ends_with(" ✓ verifies")) << out;
  const std::string attributes = shown_field(out, "attributes");
  const std::string codec =
      attributes.substr(attributes.find('(') + 1, attributes.find(',') - attributes.find('(') - 1);
  const auto position = std::strtoll(
      out.substr(out.find("inspector position ") + std::strlen("inspector position ")).c_str(),
      nullptr, 10);
  const int64_t count = shown_number(out, "recordsCount");
  EXPECT_GT(count, 1) << "the largest batch holds more than one record\n" << out;
  const std::string header = fmt::format(
      "baseOffset: {} lastOffset: {} count: {} baseSequence: {} lastSequence: -1 producerId: {} "
      "producerEpoch: {} partitionLeaderEpoch: {} isTransactional: false isControl: false "
      "deleteHorizonMs: OptionalLong.empty position: {} CreateTime: {} size: {} magic: {} "
      "compresscodec: {} crc: {} isvalid: true\n",
      base, base + shown_number(out, "lastOffsetDelta"), count, shown_field(out, "baseSequence"),
      shown_field(out, "producerId"), shown_field(out, "producerEpoch"),
      shown_field(out, "partitionLeaderEpoch"), position, shown_field(out, "maxTimestamp"), size,
      shown_field(out, "magic"), codec, crc.substr(0, crc.find(' ')));
  EXPECT_NE(dump.find(header), std::string::npos) << header << "\n" << dump.substr(0, 3000);
  // "inspector rec OFFSET LENGTH ATTRIBUTES TIMESTAMP_DELTA OFFSET_DELTA KEY_LENGTH
  // VALUE_LENGTH HEADERS": each is dump-log's line for that offset.
  const int64_t base_timestamp = shown_number(out, "baseTimestamp");
  int records = 0;
  for (size_t at = out.find("inspector rec "); at != std::string::npos;
       at = out.find("inspector rec ", at + 1)) {
    std::istringstream line(out.substr(at + std::strlen("inspector rec "),
                                       out.find('\n', at) - at - std::strlen("inspector rec ")));
    int64_t offset = 0, length = 0, attrs = 0, timestamp_delta = 0, offset_delta = 0;
    int key_length = 0, value_length = 0, headers = 0;
    line >> offset >> length >> attrs >> timestamp_delta >> offset_delta >> key_length >>
        value_length >> headers;
    EXPECT_EQ(offset, base + offset_delta);
    const std::string expected =
        fmt::format("| offset: {} CreateTime: {} keySize: {} valueSize: {} ", offset,
                    base_timestamp + timestamp_delta, key_length, value_length);
    EXPECT_NE(dump.find(expected), std::string::npos) << expected;
    ++records;
  }
  EXPECT_EQ(records, count);
  // kcat's keys are user-<offset>: the first record's key, read from the lit bytes.
  const std::string key = "user-" + std::to_string(base);
  EXPECT_NE(out.find("inspector r0.keyLength lit 1 bytes, table cells lit 1\n"), std::string::npos)
      << out;
  EXPECT_NE(out.find(fmt::format("inspector r0.key lit {} bytes {}\n", key.size(), key)),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("inspector last valueLength lit 1 bytes "), std::string::npos) << out;
  EXPECT_NE(out.find(fmt::format("inspector hex bytes {} pages {}\n", size, (size + 2047) / 2048)),
            std::string::npos)
      << out;
}

TEST(console_browser, chromium_browses_messages_sees_lag_and_creates_a_topic) {
#ifdef TARN_SANITIZED_BUILD
  GTEST_SKIP() << "browser test skipped under sanitizers";
#endif
  if (!have_program("kcat")) GTEST_SKIP() << "kcat is missing";
  if (!std::filesystem::exists("/usr/bin/chromium")) GTEST_SKIP() << "chromium is missing";
  if (!std::filesystem::exists("/usr/bin/chromedriver")) {
    GTEST_SKIP() << "chromedriver (chromium-driver) is missing";
  }
  if (run_command("/usr/bin/python3 -c 'import selenium'").first != 0) {
    GTEST_SKIP() << "python3-selenium is missing";
  }
  console_broker b;
  ASSERT_NE(b.http_port(), 0) << b.broker().output();
  temp_dir tmp;

  // 120 records, a group that read them all, then 20 more: lag 20.
  auto write_lines = [&](const std::string& file, int first, int count) {
    std::string lines;
    for (int i = first; i < first + count; ++i) {
      lines += "user-" + std::to_string(i) + ":{\"n\":" + std::to_string(i) + "}\n";
    }
    return tmp.write_file(file, lines).string();
  };
  const std::string kcat = "timeout 60 kcat -b " + b.bootstrap();
  // The partition's largest batch, which the browser inspects, holds records 1 to 119: record 0
  // goes alone, then kcat's librdkafka holds the others until all 119 are queued (linger.ms far
  // beyond what reading them takes, batch.num.messages 119 sends them at once). With the default
  // 5 ms linger a loaded machine split them into batches of one record.
  ASSERT_EQ(
      shell(kcat + " -P -t clicks -K : -H origin=browser-test -l " + write_lines("a0.txt", 0, 1)),
      0);
  ASSERT_EQ(shell(kcat + " -P -t clicks -K : -H origin=browser-test -X linger.ms=50000" +
                  " -X batch.num.messages=119 -l " + write_lines("a.txt", 1, 119)),
            0);
  ASSERT_EQ(
      shell(kcat + " -G click-readers -X auto.offset.reset=earliest -X auto.commit.interval.ms=100"
                   " -e -q clicks > /dev/null"),
      0);
  ASSERT_TRUE(eventually(
      [&] {
        auto g = b.get("/v1/groups/click-readers");
        return g.status == 200 && !g.body["offsets"].empty() &&
               g.body["offsets"][0]["committed_offset"] == 120;
      },
      10s));
  ASSERT_EQ(
      shell(kcat + " -P -t clicks -K : -H origin=browser-test -l " + write_lines("b.txt", 120, 20)),
      0);
  // A JSON value (an integer past 2^53, structure characters inside a string, an empty array)
  // and one that is not JSON; '|' splits the key, since the values hold ':'.
  ASSERT_EQ(shell(kcat + " -P -t orders -K '|' -l " +
                  tmp.write_file("orders.txt",
                                 "order-1|{\"id\":12345678901234567890,\"items\":[{\"sku\":\"a-1\","
                                 "\"qty\":2}],\"tags\":[],\"note\":\"x, y: {z}\"}\n"
                                 "order-2|plain words, not JSON\n")
                      .string()),
            0);

  // A topic the browser deletes.
  ASSERT_EQ(shell(kcat + " -P -t doomed -l " + tmp.write_file("doomed.txt", "x\ny\n").string()), 0);

  const auto shots = std::filesystem::path(TARN_BINARY).parent_path() / "test-artifacts/console";
  std::filesystem::create_directories(shots);
  const auto started = std::chrono::steady_clock::now();
  auto [rc, out] =
      run_command("timeout 150 /usr/bin/python3 " + std::string(TARN_SOURCE_DIR) +
                  "/tests/python/console_browser.py " + b.url() +
                  " clicks click-readers made-in-browser " + shots.string() + " orders doomed");
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - started);
  std::cout << "browser session: " << took.count() << " ms\n" << out;
  ASSERT_EQ(rc, 0) << out;

  // clicks, orders, doomed and __consumer_offsets.
  EXPECT_NE(out.find("overview topics 4\n"), std::string::npos) << out;
  // Both charts drew their lines: the legends name the series (kcat's Produce and Fetch among
  // the APIs), and the first series' colour is on the canvas.
  EXPECT_GT(chart_pixels(out, "chart-bytes", "bytes in/s,bytes out/s"), 50) << out;
  const size_t requests_chart = out.find("chart chart-requests series ");
  ASSERT_NE(requests_chart, std::string::npos) << out;
  const std::string requests_line =
      out.substr(requests_chart, out.find('\n', requests_chart) - requests_chart);
  EXPECT_NE(requests_line.find("Produce"), std::string::npos) << requests_line;
  EXPECT_NE(requests_line.find("Fetch"), std::string::npos) << requests_line;
  EXPECT_GT(std::strtol(requests_line.substr(requests_line.rfind(' ') + 1).c_str(), nullptr, 10),
            50)
      << requests_line;
  // 140 records of a few dozen bytes: one segment.
  EXPECT_NE(out.find("segments 1 segment(s)\n"), std::string::npos) << out;
  // The first page: 50 records from offset 0, key, value and header as produced.
  EXPECT_NE(out.find("record 0 user-0 {\"n\":0} origin=browser-test\n"), std::string::npos) << out;
  EXPECT_NE(out.find("record 49 user-49 {\"n\":49} origin=browser-test\n"), std::string::npos);
  EXPECT_EQ(out.find("record 50 "), std::string::npos) << "the first page holds 50 records";
  EXPECT_NE(out.find("next-page-first 50\n"), std::string::npos);
  // The inspector shows kcat's batch of records 1 to 119 with a CRC that verifies, and lights
  // the CRC's four bytes under the mouse.
  EXPECT_NE(out.find(" ✓ verifies\n"), std::string::npos) << out;
  EXPECT_NE(out.find("inspector highlighted 4 bytes\n"), std::string::npos) << out;
  EXPECT_NE(out.find("inspector records 119\n"), std::string::npos) << out;
  expect_inspector_matches_dump_log(out,
                                    b.broker().data_dir() / "clicks-0/00000000000000000000.log");
  // The message produced from the page went to offset 140, so the lag is now 21.
  EXPECT_NE(out.find("produced 140\n"), std::string::npos) << out;
  EXPECT_NE(out.find("lag clicks-0 21\n"), std::string::npos) << out;
  EXPECT_NE(out.find("total-lag 21\n"), std::string::npos);
  EXPECT_NE(out.find("reset total-lag 0\n"), std::string::npos) << out;
  EXPECT_NE(out.find("created made-in-browser 2 retention.ms 7200000\n"), std::string::npos) << out;
  EXPECT_NE(out.find("console-errors 0\n"), std::string::npos) << out;
  // The JSON view: indented as stored, the big integer not rounded; the other value as text.
  EXPECT_NE(out.find("json-value 0\n"
                     "{\n"
                     "  \"id\": 12345678901234567890,\n"
                     "  \"items\": [\n"
                     "    {\n"
                     "      \"sku\": \"a-1\",\n"
                     "      \"qty\": 2\n"
                     "    }\n"
                     "  ],\n"
                     "  \"tags\": [],\n"
                     "  \"note\": \"x, y: {z}\"\n"
                     "}\n"
                     "json-end\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("not-json 1 plain words, not JSON (not JSON; shown as text)\n"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("records-out text-nodes 0\n"), std::string::npos) << out;

  // kcat reads the message produced from the page.
  auto [read_rc, read_back] =
      run_command(kcat + " -C -t clicks -p 0 -o 140 -c 1 -e -q -f '%k %s %h\\n'");
  EXPECT_EQ(read_rc, 0);
  EXPECT_EQ(read_back, "browser-key typed in chromium typed=yes\n");
  // The topic made in the browser is a Kafka topic like any other.
  auto [list_rc, metadata] = run_command(kcat + " -L -t made-in-browser");
  EXPECT_EQ(list_rc, 0);
  EXPECT_NE(metadata.find("topic \"made-in-browser\" with 2 partitions"), std::string::npos)
      << metadata;
  EXPECT_TRUE(std::filesystem::exists(shots / "topic.png"));
  // The topic deleted from its page is gone for Kafka clients too.
  EXPECT_NE(out.find("deleted doomed gone\n"), std::string::npos) << out;
  EXPECT_EQ(b.get("/v1/topics/doomed").status, 404);
  // (Every topic's metadata: a Metadata request naming it would create it again.)
  auto [gone_rc, gone] = run_command(kcat + " -L");
  EXPECT_EQ(gone_rc, 0);
  EXPECT_NE(gone.find("topic \"clicks\""), std::string::npos) << gone;
  EXPECT_EQ(gone.find("topic \"doomed\""), std::string::npos) << gone;
}

}  // namespace
}  // namespace tarn::test
