// OAUTHBEARER's server, Kafka's two validators and the JWKS key set (oauthbearer.h). The checks
// and their order follow Kafka 4.4: OAuthBearerUnsecuredJws and OAuthBearerValidationUtils for
// the unsecured validator, BrokerJwtValidator (jose4j's JwtConsumer) for the JWT one.
#include "security/oauthbearer.h"

#include <fmt/format.h>
#include <httplib.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/rsa.h>

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "security/jaas_config.h"
#include "security/scram.h"

namespace tarn::security {

namespace {

using json = nlohmann::json;

// Base64url without padding (RFC 7515 section 2), through the standard decoder.
std::optional<bytes> base64url_decode(std::string_view s) {
  std::string standard;
  standard.reserve(s.size() + 3);
  for (char c : s) {
    if (c == '-') {
      standard += '+';
    } else if (c == '_') {
      standard += '/';
    } else if (c == '+' || c == '/') {
      return std::nullopt;
    } else {
      standard += c;
    }
  }
  if (standard.size() % 4 == 1) return std::nullopt;
  while (standard.size() % 4 != 0) standard += '=';
  return base64_decode(standard);
}

// A JSON object from base64url text, or nullopt (bad base64, bad JSON, not an object).
std::optional<json> decode_object(std::string_view part) {
  auto raw = base64url_decode(part);
  if (!raw) return std::nullopt;
  json j = json::parse(raw->begin(), raw->end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  return j;
}

// The three parts of a compact JWS; the signature may be empty.
struct jws_parts {
  std::string_view header, payload, signature;
  std::string_view signing_input;
};
std::optional<jws_parts> split_jws(std::string_view token) {
  const size_t a = token.find('.');
  if (a == std::string_view::npos) return std::nullopt;
  const size_t b = token.find('.', a + 1);
  if (b == std::string_view::npos || token.find('.', b + 1) != std::string_view::npos) {
    return std::nullopt;
  }
  return jws_parts{token.substr(0, a), token.substr(a + 1, b - a - 1), token.substr(b + 1),
                   token.substr(0, b)};
}

oauthbearer_failure invalid_token(std::string detail) {
  return oauthbearer_failure{"invalid_token", std::nullopt, std::move(detail)};
}

// A NumericDate claim in ms (Kafka rounds a fractional number of seconds).
std::optional<int64_t> claim_ms(const json& claims, const char* name) {
  auto it = claims.find(name);
  if (it == claims.end() || !it->is_number()) return std::nullopt;
  const double seconds = it->get<double>();
  if (!std::isfinite(seconds) || std::fabs(seconds) > 9.0e12) return std::nullopt;
  return static_cast<int64_t>(std::llround(seconds * 1000.0));
}

// A scope claim: one string (kept whole, as Kafka does) or a list of strings.
std::vector<std::string> scope_of(const json& claims, const std::string& name) {
  std::vector<std::string> out;
  auto it = claims.find(name);
  if (it == claims.end()) return out;
  auto trimmed = [](std::string s) {
    const auto first = s.find_first_not_of(" \t\r\n");
    if (first == std::string::npos) return std::string();
    return s.substr(first, s.find_last_not_of(" \t\r\n") - first + 1);
  };
  if (it->is_string()) {
    std::string s = trimmed(it->get<std::string>());
    if (!s.empty()) out.push_back(std::move(s));
  } else if (it->is_array()) {
    for (const auto& e : *it) {
      if (!e.is_string()) continue;
      std::string s = trimmed(e.get<std::string>());
      if (!s.empty() && std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
    }
  }
  return out;
}

bool blank(const std::string& s) { return s.find_first_not_of(" \t\r\n") == std::string::npos; }

// ---------------------------------------------------------------------------------------------
// The unsecured validator (OAuthBearerUnsecuredValidatorCallbackHandler).

class unsecured_validator final : public oauthbearer_validator {
 public:
  explicit unsecured_validator(unsecured_validator_options o) : o_(std::move(o)) {}

  result<oauthbearer_token, oauthbearer_failure> validate(std::string_view token,
                                                          int64_t now_ms) override {
    if (token.find("..") != std::string_view::npos) {
      return fail(invalid_token("Malformed compact serialization contains '..'"));
    }
    auto parts = split_jws(token);
    if (!parts) {
      return fail(
          invalid_token("Unsecured JWS compact serializations must have 3 dot-separated "
                        "Base64URL-encoded values"));
    }
    auto header = decode_object(parts->header);
    auto claims = header ? decode_object(parts->payload) : std::nullopt;
    if (!header || !claims)
      return fail(invalid_token("malformed Base64 URL encoded value or JSON"));
    auto alg = header->find("alg");
    if (alg == header->end() || !alg->is_string() || alg->get<std::string>() != "none") {
      return fail(invalid_token("Unsecured JWS must have 'none' for an algorithm"));
    }
    if (!parts->signature.empty()) {
      return fail(invalid_token("Unsecured JWS must not contain a digital signature"));
    }
    oauthbearer_token t;
    t.scope = scope_of(*claims, o_.scope_claim_name);
    auto exp = claims->find("exp");
    if (exp != claims->end() && !exp->is_number()) {
      return fail(invalid_token("The 'exp' claim was not of type Number"));
    }
    auto exp_ms = claim_ms(*claims, "exp");
    if (!exp_ms) return fail(invalid_token("No expiration time in JWT"));
    t.expires_at_ms = *exp_ms;
    auto principal = claims->find(o_.principal_claim_name);
    if (principal != claims->end() && !principal->is_string()) {
      return fail(invalid_token(
          fmt::format("The '{}' claim was not of type String", o_.principal_claim_name)));
    }
    if (principal == claims->end() || blank(principal->get<std::string>())) {
      return fail(invalid_token("No principal name in JWT claim: " + o_.principal_claim_name));
    }
    t.principal_name = principal->get<std::string>();
    auto iat = claims->find("iat");
    if (iat != claims->end() && !iat->is_number()) {
      return fail(invalid_token("The 'iat' claim was not of type Number"));
    }
    t.issued_at_ms = claim_ms(*claims, "iat");
    const int64_t skew = o_.allowable_clock_skew_ms;
    if (t.issued_at_ms && now_ms + skew < *t.issued_at_ms) {
      return fail(invalid_token(fmt::format(
          "The Issued At value ({} ms) was after the indicated time ({} ms) plus allowable clock "
          "skew ({} ms)",
          *t.issued_at_ms, now_ms, skew)));
    }
    if (now_ms - skew >= t.expires_at_ms) {
      return fail(invalid_token(fmt::format(
          "The indicated time ({} ms) minus allowable clock skew ({} ms) was on or after the "
          "Expiration Time value ({} ms)",
          now_ms, skew, t.expires_at_ms)));
    }
    if (t.issued_at_ms && *t.issued_at_ms >= t.expires_at_ms) {
      return fail(invalid_token(
          fmt::format("The Expiration Time time ({} ms) was not after the Issued At time ({} ms)",
                      t.expires_at_ms, *t.issued_at_ms)));
    }
    for (const auto& required : o_.required_scope) {
      if (std::find(t.scope.begin(), t.scope.end(), required) == t.scope.end()) {
        oauthbearer_failure f;
        f.status = "insufficient_scope";
        f.scope = fmt::format("[{}]", fmt::join(o_.required_scope, ", "));
        f.detail = fmt::format("The provided scope ({}) was missing a required scope ({})",
                               fmt::join(t.scope, " "), required);
        return fail(std::move(f));
      }
    }
    return t;
  }

 private:
  unsecured_validator_options o_;
};

// ---------------------------------------------------------------------------------------------
// JWKS: public keys from RFC 7517 JSON, as OpenSSL EVP keys.

struct evp_pkey_deleter {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using shared_pkey = std::shared_ptr<EVP_PKEY>;

struct jwk {
  std::string kid;  // empty: none
  std::string kty;  // "RSA" or "EC"
  std::string alg;  // empty: any the key type allows
  std::string crv;  // EC only
  shared_pkey key;
};

struct bn_deleter {
  void operator()(BIGNUM* b) const { BN_free(b); }
};

shared_pkey key_from_params(const char* type, OSSL_PARAM* params) {
  EVP_PKEY_CTX* ctx = EVP_PKEY_CTX_new_from_name(nullptr, type, nullptr);
  EVP_PKEY* key = nullptr;
  if (ctx != nullptr && EVP_PKEY_fromdata_init(ctx) == 1) {
    if (EVP_PKEY_fromdata(ctx, &key, EVP_PKEY_PUBLIC_KEY, params) != 1) key = nullptr;
  }
  EVP_PKEY_CTX_free(ctx);
  return key == nullptr ? nullptr : shared_pkey(key, evp_pkey_deleter{});
}

shared_pkey rsa_key(const bytes& n, const bytes& e) {
  std::unique_ptr<BIGNUM, bn_deleter> bn_n(
      BN_bin2bn(n.data(), static_cast<int>(n.size()), nullptr));
  std::unique_ptr<BIGNUM, bn_deleter> bn_e(
      BN_bin2bn(e.data(), static_cast<int>(e.size()), nullptr));
  OSSL_PARAM_BLD* bld = OSSL_PARAM_BLD_new();
  if (bld == nullptr || !bn_n || !bn_e) {
    OSSL_PARAM_BLD_free(bld);
    return nullptr;
  }
  OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, bn_n.get());
  OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, bn_e.get());
  OSSL_PARAM* params = OSSL_PARAM_BLD_to_param(bld);
  OSSL_PARAM_BLD_free(bld);
  shared_pkey key = params != nullptr ? key_from_params("RSA", params) : nullptr;
  OSSL_PARAM_free(params);
  return key;
}

// RFC 7518's curve names, their OpenSSL group and their coordinate size in bytes.
struct curve_info {
  const char* crv;
  const char* group;
  size_t size;
  const char* alg;
};
constexpr curve_info curves[] = {{"P-256", "prime256v1", 32, "ES256"},
                                 {"P-384", "secp384r1", 48, "ES384"},
                                 {"P-521", "secp521r1", 66, "ES512"}};
const curve_info* find_curve(std::string_view crv) {
  for (const auto& c : curves) {
    if (crv == c.crv) return &c;
  }
  return nullptr;
}

shared_pkey ec_key(const curve_info& curve, const bytes& x, const bytes& y) {
  if (x.size() != curve.size || y.size() != curve.size) return nullptr;
  bytes point{0x04};  // uncompressed: 04 || x || y
  point.insert(point.end(), x.begin(), x.end());
  point.insert(point.end(), y.begin(), y.end());
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_PKEY_PARAM_GROUP_NAME, const_cast<char*>(curve.group),
                                       0),
      OSSL_PARAM_construct_octet_string(OSSL_PKEY_PARAM_PUB_KEY, point.data(), point.size()),
      OSSL_PARAM_construct_end()};
  return key_from_params("EC", params);
}

// The usable signature keys of a JWKS document; keys of other types or uses are skipped, as
// jose4j does. An error only for a document that is not a JWKS at all.
result<std::vector<jwk>, std::string> parse_jwks(std::string_view text) {
  json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return fail(std::string("the JWKS is not JSON"));
  auto keys = doc.find("keys");
  if (keys == doc.end() || !keys->is_array()) {
    return fail(std::string("the JWKS has no \"keys\" array"));
  }
  std::vector<jwk> out;
  for (const auto& k : *keys) {
    if (!k.is_object()) continue;
    auto str = [&](const char* name) {
      auto it = k.find(name);
      return it != k.end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    auto b64 = [&](const char* name) { return base64url_decode(str(name)).value_or(bytes{}); };
    const std::string use = str("use");
    if (!use.empty() && use != "sig") continue;
    jwk key;
    key.kid = str("kid");
    key.kty = str("kty");
    key.alg = str("alg");
    if (key.kty == "RSA") {
      const bytes n = b64("n"), e = b64("e");
      if (n.empty() || e.empty()) continue;
      key.key = rsa_key(n, e);
    } else if (key.kty == "EC") {
      key.crv = str("crv");
      const curve_info* curve = find_curve(key.crv);
      if (curve == nullptr) continue;
      key.key = ec_key(*curve, b64("x"), b64("y"));
    }
    if (key.key) out.push_back(std::move(key));
  }
  return out;
}

// RFC 7518's asymmetric JWS algorithms. HS* (a shared secret) and "none" are not among them:
// a JWKS published by an identity provider holds public keys only.
struct jws_algorithm {
  const char* name;
  const char* kty;
  const EVP_MD* (*md)();
  bool pss;
};
constexpr jws_algorithm jws_algorithms[] = {
    {"RS256", "RSA", EVP_sha256, false}, {"RS384", "RSA", EVP_sha384, false},
    {"RS512", "RSA", EVP_sha512, false}, {"PS256", "RSA", EVP_sha256, true},
    {"PS384", "RSA", EVP_sha384, true},  {"PS512", "RSA", EVP_sha512, true},
    {"ES256", "EC", EVP_sha256, false},  {"ES384", "EC", EVP_sha384, false},
    {"ES512", "EC", EVP_sha512, false}};
const jws_algorithm* find_algorithm(std::string_view name) {
  for (const auto& a : jws_algorithms) {
    if (name == a.name) return &a;
  }
  return nullptr;
}

// JWS's ECDSA signature is r || s; OpenSSL verifies the DER form.
std::optional<bytes> ecdsa_der(std::span<const uint8_t> raw, size_t coordinate_size) {
  if (raw.size() != 2 * coordinate_size) return std::nullopt;
  ECDSA_SIG* sig = ECDSA_SIG_new();
  BIGNUM* r = BN_bin2bn(raw.data(), static_cast<int>(coordinate_size), nullptr);
  BIGNUM* s = BN_bin2bn(raw.data() + coordinate_size, static_cast<int>(coordinate_size), nullptr);
  if (sig == nullptr || r == nullptr || s == nullptr || ECDSA_SIG_set0(sig, r, s) != 1) {
    ECDSA_SIG_free(sig);
    BN_free(r);
    BN_free(s);
    return std::nullopt;
  }
  unsigned char* der = nullptr;
  const int n = i2d_ECDSA_SIG(sig, &der);
  ECDSA_SIG_free(sig);
  if (n <= 0) return std::nullopt;
  bytes out(der, der + n);
  OPENSSL_free(der);
  return out;
}

bool verify(const jws_algorithm& alg, const jwk& key, std::string_view signing_input,
            std::span<const uint8_t> signature) {
  bytes der;
  if (std::string_view(alg.kty) == "EC") {
    const curve_info* curve = find_curve(key.crv);
    if (curve == nullptr || std::string_view(curve->alg) != alg.name) return false;
    auto d = ecdsa_der(signature, curve->size);
    if (!d) return false;
    der = std::move(*d);
    signature = der;
  } else if (EVP_PKEY_get_bits(key.key.get()) < 2048) {
    return false;  // jose4j refuses RSA keys below 2048 bits
  }
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  EVP_PKEY_CTX* pctx = nullptr;
  bool ok =
      ctx != nullptr && EVP_DigestVerifyInit(ctx, &pctx, alg.md(), nullptr, key.key.get()) == 1;
  if (ok && alg.pss) {
    ok = EVP_PKEY_CTX_set_rsa_padding(pctx, RSA_PKCS1_PSS_PADDING) == 1 &&
         EVP_PKEY_CTX_set_rsa_pss_saltlen(pctx, RSA_PSS_SALTLEN_DIGEST) == 1;
  }
  ok = ok && EVP_DigestVerify(ctx, signature.data(), signature.size(),
                              reinterpret_cast<const unsigned char*>(signing_input.data()),
                              signing_input.size()) == 1;
  EVP_MD_CTX_free(ctx);
  return ok;
}

// ---------------------------------------------------------------------------------------------
// The JWT validator (OAuthBearerValidatorCallbackHandler with BrokerJwtValidator).

class jwt_validator final : public oauthbearer_validator {
 public:
  jwt_validator(jwt_validator_options o, jwks_fetcher fetch, std::vector<jwk> keys)
      : o_(std::move(o)),
        fetch_(std::move(fetch)),
        keys_(std::move(keys)),
        fetched_at_(std::chrono::steady_clock::now()) {}

  ~jwt_validator() override {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    if (refresher_.joinable()) refresher_.join();
  }

  void start_refresher() {
    refresher_ = std::thread([this] { refresh_loop(); });
  }

  result<oauthbearer_token, oauthbearer_failure> validate(std::string_view token,
                                                          int64_t now_ms) override {
    auto parts = split_jws(token);
    if (!parts || parts->header.empty() || parts->payload.empty()) {
      return fail(invalid_token(
          "Malformed JWT provided; expected three sections (header, payload, and signature)"));
    }
    auto header = decode_object(parts->header);
    auto claims = header ? decode_object(parts->payload) : std::nullopt;
    if (!header || !claims) return fail(invalid_token("Unable to process JOSE object: malformed"));
    auto alg_it = header->find("alg");
    const std::string alg_name =
        alg_it != header->end() && alg_it->is_string() ? alg_it->get<std::string>() : "";
    const jws_algorithm* alg = find_algorithm(alg_name);
    if (alg == nullptr) {
      // "none" (and HS*) included: BrokerJwtValidator disallows none.
      return fail(invalid_token(fmt::format("'{}' is not a permitted algorithm", alg_name)));
    }
    if (header->contains("crit")) {
      return fail(invalid_token("Unrecognized header parameter(s) marked as critical"));
    }
    auto signature = base64url_decode(parts->signature);
    if (!signature || signature->empty())
      return fail(invalid_token("the signature is not base64url"));
    auto kid_it = header->find("kid");
    const std::string kid =
        kid_it != header->end() && kid_it->is_string() ? kid_it->get<std::string>() : "";
    if (!verified(*alg, kid, parts->signing_input, *signature)) {
      return fail(invalid_token(fmt::format(
          "Unable to find a suitable verification key for JWS w/ header {} that verifies it",
          header->dump())));
    }
    return check_claims(*claims, now_ms);
  }

 private:
  bool verified(const jws_algorithm& alg, const std::string& kid, std::string_view signing_input,
                std::span<const uint8_t> signature) {
    std::vector<jwk> keys;
    {
      std::lock_guard lock(mutex_);
      keys = keys_;
    }
    bool kid_known = false;
    for (const auto& key : keys) {
      if (!kid.empty() && key.kid != kid) continue;
      kid_known = true;
      if (key.kty != alg.kty || (!key.alg.empty() && key.alg != alg.name)) continue;
      if (verify(alg, key, signing_input, signature)) return true;
    }
    if (!kid.empty() && !kid_known) expedite_refresh();
    return false;
  }

  result<oauthbearer_token, oauthbearer_failure> check_claims(const json& claims, int64_t now_ms) {
    // jose4j compares whole seconds.
    const int64_t now_s = now_ms / 1000;
    auto seconds = [&](const char* name) -> std::optional<int64_t> {
      auto it = claims.find(name);
      if (it == claims.end() || !it->is_number()) return std::nullopt;
      const double v = it->get<double>();
      if (!std::isfinite(v) || std::fabs(v) > 9.0e12) return std::nullopt;
      return static_cast<int64_t>(v);
    };
    for (const char* name : {"exp", "iat", "nbf"}) {
      auto it = claims.find(name);
      if (it != claims.end() && !it->is_number()) {
        return fail(invalid_token(
            fmt::format("The value of the '{}' claim is not the expected type", name)));
      }
    }
    auto exp = seconds("exp");
    if (!exp) return fail(invalid_token("No Expiration Time (exp) claim present."));
    if (now_s - o_.clock_skew_seconds >= *exp) {
      return fail(invalid_token(fmt::format(
          "The JWT is no longer valid - the evaluation time NumericDate{{{}}} is on or after the "
          "Expiration Time (exp={}) claim value (even when providing {} seconds of leeway to "
          "account for clock skew).",
          now_s, *exp, o_.clock_skew_seconds)));
    }
    if (auto nbf = seconds("nbf"); nbf && now_s + o_.clock_skew_seconds < *nbf) {
      return fail(
          invalid_token(fmt::format("The JWT is not yet valid as the evaluation time {} is "
                                    "before the Not Before (nbf={}) claim time",
                                    now_s, *nbf)));
    }
    auto iat = seconds("iat");
    if (!iat) return fail(invalid_token("No Issued At (iat) claim present."));
    // Audience: jose4j refuses a token with an aud claim when no audience is expected.
    std::vector<std::string> audiences;
    if (auto aud = claims.find("aud"); aud != claims.end()) {
      if (aud->is_string()) {
        audiences.push_back(aud->get<std::string>());
      } else if (aud->is_array()) {
        for (const auto& a : *aud) {
          if (!a.is_string())
            return fail(invalid_token("The 'aud' claim is not a string or array"));
          audiences.push_back(a.get<std::string>());
        }
      } else {
        return fail(invalid_token("The 'aud' claim is not a string or array"));
      }
      bool match = false;
      for (const auto& a : audiences) {
        match = match || std::find(o_.expected_audience.begin(), o_.expected_audience.end(), a) !=
                             o_.expected_audience.end();
      }
      if (!match) {
        return fail(invalid_token(
            o_.expected_audience.empty()
                ? fmt::format("Audience (aud) claim {} present in the JWT but no expected "
                              "audience value(s) were provided to the JWT Consumer.",
                              aud->dump())
                : fmt::format("Audience (aud) claim {} doesn't contain an acceptable "
                              "identifier. Expected one of [{}] as an aud value.",
                              aud->dump(), fmt::join(o_.expected_audience, ", "))));
      }
    } else if (!o_.expected_audience.empty()) {
      return fail(invalid_token("No Audience (aud) claim present."));
    }
    if (o_.expected_issuer) {
      auto iss = claims.find("iss");
      if (iss == claims.end() || !iss->is_string()) {
        return fail(invalid_token(fmt::format("No Issuer (iss) claim present but was expecting {}",
                                              *o_.expected_issuer)));
      }
      if (iss->get<std::string>() != *o_.expected_issuer) {
        return fail(
            invalid_token(fmt::format("Issuer (iss) claim value ({}) doesn't match expected "
                                      "value of {}",
                                      iss->get<std::string>(), *o_.expected_issuer)));
      }
    }
    auto sub = claims.find(o_.sub_claim_name);
    if (sub != claims.end() && !sub->is_string()) {
      return fail(invalid_token(fmt::format(
          "Could not extract the '{}' claim from the access token", o_.sub_claim_name)));
    }
    if (sub == claims.end() || blank(sub->get<std::string>())) {
      return fail(invalid_token(fmt::format("{} value must be non-null", o_.sub_claim_name)));
    }
    oauthbearer_token t;
    std::string name = sub->get<std::string>();
    const auto first = name.find_first_not_of(" \t\r\n");
    t.principal_name = name.substr(first, name.find_last_not_of(" \t\r\n") - first + 1);
    t.scope = scope_of(claims, o_.scope_claim_name);
    t.expires_at_ms = *exp * 1000;
    t.issued_at_ms = *iat * 1000;
    return t;
  }

  // A token named a key id the set lacks: the key may have just been rotated in.
  void expedite_refresh() {
    std::lock_guard lock(mutex_);
    const auto now = std::chrono::steady_clock::now();
    if (now - fetched_at_ <
        std::chrono::milliseconds(std::max<int64_t>(o_.jwks_endpoint_retry_backoff_ms, 1000))) {
      return;  // at most one early refresh a second, so random key ids cannot drive fetches
    }
    refresh_wanted_ = true;
    wake_.notify_all();
  }

  void refresh_loop() {
    std::unique_lock lock(mutex_);
    while (!stopping_) {
      const auto due = fetched_at_ + std::chrono::milliseconds(o_.jwks_endpoint_refresh_ms);
      wake_.wait_until(lock, due, [&] { return stopping_ || refresh_wanted_; });
      if (stopping_) break;
      refresh_wanted_ = false;
      lock.unlock();
      auto text = fetch_();
      auto keys =
          text ? parse_jwks(*text) : result<std::vector<jwk>, std::string>(fail(text.error()));
      lock.lock();
      fetched_at_ = std::chrono::steady_clock::now();
      if (keys) {
        keys_ = std::move(*keys);
      } else {
        failed_refreshes_++;  // the previous keys stay
      }
    }
  }

  jwt_validator_options o_;
  jwks_fetcher fetch_;
  std::mutex mutex_;
  std::condition_variable wake_;
  std::vector<jwk> keys_;
  std::chrono::steady_clock::time_point fetched_at_;
  bool refresh_wanted_ = false;
  bool stopping_ = false;
  int64_t failed_refreshes_ = 0;
  std::thread refresher_;
};

// ---------------------------------------------------------------------------------------------
// The mechanism (OAuthBearerSaslServer).

// RFC 7628's client first message, as Kafka's OAuthBearerClientInitialResponse reads it.
struct client_first_message {
  std::string authzid;
  std::string token;
};
std::optional<client_first_message> parse_client_first(std::string_view m, std::string* why) {
  constexpr char sep = '\x01';
  *why = "Invalid OAUTHBEARER client first message";
  if (!m.starts_with("n,")) return std::nullopt;
  const size_t comma = m.find(',', 2);
  if (comma == std::string_view::npos) return std::nullopt;
  client_first_message out;
  std::string_view gs2_authz = m.substr(2, comma - 2);
  if (!gs2_authz.empty()) {
    if (!gs2_authz.starts_with("a=") || gs2_authz.size() == 2) return std::nullopt;
    for (char c : gs2_authz.substr(2)) {
      if (static_cast<unsigned char>(c) < 0x01 || static_cast<unsigned char>(c) > 0x7f) {
        return std::nullopt;
      }
    }
    out.authzid = std::string(gs2_authz.substr(2));
  }
  std::string_view rest = m.substr(comma + 1);
  // \x01 (key=value\x01)* \x01
  if (rest.size() < 2 || rest.front() != sep || !rest.ends_with("\x01\x01")) return std::nullopt;
  rest = rest.substr(1, rest.size() - 2);
  std::optional<std::string_view> auth;
  while (!rest.empty()) {
    const size_t end = rest.find(sep);
    if (end == std::string_view::npos) return std::nullopt;
    std::string_view pair = rest.substr(0, end);
    rest = rest.substr(end + 1);
    const size_t eq = pair.find('=');
    if (eq == std::string_view::npos || eq == 0 || eq + 1 == pair.size()) return std::nullopt;
    std::string_view key = pair.substr(0, eq), value = pair.substr(eq + 1);
    for (char c : key) {
      if (!std::isalpha(static_cast<unsigned char>(c))) return std::nullopt;
    }
    for (char c : value) {
      const auto u = static_cast<unsigned char>(c);
      if (!((u >= 0x21 && u <= 0x7e) || c == ' ' || c == '\t' || c == '\r' || c == '\n')) {
        return std::nullopt;
      }
    }
    // Extensions (any other key) are accepted and not used, as Kafka's default handlers do.
    if (key == "auth") auth = value;
  }
  if (!auth) {
    *why = "Invalid OAUTHBEARER client first message: 'auth' not specified";
    return std::nullopt;
  }
  // <scheme> SP+ <token>; the token's characters are [-_.a-zA-Z0-9].
  const size_t space = auth->find(' ');
  std::string_view scheme = auth->substr(0, space);
  if (space == std::string_view::npos || scheme.empty()) {
    *why = "Invalid OAUTHBEARER client first message: invalid 'auth' format";
    return std::nullopt;
  }
  std::string_view token = auth->substr(space);
  while (token.starts_with(' ')) token.remove_prefix(1);
  bool well_formed = !token.empty();
  for (char c : scheme)
    well_formed = well_formed && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  for (char c : token) {
    well_formed = well_formed &&
                  (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.');
  }
  if (!well_formed) {
    *why = "Invalid OAUTHBEARER client first message: invalid 'auth' format";
    return std::nullopt;
  }
  std::string lower(scheme);
  std::transform(lower.begin(), lower.end(), lower.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (lower != "bearer") {
    *why = fmt::format("Invalid scheme in OAUTHBEARER client first message: {}", scheme);
    return std::nullopt;
  }
  out.token = std::string(token);
  return out;
}

class oauthbearer_server final : public sasl_mechanism_server {
 public:
  oauthbearer_server(std::shared_ptr<oauthbearer_validator> validator,
                     std::function<int64_t()> clock)
      : validator_(std::move(validator)), clock_(std::move(clock)) {}

  step evaluate(std::span<const uint8_t> token) override {
    std::string_view text(reinterpret_cast<const char*>(token.data()), token.size());
    if (error_json_) {
      // The client acknowledges our error with a lone %x01 (RFC 7628 section 3.2.3); Kafka then
      // fails with the JSON as the SaslAuthenticationException's message.
      std::string message = std::move(*error_json_);
      error_json_.reset();
      if (text == "\x01") return {step::outcome::failed, {}, std::move(message), detail_};
      return {step::outcome::failed, {}, {}, "a token after the error challenge, not %x01"};
    }
    if (done_) return {step::outcome::failed, {}, {}, "a token after the exchange ended"};
    std::string why;
    auto first = parse_client_first(text, &why);
    if (!first) {
      done_ = true;
      return {step::outcome::failed, {}, {}, why};  // a SaslException: the generic sentence
    }
    const int64_t now_ms = clock_();
    auto valid = validator_->validate(first->token, now_ms);
    if (!valid) {
      const oauthbearer_failure& f = valid.error();
      std::string j = fmt::format("{{\"status\":\"{}\"", f.status);
      if (f.scope) j += fmt::format(", \"scope\":\"{}\"", *f.scope);
      j += "}";
      detail_ = f.detail;
      error_json_ = j;
      return {step::outcome::challenge, bytes(j.begin(), j.end()), {}, {}};
    }
    done_ = true;
    if (!first->authzid.empty() && first->authzid != valid->principal_name) {
      return {step::outcome::failed,
              {},
              fmt::format("Authentication failed: Client requested an authorization id ({}) that "
                          "is different from the token's principal name ({})",
                          first->authzid, valid->principal_name),
              {}};
    }
    user_ = valid->principal_name;
    lifetime_ms_ = std::max<int64_t>(0, valid->expires_at_ms - now_ms);
    return {step::outcome::complete, {}, {}, {}};
  }
  const std::string& authorization_id() const override { return user_; }
  std::optional<int64_t> credential_lifetime_ms() const override { return lifetime_ms_; }

 private:
  std::shared_ptr<oauthbearer_validator> validator_;
  std::function<int64_t()> clock_;
  std::optional<std::string> error_json_;
  std::string detail_;
  bool done_ = false;
  std::string user_;
  std::optional<int64_t> lifetime_ms_;
};

}  // namespace

result<unsecured_validator_options, std::string> unsecured_validator_options::from_jaas(
    const std::map<std::string, std::string>& options) {
  unsecured_validator_options o;
  auto option = [&](const char* key) -> std::string {
    auto it = options.find(key);
    if (it == options.end()) return {};
    const auto first = it->second.find_first_not_of(" \t");
    if (first == std::string::npos) return {};
    return it->second.substr(first, it->second.find_last_not_of(" \t") - first + 1);
  };
  if (auto v = option("unsecuredValidatorPrincipalClaimName"); !v.empty()) {
    o.principal_claim_name = v;
  }
  if (auto v = option("unsecuredValidatorScopeClaimName"); !v.empty()) o.scope_claim_name = v;
  std::istringstream scopes(option("unsecuredValidatorRequiredScope"));
  for (std::string s; scopes >> s;) o.required_scope.push_back(s);
  if (auto v = option("unsecuredValidatorAllowableClockSkewMs"); !v.empty()) {
    char* end = nullptr;
    errno = 0;
    const long long skew = std::strtoll(v.c_str(), &end, 10);
    if (errno != 0 || end != v.c_str() + v.size() || skew > INT32_MAX) {
      return fail(fmt::format("For input string: \"{}\"", v));
    }
    if (skew < 0) {
      return fail(fmt::format("Allowable clock skew millis must not be negative: {}", v));
    }
    o.allowable_clock_skew_ms = skew;
  }
  return o;
}

std::shared_ptr<oauthbearer_validator> make_unsecured_validator(unsecured_validator_options o) {
  return std::make_shared<unsecured_validator>(std::move(o));
}

result<jwks_fetcher, std::string> make_jwks_fetcher(const std::string& url) {
  if (url.starts_with("file:")) {
    std::string path = url.substr(5);
    // file:///a/b and file:/a/b both name /a/b.
    if (path.starts_with("//")) path = path.substr(2);
    return jwks_fetcher([path]() -> result<std::string, std::string> {
      std::ifstream in(path, std::ios::binary);
      if (!in) return fail(fmt::format("cannot read {}", path));
      std::ostringstream s;
      s << in.rdbuf();
      if (s.str().size() > 4 * 1024 * 1024) return fail(fmt::format("{} is over 4 MiB", path));
      return s.str();
    });
  }
  if (url.starts_with("http://")) {
    const std::string rest = url.substr(7);
    const size_t slash = rest.find('/');
    const std::string authority = rest.substr(0, slash);
    const std::string path = slash == std::string::npos ? "/" : rest.substr(slash);
    std::string host = authority;
    int port = 80;
    const size_t colon = authority.rfind(':');
    if (colon != std::string::npos && authority.find(']', colon) == std::string::npos) {
      host = authority.substr(0, colon);
      port = std::atoi(authority.c_str() + colon + 1);
    }
    if (host.starts_with("[") && host.ends_with("]")) host = host.substr(1, host.size() - 2);
    if (host != "127.0.0.1" && host != "localhost" && host != "::1") {
      return fail(fmt::format(
          "sasl.oauthbearer.jwks.endpoint.url {}: tarn fetches a JWKS over http only from "
          "loopback (127.0.0.1, localhost, [::1]); use a file: URL for a JWKS kept elsewhere",
          url));
    }
    return jwks_fetcher([host, port, path]() -> result<std::string, std::string> {
      httplib::Client client(host, port);
      client.set_connection_timeout(2, 0);
      client.set_read_timeout(2, 0);
      auto res = client.Get(path);
      if (!res)
        return fail(fmt::format("GET {} failed: {}", path, httplib::to_string(res.error())));
      if (res->status != 200) return fail(fmt::format("GET {}: HTTP {}", path, res->status));
      return res->body;
    });
  }
  return fail(fmt::format(
      "sasl.oauthbearer.jwks.endpoint.url {}: tarn reads a JWKS from a file: URL or a loopback "
      "http:// URL",
      url));
}

result<std::shared_ptr<oauthbearer_validator>, std::string> make_jwt_validator(
    jwt_validator_options o, jwks_fetcher fetch, bool refresh_thread) {
  auto text = fetch();
  if (!text) {
    return fail(fmt::format("sasl.oauthbearer.jwks.endpoint.url {}: {}", o.jwks_endpoint_url,
                            text.error()));
  }
  auto keys = parse_jwks(*text);
  if (!keys) {
    return fail(fmt::format("sasl.oauthbearer.jwks.endpoint.url {}: {}", o.jwks_endpoint_url,
                            keys.error()));
  }
  if (o.jwks_endpoint_refresh_ms <= 0) o.jwks_endpoint_refresh_ms = 3600000;
  auto v = std::make_shared<jwt_validator>(std::move(o), std::move(fetch), std::move(*keys));
  if (refresh_thread) v->start_refresher();
  return std::shared_ptr<oauthbearer_validator>(std::move(v));
}

result<std::shared_ptr<oauthbearer_validator>, std::string> make_oauthbearer_validator(
    const sasl_config& config, const std::string& listener) {
  std::string prefix = "listener.name." + listener + ".oauthbearer.";
  std::transform(prefix.begin(), prefix.end(), prefix.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  const oauthbearer_config& o = config.oauthbearer;
  // Kafka's OAuthBearerValidatorCallbackHandler, under its 3.x and 4.x package names.
  constexpr std::string_view secured_handler =
      "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler";
  constexpr std::string_view secured_handler_3x =
      "org.apache.kafka.common.security.oauthbearer.secured.OAuthBearerValidatorCallbackHandler";
  constexpr std::string_view unsecured_handler =
      "org.apache.kafka.common.security.oauthbearer.internals.unsecured."
      "OAuthBearerUnsecuredValidatorCallbackHandler";
  const std::string handler = o.server_callback_handler_class.value_or("");
  const bool secured = handler == secured_handler || handler == secured_handler_3x;
  if (!handler.empty() && !secured && handler != unsecured_handler) {
    return fail(fmt::format(
        "listener {}: {}sasl.server.callback.handler.class {} is not served by tarn (it serves "
        "{} and {})",
        listener, prefix, handler, secured_handler, unsecured_handler));
  }
  // Kafka keeps the unsecured validator when only the JWKS URL is set; tarn takes a JWKS URL
  // as asking for signed tokens (docs/compatibility.md), so that a forgotten handler class never
  // lets alg "none" tokens in.
  if (secured || (handler.empty() && o.jwks_endpoint_url)) {
    if (!o.jwks_endpoint_url) {
      return fail(fmt::format(
          "listener {}: {} needs sasl.oauthbearer.jwks.endpoint.url (or {}sasl.oauthbearer.jwks."
          "endpoint.url)",
          listener, handler, prefix));
    }
    jwt_validator_options v;
    v.jwks_endpoint_url = *o.jwks_endpoint_url;
    v.jwks_endpoint_refresh_ms = o.jwks_endpoint_refresh_ms;
    v.jwks_endpoint_retry_backoff_ms = o.jwks_endpoint_retry_backoff_ms;
    v.expected_audience = o.expected_audience;
    v.expected_issuer = o.expected_issuer;
    v.sub_claim_name = o.sub_claim_name;
    v.scope_claim_name = o.scope_claim_name;
    v.clock_skew_seconds = o.clock_skew_seconds;
    auto fetch = make_jwks_fetcher(v.jwks_endpoint_url);
    if (!fetch) return fail(fmt::format("listener {}: {}", listener, fetch.error()));
    auto validator = make_jwt_validator(std::move(v), std::move(*fetch));
    if (!validator) return fail(fmt::format("listener {}: {}", listener, validator.error()));
    return std::move(*validator);
  }
  // The unsecured validator, with the unsecuredValidator* options of the OAuthBearerLoginModule
  // entry (Kafka's default; for development only).
  std::map<std::string, std::string> options;
  if (auto jaas = config.jaas_config.find("OAUTHBEARER"); jaas != config.jaas_config.end()) {
    auto modules = parse_jaas_config(jaas->second);
    if (!modules) {
      return fail(fmt::format("listener {}: OAUTHBEARER's sasl.jaas.config: {}", listener,
                              modules.error()));
    }
    for (const auto& m : *modules) {
      if (m.class_name == "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule") {
        options = m.options;
      }
    }
  }
  auto unsecured = unsecured_validator_options::from_jaas(options);
  if (!unsecured) {
    return fail(fmt::format("listener {}: OAUTHBEARER's sasl.jaas.config: {}", listener,
                            unsecured.error()));
  }
  return make_unsecured_validator(std::move(*unsecured));
}

std::unique_ptr<sasl_mechanism_server> make_oauthbearer_server(
    std::shared_ptr<oauthbearer_validator> validator, std::function<int64_t()> wall_clock_ms) {
  if (!wall_clock_ms) {
    wall_clock_ms = [] {
      return std::chrono::duration_cast<std::chrono::milliseconds>(
                 std::chrono::system_clock::now().time_since_epoch())
          .count();
    };
  }
  return std::make_unique<oauthbearer_server>(std::move(validator), std::move(wall_clock_ms));
}

}  // namespace tarn::security
