// Real producers against tarn: the Java 4.4 KafkaProducer (tests/java/ProduceCheck.java),
// kcat/librdkafka and confluent-kafka write thousands of records; Kafka 4.4.0's own
// DumpLogSegments then reads the segments (and the producer-state snapshot) tarn wrote.
// GCC 12's -Wrestrict misfires on std::string operator+ with literals (GCC bug 105329).
#pragma GCC diagnostic ignored "-Wrestrict"

#include <gtest/gtest.h>

#include <filesystem>

#include "offsets_util.h"
#include "test_util.h"

namespace {

using namespace std::chrono_literals;
using namespace tarn::test;

std::string source(const std::string& rel) { return std::string(TARN_SOURCE_DIR) + "/" + rel; }

bool have_program(const std::string& name) {
  return run_command("command -v " + name + " >/dev/null").first == 0;
}

std::optional<std::string> kafka_libs() {
  auto [rc, libs] = run_command(source("scripts/kafka-ref") + " libs");
  while (!libs.empty() && (libs.back() == '\n' || libs.back() == ' ')) libs.pop_back();
  if (rc != 0 || !std::filesystem::exists(libs) || !have_program("java")) return std::nullopt;
  return libs;
}

// Kafka's DumpLogSegments over `files`; returns its output.
std::string dump_log(const std::vector<std::filesystem::path>& files) {
  std::string list;
  for (const auto& f : files) list += (list.empty() ? "" : ",") + f.string();
  return run_command("timeout 60 " + source("scripts/kafka-ref") +
                     " tool dump-log --deep-iteration --files " + list)
      .second;
}

int count_of(const std::string& text, const std::string& needle) {
  int n = 0;
  for (size_t p = text.find(needle); p != std::string::npos; p = text.find(needle, p + 1)) ++n;
  return n;
}

struct java_case {
  const char* name;
  const char* acks;
  const char* idempotence;
  const char* codec;
};

class java_produce : public ::testing::TestWithParam<java_case> {};

TEST_P(java_produce, kafka_reads_back_every_record) {
  auto libs = kafka_libs();
  if (!libs) GTEST_SKIP() << "java or the Kafka 4.4.0 jars are not available";
  const java_case& c = GetParam();
  broker_process broker;
  ASSERT_NE(broker.port(), 0) << broker.output();
  const int n = 3000;
  auto [rc, out] = run_command(
      "timeout 55 java -cp '" + *libs + "/*' " + source("tests/java/ProduceCheck.java") +
      " 127.0.0.1:" + std::to_string(broker.port()) + " jt " + std::to_string(n) + " " + c.acks +
      " " + c.idempotence + " " + c.codec);
  ASSERT_EQ(rc, 0) << out;
  if (std::string(c.acks) == "0") {
    EXPECT_NE(out.find("acked 3000 "), std::string::npos) << out;  // acks=0: no offsets known
  } else {
    EXPECT_NE(out.find("acked 3000 offsets 0-2999"), std::string::npos) << out;
  }
  // With acks=0 the producer is done once its bytes are written, perhaps before the broker read
  // them all; the stop would then drop what is still unread. Wait until all are appended.
  ASSERT_GE(wait_for_latest_offset(broker.port(), "jt", 0, n), n) << "records missing";
  ASSERT_TRUE(broker.stop().has_value());
  const auto part = broker.data_dir() / "jt-0";
  const std::string dump = dump_log({part / "00000000000000000000.log"});
  EXPECT_EQ(count_of(dump, "| offset: "), n) << dump.substr(0, 2000);
  EXPECT_EQ(count_of(dump, "isvalid: false"), 0);
  EXPECT_EQ(dump.find("invalid bytes"), std::string::npos);
  const std::string codec = std::string(c.codec) == "none" ? "none" : c.codec;
  EXPECT_NE(dump.find("compresscodec: " + codec), std::string::npos);
  EXPECT_NE(dump.find("partitionLeaderEpoch: 0"), std::string::npos);
  // The clean stop left a producer snapshot at the log end offset, which Kafka reads.
  const auto snapshot = part / "00000000000000003000.snapshot";
  ASSERT_TRUE(std::filesystem::exists(snapshot));
  const std::string snap = dump_log({snapshot});
  if (std::string(c.idempotence) == "true") {
    EXPECT_NE(snap.find("producerId: 0 producerEpoch: 0"), std::string::npos) << snap;
    EXPECT_NE(snap.find("lastSequence: 2999 lastOffset: 2999"), std::string::npos) << snap;
  } else {
    EXPECT_EQ(snap.find("producerId:"), std::string::npos) << snap;
  }
}

INSTANTIATE_TEST_SUITE_P(codecs, java_produce,
                         ::testing::Values(java_case{"idem_all_lz4", "all", "true", "lz4"},
                                           java_case{"idem_all_zstd", "all", "true", "zstd"},
                                           java_case{"plain_1_gzip", "1", "false", "gzip"},
                                           java_case{"plain_0_snappy", "0", "false", "snappy"},
                                           java_case{"plain_1_none", "1", "false", "none"}),
                         [](const auto& info) { return std::string(info.param.name); });

// librdkafka (kcat, confluent-kafka) uses record format v2 only when the broker advertises
// Fetch v4+ next to Produce v3+ (rdkafka_feature.c, MSGVER2); until tarn serves Fetch it sends
// magic-1 message sets, which Kafka 4.4 refuses as tarn does (INVALID_RECORD).
bool fetch_advertised(uint16_t port) {
  raw_client c(port);
  if (!c.send_request(18, 0, 1)) return false;
  auto frame = c.read_frame();
  if (!frame || frame->size() < 10) return false;
  const int32_t count = get_int32(*frame, 6);
  for (int32_t i = 0; i < count && 10 + 6 * static_cast<size_t>(i + 1) <= frame->size(); ++i) {
    if (get_int16(*frame, 10 + 6 * static_cast<size_t>(i)) == 1) return true;
  }
  return false;
}

TEST(kcat_produce, kafka_reads_back_every_record) {
  if (!have_program("kcat")) GTEST_SKIP() << "kcat not installed";
  broker_process broker;
  ASSERT_NE(broker.port(), 0) << broker.output();
  if (!fetch_advertised(broker.port())) {
    // Still a real check: the old format is refused, and nothing is written.
    auto [rc, out] = run_command(
        "seq 1 10 | timeout 20 kcat -P -b 127.0.0.1:" + std::to_string(broker.port()) + " -t kc");
    EXPECT_NE(out.find("Broker failed to validate record"), std::string::npos) << out;
    GTEST_SKIP() << "librdkafka needs Fetch v4 advertised to send v2 batches";
  }
  const std::vector<std::string> codecs = {"none", "gzip", "snappy", "lz4", "zstd"};
  for (const std::string& codec : codecs) {
    auto [rc, out] = run_command(
        "seq 1 2000 | timeout 30 kcat -P -b 127.0.0.1:" + std::to_string(broker.port()) +
        " -t kc-" + codec + " -z " + codec + " -X enable.idempotence=true");
    EXPECT_EQ(rc, 0) << out;
  }
  ASSERT_TRUE(broker.stop().has_value());
  if (!kafka_libs()) return;
  for (const std::string& codec : codecs) {
    const std::string dump =
        dump_log({broker.data_dir() / ("kc-" + codec + "-0") / "00000000000000000000.log"});
    EXPECT_EQ(count_of(dump, "| offset: "), 2000) << codec;
    EXPECT_EQ(count_of(dump, "isvalid: false"), 0) << codec;
    // Stored in the codec asked for. librdkafka compresses LZ4 only if the broker advertises
    // FindCoordinator (rdkafka_feature.c); without it every batch said "compresscodec: none".
    // (A batch compression would enlarge, such as a lone first record, goes uncompressed.)
    EXPECT_GT(count_of(dump, "compresscodec: " + codec), 0) << codec << "\n"
                                                            << dump.substr(0, 2000);
  }
}

}  // namespace
