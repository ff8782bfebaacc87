// The client's security settings (librdkafka's names and values) and its SCRAM side against
// RFC 7677's SCRAM-SHA-256 example (fixed nonce), tampering included.
#include "client/client_security.h"

#include <gtest/gtest.h>

#include <vector>

namespace tarn::client {
namespace {

result<security_config, std::string> parse(
    std::initializer_list<std::pair<std::string_view, std::string_view>> settings) {
  security_config c;
  for (auto [k, v] : settings) {
    auto r = c.set(k, v);
    if (!r) return fail("not a security key: " + std::string(k));
    if (!*r) return fail(r->error());
  }
  if (auto ok = c.validate(); !ok) return fail(ok.error());
  return c;
}

TEST(client_security, parses_librdkafka_names) {
  auto c = parse({{"security.protocol", "sasl_ssl"},
                  {"sasl.mechanisms", "scram-sha-512"},
                  {"sasl.username", "alice"},
                  {"sasl.password", "pw"},
                  {"ssl.ca.location", "/tmp/ca.pem"},
                  {"ssl.endpoint.identification.algorithm", "none"}});
  ASSERT_TRUE(c) << c.error();
  EXPECT_EQ(c->protocol, security_protocol::sasl_ssl);
  EXPECT_TRUE(c->tls());
  EXPECT_TRUE(c->sasl());
  EXPECT_EQ(c->mechanism, sasl_mechanism::scram_sha_512);
  EXPECT_EQ(c->sasl_username, "alice");
  EXPECT_EQ(c->ssl_ca_location, "/tmp/ca.pem");
  EXPECT_FALSE(c->ssl_endpoint_identification);

  auto d = parse({{"security.protocol", "SSL"}});
  ASSERT_TRUE(d);
  EXPECT_TRUE(d->ssl_endpoint_identification);  // librdkafka 2.x's default: https
  EXPECT_FALSE(d->sasl());
}

TEST(client_security, refuses_bad_values_and_combinations) {
  EXPECT_FALSE(parse({{"security.protocol", "tls"}}));
  EXPECT_FALSE(parse({{"sasl.mechanism", "GSSAPI"}}));
  EXPECT_FALSE(parse({{"sasl.mechanism", "OAUTHBEARER"}}));
  EXPECT_FALSE(parse({{"ssl.endpoint.identification.algorithm", "dns"}}));
  // SASL without a user; a key without its certificate.
  EXPECT_FALSE(parse({{"security.protocol", "SASL_PLAINTEXT"}}));
  EXPECT_FALSE(parse({{"ssl.key.location", "/k.pem"}}));
  security_config c;
  EXPECT_FALSE(c.set("linger.ms", "5").has_value());  // not a security key
  auto bad = c.set("security.protocol", "x");
  ASSERT_TRUE(bad.has_value());
  ASSERT_FALSE(*bad);
  EXPECT_NE(bad->error().find("SASL_SSL"), std::string::npos);
}

TEST(client_security, reads_java_jaas_config) {
  auto c = parse({{"security.protocol", "SASL_SSL"},
                  {"sasl.mechanism", "SCRAM-SHA-256"},
                  {"sasl.jaas.config",
                   "org.apache.kafka.common.security.scram.ScramLoginModule required "
                   "username=\"bob\" password=\"s3cret\";"}});
  ASSERT_TRUE(c) << c.error();
  EXPECT_EQ(c->sasl_username, "bob");
  EXPECT_EQ(c->sasl_password, "s3cret");
}

TEST(client_security, base64_round_trip) {
  for (const std::string& s :
       std::vector<std::string>{"", "a", "ab", "abc", "abcd", std::string("\0\xff\x10", 3)}) {
    auto d = base64_decode(base64_encode(s));
    ASSERT_TRUE(d);
    EXPECT_EQ(*d, s);
  }
  EXPECT_FALSE(base64_decode("abc"));
  EXPECT_FALSE(base64_decode("a*c="));
}

// RFC 7677 section 3.
constexpr std::string_view rfc7677_server_first =
    "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";

TEST(scram_client, rfc7677_sha256_example) {
  scram_client c(sasl_mechanism::scram_sha_256, "user", "pencil", "rOprNGfwEbeRWgbNEkqO");
  EXPECT_EQ(c.client_first(), "n,,n=user,r=rOprNGfwEbeRWgbNEkqO");
  auto final_message = c.client_final(rfc7677_server_first);
  ASSERT_TRUE(final_message) << final_message.error();
  EXPECT_EQ(*final_message,
            "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
            "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=");
  EXPECT_TRUE(c.verify_server_final("v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="));
  EXPECT_FALSE(c.verify_server_final("v=7rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="));
  EXPECT_FALSE(c.verify_server_final("e=invalid-proof"));
}

TEST(scram_client, refuses_a_bad_server_first) {
  scram_client c(sasl_mechanism::scram_sha_256, "user", "pencil", "rOprNGfwEbeRWgbNEkqO");
  // A nonce not extending ours, too few iterations, missing salt, a server error.
  EXPECT_FALSE(c.client_final("r=other,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"));
  EXPECT_FALSE(c.client_final("r=rOprNGfwEbeRWgbNEkqOx,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=10"));
  EXPECT_FALSE(c.client_final("r=rOprNGfwEbeRWgbNEkqOx,i=4096"));
  EXPECT_FALSE(c.client_final("e=unknown-user"));
  // No server-final accepted before client_final computed the expected signature.
  EXPECT_FALSE(c.verify_server_final("v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="));
}

TEST(scram_client, escapes_the_user_name_and_makes_random_nonces) {
  scram_client a(sasl_mechanism::scram_sha_512, "a=b,c", "pw");
  scram_client b(sasl_mechanism::scram_sha_512, "a=b,c", "pw");
  EXPECT_TRUE(a.client_first().starts_with("n,,n=a=3Db=2Cc,r="));
  EXPECT_NE(a.client_first(), b.client_first());
}

TEST(sasl_session, plain_is_one_message) {
  security_config c;
  c.sasl_username = "u";
  c.sasl_password = "p";
  sasl_session s(c);
  auto first = s.next("");
  ASSERT_TRUE(first && first->has_value());
  EXPECT_EQ(**first, std::string("\0u\0p", 4));
  auto done = s.next("");
  ASSERT_TRUE(done);
  EXPECT_FALSE(done->has_value());
}

}  // namespace
}  // namespace tarn::client
