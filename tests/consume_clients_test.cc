// Real consumers read back exactly what was written: kcat (librdkafka), confluent-kafka-python,
// kafka-python (Fetch v4, ListOffsets v1), the Java KafkaConsumer (Fetch v18 with topic IDs and
// incremental sessions) and `tarn consume` compare every offset, key, value, header and timestamp
// with the records sent (tests/python/consume_check.py, tests/java/ConsumeCheck.java):
//   - for segments Kafka 4.4.0 wrote for Java, kcat and python producers in every codec, placed
//     in a stopped tarn's log directory (also proving byte-for-byte serving of Kafka's files);
//   - for records produced to tarn by confluent-kafka in every codec (null keys and values,
//     headers, explicit timestamps).
// Clients that are not installed skip their test.
#include <gtest/gtest.h>

#include "fixture_topics.h"
#include "test_util.h"

namespace tarn::test {
namespace {

const char* python = "/usr/bin/python3";  // Debian's, with confluent_kafka and kafka-python

std::string source(const std::string& rel) { return std::string(TARN_SOURCE_DIR) + "/" + rel; }

bool have_python_module(const std::string& module) {
  return run_command(std::string(python) + " -c 'import " + module + "'").first == 0;
}

// "" when Java or the Kafka jars are missing.
std::string kafka_libs() {
  auto [rc, libs] = run_command(source("scripts/kafka-ref") + " libs");
  while (!libs.empty() && (libs.back() == '\n' || libs.back() == ' ')) libs.pop_back();
  libs = libs.substr(libs.rfind('\n') + 1);
  if (!have_program("java") || rc != 0 || !std::filesystem::exists(libs)) return "";
  return libs;
}

class fixtures_served : public ::testing::Test {
 protected:
  void SetUp() override {
    place_fixtures(tmp_.path() / "data", all_fixture_names());
    broker_ = std::make_unique<broker_process>(std::vector<std::string>{}, tmp_.path() / "data");
    ASSERT_NE(broker_->port(), 0) << broker_->output();
  }
  void TearDown() override {
    if (broker_) broker_->stop();
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(broker_->port()); }
  std::string json(const std::string& name) const {
    return (fixture_dir() / (name + ".records.json")).string();
  }

  // consume_check.py CLIENT for every fixture.
  void check_all(const std::string& client) {
    for (const auto& name : all_fixture_names()) {
      auto [code, out] = run_command("timeout 50 " + std::string(python) + " " +
                                     source("tests/python/consume_check.py") + " " + client + " " +
                                     address() + " " + name + " " + json(name) + " " + TARN_BINARY);
      EXPECT_EQ(code, 0) << name << ": " << out;
      EXPECT_NE(out.find("20 records match"), std::string::npos) << name << ": " << out;
    }
  }

  temp_dir tmp_;
  std::unique_ptr<broker_process> broker_;
};

TEST_F(fixtures_served, kcat_reads_every_fixture) {
  if (!have_program("kcat")) GTEST_SKIP() << "kcat not installed";
  check_all("kcat");
}

TEST_F(fixtures_served, confluent_kafka_reads_every_fixture) {
  if (!have_python_module("confluent_kafka")) GTEST_SKIP() << "confluent_kafka not installed";
  check_all("confluent");
}

TEST_F(fixtures_served, kafka_python_reads_every_fixture) {
  if (!have_python_module("kafka")) GTEST_SKIP() << "kafka-python not installed";
  check_all("kafka-python");
}

TEST_F(fixtures_served, tarn_consume_reads_every_fixture) { check_all("tarn"); }

TEST_F(fixtures_served, java_consumer_reads_every_fixture) {
  const std::string libs = kafka_libs();
  if (libs.empty()) GTEST_SKIP() << "java or the Kafka 4.4.0 jars are not available";
  std::string args;
  for (const auto& name : all_fixture_names()) args += " " + name + " " + json(name);
  auto [code, out] =
      run_command("timeout 55 java -cp '" + libs + "/*' " + source("tests/java/ConsumeCheck.java") +
                  " " + address() + args + " 2>/dev/null");
  EXPECT_EQ(code, 0) << out;
  for (const auto& name : all_fixture_names()) {
    EXPECT_NE(out.find("java: " + name + ": 20 records match"), std::string::npos) << out;
  }
}

// Records produced to tarn with confluent-kafka in every codec.
class produced : public ::testing::Test {
 protected:
  static constexpr const char* codecs[] = {"none", "gzip", "snappy", "lz4", "zstd"};

  void SetUp() override {
    if (!have_python_module("confluent_kafka")) GTEST_SKIP() << "confluent_kafka not installed";
    broker_ = std::make_unique<broker_process>();
    ASSERT_NE(broker_->port(), 0) << broker_->output();
    for (const char* codec : codecs) {
      auto [code, out] = run_command("timeout 30 " + std::string(python) + " " +
                                     source("tests/python/produce_records.py") + " " + address() +
                                     " produced-" + codec + " " + codec + " " + json(codec));
      ASSERT_EQ(code, 0) << codec << ": " << out;
    }
  }
  void TearDown() override {
    if (broker_) broker_->stop();
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(broker_->port()); }
  std::string json(const std::string& codec) const {
    return (tmp_.path() / (codec + ".json")).string();
  }

  temp_dir tmp_;
  std::unique_ptr<broker_process> broker_;
};

TEST_F(produced, every_python_and_native_consumer_reads_every_codec) {
  std::vector<std::string> clients = {"confluent", "tarn"};
  if (have_program("kcat")) clients.push_back("kcat");
  if (have_python_module("kafka")) clients.push_back("kafka-python");
  for (const char* codec : codecs) {
    for (const auto& client : clients) {
      auto [code, out] =
          run_command("timeout 30 " + std::string(python) + " " +
                      source("tests/python/consume_check.py") + " " + client + " " + address() +
                      " produced-" + codec + " " + json(codec) + " " + TARN_BINARY);
      EXPECT_EQ(code, 0) << client << " " << codec << ": " << out;
      EXPECT_NE(out.find("24 records match"), std::string::npos)
          << client << " " << codec << ": " << out;
    }
  }
}

TEST_F(produced, java_consumer_reads_every_codec) {
  const std::string libs = kafka_libs();
  if (libs.empty()) GTEST_SKIP() << "java or the Kafka 4.4.0 jars are not available";
  std::string args;
  for (const char* codec : codecs) args += std::string(" produced-") + codec + " " + json(codec);
  auto [code, out] =
      run_command("timeout 55 java -cp '" + libs + "/*' " + source("tests/java/ConsumeCheck.java") +
                  " " + address() + args + " 2>/dev/null");
  EXPECT_EQ(code, 0) << out;
  for (const char* codec : codecs) {
    EXPECT_NE(out.find(std::string("java: produced-") + codec + ": 24 records match"),
              std::string::npos)
        << out;
  }
}

}  // namespace
}  // namespace tarn::test
