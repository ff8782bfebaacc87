// tarn's own tools over TLS and SASL (docs/security.md, "tarn's tools"): against `tarn serve`
// with an SSL listener requiring a client certificate and a SASL_SSL listener with
// SCRAM-SHA-512 (the user added by `tarn configs`, AlterUserScramCredentials):
//   - `tarn topics --create` and `--list` over SSL with a client certificate (-X settings);
//   - `tarn produce` + `tarn consume` round trip over SASL_SSL SCRAM-SHA-512 (--command-config),
//     the consumer also in a group (`tarn groups --list` over SASL_SSL sees it);
//   - a wrong password: `tarn topics`, `tarn produce` and `tarn consume` end quickly with the
//     broker's SASL message and a non-zero exit;
//   - a broker certificate not signed by ssl.ca.location, and no client certificate where one is
//     required: a clear handshake error, a non-zero exit, no hang.
// The certificates come from the openssl CLI (EC keys, milliseconds each); no JVM, no kcat.
// GCC 12's -Wrestrict misfires on std::string operator+ with literals (GCC bug 105329).
#pragma GCC diagnostic ignored "-Wrestrict"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <string>
#include <vector>

#include "test_util.h"
#include "tls_util.h"

namespace tarn::test {
namespace {

// A CA, a second CA that signed nothing the broker serves, the broker's PEM keystore (CN and SAN
// localhost/127.0.0.1), a client certificate signed by the first CA.
const test_certificates& certs() {
  static const test_certificates c(R"(
      ec="-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
      openssl req -x509 $ec -keyout ca.key -out ca.pem -days 2 -subj /CN=tarn-test-ca
      openssl req -x509 $ec -keyout other-ca.key -out other-ca.pem -days 2 -subj /CN=other-ca
      openssl req $ec -keyout server.key -out server.csr -subj /CN=localhost
      printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' > san.ext
      openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
        -out server.pem -days 2 -extfile san.ext
      cat server.key server.pem > server-keystore.pem
      openssl req $ec -keyout client.key -out client.csr -subj /O=tarn/CN=tool-client
      openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
        -out client.pem -days 2
    )");
  return c;
}

std::string x_options(const std::vector<std::string>& settings) {
  std::string out;
  for (const auto& s : settings) out += " -X '" + s + "'";
  return out;
}

// Runs `tarn <args>` (stderr with stdout); the exit code, the output and the seconds it took.
struct outcome {
  int rc;
  std::string out;
  double seconds;
};
outcome tarn(const std::string& args, const std::string& stdin_text = {}) {
  const auto start = std::chrono::steady_clock::now();
  std::string command = "timeout 60 " + std::string(TARN_BINARY) + " " + args + " 2>&1";
  if (!stdin_text.empty()) command = "printf '" + stdin_text + "' | " + command;
  auto [rc, out] = run_command(command);
  return {rc, out, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count()};
}

class tools_security_test : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!have_program("openssl")) return;
    if (!certs().ok()) return;
    broker_ = new broker_process(
        {"--override", "listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
         "--override", "ssl.keystore.type=PEM", "--override",
         "ssl.keystore.location=" + certs().path("server-keystore.pem"), "--override",
         "ssl.truststore.type=PEM", "--override",
         "ssl.truststore.location=" + certs().path("ca.pem"), "--override",
         "listener.name.ssl.ssl.client.auth=required", "--override",
         "listener.name.sasl_ssl.sasl.enabled.mechanisms=SCRAM-SHA-512"});
  }
  static void TearDownTestSuite() {
    delete broker_;
    broker_ = nullptr;
  }
  void SetUp() override {
    if (!have_program("openssl")) GTEST_SKIP() << "the openssl CLI is missing";
    ASSERT_TRUE(certs().ok()) << certs().output();
    ASSERT_NE(broker_->port(), 0) << broker_->output();
    ssl_port_ = listener_port(*broker_, "SSL");
    sasl_port_ = listener_port(*broker_, "SASL_SSL");
    ASSERT_NE(ssl_port_, 0) << broker_->output();
    ASSERT_NE(sasl_port_, 0) << broker_->output();
    if (!user_added_) {
      // The broker's own path for SCRAM users: AlterUserScramCredentials, from `tarn configs`.
      auto added = tarn("configs --bootstrap-server 127.0.0.1:" + std::to_string(broker_->port()) +
                        " --alter --add-config 'SCRAM-SHA-512=[iterations=8192,password=alice-"
                        "secret]' --entity-type users --entity-name alice");
      ASSERT_EQ(added.rc, 0) << added.out;
      user_added_ = true;
    }
  }

  std::string ssl_bootstrap() const { return "127.0.0.1:" + std::to_string(ssl_port_); }
  std::string sasl_bootstrap() const { return "127.0.0.1:" + std::to_string(sasl_port_); }
  // SSL with the client certificate (-X settings).
  static std::vector<std::string> mtls() {
    return {"security.protocol=ssl", "ssl.ca.location=" + certs().path("ca.pem"),
            "ssl.certificate.location=" + certs().path("client.pem"),
            "ssl.key.location=" + certs().path("client.key")};
  }
  static std::vector<std::string> scram(const std::string& password) {
    return {"security.protocol=SASL_SSL", "ssl.ca.location=" + certs().path("ca.pem"),
            "sasl.mechanism=SCRAM-SHA-512", "sasl.username=alice", "sasl.password=" + password};
  }

  static inline broker_process* broker_ = nullptr;
  static inline bool user_added_ = false;
  uint16_t ssl_port_ = 0;
  uint16_t sasl_port_ = 0;
};

