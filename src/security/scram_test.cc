// SCRAM primitives against published vectors: PBKDF2-HMAC known answers (RFC 7914 section 11
// for SHA-256, the common SHA-512 vector) and the whole SCRAM-SHA-256 exchange of RFC 7677.
#include "security/scram.h"

#include <gtest/gtest.h>

#include "security/sasl_authenticator.h"

namespace tarn::security {
namespace {

std::string hex(const bytes& b) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (uint8_t x : b) {
    out += digits[x >> 4];
    out += digits[x & 15];
  }
  return out;
}

bytes of(std::string_view s) { return {s.begin(), s.end()}; }

TEST(scram, pbkdf2_known_answers) {
  EXPECT_EQ(hex(scram_salted_password(scram_mechanism::sha_256, "passwd", of("salt"), 1)),
            "55ac046e56e3089fec1691c22544b605f94185216dde0465e68b9d57c20dacbc");
  EXPECT_EQ(hex(scram_salted_password(scram_mechanism::sha_256, "password", of("salt"), 4096)),
            "c5e478d59288c841aa530db6845c4c8d962893a001ce4e11a4963873aa98134a");
  EXPECT_EQ(hex(scram_salted_password(scram_mechanism::sha_512, "password", of("salt"), 1)),
            "867f70cf1ade02cff3752599a3a53dc4af34c7a669815ae5d513554e1c8cf252"
            "c02d470a285a0501bad999bfe943c08f050235d7d68b1da55e63f73b60a57fce");
}

TEST(scram, base64_round_trip) {
  EXPECT_EQ(base64_encode(of("n,,")), "biws");
  EXPECT_EQ(base64_decode("biws"), of("n,,"));
  EXPECT_EQ(base64_decode("YQ=="), of("a"));
  EXPECT_EQ(base64_decode("YWI="), of("ab"));
  EXPECT_FALSE(base64_decode("YQ="));
  EXPECT_FALSE(base64_decode("Y*=="));
}

// RFC 7677 section 3: user "user", password "pencil".
TEST(scram, rfc7677_exchange) {
  auto salt = base64_decode("W22ZaJ0SNY7soEsUEjb6gQ==");
  ASSERT_TRUE(salt);
  const scram_credential stored =
      scram_make_credential(scram_mechanism::sha_256, "pencil", *salt, 4096);
  auto lookup = [&](scram_mechanism m, const std::string& user) -> std::optional<scram_credential> {
    if (m == scram_mechanism::sha_256 && user == "user") return stored;
    return std::nullopt;
  };
  auto server =
      make_scram_server(scram_mechanism::sha_256, lookup, "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0");
  auto first = server->evaluate(of("n,,n=user,r=rOprNGfwEbeRWgbNEkqO"));
  ASSERT_EQ(first.result, sasl_mechanism_server::step::outcome::challenge);
  EXPECT_EQ(std::string(first.token.begin(), first.token.end()),
            "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,"
            "i=4096");
  auto final_step =
      server->evaluate(of("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                          "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="));
  ASSERT_EQ(final_step.result, sasl_mechanism_server::step::outcome::complete);
  EXPECT_EQ(std::string(final_step.token.begin(), final_step.token.end()),
            "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=");
  EXPECT_EQ(server->authorization_id(), "user");
}

TEST(scram, wrong_proof_fails_with_kafkas_generic_message) {
  auto salt = base64_decode("W22ZaJ0SNY7soEsUEjb6gQ==");
  const scram_credential stored =
      scram_make_credential(scram_mechanism::sha_256, "other", *salt, 4096);
  auto lookup = [&](scram_mechanism, const std::string&) -> std::optional<scram_credential> {
    return stored;
  };
  auto server =
      make_scram_server(scram_mechanism::sha_256, lookup, "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0");
  ASSERT_EQ(server->evaluate(of("n,,n=user,r=rOprNGfwEbeRWgbNEkqO")).result,
            sasl_mechanism_server::step::outcome::challenge);
  auto final_step =
      server->evaluate(of("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                          "p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="));
  EXPECT_EQ(final_step.result, sasl_mechanism_server::step::outcome::failed);
  EXPECT_TRUE(final_step.error.empty()) << "a SaslException: the generic sentence";
}

TEST(scram, unknown_user_and_bad_messages_fail) {
  auto none = [](scram_mechanism, const std::string&) -> std::optional<scram_credential> {
    return std::nullopt;
  };
  EXPECT_EQ(
      make_scram_server(scram_mechanism::sha_512, none)->evaluate(of("n,,n=bob,r=abc")).result,
      sasl_mechanism_server::step::outcome::failed);
  EXPECT_EQ(make_scram_server(scram_mechanism::sha_512, none)->evaluate(of("garbage")).result,
            sasl_mechanism_server::step::outcome::failed);
  EXPECT_EQ(make_scram_server(scram_mechanism::sha_512, none)->evaluate(of("y,,n=bob,r=x")).result,
            sasl_mechanism_server::step::outcome::failed);
}

}  // namespace
}  // namespace tarn::security
