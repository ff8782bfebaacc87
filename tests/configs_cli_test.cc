// `tarn configs` end to end, against `tarn serve` and against Apache Kafka 4.4.0
// (scripts/kafka-ref, when java and its jars are there), with the same assertions on both:
//   - topics: --alter --add-config (list values in [a,b]) / --delete-config, --describe of one
//     topic and of all, a config to delete that is not set, a topic that does not exist;
//   - brokers: a per-broker and a cluster-default dynamic config, --describe of both, of every
//     broker, and of a broker id that does not exist; broker-loggers: the root logger's level;
//   - client quotas: a client, a user, a user with a client, the default user; removing one;
//     describing every client; bad quota keys and values; SCRAM credentials added (the password
//     salted by tarn configs), described, deleted, and refused with the broker's error;
//   - argument errors in Kafka's words.
// Each step also runs Kafka's own kafka-configs (org.apache.kafka.tools.ConfigCommand from the
// 4.4.0 jars) with the same arguments on the same broker: stdout must match byte for byte, and
// stderr too once the Java stack traces are left out.
// GCC 12's -Wrestrict misfires on std::string operator+ with literals (GCC bug 105329).
#pragma GCC diagnostic ignored "-Wrestrict"

#include <gtest/gtest.h>

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "kafka_ref_broker.h"
#include "test_util.h"
#include "tool_output.h"

namespace tarn::test {
namespace {

// Kafka's stderr without its stack traces; tarn's without the "Caused by:" line it prints in
// their place.
std::string without_java_noise(const std::string& err) {
  std::istringstream in(err);
  std::string line, out;
  while (std::getline(in, line)) {
    if (line.starts_with("\tat ") || line.starts_with("java.") ||
        line.starts_with("org.apache.kafka.") || line.starts_with("Caused by") ||
        line.starts_with("\t... ") || line.starts_with("SLF4J")) {
      continue;
    }
    out += line + "\n";
  }
  return out;
}

class configs_cli : public ::testing::TestWithParam<broker_kind> {
 protected:
  void SetUp() override {
#ifdef TARN_SANITIZED_BUILD
    // A JVM start per command, and a minute of them per test: what Kafka's tool prints is the
    // release suite's to check; the handlers it reaches (DescribeConfigs, IncrementalAlterConfigs,
    // client quotas, SCRAM credentials) have hand-built tests that the sanitizer trees run.
    GTEST_SKIP() << "kafka-configs.sh's tests run in the release build only";
#endif
    if (auto skip = start_test_broker(GetParam(), {}, tarn_, port_); !skip.empty()) {
      GTEST_SKIP() << skip;
    }
    ASSERT_NE(port_, 0);
    prefix_ = test_name_prefix();
  }
  void TearDown() override {
    if (tarn_) tarn_->stop();
  }

  std::string bootstrap() const { return "127.0.0.1:" + std::to_string(port_); }
  std::string topic(const std::string& t = "topic") const { return prefix_ + t; }

  split_output tarn_configs(const std::string& args) const {
    return run_split(std::string("timeout 120 ") + TARN_BINARY + " configs --bootstrap-server " +
                     bootstrap() + " " + args);
  }
  split_output kafka_configs(const std::string& args) const {
    return run_split("timeout 180 java -cp '" + kafka_libs() +
                     "/*' org.apache.kafka.tools.ConfigCommand --bootstrap-server " + bootstrap() +
                     " " + args);
  }

  // Runs `tarn configs args`, checks it against Kafka's tool on the same broker (when the jars
  // are there), and returns tarn's output.
  split_output configs(const std::string& args) const {
    auto ours = tarn_configs(args);
    if (!kafka_libs().empty()) {
      auto theirs = kafka_configs(args);
      EXPECT_EQ(ours.out, theirs.out) << "configs " << args;
      EXPECT_EQ(without_java_noise(ours.err), without_java_noise(theirs.err)) << "configs " << args;
      EXPECT_EQ(ours.code, theirs.code) << "configs " << args;
    }
    return ours;
  }
  // A change made with tarn's tool only (an alter run twice would not fail twice).
  split_output alter(const std::string& args) const {
    auto r = tarn_configs("--alter " + args);
    EXPECT_EQ(r.code, 0) << r.out << r.err;
    return r;
  }

