// Listeners, TLS and SASL end to end (docs/security.md), against `tarn serve` with real clients:
//   - a throwaway CA, server and client certificates made with the openssl CLI at the start
//     (EC keys: a few milliseconds each);
//   - several named listeners at once (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL and a custom
//     name mapped in listener.security.protocol.map): Metadata answers each client with the
//     endpoint of the listener it came in on;
//   - SSL with a PKCS12 keystore: kcat produces and consumes with and without a client
//     certificate (ssl.client.auth=requested; the certificate's DN becomes the principal) and
//     reads 5 MB over TLS (Fetch without sendfile); with ssl.client.auth=required a client
//     without a certificate is refused;
//   - a keystore file replaced while the broker runs serves the next connections;
//   - SASL_PLAINTEXT PLAIN (users from listener.name.<l>.plain.sasl.jaas.config): a round trip,
//     and a wrong password failing with Kafka's message;
//   - SCRAM: a user added by AlterUserScramCredentials (confluent-kafka 2.x), then SASL_SSL
//     SCRAM-SHA-512 round trips with a PEM keystore (kcat, confluent-kafka 1.7), surviving a
//     restart; Kafka's kafka-configs adding a SCRAM-SHA-256 user and describing it, then kcat
//     authenticating as it;
//   - hand-built requests for the error branches: an unsupported mechanism, a request before
//     authentication, an oversized frame before authentication, SASL requests on a PLAINTEXT
//     listener, SaslHandshake v0's raw tokens; KIP-368 re-authentication and session expiry;
//   - the authorizer deciding by the SASL principal (a super user produces, another user is
//     refused with the authorizer's log line naming it);
//   - a flood of silent TLS and unauthenticated SASL connections closed after
//     connections.max.idle.ms while a real client keeps working;
//   - misconfigurations refused at start with the key to fix.
// GCC 12's -Wrestrict misfires on std::string operator+ with literals (GCC bug 105329).
#pragma GCC diagnostic ignored "-Wrestrict"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "kafka_ref_broker.h"
#include "test_util.h"
#include "tls_util.h"

