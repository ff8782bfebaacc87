// The web console's JSON API (/v1, docs/http-api.md) on a real `tarn serve`, driven with real
// HTTP requests (cpp-httplib's client) after kcat produced and a kcat group member consumed:
// topics created, described, altered and deleted; records browsed page by page as text, base64
// and hex with their keys and headers; a group's committed offsets and lag; per-topic rates;
// bad requests answered 4xx; http.console.read.only refusing every change with 403.
#include <fmt/format.h>

#include "console_util.h"
#include "produce_util.h"

namespace tarn::test {
namespace {

int shell(const std::string& command) {
  const int rc = std::system(command.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

// `count` records "key-i:value-i" (i from `first`) with the header source=kcat, produced by kcat.
void produce(const console_broker& b, const std::string& topic, int first, int count,
             const temp_dir& tmp) {
  std::string lines;
  for (int i = first; i < first + count; ++i) {
    lines += "key-" + std::to_string(i) + ":value-" + std::to_string(i) + "\n";
  }
  const auto file = tmp.write_file("in-" + std::to_string(first) + ".txt", lines);
  ASSERT_EQ(shell("timeout 60 kcat -P -b " + b.bootstrap() + " -t " + topic +
                  " -K : -H source=kcat -l " + file.string()),
            0);
}

const json* config_named(const json& topic, const std::string& name) {
  for (const auto& c : topic["configs"]) {
    if (c["name"] == name) return &c;
  }
  return nullptr;
}

TEST(console_api, topics_records_groups_and_rates) {
  if (!have_program("kcat")) GTEST_SKIP() << "kcat is missing";
  console_broker b;
  ASSERT_NE(b.http_port(), 0) << b.broker().output();
  temp_dir tmp;

  // Create, with configs; the errors of a second create and of bad bodies.
  auto created = b.request(
      "POST", "/v1/topics",
      json{{"name", "made-here"}, {"partitions", 3}, {"configs", {{"retention.ms", "3600000"}}}});
  ASSERT_EQ(created.status, 201) << created.text;
  EXPECT_EQ(created.body["partitions"], 3);
  EXPECT_EQ(created.body["partition_detail"].size(), 3u);
  const json* retention = config_named(created.body, "retention.ms");
  ASSERT_NE(retention, nullptr);
  EXPECT_EQ((*retention)["value"], "3600000");
  EXPECT_EQ((*retention)["source"], "DYNAMIC_TOPIC_CONFIG");
  EXPECT_EQ(b.request("POST", "/v1/topics", json{{"name", "made-here"}}).status, 409);
  EXPECT_EQ(b.request("POST", "/v1/topics", json{{"name", "bad/name"}}).status, 400);
  EXPECT_EQ(b.request("POST", "/v1/topics", json{{"name", "x"}, {"partitions", 0}}).status, 400);
  auto bad_config =
      b.request("POST", "/v1/topics", json{{"name", "y"}, {"configs", {{"no.such.config", "1"}}}});
  EXPECT_EQ(bad_config.status, 400) << bad_config.text;
  EXPECT_EQ(b.request("POST", "/v1/topics", json::array()).status, 400);
  {
    auto c = b.client();
    auto not_json = c.Post("/v1/topics", "{", "application/json");
    ASSERT_TRUE(not_json);
    EXPECT_EQ(not_json->status, 400);
    auto form = c.Post("/v1/topics", "name=z", "application/x-www-form-urlencoded");
    ASSERT_TRUE(form);
    EXPECT_EQ(form->status, 415);
    // Bodies are capped at 64 KiB.
    auto huge = c.Post("/v1/topics", "{\"name\":\"" + std::string(100 * 1024, 'h') + "\"}",
                       "application/json");
    ASSERT_TRUE(huge);
    EXPECT_EQ(huge->status, 413);
    // Outside the console's routes every other method is still refused.
    auto post_metrics = c.Post("/metrics", "", "application/json");
    ASSERT_TRUE(post_metrics);
    EXPECT_EQ(post_metrics->status, 405);
  }

  // 200 records through kcat (auto-created "browse", one partition).
  produce(b, "browse", 0, 200, tmp);
  auto listed = b.get("/v1/topics");
  ASSERT_EQ(listed.status, 200);
  std::map<std::string, json> by_name;
  for (const auto& t : listed.body["topics"]) by_name[t["name"]] = t;
  ASSERT_TRUE(by_name.contains("browse")) << listed.text;
  ASSERT_TRUE(by_name.contains("made-here"));
  EXPECT_EQ(by_name["browse"]["messages"], 200);
  EXPECT_GT(by_name["browse"]["size_bytes"].get<int64_t>(), 200 * 10);

  auto described = b.get("/v1/topics/browse");
  ASSERT_EQ(described.status, 200);
  EXPECT_EQ(described.body["partition_detail"][0]["high_watermark"], 200);
  EXPECT_EQ(described.body["partition_detail"][0]["log_start_offset"], 0);
  EXPECT_GE(described.body["partition_detail"][0]["segments"].get<int>(), 1);
  EXPECT_EQ(b.get("/v1/topics/no-such-topic").status, 404);

  // Browse: first page, a later page, the last partial page, as base64 and hex, a byte bound.
  auto page = b.get("/v1/topics/browse/partitions/0/records?offset=0&limit=50");
  ASSERT_EQ(page.status, 200) << page.text;
  ASSERT_EQ(page.body["records"].size(), 50u);
  EXPECT_EQ(page.body["next_offset"], 50);
  EXPECT_EQ(page.body["high_watermark"], 200);
  const json& first = page.body["records"][0];
  EXPECT_EQ(first["offset"], 0);
  EXPECT_EQ(first["key"], "key-0");
  EXPECT_EQ(first["value"], "value-0");
  ASSERT_EQ(first["headers"].size(), 1u);
  EXPECT_EQ(first["headers"][0]["key"], "source");
  EXPECT_EQ(first["headers"][0]["value"], "kcat");
  EXPECT_EQ(first["timestamp_type"], "CreateTime");
  const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  EXPECT_LE(std::abs(first["timestamp"].get<int64_t>() - now_ms), 120000);
  EXPECT_EQ(page.body["records"][49]["value"], "value-49");

  auto middle = b.get("/v1/topics/browse/partitions/0/records?offset=120&limit=5");
  ASSERT_EQ(middle.body["records"].size(), 5u);
  EXPECT_EQ(middle.body["records"][0]["offset"], 120);
  EXPECT_EQ(middle.body["records"][0]["key"], "key-120");
  EXPECT_EQ(middle.body["next_offset"], 125);
  auto last = b.get("/v1/topics/browse/partitions/0/records?offset=190&limit=50");
  ASSERT_EQ(last.body["records"].size(), 10u);
  EXPECT_EQ(last.body["next_offset"], 200);
  // By time: from the first record at or after a timestamp (kcat stamped them all within a few
  // ms, so the first record's own timestamp finds offset 0; an hour ahead finds nothing).
  const int64_t t0 = first["timestamp"].get<int64_t>();
  auto by_time =
      b.get("/v1/topics/browse/partitions/0/records?limit=1&timestamp=" + std::to_string(t0));
  ASSERT_EQ(by_time.status, 200) << by_time.text;
  EXPECT_EQ(by_time.body["records"][0]["offset"], 0);
  auto future =
      b.get("/v1/topics/browse/partitions/0/records?timestamp=" + std::to_string(now_ms + 3600000));
  EXPECT_TRUE(future.body["records"].empty());
  EXPECT_EQ(future.body["next_offset"], 200);
  EXPECT_EQ(b.get("/v1/topics/browse/partitions/0/records?timestamp=soon").status, 400);
  auto past = b.get("/v1/topics/browse/partitions/0/records?offset=500");
  ASSERT_EQ(past.status, 200);
  EXPECT_TRUE(past.body["records"].empty());
  auto b64 = b.get("/v1/topics/browse/partitions/0/records?offset=0&limit=1&encoding=base64");
  EXPECT_EQ(b64.body["records"][0]["value"], "dmFsdWUtMA==");  // "value-0"
  EXPECT_EQ(b64.body["records"][0]["key"], "a2V5LTA=");        // "key-0"
  auto hexed = b.get("/v1/topics/browse/partitions/0/records?offset=0&limit=1&encoding=hex");
  EXPECT_EQ(hexed.body["records"][0]["value"], "76616c75652d30");
  auto one_byte = b.get("/v1/topics/browse/partitions/0/records?offset=0&limit=50&max_bytes=1");
  EXPECT_EQ(one_byte.body["records"].size(), 1u) << "max_bytes returns at least one record";
  EXPECT_EQ(b.get("/v1/topics/browse/partitions/0/records?limit=0").status, 400);
  EXPECT_EQ(b.get("/v1/topics/browse/partitions/0/records?offset=abc").status, 400);
  EXPECT_EQ(b.get("/v1/topics/browse/partitions/0/records?encoding=rot13").status, 400);
  EXPECT_EQ(b.get("/v1/topics/browse/partitions/7/records").status, 404);
  auto capped = b.get("/v1/topics/browse/partitions/0/records?offset=0&limit=1000000");
  EXPECT_EQ(capped.body["records"].size(), 200u);

  // A kcat group member reads everything and commits: lag 0; 30 more records: lag 30.
  ASSERT_EQ(shell("timeout 60 kcat -b " + b.bootstrap() +
                  " -G console-readers -X auto.offset.reset=earliest -X auto.commit.interval.ms=100"
                  " -e -q browse > " +
                  (tmp.path() / "consumed.txt").string()),
            0);
  const std::string consumed = read_file(tmp.path() / "consumed.txt");
  EXPECT_EQ(std::count(consumed.begin(), consumed.end(), '\n'), 200);
  json group;
  EXPECT_TRUE(eventually(
      [&] {
        auto g = b.get("/v1/groups/console-readers");
        if (g.status != 200 || g.body["offsets"].empty()) return false;
        group = g.body;
        return group["offsets"][0]["committed_offset"] == 200;
      },
      10s))
      << group.dump();
  EXPECT_EQ(group["offsets"][0]["topic"], "browse");
  EXPECT_EQ(group["offsets"][0]["lag"], 0);
  EXPECT_EQ(group["total_lag"], 0);
  EXPECT_EQ(group["protocol_type"], "consumer");
  produce(b, "browse", 200, 30, tmp);
  auto lagging = b.get("/v1/groups/console-readers");
  EXPECT_EQ(lagging.body["offsets"][0]["high_watermark"], 230);
  EXPECT_EQ(lagging.body["offsets"][0]["lag"], 30);
  EXPECT_EQ(lagging.body["total_lag"], 30);
  auto groups = b.get("/v1/groups");
  ASSERT_EQ(groups.status, 200);
  bool listed_group = false;
  for (const auto& g : groups.body["groups"]) {
    if (g["group_id"] == "console-readers") {
      listed_group = true;
      EXPECT_EQ(g["total_lag"], 30);
    }
  }
  EXPECT_TRUE(listed_group) << groups.text;
  EXPECT_EQ(b.get("/v1/groups/nobody").status, 404);

  // Reset the inactive group's offsets: earliest, a given offset, latest.
  auto to_earliest = b.request("POST", "/v1/groups/console-readers/offsets",
                               json{{"topic", "browse"}, {"to", "earliest"}});
  ASSERT_EQ(to_earliest.status, 200) << to_earliest.text;
  EXPECT_EQ(to_earliest.body["offsets"][0]["committed_offset"], 0);
  EXPECT_EQ(to_earliest.body["total_lag"], 230);
  auto to_offset = b.request("POST", "/v1/groups/console-readers/offsets",
                             json{{"topic", "browse"}, {"to", 100}, {"partitions", {0}}});
  ASSERT_EQ(to_offset.status, 200) << to_offset.text;
  EXPECT_EQ(to_offset.body["offsets"][0]["lag"], 130);
  auto to_latest = b.request("POST", "/v1/groups/console-readers/offsets",
                             json{{"topic", "browse"}, {"to", "latest"}});
  EXPECT_EQ(to_latest.body["total_lag"], 0);
  // What kcat's group sees: it resumes from the reset offset (latest: nothing to read).
  auto [offsets_rc, offsets_out] = run_command("timeout 60 kcat -b " + b.bootstrap() +
                                               " -G console-readers -e -q browse | wc -l");
  EXPECT_EQ(offsets_rc, 0);
  EXPECT_EQ(offsets_out, "0\n");
  EXPECT_EQ(b.request("POST", "/v1/groups/console-readers/offsets",
                      json{{"topic", "browse"}, {"to", "sometime"}})
                .status,
            400);
  EXPECT_EQ(b.request("POST", "/v1/groups/console-readers/offsets",
                      json{{"topic", "nope"}, {"to", "latest"}})
                .status,
            404);
  // A group with a live member is refused, as kafka-consumer-groups.sh refuses it.
  {
    child_process member(std::vector<std::string>{"/usr/bin/kcat", "-b", b.bootstrap(), "-G",
                                                  "busy-readers", "-q", "browse"});
    EXPECT_TRUE(eventually(
        [&] {
          auto g = b.get("/v1/groups/busy-readers");
          return g.status == 200 && !g.body["members"].empty();
        },
        20s));
    auto busy = b.request("POST", "/v1/groups/busy-readers/offsets",
                          json{{"topic", "browse"}, {"to", "earliest"}});
    EXPECT_EQ(busy.status, 409) << busy.text;
    member.send_signal(SIGTERM);
    member.wait_exit(10s);
  }

  // Rates: the sampler saw the records come in (one sample a second, a 10 s window).
  double rate = 0;
  EXPECT_TRUE(eventually(
      [&] {
        auto r = b.get("/v1/rates");
        if (!r.body["topics"].contains("browse")) return false;
        rate = r.body["topics"]["browse"]["messages_in_per_sec"].get<double>();
        return rate > 0 && r.body["requests_per_sec"].value("Produce", 0.0) > 0 &&
               r.body["requests_per_sec"].value("Fetch", 0.0) > 0;
      },
      5s));
  // The series the dashboard charts: some point of the last two minutes saw Produce requests.
  {
    auto r = b.get("/v1/rates");
    double produce_peak = 0;
    for (const auto& p : r.body["series"]) {
      ASSERT_TRUE(p["requests_per_sec_by_api"].is_object()) << p.dump();
      produce_peak = std::max(produce_peak, p["requests_per_sec_by_api"].value("Produce", 0.0));
    }
    EXPECT_GT(produce_peak, 0.0) << r.text;
  }
  EXPECT_GT(b.get("/v1/cluster").body["bytes_out_per_sec"].get<double>() +
                b.get("/v1/cluster").body["bytes_in_per_sec"].get<double>(),
            0.0);

  // Produce from the console, read back by kcat: key, value, header, at the next offset.
  auto appended = b.request("POST", "/v1/topics/browse/partitions/0/records",
                            json{{"key", "from-http"},
                                 {"value", "hello from the console"},
                                 {"headers", {{{"key", "via"}, {"value", "http"}}}}});
  ASSERT_EQ(appended.status, 201) << appended.text;
  EXPECT_EQ(appended.body["offset"], 230);
  auto [kcat_rc, read_back] = run_command("timeout 30 kcat -C -b " + b.bootstrap() +
                                          " -t browse -p 0 -o 230 -c 1 -e -q -f '%o %k %s %h\\n'");
  EXPECT_EQ(kcat_rc, 0);
  EXPECT_EQ(read_back, "230 from-http hello from the console via=http\n");
  auto tombstone = b.request("POST", "/v1/topics/browse/partitions/0/records",
                             json{{"key", "gone"}, {"value", nullptr}});
  ASSERT_EQ(tombstone.status, 201);
  auto tomb = b.get("/v1/topics/browse/partitions/0/records?offset=231&limit=1");
  EXPECT_TRUE(tomb.body["records"][0]["value"].is_null());
  EXPECT_EQ(tomb.body["records"][0]["key"], "gone");
  EXPECT_EQ(
      b.request("POST", "/v1/topics/browse/partitions/3/records", json{{"value", "x"}}).status,
      404);
  EXPECT_EQ(
      b.request("POST", "/v1/topics/__consumer_offsets/partitions/0/records", json{{"value", "x"}})
          .status,
      400);
  EXPECT_EQ(b.request("POST", "/v1/topics/browse/partitions/0/records", json{{"value", 5}}).status,
            400);

  // Configs: set one, remove it again.
  auto altered = b.request("PATCH", "/v1/topics/browse/configs",
                           json{{"configs", {{"retention.bytes", 1048576}}}});
  ASSERT_EQ(altered.status, 200) << altered.text;
  EXPECT_EQ((*config_named(altered.body, "retention.bytes"))["value"], "1048576");
  EXPECT_EQ((*config_named(altered.body, "retention.bytes"))["source"], "DYNAMIC_TOPIC_CONFIG");
  auto reset = b.request("PATCH", "/v1/topics/browse/configs",
                         json{{"configs", {{"retention.bytes", nullptr}}}});
  ASSERT_EQ(reset.status, 200);
  EXPECT_EQ((*config_named(reset.body, "retention.bytes"))["source"], "DEFAULT_CONFIG");
  EXPECT_EQ(b.request("PATCH", "/v1/topics/browse/configs",
                      json{{"configs", {{"cleanup.policy", "sometimes"}}}})
                .status,
            400);
  EXPECT_EQ(b.request("PATCH", "/v1/topics/nope/configs", json{{"configs", json::object()}}).status,
            404);

  // Delete.
  EXPECT_EQ(b.request("DELETE", "/v1/topics/made-here").status, 200);
  EXPECT_EQ(b.get("/v1/topics/made-here").status, 404);
  EXPECT_EQ(b.request("DELETE", "/v1/topics/made-here").status, 404);

  // Kafka still sees the broker as before: kcat lists what the console left.
  auto [rc, metadata] = run_command("timeout 30 kcat -L -b " + b.bootstrap());
  EXPECT_EQ(rc, 0);
  EXPECT_NE(metadata.find("topic \"browse\""), std::string::npos) << metadata;
  EXPECT_EQ(metadata.find("made-here"), std::string::npos);

  auto stopped = b.broker().stop();
  ASSERT_TRUE(stopped);
  EXPECT_EQ(stopped->code, 0);
}

TEST(console_api, read_only_refuses_every_change) {
  console_broker b({"--override", "http.console.read.only=true"});
  ASSERT_NE(b.http_port(), 0) << b.broker().output();
  auto refused = b.request("POST", "/v1/topics", json{{"name", "nope"}});
  EXPECT_EQ(refused.status, 403);
  EXPECT_NE(refused.text.find("read-only"), std::string::npos);
  EXPECT_EQ(b.request("DELETE", "/v1/topics/nope").status, 403);
  EXPECT_EQ(b.request("POST", "/v1/topics/nope/partitions/0/records", json{{"value", "x"}}).status,
            403);
  EXPECT_EQ(b.request("PATCH", "/v1/topics/nope/configs", json{{"configs", json::object()}}).status,
            403);
  EXPECT_EQ(
      b.request("POST", "/v1/groups/g/offsets", json{{"topic", "t"}, {"to", "latest"}}).status,
      403);
  EXPECT_EQ(b.get("/v1/topics/nope").status, 404) << "nothing was created";
  auto cluster = b.get("/v1/cluster");
  ASSERT_EQ(cluster.status, 200);
  EXPECT_EQ(cluster.body["read_only"], true);
  EXPECT_EQ(b.get("/v1/topics").status, 200);
}

// The batch inspector's JSON gives what `tarn dump-log --deep-iteration` (Kafka's DumpLogSegments
// format) prints for the same segment: offsets, counts, sizes, codec, CRC and its check, and each
// record's timestamp and key and value sizes; the hex is the batch's bytes.
TEST(console_api, batch_inspector_matches_dump_log) {
  if (!have_program("kcat")) GTEST_SKIP() << "kcat is missing";
  console_broker b;
  ASSERT_NE(b.http_port(), 0) << b.broker().output();
  temp_dir tmp;
  std::string lines;
  for (int i = 0; i < 30; ++i)
    lines += "k" + std::to_string(i) + ":value " + std::to_string(i) + "\n";
  const auto file = tmp.write_file("in.txt", lines);
  // Each run's 30 records in one batch, sent once all are queued (or at kcat's flush): with a
  // short linger a loaded machine (TSan's suite) had kcat send them one by one, more batches
  // than the 20 asked for below.
  const std::string one_batch = " -X linger.ms=50000 -X batch.num.messages=30";
  ASSERT_EQ(shell("timeout 60 kcat -P -b " + b.bootstrap() + " -t inspected" + one_batch +
                  " -z lz4 -K : -l " + file.string()),
            0);
  ASSERT_EQ(shell("timeout 60 kcat -P -b " + b.bootstrap() + " -t inspected" + one_batch + " -l " +
                  file.string()),
            0);
  auto answer = b.get("/v1/topics/inspected/partitions/0/batches?offset=0&limit=20");
  ASSERT_EQ(answer.status, 200) << answer.text;
  const json& batches = answer.body["batches"];
  // A batch for each of the two runs (at least: kcat may still split one), and the second run
  // starts a batch at offset 30.
  ASSERT_GE(batches.size(), 2u) << answer.text;
  auto [rc, dump] =
      run_command(std::string(TARN_BINARY) + " dump-log --deep-iteration --files " +
                  (b.broker().data_dir() / "inspected-0/00000000000000000000.log").string());
  ASSERT_EQ(rc, 0) << dump;
  int64_t position = 0;
  for (const auto& batch : batches) {
    EXPECT_TRUE(batch["crc_valid"].get<bool>());
    const int64_t size = batch["batch_length"].get<int64_t>() + 12;
    EXPECT_EQ(batch["hex"].get<std::string>().size(), static_cast<size_t>(size) * 2);
    const std::string header = fmt::format(
        "baseOffset: {} lastOffset: {} count: {} baseSequence: -1 lastSequence: -1 producerId: -1 "
        "producerEpoch: -1 partitionLeaderEpoch: 0 isTransactional: false isControl: false "
        "deleteHorizonMs: OptionalLong.empty position: {} CreateTime: {} size: {} magic: 2 "
        "compresscodec: {} crc: {} isvalid: true\n",
        batch["base_offset"].get<int64_t>(), batch["last_offset"].get<int64_t>(),
        batch["records_count"].get<int>(), position, batch["max_timestamp"].get<int64_t>(), size,
        batch["compression"].get<std::string>(), batch["crc"].get<uint32_t>());
    EXPECT_NE(dump.find(header), std::string::npos) << header << "\n" << dump.substr(0, 3000);
    for (const auto& r : batch["records"]) {
      const std::string line =
          fmt::format("| offset: {} CreateTime: {} keySize: {} valueSize: {} ",
                      batch["base_offset"].get<int64_t>() + r["offset_delta"].get<int64_t>(),
                      batch["base_timestamp"].get<int64_t>() + r["timestamp_delta"].get<int64_t>(),
                      r["key_length"].get<int>(), r["value_length"].get<int>());
      EXPECT_NE(dump.find(line), std::string::npos) << line;
    }
    position += size;
  }
  size_t records = 0;
  int lz4_batches = 0;
  const json* second_run = nullptr;
  for (const auto& batch : batches) {
    records += batch["records"].size();
    EXPECT_EQ(batch["records"].size(), batch["records_count"].get<size_t>());
    // librdkafka sends a batch uncompressed when lz4 would not make it smaller (a lone record).
    const std::string codec = batch["compression"].get<std::string>();
    if (batch["base_offset"].get<int64_t>() < 30) {
      lz4_batches += codec == "lz4";
    } else {
      EXPECT_EQ(codec, "none");
    }
    if (batch["base_offset"] == 30) second_run = &batch;
  }
  EXPECT_EQ(records, 60u);
  EXPECT_GE(lz4_batches, 1) << answer.text;
  ASSERT_NE(second_run, nullptr) << answer.text;
  EXPECT_EQ((*second_run)["records"][0]["key_length"], -1);
  // The bytes' first field is the base offset, big-endian: 30 = 0x1e.
  EXPECT_TRUE((*second_run)["hex"].get<std::string>().starts_with("000000000000001e"));
  auto from_40 = b.get("/v1/topics/inspected/partitions/0/batches?offset=40&limit=1");
  ASSERT_EQ(from_40.body["batches"].size(), 1u);
  EXPECT_LE(from_40.body["batches"][0]["base_offset"].get<int64_t>(), 40);
  EXPECT_GE(from_40.body["batches"][0]["last_offset"].get<int64_t>(), 40);
  EXPECT_EQ(b.get("/v1/topics/inspected/partitions/0/batches?offset=60").body["batches"].size(),
            0u);
  EXPECT_EQ(b.get("/v1/topics/inspected/partitions/4/batches").status, 404);
}

// A large batch comes whole, its hex the stored bytes of the segment, not cut (the page pages it;
// the API once stopped at 64 KiB). One hand-built batch of 500 records of 1,000 bytes (about
// 500 KB; kcat asked for one batch split it as its timing went, into 1 KB batches on a loaded
// machine), behind a small one.
TEST(console_api, batch_inspector_sends_a_large_batch_whole) {
  console_broker b;
  ASSERT_NE(b.http_port(), 0) << b.broker().output();
  ASSERT_EQ(create_topic(b.broker().port(), "whole", 1), 0);
  raw_client c(b.broker().port());
  ASSERT_EQ(produce_one(c, 1, "whole", 0, value_batch("small first")).error_code, 0);
  record::batch_builder_config config;
  config.batch_size = 2 << 20;
  record::batch_builder builder(config);
  for (int i = 0; i < 500; ++i) {
    const std::string value = fmt::format("{:06d}", i) + std::string(994, 'v');
    ASSERT_EQ(builder.try_append(1'700'000'000'000 + i, std::nullopt, record::as_bytes(value)),
              record::append_result::appended);
  }
  const std::vector<uint8_t> large = *builder.build();
  ASSERT_EQ(produce_one(c, 2, "whole", 0, large).error_code, 0);
  auto answer = b.get("/v1/topics/whole/partitions/0/batches?offset=0&limit=20");
  ASSERT_EQ(answer.status, 200) << answer.text.substr(0, 500);
  const json* biggest = nullptr;
  for (const auto& batch : answer.body["batches"]) {
    if (biggest == nullptr || batch["batch_length"] > (*biggest)["batch_length"]) biggest = &batch;
  }
  ASSERT_NE(biggest, nullptr);
  const int64_t size = (*biggest)["batch_length"].get<int64_t>() + 12;
  EXPECT_EQ(size, static_cast<int64_t>(large.size())) << answer.text.substr(0, 300);
  EXPECT_GT(size, 64 * 1024);
  EXPECT_FALSE((*biggest)["hex_truncated"].get<bool>());
  const std::string hex = (*biggest)["hex"].get<std::string>();
  ASSERT_EQ(hex.size(), static_cast<size_t>(size) * 2);
  // The stored bytes: the segment file's, from the batch's position.
  const std::string segment = read_file(b.broker().data_dir() / "whole-0/00000000000000000000.log");
  int64_t position = 0;
  for (const auto& batch : answer.body["batches"]) {
    if (&batch == biggest) break;
    position += batch["batch_length"].get<int64_t>() + 12;
  }
  ASSERT_GE(segment.size(), static_cast<size_t>(position + size));
  std::string stored;
  for (int64_t i = position; i < position + size; ++i) {
    stored += fmt::format("{:02x}", static_cast<uint8_t>(segment[static_cast<size_t>(i)]));
  }
  EXPECT_TRUE(hex == stored);
}

// The partition table's segment files are the .log files in the partition's directory: the same
// names (the 20-digit base offset), base offsets and sizes, oldest first.
TEST(console_api, segment_files_match_the_data_dir) {
  if (!have_program("kcat")) GTEST_SKIP() << "kcat is missing";
  console_broker b;
  ASSERT_NE(b.http_port(), 0) << b.broker().output();
  temp_dir tmp;
  // segment.bytes at its floor (1 MiB) and 2.5 MiB of records: three segments.
  auto created = b.request(
      "POST", "/v1/topics",
      json{{"name", "segmented"}, {"partitions", 1}, {"configs", {{"segment.bytes", "1048576"}}}});
  ASSERT_EQ(created.status, 201) << created.text;
  std::string lines;
  for (int i = 0; i < 2500; ++i) lines += fmt::format("{:06d}", i) + std::string(994, 'v') + "\n";
  const auto file = tmp.write_file("in.txt", lines);
  ASSERT_EQ(shell("timeout 60 kcat -P -b " + b.bootstrap() +
                  " -t segmented -X batch.size=100000 -l " + file.string()),
            0);

  auto topic = b.get("/v1/topics/segmented");
  ASSERT_EQ(topic.status, 200) << topic.text;
  const json& partition = topic.body["partition_detail"][0];
  const json& segments = partition["segment_files"];
  ASSERT_GE(segments.size(), 3u) << topic.text;
  EXPECT_EQ(partition["segments"], segments.size());

  std::vector<std::filesystem::path> on_disk;
  for (const auto& e : std::filesystem::directory_iterator(b.broker().data_dir() / "segmented-0")) {
    if (e.path().extension() == ".log") on_disk.push_back(e.path());
  }
  std::sort(on_disk.begin(), on_disk.end());
  ASSERT_EQ(on_disk.size(), segments.size()) << topic.text;
  int64_t total = 0;
  for (size_t i = 0; i < on_disk.size(); ++i) {
    const json& seg = segments[i];
    const std::string name = on_disk[i].filename().string();
    EXPECT_EQ(seg["name"], name);
    EXPECT_EQ(seg["base_offset"].get<int64_t>(), std::stoll(name.substr(0, 20))) << name;
    EXPECT_EQ(seg["size_bytes"].get<uintmax_t>(), std::filesystem::file_size(on_disk[i])) << name;
    total += seg["size_bytes"].get<int64_t>();
  }
  EXPECT_EQ(segments[0]["name"], "00000000000000000000.log");
  EXPECT_GT(segments[1]["base_offset"].get<int64_t>(), 0);
  EXPECT_LE(segments[0]["size_bytes"].get<int64_t>(), 1048576);
  EXPECT_EQ(partition["size_bytes"].get<int64_t>(), total);
  // The topic list stays light: no partitions there.
  auto list = b.get("/v1/topics");
  ASSERT_EQ(list.status, 200);
  for (const auto& t : list.body["topics"]) EXPECT_FALSE(t.contains("partition_detail"));
}

// Eight clients reading 1000-record pages as fast as they can while kcat produces: Kafka is
// served throughout (every record arrives, in bounded time) and every page is answered.
TEST(console_api, busy_console_readers_do_not_stop_produce) {
  if (!have_program("kcat")) GTEST_SKIP() << "kcat is missing";
  console_broker b;
  ASSERT_NE(b.http_port(), 0) << b.broker().output();
  temp_dir tmp;
  produce(b, "busy", 0, 20000, tmp);  // creates the topic
  const auto quiet_start = std::chrono::steady_clock::now();
  produce(b, "busy", 20000, 20000, tmp);
  const auto quiet = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - quiet_start);
  std::atomic<bool> stop{false};
  std::atomic<int> pages{0}, failures{0};
  std::vector<std::thread> readers;
  for (int i = 0; i < 8; ++i) {
    readers.emplace_back([&, i] {
      auto c = b.client();
      int64_t offset = i * 2000;
      while (!stop.load()) {
        auto r = c.Get("/v1/topics/busy/partitions/0/records?limit=1000&offset=" +
                       std::to_string(offset % 40000));
        if (r && r->status == 200) {
          ++pages;
        } else {
          ++failures;
        }
        offset += 1000;
      }
    });
  }
  const auto started = std::chrono::steady_clock::now();
  produce(b, "busy", 40000, 20000, tmp);
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
      std::chrono::steady_clock::now() - started);
  stop = true;
  for (auto& t : readers) t.join();
  std::cout << "20,000 records produced by kcat in " << quiet.count() << " ms alone, in "
            << took.count() << " ms while " << pages.load() << " pages of 1000 records were read\n";
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GT(pages.load(), 0);
  EXPECT_LT(took, 30s);
  auto t = b.get("/v1/topics/busy");
  EXPECT_EQ(t.body["partition_detail"][0]["high_watermark"], 60000);
  auto last = b.get("/v1/topics/busy/partitions/0/records?offset=59999");
  ASSERT_EQ(last.body["records"].size(), 1u);
  EXPECT_EQ(last.body["records"][0]["value"], "value-59999");
}

TEST(console_api, console_assets_are_served_from_the_binary) {
  console_broker b;
  ASSERT_NE(b.http_port(), 0) << b.broker().output();
  auto c = b.client();
  auto index = c.Get("/");
  ASSERT_TRUE(index);
  EXPECT_EQ(index->status, 200);
  EXPECT_EQ(index->get_header_value("Content-Type"), "text/html; charset=utf-8");
  EXPECT_NE(index->body.find("<title>tarn console</title>"), std::string::npos);
  auto js = c.Get("/console/app.js");
  ASSERT_TRUE(js);
  EXPECT_EQ(js->status, 200);
  EXPECT_EQ(js->get_header_value("Content-Type"), "text/javascript; charset=utf-8");
  EXPECT_EQ(js->body,
            read_file(std::filesystem::path(TARN_SOURCE_DIR) / "src/observe/console/app.js"));
  auto css = c.Get("/console/style.css");
  ASSERT_TRUE(css);
  EXPECT_EQ(css->status, 200);
  // uPlot, vendored: served byte for byte as committed.
  auto uplot = c.Get("/console/vendor/uplot/uPlot.iife.min.js");
  ASSERT_TRUE(uplot);
  EXPECT_EQ(uplot->status, 200);
  EXPECT_EQ(uplot->get_header_value("Content-Type"), "text/javascript; charset=utf-8");
  EXPECT_EQ(uplot->body, read_file(std::filesystem::path(TARN_SOURCE_DIR) /
                                   "src/observe/console/vendor/uplot/uPlot.iife.min.js"));
  auto uplot_css = c.Get("/console/vendor/uplot/uPlot.min.css");
  ASSERT_TRUE(uplot_css);
  EXPECT_EQ(uplot_css->status, 200);
  EXPECT_EQ(uplot_css->get_header_value("Content-Type"), "text/css; charset=utf-8");
  // Its MIT licence travels with it.
  auto licence = c.Get("/console/vendor/uplot/LICENSE");
  ASSERT_TRUE(licence);
  EXPECT_EQ(licence->status, 200);
  EXPECT_EQ(licence->get_header_value("Content-Type"), "text/plain; charset=utf-8");
  EXPECT_NE(licence->body.find("The MIT License"), std::string::npos);
  EXPECT_EQ(c.Get("/console/../../etc/passwd")->status, 404);
  EXPECT_EQ(c.Get("/console/missing.js")->status, 404);
}

}  // namespace
}  // namespace tarn::test
