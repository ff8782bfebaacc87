// Issue 24's client matrix: the Java 4.4.0 clients and kafka-python over every secured listener
// kind of `tarn serve` (docs/security.md, "What is tested with which client"), and idle
// unauthenticated connections flooding secured listeners:
//   - Java (tests/java/SecurityClients.java, one JVM for every case): KafkaProducer and
//     KafkaConsumer round trips over SSL, mTLS (ssl.client.auth=required, PEM keystore; the
//     certificate's DN is the principal), SASL_SSL with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512
//     (the user added by `tarn configs`) and OAUTHBEARER with an RS256 JWT read from a file by the
//     Java client's OAuthBearerLoginCallbackHandler, validated by tarn against a JWKS file; a wrong
//     password, an expired token, a broker certificate from another CA and a client certificate
//     from another CA end in SaslAuthenticationException / SslAuthenticationException, and no topic
//     of theirs is created;
//   - kafka-python 2.0.2 (tests/python/security_kafka_python.py): round trips over SSL, mTLS,
//     SASL_SSL PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 and OAUTHBEARER (a signed JWT); wrong
//     passwords, an expired token and an untrusted broker refused;
//   - thousands of idle connections to an SSL and a SASL_SSL listener that never finish the TLS
//     handshake or never authenticate, from four source addresses, under max.connections and
//     max.connections.per.ip: the excess per address is closed at once, connections beyond
//     max.connections wait in the backlog, every connection is closed after
//     connections.max.idle.ms, a SASL_SSL producer keeps producing throughout, and the broker's
//     memory stays bounded.
// GCC 12's -Wrestrict misfires on std::string operator+ with literals (GCC bug 105329).
#pragma GCC diagnostic ignored "-Wrestrict"

#include <gtest/gtest.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/resource.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "kafka_ref_broker.h"
#include "test_util.h"
#include "tls_util.h"

namespace tarn::test {
namespace {

const char* const python = "/usr/bin/python3";

// The CA, another CA, the broker's PEM keystore (SAN localhost and 127.0.0.1), a client
// certificate from the CA and one from the other CA (PEM keystores: key then certificate, as the
// Java client's ssl.keystore.type=PEM reads them); an RSA key's JWKS (kid k1) and two RS256 JWTs
// for User:alice signed by it, one valid for an hour and one expired an hour ago.
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
      openssl req $ec -keyout client.key -out client.csr -subj /O=tarn/OU=eng/CN=client
      openssl x509 -req -in client.csr -CA ca.pem -CAkey ca.key -CAcreateserial \
        -out client.pem -days 2
      cat client.key client.pem > client-keystore.pem
      openssl req $ec -keyout rogue.key -out rogue.csr -subj /CN=rogue
      openssl x509 -req -in rogue.csr -CA ca2.pem -CAkey ca2.key -CAcreateserial \
        -out rogue.pem -days 2
      cat rogue.key rogue.pem > rogue-keystore.pem
      /usr/bin/python3 - <<'PY'
import json, time, jwt
from cryptography.hazmat.primitives.asymmetric import rsa
from jwt.algorithms import RSAAlgorithm
k = rsa.generate_private_key(public_exponent=65537, key_size=2048)
jwk = json.loads(RSAAlgorithm.to_jwk(k.public_key()))
jwk.update(kid='k1', use='sig', alg='RS256')
json.dump({'keys': [jwk]}, open('jwks.json', 'w'))
now = int(time.time())
for name, exp in [('token.jwt', now + 3600), ('expired.jwt', now - 3600)]:
    claims = {'sub': 'alice', 'iat': now - 7200, 'iss': 'https://idp.test', 'aud': 'tarn',
              'exp': exp}
    open(name, 'w').write(jwt.encode(claims, k, algorithm='RS256', headers={'kid': 'k1'}))
PY
    )");
  return c;
}