namespace tarn::test {
namespace {

// The CA, the server's keystores (PKCS12 with a password, PEM) and a client certificate, made
// once for the whole test program.
const test_certificates& certs() {
  static const test_certificates c(R"(
      ec="-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes"
      openssl req -x509 $ec -keyout ca.key -out ca.pem -days 2 -subj /CN=tarn-test-ca
      openssl req -x509 $ec -keyout ca2.key -out ca2.pem -days 2 -subj /CN=other-ca
      openssl req $ec -keyout server.key -out server.csr -subj /CN=localhost
      printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' > san.ext
      openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
        -out server.pem -days 2 -extfile san.ext
      openssl x509 -req -in server.csr -CA ca2.pem -CAkey ca2.key -CAcreateserial \
        -out server2.pem -days 2 -extfile san.ext
      openssl pkcs12 -export -in server.pem -inkey server.key -certfile ca.pem \
        -out server.p12 -passout pass:server-secret
      cat server.key server.pem > server-keystore.pem
      cat server.key server2.pem > server2-keystore.pem
      openssl req $ec -keyout client.key -out client.csr -subj /O=tarn/OU=eng/CN=client
      openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
        -out client.pem -days 2
    )");
  return c;
}

std::string kcat_options(const std::vector<std::string>& settings) {
  std::string out;
  for (const auto& s : settings) out += " -X '" + s + "'";
  return out;
}

// Produces three records with kcat and reads them back; the combined output of both on failure.
testing::AssertionResult round_trip(uint16_t port, const std::string& topic,
                                    const std::vector<std::string>& settings) {
  const std::string b = " -b 127.0.0.1:" + std::to_string(port) + " -t " + topic;
  auto [prc, pout] = run_command("printf 'one\\ntwo\\nthree\\n' | timeout 30 kcat -P" + b +
                                 kcat_options(settings));
  if (prc != 0) return testing::AssertionFailure() << "produce: " << pout;
  auto [crc, cout] =
      run_command("timeout 30 kcat -C -o beginning -c 3 -e -q" + b + kcat_options(settings));
  if (crc != 0 || cout != "one\ntwo\nthree\n") {
    return testing::AssertionFailure() << "consume (rc " << crc << "): " << cout;
  }
  return testing::AssertionSuccess();
}

class security_test : public testing::Test {
 protected:
  void SetUp() override {
    if (!have_program("kcat")) GTEST_SKIP() << "kcat is missing";
    if (!have_program("openssl")) GTEST_SKIP() << "the openssl CLI is missing";
    ASSERT_TRUE(certs().ok()) << certs().output();
  }
};

TEST_F(security_test, named_listeners_ssl_with_and_without_a_client_certificate) {
  // Debug logging shows each TLS connection's principal.
  ::setenv("SPDLOG_LEVEL", "debug", 1);
  broker_process broker({"--override",
                         "listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,"
                         "INTERNAL://127.0.0.1:0",
                         "--override",
                         "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,"
                         "INTERNAL:PLAINTEXT",
                         "--override", "inter.broker.listener.name=INTERNAL", "--override",
                         "ssl.keystore.type=PKCS12", "--override",
                         "ssl.keystore.location=" + certs().path("server.p12"), "--override",
                         "ssl.keystore.password=server-secret", "--override",
                         "ssl.truststore.type=PEM", "--override",
                         "ssl.truststore.location=" + certs().path("ca.pem"), "--override",
                         "ssl.client.auth=requested"});
  ::unsetenv("SPDLOG_LEVEL");
  ASSERT_NE(broker.port(), 0) << broker.output();
  const uint16_t ssl_port = listener_port(broker, "SSL");
  const uint16_t internal_port = listener_port(broker, "INTERNAL");
  ASSERT_NE(ssl_port, 0) << broker.output();
  ASSERT_NE(internal_port, 0) << broker.output();

  const std::vector<std::string> tls = {"security.protocol=SSL",
                                        "ssl.ca.location=" + certs().path("ca.pem")};
  EXPECT_TRUE(round_trip(ssl_port, "over-tls", tls));
  EXPECT_TRUE(broker.process().wait_for_output("principal User:ANONYMOUS", 5s));
  auto with_cert = tls;
  with_cert.push_back("ssl.certificate.location=" + certs().path("client.pem"));
  with_cert.push_back("ssl.key.location=" + certs().path("client.key"));
  EXPECT_TRUE(round_trip(ssl_port, "over-mtls", with_cert));
  EXPECT_TRUE(broker.process().wait_for_output("principal User:CN=client,OU=eng,O=tarn", 5s))
      << broker.output();
  // The same topic read over plain TCP on the custom-named listener.
  auto [rc, out] = run_command("timeout 30 kcat -C -o beginning -c 3 -e -q -b 127.0.0.1:" +
                               std::to_string(internal_port) + " -t over-tls");
  EXPECT_EQ(out, "one\ntwo\nthree\n");

  // 5 MB written over PLAINTEXT and read back over TLS: Fetch's file regions go through the ssl
  // stream in chunks instead of sendfile.
  auto [brc, bout] =
      run_command(std::string(TARN_BINARY) +
                  " perf produce --bootstrap-server 127.0.0.1:" + std::to_string(broker.port()) +
                  " --topic bulk --num-records 50000 --record-size 100 "
                  "--throughput -1");
  ASSERT_EQ(brc, 0) << bout;
  auto [crc, count] =
      run_command("timeout 60 kcat -C -o beginning -e -q -b 127.0.0.1:" + std::to_string(ssl_port) +
                  " -t bulk" + kcat_options(tls) + " | wc -l");
  EXPECT_EQ(count, "50000\n");

  // Metadata answers each client with its own listener's endpoint.
  auto [lrc, listing] = run_command("timeout 30 kcat -L -b 127.0.0.1:" + std::to_string(ssl_port) +
                                    kcat_options(tls));
  EXPECT_NE(listing.find("127.0.0.1:" + std::to_string(ssl_port)), std::string::npos) << listing;
  auto [prc, plain] =
      run_command("timeout 30 kcat -L -b 127.0.0.1:" + std::to_string(broker.port()));
  EXPECT_NE(plain.find("127.0.0.1:" + std::to_string(broker.port())), std::string::npos) << plain;
  EXPECT_EQ(plain.find("127.0.0.1:" + std::to_string(ssl_port)), std::string::npos) << plain;
}

TEST_F(security_test, ssl_client_auth_required_refuses_a_client_without_a_certificate) {
  broker_process broker({"--override", "listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
                         "--override", "ssl.keystore.type=PEM", "--override",
                         "ssl.keystore.location=" + certs().path("server-keystore.pem"),
                         "--override", "ssl.truststore.type=PEM", "--override",
                         "ssl.truststore.location=" + certs().path("ca.pem"), "--override",
                         "ssl.client.auth=required"});
  ASSERT_NE(broker.port(), 0) << broker.output();
  const uint16_t ssl_port = listener_port(broker, "SSL");
  ASSERT_NE(ssl_port, 0) << broker.output();
  const std::vector<std::string> tls = {"security.protocol=SSL",
                                        "ssl.ca.location=" + certs().path("ca.pem")};
  auto [rc, out] = run_command("timeout 20 kcat -L -m 2 -b 127.0.0.1:" + std::to_string(ssl_port) +
                               kcat_options(tls));
  EXPECT_NE(rc, 0) << out;
  EXPECT_TRUE(broker.process().wait_for_output("SSL handshake failed", 5s)) << broker.output();
  auto with_cert = tls;
  with_cert.push_back("ssl.certificate.location=" + certs().path("client.pem"));
  with_cert.push_back("ssl.key.location=" + certs().path("client.key"));
  EXPECT_TRUE(round_trip(ssl_port, "mtls-only", with_cert));
}

// A keystore file replaced while the broker runs is used by the next connections (at most a
// second later), without a restart; connections already open keep theirs.
TEST_F(security_test, a_changed_keystore_is_reloaded_without_a_restart) {
  temp_dir dir;
  const std::string keystore = (dir.path() / "keystore.pem").string();
  ASSERT_EQ(run_command("cp " + certs().path("server-keystore.pem") + " " + keystore).first, 0);
  broker_process broker({"--override", "listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0",
                         "--override", "ssl.keystore.type=PEM", "--override",
                         "ssl.keystore.location=" + keystore});
  ASSERT_NE(broker.port(), 0) << broker.output();
  const uint16_t ssl_port = listener_port(broker, "SSL");
  auto list_with_ca = [&](const char* ca) {
    return run_command("timeout 20 kcat -L -m 2 -b 127.0.0.1:" + std::to_string(ssl_port) +
                       kcat_options({"security.protocol=SSL",
                                     std::string("ssl.ca.location=") + certs().path(ca)}))
        .first;
  };
  EXPECT_EQ(list_with_ca("ca.pem"), 0);
  // Replaced the way an operator (or cert-manager) does: a new file renamed over the old one.
  ASSERT_EQ(run_command("cp " + certs().path("server2-keystore.pem") + " " + keystore +
                        ".new && mv " + keystore + ".new " + keystore)
                .first,
            0);
  std::this_thread::sleep_for(1100ms);
  EXPECT_EQ(list_with_ca("ca2.pem"), 0) << broker.output();
  EXPECT_NE(list_with_ca("ca.pem"), 0);
  EXPECT_TRUE(broker.process().wait_for_output("TLS context reloaded", 1s));
}

TEST_F(security_test, sasl_plaintext_plain_round_trip_and_a_wrong_password) {
  broker_process broker(
      {"--override", "listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0", "--override",
       "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256", "--override",
       std::string("listener.name.sasl_plaintext.plain.sasl.jaas.config=") + plain_jaas});
  ASSERT_NE(broker.port(), 0) << broker.output();
  const uint16_t sasl_port = listener_port(broker, "SASL_PLAINTEXT");
  ASSERT_NE(sasl_port, 0) << broker.output();
  const std::vector<std::string> alice = {"security.protocol=SASL_PLAINTEXT",
                                          "sasl.mechanism=PLAIN", "sasl.username=alice",
                                          "sasl.password=alice-secret"};
  EXPECT_TRUE(round_trip(sasl_port, "plain-sasl", alice));
  const std::vector<std::string> wrong = {"security.protocol=SASL_PLAINTEXT",
                                          "sasl.mechanism=PLAIN", "sasl.username=alice",
                                          "sasl.password=wrong"};
  auto [rc, out] = run_command("timeout 20 kcat -L -m 2 -b 127.0.0.1:" + std::to_string(sasl_port) +
                               kcat_options(wrong));
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("Authentication failed: Invalid username or password"), std::string::npos)
      << out;
}

TEST_F(security_test, sasl_ssl_scram_sha_512_user_added_by_alter_user_scram_credentials) {
  const std::string python = "/opt/tarn/py-confluent2/bin/python";
  if (run_command(python + " -c 'import confluent_kafka'").first != 0) {
    GTEST_SKIP() << "no confluent-kafka 2.x in /opt/tarn/py-confluent2";
  }
  temp_dir data;
  const std::vector<std::string> args = {
      "--override",
      "listeners=PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
      "--override",
      "listener.name.sasl_ssl.sasl.enabled.mechanisms=SCRAM-SHA-512",
      "--override",
      "listener.name.sasl_ssl.ssl.keystore.type=PEM",
      "--override",
      "listener.name.sasl_ssl.ssl.keystore.location=" + certs().path("server-keystore.pem")};
  const std::string alter =
      "from confluent_kafka.admin import *\n"
      "import sys\n"
      "a = AdminClient({'bootstrap.servers': sys.argv[1]})\n"
      "up = UserScramCredentialUpsertion('alice', "
      "ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), b'alice-secret')\n"
      "bad = UserScramCredentialUpsertion('bob', "
      "ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 100), b'x')\n"
      "for user, f in a.alter_user_scram_credentials([up, bad]).items():\n"
      "  try:\n"
      "    f.result(); print(user, 'ok')\n"
      "  except Exception as e: print(user, e.args[0].str())\n"
      "d = a.describe_user_scram_credentials(['alice'])['alice'].result()\n"
      "for info in d.scram_credential_infos:\n"
      "  print('alice', info.mechanism.name, info.iterations)\n";
  std::vector<std::string> sasl = {
      "security.protocol=SASL_SSL", "ssl.ca.location=" + certs().path("ca.pem"),
      "sasl.mechanism=SCRAM-SHA-512", "sasl.username=alice", "sasl.password=alice-secret"};
  {
    broker_process broker(args, data.path());
    ASSERT_NE(broker.port(), 0) << broker.output();
    const uint16_t sasl_port = listener_port(broker, "SASL_SSL");
    ASSERT_NE(sasl_port, 0) << broker.output();
    auto [rc, out] = run_command("timeout 60 " + python + " -c \"" + alter +
                                 "\" 127.0.0.1:" + std::to_string(broker.port()));
    EXPECT_EQ(rc, 0) << out;
    EXPECT_NE(out.find("alice ok"), std::string::npos) << out;
    EXPECT_NE(out.find("bob Too few iterations"), std::string::npos) << out;
    EXPECT_NE(out.find("alice SCRAM_SHA_512 8192"), std::string::npos) << out;
    EXPECT_TRUE(round_trip(sasl_port, "scram-topic", sasl));
    // confluent-kafka (Debian's 1.7) over SASL_SSL too: a producer and an assigned consumer.
    const std::string py_round_trip =
        "import sys, time\n"
        "from confluent_kafka import Producer, Consumer, TopicPartition\n"
        "conf = {'bootstrap.servers': sys.argv[1], 'security.protocol': 'SASL_SSL',\n"
        "  'ssl.ca.location': sys.argv[2], 'sasl.mechanism': 'SCRAM-SHA-512',\n"
        "  'sasl.username': 'alice', 'sasl.password': 'alice-secret'}\n"
        "p = Producer(conf)\n"
        "for i in range(10): p.produce('py-scram', value=b'v%d' % i)\n"
        "assert p.flush(20) == 0\n"
        "c = Consumer(dict(conf, **{'group.id': 'g'}))\n"
        "c.assign([TopicPartition('py-scram', 0, 0)])\n"
        "got, deadline = [], time.time() + 20\n"
        "while len(got) < 10 and time.time() < deadline:\n"
        "  m = c.poll(0.5)\n"
        "  if m is not None and not m.error(): got.append(m.value())\n"
        "c.close()\n"
        "print('consumed', len(got))\n";
    if (run_command("/usr/bin/python3 -c 'import confluent_kafka'").first == 0) {
      auto [prc, pout] =
          run_command("timeout 60 /usr/bin/python3 -c \"" + py_round_trip +
                      "\" 127.0.0.1:" + std::to_string(sasl_port) + " " + certs().path("ca.pem"));
      EXPECT_EQ(prc, 0) << pout;
      EXPECT_NE(pout.find("consumed 10"), std::string::npos) << pout;
    }
    auto wrong = sasl;
    wrong.back() = "sasl.password=wrong";
    auto [wrc, wout] = run_command(
        "timeout 20 kcat -L -m 2 -b 127.0.0.1:" + std::to_string(sasl_port) + kcat_options(wrong));
    EXPECT_NE(wrc, 0);
    EXPECT_NE(wout.find("Authentication failed during authentication due to invalid credentials "
                        "with SASL mechanism SCRAM-SHA-512"),
              std::string::npos)
        << wout;
    ASSERT_TRUE(broker.stop());
  }
  // The credential lives in the metadata log: it survives a restart.
  broker_process again(args, data.path());
  ASSERT_NE(again.port(), 0) << again.output();
  const uint16_t sasl_port = listener_port(again, "SASL_SSL");
  auto [rc, out] = run_command("timeout 30 kcat -C -o beginning -c 3 -e -q -b 127.0.0.1:" +
                               std::to_string(sasl_port) + " -t scram-topic" + kcat_options(sasl));
  EXPECT_EQ(out, "one\ntwo\nthree\n");
}

// Kafka's own kafka-configs (the 4.4.0 jars) adds a SCRAM-SHA-256 user and describes it; kcat
// then authenticates as that user.
TEST_F(security_test, kafka_configs_adds_a_scram_user_that_kcat_authenticates_as) {
#ifdef TARN_SANITIZED_BUILD
  GTEST_SKIP() << "two JVM starts: the release build runs it (the SCRAM path itself is covered)";
#endif
  if (kafka_libs().empty()) GTEST_SKIP() << "no Kafka 4.4.0 jars";
  broker_process broker({"--override",
                         "listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
                         "--override", "sasl.enabled.mechanisms=SCRAM-SHA-256"});
  ASSERT_NE(broker.port(), 0) << broker.output();
  const uint16_t sasl_port = listener_port(broker, "SASL_PLAINTEXT");
  const std::string tool = "timeout 120 java -cp '" + kafka_libs() +
                           "/*' org.apache.kafka.tools.ConfigCommand --bootstrap-server "
                           "127.0.0.1:" +
                           std::to_string(broker.port()) + " ";
  auto [rc, out] =
      run_command(tool +
                  "--alter --add-config 'SCRAM-SHA-256=[iterations=8192,password=carol-secret]' "
                  "--entity-type users --entity-name carol && " +
                  tool + "--describe --entity-type users --entity-name carol");
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("Completed updating config for user carol."), std::string::npos) << out;
  EXPECT_NE(out.find("SCRAM credential configs for user-principal 'carol' are "
                     "SCRAM-SHA-256=iterations=8192"),
            std::string::npos)
      << out;
  EXPECT_TRUE(round_trip(sasl_port, "carols-topic",
                         {"security.protocol=SASL_PLAINTEXT", "sasl.mechanism=SCRAM-SHA-256",
                          "sasl.username=carol", "sasl.password=carol-secret"}));
}