TEST_F(tools_security_test, topics_over_ssl_with_a_client_certificate) {
  auto created = tarn("topics --bootstrap-server " + ssl_bootstrap() +
                      " --create --topic mtls-topic --partitions 2" + x_options(mtls()));
  EXPECT_EQ(created.rc, 0) << created.out;
  EXPECT_NE(created.out.find("Created topic mtls-topic."), std::string::npos) << created.out;
  auto listed =
      tarn("topics --bootstrap-server " + ssl_bootstrap() + " --list" + x_options(mtls()));
  EXPECT_EQ(listed.rc, 0) << listed.out;
  EXPECT_NE(listed.out.find("mtls-topic\n"), std::string::npos) << listed.out;

  // The listener requires a certificate: without one the broker refuses the handshake.
  auto no_cert =
      tarn("topics --bootstrap-server " + ssl_bootstrap() +
           " --list -X security.protocol=SSL -X ssl.ca.location=" + certs().path("ca.pem"));
  EXPECT_NE(no_cert.rc, 0) << no_cert.out;
  EXPECT_NE(no_cert.out.find("SSL"), std::string::npos) << no_cert.out;
  EXPECT_LT(no_cert.seconds, 15) << no_cert.out;
}

TEST_F(tools_security_test, produce_and_consume_over_sasl_ssl_scram_sha_512) {
  const std::string config = certs().path("scram.properties");
  {
    std::ofstream out(config);
    out << "# as a Java client's file\nsecurity.protocol=SASL_SSL\nssl.ca.location="
        << certs().path("ca.pem")
        << "\nsasl.mechanism=SCRAM-SHA-512\nsasl.jaas.config=org.apache.kafka.common.security."
           "scram.ScramLoginModule required username=\"alice\" password=\"alice-secret\";\n";
  }
  auto produced = tarn("produce --bootstrap-server " + sasl_bootstrap() +
                           " --topic scram-tools --command-config " + config,
                       "one\\ntwo\\nthree\\n");
  ASSERT_EQ(produced.rc, 0) << produced.out;
  auto consumed = tarn("consume --bootstrap-server " + sasl_bootstrap() +
                       " --topic scram-tools --from-beginning --max-messages 3 --timeout-ms 10000" +
                       x_options(scram("alice-secret")));
  EXPECT_EQ(consumed.rc, 0) << consumed.out;
  EXPECT_NE(consumed.out.find("one\ntwo\nthree\n"), std::string::npos) << consumed.out;

  // The group consumer (blocking_client to the coordinator) and `tarn groups` too.
  auto in_group = tarn("consume --bootstrap-server " + sasl_bootstrap() +
                       " --topic scram-tools --group scram-group --from-beginning --max-messages 3 "
                       "--timeout-ms 10000 --command-config " +
                       config);
  EXPECT_EQ(in_group.rc, 0) << in_group.out;
  EXPECT_NE(in_group.out.find("one\ntwo\nthree\n"), std::string::npos) << in_group.out;
  auto groups =
      tarn("groups --bootstrap-server " + sasl_bootstrap() + " --list --command-config " + config);
  EXPECT_EQ(groups.rc, 0) << groups.out;
  EXPECT_NE(groups.out.find("scram-group"), std::string::npos) << groups.out;
}