// One broker for the client matrix: PLAINTEXT (setup and checks), SSL, MTLS (SSL requiring a
// client certificate) and SASL_SSL with PLAIN, both SCRAMs and OAUTHBEARER (JWKS from a file).
class security_clients : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    if (!have_program("openssl") || !certs().ok()) return;
    ::setenv("SPDLOG_LEVEL", "debug", 1);  // the TLS principal of each connection
    broker_ = new broker_process(
        {"--override",
         "listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,MTLS://127.0.0.1:0,"
         "SASL_SSL://127.0.0.1:0",
         "--override",
         "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,MTLS:SSL,SASL_SSL:SASL_SSL",
         "--override",
         "ssl.keystore.type=PEM",
         "--override",
         "ssl.keystore.location=" + certs().path("server-keystore.pem"),
         "--override",
         "ssl.truststore.type=PEM",
         "--override",
         "ssl.truststore.location=" + certs().path("ca.pem"),
         "--override",
         "listener.name.mtls.ssl.client.auth=required",
         "--override",
         "sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
         "--override",
         std::string("listener.name.sasl_ssl.plain.sasl.jaas.config=") + plain_jaas,
         "--override",
         "listener.name.sasl_ssl.oauthbearer.sasl.server.callback.handler.class="
         "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
         "--override",
         "sasl.oauthbearer.jwks.endpoint.url=file:" + certs().path("jwks.json"),
         "--override",
         "sasl.oauthbearer.expected.audience=tarn",
         "--override",
         "sasl.oauthbearer.expected.issuer=https://idp.test",
         "--override",
         "connection.failed.authentication.delay.ms=100"});
    ::unsetenv("SPDLOG_LEVEL");
    if (broker_->port() == 0) return;
    ssl_port_ = listener_port(*broker_, "SSL");
    mtls_port_ = listener_port(*broker_, "MTLS");
    sasl_port_ = listener_port(*broker_, "SASL_SSL");
    // alice's SCRAM credentials, added by tarn's own tool (AlterUserScramCredentials), one
    // request per mechanism: Kafka's controller refuses two changes of a user in one request.
    for (const char* mechanism : {"SCRAM-SHA-256", "SCRAM-SHA-512"}) {
      scram_output_ +=
          run_command("timeout 60 " + std::string(TARN_BINARY) +
                      " configs --bootstrap-server 127.0.0.1:" + std::to_string(broker_->port()) +
                      " --alter --add-config '" + mechanism +
                      "=[password=alice-scram]' --entity-type users --entity-name alice")
              .second;
    }
  }
  static void TearDownTestSuite() {
    delete broker_;
    broker_ = nullptr;
  }
  void SetUp() override {
    if (!have_program("openssl")) GTEST_SKIP() << "the openssl CLI is missing";
    ASSERT_TRUE(certs().ok()) << certs().output();
    ASSERT_NE(broker_, nullptr);
    ASSERT_NE(broker_->port(), 0) << broker_->output();
    ASSERT_NE(ssl_port_, 0) << broker_->output();
    ASSERT_NE(mtls_port_, 0) << broker_->output();
    ASSERT_NE(sasl_port_, 0) << broker_->output();
    ASSERT_EQ(lines_with(scram_output_, "Completed updating config for user alice.").size(), 2u)
        << scram_output_;
  }

  // The topics the broker has, as kcat -L lists them over PLAINTEXT.
  static std::string topic_listing() {
    return run_command("timeout 20 kcat -L -b 127.0.0.1:" + std::to_string(broker_->port())).second;
  }

  static broker_process* broker_;
  static uint16_t ssl_port_, mtls_port_, sasl_port_;
  static std::string scram_output_;
};
broker_process* security_clients::broker_ = nullptr;
uint16_t security_clients::ssl_port_ = 0;
uint16_t security_clients::mtls_port_ = 0;
uint16_t security_clients::sasl_port_ = 0;
std::string security_clients::scram_output_;

