// Issue 24's security and ACL scenarios on tarn and on Apache Kafka 4.4.0 with the same
// configuration (docs/security.md): a PLAINTEXT listener whose User:ANONYMOUS is a super user and
// a SASL_SSL listener with PLAIN users, the StandardAuthorizer, and confluent-kafka 2.x
// (tests/python/security_scenarios.py) as the client:
//   - a prefixed ALLOW WRITE lets alice append to a topic under the prefix, not to one outside;
//   - a literal DENY WRITE beats that ALLOW: TOPIC_AUTHORIZATION_FAILED;
//   - bob, with READ but no WRITE: TOPIC_AUTHORIZATION_FAILED;
//   - a wrong password: the client's authentication error with Kafka's message; a broker
//     certificate from another CA: the client's certificate verification error;
//   - nothing but alice's allowed record was appended.
// Both halves expect the same lines. The Kafka half (`/kafka`) starts Kafka 4.4.0 with a SASL_SSL
// listener (scripts/kafka-ref start --listener) and runs in `make interop` only.
// GCC 12's -Wrestrict misfires on std::string operator+ with literals (GCC bug 105329).
#pragma GCC diagnostic ignored "-Wrestrict"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "kafka_ref_broker.h"
#include "test_util.h"
#include "tls_util.h"

namespace tarn::test {
namespace {

const char* const python2 = "/opt/tarn/py-confluent2/bin/python";

const char* const plain_jaas =
    "org.apache.kafka.common.security.plain.PlainLoginModule required username=\"admin\" "
    "password=\"admin-secret\" user_admin=\"admin-secret\" user_alice=\"alice-secret\" "
    "user_bob=\"bob-secret\";";

const test_certificates& certs() {
  static const test_certificates c(R"(
      ec="-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
      openssl req -x509 $ec -keyout ca.key -out ca.pem -days 2 -subj /CN=tarn-test-ca
      openssl req -x509 $ec -keyout ca2.key -out ca2.pem -days 2 -subj /CN=other-ca
      openssl req $ec -keyout server.key -out server.csr -subj /CN=localhost
      printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' > san.ext
      openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
        -out server.pem -days 2 -extfile san.ext
      cat server.key server.pem > server-keystore.pem
    )");
  return c;
}

// The settings both brokers get (tarn as --override, Kafka as --property).
std::vector<std::string> broker_settings() {
  return {"sasl.enabled.mechanisms=PLAIN",
          std::string("listener.name.sasl_ssl.plain.sasl.jaas.config=") + plain_jaas,
          "ssl.keystore.type=PEM",
          "ssl.keystore.location=" + certs().path("server-keystore.pem"),
          "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
          "super.users=User:ANONYMOUS;User:admin"};
}

class security_scenarios : public testing::TestWithParam<broker_kind> {};

TEST_P(security_scenarios, acls_and_authentication_failures) {
  if (!have_program("openssl")) GTEST_SKIP() << "the openssl CLI is missing";
  ASSERT_TRUE(certs().ok()) << certs().output();
  if (run_command(std::string(python2) + " -c 'import confluent_kafka'").first != 0) {
    GTEST_SKIP() << "no confluent-kafka 2.x in /opt/tarn/py-confluent2 (scripts/install-deps)";
  }
  std::unique_ptr<broker_process> tarn;
  uint16_t plain_port = 0, sasl_port = 0;
  double settle_seconds = 0;
  if (GetParam() == broker_kind::kafka) {
#ifdef TARN_SANITIZED_BUILD
    GTEST_SKIP() << "the Kafka 4.4.0 half runs in the release build only";
#endif
    if (kafka_libs().empty()) GTEST_SKIP() << "java or the Kafka 4.4.0 jars are missing";
    sasl_port = free_port();
    std::string extra = " --listener SASL_SSL://127.0.0.1:" + std::to_string(sasl_port);
    for (const auto& s : broker_settings()) extra += " --property '" + s + "'";
    ASSERT_EQ(kafka_broker::instance().start(extra), "");
    plain_port = kafka_broker::instance().port();
    settle_seconds = 1;  // ACLs reach Kafka's authorizer through its metadata log
  } else {
    std::vector<std::string> args = {"--override",
                                     "listeners=PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0"};
    for (const auto& s : broker_settings()) {
      args.push_back("--override");
      args.push_back(s);
    }
    tarn = std::make_unique<broker_process>(args);
    ASSERT_NE(tarn->port(), 0) << tarn->output();
    plain_port = tarn->port();
    sasl_port = listener_port(*tarn, "SASL_SSL");
    ASSERT_NE(sasl_port, 0) << tarn->output();
  }
  auto [rc, out] = run_command("timeout 150 " + std::string(python2) + " " + TARN_SOURCE_DIR +
                               "/tests/python/security_scenarios.py " + std::to_string(plain_port) +
                               " " + std::to_string(sasl_port) + " " + certs().path("ca.pem") +
                               " " + certs().path("ca2.pem") + " " + test_name_prefix() + " " +
                               std::to_string(settle_seconds));
  EXPECT_EQ(rc, 0) << out;
  for (const char* line : {
           "prefix-allow appended",
           "deny-beats-allow error TOPIC_AUTHORIZATION_FAILED",
           "outside-the-prefix error TOPIC_AUTHORIZATION_FAILED",
           "without-write error TOPIC_AUTHORIZATION_FAILED",
           "wrong-password client-error _AUTHENTICATION invalid-username-or-password",
           "untrusted-certificate client-error _SSL certificate-verify-failed",
           "records orders-eu 1",
           "records orders-secret 0",
           "records other 0",
       }) {
    EXPECT_EQ(lines_with(out, line).size(), 1u) << line << "\n" << out;
  }
}

INSTANTIATE_TEST_SUITE_P(brokers, security_scenarios,
                         testing::Values(broker_kind::tarn, broker_kind::kafka), kind_name);

}  // namespace
}  // namespace tarn::test
