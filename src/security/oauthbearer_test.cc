// OAUTHBEARER without sockets: the unsecured validator's checks, the JWT validator against a JWKS
// made here (RSA, PSS and ECDSA keys from OpenSSL, tokens signed here), the failure exchange of
// the mechanism, and the session lifetime the token's exp gives the authenticator.
#include "security/oauthbearer.h"

#include <fmt/format.h>
#include <gtest/gtest.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <thread>

#include "protocol/error_codes.h"
#include "security/scram.h"

namespace tarn::security {
namespace {

constexpr int64_t now_ms = 1'800'000'000'000;  // a fixed wall clock
constexpr int64_t now_s = now_ms / 1000;

std::string b64url(std::span<const uint8_t> data) {
  std::string s = base64_encode(data);
  while (!s.empty() && s.back() == '=') s.pop_back();
  for (char& c : s) c = c == '+' ? '-' : c == '/' ? '_' : c;
  return s;
}
std::string b64url(std::string_view s) {
  return b64url({reinterpret_cast<const uint8_t*>(s.data()), s.size()});
}
std::vector<uint8_t> of(std::string_view s) { return {s.begin(), s.end()}; }
std::string text(const std::vector<uint8_t>& b) { return {b.begin(), b.end()}; }

std::string unsecured_token(const std::string& claims) {
  return b64url(std::string(R"({"alg":"none"})")) + "." + b64url(claims) + ".";
}

struct key_pair {
  EVP_PKEY* key = nullptr;
  ~key_pair() { EVP_PKEY_free(key); }
};

std::string bn_param(EVP_PKEY* k, const char* name) {
  BIGNUM* bn = nullptr;
  EXPECT_EQ(EVP_PKEY_get_bn_param(k, name, &bn), 1);
  std::vector<uint8_t> out(static_cast<size_t>(BN_num_bytes(bn)));
  BN_bn2bin(bn, out.data());
  BN_free(bn);
  return b64url(out);
}

std::string rsa_jwk(EVP_PKEY* k, const std::string& kid) {
  return fmt::format(R"({{"kty":"RSA","kid":"{}","use":"sig","n":"{}","e":"{}"}})", kid,
                     bn_param(k, OSSL_PKEY_PARAM_RSA_N), bn_param(k, OSSL_PKEY_PARAM_RSA_E));
}

std::string ec_jwk(EVP_PKEY* k, const std::string& kid) {
  uint8_t point[65];
  size_t n = 0;
  EXPECT_EQ(EVP_PKEY_get_octet_string_param(k, OSSL_PKEY_PARAM_PUB_KEY, point, sizeof point, &n),
            1);
  EXPECT_EQ(n, 65u);
  return fmt::format(R"({{"kty":"EC","kid":"{}","crv":"P-256","x":"{}","y":"{}"}})", kid,
                     b64url({point + 1, 32}), b64url({point + 33, 32}));
}

// header.payload.signature with `alg` over the key (ES*: r || s, as JWS wants).
std::string sign(EVP_PKEY* k, const std::string& alg, const std::string& kid,
                 const std::string& claims) {
  const std::string input =
      b64url(fmt::format(R"({{"alg":"{}","typ":"JWT","kid":"{}"}})", alg, kid)) + "." +
      b64url(claims);
  const EVP_MD* md = alg.ends_with("256")   ? EVP_sha256()
                     : alg.ends_with("384") ? EVP_sha384()
                                            : EVP_sha512();
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_PKEY_CTX* pctx = nullptr;
  EXPECT_EQ(EVP_DigestSignInit(ctx, &pctx, md, nullptr, k), 1);
  if (alg.starts_with("PS")) {
    EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING);
    EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST);
  }
  size_t size = 0;
  EVP_DigestSign(ctx, nullptr, &size, reinterpret_cast<const uint8_t*>(input.data()), input.size());
  std::vector<uint8_t> sig(size);
  EXPECT_EQ(EVP_DigestSign(ctx, sig.data(), &size, reinterpret_cast<const uint8_t*>(input.data()),
                           input.size()),
            1);
  sig.resize(size);
  EVP_MD_CTX_free(ctx);
  if (alg.starts_with("ES")) {
    const uint8_t* p = sig.data();
    ECDSA_SIG* s = d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(sig.size()));
    std::vector<uint8_t> raw(64);
    BN_bn2binpad(ECDSA_SIG_get0_r(s), raw.data(), 32);
    BN_bn2binpad(ECDSA_SIG_get0_s(s), raw.data() + 32, 32);
    ECDSA_SIG_free(s);
    sig = raw;
  }
  return input + "." + b64url(sig);
}