// The SecurityClients.java cases file: one block per case.
std::string java_case(const std::string& head, uint16_t port,
                      const std::vector<std::string>& properties) {
  std::string block = head + "\nbootstrap.servers=127.0.0.1:" + std::to_string(port) + "\n";
  for (const auto& p : properties) block += p + "\n";
  return block + "\n";
}

TEST_F(security_clients, java_clients_over_ssl_mtls_and_sasl_ssl) {
#ifdef TARN_SANITIZED_BUILD
  // A JVM walking eleven client configurations; the sanitized broker's TLS and SASL paths are
  // exercised by the kafka-python test below, security_test and oauthbearer_test.
  GTEST_SKIP() << "a JVM run: the release build runs it";
#endif
  if (kafka_libs().empty()) GTEST_SKIP() << "java or the Kafka 4.4.0 jars are missing";
  const std::vector<std::string> trust = {"ssl.truststore.type=PEM",
                                          "ssl.truststore.location=" + certs().path("ca.pem")};
  auto with = [&](std::vector<std::string> more, bool trusted = true) {
    std::vector<std::string> all = trusted ? trust : std::vector<std::string>{};
    all.insert(all.end(), more.begin(), more.end());
    return all;
  };
  auto sasl = [&](const std::string& mechanism, const std::string& jaas) {
    return with(
        {"security.protocol=SASL_SSL", "sasl.mechanism=" + mechanism, "sasl.jaas.config=" + jaas});
  };
  auto scram_jaas = [](const std::string& user, const std::string& password) {
    return "org.apache.kafka.common.security.scram.ScramLoginModule required username=\"" + user +
           "\" password=\"" + password + "\";";
  };
  // The Java client's own OAuth login: the JWT read from a file (FileJwtRetriever, picked by the
  // file: URL), checked by the client (ClientJwtValidator: claims present, not the expiry).
  auto oauth = [&](const char* token_file) {
    auto p = sasl("OAUTHBEARER",
                  "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;");
    p.push_back(
        "sasl.login.callback.handler.class="
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginCallbackHandler");
    p.push_back("sasl.oauthbearer.token.endpoint.url=file:" + certs().path(token_file));
    return p;
  };
  const std::string cases =
      java_case("java-ssl round-trip", ssl_port_, with({"security.protocol=SSL"})) +
      java_case("java-mtls round-trip", mtls_port_,
                with({"security.protocol=SSL", "ssl.keystore.type=PEM",
                      "ssl.keystore.location=" + certs().path("client-keystore.pem")})) +
      java_case("java-plain round-trip", sasl_port_,
                sasl("PLAIN",
                     "org.apache.kafka.common.security.plain.PlainLoginModule required "
                     "username=\"alice\" password=\"alice-secret\";")) +
      java_case("java-scram-sha-256 round-trip", sasl_port_,
                sasl("SCRAM-SHA-256", scram_jaas("alice", "alice-scram"))) +
      java_case("java-scram-sha-512 round-trip", sasl_port_,
                sasl("SCRAM-SHA-512", scram_jaas("alice", "alice-scram"))) +
      java_case("java-oauthbearer round-trip", sasl_port_, oauth("token.jwt")) +
      java_case("java-wrong-password refused", sasl_port_,
                sasl("SCRAM-SHA-512", scram_jaas("alice", "wrong"))) +
      java_case("java-expired-token refused", sasl_port_, oauth("expired.jwt")) +
      java_case("java-untrusted-broker refused", ssl_port_,
                {"security.protocol=SSL", "ssl.truststore.type=PEM",
                 "ssl.truststore.location=" + certs().path("ca2.pem")}) +
      java_case("java-untrusted-client refused", mtls_port_,
                with({"security.protocol=SSL", "ssl.keystore.type=PEM",
                      "ssl.keystore.location=" + certs().path("rogue-keystore.pem")}));
  temp_dir dir;
  const auto cases_file = dir.write_file("cases.txt", cases);
  // Kafka 4.4 reads an OAuth token file only when it is allowed by this system property.
  auto [rc, out] =
      run_command("timeout 150 java -Dorg.apache.kafka.sasl.oauthbearer.allowed.urls=file:" +
                  certs().path("token.jwt") + ",file:" + certs().path("expired.jwt") + " -cp '" +
                  kafka_libs() + "/*' " + TARN_SOURCE_DIR + "/tests/java/SecurityClients.java " +
                  cases_file.string() + " 2>&1");
  EXPECT_EQ(rc, 0) << out;
  const std::string three = " ok produced=3 consumed=3 [one, two, three]";
  for (const char* expected : {"java-ssl", "java-mtls", "java-plain", "java-scram-sha-256",
                               "java-scram-sha-512", "java-oauthbearer"}) {
    const std::string line = expected + three;
    EXPECT_EQ(lines_with(out, line).size(), 1u) << line << "\n" << out;
  }
  for (const auto& [name, exception] : std::vector<std::pair<std::string, std::string>>{
           {"java-wrong-password", "SaslAuthenticationException"},
           {"java-expired-token", "SaslAuthenticationException"},
           {"java-untrusted-broker", "SslAuthenticationException"},
           {"java-untrusted-client", "SslAuthenticationException"}}) {
    EXPECT_EQ(lines_with(out, name + " refused " + exception).size(), 1u) << name << "\n" << out;
  }
  // The client certificate's DN was the mTLS connections' principal.
  EXPECT_TRUE(broker_->process().wait_for_output("principal User:CN=client,OU=eng,O=tarn", 5s));
  // Nothing was served to the refused clients: the topics they wanted were never created.
  const std::string listing = topic_listing();
  EXPECT_NE(listing.find("\"java-oauthbearer\""), std::string::npos) << listing;
  for (const char* refused : {"java-wrong-password", "java-expired-token", "java-untrusted-broker",
                              "java-untrusted-client"}) {
    EXPECT_EQ(listing.find(std::string("\"") + refused + "\""), std::string::npos)
        << refused << "\n"
        << listing;
  }
}

// confluent-kafka 2.x (librdkafka) over the SASL_SSL listener with the two mechanisms its other
// tests cover over SASL_PLAINTEXT only: SCRAM-SHA-256 and OAUTHBEARER with a signed JWT; an
// expired token refused with librdkafka's authentication error and no topic.
TEST_F(security_clients, confluent_kafka_over_sasl_ssl_scram_sha_256_and_oauthbearer) {
  const char* const confluent2 = "/opt/tarn/py-confluent2/bin/python";
  if (!std::filesystem::exists(confluent2)) {
    GTEST_SKIP() << "confluent-kafka 2.x is missing: scripts/install-deps";
  }
  auto [rc, out] = run_command("timeout 120 " + std::string(confluent2) + " " + TARN_SOURCE_DIR +
                               "/tests/python/security_confluent.py " + certs().path("") + " " +
                               std::to_string(sasl_port_) + " 2>&1");
  EXPECT_EQ(rc, 0) << out;
  for (const char* name : {"confluent-scram-sha-256", "confluent-oauthbearer"}) {
    EXPECT_EQ(lines_with(out, std::string(name) + " ok ['one', 'two', 'three']").size(), 1u)
        << name << "\n"
        << out;
  }
  EXPECT_EQ(lines_with(out, "confluent-expired-token refused _AUTHENTICATION").size(), 1u) << out;
  const std::string listing = topic_listing();
  EXPECT_EQ(listing.find("confluent-expired"), std::string::npos) << listing;
}

TEST_F(security_clients, kafka_python_over_ssl_mtls_and_sasl_ssl) {
  if (run_command(std::string(python) + " -c 'import kafka'").first != 0) {
    GTEST_SKIP() << "kafka-python (python3-kafka) is missing: scripts/install-deps";
  }
  auto [rc, out] = run_command("timeout 120 " + std::string(python) + " " + TARN_SOURCE_DIR +
                               "/tests/python/security_kafka_python.py " + certs().path("") + " " +
                               std::to_string(ssl_port_) + " " + std::to_string(mtls_port_) + " " +
                               std::to_string(sasl_port_));
  EXPECT_EQ(rc, 0) << out;
  for (const char* name :
       {"kafka-python-ssl", "kafka-python-mtls", "kafka-python-plain", "kafka-python-scram-sha-256",
        "kafka-python-scram-sha-512", "kafka-python-oauthbearer"}) {
    EXPECT_EQ(lines_with(out, std::string(name) + " ok ['one', 'two', 'three']").size(), 1u)
        << name << "\n"
        << out;
  }
  // kafka-python 2.0.2 logs in with SaslHandshake v0 and raw tokens: the broker's answer to a
  // wrong password is to close the connection (Kafka's SaslServerAuthenticator does the same),
  // which kafka-python reports while authenticating and then as NoBrokersAvailable.
  for (const char* name : {"kafka-python-wrong-plain", "kafka-python-wrong-scram"}) {
    EXPECT_EQ(
        lines_with(out, std::string(name) + " refused NoBrokersAvailable while-authenticating")
            .size(),
        1u)
        << name << "\n"
        << out;
  }
  // An expired token: the broker answers OAUTHBEARER's failure with KIP-255's error challenge
  // ({"status":"invalid_token"}), which kafka-python 2.0.2 does not parse: its
  // AuthenticationFailedError, and no data.
  EXPECT_EQ(lines_with(out, "kafka-python-expired-token refused AuthenticationFailedError").size(),
            1u)
      << out;
  EXPECT_EQ(lines_with(out, "kafka-python-untrusted refused SSLCertVerificationError").size(), 1u)
      << out;
  const std::string listing = topic_listing();
  EXPECT_NE(listing.find("\"kafka-python-plain\""), std::string::npos) << listing;
  EXPECT_EQ(listing.find("kafka-python-wrong"), std::string::npos) << listing;
  EXPECT_EQ(listing.find("kafka-python-expired"), std::string::npos) << listing;
  EXPECT_EQ(listing.find("kafka-python-untrusted"), std::string::npos) << listing;
}

// A producer over SASL_SSL PLAIN (confluent-kafka 1.7) sending one record at a time until SIGTERM:
// prints "ready" after its first delivery, then "delivered N failed M max_ms L" (L: the slowest
// send after the first).
const char* const steady_producer_py = R"(
import signal, sys, time
from confluent_kafka import Producer
port, ca = sys.argv[1], sys.argv[2]
stop = []
signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
p = Producer({'bootstrap.servers': '127.0.0.1:' + port, 'security.protocol': 'SASL_SSL',
              'ssl.ca.location': ca, 'sasl.mechanisms': 'PLAIN', 'sasl.username': 'alice',
              'sasl.password': 'alice-secret', 'linger.ms': 0, 'message.timeout.ms': 20000})
result = {'ok': 0, 'failed': 0}
def done(err, msg):
    result['failed' if err else 'ok'] += 1
max_ms = 0
while not stop:
    start = time.time()
    p.produce('steady', b'x', callback=done)
    p.flush(20)
    if result['ok'] + result['failed'] == 1:
        print('ready', flush=True)
    else:
        max_ms = max(max_ms, (time.time() - start) * 1000)
    time.sleep(0.02)
print('delivered', result['ok'], 'failed', result['failed'], 'max_ms', int(max_ms), flush=True)
)";