TEST_F(tools_security_test, a_wrong_password_fails_quickly_with_the_brokers_message) {
  const std::string wrong = x_options(scram("not-the-password"));
  auto listed = tarn("topics --bootstrap-server " + sasl_bootstrap() + " --list" + wrong);
  EXPECT_NE(listed.rc, 0) << listed.out;
  EXPECT_NE(listed.out.find("SASL SCRAM-SHA-512 authentication"), std::string::npos) << listed.out;
  EXPECT_LT(listed.seconds, 15) << listed.out;

  auto produced =
      tarn("produce --bootstrap-server " + sasl_bootstrap() + " --topic wrong-pw" + wrong, "x\\n");
  EXPECT_NE(produced.rc, 0) << produced.out;
  EXPECT_NE(produced.out.find("SASL SCRAM-SHA-512 authentication"), std::string::npos)
      << produced.out;
  EXPECT_LT(produced.seconds, 15) << produced.out;

  auto consumed = tarn("consume --bootstrap-server " + sasl_bootstrap() +
                       " --topic scram-tools --from-beginning --max-messages 1" + wrong);
  EXPECT_NE(consumed.rc, 0) << consumed.out;
  EXPECT_NE(consumed.out.find("SASL SCRAM-SHA-512 authentication"), std::string::npos)
      << consumed.out;
  EXPECT_LT(consumed.seconds, 15) << consumed.out;
}

TEST_F(tools_security_test, a_broker_certificate_from_another_ca_fails_the_handshake) {
  auto settings = mtls();
  settings[1] = "ssl.ca.location=" + certs().path("other-ca.pem");
  auto listed =
      tarn("topics --bootstrap-server " + ssl_bootstrap() + " --list" + x_options(settings));
  EXPECT_NE(listed.rc, 0) << listed.out;
  EXPECT_NE(listed.out.find("certificate verify failed"), std::string::npos) << listed.out;
  EXPECT_LT(listed.seconds, 15) << listed.out;

  auto produced = tarn(
      "produce --bootstrap-server " + ssl_bootstrap() + " --topic untrusted" + x_options(settings),
      "x\\n");
  EXPECT_NE(produced.rc, 0) << produced.out;
  EXPECT_NE(produced.out.find("certificate verify failed"), std::string::npos) << produced.out;
  EXPECT_LT(produced.seconds, 15) << produced.out;

  // Unknown values are refused before any connection, as the other settings are.
  auto bad =
      tarn("topics --bootstrap-server " + ssl_bootstrap() + " --list -X security.protocol=TLS");
  EXPECT_NE(bad.rc, 0) << bad.out;
  EXPECT_NE(bad.out.find("security.protocol"), std::string::npos) << bad.out;
}

}  // namespace
}  // namespace tarn::test