// SaslHandshake v1 with `mechanism`: the request frame.
std::vector<uint8_t> handshake_frame(const std::string& mechanism, int32_t correlation_id) {
  std::vector<uint8_t> body;
  put_int16(body, static_cast<int16_t>(mechanism.size()));
  body.insert(body.end(), mechanism.begin(), mechanism.end());
  return request_frame(17, 1, correlation_id, body);
}

TEST_F(security_test, hand_built_requests_hit_the_error_branches) {
  broker_process broker({"--override",
                         "listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
                         "--override", "sasl.enabled.mechanisms=SCRAM-SHA-512,PLAIN", "--override",
                         std::string("sasl.jaas.config=") + plain_jaas, "--override",
                         "connection.failed.authentication.delay.ms=300"});
  ASSERT_NE(broker.port(), 0) << broker.output();
  const uint16_t sasl_port = listener_port(broker, "SASL_PLAINTEXT");
  ASSERT_NE(sasl_port, 0);

  {  // An unsupported mechanism: UNSUPPORTED_SASL_MECHANISM (33) and the enabled list, written
     // after connection.failed.authentication.delay.ms, then the connection closes.
    raw_client c(sasl_port);
    ASSERT_TRUE(c.send_request(18, 0, 1));
    ASSERT_TRUE(c.read_frame()) << "ApiVersions is served before authentication";
    const auto sent = std::chrono::steady_clock::now();
    ASSERT_TRUE(c.send_bytes(handshake_frame("GSSAPI", 2)));
    auto answer = c.read_frame();
    ASSERT_TRUE(answer);
    EXPECT_GE(std::chrono::steady_clock::now() - sent, 250ms);
    EXPECT_EQ(get_int32(*answer, 0), 2);
    EXPECT_EQ(get_int16(*answer, 4), 33);
    EXPECT_EQ(get_int32(*answer, 6), 2);  // SCRAM-SHA-512, PLAIN
    EXPECT_EQ(std::string(answer->begin() + 12, answer->begin() + 25), "SCRAM-SHA-512");
    EXPECT_TRUE(c.wait_closed(5s));
  }
  {  // Metadata before authentication: closed at once without an answer (Kafka's
     // IllegalSaslStateException).
    raw_client c(sasl_port);
    ASSERT_TRUE(c.send_request(3, 12, 7, std::vector<uint8_t>{1, 1, 0, 0}, true));
    EXPECT_FALSE(c.read_frame(3s));
    EXPECT_TRUE(c.wait_closed(5s));
  }
  {  // A frame above sasl.server.max.receive.size before authentication: closed after the
     // delay, as Kafka 4.4.0 does, nothing read or allocated for it.
    raw_client c(sasl_port);
    std::vector<uint8_t> head;
    put_int32(head, 600000);
    ASSERT_TRUE(c.send_bytes(head));
    EXPECT_TRUE(c.wait_closed(5s));
    EXPECT_TRUE(broker.process().wait_for_output("larger than 524288", 5s));
  }
  {  // The same frame size after PLAIN authentication is an ordinary request size.
    raw_client c(sasl_port);
    ASSERT_TRUE(c.send_bytes(handshake_frame("PLAIN", 1)));
    auto hs = c.read_frame();
    ASSERT_TRUE(hs);
    EXPECT_EQ(get_int16(*hs, 4), 0);
    const std::string token("\0alice\0alice-secret", 19);
    std::vector<uint8_t> body;
    put_int32(body, static_cast<int32_t>(token.size()));
    body.insert(body.end(), token.begin(), token.end());
    ASSERT_TRUE(c.send_request(36, 1, 2, body));
    auto auth = c.read_frame();
    ASSERT_TRUE(auth);
    EXPECT_EQ(get_int16(*auth, 4), 0);
    // A second SaslAuthenticate after success: ILLEGAL_SASL_STATE (34), connection kept.
    ASSERT_TRUE(c.send_request(36, 1, 3, body));
    auto again = c.read_frame();
    ASSERT_TRUE(again);
    EXPECT_EQ(get_int16(*again, 4), 34);
    ASSERT_TRUE(c.send_request(18, 0, 4));
    EXPECT_TRUE(c.read_frame());
  }
  {  // SaslHandshake v0: the token then goes raw and so does the answer.
    raw_client c(sasl_port);
    std::vector<uint8_t> body;
    put_int16(body, 5);
    body.insert(body.end(), {'P', 'L', 'A', 'I', 'N'});
    ASSERT_TRUE(c.send_request(17, 0, 1, body));
    ASSERT_TRUE(c.read_frame());
    const std::string token("\0admin\0admin-secret", 19);
    std::vector<uint8_t> raw;
    put_int32(raw, static_cast<int32_t>(token.size()));
    raw.insert(raw.end(), token.begin(), token.end());
    ASSERT_TRUE(c.send_bytes(raw));
    auto empty = c.read_frame();
    ASSERT_TRUE(empty);
    EXPECT_TRUE(empty->empty()) << "PLAIN's final server token is empty";
    ASSERT_TRUE(c.send_request(18, 0, 2));
    EXPECT_TRUE(c.read_frame()) << "authenticated: requests are served";
  }
  {  // With connections.max.reauth.ms unset a second SaslHandshake is ILLEGAL_SASL_STATE.
    raw_client c(sasl_port);
    ASSERT_TRUE(c.send_bytes(handshake_frame("PLAIN", 1)));
    ASSERT_TRUE(c.read_frame());
    const std::string token("\0alice\0alice-secret", 19);
    std::vector<uint8_t> body;
    put_int32(body, static_cast<int32_t>(token.size()));
    body.insert(body.end(), token.begin(), token.end());
    ASSERT_TRUE(c.send_request(36, 1, 2, body));
    ASSERT_TRUE(c.read_frame());
    ASSERT_TRUE(c.send_bytes(handshake_frame("PLAIN", 3)));
    auto again = c.read_frame();
    ASSERT_TRUE(again);
    EXPECT_EQ(get_int16(*again, 4), 34);
  }
  {  // On a PLAINTEXT listener SaslHandshake answers ILLEGAL_SASL_STATE with no mechanisms.
    raw_client c(broker.port());
    ASSERT_TRUE(c.send_bytes(handshake_frame("PLAIN", 9)));
    auto answer = c.read_frame();
    ASSERT_TRUE(answer);
    EXPECT_EQ(get_int16(*answer, 4), 34);
    EXPECT_EQ(get_int32(*answer, 6), 0);
  }
}