// Unauthenticated connections of the flood: their socket, when opened, when seen closed.
struct idle_connection {
  std::unique_ptr<raw_client> socket;
  clock_type::time_point opened;
  std::optional<clock_type::time_point> closed;
  int source = 0;  // index of the source address
};

// Marks the connections the broker closed (end of stream or reset) with the time; bytes the
// broker sent (TLS session tickets) are read and dropped.
void note_closed(std::vector<idle_connection>& flood) {
  std::vector<pollfd> fds;
  std::vector<size_t> which;
  for (size_t i = 0; i < flood.size(); ++i) {
    if (flood[i].closed) continue;
    fds.push_back({flood[i].socket->fd(), POLLIN, 0});
    which.push_back(i);
  }
  if (fds.empty() || ::poll(fds.data(), fds.size(), 10) <= 0) return;
  const auto now = clock_type::now();
  uint8_t buf[4096];
  for (size_t k = 0; k < fds.size(); ++k) {
    if (fds[k].revents == 0) continue;
    const ssize_t n = ::recv(fds[k].fd, buf, sizeof(buf), MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) flood[which[k]].closed = now;
  }
}

// The client connections the broker holds open, as GET /v1/status counts them (what
// max.connections bounds; the HTTP listener's own are not among them), -1 without an answer.
int broker_connections(uint16_t http_port) {
  const std::string answer = http_exchange(http_port, "GET /v1/status HTTP/1.0\r\nHost: x\r\n\r\n");
  const std::string key = "\"connections\":";
  const size_t at = answer.find(key);
  if (answer.find(" 200 ") == std::string::npos || at == std::string::npos) return -1;
  return std::atoi(answer.c_str() + at + key.size());
}