  void create_topic(const std::string& name) const {
    auto [rc, out] =
        run_command(std::string("timeout 120 ") + TARN_BINARY + " topics --bootstrap-server " +
                    bootstrap() + " --create --topic " + name + " --partitions 1");
    ASSERT_EQ(rc, 0) << out;
    // Kafka's metadata shows a new topic a moment after CreateTopics answers.
    for (int i = 0; i < 100; ++i) {
      auto d = tarn_configs("--describe --entity-type topics --entity-name " + name);
      if (d.out.find("doesn't exist") == std::string::npos) return;
      usleep(100 * 1000);
    }
    FAIL() << "topic " << name << " never appeared";
  }

  std::unique_ptr<broker_process> tarn_;
  uint16_t port_ = 0;
  std::string prefix_;
};

TEST_P(configs_cli, topic_configs) {
  const std::string t = topic();
  create_topic(t);
  auto r = alter("--entity-type topics --entity-name " + t +
                 " --add-config retention.ms=3600000,cleanup.policy=[compact,delete]");
  EXPECT_EQ(r.out, "Completed updating config for topic " + t + ".\n");

  r = configs("--describe --entity-type topics --entity-name " + t);
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("Dynamic configs for topic " + t + " are:\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  cleanup.policy=compact,delete sensitive=false "
                       "synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact,delete, "
                       "DEFAULT_CONFIG:log.cleanup.policy=delete}\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  retention.ms=3600000 sensitive=false "
                       "synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=3600000"),
            std::string::npos)
      << r.out;
  configs("--describe --topic " + t);

  r = alter("--topic " + t + " --delete-config retention.ms");
  EXPECT_EQ(r.out, "Completed updating config for topic " + t + ".\n");
  r = configs("--describe --topic " + t);
  EXPECT_EQ(r.out.find("retention.ms"), std::string::npos) << r.out;

  // Deleting a config that is not set, or a name that is no topic config: both changes nothing
  // and are no error (Kafka 4.4 validates what the topic ends up with); setting such a name is
  // the broker's INVALID_CONFIG; then a topic that does not exist.
  r = configs("--alter --topic " + t + " --delete-config retention.ms");
  EXPECT_EQ(r.code, 0) << r.err;
  r = configs("--alter --topic " + t + " --delete-config no.such.config");
  EXPECT_EQ(r.code, 0) << r.err;
  r = configs("--alter --topic " + t + " --add-config no.such.config=1");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("Error while executing config command with args"), std::string::npos);
  r = configs("--describe --topic " + topic("nope"));
  EXPECT_EQ(r.code, 0);
  EXPECT_EQ(r.out,
            "The topic '" + topic("nope") + "' doesn't exist and doesn't have dynamic config.\n");
  r = configs("--alter --topic " + topic("nope") + " --add-config retention.ms=1000");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("Error while executing config command with args"), std::string::npos);
  // A value the broker refuses.
  r = configs("--alter --topic " + t + " --add-config retention.ms=soon");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("Error while executing config command with args"), std::string::npos);
  r = configs("--alter --topic " + t + " --add-config retention.ms");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("Invalid entity config"), std::string::npos) << r.err;
}