// KIP-368 with hand-built requests: SessionLifetimeMs is connections.max.reauth.ms, a second
// SaslHandshake re-authenticates the same user, another user is refused, and a request after the
// session expired closes the connection.
TEST_F(security_test, reauthentication_and_session_expiry) {
  broker_process broker(
      {"--override", "listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0", "--override",
       "sasl.enabled.mechanisms=PLAIN", "--override", std::string("sasl.jaas.config=") + plain_jaas,
       "--override", "listener.name.sasl_plaintext.connections.max.reauth.ms=1500", "--override",
       "connection.failed.authentication.delay.ms=0"});
  ASSERT_NE(broker.port(), 0) << broker.output();
  const uint16_t sasl_port = listener_port(broker, "SASL_PLAINTEXT");
  auto authenticate = [](raw_client& c, const std::string& user, const std::string& password,
                         int32_t id) -> std::optional<std::vector<uint8_t>> {
    if (!c.send_bytes(handshake_frame("PLAIN", id))) return std::nullopt;
    auto hs = c.read_frame();
    if (!hs || get_int16(*hs, 4) != 0) return std::nullopt;
    const std::string token = std::string(1, '\0') + user + '\0' + password;
    std::vector<uint8_t> body;
    put_int32(body, static_cast<int32_t>(token.size()));
    body.insert(body.end(), token.begin(), token.end());
    if (!c.send_request(36, 1, id + 1, body)) return std::nullopt;
    return c.read_frame();
  };
  raw_client c(sasl_port);
  auto first = authenticate(c, "alice", "alice-secret", 1);
  ASSERT_TRUE(first);
  EXPECT_EQ(get_int16(*first, 4), 0);
  // v1: correlation id, error code, null message (-1), empty bytes, SessionLifetimeMs.
  ASSERT_EQ(first->size(), 4u + 2 + 2 + 4 + 8);
  EXPECT_EQ(get_int32(*first, 16), 1500);
  auto again = authenticate(c, "alice", "alice-secret", 3);
  ASSERT_TRUE(again);
  EXPECT_EQ(get_int16(*again, 4), 0) << "re-authenticated";
  ASSERT_TRUE(c.send_request(18, 0, 5));
  EXPECT_TRUE(c.read_frame());
  auto other = authenticate(c, "admin", "admin-secret", 6);
  ASSERT_TRUE(other);
  EXPECT_EQ(get_int16(*other, 4), 58);
  EXPECT_TRUE(c.wait_closed(5s));

  raw_client d(sasl_port);
  ASSERT_TRUE(authenticate(d, "alice", "alice-secret", 1));
  std::this_thread::sleep_for(1600ms);
  ASSERT_TRUE(d.send_request(18, 0, 3));
  EXPECT_FALSE(d.read_frame(2s)) << "a request after the session expired is not answered";
  EXPECT_TRUE(d.wait_closed(5s));
}