std::string claims(const std::string& extra = "") {
  return fmt::format(R"({{"sub":"alice","iat":{},"exp":{},"iss":"https://idp","aud":"tarn"{}}})",
                     now_s - 10, now_s + 600, extra);
}

class jwt_validator_test : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    rsa_ = new key_pair{EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", size_t{2048})};
    ec_ = new key_pair{EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256")};
    other_ = new key_pair{EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", size_t{2048})};
  }
  static void TearDownTestSuite() {
    delete rsa_;
    delete ec_;
    delete other_;
  }

  std::shared_ptr<oauthbearer_validator> validator(jwt_validator_options o = defaults()) {
    const std::string jwks =
        fmt::format(R"({{"keys":[{},{}]}})", rsa_jwk(rsa_->key, "r1"), ec_jwk(ec_->key, "e1"));
    auto v = make_jwt_validator(
        std::move(o), [jwks]() -> result<std::string, std::string> { return jwks; }, false);
    EXPECT_TRUE(v) << v.error();
    return *v;
  }
  static jwt_validator_options defaults() {
    jwt_validator_options o;
    o.jwks_endpoint_url = "file:/unused";
    o.expected_audience = {"tarn"};
    o.expected_issuer = "https://idp";
    return o;
  }
  static std::string detail(const result<oauthbearer_token, oauthbearer_failure>& r) {
    return r ? std::string("valid") : r.error().detail;
  }

  static key_pair* rsa_;
  static key_pair* ec_;
  static key_pair* other_;
};
key_pair* jwt_validator_test::rsa_ = nullptr;
key_pair* jwt_validator_test::ec_ = nullptr;
key_pair* jwt_validator_test::other_ = nullptr;

TEST_F(jwt_validator_test, good_tokens_of_each_algorithm) {
  auto v = validator();
  for (const char* alg : {"RS256", "RS384", "RS512", "PS256", "PS512"}) {
    auto r = v->validate(sign(rsa_->key, alg, "r1", claims()), now_ms);
    ASSERT_TRUE(r) << alg << ": " << detail(r);
    EXPECT_EQ(r->principal_name, "alice");
    EXPECT_EQ(r->expires_at_ms, (now_s + 600) * 1000);
  }
  auto r = v->validate(sign(ec_->key, "ES256", "e1", claims()), now_ms);
  ASSERT_TRUE(r) << detail(r);
  // Without a kid every key of the algorithm's type is tried.
  const std::string token = sign(rsa_->key, "RS256", "r1", claims());
  EXPECT_TRUE(v->validate(token, now_ms));
}

TEST_F(jwt_validator_test, bad_signature_unknown_key_and_algorithm_confusion_fail) {
  auto v = validator();
  std::string token = sign(rsa_->key, "RS256", "r1", claims());
  // Another payload under the same signature.
  const size_t a = token.find('.'), b = token.rfind('.');
  std::string forged =
      token.substr(0, a + 1) + b64url(claims(R"(,"admin":true)")) + token.substr(b);
  EXPECT_FALSE(v->validate(forged, now_ms));
  EXPECT_FALSE(v->validate(sign(other_->key, "RS256", "r1", claims()), now_ms))
      << "signed by a key outside the JWKS";
  EXPECT_FALSE(v->validate(sign(rsa_->key, "RS256", "nope", claims()), now_ms));
  // An RSA signature relabelled ES256 (kid r1), and an EC key's signature labelled RS256.
  const std::string rs = sign(rsa_->key, "RS256", "r1", claims());
  const std::string relabelled =
      b64url(std::string(R"({"alg":"ES256","typ":"JWT","kid":"r1"})")) + rs.substr(rs.find('.'));
  EXPECT_FALSE(v->validate(relabelled, now_ms));
  const std::string es = sign(ec_->key, "ES256", "e1", claims());
  EXPECT_FALSE(v->validate(
      b64url(std::string(R"({"alg":"RS256","typ":"JWT","kid":"e1"})")) + es.substr(es.find('.')),
      now_ms))
      << "an algorithm of the other key type";
  // alg none, with a JWKS configured: refused however well formed.
  auto none = v->validate(unsecured_token(claims()), now_ms);
  ASSERT_FALSE(none);
  EXPECT_EQ(none.error().status, "invalid_token");
  EXPECT_NE(none.error().detail.find("'none' is not a permitted algorithm"), std::string::npos);
  // HS256 with the RSA modulus as the "secret" (the classic confusion): not an algorithm here.
  const std::string hs = b64url(std::string(R"({"alg":"HS256","kid":"r1"})")) + "." +
                         b64url(claims()) + "." + b64url(std::string("x"));
  EXPECT_FALSE(v->validate(hs, now_ms));
}

TEST_F(jwt_validator_test, claims_are_checked_as_kafka_does) {
  auto v = validator();
  auto with = [&](const std::string& c) {
    return v->validate(sign(rsa_->key, "RS256", "r1", c), now_ms);
  };
  // Expired beyond the 30 s of skew, and within it.
  auto expired =
      with(fmt::format(R"({{"sub":"alice","iat":{},"exp":{},"iss":"https://idp","aud":"tarn"}})",
                       now_s - 100, now_s - 31));
  ASSERT_FALSE(expired);
  EXPECT_NE(expired.error().detail.find("no longer valid"), std::string::npos);
  EXPECT_TRUE(
      with(fmt::format(R"({{"sub":"alice","iat":{},"exp":{},"iss":"https://idp","aud":"tarn"}})",
                       now_s - 100, now_s - 20)));
  EXPECT_FALSE(
      with(fmt::format(R"({{"sub":"alice","iat":{},"iss":"https://idp","aud":"tarn"}})", now_s)))
      << "no exp";
  EXPECT_FALSE(with(
      fmt::format(R"({{"sub":"alice","exp":{},"iss":"https://idp","aud":"tarn"}})", now_s + 60)))
      << "no iat";
  EXPECT_FALSE(
      with(fmt::format(R"({{"sub":"alice","iat":{},"exp":{},"iss":"https://idp","aud":"other"}})",
                       now_s, now_s + 60)))
      << "wrong audience";
  EXPECT_TRUE(with(
      fmt::format(R"({{"sub":"alice","iat":{},"exp":{},"iss":"https://idp","aud":["x","tarn"]}})",
                  now_s, now_s + 60)));
  EXPECT_FALSE(
      with(fmt::format(R"({{"sub":"alice","iat":{},"exp":{},"iss":"https://evil","aud":"tarn"}})",
                       now_s, now_s + 60)))
      << "wrong issuer";
  EXPECT_FALSE(with(
      fmt::format(R"({{"iat":{},"exp":{},"iss":"https://idp","aud":"tarn"}})", now_s, now_s + 60)))
      << "no sub";
  EXPECT_FALSE(with(fmt::format(R"({{"sub":7,"iat":{},"exp":{},"iss":"https://idp","aud":"tarn"}})",
                                now_s, now_s + 60)))
      << "sub not a string";
  EXPECT_FALSE(with(fmt::format(
      R"({{"sub":"alice","iat":{},"exp":{},"nbf":{},"iss":"https://idp","aud":"tarn"}})", now_s,
      now_s + 600, now_s + 300)))
      << "not yet valid";
  // No expected audience: a token that names one is refused (jose4j), one without is not.
  jwt_validator_options open = defaults();
  open.expected_audience.clear();
  open.expected_issuer.reset();
  open.sub_claim_name = "client_id";
  auto v2 = validator(open);
  EXPECT_FALSE(
      v2->validate(sign(rsa_->key, "RS256", "r1", claims(R"(,"client_id":"svc")")), now_ms));
  auto r = v2->validate(
      sign(rsa_->key, "RS256", "r1",
           fmt::format(R"({{"client_id":"svc","iat":{},"exp":{}}})", now_s, now_s + 60)),
      now_ms);
  ASSERT_TRUE(r) << detail(r);
  EXPECT_EQ(r->principal_name, "svc") << "sasl.oauthbearer.sub.claim.name";
}

TEST_F(jwt_validator_test, malformed_tokens_and_jwks_fail_without_crashing) {
  auto v = validator();
  for (const std::string& t : std::vector<std::string>{
           "", ".", "..", "a.b", "a.b.c.d", "!!!.???.***", "e30.e30.",
           b64url(std::string("[1]")) + "." + b64url(std::string("{}")) + ".c2ln",
           b64url(std::string(R"({"alg":"RS256"})")) + ".bm90IGpzb24.c2ln",
           b64url(std::string(R"({"alg":"RS256"})")) + "." + b64url(claims()) + ".%%%"}) {
    auto r = v->validate(t, now_ms);
    EXPECT_FALSE(r) << t;
    if (!r) {
      EXPECT_EQ(r.error().status, "invalid_token");
    }
  }
  for (const char* jwks : {"not json", "[]", R"({"keys":7})"}) {
    auto bad = make_jwt_validator(
        defaults(), [jwks]() -> result<std::string, std::string> { return std::string(jwks); },
        false);
    EXPECT_FALSE(bad) << jwks;
  }
  EXPECT_FALSE(make_jwks_fetcher("https://idp.example.com/jwks"));
  EXPECT_FALSE(make_jwks_fetcher("http://10.0.0.1/jwks"));
  EXPECT_TRUE(make_jwks_fetcher("http://127.0.0.1:8080/jwks"));
  auto missing = make_jwks_fetcher("file:/nonexistent/jwks.json");
  ASSERT_TRUE(missing);
  EXPECT_FALSE((*missing)());
}

TEST(unsecured_validator, accepts_alg_none_and_checks_time_principal_and_scope) {
  unsecured_validator_options o;
  auto v = make_unsecured_validator(o);
  auto good = v->validate(
      unsecured_token(fmt::format(R"({{"sub":"bob","iat":{},"exp":{}}})", now_s, now_s + 60)),
      now_ms);
  ASSERT_TRUE(good) << good.error().detail;
  EXPECT_EQ(good->principal_name, "bob");
  EXPECT_EQ(good->expires_at_ms, (now_s + 60) * 1000);
  // librdkafka's unsecured JWT carries fractional seconds; Kafka rounds them.
  EXPECT_TRUE(v->validate(unsecured_token(fmt::format(R"({{"sub":"bob","exp":{}.5}})", now_s + 60)),
                          now_ms));
  auto expired =
      v->validate(unsecured_token(fmt::format(R"({{"sub":"bob","exp":{}}})", now_s)), now_ms);
  ASSERT_FALSE(expired);
  EXPECT_EQ(expired.error().status, "invalid_token");
  EXPECT_FALSE(v->validate(unsecured_token(fmt::format(R"({{"exp":{}}})", now_s + 60)), now_ms))
      << "no principal";
  EXPECT_FALSE(v->validate(unsecured_token(R"({"sub":"bob"})"), now_ms)) << "no exp";
  EXPECT_FALSE(v->validate(
      unsecured_token(fmt::format(R"({{"sub":"bob","iat":{},"exp":{}}})", now_s + 30, now_s + 60)),
      now_ms))
      << "issued in the future";
  const std::string signed_like = b64url(std::string(R"({"alg":"RS256"})")) + "." +
                                  b64url(fmt::format(R"({{"sub":"bob","exp":{}}})", now_s + 60)) +
                                  ".";
  EXPECT_FALSE(v->validate(signed_like, now_ms)) << "alg must be none";
  EXPECT_FALSE(v->validate(
      unsecured_token(fmt::format(R"({{"sub":"bob","exp":{}}})", now_s + 60)) + "c2ln", now_ms))
      << "a signature on an unsecured JWS";

  auto opts =
      unsecured_validator_options::from_jaas({{"unsecuredValidatorPrincipalClaimName", "principal"},
                                              {"unsecuredValidatorRequiredScope", "read write"},
                                              {"unsecuredValidatorAllowableClockSkewMs", "5000"}});
  ASSERT_TRUE(opts) << opts.error();
  auto v2 = make_unsecured_validator(*opts);
  auto scoped =
      v2->validate(unsecured_token(fmt::format(
                       R"({{"principal":"carol","scope":["read","write"],"exp":{}}})", now_s + 3)),
                   now_ms);
  ASSERT_TRUE(scoped) << scoped.error().detail;
  EXPECT_EQ(scoped->principal_name, "carol");
  auto narrow =
      v2->validate(unsecured_token(fmt::format(
                       R"({{"principal":"carol","scope":["read"],"exp":{}}})", now_s + 60)),
                   now_ms);
  ASSERT_FALSE(narrow);
  EXPECT_EQ(narrow.error().status, "insufficient_scope");
  EXPECT_TRUE(
      v2->validate(unsecured_token(fmt::format(
                       R"({{"principal":"carol","scope":["read","write"],"exp":{}}})", now_s - 4)),
                   now_ms))
      << "within unsecuredValidatorAllowableClockSkewMs";
  EXPECT_FALSE(
      unsecured_validator_options::from_jaas({{"unsecuredValidatorAllowableClockSkewMs", "-1"}}));
  EXPECT_FALSE(
      unsecured_validator_options::from_jaas({{"unsecuredValidatorAllowableClockSkewMs", "x"}}));
}

// The mechanism through the authenticator, as the broker's connection drives it.
std::shared_ptr<const sasl_settings> oauth_settings(int64_t reauth_ms = 0,
                                                    std::optional<std::string> jwks_url = {}) {
  sasl_config c;
  c.enabled_mechanisms = {"OAUTHBEARER"};
  c.connections_max_reauth_ms = reauth_ms;
  c.oauthbearer.jwks_endpoint_url = jwks_url;
  auto s = sasl_settings::make(c, "SASL_PLAINTEXT");
  EXPECT_TRUE(s) << s.error();
  return std::make_shared<const sasl_settings>(std::move(*s));
}

std::vector<uint8_t> first_message(const std::string& token, const std::string& gs2 = "n,,",
                                   const std::string& extensions = "") {
  return of(gs2 + "\x01" + "auth=Bearer " + token + "\x01" + extensions + "\x01");
}

TEST(oauthbearer_server, good_token_completes_and_its_exp_bounds_the_session) {
  const int64_t wall = std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
  const std::string token =
      unsecured_token(fmt::format(R"({{"sub":"alice","exp":{}}})", wall / 1000 + 120));
  for (int64_t reauth_ms : {int64_t{0}, int64_t{60000}, int64_t{3600000}}) {
    sasl_authenticator a(oauth_settings(reauth_ms), nullptr);
    std::string why;
    ASSERT_TRUE(a.admit(17, &why));
    ASSERT_EQ(a.handshake(1, "OAUTHBEARER").error_code, 0);
    auto answer = a.authenticate(first_message(token, "n,,", "traceId=abc 123\x01"),
                                 std::chrono::steady_clock::now());
    ASSERT_EQ(answer.error_code, 0) << answer.error_message.value_or("") << answer.detail;
    EXPECT_TRUE(answer.token.empty());
    ASSERT_TRUE(a.complete());
    EXPECT_EQ(a.principal().to_string(), "User:alice");
    // min(connections.max.reauth.ms, exp - now): the token's 120 s unless the listener's is less.
    const int64_t expected = reauth_ms == 60000 ? 60000 : 120000;
    EXPECT_NEAR(static_cast<double>(answer.session_lifetime_ms), static_cast<double>(expected),
                2000.0)
        << reauth_ms;
    EXPECT_TRUE(a.begin_reauthentication())
        << "a token that expires makes the session re-authenticable";
  }
}

TEST(oauthbearer_server, invalid_token_is_a_json_challenge_then_a_failure) {
  sasl_authenticator a(oauth_settings(), nullptr);
  std::string why;
  ASSERT_TRUE(a.admit(17, &why));
  ASSERT_EQ(a.handshake(1, "OAUTHBEARER").error_code, 0);
  auto challenge = a.authenticate(first_message(unsecured_token(R"({"sub":"alice","exp":1})")),
                                  std::chrono::steady_clock::now());
  EXPECT_EQ(challenge.error_code, 0);
  EXPECT_EQ(text(challenge.token), R"({"status":"invalid_token"})");
  EXPECT_FALSE(a.complete());
  auto failed = a.authenticate(of("\x01"), std::chrono::steady_clock::now());
  EXPECT_EQ(failed.error_code,
            static_cast<int16_t>(protocol::error_code::sasl_authentication_failed));
  EXPECT_EQ(failed.error_message.value_or(""), R"({"status":"invalid_token"})");
  EXPECT_EQ(a.current(), sasl_authenticator::state::failed);
}

TEST(oauthbearer_server, malformed_first_messages_fail_with_the_generic_sentence) {
  const std::string good = unsecured_token(R"({"sub":"alice","exp":99999999999})");
  for (std::string m : {std::string(""), std::string("n,,"),
                        std::string("y,,\x01"
                                    "auth=Bearer " +
                                    good + "\x01\x01"),
                        std::string("n,,\x01"
                                    "auth=Basic " +
                                    good + "\x01\x01"),
                        std::string("n,,\x01"
                                    "auth=Bearer\x01\x01"),
                        std::string("n,,\x01"
                                    "host=x\x01\x01"),
                        std::string("n,,\x01"
                                    "auth=Bearer " +
                                    good + "\x01"),
                        std::string("n,,\x01"
                                    "auth=Bearer " +
                                    good +
                                    "\x01"
                                    "k1=v\x01\x01"),
                        std::string("n,,\x01"
                                    "auth=Bearer a/b\x01\x01")}) {
    sasl_authenticator a(oauth_settings(), nullptr);
    std::string why;
    ASSERT_TRUE(a.admit(17, &why));
    ASSERT_EQ(a.handshake(1, "OAUTHBEARER").error_code, 0);
    auto r = a.authenticate(of(m), std::chrono::steady_clock::now());
    EXPECT_EQ(r.error_code, static_cast<int16_t>(protocol::error_code::sasl_authentication_failed))
        << m;
    EXPECT_EQ(r.error_message.value_or(""),
              "Authentication failed during authentication due to invalid credentials with SASL "
              "mechanism OAUTHBEARER");
  }
  // An authorization id must be the token's principal.
  sasl_authenticator a(oauth_settings(), nullptr);
  std::string why;
  ASSERT_TRUE(a.admit(17, &why));
  ASSERT_EQ(a.handshake(1, "OAUTHBEARER").error_code, 0);
  auto r = a.authenticate(first_message(good, "n,a=mallory,"), std::chrono::steady_clock::now());
  EXPECT_NE(r.error_message.value_or("").find(
                "(mallory) that is different from the token's principal name (alice)"),
            std::string::npos);
}

// A key rotated into the JWKS is picked up without waiting for the hourly refresh: the first
// token naming the unknown kid fails and wakes the refresh thread (at most once a second), the
// next ones verify.
TEST_F(jwt_validator_test, a_rotated_key_is_fetched_when_a_token_names_it) {
  auto jwks =
      std::make_shared<std::string>(fmt::format(R"({{"keys":[{}]}})", rsa_jwk(rsa_->key, "r1")));
  auto mu = std::make_shared<std::mutex>();
  jwt_validator_options o = defaults();
  o.jwks_endpoint_retry_backoff_ms = 0;
  auto v = make_jwt_validator(
      o,
      [jwks, mu]() -> result<std::string, std::string> {
        std::lock_guard lock(*mu);
        return *jwks;
      },
      true);
  ASSERT_TRUE(v) << v.error();
  const std::string rotated = sign(other_->key, "RS256", "r2", claims());
  EXPECT_FALSE((*v)->validate(rotated, now_ms));
  {
    std::lock_guard lock(*mu);
    *jwks =
        fmt::format(R"({{"keys":[{},{}]}})", rsa_jwk(rsa_->key, "r1"), rsa_jwk(other_->key, "r2"));
  }
  bool verified = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (!verified && std::chrono::steady_clock::now() < deadline) {
    verified = static_cast<bool>((*v)->validate(rotated, now_ms));
    if (!verified) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(verified) << "the rotated key was not fetched";
  EXPECT_TRUE((*v)->validate(sign(rsa_->key, "RS256", "r1", claims()), now_ms));
}

// Random damage to good messages (bytes flipped, cut, repeated) never crashes or throws: every
// message ends in a completion, a challenge or a failure. A fixed seed keeps it deterministic.
TEST_F(jwt_validator_test, damaged_messages_are_refused_without_crashing) {
  const std::string signed_token = sign(rsa_->key, "RS256", "r1", claims());
  const std::string none_token = unsecured_token(claims());
  auto jwt = validator();
  auto unsecured = make_unsecured_validator({});
  std::mt19937 rng(42);
  int outcomes[3] = {0, 0, 0};
  for (int i = 0; i < 3000; ++i) {
    std::string m =
        std::string("n,,\x01") + "auth=Bearer " + (i % 2 ? signed_token : none_token) + "\x01\x01";
    const int damage = static_cast<int>(rng() % 4);
    if (damage == 0) {
      for (int k = 0; k < 3; ++k) m[rng() % m.size()] = static_cast<char>(rng());
    } else if (damage == 1) {
      m.resize(rng() % m.size());
    } else if (damage == 2) {
      const size_t at = rng() % m.size();
      m.insert(at, m.substr(at, rng() % 64));
    } else {
      // A base64url character changed inside the token: decodes, then fails to verify or parse.
      const size_t at = 16 + rng() % (m.size() - 18);
      m[at] = "AQgw_-9z"[rng() % 8];
    }
    auto server = make_oauthbearer_server(i % 3 ? jwt : unsecured, [] { return now_ms; });
    auto step = server->evaluate(of(m));
    outcomes[static_cast<int>(step.result)]++;
    if (step.result == sasl_mechanism_server::step::outcome::challenge) {
      EXPECT_EQ(server->evaluate(of("\x01")).result, sasl_mechanism_server::step::outcome::failed);
    }
  }
  // outcome: 0 challenge (a token refused), 1 complete, 2 failed (a malformed message).
  EXPECT_GT(outcomes[0] + outcomes[2], 2500)
      << "most damage is refused: " << outcomes[0] << " " << outcomes[1] << " " << outcomes[2];
}

TEST(oauthbearer_settings, a_jwks_url_selects_the_jwt_validator) {
  // A JWKS file with one RSA key: the unsecured tokens the default validator takes are refused.
  key_pair k{EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", size_t{2048})};
  const auto path =
      std::filesystem::temp_directory_path() / fmt::format("tarn-jwks-{}.json", ::getpid());
  std::ofstream(path) << fmt::format(R"({{"keys":[{}]}})", rsa_jwk(k.key, "k1"));
  auto s = oauth_settings(0, "file:" + path.string());
  const int64_t wall_s = std::chrono::duration_cast<std::chrono::seconds>(
                             std::chrono::system_clock::now().time_since_epoch())
                             .count();
  const std::string c = fmt::format(R"({{"sub":"alice","iat":{},"exp":{}}})", wall_s, wall_s + 60);
  auto run = [&](const std::string& token) {
    sasl_authenticator a(s, nullptr);
    std::string why;
    EXPECT_TRUE(a.admit(17, &why));
    EXPECT_EQ(a.handshake(1, "OAUTHBEARER").error_code, 0);
    auto r = a.authenticate(first_message(token), std::chrono::steady_clock::now());
    return a.complete() ? std::string("ok") : text(r.token);
  };
  EXPECT_EQ(run(sign(k.key, "RS256", "k1", c)), "ok");
  EXPECT_EQ(run(unsecured_token(c)), R"({"status":"invalid_token"})");
  std::filesystem::remove(path);

  sasl_config bad;
  bad.enabled_mechanisms = {"OAUTHBEARER"};
  bad.oauthbearer.server_callback_handler_class =
      "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler";
  auto no_url = sasl_settings::make(bad, "SASL_SSL");
  ASSERT_FALSE(no_url);
  EXPECT_NE(no_url.error().find("sasl.oauthbearer.jwks.endpoint.url"), std::string::npos);
  bad.oauthbearer.jwks_endpoint_url = "file:/nonexistent/jwks.json";
  EXPECT_FALSE(sasl_settings::make(bad, "SASL_SSL")) << "a JWKS that does not load fails startup";
  bad.oauthbearer.server_callback_handler_class = "com.example.Custom";
  EXPECT_FALSE(sasl_settings::make(bad, "SASL_SSL"));
}

}  // namespace
}  // namespace tarn::security