TEST_P(configs_cli, broker_and_broker_logger_configs) {
  auto r = alter("--entity-type brokers --entity-name 1 --add-config log.cleaner.threads=2");
  EXPECT_EQ(r.out, "Completed updating config for broker 1.\n");
  r = alter("--entity-type brokers --entity-default --add-config log.retention.ms=86400000");
  EXPECT_EQ(r.out, "Completed updating default config for brokers in the cluster.\n");

  r = configs("--describe --entity-type brokers --entity-name 1");
  EXPECT_NE(r.out.find("Dynamic configs for broker 1 are:\n  log.cleaner.threads=2 "
                       "sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:log.cleaner.threads=2"),
            std::string::npos)
      << r.out;
  r = configs("--describe --entity-type brokers --entity-default");
  EXPECT_NE(r.out.find("Default configs for brokers in the cluster are:\n  "
                       "log.retention.ms=86400000 sensitive=false "
                       "synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=86400000"),
            std::string::npos)
      << r.out;
  r = configs("--describe --entity-type brokers");
  EXPECT_NE(r.out.find("Dynamic configs for broker 1 are:\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Default configs for brokers in the cluster are:\n"), std::string::npos);
  r = configs("--describe --broker 7");
  EXPECT_EQ(r.out, "The broker '7' doesn't exist and doesn't have dynamic config.\n");
  r = configs("--describe --broker x");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "The entity name for brokers must be a valid integer broker id, but it is: x\n");

  r = alter("--broker 1 --delete-config log.cleaner.threads");
  r = alter("--broker-defaults --delete-config log.retention.ms");
  r = configs("--describe --broker 1");
  EXPECT_EQ(r.out, "Dynamic configs for broker 1 are:\n");
  configs("--describe --broker-defaults");

  r = configs("--describe --broker-logger 1");
  EXPECT_NE(r.out.find("Dynamic configs for broker-logger 1 are:\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  root="), std::string::npos) << r.out;
  r = alter("--broker-logger 1 --add-config root=INFO");
  EXPECT_EQ(r.out, "Completed updating config for broker-logger 1.\n");
  r = configs("--alter --broker-logger 1 --add-config no.such.logger=INFO");
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.err, "Invalid broker logger(s): no.such.logger\n");
  r = configs("--describe --entity-type broker-loggers");
  EXPECT_EQ(r.err, "An entity name must be specified with --describe of broker-loggers\n");
}

TEST_P(configs_cli, client_quotas) {
  const std::string c1 = prefix_ + "c1", c2 = prefix_ + "c2", u1 = prefix_ + "u1";
  auto r = alter("--entity-type clients --entity-name " + c1 +
                 " --add-config producer_byte_rate=1024,consumer_byte_rate=2048");
  EXPECT_EQ(r.out, "Completed updating config for client " + c1 + ".\n");
  r = configs("--describe --entity-type clients --entity-name " + c1);
  EXPECT_EQ(r.out, "Quota configs for client-id '" + c1 +
                       "' are consumer_byte_rate=2048.0, producer_byte_rate=1024.0\n");

  r = alter("--entity-type users --entity-name " + u1 + " --entity-type clients --entity-name " +
            c2 + " --add-config request_percentage=50.5");
  EXPECT_EQ(r.out, "Completed updating config for user " + u1 + ".\n");
  r = configs("--describe --entity-type users --entity-name " + u1 +
              " --entity-type clients --entity-name " + c2);
  EXPECT_EQ(r.out, "Quota configs for user-principal '" + u1 + "', client-id '" + c2 +
                       "' are request_percentage=50.5\n");
  r = alter("--user-defaults --add-config producer_byte_rate=10000000");
  EXPECT_EQ(r.out, "Completed updating default config for users in the cluster.\n");
  r = configs("--describe --user-defaults");
  EXPECT_EQ(r.out, "Quota configs for the default user-principal are producer_byte_rate=1.0E7\n");
  r = configs("--describe --entity-type users --entity-name " + u1);
  EXPECT_EQ(r.code, 0) << r.err;

  r = alter("--client " + c1 + " --delete-config consumer_byte_rate");
  r = configs("--describe --client " + c1);
  EXPECT_EQ(r.out, "Quota configs for client-id '" + c1 + "' are producer_byte_rate=1024.0\n");
  r = configs("--describe --entity-type clients");
  EXPECT_NE(r.out.find("Quota configs for client-id '" + c1 + "' are producer_byte_rate=1024.0\n"),
            std::string::npos)
      << r.out;

  // Errors in Kafka's words.
  r = configs("--alter --client " + c1 + " --delete-config consumer_byte_rate");
  EXPECT_EQ(r.err, "Invalid config(s): consumer_byte_rate\n");
  r = configs("--alter --client " + c1 + " --add-config retention.ms=5");
  EXPECT_EQ(r.err,
            "Only quota configs can be added for 'clients' using --bootstrap-server. Unexpected "
            "config names: retention.ms\n");
  r = configs("--alter --client " + c1 + " --add-config producer_byte_rate=fast");
  EXPECT_EQ(r.err, "Cannot parse quota configuration value for producer_byte_rate: fast\n");
  r = configs("--alter --entity-type clients --add-config producer_byte_rate=5");
  EXPECT_EQ(r.err,
            "An entity-name or default entity must be specified with --alter of users, clients, "
            "brokers or ips\n");
  r = configs("--describe --entity-type topics --entity-type brokers");
  EXPECT_EQ(r.err, "Only 'users' and 'clients' entity types may be specified together\n");
  r = configs("--describe --entity-type widgets");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("Invalid entity type widgets"), std::string::npos);
  r = configs("--describe --entity-name x --topic y");
  EXPECT_EQ(r.err,
            "--entity-{type,name,default} should not be used in conjunction with specific entity "
            "flags\n");
}