// No handshake or authentication outlives connections.max.idle.ms, as Kafka's selector closes any
// idle channel whatever its state: a flood of connections to an SSL listener that send nothing
// (or a few bytes of a ClientHello) and connections to a SASL listener that never authenticate
// are closed after it, while a real client keeps producing and consuming over TLS meanwhile. The
// idle clock is not reset by handshake bytes, so a handshake trickled a byte at a time is cut too.
TEST_F(security_test, handshakes_and_authentications_end_within_connections_max_idle_ms) {
  constexpr auto idle = 1500ms;
  broker_process broker({"--override",
                         "listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,"
                         "SASL_PLAINTEXT://127.0.0.1:0",
                         "--override", "ssl.keystore.type=PEM", "--override",
                         "ssl.keystore.location=" + certs().path("server-keystore.pem"),
                         "--override", "sasl.enabled.mechanisms=PLAIN", "--override",
                         std::string("sasl.jaas.config=") + plain_jaas, "--override",
                         "connections.max.idle.ms=" + std::to_string(idle.count())});
  ASSERT_NE(broker.port(), 0) << broker.output();
  const uint16_t ssl_port = listener_port(broker, "SSL");
  const uint16_t sasl_port = listener_port(broker, "SASL_PLAINTEXT");
  ASSERT_NE(ssl_port, 0) << broker.output();
  const auto opened = std::chrono::steady_clock::now();
  std::vector<std::unique_ptr<raw_client>> silent;
  for (int i = 0; i < 300; ++i) {
    silent.push_back(std::make_unique<raw_client>(i % 3 == 2 ? sasl_port : ssl_port));
    ASSERT_TRUE(silent.back()->connected()) << i;
  }
  // A TLS record header and the start of a ClientHello, then nothing more.
  const std::vector<uint8_t> partial_hello = {0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00};
  ASSERT_TRUE(silent[0]->send_bytes(partial_hello));
  // A SASL connection that says ApiVersions and SaslHandshake, then never authenticates.
  ASSERT_TRUE(silent[2]->send_bytes(handshake_frame("PLAIN", 1)));
  ASSERT_TRUE(silent[2]->read_frame());

  EXPECT_FALSE(silent[1]->wait_closed(500ms)) << "not closed before connections.max.idle.ms";
  // A real client over TLS is served meanwhile.
  EXPECT_TRUE(round_trip(ssl_port, "beside-a-flood",
                         {"security.protocol=SSL", "ssl.ca.location=" + certs().path("ca.pem")}));
  size_t closed = 0;
  for (auto& c : silent) closed += c->wait_closed(idle + 5s) ? 1 : 0;
  EXPECT_EQ(closed, silent.size());
  EXPECT_LT(std::chrono::steady_clock::now() - opened, idle + 6s);
  EXPECT_TRUE(broker.process().wait_for_output("(connections.max.idle.ms)", 1s));
}