size_t count_closed(const std::vector<idle_connection>& flood, int source,
                    std::chrono::milliseconds within) {
  size_t n = 0;
  for (const auto& c : flood) {
    if (c.source == source && c.closed && *c.closed - c.opened < within) ++n;
  }
  return n;
}

// Thousands of idle connections to an SSL and a SASL_SSL listener: raw TCP connections that never
// send a ClientHello, and TLS connections to SASL_SSL that complete the handshake but never
// authenticate. max.connections.per.ip closes each address's excess at once; max.connections makes
// the rest wait in the kernel's backlog (a new PLAINTEXT client is not served meanwhile) until
// connections.max.idle.ms closes the first ones; in the end every one is closed. A SASL_SSL
// producer connected before the flood is answered throughout, and the broker's memory stays
// within a bound per connection.
TEST(security_flood, idle_unauthenticated_connections_on_ssl_and_sasl_ssl_listeners) {
  if (!have_program("openssl") || !certs().ok()) GTEST_SKIP() << "no openssl CLI";
  if (run_command(std::string(python) + " -c 'import confluent_kafka'").first != 0) {
    GTEST_SKIP() << "python3 confluent_kafka is missing";
  }
  // The phases below must all fit before the first connection has been idle this long.
#ifdef TARN_SANITIZED_BUILD
  // A sanitized broker takes many times longer per TLS handshake and accept: under TSan at load
  // 16 to 22 it held only 837 to 1,226 of the 1,300 connections 5.5 s into the flood.
  constexpr auto idle = 15000ms;
#else
  // 2 s, then 3 s, were too little on a loaded machine: opening the flood took 2.03 s once, and
  // 2.55 s at load 18 (the .2 excess not yet closed after idle / 4).
  constexpr auto idle = 6000ms;
#endif
  constexpr int per_ip = 500;           // max.connections.per.ip
  constexpr int attempts_per_ip = 600;  // so 100 too many from each address
  constexpr int max_connections = 1300;
  constexpr int tls_clients = 100;  // finished TLS handshakes that never authenticate
  rlimit limit{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &limit), 0);
  limit.rlim_cur = limit.rlim_max;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &limit), 0);
  if (limit.rlim_max < 4 * attempts_per_ip + tls_clients + 200) {
    GTEST_SKIP() << "hard RLIMIT_NOFILE is " << limit.rlim_max;
  }
  broker_process broker(
      {"--override", "listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_SSL://127.0.0.1:0",
       "--override", "ssl.keystore.type=PEM", "--override",
       "ssl.keystore.location=" + certs().path("server-keystore.pem"), "--override",
       "sasl.enabled.mechanisms=PLAIN", "--override",
       std::string("listener.name.sasl_ssl.plain.sasl.jaas.config=") + plain_jaas, "--override",
       "connections.max.idle.ms=" + std::to_string(idle.count()), "--override",
       "max.connections.per.ip=" + std::to_string(per_ip), "--override",
       "max.connections=" + std::to_string(max_connections), "--override",
       "http.listener=127.0.0.1:0"});
  ASSERT_NE(broker.port(), 0) << broker.output();
  const auto http_port =
      broker.process().wait_for_number_after("http listening on 127.0.0.1:", startup_timeout);
  ASSERT_TRUE(http_port) << broker.output();
  const auto status_port = static_cast<uint16_t>(std::stoi(*http_port));
  const uint16_t ssl_port = listener_port(broker, "SSL");
  const uint16_t sasl_port = listener_port(broker, "SASL_SSL");
  ASSERT_NE(ssl_port, 0) << broker.output();
  ASSERT_NE(sasl_port, 0) << broker.output();
  const long rss_at_start_kib = broker.process().rss_kib();

  temp_dir dir;
  const auto script = dir.write_file("steady_producer.py", steady_producer_py);
  child_process producer(
      {python, script.string(), std::to_string(sasl_port), certs().path("ca.pem")});
  ASSERT_TRUE(producer.wait_for_output("ready", event_timeout)) << producer.output();

  std::vector<idle_connection> flood;
  const auto flood_started = clock_type::now();
  // 127.0.0.6: TLS handshakes to SASL_SSL finished by OpenSSL, then silence.
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  ASSERT_NE(ctx, nullptr);
  for (int i = 0; i < tls_clients; ++i) {
    idle_connection c{std::make_unique<raw_client>(sasl_port, "127.0.0.6"), clock_type::now(),
                      std::nullopt, 6};
    ASSERT_TRUE(c.socket->connected());
    SSL* ssl = SSL_new(ctx);
    SSL_set_fd(ssl, c.socket->fd());
    ASSERT_EQ(SSL_connect(ssl), 1) << "TLS handshake " << i;
    SSL_free(ssl);  // the socket stays open (raw_client owns it) and says nothing more
    flood.push_back(std::move(c));
  }
  SSL_CTX_free(ctx);
  // 127.0.0.2 and .3, one after the other: half to SSL, half to SASL_SSL, nothing sent. Each
  // address's 100 beyond max.connections.per.ip are closed at once.
  auto open_from = [&](int source) {
    const std::string ip = "127.0.0." + std::to_string(source);
    for (int i = 0; i < attempts_per_ip; ++i) {
      idle_connection c{std::make_unique<raw_client>(i % 2 ? ssl_port : sasl_port, ip.c_str()),
                        clock_type::now(), std::nullopt, source};
      if (!c.socket->connected()) return false;
      flood.push_back(std::move(c));
    }
    return true;
  };
  for (int source : {2, 3}) {
    ASSERT_TRUE(open_from(source)) << source;
    const auto deadline = clock_type::now() + idle / 4;
    while (count_closed(flood, source, idle / 4) < attempts_per_ip - per_ip &&
           clock_type::now() < deadline) {
      note_closed(flood);
    }
    EXPECT_EQ(count_closed(flood, source, idle / 4), size_t{attempts_per_ip - per_ip}) << source;
  }
  // .4 and .5: max.connections is reached part way through .4; the rest wait in the backlog,
  // and so does a new PLAINTEXT client.
  ASSERT_TRUE(open_from(4));
  ASSERT_TRUE(open_from(5));
  // The connections are in the listeners' backlogs once connect() returns; the broker's accept
  // loops take them as fast as loop 0 runs, and a PLAINTEXT client that came before they filled
  // max.connections would be served (a fixed 300 ms was too short under TSan at load 12). Wait
  // until the broker holds max.connections; its accept loops then stop taking connections.
  int held = broker_connections(status_port);
  while (held < max_connections && clock_type::now() < flood_started + idle - 500ms) {
    std::this_thread::sleep_for(10ms);
    held = broker_connections(status_port);
  }
  ASSERT_EQ(held, max_connections) << "the broker did not fill max.connections in time";
  raw_client waiting(broker.port());
  ASSERT_TRUE(waiting.connected());
  ASSERT_TRUE(waiting.send_request(18, 0, 42));
  EXPECT_FALSE(waiting.read_frame(300ms)) << "served beyond max.connections";
  const auto saturated = clock_type::now();
  EXPECT_LT(saturated - flood_started, idle - 500ms) << "the flood took too long to open";
  note_closed(flood);
  for (int source : {4, 5, 6}) EXPECT_EQ(count_closed(flood, source, 10s), 0u) << source;
  // Once the first idle connections are closed the waiting client is served.
  auto answer = waiting.read_frame(idle + 5s);
  ASSERT_TRUE(answer) << "never served";
  EXPECT_EQ(get_int32(*answer, 0), 42);
  EXPECT_GE(clock_type::now() - flood_started, idle - 200ms);

  // Every flood connection closed: the excess of each address at once (.4's and .5's once
  // accepted), the others after connections.max.idle.ms.
  const auto deadline = clock_type::now() + 3 * idle + 5s;
  auto all_closed = [&] {
    return std::all_of(flood.begin(), flood.end(), [](const auto& c) { return c.closed; });
  };
  while (!all_closed() && clock_type::now() < deadline) note_closed(flood);
  size_t still_open = 0, early = 0;
  for (const auto& c : flood) {
    if (!c.closed) {
      ++still_open;
    } else if (*c.closed < flood_started + idle) {
      ++early;
    }
  }
  EXPECT_EQ(still_open, 0u);
  // Before the first connection could be idle for connections.max.idle.ms only the per-address
  // excess of .2 and .3 was closed: no finished handshake, nothing waiting in the backlog (.4's
  // and .5's excess is refused when a slot frees and they are accepted).
  EXPECT_EQ(early, size_t{2 * (attempts_per_ip - per_ip)});
  EXPECT_TRUE(broker.process().wait_for_output("(max.connections.per.ip)", 1s));
  EXPECT_TRUE(broker.process().wait_for_output("(connections.max.idle.ms)", 1s));
  const auto flood_seconds =
      std::chrono::duration<double>(clock_type::now() - flood_started).count();

  // The producer connected before the flood was answered all along.
  producer.send_signal(SIGTERM);
  ASSERT_TRUE(producer.wait_exit(event_timeout));
  const auto report = lines_with(producer.output(), "delivered ");
  ASSERT_EQ(report.size(), 1u) << producer.output();
  int delivered = 0, failed = -1, max_ms = -1;
  ASSERT_EQ(std::sscanf(report[0].c_str(), "delivered %d failed %d max_ms %d", &delivered, &failed,
                        &max_ms),
            3)
      << report[0];
  EXPECT_EQ(failed, 0) << report[0];
  EXPECT_GE(delivered, 50) << report[0];
  EXPECT_LT(max_ms, 2000) << report[0];

  // Memory: bounded by max.connections. An idle connection to a TLS listener costs the broker
  // about 87 KiB before its handshake (a PLAINTEXT one about 10 KiB; measured with 2,000 idle
  // connections on each), most of it the TLS stream's and OpenSSL's per-connection state; this
  // run peaked about 156 MiB above the start. 128 KiB a slot leaves room for a loaded machine,
  // far below what one decoder trusting a count would take.
  const long peak_kib = broker.process().peak_rss_kib();
  const long bound_kib = memory_growth_bound_kib(0, 48 * 1024 + 128 * long{max_connections});
  EXPECT_LT(peak_kib - rss_at_start_kib, bound_kib);
  std::printf(
      "flood: %zu connections, all closed after %.1f s; broker RSS %ld KiB at start, "
      "peak %ld KiB; producer: %s\n",
      flood.size(), flood_seconds, rss_at_start_kib, peak_kib, report[0].c_str());
}

}  // namespace
}  // namespace tarn::test