// SCRAM credentials through AlterUserScramCredentials: tarn configs salts the password as Kafka's
// Admin client does, and both brokers take the same changes and refuse the same ones.
TEST_P(configs_cli, scram_credentials) {
  const std::string u = prefix_ + "scram";
  // One mechanism a request: Kafka refuses a user named twice in one AlterUserScramCredentials
  // (DUPLICATE_RESOURCE), and so does kafka-configs given both at once.
  auto r = alter("--entity-type users --entity-name " + u +
                 " --add-config 'SCRAM-SHA-256=[iterations=8192,password=pw]'");
  EXPECT_EQ(r.out, "Completed updating config for user " + u + ".\n");
  r = alter("--entity-type users --entity-name " + u +
            " --add-config 'SCRAM-SHA-512=[password=pw]'");
  r = tarn_configs("--alter --entity-type users --entity-name " + u +
                   " --add-config 'SCRAM-SHA-256=[password=a],SCRAM-SHA-512=[password=b]'");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("A user credential cannot be altered twice in the same request"),
            std::string::npos)
      << r.err;
  // tarn's tool only (kafka-configs prints the same, but each run is a JVM start): on the
  // Kafka-backed run this checks that the credential tarn configs salted is one Kafka accepts.
  r = tarn_configs("--describe --entity-type users --entity-name " + u);
  EXPECT_TRUE(r.out.starts_with("SCRAM credential configs for user-principal '" + u + "' are "))
      << r.out;
  EXPECT_NE(r.out.find("SCRAM-SHA-256=iterations=8192"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("SCRAM-SHA-512=iterations=4096"), std::string::npos) << r.out;
  r = alter("--entity-type users --entity-name " + u + " --delete-config SCRAM-SHA-512");
  r = tarn_configs("--describe --entity-type users --entity-name " + u);
  EXPECT_EQ(r.out, "SCRAM credential configs for user-principal '" + u +
                       "' are SCRAM-SHA-256=iterations=8192\n");
  r = tarn_configs("--alter --entity-type users --entity-name " + u +
                   " --add-config 'SCRAM-SHA-256=[iterations=100,password=pw]'");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("Too few iterations"), std::string::npos) << r.err;
  r = tarn_configs("--alter --entity-type users --entity-name " + u +
                   " --delete-config SCRAM-SHA-512");
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("Attempt to delete a user credential that does not exist"),
            std::string::npos)
      << r.err;
}

INSTANTIATE_TEST_SUITE_P(brokers, configs_cli,
                         ::testing::Values(broker_kind::tarn, broker_kind::kafka), kind_name);

}  // namespace
}  // namespace tarn::test