// The seam between the two halves of issue 24: the authorizer decides by the SASL principal.
// admin is a super user; alice has no ACL, so her Produce is refused and the authorizer's log line
// names User:alice.
TEST_F(security_test, the_authorizer_sees_the_sasl_principal) {
  broker_process broker(
      {"--override", "listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0", "--override",
       "sasl.enabled.mechanisms=PLAIN", "--override", std::string("sasl.jaas.config=") + plain_jaas,
       "--override",
       "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
       "--override", "super.users=User:admin"});
  ASSERT_NE(broker.port(), 0) << broker.output();
  const uint16_t sasl_port = listener_port(broker, "SASL_PLAINTEXT");
  auto as = [](const char* user, const char* password) {
    return std::vector<std::string>{"security.protocol=SASL_PLAINTEXT", "sasl.mechanism=PLAIN",
                                    std::string("sasl.username=") + user,
                                    std::string("sasl.password=") + password};
  };
  EXPECT_TRUE(round_trip(sasl_port, "admins-topic", as("admin", "admin-secret")));
  auto [rc, out] =
      run_command("printf 'x\\n' | timeout 20 kcat -P -b 127.0.0.1:" + std::to_string(sasl_port) +
                  " -t admins-topic" + kcat_options(as("alice", "alice-secret")));
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("Topic authorization failed"), std::string::npos) << out;
  EXPECT_TRUE(broker.process().wait_for_output("Principal = User:alice is Denied", 5s))
      << broker.output();
}

