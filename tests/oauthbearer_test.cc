// SASL/OAUTHBEARER end to end (docs/security.md), against `tarn serve` with real clients:
//   - the JWT validator (KIP-768): an RSA key and its JWKS made by python3-cryptography, the
//     JWKS served over loopback HTTP (python's http.server), confluent-kafka's oauth_cb signing
//     tokens with python3-jwt: a produce and consume round trip as User:alice; a token whose exp
//     is past fails with the client's authentication error and nothing is served (the topic it
//     wanted was never created); an alg "none" token is refused with the JWKS configured;
//   - the default unsecured validator: kcat (librdkafka's enable.sasl.oauthbearer.unsecure.jwt)
//     round trips; Kafka's Java producer (4.4.0) with its default unsecured login produces;
//   - by hand: the failure exchange (the JSON challenge, the client's %x01, then
//     SASL_AUTHENTICATION_FAILED with the JSON as the message), and the token's exp as the KIP-368
//     session lifetime (a request after it closes the connection).
// GCC 12's -Wrestrict misfires on std::string operator+ with literals (GCC bug 105329).
#pragma GCC diagnostic ignored "-Wrestrict"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "kafka_ref_broker.h"
#include "test_util.h"
#include "tls_util.h"

namespace tarn::test {
namespace {

const char* const python = "/usr/bin/python3";

// Makes key.pem and jwks.json (kid k1) in `dir`.
const char* const make_keys_py = R"(
import json, sys
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.hazmat.primitives import serialization
from jwt.algorithms import RSAAlgorithm
d = sys.argv[1]
k = rsa.generate_private_key(public_exponent=65537, key_size=2048)
open(d + '/key.pem', 'wb').write(k.private_bytes(serialization.Encoding.PEM,
    serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
jwk = json.loads(RSAAlgorithm.to_jwk(k.public_key()))
jwk.update(kid='k1', use='sig', alg='RS256')
json.dump({'keys': [jwk]}, open(d + '/jwks.json', 'w'))
)";

// argv: port, key file, mode (ok | expired | none), topic. Prints the records read back, or
// AUTH_ERROR and the client's error.
const char* const client_py = R"(
import sys, time, jwt, base64, json
from confluent_kafka import Producer, Consumer, KafkaError
port, keyfile, mode, topic = sys.argv[1:5]
key = open(keyfile).read()
def token(config):
    now = int(time.time())
    claims = {'sub': 'alice', 'iat': now - 5, 'iss': 'https://idp.test', 'aud': 'tarn',
              'exp': now + 600 if mode != 'expired' else now - 3600}
    if mode == 'none':
        b = lambda o: base64.urlsafe_b64encode(json.dumps(o).encode()).rstrip(b'=').decode()
        t = b({'alg': 'none'}) + '.' + b(claims) + '.'
    else:
        t = jwt.encode(claims, key, algorithm='RS256', headers={'kid': 'k1'})
    return t, time.time() + 600  # the client's idea of the lifetime, not the claim
errors = []
conf = {'bootstrap.servers': '127.0.0.1:' + port, 'security.protocol': 'SASL_PLAINTEXT',
        'sasl.mechanisms': 'OAUTHBEARER', 'oauth_cb': token,
        'error_cb': lambda e: errors.append(e)}
p = Producer(dict(conf, **{'message.timeout.ms': 8000 if mode == 'ok' else 3000}))
for v in ['one', 'two', 'three']:
    p.produce(topic, v.encode())
deadline = time.time() + 10
while p.flush(0.2) > 0 and time.time() < deadline:
    if any(e.code() == KafkaError._AUTHENTICATION for e in errors):
        print('AUTH_ERROR', errors[0].str())
        sys.exit(0)
if mode != 'ok':
    print('AUTH_ERROR' if errors else 'NO_ERROR', [e.str() for e in errors])
    sys.exit(0)
c = Consumer(dict(conf, **{'group.id': 'g', 'auto.offset.reset': 'earliest'}))
c.subscribe([topic])
got = []
deadline = time.time() + 15
while len(got) < 3 and time.time() < deadline:
    m = c.poll(0.2)
    if m is not None and not m.error():
        got.append(m.value().decode())
c.close()
print(' '.join(got))
)";

bool have_python_modules() {
  return run_command(std::string(python) + " -c 'import confluent_kafka, jwt, cryptography'")
             .first == 0;
}

void write_file(const std::filesystem::path& p, const std::string& text) {
  std::ofstream out(p);
  out << text;
}

TEST(oauthbearer_test, jwt_validator_with_a_jwks_over_loopback_http_and_confluent_kafka) {
  if (!have_python_modules()) {
    GTEST_SKIP() << "python3 with confluent_kafka, jwt and cryptography is missing "
                    "(scripts/install-deps)";
  }
  temp_dir dir;
  write_file(dir.path() / "make_keys.py", make_keys_py);
  write_file(dir.path() / "client.py", client_py);
  auto [krc, kout] =
      run_command(std::string(python) + " " + (dir.path() / "make_keys.py").string() + " " +
                  dir.path().string());
  ASSERT_EQ(krc, 0) << kout;
  // The JWKS over loopback HTTP, as an identity provider's jwks_uri.
  child_process http({python, "-u", "-m", "http.server", "--bind", "127.0.0.1", "--directory",
                      dir.path().string(), "0"});
  auto http_port = http.wait_for_number_after("port ", 10s);
  ASSERT_TRUE(http_port) << http.output();

  broker_process broker(
      {"--override", "listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0", "--override",
       "sasl.enabled.mechanisms=OAUTHBEARER", "--override",
       "listener.name.sasl_plaintext.oauthbearer.sasl.server.callback.handler.class="
       "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler",
       "--override",
       "sasl.oauthbearer.jwks.endpoint.url=http://127.0.0.1:" + *http_port + "/jwks.json",
       "--override", "sasl.oauthbearer.expected.audience=tarn", "--override",
       "sasl.oauthbearer.expected.issuer=https://idp.test", "--override",
       "connection.failed.authentication.delay.ms=0"});
  ASSERT_NE(broker.port(), 0) << broker.output();
  const uint16_t sasl_port = listener_port(broker, "SASL_PLAINTEXT");
  ASSERT_NE(sasl_port, 0) << broker.output();
  const std::string client = std::string("timeout 60 ") + python + " " +
                             (dir.path() / "client.py").string() + " " + std::to_string(sasl_port) +
                             " " + (dir.path() / "key.pem").string();

  auto [rc, out] = run_command(client + " ok oauth-topic");
  EXPECT_EQ(rc, 0) << out;
  EXPECT_TRUE(out.ends_with("one two three\n")) << out << broker.output();

  for (const char* mode : {"expired", "none"}) {
    auto [erc, eout] = run_command(client + " " + mode + " denied-" + mode);
    EXPECT_EQ(erc, 0) << eout;
    // librdkafka's own log lines come first (stderr); the script's verdict is a line of its own.
    EXPECT_NE(eout.find("\nAUTH_ERROR"), std::string::npos) << mode << ": " << eout;
    EXPECT_NE(eout.find("invalid_token"), std::string::npos) << mode << ": " << eout;
  }
  // Nothing was served to them: their topics were never even created.
  auto [lrc, listing] =
      run_command("timeout 20 kcat -L -b 127.0.0.1:" + std::to_string(broker.port()));
  EXPECT_EQ(lrc, 0) << listing;
  EXPECT_NE(listing.find("\"oauth-topic\""), std::string::npos) << listing;
  EXPECT_EQ(listing.find("denied-"), std::string::npos) << listing;
}

TEST(oauthbearer_test, unsecured_validator_takes_librdkafkas_unsecured_jwt) {
  if (!have_program("kcat")) GTEST_SKIP() << "kcat is missing";
  broker_process broker({"--override",
                         "listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
                         "--override", "sasl.enabled.mechanisms=OAUTHBEARER"});
  ASSERT_NE(broker.port(), 0) << broker.output();
  const uint16_t sasl_port = listener_port(broker, "SASL_PLAINTEXT");
  const std::string options =
      " -X security.protocol=SASL_PLAINTEXT -X sasl.mechanisms=OAUTHBEARER"
      " -X enable.sasl.oauthbearer.unsecure.jwt=true -X sasl.oauthbearer.config=principal=bob";
  const std::string b = " -b 127.0.0.1:" + std::to_string(sasl_port) + " -t unsecured";
  auto [prc, pout] = run_command("printf 'one\\ntwo\\n' | timeout 30 kcat -P" + b + options);
  ASSERT_EQ(prc, 0) << pout;
  auto [crc, cout] = run_command("timeout 30 kcat -C -o beginning -c 2 -e -q" + b + options);
  EXPECT_EQ(crc, 0) << cout;
  EXPECT_EQ(cout, "one\ntwo\n");
}

// Kafka's own Java producer (4.4.0 jars, ProducerPerformance) with its default OAUTHBEARER login
// (OAuthBearerUnsecuredLoginCallbackHandler) against the default unsecured validator; kcat reads
// the records back over PLAINTEXT. One JVM start.
TEST(oauthbearer_test, kafkas_java_producer_authenticates_with_its_unsecured_login) {
#ifdef TARN_SANITIZED_BUILD
  GTEST_SKIP() << "a JVM start: the release build runs it (the mechanism is covered above)";
#endif
  if (kafka_libs().empty()) GTEST_SKIP() << "no Kafka 4.4.0 jars";
  if (!have_program("kcat")) GTEST_SKIP() << "kcat is missing";
  broker_process broker({"--override",
                         "listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
                         "--override", "sasl.enabled.mechanisms=OAUTHBEARER"});
  ASSERT_NE(broker.port(), 0) << broker.output();
  const uint16_t sasl_port = listener_port(broker, "SASL_PLAINTEXT");
  temp_dir dir;
  const auto config = dir.path() / "producer.properties";
  write_file(config,
             "security.protocol=SASL_PLAINTEXT\n"
             "sasl.mechanism=OAUTHBEARER\n"
             "sasl.jaas.config=org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule "
             "required unsecuredLoginStringClaim_sub=\"alice\";\n");
  auto [rc, out] = run_command(
      "timeout 120 java -cp '" + kafka_libs() +
      "/*' org.apache.kafka.tools.ProducerPerformance --topic java-oauth --num-records 5 "
      "--record-size 8 --throughput -1 --producer.config " +
      config.string() +
      " --producer-props bootstrap.servers=127.0.0.1:" + std::to_string(sasl_port) + " acks=all");
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("5 records sent"), std::string::npos) << out;
  auto [crc, cout] = run_command("timeout 30 kcat -C -o beginning -c 5 -e -q -b 127.0.0.1:" +
                                 std::to_string(broker.port()) + " -t java-oauth | wc -l");
  EXPECT_EQ(crc, 0) << cout;
  EXPECT_EQ(cout, "5\n");
}

std::vector<uint8_t> authenticate_frame(const std::string& token, int32_t correlation_id) {
  std::vector<uint8_t> body;
  put_int32(body, static_cast<int32_t>(token.size()));
  body.insert(body.end(), token.begin(), token.end());
  return request_frame(36, 1, correlation_id, body);
}

TEST(oauthbearer_test, an_invalid_token_gets_the_json_challenge_then_the_failure) {
  broker_process broker({"--override",
                         "listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
                         "--override", "sasl.enabled.mechanisms=OAUTHBEARER", "--override",
                         "connection.failed.authentication.delay.ms=0"});
  ASSERT_NE(broker.port(), 0) << broker.output();
  raw_client c(listener_port(broker, "SASL_PLAINTEXT"));
  std::vector<uint8_t> hs;
  const std::string mechanism = "OAUTHBEARER";
  put_int16(hs, static_cast<int16_t>(mechanism.size()));
  hs.insert(hs.end(), mechanism.begin(), mechanism.end());
  ASSERT_TRUE(c.send_bytes(request_frame(17, 1, 1, hs)));
  auto answer = c.read_frame();
  ASSERT_TRUE(answer);
  EXPECT_EQ(get_int16(*answer, 4), 0);
  // {"alg":"none"}.{"sub":"x","exp":1}. : expired in 1970.
  const std::string token = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4IiwiZXhwIjoxfQ.";
  ASSERT_TRUE(
      c.send_bytes(authenticate_frame("n,,\x01"
                                      "auth=Bearer " +
                                          token + "\x01\x01",
                                      2)));
  auto challenge = c.read_frame();
  ASSERT_TRUE(challenge);
  // v1: correlation id, error code 0, null message, the JSON bytes, SessionLifetimeMs 0.
  EXPECT_EQ(get_int16(*challenge, 4), 0);
  const std::string json = R"({"status":"invalid_token"})";
  ASSERT_EQ(get_int32(*challenge, 8), static_cast<int32_t>(json.size()));
  EXPECT_EQ(std::string(challenge->begin() + 12, challenge->begin() + 12 + json.size()), json);
  ASSERT_TRUE(c.send_bytes(authenticate_frame("\x01", 3)));
  auto failed = c.read_frame();
  ASSERT_TRUE(failed);
  EXPECT_EQ(get_int16(*failed, 4), 58) << "SASL_AUTHENTICATION_FAILED";
  const int16_t message_size = get_int16(*failed, 6);
  ASSERT_EQ(message_size, static_cast<int16_t>(json.size()));
  EXPECT_EQ(std::string(failed->begin() + 8, failed->begin() + 8 + message_size), json);
  EXPECT_TRUE(c.wait_closed(5s));
}

std::string base64url(std::string_view in) {
  static constexpr char alphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  uint32_t bits = 0;
  int count = 0;
  for (unsigned char c : in) {
    bits = (bits << 8) | c;
    count += 8;
    while (count >= 6) {
      out += alphabet[(bits >> (count - 6)) & 63];
      count -= 6;
    }
  }
  if (count > 0) out += alphabet[(bits << (6 - count)) & 63];
  return out;
}

// KIP-368 with a token: SessionLifetimeMs is what is left of its exp (no
// connections.max.reauth.ms set), and a request after that closes the connection.
TEST(oauthbearer_test, the_tokens_exp_is_the_session_lifetime) {
  broker_process broker({"--override",
                         "listeners=PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
                         "--override", "sasl.enabled.mechanisms=OAUTHBEARER"});
  ASSERT_NE(broker.port(), 0) << broker.output();
  raw_client c(listener_port(broker, "SASL_PLAINTEXT"));
  std::vector<uint8_t> hs;
  const std::string mechanism = "OAUTHBEARER";
  put_int16(hs, static_cast<int16_t>(mechanism.size()));
  hs.insert(hs.end(), mechanism.begin(), mechanism.end());
  ASSERT_TRUE(c.send_bytes(request_frame(17, 1, 1, hs)));
  ASSERT_TRUE(c.read_frame());
  const int64_t now_s = std::chrono::duration_cast<std::chrono::seconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
  const std::string token =
      base64url(R"({"alg":"none"})") + "." +
      base64url("{\"sub\":\"carol\",\"exp\":" + std::to_string(now_s + 2) + "}") + ".";
  ASSERT_TRUE(
      c.send_bytes(authenticate_frame("n,,\x01"
                                      "auth=Bearer " +
                                          token + "\x01\x01",
                                      2)));
  auto done = c.read_frame();
  ASSERT_TRUE(done);
  EXPECT_EQ(get_int16(*done, 4), 0);
  // v1: correlation id, error code, null message, empty bytes, SessionLifetimeMs.
  ASSERT_EQ(done->size(), 4u + 2 + 2 + 4 + 8);
  const int64_t lifetime_ms =
      (int64_t{get_int32(*done, 12)} << 32) | uint32_t(get_int32(*done, 16));
  EXPECT_GT(lifetime_ms, 0);
  EXPECT_LE(lifetime_ms, 2000);
  std::this_thread::sleep_for(std::chrono::milliseconds(lifetime_ms + 100));
  ASSERT_TRUE(c.send_request(18, 0, 3));
  EXPECT_FALSE(c.read_frame(2s)) << "a request after the token expired is not answered";
  EXPECT_TRUE(c.wait_closed(5s));
}

}  // namespace
}  // namespace tarn::test