TEST_F(security_test, misconfigurations_stop_the_broker_with_the_key_to_fix) {
  struct tc {
    std::vector<std::string> args;
    const char* expected;
  };
  for (const auto& [args, expected] : std::vector<tc>{
           {{"listeners=PLAINTEXT://127.0.0.1:0,CLIENT://127.0.0.1:0"},
            "No security protocol defined for listener CLIENT"},
           {{"listeners=SSL://127.0.0.1:0", "inter.broker.listener.name=SSL"},
            "an SSL listener needs a keystore"},
           {{"listeners=PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
             "ssl.keystore.location=" + certs().path("server.p12"), "ssl.keystore.type=PKCS12",
             "ssl.keystore.password=wrong"},
            "wrong password?"},
           {{"listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0"},
            "SASL mechanism GSSAPI is not served by tarn"},
           {{"listeners=SSL://127.0.0.1:0"},
            "inter.broker.listener.name must be a listener name defined in advertised.listeners"},
       }) {
    temp_dir data;
    std::vector<std::string> argv = {"serve", "--override", "log.dirs=" + data.path().string()};
    for (const auto& a : args) {
      argv.push_back("--override");
      argv.push_back(a);
    }
    auto p = run_tarn(argv);
    auto status = p->wait_exit(20s);
    ASSERT_TRUE(status);
    EXPECT_NE(p->output().find(expected), std::string::npos) << p->output();
  }
}

}  // namespace
}  // namespace tarn::test
